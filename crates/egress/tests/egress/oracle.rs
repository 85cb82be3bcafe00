//! A second, independent statement of what must never be reachable,
//! written from the documented ranges without looking at the crate's tables: used by the
//! property test here and by the `egress_url` fuzz target (which includes
//! this file by path).

use std::net::{IpAddr, Ipv4Addr};

use agentcaps_egress::UrlVerdict;

pub fn v4_denied(ip: Ipv4Addr) -> bool {
    let [a, b, c, d] = ip.octets();
    a == 0
        || a == 10
        || (a == 100 && (64..128).contains(&b))
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 31 && c == 196)
        || (a == 192 && b == 52 && c == 193)
        || (a == 192 && b == 88 && c == 99)
        || (a == 192 && b == 168)
        || (a == 192 && b == 175 && c == 48)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224
        || (a, b, c, d) == (168, 63, 129, 16)
}

pub fn denied(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_denied(v4),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            s[0] & 0xe000 != 0x2000
                || (s[0] == 0x2001 && s[1] < 0x0200)
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || s[0] == 0x2002
                || (s[0] == 0x2620 && s[1] == 0x004f && s[2] == 0x8000)
                || (s[0] == 0x3fff && s[1] < 0x1000)
        }
    }
}

pub const SPECIAL: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "home.arpa",
    "onion",
    "invalid",
];

/// Checks every invariant of an allowed verdict for `text`; returns what
/// is wrong.
pub fn violations(
    text: &str,
    verdict: &UrlVerdict,
    again: Result<UrlVerdict, String>,
) -> Option<String> {
    let host = verdict.host();
    match verdict.ip() {
        Some(ip) if denied(ip) => return Some(format!("{text:?} allowed as denied address {ip}")),
        Some(_) => {}
        None => {
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            if bare.parse::<IpAddr>().is_ok() {
                return Some(format!("{text:?}: name {host} is an address"));
            }
            if !host.contains('.') {
                return Some(format!("{text:?}: single label {host}"));
            }
            if SPECIAL
                .iter()
                .any(|s| host == *s || host.ends_with(&format!(".{s}")))
            {
                return Some(format!("{text:?}: special-use {host}"));
            }
        }
    }
    match again {
        Err(e) => Some(format!(
            "{text:?} allowed, its serialization {} refused: {e}",
            verdict.url()
        )),
        Ok(a) if a.host() != host || a.ip() != verdict.ip() || a.port() != verdict.port() => {
            Some(format!(
                "{text:?} judged differently once serialized: {}",
                verdict.url()
            ))
        }
        Ok(_) => None,
    }
}
