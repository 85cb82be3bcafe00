//! Judging one IP address: the default special-purpose ranges, the
//! policy's own CIDR lists, NAT64 and the host's own addresses.
//!
//! Nothing here leans on `std`'s `is_loopback`/`is_private` predicates
//! (`Ipv6Addr::is_loopback` is false for `::ffff:127.0.0.1`): every range
//! is spelled out below and matched by prefix.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

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

/// The IPv4 address an IPv6 address carries, when it is one of the IPv6
/// spellings of an IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, but not `::` or `::1`) or, when `nat64`,
/// the NAT64 well-known prefix (`64:ff9b::a.b.c.d`).
pub(crate) fn embedded_v4(addr: Ipv6Addr, nat64: bool) -> Option<Ipv4Addr> {
    let bits = u128::from(addr);
    let low = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let mapped = v6_in(bits, 0xffff_0000_0000, 96);
    let compatible = v6_in(bits, 0, 96) && bits > 1;
    let translated = nat64 && v6_in(bits, NAT64_WELL_KNOWN.0, NAT64_WELL_KNOWN.1);
    (mapped || compatible || translated).then_some(low)
}

/// The address `addr` denotes: the IPv4 address inside an IPv6 spelling
/// of one ([`embedded_v4`]), else `addr` itself.
pub(crate) fn denoted(addr: IpAddr, nat64: bool) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => embedded_v4(v6, nat64).map_or(addr, IpAddr::V4),
        IpAddr::V4(_) => addr,
    }
}

/// Where a judged address is dialled: an IPv4-mapped address
/// (`::ffff:a.b.c.d`) is dialled as the IPv4 address it maps. It is the same
/// host, already judged as that IPv4 address; dialling it as IPv4 also
/// reaches it where IPv6 sockets are IPv6-only by default (Windows). Other
/// spellings (IPv4-compatible, NAT64) are dialled as they are: they are
/// other IPv6 destinations.
pub(crate) fn dial_address(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => v6
            .ip()
            .to_ipv4_mapped()
            .map_or(addr, |v4| SocketAddr::new(IpAddr::V4(v4), v6.port())),
        SocketAddr::V4(_) => addr,
    }
}

/// A configured CIDR list, read by what its ranges denote: an IPv4-mapped
/// range (`::ffff:0:0/96` or narrower) also stands for the IPv4 range it
/// maps, so `::ffff:127.0.0.0/104` covers `127.0.0.1`.
#[derive(Debug, Clone, Default)]
pub(crate) struct CidrList {
    /// The ranges as configured.
    nets: Vec<IpNet>,
    /// Each IPv4-mapped entry as the IPv4 range it maps, with the entry.
    mapped: Vec<(IpNet, IpNet)>,
}

impl CidrList {
    pub(crate) fn new(nets: Vec<IpNet>) -> Self {
        let mut list = CidrList::default();
        for net in nets {
            list.push(net);
        }
        list
    }

    pub(crate) fn push(&mut self, net: IpNet) {
        if let IpNet::V6(v6) = net
            && v6.prefix_len() >= 96
            && let Some(v4) = v6.network().to_ipv4_mapped()
            && let Ok(v4net) = ipnet::Ipv4Net::new(v4, v6.prefix_len() - 96)
        {
            self.mapped.push((IpNet::V4(v4net), net));
        }
        self.nets.push(net);
    }

    /// The configured entry that covers `addr` (for a mapped entry, the
    /// entry as configured).
    fn find(&self, addr: IpAddr) -> Option<IpNet> {
        if let Some(net) = self.nets.iter().find(|n| n.contains(&addr)) {
            return Some(*net);
        }
        self.mapped
            .iter()
            .find(|(v4, _)| v4.contains(&addr))
            .map(|(_, entry)| *entry)
    }
}

impl CidrList {
    /// Allow-list reading: whether an entry opens `addr`. An IPv6 spelling
    /// of an IPv4 address is opened only by what opens that IPv4 address
    /// (an IPv4 range or an IPv4-mapped one), never by a wider IPv6 range
    /// such as `::/0`; with NAT64 decoding off, a `64:ff9b::/96` address
    /// is opened only by an entry inside that prefix.
    fn opens(&self, addr: IpAddr, nat64: bool) -> bool {
        let target = denoted(addr, nat64);
        if target.is_ipv4() {
            return self.find(target).is_some();
        }
        if let IpAddr::V6(v6) = addr
            && v6_in(u128::from(v6), NAT64_WELL_KNOWN.0, NAT64_WELL_KNOWN.1)
        {
            return self
                .nets
                .iter()
                .any(|n| n.prefix_len() >= NAT64_WELL_KNOWN.1 && n.contains(&addr));
        }
        self.find(addr).is_some()
    }
}

/// The compiled address part of a policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct AddressJudge {
    pub(crate) allowed: CidrList,
    pub(crate) denied: CidrList,
    pub(crate) own: Vec<IpAddr>,
    pub(crate) defaults: bool,
    pub(crate) nat64: bool,
}

impl AddressJudge {
    /// `Ok` when a connection to `addr` is allowed.
    ///
    /// The lists are read by what an address denotes, across families:
    /// `::ffff:127.0.0.2`, `::127.0.0.2` and (NAT64 or not) `64:ff9b::7f00:2`
    /// are all `127.0.0.2` to `denied_cidrs`, and denied wins; for
    /// `allowed_cidrs` an IPv6 spelling of an IPv4 address is that IPv4
    /// address (the NAT64 one only when decoding is on), so an allowed
    /// IPv6 range never opens an IPv4 address, and an allowed IPv4 range
    /// opens its IPv6 spellings (see `CidrList::opens`).
    ///
    /// Order: the policy's `denied_cidrs` (always win), then its
    /// `allowed_cidrs`, then the default ranges, then the host's own
    /// addresses.
    pub(crate) fn judge(&self, addr: IpAddr) -> Result<(), Denial> {
        // Every address `addr` could reach: itself, and the IPv4 address
        // any IPv6 spelling carries (NAT64 decoded for denial even when
        // decoding is off: denying more is the safe side).
        let reaches = [addr, denoted(addr, true)];
        if let Some(net) = reaches.iter().find_map(|a| self.denied.find(*a)) {
            return Err(Denial {
                range: net.to_string(),
                label: "denied_cidrs".to_owned(),
                rule: AddressRule::DeniedCidr,
            });
        }
        if self.allowed.opens(addr, self.nat64) {
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
        if let Some(own) = reaches.iter().find(|a| self.own.contains(a)) {
            let len = if own.is_ipv4() { 32 } else { 128 };
            return Err(Denial {
                range: format!("{own}/{len}"),
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
    fn only_a_mapped_address_is_dialled_as_ipv4() {
        let dial = |s: &str| dial_address(s.parse().unwrap()).to_string();
        assert_eq!(dial("[::ffff:127.0.0.1]:80"), "127.0.0.1:80");
        assert_eq!(dial("[::ffff:8.8.8.8]:443"), "8.8.8.8:443");
        // Compatible and NAT64 spellings, and plain IPv6, stay IPv6.
        for same in [
            "[::127.0.0.1]:80",
            "[64:ff9b::808:808]:80",
            "[::1]:80",
            "[2001:db8::1]:80",
            "10.0.0.1:80",
        ] {
            let addr: SocketAddr = same.parse().unwrap();
            assert_eq!(dial_address(addr), addr, "{same}");
        }
    }

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
