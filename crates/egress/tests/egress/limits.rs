//! Limits, against servers that stall, drip, send forever, or send huge
//! heads; and a DNS server that never answers.

use std::sync::Arc;

use agentcaps_egress::{EgressError, Phase};

use crate::support::dns::DnsServer;
use crate::support::http::Server as TestServer;
use crate::support::http::{Misbehave, Reply, Server, handler, misbehaving};
use crate::support::{client, loopback_policy};

/// A policy that opens `server` (on 127.0.0.2) and nothing else.
fn open_to(dns: &DnsServer, server: &TestServer) -> agentcaps_egress::EgressPolicyConfig {
    loopback_policy(dns, &["127.0.0.2/32"], &[server.port()])
}

/// `GET http://127.0.0.2:port/` under `config`.
async fn get(
    config: &agentcaps_egress::EgressPolicyConfig,
    server: &TestServer,
) -> Result<agentcaps_egress::Response, EgressError> {
    client(config)
        .get(&format!("http://127.0.0.2:{}/", server.port()))
        .send()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_hits_the_header_timeout() {
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::Stall).await;
    let mut config = open_to(&dns, &server);
    config.header_timeout_ms = 300;
    let err = get(&config, &server).await.unwrap_err();
    assert!(
        matches!(
            err,
            EgressError::Timeout {
                phase: Phase::Headers,
                limit_ms: 300,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.rule(), "time.headers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_body_is_cut_at_the_total_deadline_and_says_so() {
    let dns = DnsServer::start().await;
    let server = misbehaving(
        "127.0.0.2:0",
        Misbehave::Drip(std::time::Duration::from_millis(20)),
    )
    .await;
    let mut config = open_to(&dns, &server);
    config.timeout_ms = 600;
    let response = get(&config, &server).await.unwrap();
    let body = response.bytes().await.unwrap();
    assert!(body.timed_out);
    assert!(!body.truncated);
    assert!(
        !body.bytes.is_empty(),
        "what arrived before the deadline is kept"
    );
    assert!(body.bytes.iter().all(|b| *b == b'x'));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_body_is_cut_at_max_response_bytes() {
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::Forever).await;
    let mut config = open_to(&dns, &server);
    config.max_response_bytes = 100_000;
    let response = get(&config, &server).await.unwrap();
    let body = response.text().await.unwrap();
    assert!(body.truncated);
    assert!(!body.timed_out);
    assert_eq!(body.text.len(), 100_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_exactly_at_the_limit_is_not_truncated() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok(&"z".repeat(1000)))).await;
    let mut config = open_to(&dns, &server);
    config.max_response_bytes = 1000;
    let c = client(&config);
    let url = format!("http://127.0.0.2:{}/", server.port());
    let body = c.get(&url).send().await.unwrap().bytes().await.unwrap();
    assert_eq!((body.bytes.len(), body.truncated), (1000, false));
    config.max_response_bytes = 999;
    let body = client(&config)
        .get(&url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!((body.bytes.len(), body.truncated), (999, true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_headers_over_the_limit_are_refused() {
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::HugeHeaders(200_000)).await;
    let mut config = open_to(&dns, &server);
    config.max_header_bytes = 16 * 1024;
    let err = get(&config, &server).await.unwrap_err();
    assert_eq!(err.rule(), "size.headers", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_just_over_a_small_limit_are_refused() {
    // 6 KiB of headers against a 2 KiB policy (well under hyper's default
    // buffer): the policy's limit is the one applied.
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::HugeHeaders(6 * 1024)).await;
    let mut config = open_to(&dns, &server);
    config.max_header_bytes = 2 * 1024;
    let err = get(&config, &server).await.unwrap_err();
    assert_eq!(err.rule(), "size.headers", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_dns_server_hits_the_dns_timeout() {
    let dns = DnsServer::start().await;
    dns.set_silent("slow.example.com");
    let mut config = loopback_policy(&dns, &[], &[]);
    config.dns_timeout_ms = 300;
    let err = client(&config)
        .get("http://slow.example.com/")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "time.dns", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_deadline_covers_the_whole_redirect_chain() {
    // Every hop answers within the header timeout, but the chain as a
    // whole does not fit in timeout_ms.
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| {
            std::thread::sleep(std::time::Duration::from_millis(150));
            let n: u32 = seen.path.trim_start_matches('/').parse().unwrap_or(0);
            Reply::redirect(302, &format!("/{}", n + 1))
        }),
    )
    .await;
    let mut config = open_to(&dns, &server);
    config.timeout_ms = 500;
    config.header_timeout_ms = 400;
    config.max_redirects = 20;
    let err = client(&config)
        .get(&format!("http://127.0.0.2:{}/0", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "time.total", "{err}");
    assert!(server.hits() >= 2, "several hops ran before the deadline");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_arrives_chunk_by_chunk() {
    let dns = DnsServer::start().await;
    let go = Arc::new(tokio::sync::Notify::new());
    let server = misbehaving("127.0.0.2:0", Misbehave::TwoChunks(go.clone())).await;
    let config = open_to(&dns, &server);
    let mut response = get(&config, &server).await.unwrap();
    // The server sends the second chunk only after the first was read.
    assert_eq!(&response.chunk().await.unwrap().unwrap()[..], b"first");
    go.notify_one();
    assert_eq!(&response.chunk().await.unwrap().unwrap()[..], b"second");
    assert_eq!(response.chunk().await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_over_the_limit_is_refused_before_connecting() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok(""))).await;
    let mut config = open_to(&dns, &server);
    config.allowed_methods = vec!["POST".into()];
    config.max_request_bytes = 10;
    let err = client(&config)
        .request(
            agentcaps_egress::Method::POST,
            &format!("http://127.0.0.2:{}/", server.port()),
        )
        .body(vec![0u8; 11])
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "size.request");
    assert_eq!(server.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_handshake_that_never_completes_hits_the_connect_timeout() {
    let dns = DnsServer::start().await;
    // Accepts TCP, reads, never answers: the TLS handshake stalls.
    let server = misbehaving("127.0.0.2:0", Misbehave::Stall).await;
    let mut config = open_to(&dns, &server);
    config.connect_timeout_ms = 300;
    let err = client(&config)
        .get(&format!("https://127.0.0.2:{}/", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "time.connect", "{err}");
}
