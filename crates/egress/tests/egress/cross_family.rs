//! Real fetches across address families: a server on a denied IPv4
//! loopback address is never contacted through its IPv4-mapped,
//! IPv4-compatible or NAT64 spelling — literal or DNS answer, NAT64
//! decoding on or off — while an IPv6 range is allowed. A twin server on
//! an allowed address, same port, proves the mapped route itself works on
//! this host (so "no connection" means "refused", not "unroutable").

use agentcaps_egress::EgressPolicyConfig;

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::support::{client, loopback_policy, pair};

/// The IPv6 spellings of 127.0.0.2 a URL or an AAAA answer can use.
const SPELLINGS: &[&str] = &[
    "::ffff:127.0.0.2",
    "::ffff:7f00:2",
    "::127.0.0.2",
    "64:ff9b::7f00:2",
    "64:ff9b::127.0.0.2",
];

fn policies(dns: &DnsServer, port: u16) -> Vec<(&'static str, EgressPolicyConfig)> {
    let mut out = Vec::new();
    for nat64 in [false, true] {
        // 127.0.0.2 denied by the default ranges; an IPv6 range allowed.
        let mut by_default = loopback_policy(dns, &["::/0", "127.0.0.1/32"], &[port]);
        by_default.nat64 = nat64;
        // 127.0.0.2 denied by denied_cidrs inside an allowed 127/8.
        let mut by_list = loopback_policy(dns, &["::/0", "127.0.0.0/8"], &[port]);
        by_list.denied_cidrs = vec!["127.0.0.2/32".into()];
        by_list.nat64 = nat64;
        let names = if nat64 {
            ["default ranges, nat64 on", "denied_cidrs, nat64 on"]
        } else {
            ["default ranges, nat64 off", "denied_cidrs, nat64 off"]
        };
        out.push((names[0], by_default));
        out.push((names[1], by_list));
    }
    out
}

/// A server on the allowed 127.0.0.1 and its twin on the denied
/// 127.0.0.2, same port.
async fn twins() -> (Server, Server) {
    pair(
        "127.0.0.1",
        handler(|_| Reply::ok("allowed")),
        "127.0.0.2",
        handler(|_| Reply::ok("DENIED SERVER")),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_ipv4_server_is_never_reached_through_an_ipv6_spelling() {
    let dns = DnsServer::start().await;
    let (allowed, denied) = twins().await;
    let port = allowed.port();
    for (i, spelling) in SPELLINGS.iter().enumerate() {
        dns.set(&format!("s{i}.example.com"), vec![Rec::ip(spelling)]);
    }
    dns.set("control.example.com", vec![Rec::ip("::ffff:127.0.0.1")]);
    let mut attempts = 0;
    for (what, config) in policies(&dns, port) {
        let c = client(&config);
        // Control: the mapped spelling of the allowed twin connects, as a
        // literal and as an AAAA answer.
        for url in [
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("http://control.example.com:{port}/"),
        ] {
            let body = c.get(&url).send().await.unwrap().text().await.unwrap();
            assert_eq!(body.text, "allowed", "{what}: {url}");
        }
        for (i, spelling) in SPELLINGS.iter().enumerate() {
            for url in [
                format!("http://[{spelling}]:{port}/"),
                format!("http://s{i}.example.com:{port}/"),
            ] {
                attempts += 1;
                let err = c.get(&url).send().await.expect_err(&url);
                assert!(err.is_refusal(), "{what}: {url}: {err}");
                assert!(err.rule().starts_with("address."), "{what}: {url}: {err}");
                // The check-only path gives the same decision.
                let checked = c
                    .resolve_and_check(&url, &agentcaps_egress::Method::GET)
                    .await
                    .expect_err(&url);
                assert_eq!(checked.rule(), err.rule(), "{what}: {url}");
            }
        }
    }
    assert_eq!(attempts, 4 * SPELLINGS.len() * 2);
    assert_eq!(
        denied.connections(),
        0,
        "the denied server was contacted through an IPv6 spelling"
    );
    assert_eq!(allowed.hits(), 8, "every control request arrived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_answer_with_one_mapped_denied_address_refuses_the_name() {
    let dns = DnsServer::start().await;
    let (allowed, denied) = twins().await;
    let port = allowed.port();
    dns.set(
        "mixed.example.com",
        vec![Rec::ip("127.0.0.1"), Rec::ip("::ffff:127.0.0.2")],
    );
    let mut config = loopback_policy(&dns, &["::/0", "127.0.0.0/8"], &[port]);
    config.denied_cidrs = vec!["127.0.0.2/32".into()];
    let err = client(&config)
        .get(&format!("http://mixed.example.com:{port}/"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.rule(), "address.denied-cidr", "{err}");
    assert_eq!(allowed.connections() + denied.connections(), 0);
}
