//! Refusal messages are an interface to models: pinned with insta, short,
//! and each names what was refused, the rule and what is allowed.

use agentcaps_egress::{
    CredentialRule, EgressError, EgressPolicy, EgressPolicyConfig, HeaderRule, Method, Phase,
    RedirectRule, parse_method,
};

fn lexical(policy: &EgressPolicy, url: &str, method: &str) -> EgressError {
    policy
        .check_url(url, &parse_method(method).unwrap())
        .expect_err(url)
}

fn all_refusals() -> Vec<EgressError> {
    let default = EgressPolicy::default();
    let listed = EgressPolicyConfig {
        allowed_domains: vec!["docs.rs".into(), "*.github.com".into()],
        blocked_domains: vec!["gist.github.com".into()],
        denied_cidrs: vec!["8.8.8.0/24".into()],
        ..EgressPolicyConfig::default()
    }
    .build()
    .unwrap();
    let open = EgressPolicyConfig {
        denied_cidrs: vec!["8.8.8.0/24".into()],
        ..EgressPolicyConfig::default()
    }
    .build()
    .unwrap();
    vec![
        lexical(&default, "not a url", "GET"),
        lexical(
            &default,
            &format!("http://example.com/{}", "a".repeat(9000)),
            "GET",
        ),
        lexical(&default, "ftp://example.com/", "GET"),
        lexical(&default, "http://user:pw@example.com/", "GET"),
        lexical(&default, "http://[fe80::1%25eth0]/", "GET"),
        lexical(&default, "http://metadata.google.internal/", "GET"),
        lexical(&default, "http://intranet/", "GET"),
        lexical(&default, "http://a..example.com/", "GET"),
        lexical(&listed, "http://example.com/", "GET"),
        lexical(&listed, "http://x.gist.github.com/", "GET"),
        lexical(&default, "http://169.254.169.254/", "GET"),
        lexical(&default, "http://[::ffff:127.0.0.1]/", "GET"),
        lexical(&open, "http://8.8.8.8/", "GET"),
        lexical(&default, "http://example.com:6379/", "GET"),
        lexical(&default, "http://example.com/", "POST"),
        EgressError::Address {
            host: "example.com".into(),
            address: "203.0.113.7".parse().unwrap(),
            range: "203.0.113.7/32".into(),
            label: "this host's own address".into(),
            rule: agentcaps_egress::AddressRule::OwnAddress,
        },
        EgressError::Redirect {
            from: "https://example.com/a".into(),
            to: "https://example.com/b".into(),
            rule: RedirectRule::TooMany(5),
        },
        EgressError::Redirect {
            from: "https://example.com/".into(),
            to: "http://example.com/".into(),
            rule: RedirectRule::Downgrade,
        },
        EgressError::Redirect {
            from: "https://example.com/upload".into(),
            to: "https://other.example.net/upload".into(),
            rule: RedirectRule::BodyToOtherOrigin,
        },
        EgressError::Header {
            name: "X-A".into(),
            rule: HeaderRule::LineBreak,
        },
        EgressError::Header {
            name: "Metadata-Flavor".into(),
            rule: HeaderRule::Reserved,
        },
        EgressError::Header {
            name: "X-HTTP-Method-Override".into(),
            rule: HeaderRule::MethodOverride,
        },
        lexical(
            &default,
            &format!("http://{}.example.com/", "a".repeat(64)),
            "GET",
        ),
        lexical(&open, "http://[::ffff:8.8.8.8]/", "GET"),
        EgressError::Timeout {
            url: "https://example.com/v1/stream".into(),
            phase: Phase::Idle,
            limit_ms: 20000,
        },
        EgressError::ResponseHeadersTooLarge {
            url: "https://example.com/".into(),
            max: 65536,
        },
        EgressError::RequestTooLarge { len: 20, max: 10 },
        EgressError::RequestHeadTimeout { limit_ms: 30000 },
        EgressError::Timeout {
            url: "https://example.com/".into(),
            phase: Phase::Total,
            limit_ms: 30000,
        },
        EgressError::Timeout {
            url: "https://example.com/".into(),
            phase: Phase::Dns,
            limit_ms: 5000,
        },
        credential(CredentialRule::Host("github.com, api.github.com".into())),
        credential(CredentialRule::Method("DELETE".into())),
        credential(CredentialRule::Path("/repos/other/x".into())),
        credential(CredentialRule::Cleartext),
        EgressError::Credential {
            name: String::new(),
            host: "api.github.com".into(),
            rule: CredentialRule::HostMismatch("other.example".into()),
        },
    ]
}

fn credential(rule: CredentialRule) -> EgressError {
    EgressError::Credential {
        name: "github".into(),
        host: "api.github.com".into(),
        rule,
    }
}

#[test]
fn refusal_messages_are_pinned() {
    let text: Vec<String> = all_refusals()
        .iter()
        .map(|e| format!("[{}] {e}", e.rule()))
        .collect();
    insta::assert_snapshot!("refusal_messages", text.join("\n"));
}

#[test]
fn every_refusal_is_short_and_names_its_rule_input_and_alternative() {
    for e in all_refusals() {
        let text = e.to_string();
        assert!(e.is_refusal(), "{text}");
        assert!(text.len() <= 300, "{} chars: {text}", text.len());
        assert!(
            text.starts_with("refused") || text.starts_with("stopped"),
            "{text}"
        );
        assert!(text.contains(';'), "no 'what instead' part: {text}");
    }
}

#[test]
fn an_address_refusal_carries_the_address_and_its_range() {
    match lexical(
        &EgressPolicy::default(),
        "http://0251.0376.0251.0376/",
        "GET",
    ) {
        EgressError::Address {
            address,
            range,
            label,
            ..
        } => {
            assert_eq!(address.to_string(), "169.254.169.254");
            assert_eq!(range, "169.254.0.0/16");
            assert_eq!(label, "link-local");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn failures_are_not_refusals() {
    let e = EgressError::Dns {
        host: "x.example".into(),
        message: "no record".into(),
    };
    assert!(!e.is_refusal());
    assert_eq!(e.rule(), "dns");
    let _ = Method::GET;
}
