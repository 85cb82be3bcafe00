//! Requests written by hand to get past the proxy: a `Host` header that
//! disagrees with the absolute URL, userinfo, special-use names, a DNS
//! answer that changes between queries (rebinding), a mixed answer, an
//! origin-form request, `https://` in absolute form, a CONNECT without a
//! port. None reaches the denied server; each is logged.

use agentcaps_egress::proxy::ProxyDecision;

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, handler};
use crate::support::pair;
use crate::{policy, proxy, raw};

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

/// The refusals the `curl` suite checks, written by hand (so they also run
/// where there is no `curl`): a denied port plain and tunnelled, `CONNECT`
/// to an IP literal in a denied range in its spellings, a refused method,
/// metadata and method-override headers, a redirect's next hop. Each is
/// `403` with its rule, logged before any dial; the denied server never
/// hears from the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_refuses_a_hand_written_request_before_any_dial() {
    let dns = DnsServer::start().await;
    let (allowed, sink) = pair(
        "127.0.0.2",
        handler(|_| Reply::ok("allowed")),
        "127.0.0.3",
        handler(|_| Reply::ok("PRIVATE")),
    )
    .await;
    let p = allowed.port();
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let mut config = policy(&dns, &["127.0.0.0/8", "::/0"], &[p]);
    config.denied_cidrs = vec!["127.0.0.3/32".into()];
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "GET http://allowed.example.com:22/ HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "allowed.example.com",
            "port",
        ),
        (
            "CONNECT allowed.example.com:22 HTTP/1.1\r\nHost: x\r\n\r\n".to_owned(),
            "allowed.example.com",
            "port",
        ),
        (
            format!("CONNECT 127.0.0.3:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "127.0.0.3",
            "address.denied-cidr",
        ),
        (
            format!("CONNECT [::ffff:127.0.0.3]:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "::ffff:127.0.0.3",
            "address.denied-cidr",
        ),
        (
            format!("CONNECT [::ffff:7f00:3]:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "::ffff:127.0.0.3",
            "address.denied-cidr",
        ),
        (
            format!("CONNECT 2130706435:{p} HTTP/1.1\r\nHost: x\r\n\r\n"),
            "127.0.0.3",
            "address.denied-cidr",
        ),
        (
            format!("GET http://0177.0.0.3:{p}/ HTTP/1.1\r\nHost: x\r\n\r\n"),
            "127.0.0.3",
            "address.denied-cidr",
        ),
        (
            format!(
                "POST http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nx=1"
            ),
            "allowed.example.com",
            "method",
        ),
        (
            format!(
                "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nMetadata-Flavor: Google\r\n\r\n"
            ),
            "allowed.example.com",
            "header.reserved",
        ),
        (
            format!(
                "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nX-aws-ec2-metadata-token-ttl-seconds: 60\r\n\r\n"
            ),
            "allowed.example.com",
            "header.reserved",
        ),
        (
            format!(
                "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nX-HTTP-Method-Override: DELETE\r\n\r\n"
            ),
            "allowed.example.com",
            "header.method-override",
        ),
    ];
    for (request, host, rule) in &cases {
        // A proxy each, so that its log holds this request alone.
        let proxy = proxy(&config).await;
        let answer = raw(proxy.local_addr().unwrap(), request).await;
        assert!(
            answer.starts_with("HTTP/1.1 403")
                && answer.contains(&format!("x-agentcaps-rule: {rule}"))
                && answer.contains(&format!("[{rule}]")),
            "{request:?}:\n{answer}"
        );
        crate::assert_refused(&proxy, host, entry_kind(request), rule);
    }
    assert_eq!(allowed.connections(), 0, "an allowed server was dialled");
    assert_eq!(sink.connections(), 0, "the denied server was contacted");
    // The allowed twin of the denied literal goes through.
    let proxy = proxy(&config).await;
    let answer = raw(
        proxy.local_addr().unwrap(),
        &format!("GET http://127.0.0.2:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("allowed"),
        "{answer}"
    );
}

fn entry_kind(request: &str) -> agentcaps_egress::proxy::ProxyKind {
    if request.starts_with("CONNECT") {
        agentcaps_egress::proxy::ProxyKind::Connect
    } else {
        agentcaps_egress::proxy::ProxyKind::Http
    }
}
