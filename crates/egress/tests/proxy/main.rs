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
mod credentials;
mod forward;
mod inside;
mod limits;
mod pip;
mod record;
mod rules;
mod tunnel;
// UNIX sockets: not on Windows.
#[cfg(unix)]
mod unix;
// The hand-over of a view's listener: Linux, where the views are.
#[cfg(target_os = "linux")]
mod handoff;

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// Sends `request` raw and reads the answer (the proxy closes after a
/// refusal; an allowed answer is read until `Connection: close` ends it).
pub async fn raw(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits (at most five seconds) until `done` holds.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within five seconds");
}
