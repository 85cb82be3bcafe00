//! `curl` through the proxy reaches allowed names: plain HTTP with
//! keep-alive on both sides, and HTTPS through a `CONNECT` tunnel with
//! the certificate checked by curl end to end.

use std::time::Duration;

use agentcaps_egress::proxy::{ProxyDecision, ProxyKind};

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::support::tls::TestCa;
use crate::{entry_for, policy, proxy, url_of};

/// What a curl run printed and its exit code.
pub struct Curl {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `curl -sS --proxy PROXY ARGS...` with no proxy variables of its
/// own, bounded in time.
pub async fn curl(proxy_url: &str, args: &[&str]) -> Curl {
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("curl")
            .args(["-sS", "--max-time", "20", "--proxy", proxy_url])
            .args(args)
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("no_proxy")
            .env_remove("NO_PROXY")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("curl finished in time")
    .expect("curl runs (install curl: .ci/run does)");
    Curl {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn curl_reaches_an_allowed_name_with_keep_alive() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| Reply::ok(&format!("hello {}", seen.path))),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let base = format!("http://allowed.example.com:{}", server.port());
    let run = curl(
        &url_of(&proxy),
        &[
            &format!("{base}/one"),
            "--next",
            "--proxy",
            &url_of(&proxy),
            &format!("{base}/two"),
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "hello /onehello /two");
    // What the server saw: origin-form targets and the URL's Host.
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/one");
    assert_eq!(
        seen[0].headers["host"],
        format!("allowed.example.com:{}", server.port())
    );
    assert!(!seen[0].headers.contains_key("proxy-connection"));
    assert_eq!(server.connections(), 1, "one pooled upstream connection");
    let entries = proxy.log().entries();
    assert_eq!(entries.len(), 2, "{entries:#?}");
    for entry in entries {
        assert_eq!(entry.kind, ProxyKind::Http);
        assert_eq!(entry.decision, ProxyDecision::Allow);
        assert_eq!(entry.host, "allowed.example.com");
        assert_eq!(entry.address, Some(server.addr));
        assert_eq!(entry.method, "GET");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn curl_tunnels_tls_to_an_allowed_name() {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let server = Server::start_tls(
        "127.0.0.2:0",
        handler(|_| Reply::ok("secret over tls")),
        ca.leaf(&["secure.example.com"]),
    )
    .await;
    dns.set("secure.example.com", vec![Rec::ip("127.0.0.2")]);
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let run = curl(
        &url_of(&proxy),
        &[
            "--cacert",
            &ca_file.display().to_string(),
            &format!("https://secure.example.com:{}/", server.port()),
        ],
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "secret over tls");
    assert_eq!(
        server.seen()[0].sni.as_deref(),
        Some("secure.example.com"),
        "the client's own TLS went through the tunnel"
    );
    let entry = entry_for(&proxy, "secure.example.com");
    assert_eq!(
        (entry.kind, entry.decision, entry.address),
        (ProxyKind::Connect, ProxyDecision::Allow, Some(server.addr))
    );
}
