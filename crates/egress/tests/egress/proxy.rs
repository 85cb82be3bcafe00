//! Environment proxy variables are ignored: a recording proxy that
//! `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (both cases) point at is never
//! hit. The variables are set only in a child process (this test binary
//! run again), so the parallel tests of this process are not affected.

use crate::support::client;
use crate::support::dns::DnsServer;
use crate::support::http::{Reply, Server, handler};

const CHILD: &str = "AGENTCAPS_EGRESS_PROXY_CHILD";
const TARGET: &str = "AGENTCAPS_EGRESS_PROXY_TARGET";
const DNS: &str = "AGENTCAPS_EGRESS_PROXY_DNS";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_proxy_variables_are_ignored() {
    if std::env::var_os(CHILD).is_some() {
        return child().await;
    }
    let dns = DnsServer::start().await;
    let proxy = Server::start("127.0.0.3:0", handler(|_| Reply::ok("proxied"))).await;
    let target = Server::start("127.0.0.2:0", handler(|_| Reply::ok("direct"))).await;
    let proxy_url = format!("http://{}", proxy.addr);
    let status = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "proxy::environment_proxy_variables_are_ignored",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env(TARGET, target.addr.to_string())
        .env(DNS, dns.server())
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("HTTPS_PROXY", &proxy_url)
        .env("https_proxy", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .env("all_proxy", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .status()
        .await
        .unwrap();
    assert!(status.success(), "the child's request failed");
    assert_eq!(target.hits(), 1, "the request went straight to the target");
    assert_eq!(proxy.connections(), 0, "the proxy was never contacted");
}

async fn child() {
    assert!(
        std::env::var_os("HTTP_PROXY").is_some(),
        "the child sees the proxy variables"
    );
    let target: std::net::SocketAddr = std::env::var(TARGET).unwrap().parse().unwrap();
    let mut config = loopback_policy_for_child();
    config.allowed_ports = vec![target.port()];
    let response = client(&config)
        .get(&format!("http://{target}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.remote_addr(), Some(target));
    assert_eq!(response.text().await.unwrap().text, "direct");
}

fn loopback_policy_for_child() -> agentcaps_egress::EgressPolicyConfig {
    agentcaps_egress::EgressPolicyConfig {
        allowed_cidrs: vec!["127.0.0.2/32".into()],
        dns_servers: vec![std::env::var(DNS).unwrap()],
        ..agentcaps_egress::EgressPolicyConfig::default()
    }
}
