//! Refusals through the proxy, with `curl`: a name resolving to a denied
//! address, a denied port, `CONNECT` to an IP literal in a denied range,
//! a redirect to a private address (the client follows; the proxy judges
//! the next request), a refused method, a cloud-metadata header. Each is
//! answered `403` with the rule before anything is dialled, logged, and
//! decided as `resolve_and_check` decides the same URL.

use agentcaps_egress::proxy::{ProxyDecision, ProxyKind};
use agentcaps_egress::{Client, EgressPolicyConfig, Method};

use crate::clients::{Curl, curl};
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::support::pair;
use crate::{assert_refused, entry_for, policy, proxy, url_of};

/// An allowed server on 127.0.0.2 and a sink on 127.0.0.3 (denied by
/// default), same port; `allowed.example.com` and `inward.example.com`
/// answer them.
async fn setup(dns: &DnsServer) -> (Server, Server) {
    let (allowed, sink) = pair(
        "127.0.0.2",
        handler(|seen| {
            if seen.path == "/go" {
                let port = seen.local.port();
                Reply::redirect(302, &format!("http://127.0.0.3:{port}/private"))
            } else {
                Reply::ok("allowed")
            }
        }),
        "127.0.0.3",
        handler(|_| Reply::ok("PRIVATE")),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    dns.set("inward.example.com", vec![Rec::ip("127.0.0.3")]);
    (allowed, sink)
}

fn assert_403(run: &Curl, rule: &str) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("403 ") && run.stdout.contains(&format!("[{rule}]")),
        "{}",
        run.stdout
    );
}

/// The decision the library gives the same URL.
async fn library_rule(config: &EgressPolicyConfig, url: &str, method: Method) -> String {
    let client = Client::new(config.build().unwrap()).unwrap();
    let err = client.resolve_and_check(url, &method).await.unwrap_err();
    err.rule().to_owned()
}

/// `curl` with the status code put first (`403 agentcaps proxy: …`).
async fn status_and_body(proxy_url: &str, args: &[&str]) -> Curl {
    let mut run = curl(proxy_url, &[&["-w", "\n%{http_code}"], args].concat()).await;
    if let Some((body, status)) = run.stdout.rsplit_once('\n') {
        run.stdout = format!("{status} {body}");
    }
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_name_resolving_to_a_denied_address_is_refused_plain_and_tunnelled() {
    let dns = DnsServer::start().await;
    let (allowed, sink) = setup(&dns).await;
    let p = allowed.port();
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let plain = proxy(&config).await;
    let url = format!("http://inward.example.com:{p}/");
    let run = status_and_body(&url_of(&plain), &[&url]).await;
    assert_403(&run, "address.special-purpose");
    assert!(run.stdout.contains("127.0.0.3"), "{}", run.stdout);
    assert_refused(
        &plain,
        "inward.example.com",
        ProxyKind::Http,
        "address.special-purpose",
    );
    assert_eq!(
        library_rule(&config, &url, Method::GET).await,
        "address.special-purpose"
    );

    let tunnel = proxy(&config).await;
    let run = curl(
        &url_of(&tunnel),
        &["-k", &format!("https://inward.example.com:{p}/")],
    )
    .await;
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("403"), "{}", run.stderr);
    assert_refused(
        &tunnel,
        "inward.example.com",
        ProxyKind::Connect,
        "address.special-purpose",
    );
    assert_eq!(sink.connections(), 0, "the denied server was contacted");
    assert_eq!(allowed.connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_denied_port_is_refused_plain_and_tunnelled() {
    let dns = DnsServer::start().await;
    let (allowed, _sink) = setup(&dns).await;
    let config = policy(&dns, &["127.0.0.2/32"], &[allowed.port()]);
    let plain = proxy(&config).await;
    let run = status_and_body(&url_of(&plain), &["http://allowed.example.com:6379/"]).await;
    assert_403(&run, "port");
    assert_refused(&plain, "allowed.example.com", ProxyKind::Http, "port");

    let tunnel = proxy(&config).await;
    let run = curl(&url_of(&tunnel), &["-k", "https://allowed.example.com:22/"]).await;
    assert!(
        run.code != 0 && run.stderr.contains("403"),
        "{}",
        run.stderr
    );
    assert_refused(&tunnel, "allowed.example.com", ProxyKind::Connect, "port");
    assert_eq!(
        library_rule(&config, "https://allowed.example.com:22/", Method::GET).await,
        "port"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn connect_to_an_ip_literal_in_a_denied_range_is_refused_in_every_spelling() {
    let dns = DnsServer::start().await;
    let (allowed, sink) = setup(&dns).await;
    let p = allowed.port();
    let mut config = policy(&dns, &["127.0.0.0/8", "::/0"], &[p]);
    config.denied_cidrs = vec!["127.0.0.3/32".into()];
    for (literal, host) in [
        ("127.0.0.3", "127.0.0.3"),
        ("[::ffff:127.0.0.3]", "::ffff:127.0.0.3"),
        ("2130706435", "127.0.0.3"),
    ] {
        let proxy = proxy(&config).await;
        let run = curl(&url_of(&proxy), &["-k", &format!("https://{literal}:{p}/")]).await;
        assert!(
            run.code != 0 && run.stderr.contains("403"),
            "{literal}: {}",
            run.stderr
        );
        assert_refused(&proxy, host, ProxyKind::Connect, "address.denied-cidr");
    }
    assert_eq!(sink.connections(), 0, "the denied server was contacted");
    // The allowed twin is reachable through the same proxy settings.
    let proxy = proxy(&config).await;
    let run = curl(&url_of(&proxy), &[&format!("http://127.0.0.2:{p}/")]).await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "allowed"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_redirect_to_a_private_address_is_refused_when_the_client_follows_it() {
    let dns = DnsServer::start().await;
    let (allowed, sink) = setup(&dns).await;
    let p = allowed.port();
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[p])).await;
    let run = status_and_body(
        &url_of(&proxy),
        &["-L", &format!("http://allowed.example.com:{p}/go")],
    )
    .await;
    assert_403(&run, "address.special-purpose");
    let first = entry_for(&proxy, "allowed.example.com");
    assert_eq!(first.decision, ProxyDecision::Allow);
    assert_refused(
        &proxy,
        "127.0.0.3",
        ProxyKind::Http,
        "address.special-purpose",
    );
    assert_eq!(allowed.hits(), 1);
    assert_eq!(sink.connections(), 0, "the redirect target was contacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_refused_method_or_a_metadata_header_is_refused_before_any_dial() {
    let dns = DnsServer::start().await;
    let (allowed, _sink) = setup(&dns).await;
    let p = allowed.port();
    let config = policy(&dns, &["127.0.0.2/32"], &[p]);
    let url = format!("http://allowed.example.com:{p}/");
    let cases: [(&[&str], &str); 4] = [
        (&["-d", "x=1"], "method"),
        (&["-H", "Metadata-Flavor: Google"], "header.reserved"),
        (
            &["-H", "X-aws-ec2-metadata-token-ttl-seconds: 60"],
            "header.reserved",
        ),
        (
            &["-H", "X-HTTP-Method-Override: DELETE"],
            "header.method-override",
        ),
    ];
    for (args, rule) in cases {
        let proxy = proxy(&config).await;
        let run = status_and_body(&url_of(&proxy), &[args, &[url.as_str()]].concat()).await;
        assert_403(&run, rule);
        assert_refused(&proxy, "allowed.example.com", ProxyKind::Http, rule);
    }
    assert_eq!(allowed.connections(), 0);
}
