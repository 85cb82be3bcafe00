//! Policy knobs: allowed and denied CIDRs, NAT64, defaults off, the host's
//! own addresses, configuration errors, and the `danger` module.

use agentcaps_egress::{EgressPolicy, EgressPolicyConfig, Method, danger};

fn judge(config: &EgressPolicyConfig, url: &str) -> Result<(), String> {
    config
        .build()
        .unwrap()
        .check_url(url, &Method::GET)
        .map(|_| ())
        .map_err(|e| e.rule().to_owned())
}

#[test]
fn denied_cidrs_win_over_allowed_cidrs() {
    let config = EgressPolicyConfig {
        allowed_cidrs: vec!["127.0.0.0/8".into()],
        denied_cidrs: vec!["127.0.0.5".into()],
        ..EgressPolicyConfig::default()
    };
    assert_eq!(judge(&config, "http://127.0.0.4/"), Ok(()));
    assert_eq!(
        judge(&config, "http://127.0.0.5/"),
        Err("address.denied-cidr".into())
    );
    // Allowing 127/8 does not allow the other loopback spellings' ranges.
    assert_eq!(
        judge(&config, "http://[::1]/"),
        Err("address.not-global-unicast".into())
    );
    assert_eq!(
        judge(&config, "http://10.0.0.1/"),
        Err("address.special-purpose".into())
    );
}

#[test]
fn denied_cidrs_extend_the_defaults_for_public_ranges() {
    let config = EgressPolicyConfig {
        denied_cidrs: vec!["8.8.8.0/24".into(), "2606:4700::/32".into()],
        ..EgressPolicyConfig::default()
    };
    assert_eq!(
        judge(&config, "http://8.8.8.8/"),
        Err("address.denied-cidr".into())
    );
    assert_eq!(
        judge(&config, "http://[2606:4700::1]/"),
        Err("address.denied-cidr".into())
    );
    assert_eq!(judge(&config, "http://8.8.4.4/"), Ok(()));
}

#[test]
fn nat64_decoding_judges_the_embedded_ipv4_address() {
    let off = EgressPolicyConfig::default();
    let on = EgressPolicyConfig {
        nat64: true,
        ..EgressPolicyConfig::default()
    };
    assert_eq!(
        judge(&off, "http://[64:ff9b::808:808]/"),
        Err("address.not-global-unicast".into())
    );
    assert_eq!(judge(&on, "http://[64:ff9b::808:808]/"), Ok(()));
    for inward in [
        "[64:ff9b::7f00:1]",
        "[64:ff9b::a9fe:a9fe]",
        "[64:ff9b::a00:1]",
    ] {
        assert_eq!(
            judge(&on, &format!("http://{inward}/")),
            Err("address.special-purpose".into()),
            "{inward}"
        );
    }
    // Only the well-known /96: the local-use prefix stays denied.
    assert_eq!(
        judge(&on, "http://[64:ff9b:1::808:808]/"),
        Err("address.not-global-unicast".into())
    );
}

#[test]
fn defaults_off_keeps_only_the_policys_own_lists_and_says_so() {
    let config = EgressPolicyConfig {
        defaults: false,
        deny_own_addresses: false,
        denied_cidrs: vec!["169.254.0.0/16".into()],
        ..EgressPolicyConfig::default()
    };
    assert_eq!(judge(&config, "http://10.0.0.1/"), Ok(()));
    assert_eq!(judge(&config, "http://intranet.local/"), Ok(()));
    assert_eq!(
        judge(&config, "http://169.254.169.254/"),
        Err("address.denied-cidr".into())
    );
    // Scheme, userinfo and port rules are not defaults: they stay.
    assert_eq!(judge(&config, "ftp://10.0.0.1/"), Err("scheme".into()));
    assert_eq!(judge(&config, "http://u@10.0.0.1/"), Err("userinfo".into()));
    let policy = config.build().unwrap();
    assert!(!policy.defaults_enabled());
    assert!(
        policy
            .loosenings()
            .iter()
            .any(|l| l.contains("defaults = false"))
    );
    assert!(EgressPolicy::default().loosenings().is_empty());
}

