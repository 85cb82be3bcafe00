//! The proxy on a UNIX socket: the same judgement, over a stream of
//! another kind.

use agentcaps_egress::EgressPolicyConfig;
use agentcaps_egress::proxy::{Proxy, ProxyDecision};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::policy;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};

/// A proxy on a fresh UNIX socket in a directory of its own: the proxy,
/// the socket's path and the directory (to remove).
pub async fn unix_proxy(
    tag: &str,
    config: &EgressPolicyConfig,
) -> (Proxy, std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("proxy.sock");
    let proxy = Proxy::bind_unix(config.build().unwrap(), &path)
        .await
        .unwrap();
    (proxy, path, dir)
}

/// One request on a new connection to the UNIX socket at `path`, read to
/// the end.
pub async fn exchange(path: &std::path::Path, request: &str) -> String {
    let mut stream = UnixStream::connect(path).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    stream.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_on_a_unix_socket_judges_like_the_tcp_one() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("via unix"))).await;
    let p = server.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("10.0.0.1")]);
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let (proxy, path, dir) = unix_proxy("unix", &config).await;
    assert_eq!(proxy.local_addr(), None);
    let ok = exchange(
        &path,
        &format!(
            "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert!(
        ok.starts_with("HTTP/1.1 200") && ok.ends_with("via unix"),
        "{ok}"
    );
    let refused = exchange(
        &path,
        &format!("GET http://inward.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
    )
    .await;
    assert!(
        refused.starts_with("HTTP/1.1 403")
            && refused.contains("x-agentcaps-rule: address.special-purpose"),
        "{refused}"
    );
    let origin_form = exchange(&path, "GET / HTTP/1.1\r\nHost: allowed.example.com\r\n\r\n").await;
    assert!(origin_form.starts_with("HTTP/1.1 400"), "{origin_form}");
    let decisions: Vec<ProxyDecision> = proxy.log().entries().iter().map(|e| e.decision).collect();
    assert_eq!(
        decisions,
        [
            ProxyDecision::Allow,
            ProxyDecision::Deny,
            ProxyDecision::Deny
        ]
    );
    assert_eq!(server.hits(), 1);
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}
