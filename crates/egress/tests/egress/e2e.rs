//! End to end on loopback only: a real DNS server the test controls, real
//! HTTP servers, and proof of which address was dialled (the servers' own
//! logs and `Response::hops`).

use agentcaps_egress::{EgressError, Method, StatusCode};

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::support::{client, loopback_policy, pair};

fn ok() -> crate::support::http::Handler {
    handler(|_| Reply::ok("hello"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_resolving_to_loopback_is_refused_and_the_sink_never_hit() {
    let dns = DnsServer::start().await;
    let sink = Server::start("127.0.0.1:0", ok()).await;
    dns.set("inward.example.com", vec![Rec::ip("127.0.0.1")]);
    let client = client(&loopback_policy(&dns, &[], &[sink.port()]));
    let url = format!("http://inward.example.com:{}/", sink.port());
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.rule(), "address.special-purpose", "{err}");
    assert!(err.to_string().contains("127.0.0.0/8"), "{err}");
    assert_eq!(sink.connections(), 0);
    assert!(
        dns.queries("inward.example.com") >= 1,
        "the client resolved the name itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_answer_is_refused_even_though_one_address_is_allowed() {
    let dns = DnsServer::start().await;
    let (good, sink) = pair("127.0.0.2", ok(), "127.0.0.1", ok()).await;
    dns.set(
        "mixed.example.com",
        vec![Rec::ip("127.0.0.2"), Rec::ip("127.0.0.1")],
    );
    let client = client(&loopback_policy(&dns, &["127.0.0.2/32"], &[good.port()]));
    let url = format!("http://mixed.example.com:{}/", good.port());
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.rule(), "address.special-purpose", "{err}");
    assert_eq!(good.connections() + sink.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_answers_mixed_with_a_private_one_are_refused_without_connecting() {
    // Judged with resolve_and_check, which never connects, so no packet
    // goes to the public address.
    let dns = DnsServer::start().await;
    dns.set(
        "rebind.example.com",
        vec![
            Rec::ip("93.184.216.34"),
            Rec::ip("10.0.0.5"),
            Rec::ip("2606:2800:220:1::1"),
        ],
    );
    dns.set(
        "public.example.com",
        vec![Rec::ip("93.184.216.34"), Rec::ip("2606:2800:220:1::1")],
    );
    let client = client(&loopback_policy(&dns, &[], &[]));
    let err = client
        .resolve_and_check("http://rebind.example.com/", &Method::GET)
        .await
        .unwrap_err();
    match &err {
        EgressError::Address { address, range, .. } => {
            assert_eq!(address.to_string(), "10.0.0.5");
            assert_eq!(range, "10.0.0.0/8");
        }
        other => panic!("expected an address refusal, got {other}"),
    }
    let ok = client
        .resolve_and_check("http://public.example.com/", &Method::GET)
        .await
        .unwrap();
    let mut got: Vec<String> = ok.addresses.iter().map(ToString::to_string).collect();
    got.sort();
    assert_eq!(got, ["2606:2800:220:1::1", "93.184.216.34"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebinding_between_queries_never_reaches_the_second_answer() {
    let dns = DnsServer::start().await;
    let (good, sink) = pair("127.0.0.2", ok(), "127.0.0.1", ok()).await;
    dns.set_sequence(
        "flip.example.com",
        vec![vec![Rec::ip("127.0.0.2")], vec![Rec::ip("127.0.0.1")]],
    );
    let client = client(&loopback_policy(&dns, &["127.0.0.2/32"], &[good.port()]));
    let url = format!("http://flip.example.com:{}/", good.port());
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.remote_addr(), Some(good.addr));
    assert_eq!(
        good.seen()[0].local,
        good.addr,
        "the server saw the judged address"
    );
    // The second query answers 127.0.0.1: refused, and the sink never hit
    // (neither by a new connection nor by a second resolution).
    let err = client.get(&url).send().await.unwrap_err();
    assert_eq!(err.rule(), "address.special-purpose", "{err}");
    assert_eq!(sink.connections(), 0);
    assert_eq!(good.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cname_chain_to_a_private_address_is_refused() {
    let dns = DnsServer::start().await;
    let sink = Server::start("127.0.0.1:0", ok()).await;
    dns.set(
        "alias.example.com",
        vec![Rec::Cname("hop.example.net".into())],
    );
    dns.set(
        "hop.example.net",
        vec![Rec::Cname("inner.example.org".into())],
    );
    dns.set("inner.example.org", vec![Rec::ip("127.0.0.1")]);
    let client = client(&loopback_policy(&dns, &[], &[sink.port()]));
    let err = client
        .get(&format!("http://alias.example.com:{}/", sink.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "address.special-purpose", "{err}");
    assert_eq!(sink.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aaaa_only_name_is_judged_and_dialled_over_ipv6() {
    let dns = DnsServer::start().await;
    let server = Server::start("[::1]:0", ok()).await;
    dns.set("six.example.com", vec![Rec::ip("::1")]);
    dns.set("mapped.example.com", vec![Rec::ip("::ffff:127.0.0.1")]);
    let url = |name: &str| format!("http://{name}:{}/", server.port());

    let closed = client(&loopback_policy(&dns, &[], &[server.port()]));
    let err = closed
        .get(&url("six.example.com"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "address.not-global-unicast", "{err}");
    assert_eq!(server.connections(), 0);

    let open = client(&loopback_policy(&dns, &["::1/128"], &[server.port()]));
    let response = open.get(&url("six.example.com")).send().await.unwrap();
    assert_eq!(response.remote_addr(), Some(server.addr));
    assert_eq!(server.hits(), 1);
    // ::1 being open does not open its IPv4-mapped cousins.
    let err = open
        .get(&url("mapped.example.com"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "address.not-global-unicast", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_exist_is_a_dns_failure_not_a_refusal() {
    let dns = DnsServer::start().await;
    let client = client(&loopback_policy(&dns, &[], &[]));
    let err = client
        .get("http://nowhere.example.com/")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "dns", "{err}");
    assert!(!err.is_refusal());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_to_denied_targets_are_not_followed() {
    let dns = DnsServer::start().await;
    let sink = Server::start("127.0.0.1:0", ok()).await;
    let p = sink.port();
    dns.set("inward.example.com", vec![Rec::ip("127.0.0.1")]);
    let targets = [
        (format!("http://127.0.0.1:{p}/"), "address.special-purpose"),
        (format!("http://0x7f.1:{p}/"), "address.special-purpose"),
        (
            format!("http://[::ffff:127.0.0.1]:{p}/"),
            "address.not-global-unicast",
        ),
        (format!("http://localhost:{p}/"), "name.special-use"),
        (
            format!("http://inward.example.com:{p}/"),
            "address.special-purpose",
        ),
        (format!("http://user:pw@127.0.0.2:{p}/"), "userinfo"),
        ("http://127.0.0.2:6379/".to_owned(), "port"),
        ("file:///etc/passwd".to_owned(), "scheme"),
        ("gopher://127.0.0.2:70/".to_owned(), "scheme"),
        ("http://[::1".to_owned(), "redirect.bad-location"),
        ("http://exa mple.com/".to_owned(), "redirect.bad-location"),
    ];
    let (targets_for_handler, count) = (targets.clone(), targets.len());
    let entry = Server::start(
        &format!("127.0.0.2:{p}"),
        handler(move |seen| {
            let i: usize = seen.path.trim_start_matches('/').parse().unwrap_or(0);
            Reply::redirect(302, &targets_for_handler[i].0)
        }),
    )
    .await;
    let client = client(&loopback_policy(&dns, &["127.0.0.2/32"], &[p]));
    for (i, (target, rule)) in targets.iter().enumerate() {
        let err = client
            .get(&format!("http://127.0.0.2:{p}/{i}"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.rule(), *rule, "redirect to {target}: {err}");
    }
    assert_eq!(entry.hits(), count);
    assert_eq!(sink.connections(), 0, "no redirect reached the sink");
}

/// The port a request came in on, from its `Host` header.
fn port_of(seen: &crate::support::http::Seen) -> u16 {
    let host = seen
        .headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    host.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_chain_is_followed_hop_by_hop_up_to_the_limit() {
    let dns = DnsServer::start().await;
    let (a, b) = pair(
        "127.0.0.2",
        handler(|seen| match seen.path.as_str() {
            "/start" => Reply::redirect(301, "/second"),
            "/second" => Reply::redirect(
                302,
                &format!("http://b.example.com:{}/third", port_of(seen)),
            ),
            _ => Reply::ok("a"),
        }),
        "127.0.0.3",
        handler(|_| Reply::ok("final")),
    )
    .await;
    dns.set("b.example.com", vec![Rec::ip("127.0.0.3")]);
    let mut config = loopback_policy(&dns, &["127.0.0.2/32", "127.0.0.3/32"], &[a.port()]);
    let start = format!("http://127.0.0.2:{}/start", a.port());

    let response = client(&config).get(&start).send().await.unwrap();
    let hops: Vec<(u16, std::net::SocketAddr)> = response
        .hops()
        .iter()
        .map(|h| (h.status.as_u16(), h.address))
        .collect();
    assert_eq!(hops, [(301, a.addr), (302, a.addr), (200, b.addr)]);
    assert_eq!(
        response.url(),
        format!("http://b.example.com:{}/third", a.port())
    );
    assert_eq!(b.seen()[0].local, b.addr);
    assert_eq!(response.text().await.unwrap().text, "final");

    config.max_redirects = 1;
    let err = client(&config).get(&start).send().await.unwrap_err();
    assert_eq!(err.rule(), "redirect.too-many", "{err}");
    assert_eq!(b.hits(), 1, "the refused hop was not requested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_dropped_when_a_redirect_changes_origin() {
    let dns = DnsServer::start().await;
    let (a, b) = pair(
        "127.0.0.2",
        handler(|seen| match seen.path.as_str() {
            "/same" => Reply::redirect(302, "/landed"),
            "/cross" => Reply::redirect(302, &format!("http://127.0.0.3:{}/landed", port_of(seen))),
            _ => Reply::ok("a"),
        }),
        "127.0.0.3",
        handler(|_| Reply::ok("b")),
    )
    .await;
    let config = loopback_policy(&dns, &["127.0.0.2/32", "127.0.0.3/32"], &[a.port()]);
    let c = client(&config);
    for path in ["same", "cross"] {
        c.get(&format!("http://127.0.0.2:{}/{path}", a.port()))
            .header("Authorization", "Bearer secret")
            .header("Cookie", "session=1")
            .header("Proxy-Authorization", "Basic eA==")
            .header("X-Trace", "kept")
            .send()
            .await
            .unwrap();
    }
    let same = a.seen().into_iter().find(|s| s.path == "/landed").unwrap();
    for name in ["authorization", "cookie", "proxy-authorization", "x-trace"] {
        assert!(same.headers.contains_key(name), "same origin keeps {name}");
    }
    let cross = &b.seen()[0];
    for name in ["authorization", "cookie", "proxy-authorization"] {
        assert!(
            !cross.headers.contains_key(name),
            "{name} leaked across origins"
        );
    }
    assert_eq!(cross.headers["x-trace"], "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn see_other_turns_a_post_into_a_get_without_a_body() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| match seen.path.as_str() {
            "/form" => Reply::redirect(303, "/result"),
            _ => Reply::ok("done"),
        }),
    )
    .await;
    let mut config = loopback_policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    config.allowed_methods = vec!["GET".into(), "POST".into()];
    let response = client(&config)
        .request(
            Method::POST,
            &format!("http://127.0.0.2:{}/form", server.port()),
        )
        .header("Content-Type", "application/json")
        .body("{\"a\":1}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let seen = server.seen();
    assert_eq!(seen[0].method, Method::POST);
    assert_eq!(&seen[0].body[..], b"{\"a\":1}");
    assert_eq!(seen[1].method, Method::GET);
    assert!(seen[1].body.is_empty());
    assert!(!seen[1].headers.contains_key("content-type"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_307_that_would_replay_a_body_to_another_origin_is_not_followed() {
    let dns = DnsServer::start().await;
    let (a, b) = pair(
        "127.0.0.2",
        handler(|seen| match seen.path.as_str() {
            "/cross" => Reply::redirect(307, &format!("http://127.0.0.3:{}/upload", port_of(seen))),
            "/same" => Reply::redirect(308, "/upload"),
            _ => Reply::ok("stored"),
        }),
        "127.0.0.3",
        handler(|_| Reply::ok("stolen")),
    )
    .await;
    let mut config = loopback_policy(&dns, &["127.0.0.2/32", "127.0.0.3/32"], &[a.port()]);
    config.allowed_methods = vec!["PUT".into()];
    let c = client(&config);
    let err = c
        .request(Method::PUT, &format!("http://127.0.0.2:{}/cross", a.port()))
        .body("payload")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "redirect.body-to-other-origin", "{err}");
    assert_eq!(b.connections(), 0);
    // The same origin gets the body again, as 307/308 require.
    let response = c
        .request(Method::PUT, &format!("http://127.0.0.2:{}/same", a.port()))
        .body("payload")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let replayed = a.seen().into_iter().find(|s| s.path == "/upload").unwrap();
    assert_eq!(replayed.method, Method::PUT);
    assert_eq!(&replayed.body[..], b"payload");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_judged_for_its_method_too() {
    // A 303 turns DELETE into GET; a policy without GET refuses the hop.
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::redirect(303, "/next"))).await;
    let mut config = loopback_policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    config.allowed_methods = vec!["DELETE".into()];
    let err = client(&config)
        .request(
            Method::DELETE,
            &format!("http://127.0.0.2:{}/x", server.port()),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "method", "{err}");
    assert_eq!(server.hits(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_caller_headers_stop_the_request_before_any_connection() {
    let dns = DnsServer::start().await;
    let sink = Server::start("127.0.0.2:0", ok()).await;
    let config = loopback_policy(&dns, &["127.0.0.2/32"], &[sink.port()]);
    let c = client(&config);
    let url = format!("http://127.0.0.2:{}/", sink.port());
    let cases = [
        ("X-A", "1\r\nX-Injected: 1", "header.line-break"),
        ("X-A\r\nX-B", "1", "header.line-break"),
        ("X-A", "a\nb", "header.line-break"),
        ("X-A", "a\0b", "header.line-break"),
        ("Host", "169.254.169.254", "header.reserved"),
        ("host", "evil", "header.reserved"),
        ("Metadata-Flavor", "Google", "header.reserved"),
        ("Metadata", "true", "header.reserved"),
        ("X-aws-ec2-metadata-token", "t", "header.reserved"),
        (
            "X-aws-ec2-metadata-token-ttl-seconds",
            "21600",
            "header.reserved",
        ),
        ("X-AWS-EC2-METADATA-TOKEN-anything", "t", "header.reserved"),
        ("X-aliyun-ecs-metadata-token", "t", "header.reserved"),
        (
            "X-aliyun-ecs-metadata-token-ttl-seconds",
            "60",
            "header.reserved",
        ),
        ("X-Google-Metadata-Request", "True", "header.reserved"),
        ("X-Metadata-Token", "t", "header.reserved"),
        ("X-HTTP-Method-Override", "DELETE", "header.method-override"),
        ("X-HTTP-Method", "PUT", "header.method-override"),
        ("X-Method-Override", "post", "header.method-override"),
        (
            "x-http-method-override",
            "GET, DELETE",
            "header.method-override",
        ),
        (
            "X-HTTP-Method-Override",
            "CONNECT",
            "header.method-override",
        ),
        ("X-HTTP-Method-Override", "", "header.method-override"),
        ("Transfer-Encoding", "chunked", "header.reserved"),
        ("Content-Length", "0", "header.reserved"),
        ("Bad Name", "x", "header.invalid"),
    ];
    for (name, value, rule) in cases {
        let err = c.get(&url).header(name, value).send().await.unwrap_err();
        assert_eq!(err.rule(), rule, "{name:?}: {value:?}: {err}");
    }
    assert_eq!(sink.connections(), 0);
    // An override naming an allowed method is an ordinary header.
    c.get(&url)
        .header("X-HTTP-Method-Override", "head")
        .send()
        .await
        .unwrap();
    assert_eq!(sink.seen()[0].headers["x-http-method-override"], "head");
    // And the request line uses the judged URL's host, whatever the caller wanted.
    c.get(&url).send().await.unwrap();
    assert_eq!(
        sink.seen()[1].headers["host"],
        format!("127.0.0.2:{}", sink.port())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_reused_per_address_and_host() {
    let dns = DnsServer::start().await;
    let (two, three) = pair("127.0.0.2", ok(), "127.0.0.3", ok()).await;
    dns.set("one.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("other.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set_sequence(
        "moving.example.com",
        vec![vec![Rec::ip("127.0.0.2")], vec![Rec::ip("127.0.0.3")]],
    );
    let config = loopback_policy(&dns, &["127.0.0.2/32", "127.0.0.3/32"], &[two.port()]);
    let c = client(&config);
    let url = |name: &str| format!("http://{name}:{}/", two.port());

    for i in 0..3 {
        let r = c.get(&url("one.example.com")).send().await.unwrap();
        assert_eq!(r.hops()[0].reused, i > 0, "request {i}");
        r.bytes().await.unwrap();
    }
    assert_eq!(two.connections(), 1, "keep-alive reused one connection");

    // Same address, another host: a connection of its own.
    c.get(&url("other.example.com"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(two.connections(), 2);

    // Same host, another judged address: never the pooled connection.
    let first = c.get(&url("moving.example.com")).send().await.unwrap();
    assert_eq!(first.remote_addr(), Some(two.addr));
    first.bytes().await.unwrap();
    let second = c.get(&url("moving.example.com")).send().await.unwrap();
    assert_eq!(second.remote_addr(), Some(three.addr));
    assert!(!second.hops()[0].reused);
    assert_eq!(three.hits(), 1);
}