#[test]
fn the_hosts_own_addresses_are_denied() {
    // 127.0.0.1 is one of this host's own addresses on Linux; with the
    // default ranges off, only the own-address rule can refuse it.
    let config = EgressPolicyConfig {
        defaults: false,
        ..EgressPolicyConfig::default()
    };
    assert_eq!(
        judge(&config, "http://127.0.0.1/"),
        Err("address.own-address".into())
    );
    assert_eq!(
        judge(&config, "http://[::1]/"),
        Err("address.own-address".into())
    );
    let config = EgressPolicyConfig {
        defaults: false,
        deny_own_addresses: false,
        ..EgressPolicyConfig::default()
    };
    assert_eq!(judge(&config, "http://127.0.0.1/"), Ok(()));
}

#[test]
fn allowed_ports_replace_the_default_ports() {
    let config = EgressPolicyConfig {
        allowed_ports: vec![8443],
        ..EgressPolicyConfig::default()
    };
    assert_eq!(judge(&config, "https://example.com:8443/"), Ok(()));
    assert_eq!(judge(&config, "https://example.com/"), Err("port".into()));
}

#[test]
fn bad_configuration_is_refused_with_the_field_named() {
    let cases: Vec<(EgressPolicyConfig, &str)> = vec![
        (
            EgressPolicyConfig {
                allowed_cidrs: vec!["10.0.0.0/33".into()],
                ..Default::default()
            },
            "allowed_cidrs",
        ),
        (
            EgressPolicyConfig {
                denied_cidrs: vec!["nope".into()],
                ..Default::default()
            },
            "denied_cidrs",
        ),
        (
            EgressPolicyConfig {
                allowed_methods: vec!["CONNECT".into()],
                ..Default::default()
            },
            "allowed_methods",
        ),
        (
            EgressPolicyConfig {
                allowed_methods: vec!["G E T".into()],
                ..Default::default()
            },
            "allowed_methods",
        ),
        (
            EgressPolicyConfig {
                allowed_ports: vec![0],
                ..Default::default()
            },
            "allowed_ports",
        ),
        (
            EgressPolicyConfig {
                timeout_ms: 0,
                ..Default::default()
            },
            "timeout_ms",
        ),
        (
            EgressPolicyConfig {
                dns_servers: vec!["dns.google".into()],
                ..Default::default()
            },
            "dns_servers",
        ),
        (
            EgressPolicyConfig {
                allowed_domains: vec!["a b.com".into()],
                ..Default::default()
            },
            "allowed_domains",
        ),
        (
            EgressPolicyConfig {
                blocked_domains: vec!["".into()],
                ..Default::default()
            },
            "blocked_domains",
        ),
    ];
    for (config, field) in cases {
        match config.build() {
            Err(agentcaps_egress::EgressError::Config { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
}

#[test]
fn the_policy_file_section_deserializes_with_defaults() {
    let config: EgressPolicyConfig = toml::from_str(
        r#"
        allowed_domains = ["docs.rs", "*.github.com"]
        allowed_methods = ["GET", "HEAD"]
        allowed_cidrs = ["127.0.0.0/8"]
        dns_servers = ["127.0.0.1:5353"]
        max_redirects = 2
        "#,
    )
    .unwrap();
    assert_eq!(config.max_redirects, 2);
    assert_eq!(config.timeout_ms, EgressPolicyConfig::default().timeout_ms);
    assert!(config.defaults);
    let policy = config.build().unwrap();
    assert_eq!(policy.max_redirects(), 2);
    assert!(
        policy
            .check_url("http://127.0.0.1/", &Method::HEAD)
            .is_err(),
        "not on the allow list"
    );
    assert!(
        policy
            .check_url("https://docs.rs/", &Method::OPTIONS)
            .is_err(),
        "OPTIONS not listed"
    );
}

#[test]
fn danger_loosening_is_explicit_and_listed() {
    let mut policy = EgressPolicy::default();
    assert!(
        policy
            .check_url("http://127.0.0.1:8080/", &Method::GET)
            .is_err()
    );
    danger::allow_cidr(&mut policy, "127.0.0.1/32").unwrap();
    danger::allow_port(&mut policy, 8080);
    assert!(
        policy
            .check_url("http://127.0.0.1:8080/", &Method::GET)
            .is_ok()
    );
    assert!(
        policy
            .check_url("http://127.0.0.2:8080/", &Method::GET)
            .is_err()
    );
    assert!(
        policy
            .check_url("https://example.com/", &Method::GET)
            .is_ok(),
        "443 kept"
    );
    assert_eq!(policy.loosenings(), ["allowed_cidrs opens 127.0.0.1/32"]);
    assert!(danger::allow_cidr(&mut policy, "everything").is_err());
    danger::without_defaults(&mut policy);
    assert!(policy.check_url("http://10.1.1.1/", &Method::GET).is_ok());
}
