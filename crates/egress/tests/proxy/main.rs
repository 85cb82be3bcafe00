//! The judging proxy with real clients on loopback: `curl` (plain HTTP,
//! keep-alive, redirects, `CONNECT` for TLS) and `pip download` against a
//! loopback package index, names answered by a real DNS server the tests
//! control. Every refusal is checked three ways: the status and rule the
//! client sees, the proxy's log, and the target server never contacted.
//! The same rules are also checked with requests written by hand
//! (`attacks`), which run where there is no `curl` (Windows under Wine).
#![allow(unreachable_pub)] // support items are `pub` for the test modules of this one binary

#[path = "../egress/support/mod.rs"]
#[allow(dead_code)]
mod support;

mod attacks;
mod clients;
mod forward;
mod pip;
mod rules;
mod tunnel;
// UNIX sockets: not on Windows.
#[cfg(unix)]
mod unix;
// The hand-over of a view's listener: Linux, where the views are.
#[cfg(target_os = "linux")]
mod handoff;

use std::net::SocketAddr;

use agentcaps_egress::EgressPolicyConfig;
use agentcaps_egress::proxy::{Proxy, ProxyDecision, ProxyEntry, ProxyKind};

use support::dns::DnsServer;

/// A proxy on 127.0.0.1 judging by `config`.
pub async fn proxy(config: &EgressPolicyConfig) -> Proxy {
    Proxy::bind(
        config.build().expect("policy"),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("proxy")
}

/// A loopback policy for the proxy tests: `cidrs` open, `ports` allowed,
/// the test DNS server.
pub fn policy(dns: &DnsServer, cidrs: &[&str], ports: &[u16]) -> EgressPolicyConfig {
    support::loopback_policy(dns, cidrs, ports)
}

/// The proxy's URL for `HTTP_PROXY` and `--proxy`.
pub fn url_of(proxy: &Proxy) -> String {
    format!("http://{}", proxy.local_addr().unwrap())
}

/// The one log entry for `host`, which must exist.
pub fn entry_for(proxy: &Proxy, host: &str) -> ProxyEntry {
    let entries = proxy.log().entries();
    let found: Vec<&ProxyEntry> = entries.iter().filter(|e| e.host == host).collect();
    assert_eq!(found.len(), 1, "entries for {host}: {entries:#?}");
    found[0].clone()
}

/// Asserts a logged refusal of `host` by `rule`, before any dial.
pub fn assert_refused(proxy: &Proxy, host: &str, kind: ProxyKind, rule: &str) {
    let entry = entry_for(proxy, host);
    assert_eq!(
        (
            entry.kind,
            entry.decision,
            entry.rule.as_str(),
            entry.address
        ),
        (kind, ProxyDecision::Deny, rule, None::<SocketAddr>),
        "{entry:#?}"
    );
    assert!(!entry.reason.is_empty());
}
