//! The proxy's record is complete. A request or tunnel is listed from the
//! moment it is decided, before any dial, and completed with the address,
//! the status, the bytes each way and how it ended — also when the client
//! hangs up before the response head, when a `CONNECT`'s client leaves
//! before its `200`, and when the proxy stops in the middle (the command
//! timed out). Requests the parser rejects are listed; past the log's
//! limit every allowed entry is kept and the others are counted; a refusal
//! (`deny`) and a failure (`error`) are told apart in the answer and the
//! log.

use std::time::Duration;

use agentcaps_egress::proxy::{MAX_LOG_ENTRIES, ProxyDecision, ProxyKind, ProxyOutcome};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::clients::curl;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Misbehave, Reply, Server, handler, misbehaving};
use crate::{entry_for, eventually, policy, proxy, raw, url_of};

/// A connection to `proxy` that has sent `request` (and is left open).
async fn sent(proxy: &agentcaps_egress::proxy::Proxy, request: &str) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.local_addr().unwrap())
        .await
        .unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// The one entry for `host` once it exists.
#[cfg(target_os = "linux")]
async fn listed(proxy: &agentcaps_egress::proxy::Proxy, host: &str) {
    let log = proxy.log();
    eventually(&format!("an entry for {host}"), || {
        log.entries().iter().any(|e| e.host == host)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_before_the_response_head_is_listed() {
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::Stall).await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let stream = sent(
        &proxy,
        &format!(
            "GET http://allowed.example.com:{}/secret HTTP/1.1\r\nHost: x\r\n\r\n",
            server.port()
        ),
    )
    .await;
    eventually("the request reached the server", || {
        server.connections() == 1
    })
    .await;
    // Listed while it waits for the head, then completed by the hang-up.
    let open = entry_for(&proxy, "allowed.example.com");
    assert_eq!(
        (open.decision, open.outcome, open.address),
        (ProxyDecision::Allow, ProxyOutcome::Open, Some(server.addr)),
        "{open:#?}"
    );
    drop(stream);
    let log = proxy.log();
    eventually("the hang-up recorded", || {
        log.entries()[0].outcome == ProxyOutcome::ClientClosed
    })
    .await;
    let entry = entry_for(&proxy, "allowed.example.com");
    assert_eq!(
        (entry.kind, entry.method.as_str(), entry.status),
        (ProxyKind::Http, "GET", None),
        "{entry:#?}"
    );
}

/// A listener whose accept queue is full: a connection to it hangs in
/// the SYN retries (Linux drops the SYN), so a dial to it is still going
/// when the test acts.
#[cfg(target_os = "linux")]
async fn unanswered_listener() -> (
    std::net::SocketAddr,
    Vec<TcpStream>,
    tokio::net::TcpListener,
) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut held = Vec::new();
    for _ in 0..3 {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_millis(300), TcpStream::connect(addr)).await
        {
            held.push(s);
        }
    }
    (addr, held, listener)
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_whose_client_leaves_before_the_200_is_listed_before_the_dial() {
    let dns = DnsServer::start().await;
    let (addr, _held, _listener) = unanswered_listener().await;
    dns.set("slow.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[addr.port()])).await;
    let stream = sent(
        &proxy,
        &format!(
            "CONNECT slow.example.com:{} HTTP/1.1\r\nHost: x\r\n\r\n",
            addr.port()
        ),
    )
    .await;
    listed(&proxy, "slow.example.com").await;
    let dialling = entry_for(&proxy, "slow.example.com");
    assert_eq!(
        (
            dialling.kind,
            dialling.decision,
            dialling.outcome,
            dialling.address
        ),
        (
            ProxyKind::Connect,
            ProxyDecision::Allow,
            ProxyOutcome::Open,
            None
        ),
        "listed as decided, while the dial goes on: {dialling:#?}"
    );
    drop(stream);
    let log = proxy.log();
    eventually("the client's leaving recorded", || {
        log.entries()[0].outcome == ProxyOutcome::ClientClosed
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_stopped_in_the_middle_leaves_its_requests_listed() {
    let dns = DnsServer::start().await;
    let server = misbehaving("127.0.0.2:0", Misbehave::Drip(Duration::from_millis(20))).await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let log = proxy.log();
    let stream = sent(
        &proxy,
        &format!(
            "GET http://allowed.example.com:{}/ HTTP/1.1\r\nHost: x\r\n\r\n",
            server.port()
        ),
    )
    .await;
    eventually("some of the body came through", || {
        log.entries().first().is_some_and(|e| e.received >= 3)
    })
    .await;
    // The command's time is up: its proxy stops with the request going.
    drop(proxy);
    eventually("the stop recorded", || {
        log.entries()[0].outcome == ProxyOutcome::Stopped
    })
    .await;
    let entry = &log.entries()[0];
    assert_eq!(
        (entry.decision, entry.status, entry.address),
        (ProxyDecision::Allow, Some(200), Some(server.addr)),
        "{entry:#?}"
    );
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_parser_rejects_are_listed() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("reached"))).await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let at = proxy.local_addr().unwrap();
    let p = server.port();
    let malformed = raw(
        at,
        &format!("GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost x\r\n\r\n"),
    )
    .await;
    assert!(malformed.starts_with("HTTP/1.1 400"), "{malformed}");
    let many: String = (0..150).map(|i| format!("x-field-{i}: v\r\n")).collect();
    let too_many = raw(
        at,
        &format!("GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n{many}\r\n"),
    )
    .await;
    assert!(too_many.starts_with("HTTP/1.1 431"), "{too_many}");
    let log = proxy.log();
    eventually("both listed", || log.entries().len() == 2).await;
    let rules: Vec<(ProxyKind, ProxyDecision, String)> = log
        .entries()
        .into_iter()
        .map(|e| (e.kind, e.decision, e.rule))
        .collect();
    assert_eq!(
        rules,
        [
            (
                ProxyKind::Http,
                ProxyDecision::Deny,
                "request.malformed".to_owned()
            ),
            (
                ProxyKind::Http,
                ProxyDecision::Deny,
                "size.request-head".to_owned()
            ),
        ]
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn past_the_limit_every_allowed_entry_is_kept_and_the_others_counted() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("delivered"))).await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let at = proxy.local_addr().unwrap();
    // One refusal more than the log keeps, sixteen at a time.
    let refusals = MAX_LOG_ENTRIES + 1;
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..16 {
        workers.spawn(async move {
            for _ in (w..refusals).step_by(16) {
                let answer = raw(at, "GET http://localhost/ HTTP/1.1\r\nHost: x\r\n\r\n").await;
                assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.unwrap();
    }
    let run = curl(
        &url_of(&proxy),
        &[&format!("http://allowed.example.com:{}/", server.port())],
    )
    .await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "delivered"),
        "{}",
        run.stderr
    );
    let log = proxy.log();
    eventually("the delivery completed", || {
        log.entries()
            .last()
            .is_some_and(|e| e.outcome == ProxyOutcome::Done)
    })
    .await;
    let entries = log.entries();
    assert_eq!(entries.len(), MAX_LOG_ENTRIES + 1);
    assert_eq!(log.dropped(), 1, "the refusal past the limit is counted");
    let delivered = entries.last().unwrap();
    assert_eq!(
        (
            delivered.host.as_str(),
            delivered.decision,
            delivered.status,
            delivered.received
        ),
        ("allowed.example.com", ProxyDecision::Allow, Some(200), 9),
        "{delivered:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_is_completed_with_its_status_and_bytes_each_way() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| Reply::ok(&"r".repeat(seen.body.len() * 3))),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let mut config = policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    config.allowed_methods = vec!["GET".into(), "POST".into()];
    let proxy = proxy(&config).await;
    let body = "b".repeat(1000);
    let answer = raw(
        proxy.local_addr().unwrap(),
        &format!(
            "POST http://allowed.example.com:{}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{body}",
            server.port()
        ),
    )
    .await;
    assert!(answer.ends_with(&"r".repeat(3000)), "{answer}");
    let log = proxy.log();
    eventually("completed", || {
        log.entries()[0].outcome == ProxyOutcome::Done
    })
    .await;
    let entry = &log.entries()[0];
    assert_eq!(
        (entry.status, entry.sent, entry.received, entry.address),
        (Some(200), 1000, 3000, Some(server.addr)),
        "{entry:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_and_a_failure_are_told_apart() {
    let dns = DnsServer::start().await;
    // An allowed address with nothing listening: connecting fails.
    let closed = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    dns.set("down.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[port])).await;
    let at = proxy.local_addr().unwrap();
    let cases = [
        (
            format!("GET http://down.example.com:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "down.example.com",
            "502",
            "error",
            "connect",
        ),
        (
            format!("CONNECT down.example.com:{port} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "down.example.com",
            "502",
            "error",
            "connect",
        ),
        (
            format!("GET http://nowhere.example.com:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "nowhere.example.com",
            "502",
            "error",
            "dns",
        ),
        (
            "GET http://down.example.com:22/ HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "down.example.com",
            "403",
            "deny",
            "port",
        ),
    ];
    for (request, host, status, decision, rule) in &cases {
        let answer = raw(at, request).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}"))
                && answer.contains(&format!("x-agentcaps-decision: {decision}"))
                && answer.contains(&format!("agentcaps proxy: {decision} [{rule}]")),
            "{request:?}:\n{answer}"
        );
        let last = proxy.log().entries().pop().unwrap();
        assert_eq!(
            (
                last.host.as_str(),
                last.decision.to_string(),
                last.rule.as_str()
            ),
            (*host, decision.to_string(), *rule),
            "{last:#?}"
        );
        let outcome = if *decision == "error" {
            ProxyOutcome::Failed
        } else {
            ProxyOutcome::Done
        };
        assert_eq!(last.outcome, outcome, "{last:#?}");
    }
}

/// A proxy whose DNS (the test's server) never answers `slow.example.com`
/// within the test, so the decision is still being made.
async fn deciding_slowly() -> (DnsServer, agentcaps_egress::proxy::Proxy) {
    let dns = DnsServer::start().await;
    dns.set_silent("slow.example.com");
    let mut config = policy(&dns, &["127.0.0.2/32"], &[8080]);
    config.dns_timeout_ms = 30_000;
    let proxy = proxy(&config).await;
    (dns, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_the_name_is_resolved_is_listed() {
    for request in [
        "GET http://slow.example.com:8080/left-early HTTP/1.1\r\nHost: x\r\n\r\n",
        "CONNECT slow.example.com:8080 HTTP/1.1\r\nHost: x\r\n\r\n",
    ] {
        let (dns, proxy) = deciding_slowly().await;
        let stream = sent(&proxy, request).await;
        eventually("the name is being resolved", || {
            dns.queries("slow.example.com") > 0
        })
        .await;
        assert!(proxy.log().entries().is_empty(), "not decided yet");
        drop(stream);
        let log = proxy.log();
        eventually("the leaving recorded", || !log.entries().is_empty()).await;
        let entry = entry_for(&proxy, "slow.example.com");
        assert_eq!(
            (
                entry.decision,
                entry.outcome,
                entry.rule.as_str(),
                entry.address,
                entry.port
            ),
            (
                ProxyDecision::Error,
                ProxyOutcome::ClientClosed,
                "undecided",
                None,
                8080
            ),
            "{request}: {entry:#?}"
        );
        assert!(entry.reason.contains("nothing was sent"), "{entry:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_stopped_while_the_name_is_resolved_lists_the_request() {
    let (dns, proxy) = deciding_slowly().await;
    let log = proxy.log();
    let _stream = sent(
        &proxy,
        "GET http://slow.example.com:8080/ HTTP/1.1\r\nHost: x\r\n\r\n",
    )
    .await;
    eventually("the name is being resolved", || {
        dns.queries("slow.example.com") > 0
    })
    .await;
    drop(proxy);
    eventually("the stop recorded", || !log.entries().is_empty()).await;
    let entry = &log.entries()[0];
    assert_eq!(
        (entry.decision, entry.outcome, entry.rule.as_str()),
        (ProxyDecision::Error, ProxyOutcome::Stopped, "undecided"),
        "{entry:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_head_that_times_out_is_listed_and_an_idle_connection_is_not() {
    let dns = DnsServer::start().await;
    let mut config = policy(&dns, &["127.0.0.2/32"], &[8080]);
    config.header_timeout_ms = 500;
    let proxy = proxy(&config).await;
    let mut half = sent(
        &proxy,
        "GET http://allowed.example.com:8080/ HTTP/1.1\r\nHost: x\r\n",
    )
    .await;
    let mut idle = sent(&proxy, "").await;
    let mut buf = [0u8; 256];
    for stream in [&mut half, &mut idle] {
        let closed = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::io::AsyncReadExt::read(stream, &mut buf),
        )
        .await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "{closed:?}");
    }
    let log = proxy.log();
    eventually("the half-sent head listed", || !log.entries().is_empty()).await;
    // The idle connection was closed as well; give its entry (there must be
    // none) the same time to appear.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let entries = log.entries();
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(
        (
            entries[0].kind,
            entries[0].decision,
            entries[0].rule.as_str(),
            entries[0].outcome
        ),
        (
            ProxyKind::Http,
            ProxyDecision::Deny,
            "time.request-head",
            ProxyOutcome::Done
        ),
        "{entries:#?}"
    );
    assert!(entries[0].reason.contains("500 ms"), "{entries:#?}");
}
