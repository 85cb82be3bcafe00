//! Judging one IP address: the default special-purpose ranges, the
//! policy's own CIDR lists, NAT64 and the host's own addresses.
//!
//! Nothing here leans on `std`'s `is_loopback`/`is_private` predicates
//! (`Ipv6Addr::is_loopback` is false for `::ffff:127.0.0.1`): every range
//! is spelled out below and matched by prefix.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::error::AddressRule;

/// An IPv4 range denied by default: first address, prefix length, label.
const V4_DENIED: &[(u32, u8, &str)] = &[
    (0x0000_0000, 8, "this-network"),
    (0x0A00_0000, 8, "private-use"),
    (0x6440_0000, 10, "shared-address-space"),
    (0x7F00_0000, 8, "loopback"),
    (0xA83F_8110, 32, "azure-wireserver"),
    (0xA9FE_0000, 16, "link-local"),
    (0xAC10_0000, 12, "private-use"),
    (0xC000_0000, 24, "ietf-protocol-assignments"),
    (0xC000_0200, 24, "documentation"),
    (0xC01F_C400, 24, "as112-v4"),
    (0xC034_C100, 24, "amt"),
    (0xC058_6300, 24, "6to4-relay-anycast"),
    (0xC0A8_0000, 16, "private-use"),
    (0xC0AF_3000, 24, "direct-delegation-as112"),
    (0xC612_0000, 15, "benchmarking"),
    (0xC633_6400, 24, "documentation"),
    (0xCB00_7100, 24, "documentation"),
    (0xE000_0000, 4, "multicast"),
    (0xF000_0000, 4, "reserved"),
];

/// IPv6 ranges named for the refusal message. Everything outside
/// `2000::/3` is denied whether or not it is listed here; the entries
/// inside `2000::/3` are the special-purpose exceptions.
const V6_NAMED: &[(u128, u8, &str)] = &[
    (0, 128, "unspecified"),
    (1, 128, "loopback"),
    (0xffff_0000_0000, 96, "ipv4-mapped"),
    (0, 96, "ipv4-compatible"),
    (0xffff_0000_0000_0000, 96, "ipv4-translated"),
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96, "nat64"),
    (
        0x0064_ff9b_0001_0000_0000_0000_0000_0000,
        48,
        "nat64-local-use",
    ),
    (
        0x0100_0000_0000_0000_0000_0000_0000_0000,
        64,
        "discard-only",
    ),
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10, "link-local"),
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10, "site-local"),
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7, "unique-local"),
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8, "multicast"),
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 32, "teredo"),
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        "documentation",
    ),
    (
        0x2001_0000_0000_0000_0000_0000_0000_0000,
        23,
        "ietf-protocol-assignments",
    ),
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16, "6to4"),
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48, "as112-v6"),
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        "documentation",
    ),
];

const GLOBAL_UNICAST: (u128, u8) = (0x2000_0000_0000_0000_0000_0000_0000_0000, 3);
const NAT64_WELL_KNOWN: (u128, u8) = (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96);

fn v4_in(addr: u32, base: u32, len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    addr & mask == base & mask
}

fn v6_in(addr: u128, base: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    addr & mask == base & mask
}

/// Why an address is denied: the range, its label and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Denial {
    pub(crate) range: String,
    pub(crate) label: String,
    pub(crate) rule: AddressRule,
}

impl Denial {
    fn special(range: String, label: &str) -> Self {
        Denial {
            range,
            label: label.to_owned(),
            rule: AddressRule::SpecialPurpose,
        }
    }
}

fn v4_default(addr: Ipv4Addr) -> Option<Denial> {
    let bits = u32::from(addr);
    V4_DENIED
        .iter()
        .find(|(base, len, _)| v4_in(bits, *base, *len))
        .map(|(base, len, label)| {
            Denial::special(format!("{}/{len}", Ipv4Addr::from(*base)), label)
        })
}

fn v6_default(addr: Ipv6Addr, nat64: bool) -> Option<Denial> {
    let bits = u128::from(addr);
    if nat64 && v6_in(bits, NAT64_WELL_KNOWN.0, NAT64_WELL_KNOWN.1) {
        // The last 32 bits are the IPv4 address a NAT64 gateway will reach.
        let embedded = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
        return v4_default(embedded).map(|d| Denial {
            range: format!("64:ff9b::/96 carrying {}", d.range),
            label: format!("nat64 of {}", d.label),
            rule: d.rule,
        });
    }
    let named = V6_NAMED
        .iter()
        .find(|(base, len, _)| v6_in(bits, *base, *len));
    let inside_global = v6_in(bits, GLOBAL_UNICAST.0, GLOBAL_UNICAST.1);
    match (named, inside_global) {
        (Some((base, len, label)), true) => Some(Denial::special(
            format!("{}/{len}", Ipv6Addr::from(*base)),
            label,
        )),
        (Some((base, len, label)), false) => Some(Denial {
            range: format!("{}/{len}", Ipv6Addr::from(*base)),
            label: (*label).to_owned(),
            rule: AddressRule::NotGlobalUnicast,
        }),
        (None, false) => Some(Denial {
            range: "everything outside 2000::/3".to_owned(),
            label: "not global unicast".to_owned(),
            rule: AddressRule::NotGlobalUnicast,
        }),
        (None, true) => None,
    }
}

