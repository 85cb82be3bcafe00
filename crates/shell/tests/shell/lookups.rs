//! Exact lookup counts on a simulated file system.

use agentcaps_paths::{PathPolicy, SimFs};
use agentcaps_shell::{CommandRequest, LOOKUP_BUDGET, MAX_ARGUMENT_CHARS, ShellPolicy};

use crate::fixture::Tree;

/// A policy rooted at a real (empty) directory, and a simulated file system
/// that mirrors it with a file and a link out.
fn setup() -> (Tree, ShellPolicy, SimFs) {
    let tree = Tree::new();
    let policy = ShellPolicy::read_only(&tree.root)
        .path_policy(PathPolicy::builder().allow(&tree.root).build().unwrap())
        .build()
        .unwrap();
    let mut fs = SimFs::new();
    fs.add_dir(&tree.root)
        .add_file(tree.root.join("notes.txt"))
        .add_symlink(tree.root.join("README"), "/etc/passwd")
        .add_dir("/etc")
        .add_file("/etc/passwd");
    fs.reset_lookups();
    (tree, policy, fs)
}

fn lookups(policy: &ShellPolicy, fs: &SimFs, argv: &[&str]) -> u64 {
    fs.reset_lookups();
    let cmd = policy
        .validate_on(fs, &CommandRequest::argv(argv.iter().copied()))
        .unwrap_or_else(|e| panic!("{argv:?} refused: {e}"));
    assert_eq!(
        cmd.lookups(),
        fs.lookups(),
        "the reported count is the real one"
    );
    fs.lookups()
}

#[test]
fn a_plain_component_that_is_not_there_costs_one_lookup() {
    let (_tree, policy, fs) = setup();
    let base = lookups(&policy, &fs, &["cat"]);
    assert_eq!(lookups(&policy, &fs, &["cat", "missing"]), base + 1);
    assert_eq!(
        lookups(&policy, &fs, &["cat", "missing", "other"]),
        base + 2
    );
}

#[test]
fn each_distinct_path_is_checked_once() {
    let (_tree, policy, fs) = setup();
    let once = lookups(&policy, &fs, &["cat", "notes.txt"]);
    let many = lookups(
        &policy,
        &fs,
        &["cat", "notes.txt", "notes.txt", "notes.txt", "notes.txt"],
    );
    assert_eq!(once, many);
}

#[test]
fn echo_checks_only_the_working_directory() {
    let (_tree, policy, fs) = setup();
    let base = lookups(&policy, &fs, &["echo"]);
    assert_eq!(
        lookups(&policy, &fs, &["echo", "a", "/etc/passwd", "../x"]),
        base
    );
}

#[test]
fn the_working_directory_is_judged_for_every_command() {
    let (tree, policy, mut fs) = setup();
    fs.add_dir(tree.root.join("sub"));
    // `.` is the policy's working directory, already a real location: no
    // lookup is needed to judge it. A spelled one is resolved.
    let here = lookups(&policy, &fs, &["echo"]);
    fs.reset_lookups();
    let there = policy
        .validate_on(&fs, &CommandRequest::argv(["echo"]).with_cwd("sub"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(there.lookups() > here);
    let err = policy
        .validate_on(&fs, &CommandRequest::argv(["echo"]).with_cwd("/etc"))
        .err()
        .map(|e| e.rule());
    assert_eq!(err, Some("working-directory"));
}

#[test]
fn a_link_is_refused_on_the_simulated_tree() {
    let (_tree, policy, fs) = setup();
    let err = policy
        .validate_on(&fs, &CommandRequest::argv(["cat", "README"]))
        .unwrap_err();
    assert_eq!(err.rule(), "path");
}

/// What the working directory `.` costs in the budget.
fn cwd_cost(policy: &ShellPolicy) -> usize {
    policy.path_policy().map_or(0, |p| p.spelled_cost(".")) as usize
}

/// The rule of a refusal, without printing a 20 000-argument command.
fn rule_of(policy: &ShellPolicy, fs: &SimFs, argv: Vec<String>) -> Option<&'static str> {
    policy
        .validate_on(fs, &CommandRequest::argv(argv))
        .err()
        .map(|e| e.rule())
}

/// Distinct plain names `f0`, `f1`, …
fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("f{i}")).collect()
}

