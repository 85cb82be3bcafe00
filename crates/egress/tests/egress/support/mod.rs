//! Test support: a DNS server, HTTP(S) servers and a CA, all on loopback.

pub mod dns;
pub mod http;
pub mod tls;

use agentcaps_egress::{Client, EgressPolicy, EgressPolicyConfig};

/// A policy for loopback tests: the given CIDRs and ports opened, the test
/// DNS server, short timeouts.
pub fn loopback_policy(dns: &dns::DnsServer, cidrs: &[&str], ports: &[u16]) -> EgressPolicyConfig {
    EgressPolicyConfig {
        allowed_cidrs: cidrs.iter().map(|s| s.to_string()).collect(),
        allowed_ports: ports.to_vec(),
        dns_servers: vec![dns.server()],
        timeout_ms: 5_000,
        dns_timeout_ms: 2_000,
        connect_timeout_ms: 2_000,
        header_timeout_ms: 3_000,
        ..EgressPolicyConfig::default()
    }
}

pub fn client(config: &EgressPolicyConfig) -> Client {
    Client::new(build(config)).expect("client")
}

pub fn build(config: &EgressPolicyConfig) -> EgressPolicy {
    config.build().expect("policy")
}

/// Two plain HTTP servers on the same port of two loopback addresses
/// (`a` first, then `b` on the port `a` got), so a policy can list one
/// port while the tests tell the addresses apart.
pub async fn pair(
    a: &str,
    ha: http::Handler,
    b: &str,
    hb: http::Handler,
) -> (http::Server, http::Server) {
    for _ in 0..20 {
        let first = http::Server::start(&format!("{a}:0"), ha.clone()).await;
        let port = first.port();
        let bind_b = if b.contains(':') {
            format!("[{b}]:{port}")
        } else {
            format!("{b}:{port}")
        };
        if tokio::net::TcpListener::bind(&bind_b).await.is_ok() {
            // The probe listener is dropped here; bind for real.
            let second = http::Server::start(&bind_b, hb.clone()).await;
            return (first, second);
        }
    }
    panic!("no common port for {a} and {b}");
}
