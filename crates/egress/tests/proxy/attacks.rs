//! Requests written by hand to get past the proxy: a `Host` header that
//! disagrees with the absolute URL, userinfo, special-use names, a DNS
//! answer that changes between queries (rebinding), a mixed answer, an
//! origin-form request, `https://` in absolute form, a CONNECT without a
//! port. None reaches the denied server; each is logged.

use std::time::Duration;

use agentcaps_egress::proxy::ProxyDecision;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, handler};
use crate::support::pair;
use crate::{policy, proxy};

/// Sends `request` raw and reads the answer (the proxy closes after a
/// refusal; an allowed answer is read until `Connection: close` ends it).
async fn raw(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_written_requests_do_not_get_past_the_proxy() {
    let dns = DnsServer::start().await;
    let (allowed, sink) = pair(
        "127.0.0.2",
        handler(|seen| Reply::ok(&format!("host={}", seen.headers["host"].to_str().unwrap()))),
        "127.0.0.3",
        handler(|_| Reply::ok("PRIVATE")),
    )
    .await;
    let p = allowed.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("127.0.0.3")]);
    dns.set(
        "mixed.example.com",
        vec![Rec::ip("127.0.0.2"), Rec::ip("127.0.0.3")],
    );
    // Public-looking first, inward on every later query.
    dns.set_sequence(
        "rebind.example.com",
        vec![vec![Rec::ip("127.0.0.2")], vec![Rec::ip("127.0.0.3")]],
    );
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[p])).await;
    let at = proxy.local_addr().unwrap();

    // The URL decides where the request goes, never the Host header.
    let answer = raw(
        at,
        &format!("GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: inward.example.com:{p}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 200")
            && answer.ends_with(&format!("host=allowed.example.com:{p}")),
        "{answer}"
    );

    let refused = [
        (
            format!("GET http://user@allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "userinfo",
        ),
        (
            format!("GET http://localhost:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "name.special-use",
        ),
        (
            format!("CONNECT metadata.google.internal:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "name.special-use",
        ),
        (
            format!("GET http://mixed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "address.special-purpose",
        ),
        (
            format!("CONNECT mixed.example.com:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "address.special-purpose",
        ),
        (
            format!("GET http://0x7f.3:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "403",
            "address.special-purpose",
        ),
        (
            format!("GET / HTTP/1.1\r\nHost: allowed.example.com:{p}\r\n\r\n"),
            "400",
            "url.invalid",
        ),
        (
            format!("GET https://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "400",
            "url.invalid",
        ),
        (
            "CONNECT allowed.example.com HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "400",
            "url.invalid",
        ),
    ];
    for (request, status, rule) in &refused {
        let answer = raw(at, request).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}"))
                && answer.contains(&format!("x-agentcaps-rule: {rule}")),
            "{request:?}:\n{answer}"
        );
    }

    // Rebinding: each request resolves once and dials only what it judged;
    // the second answer (inward) is refused, never dialled.
    for _ in 0..3 {
        let _ = raw(
            at,
            &format!("GET http://rebind.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        )
        .await;
    }
    let rebind: Vec<ProxyDecision> = proxy
        .log()
        .entries()
        .iter()
        .filter(|e| e.host == "rebind.example.com")
        .map(|e| e.decision)
        .collect();
    assert_eq!(rebind.first(), Some(&ProxyDecision::Allow), "{rebind:?}");
    assert!(
        rebind[1..].iter().all(|d| *d == ProxyDecision::Deny),
        "{rebind:?}"
    );

    assert_eq!(sink.connections(), 0, "the denied server was contacted");
    let entries = proxy.log().entries();
    assert_eq!(entries.len(), 1 + refused.len() + 3, "{entries:#?}");
}