#[test]
fn a_command_over_budget_is_refused_before_any_lookup() {
    let (_tree, policy, fs) = setup();
    let over = LOOKUP_BUDGET as usize - cwd_cost(&policy) + 1;
    let mut argv = vec!["cat".to_owned()];
    argv.extend(names(over));
    fs.reset_lookups();
    assert_eq!(rule_of(&policy, &fs, argv), Some("too-costly"));
    assert_eq!(fs.lookups(), 0, "the refusal touched the file system");
}

#[test]
fn a_command_exactly_at_the_budget_is_checked() {
    let (_tree, policy, fs) = setup();
    let base = lookups(&policy, &fs, &["cat"]);
    let at = LOOKUP_BUDGET as usize - cwd_cost(&policy);
    let mut argv = vec!["cat".to_owned()];
    argv.extend(names(at));
    fs.reset_lookups();
    let cmd = policy
        .validate_on(&fs, &CommandRequest::argv(argv))
        .map_err(|e| e.to_string())
        .expect("a command at the budget is checked");
    // One lookup per name that is not there.
    assert_eq!(cmd.lookups(), base + at as u64);
    assert!(cmd.lookups() <= LOOKUP_BUDGET);
    assert_eq!(cmd.lookups(), fs.lookups());
}

#[test]
fn thousands_of_distinct_long_flags_are_refused_with_no_lookup() {
    let (_tree, policy, fs) = setup();
    let mut argv = vec!["cat".to_owned()];
    argv.extend((0..30_000).map(|i| format!("--flag-number-{i}=value/{i}")));
    fs.reset_lookups();
    assert_eq!(rule_of(&policy, &fs, argv), Some("too-costly"));
    assert_eq!(fs.lookups(), 0);
}

#[test]
fn a_grammar_program_over_budget_is_refused_with_no_lookup() {
    // Programs read with an allow-list grammar (here `tar`, whose flags
    // are unknown to it) are bounded first too: too costly, not unknown.
    let tree = Tree::new();
    let policy = ShellPolicy::read_only(&tree.root)
        .allow_command("tar")
        .path_policy(PathPolicy::builder().allow(&tree.root).build().unwrap())
        .build()
        .unwrap();
    let fs = SimFs::new();
    let mut argv = vec!["tar".to_owned()];
    argv.extend((0..30_000).map(|i| format!("--flag-number-{i}=value/{i}")));
    fs.reset_lookups();
    assert_eq!(rule_of(&policy, &fs, argv), Some("too-costly"));
    assert_eq!(fs.lookups(), 0);
}

#[test]
fn a_long_cluster_costs_by_its_tails_and_is_refused_with_no_lookup() {
    let (_tree, policy, fs) = setup();
    // Six clusters of 4096 letters: 6 × 4096 plain tails > 20 000.
    let argv: Vec<String> = std::iter::once("cat".to_owned())
        .chain((b'a'..=b'f').map(|c| format!("-{}", (c as char).to_string().repeat(4095))))
        .collect();
    fs.reset_lookups();
    assert_eq!(rule_of(&policy, &fs, argv), Some("too-costly"));
    assert_eq!(fs.lookups(), 0);
}

#[test]
fn an_argument_over_the_length_limit_is_refused_with_no_lookup() {
    let (_tree, policy, fs) = setup();
    fs.reset_lookups();
    let long = "a".repeat(MAX_ARGUMENT_CHARS + 1);
    let err = policy
        .validate_on(&fs, &CommandRequest::argv(["cat", &long]))
        .unwrap_err();
    assert_eq!(err.rule(), "argument-too-long");
    assert_eq!(fs.lookups(), 0);
    // Characters, not bytes: 4096 two-byte characters are within the limit.
    let wide = "é".repeat(MAX_ARGUMENT_CHARS);
    assert!(
        policy
            .validate_on(&fs, &CommandRequest::argv(["cat", &wide]))
            .is_ok()
    );
}
