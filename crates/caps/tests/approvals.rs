//! `[approvals]`: an askable rule loads; a never-askable one, one that no
//! approval can let through exactly, and an ID that is no rule are policy
//! errors naming the entry, the file and the line, never a silent no-op.

use std::path::Path;

use agentcaps::{ApprovalsConfig, NEVER_ASKABLE, Policy, PolicyError, Remember};

fn load(text: &str) -> Result<Policy, PolicyError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("agentcaps.toml");
    std::fs::write(&file, text).expect("write");
    Policy::load(&file)
}

#[test]
fn an_askable_rule_loads_with_remember_and_timeout() {
    let policy = load(
        "[approvals]\nask = [\"not-allowed-program\"]\nremember = \"session\"\ntimeout_ms = 5000\n",
    )
    .expect("loads");
    assert!(policy.approvals.asks("not-allowed-program"));
    assert!(!policy.approvals.asks("unknown-option"));
    assert_eq!(policy.approvals.remember, Remember::Session);
    assert_eq!(policy.approvals.timeout_ms, 5000);
}

#[test]
fn without_the_section_nothing_is_asked() {
    let policy = Policy::from_toml("[files]\n", Path::new("/")).expect("loads");
    assert_eq!(policy.approvals, ApprovalsConfig::default());
    assert!(policy.approvals.ask.is_empty());
    assert_eq!(policy.approvals.remember, Remember::Once);
    assert_eq!(policy.approvals.timeout_ms, 120_000);
}

#[test]
fn every_never_askable_rule_is_a_policy_error_with_file_and_line() {
    for (rule, _) in NEVER_ASKABLE {
        let text = format!("[approvals]\nask = [\n  \"not-allowed-program\",\n  \"{rule}\",\n]\n");
        let err = load(&text).expect_err(rule);
        let message = err.to_string();
        assert_eq!(err.line(), Some(4), "{rule}: {message}");
        assert!(message.contains("agentcaps.toml"), "{message}");
        assert!(
            message.contains(&format!("`{rule}` is never asked")),
            "{message}"
        );
    }
}

#[test]
fn the_spec_list_of_never_askable_rules_is_covered() {
    for rule in [
        "blocked",
        "address.special-purpose",
        "address.own-address",
        "credential-unbound",
        "credential-cleartext",
        "nul",
        "too-costly",
        "view-failed",
        "require-kernel-enforcement",
    ] {
        assert!(
            NEVER_ASKABLE.iter().any(|(r, _)| *r == rule),
            "{rule} must never be askable"
        );
    }
}

#[test]
fn a_known_rule_no_approval_can_cover_is_refused() {
    let err = load("[approvals]\nask = [\"shell-operator\"]\n").expect_err("not askable");
    assert_eq!(err.line(), Some(2));
    assert!(
        err.to_string()
            .contains("`shell-operator` cannot be asked about"),
        "{err}"
    );
}

#[test]
fn an_id_that_is_no_rule_is_refused() {
    let err = load("[approvals]\n\nask = [\"not-alowed-program\"]\n").expect_err("typo");
    assert_eq!(err.line(), Some(3));
    assert!(err.to_string().contains("not a rule ID"), "{err}");
}

#[test]
fn a_zero_timeout_and_an_unknown_remember_are_refused() {
    let err = load("[approvals]\ntimeout_ms = 0\n").expect_err("zero");
    assert_eq!(err.line(), Some(2), "{err}");
    let err = load("[approvals]\nremember = \"forever\"\n").expect_err("forever");
    assert_eq!(err.line(), Some(2), "{err}");
    let err = load("[approvals]\nasks = []\n").expect_err("unknown key");
    assert!(
        matches!(&err, PolicyError::InFile { source, .. }
            if matches!(**source, PolicyError::UnknownKey { ref key, line: 2 } if key == "approvals.asks")),
        "{err:?}"
    );
}

#[test]
fn refusal_texts() {
    let dir = Path::new("/policy-dir");
    for (name, text) in [
        (
            "approvals_never_askable",
            "[approvals]\nask = [\"blocked\"]\n",
        ),
        (
            "approvals_not_askable",
            "[approvals]\nask = [\"shell-operator\"]\n",
        ),
        (
            "approvals_unknown_rule",
            "[approvals]\nask = [\"no-such-rule\"]\n",
        ),
        ("approvals_zero_timeout", "[approvals]\ntimeout_ms = 0\n"),
    ] {
        let err = Policy::from_toml(text, dir).expect_err(name);
        insta::assert_snapshot!(name, err.to_string());
    }
}

#[test]
fn the_effective_policy_shows_the_section() {
    let policy = Policy::from_toml(
        "[approvals]\nask = [\"not-allowed-program\"]\n",
        Path::new("/"),
    )
    .expect("loads");
    let text = policy.effective_toml();
    assert!(text.contains("\n[approvals]\n"), "{text}");
    assert!(
        text.contains("\"not-allowed-program\",  # policy text:2"),
        "{text}"
    );
    assert!(text.contains("timeout_ms = 120000  # built-in"), "{text}");
    // What it prints loads again as the same section.
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let again: toml::Table = toml::from_str(&body).expect("parses");
    assert_eq!(again["approvals"]["remember"].as_str(), Some("once"));
}

#[test]
fn the_askable_rules_load_each_one() {
    for rule in [
        "not-allowed-program",
        "unknown-option",
        "name.not-allowed",
        "write-protected",
    ] {
        let policy = load(&format!("[approvals]\nask = [\"{rule}\"]\n"))
            .unwrap_or_else(|e| panic!("{rule}: {e}"));
        assert!(policy.approvals.asks(rule), "{rule}");
    }
    // Their neighbours are not: another name rule, another path rule.
    for rule in [
        "name.blocked",
        "name.special-use",
        "outside-roots",
        "refused-option",
    ] {
        assert!(
            load(&format!("[approvals]\nask = [\"{rule}\"]\n")).is_err(),
            "{rule}"
        );
    }
}
