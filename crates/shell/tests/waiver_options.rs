//! Waivers of `unknown-option`: an approved option the program's rules do
//! not know is left out of the judging, for that program only, and kept in
//! the command; everything else is judged as always. Each test tries to get
//! more through than the one option approved.
#![allow(missing_docs)]
#![cfg(unix)]

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, ShellError, ShellPolicy, Waivers};

struct Fixture {
    _dir: tempfile::TempDir,
    policy: ShellPolicy,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "a\n").expect("write");
    let policy = ShellPolicy::read_only(&root)
        .allow_command("nice")
        .allow_command("git")
        .unwrap_launchers(true)
        .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
        .build()
        .expect("policy");
    Fixture { _dir: dir, policy }
}

fn validate(
    policy: &ShellPolicy,
    argv: &[&str],
    waivers: &Waivers,
) -> Result<Vec<String>, ShellError> {
    policy
        .validate_waiving(&CommandRequest::argv(argv.iter().copied()), waivers)
        .map(|ok| ok.argv().to_vec())
}

/// The waiver of the refusal of `argv`, which must be `unknown-option`.
fn waived(policy: &ShellPolicy, argv: &[&str]) -> Waivers {
    let refusal = validate(policy, argv, &Waivers::none()).expect_err("refused without a waiver");
    assert_eq!(refusal.rule(), "unknown-option", "{refusal}");
    let mut waivers = Waivers::none();
    assert!(waivers.waive(&refusal), "{refusal:?}");
    waivers
}

#[test]
fn an_approved_option_validates_and_stays_in_the_command() {
    let f = fixture();
    let argv = ["wc", "--frobnicate", "notes.txt"];
    let waivers = waived(&f.policy, &argv);
    let ok = validate(&f.policy, &argv, &waivers).expect("approved");
    assert_eq!(ok, argv);
}

#[test]
fn an_option_given_twice_or_after_a_double_dash_stays_refused() {
    let f = fixture();
    let waivers = waived(&f.policy, &["wc", "--frobnicate", "notes.txt"]);
    // Leaving out both would make `/etc/passwd` the value of `--total`
    // rather than a file to judge.
    for argv in [
        [
            "wc",
            "--frobnicate",
            "--total",
            "--frobnicate",
            "/etc/passwd",
        ],
        ["wc", "--frobnicate", "--", "--frobnicate", "notes.txt"],
    ] {
        let err = validate(&f.policy, &argv, &waivers).expect_err("refused");
        assert!(err.is_refusal(), "{argv:?}: {err}");
    }
}

#[test]
fn another_unknown_option_is_still_refused() {
    let f = fixture();
    let waivers = waived(&f.policy, &["wc", "--frobnicate", "notes.txt"]);
    let err = validate(
        &f.policy,
        &["wc", "--frobnicate", "--other", "notes.txt"],
        &waivers,
    )
    .expect_err("another option");
    assert_eq!(err.rule(), "unknown-option", "{err}");
    assert!(err.to_string().contains("--other"), "{err}");
}

#[test]
fn the_option_is_approved_for_its_program_only() {
    let f = fixture();
    let waivers = waived(&f.policy, &["wc", "--frobnicate", "notes.txt"]);
    let err = validate(&f.policy, &["ls", "--frobnicate", "notes.txt"], &waivers)
        .expect_err("another program");
    assert_eq!(err.rule(), "unknown-option", "{err}");
    // The launcher's inner program is the one approved; the same word given
    // to the launcher is the launcher's option, not approved.
    let inner = ["nice", "wc", "--frobnicate", "notes.txt"];
    let waivers = waived(&f.policy, &inner);
    let ok = validate(&f.policy, &inner, &waivers).expect("inner program approved");
    assert_eq!(ok[2..], inner[2..]);
    assert!(ok[1].ends_with("/wc"), "{ok:?}");
}

#[test]
fn a_subcommands_option_is_approved_after_that_subcommand_only() {
    let f = fixture();
    let waivers = waived(&f.policy, &["git", "log", "--frobnicate"]);
    assert!(validate(&f.policy, &["git", "log", "--frobnicate"], &waivers).is_ok());
    let err = validate(&f.policy, &["git", "status", "--frobnicate"], &waivers)
        .expect_err("another subcommand");
    assert_eq!(err.rule(), "unknown-option", "{err}");
}

#[test]
fn a_word_after_the_option_is_judged_as_a_file() {
    let f = fixture();
    // Whatever `--frobnicate` would take, the next word is judged as an
    // operand: a path outside the roots is refused.
    let waivers = waived(&f.policy, &["wc", "--frobnicate", "notes.txt"]);
    let err =
        validate(&f.policy, &["wc", "--frobnicate", "/etc/passwd"], &waivers).expect_err("outside");
    assert_eq!(err.rule(), "path", "{err}");
    // Refused options next to it are refused as always.
    let err = validate(
        &f.policy,
        &["git", "log", "--frobnicate", "--output=x"],
        &waived(&f.policy, &["git", "log", "--frobnicate"]),
    )
    .expect_err("git log --output writes");
    assert!(err.is_refusal() && err.rule() != "unknown-option", "{err}");
}

#[test]
fn an_option_with_a_value_or_in_a_cluster_is_not_waivable() {
    let f = fixture();
    for argv in [
        ["wc", "--frobnicate=notes.txt", "notes.txt"],
        ["wc", "-lZ", "notes.txt"],
        ["wc", "--lines=3", "notes.txt"],
    ] {
        let refusal = validate(&f.policy, &argv, &Waivers::none()).expect_err("refused");
        assert_eq!(refusal.rule(), "unknown-option", "{argv:?}: {refusal}");
        let mut waivers = Waivers::none();
        assert!(!Waivers::can_waive(&refusal), "{argv:?}: {refusal}");
        assert!(!waivers.waive(&refusal));
        assert!(validate(&f.policy, &argv, &waivers).is_err());
    }
}

#[test]
fn a_program_that_starts_none_is_still_denied_that() {
    let f = fixture();
    let argv = ["wc", "--frobnicate", "notes.txt"];
    let waivers = waived(&f.policy, &argv);
    let ok = f
        .policy
        .validate_waiving(&CommandRequest::argv(argv), &waivers)
        .expect("approved");
    assert!(
        !ok.runs_programs(),
        "wc with an approved option may still start nothing"
    );
}
