//! Waivers: an approved `not-allowed-program` refusal lets exactly that
//! program through, and every other check still holds. Each test tries to
//! get more through a waiver than the one refusal it names.
#![allow(missing_docs)]
#![cfg(unix)]

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, ShellError, ShellPolicy, Waivers};

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    policy: ShellPolicy,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "a\n").expect("write");
    let policy = ShellPolicy::read_only(&root)
        .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
        .build()
        .expect("policy");
    Fixture {
        _dir: dir,
        root,
        policy,
    }
}

fn refusal(policy: &ShellPolicy, argv: &[&str]) -> ShellError {
    policy
        .validate(&CommandRequest::argv(argv.iter().copied()))
        .expect_err("refused without a waiver")
}

fn waived(policy: &ShellPolicy, argv: &[&str]) -> Waivers {
    let mut waivers = Waivers::none();
    let refusal = refusal(policy, argv);
    assert_eq!(refusal.rule(), "not-allowed-program", "{refusal}");
    assert!(waivers.waive(&refusal), "{refusal}");
    waivers
}

#[test]
fn a_waived_program_validates_and_is_found_in_path() {
    let f = fixture();
    let waivers = waived(&f.policy, &["sort", "notes.txt"]);
    let ok = f
        .policy
        .validate_waiving(&CommandRequest::argv(["sort", "notes.txt"]), &waivers)
        .expect("approved");
    assert_eq!(ok.argv(), ["sort", "notes.txt"]);
    assert!(ok.program().is_absolute(), "{}", ok.program().display());
    assert!(ok.program().ends_with("sort"));
    // Without the waiver the same command is refused as before.
    assert!(
        f.policy
            .validate(&CommandRequest::argv(["sort", "notes.txt"]))
            .is_err()
    );
}

#[test]
fn a_waiver_names_one_program_only() {
    let f = fixture();
    let waivers = waived(&f.policy, &["sort"]);
    let err = f
        .policy
        .validate_waiving(&CommandRequest::argv(["uniq"]), &waivers)
        .expect_err("another program");
    assert_eq!(err.rule(), "not-allowed-program");
}

#[test]
fn the_waived_programs_file_arguments_are_still_judged() {
    let f = fixture();
    let waivers = waived(&f.policy, &["sort"]);
    let err = f
        .policy
        .validate_waiving(&CommandRequest::argv(["sort", "/etc/passwd"]), &waivers)
        .expect_err("outside the roots");
    assert_eq!(err.rule(), "path", "{err}");
    let err = f
        .policy
        .validate_waiving(
            &CommandRequest::argv(["sort", "-o/etc/x", "notes.txt"]),
            &waivers,
        )
        .expect_err("a glued output outside the roots");
    assert!(err.is_refusal(), "{err}");
}

#[test]
fn the_waived_programs_own_rules_still_hold() {
    let f = fixture();
    // `sed` is not in the preset, but its grammar is known: approving the
    // program does not approve `-i` (in-place writes) nor an `e` command.
    let waivers = waived(&f.policy, &["sed", "s/a/b/", "notes.txt"]);
    let err = f
        .policy
        .validate_waiving(
            &CommandRequest::argv(["sed", "-i", "s/a/b/", "notes.txt"]),
            &waivers,
        )
        .expect_err("in place");
    assert!(
        err.is_refusal() && err.rule() != "not-allowed-program",
        "{err}"
    );
    let err = f
        .policy
        .validate_waiving(
            &CommandRequest::argv(["sed", "e id", "notes.txt"]),
            &waivers,
        )
        .expect_err("runs a command");
    assert_eq!(err.rule(), "refused-script", "{err}");
}

#[test]
fn a_waived_launcher_is_still_a_launcher() {
    let f = fixture();
    let waivers = waived(&f.policy, &["env", "cat", "notes.txt"]);
    let err = f
        .policy
        .validate_waiving(&CommandRequest::argv(["env", "cat", "notes.txt"]), &waivers)
        .expect_err("launcher");
    assert_eq!(err.rule(), "launcher", "{err}");
    let waivers = waived(&f.policy, &["sh", "-c", "cat notes.txt"]);
    let err = f
        .policy
        .validate_waiving(
            &CommandRequest::argv(["sh", "-c", "cat notes.txt"]),
            &waivers,
        )
        .expect_err("a shell string");
    assert_eq!(err.rule(), "launcher", "{err}");
}

#[test]
fn a_program_named_by_a_path_cannot_be_waived() {
    let f = fixture();
    for program in ["/usr/bin/sort", "./sort", "bin/sort"] {
        let refusal = refusal(&f.policy, &[program]);
        let mut waivers = Waivers::none();
        assert!(!waivers.waive(&refusal), "{program}: {refusal}");
        assert!(waivers.is_empty());
        assert!(
            f.policy
                .validate_waiving(&CommandRequest::argv([program]), &waivers)
                .is_err()
        );
    }
}

#[test]
fn only_not_allowed_program_refusals_are_waivable() {
    let f = fixture();
    for argv in [
        vec!["cat", "/etc/passwd"],
        vec!["cat", "../outside.txt"],
        vec!["cat", "a\0b"],
    ] {
        let refusal = refusal(&f.policy, &argv);
        let mut waivers = Waivers::none();
        assert!(!waivers.waive(&refusal), "{argv:?}: {refusal}");
    }
    let err = f
        .policy
        .validate(&CommandRequest::line("cat notes.txt; id"))
        .expect_err("operator");
    assert!(!Waivers::can_waive(&err));
    let _ = &f.root;
}

#[test]
fn the_waived_program_inside_an_allowed_launcher_is_the_one_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    let policy = ShellPolicy::read_only(&root)
        .allow_command("nice")
        .unwrap_launchers(true)
        .build()
        .expect("policy");
    let waivers = waived(&policy, &["nice", "sort"]);
    let ok = policy
        .validate_waiving(&CommandRequest::argv(["nice", "sort"]), &waivers)
        .expect("approved inner program");
    assert!(ok.argv()[1].ends_with("/sort"), "{:?}", ok.argv());
    assert!(
        policy
            .validate_waiving(&CommandRequest::argv(["nice", "uniq"]), &waivers)
            .is_err()
    );
}
