//! Property test (the same invariants as the `egress_url` fuzz target):
//! URL-ish strings built from the pieces parsers disagree on never get an
//! inward address allowed.

use agentcaps_egress::{EgressPolicy, Method};
use proptest::prelude::*;

use crate::oracle::violations;

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0x7f".to_owned()),
        Just("0177".to_owned()),
        Just("127".to_owned()),
        Just("169.254".to_owned()),
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("255".to_owned()),
        Just("4294967295".to_owned()),
        Just("2130706433".to_owned()),
        Just(".".to_owned()),
        Just("。".to_owned()),
        Just("．".to_owned()),
        Just("１".to_owned()),
        Just("⑦".to_owned()),
        Just("%2e".to_owned()),
        Just("%31".to_owned()),
        Just("@".to_owned()),
        Just(":".to_owned()),
        Just("\\".to_owned()),
        Just("/".to_owned()),
        Just("#".to_owned()),
        Just("?".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("::ffff:".to_owned()),
        Just("::".to_owned()),
        Just("64:ff9b::".to_owned()),
        Just("fe80::1".to_owned()),
        Just("%25".to_owned()),
        Just("localhost".to_owned()),
        Just("LOCALHOST".to_owned()),
        Just("local".to_owned()),
        Just("internal".to_owned()),
        Just("example.com".to_owned()),
        Just("xn--".to_owned()),
        Just("\t".to_owned()),
        Just("\n".to_owned()),
        Just(" ".to_owned()),
        "[a-z0-9]{1,4}",
    ]
}

fn url() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("http://"),
            Just("https://"),
            Just("http:"),
            Just("HTTP:/"),
            Just("http:\\\\")
        ],
        prop::collection::vec(piece(), 1..10),
        prop_oneof![
            Just(""),
            Just("/"),
            Just(":80/"),
            Just(":443"),
            Just("/x?y#z")
        ],
    )
        .prop_map(|(scheme, pieces, tail)| format!("{scheme}{}{tail}", pieces.concat()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn an_allowed_url_never_denotes_a_denied_address(text in url()) {
        let policy = EgressPolicy::default();
        if let Ok(verdict) = policy.check_url(&text, &Method::GET) {
            let again = policy.check_url(verdict.url(), &Method::GET).map_err(|e| e.to_string());
            let problem = violations(&text, &verdict, again);
            prop_assert!(problem.is_none(), "{}", problem.unwrap_or_default());
        }
    }
}

#[test]
fn the_oracle_itself_denies_what_the_spec_lists() {
    use crate::oracle::denied;
    for ip in [
        "127.0.0.1",
        "169.254.169.254",
        "::1",
        "::ffff:8.8.8.8",
        "2001:db8::1",
        "3fff::1",
        "168.63.129.16",
    ] {
        assert!(denied(ip.parse().unwrap()), "{ip}");
    }
    for ip in ["8.8.8.8", "2606:4700::1111", "3fff:1000::1", "2001:200::1"] {
        assert!(!denied(ip.parse().unwrap()), "{ip}");
    }
}
