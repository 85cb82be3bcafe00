//! TLS: the URL's host is the SNI and the name verified, never the pinned
//! address; HTTP/2 by ALPN; https→http redirects refused.

use agentcaps_egress::{Client, StatusCode, Version, danger};

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::support::tls::TestCa;
use crate::support::{build, loopback_policy};

async fn tls_setup(names: &[&str]) -> (DnsServer, TestCa, Server) {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let server = Server::start_tls(
        "127.0.0.2:0",
        handler(|seen| match seen.path.as_str() {
            "/down" => Reply::redirect(302, "http://127.0.0.2:80/"),
            _ => Reply::ok("secure"),
        }),
        ca.leaf(names),
    )
    .await;
    dns.set("secure.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("other.example.com", vec![Rec::ip("127.0.0.2")]);
    (dns, ca, server)
}

fn tls_client(dns: &DnsServer, ca: Option<&TestCa>, port: u16) -> Client {
    let policy = build(&loopback_policy(dns, &["127.0.0.2/32"], &[port, 80]));
    let mut builder = Client::builder(policy);
    if let Some(ca) = ca {
        builder = danger::add_root_certificate_pem(builder, ca.pem().as_bytes()).unwrap();
    }
    builder.build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_url_host_is_the_sni_and_http2_is_negotiated() {
    let (dns, ca, server) = tls_setup(&["secure.example.com"]).await;
    let c = tls_client(&dns, Some(&ca), server.port());
    let url = format!("https://secure.example.com:{}/", server.port());
    let response = c.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.version(), Version::HTTP_2);
    assert_eq!(response.remote_addr(), Some(server.addr));
    assert_eq!(response.text().await.unwrap().text, "secure");
    let seen = server.seen();
    assert_eq!(seen[0].sni.as_deref(), Some("secure.example.com"));
    assert_eq!(seen[0].version, http::Version::HTTP_2);
    // A second request shares the HTTP/2 connection.
    let again = c.get(&url).send().await.unwrap();
    assert!(again.hops()[0].reused);
    assert_eq!(server.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_certificate_is_checked_against_the_host_not_the_address() {
    let (dns, ca, server) = tls_setup(&["secure.example.com"]).await;
    let c = tls_client(&dns, Some(&ca), server.port());
    // Same server, same address, other name: the certificate does not
    // cover it.
    let err = c
        .get(&format!("https://other.example.com:{}/", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "tls", "{err}");
    // The pinned address is never what is verified: an IP-literal URL
    // needs a certificate for the IP.
    let err = c
        .get(&format!("https://127.0.0.2:{}/", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "tls", "{err}");
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_ca_is_refused_without_the_test_root() {
    let (dns, _ca, server) = tls_setup(&["secure.example.com"]).await;
    let c = tls_client(&dns, None, server.port());
    let err = c
        .get(&format!("https://secure.example.com:{}/", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "tls", "{err}");
    assert!(!err.is_refusal());
    assert_eq!(server.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_to_http_redirect_is_refused() {
    let (dns, ca, server) = tls_setup(&["secure.example.com"]).await;
    let c = tls_client(&dns, Some(&ca), server.port());
    let err = c
        .get(&format!(
            "https://secure.example.com:{}/down",
            server.port()
        ))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "redirect.downgrade", "{err}");
}

#[test]
fn a_pem_without_a_certificate_is_a_config_error() {
    let builder = Client::builder(agentcaps_egress::EgressPolicy::default());
    let err = danger::add_root_certificate_pem(builder, b"not pem").unwrap_err();
    assert_eq!(err.rule(), "config");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_ca_is_listed_as_a_loosening() {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let plain = tls_client(&dns, None, 443);
    let trusting = tls_client(&dns, Some(&ca), 443);
    let mut expected = plain.policy().loosenings().to_vec();
    expected.push("root_certificate: 1 extra CA certificate(s) trusted for every name".to_owned());
    assert_eq!(trusting.policy().loosenings(), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_https_hop_is_verified_for_its_own_host() {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let b = Server::start_tls(
        "127.0.0.3:0",
        handler(|_| Reply::ok("b")),
        ca.leaf(&["b.example.com"]),
    )
    .await;
    let b_port = b.port();
    let a = Server::start_tls(
        "127.0.0.2:0",
        handler(move |_| Reply::redirect(302, &format!("https://b.example.com:{b_port}/"))),
        ca.leaf(&["a.example.com"]),
    )
    .await;
    dns.set("a.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("b.example.com", vec![Rec::ip("127.0.0.3")]);
    let policy = build(&loopback_policy(
        &dns,
        &["127.0.0.2/32", "127.0.0.3/32"],
        &[a.port(), b_port],
    ));
    let c = danger::add_root_certificate_pem(Client::builder(policy), ca.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let response = c
        .get(&format!("https://a.example.com:{}/", a.port()))
        .header("Authorization", "Bearer a-only")
        .send()
        .await
        .unwrap();
    assert_eq!(response.text().await.unwrap().text, "b");
    assert_eq!(a.seen()[0].sni.as_deref(), Some("a.example.com"));
    let seen_b = &b.seen()[0];
    assert_eq!(seen_b.sni.as_deref(), Some("b.example.com"));
    assert_eq!(seen_b.local, b.addr);
    assert!(!seen_b.headers.contains_key("authorization"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_response_headers_over_http2_are_refused() {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let server = Server::start_tls(
        "127.0.0.2:0",
        handler(|_| Reply {
            status: 200,
            headers: (0..40)
                .map(|i| (format!("x-big-{i}"), "v".repeat(1000)))
                .collect(),
            body: Vec::new(),
        }),
        ca.leaf(&["secure.example.com"]),
    )
    .await;
    dns.set("secure.example.com", vec![Rec::ip("127.0.0.2")]);
    let mut config = loopback_policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    config.max_header_bytes = 16 * 1024;
    let c = danger::add_root_certificate_pem(Client::builder(build(&config)), ca.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let err = c
        .get(&format!("https://secure.example.com:{}/", server.port()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "size.headers", "{err:?}");
}