/// The compiled address part of a policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressJudge {
    pub(crate) allowed: Vec<IpNet>,
    pub(crate) denied: Vec<IpNet>,
    pub(crate) own: Vec<IpAddr>,
    pub(crate) defaults: bool,
    pub(crate) nat64: bool,
}

impl AddressJudge {
    /// `Ok` when a connection to `addr` is allowed.
    ///
    /// Order: the policy's `denied_cidrs` (always win), then its
    /// `allowed_cidrs`, then the default ranges, then the host's own
    /// addresses.
    pub(crate) fn judge(&self, addr: IpAddr) -> Result<(), Denial> {
        if let Some(net) = self.denied.iter().find(|n| n.contains(&addr)) {
            return Err(Denial {
                range: net.to_string(),
                label: "denied_cidrs".to_owned(),
                rule: AddressRule::DeniedCidr,
            });
        }
        if self.allowed.iter().any(|n| n.contains(&addr)) {
            return Ok(());
        }
        if self.defaults {
            let denial = match addr {
                IpAddr::V4(v4) => v4_default(v4),
                IpAddr::V6(v6) => v6_default(v6, self.nat64),
            };
            if let Some(denial) = denial {
                return Err(denial);
            }
        }
        if self.own.contains(&addr) {
            let len = if addr.is_ipv4() { 32 } else { 128 };
            return Err(Denial {
                range: format!("{addr}/{len}"),
                label: "this host's own address".to_owned(),
                rule: AddressRule::OwnAddress,
            });
        }
        Ok(())
    }
}

/// This host's own interface addresses, read from `/proc` on Linux (empty
/// elsewhere or when `/proc` cannot be read).
pub(crate) fn own_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        out.extend(parse_fib_trie(&trie));
    }
    if let Ok(inet6) = std::fs::read_to_string("/proc/net/if_inet6") {
        out.extend(parse_if_inet6(&inet6));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The `LOCAL` host routes of `/proc/net/fib_trie`: each
/// `|-- a.b.c.d` line followed by a `/32 host LOCAL` line.
fn parse_fib_trie(text: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut last: Option<Ipv4Addr> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("|-- ") {
            last = rest.trim().parse().ok();
        } else if line.contains("/32 host LOCAL")
            && let Some(addr) = last
        {
            out.push(IpAddr::V4(addr));
        }
    }
    out
}

/// The first column of `/proc/net/if_inet6`: 32 hex digits per address.
fn parse_if_inet6(text: &str) -> Vec<IpAddr> {
    text.lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter_map(|hex| u128::from_str_radix(hex, 16).ok())
        .map(|bits| IpAddr::V6(Ipv6Addr::from(bits)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fib_trie_local_routes_are_read() {
        let text = "Local:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 10.1.2.3\n        /32 host LOCAL\n     |-- 10.1.2.255\n        /32 link BROADCAST\n";
        assert_eq!(
            parse_fib_trie(text),
            vec!["10.1.2.3".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn if_inet6_addresses_are_read() {
        let text = "00000000000000000000000000000001 01 80 10 80       lo\nfe800000000000000000000000000001 02 40 20 80 eth0\n";
        assert_eq!(
            parse_if_inet6(text),
            vec![
                "::1".parse::<IpAddr>().unwrap(),
                "fe80::1".parse::<IpAddr>().unwrap()
            ]
        );
    }

    #[test]
    fn every_default_range_table_entry_is_a_network_address() {
        for (base, len, label) in V4_DENIED {
            assert!(v4_in(*base, *base, *len), "{label}");
            let mask = u32::MAX.checked_shl(32 - u32::from(*len)).unwrap_or(0);
            assert_eq!(base & mask, *base, "{label} base has host bits");
        }
        for (base, len, label) in V6_NAMED {
            let mask = u128::MAX.checked_shl(128 - u32::from(*len)).unwrap_or(0);
            assert_eq!(base & mask, *base, "{label} base has host bits");
        }
    }
}
