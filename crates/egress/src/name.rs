//! Host names: normalization (UTS-46 / punycode, lower case, one trailing
//! dot dropped) and the name rules judged before any DNS query.

use std::net::IpAddr;

use crate::address::denoted;
use crate::error::NameRule;

/// Suffixes that never denote a public host; each covers the name itself
/// and every name under it.
pub(crate) const SPECIAL_USE: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "home.arpa",
    "onion",
    "invalid",
];

/// Drops one trailing dot. A name that still ends in a dot, or that has an
/// empty label anywhere, is refused by [`judge_name`].
pub(crate) fn strip_root(name: &str) -> &str {
    name.strip_suffix('.').unwrap_or(name)
}

fn is_under(name: &str, suffix: &str) -> bool {
    name == suffix
        || (name.len() > suffix.len()
            && name.ends_with(suffix)
            && name.as_bytes().get(name.len() - suffix.len() - 1) == Some(&b'.'))
}

fn is_strictly_under(name: &str, suffix: &str) -> bool {
    name != suffix && is_under(name, suffix)
}

/// One normalized entry of an allow or deny list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// `example.com`.
    Exact(String),
    /// `*.example.com`: names under it, not the apex.
    Wildcard(String),
    /// An IP literal, compared with IP-literal hosts.
    Ip(IpAddr),
}

/// A list of domain names, normalized once when the policy is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DomainList {
    entries: Vec<Entry>,
}

/// Normalizes one configured name the way the URL parser normalizes a
/// host: UTS-46 mapping to punycode, lower case, one trailing dot dropped.
pub(crate) fn normalize_entry(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err("empty name".to_owned());
    }
    match url::Host::parse(trimmed) {
        Ok(url::Host::Domain(d)) => {
            let d = strip_root(&d).to_owned();
            if d.is_empty() || d.split('.').any(str::is_empty) {
                return Err(format!("`{raw}` has an empty label"));
            }
            Ok(d)
        }
        Ok(url::Host::Ipv4(ip)) => Ok(ip.to_string()),
        Ok(url::Host::Ipv6(ip)) => Ok(ip.to_string()),
        Err(e) => Err(format!("`{raw}` is not a host name: {e}")),
    }
}

impl DomainList {
    /// Compiles configured entries (`name`, `*.suffix`, or an IP literal).
    pub(crate) fn new<S: AsRef<str>>(raw: &[S]) -> Result<Self, String> {
        let mut entries = Vec::with_capacity(raw.len());
        for item in raw {
            let item = item.as_ref().trim();
            if let Some(suffix) = item.strip_prefix("*.") {
                entries.push(Entry::Wildcard(normalize_entry(suffix)?));
            } else if let Ok(ip) = item.trim_start_matches('[').trim_end_matches(']').parse() {
                entries.push(Entry::Ip(ip));
            } else {
                let norm = normalize_entry(item)?;
                match norm.parse::<IpAddr>() {
                    Ok(ip) => entries.push(Entry::Ip(ip)),
                    Err(_) => entries.push(Entry::Exact(norm)),
                }
            }
        }
        Ok(DomainList { entries })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Allow-list reading: exact names, `*.suffix` strictly below.
    pub(crate) fn allows(&self, name: &str) -> bool {
        self.entries.iter().any(|e| match e {
            Entry::Exact(n) => n == name,
            Entry::Wildcard(s) => is_strictly_under(name, s),
            Entry::Ip(_) => false,
        })
    }

    /// Allow-list reading for an IP-literal host, by what both sides
    /// denote (`::ffff:1.2.3.4` is `1.2.3.4`; a NAT64 spelling only when
    /// `nat64` decoding is on).
    pub(crate) fn allows_ip(&self, ip: IpAddr, nat64: bool) -> bool {
        let want = denoted(ip, nat64);
        self.entries
            .iter()
            .any(|e| matches!(e, Entry::Ip(entry) if denoted(*entry, nat64) == want))
    }

    /// Deny-list reading: a plain entry covers itself and everything
    /// under it; `*.suffix` covers only what is under it. Returns the
    /// entry as configured (normalized).
    pub(crate) fn blocks(&self, name: &str) -> Option<String> {
        self.entries.iter().find_map(|e| match e {
            Entry::Exact(n) if is_under(name, n) => Some(n.clone()),
            Entry::Wildcard(s) if is_strictly_under(name, s) => Some(format!("*.{s}")),
            _ => None,
        })
    }

    /// Deny-list reading for an IP-literal host, by what both sides
    /// denote (every IPv6 spelling of an IPv4 address, NAT64 included).
    /// Returns the entry as configured.
    pub(crate) fn blocks_ip(&self, ip: IpAddr) -> Option<String> {
        let reaches = [ip, denoted(ip, true)];
        self.entries.iter().find_map(|e| match e {
            Entry::Ip(entry)
                if reaches.contains(entry) || reaches.contains(&denoted(*entry, true)) =>
            {
                Some(entry.to_string())
            }
            _ => None,
        })
    }
}

/// The name rules, in order: shape (empty labels), the deny list, the
/// special-use names and single labels (when `defaults` is on), then the
/// allow list. `name` is already normalized by the URL parser and has had
/// its one trailing dot dropped.
pub(crate) fn judge_name(
    name: &str,
    allow: &DomainList,
    deny: &DomainList,
    defaults: bool,
) -> Result<(), NameRule> {
    if name.is_empty() || name.split('.').any(str::is_empty) {
        return Err(NameRule::EmptyLabel);
    }
    if let Some(entry) = deny.blocks(name) {
        return Err(NameRule::Blocked(entry));
    }
    if let Err(e) = hickory_resolver::Name::from_ascii(format!("{name}.")) {
        // A label over 63 bytes, a name over 255, or bytes the DNS
        // library refuses: it could never be queried, so it is refused
        // here by name rather than failing later as a DNS error.
        return Err(NameRule::Unencodable(e.to_string()));
    }
    if defaults {
        if let Some(suffix) = SPECIAL_USE.iter().find(|s| is_under(name, s)) {
            return Err(NameRule::SpecialUse(suffix));
        }
        if !name.contains('.') {
            return Err(NameRule::SingleLabel);
        }
    }
    if !allow.is_empty() && !allow.allows(name) {
        return Err(NameRule::NotAllowed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_needs_a_label_boundary() {
        assert!(is_under("a.example.com", "example.com"));
        assert!(is_under("example.com", "example.com"));
        assert!(!is_under("badexample.com", "example.com"));
        assert!(!is_strictly_under("example.com", "example.com"));
    }
}
