//! `ValidatedCommand::runs_programs`: false exactly when the one program's
//! table says it runs nothing by itself and no option that makes it start
//! programs was given.

use agentcaps_shell::{CommandRequest, ProgramRules, ShellPolicy};

use crate::fixture::Tree;

fn runs(policy: &ShellPolicy, argv: &[&str]) -> bool {
    policy
        .validate(&CommandRequest::argv(argv.iter().copied()))
        .unwrap_or_else(|e| panic!("{argv:?} refused: {e}"))
        .runs_programs()
}

#[test]
fn programs_that_start_nothing_say_so() {
    let tree = Tree::new();
    let policy = tree.policy("files");
    for argv in [
        &["cat", "notes.txt"][..],
        &["head", "-n", "1", "notes.txt"],
        &["tail", "-n", "1", "notes.txt"],
        &["wc", "-l", "notes.txt"],
        &["ls", "-la", "sub"],
        &["grep", "-rn", "one", "sub"],
        &["rg", "-n", "one"],
        &["sed", "-n", "1p", "notes.txt"],
        &["awk", "{print $1}", "notes.txt"],
        &["gawk", "{print $1}", "notes.txt"],
        &["sort", "-r", "notes.txt"],
        &["find", ".", "-name", "*.txt", "-print"],
        &["file", "-b", "notes.txt"],
        &["du", "-sh", "sub"],
        &["cp", "notes.txt", "sub/copy.txt"],
        &["tree", "-a", "sub"],
    ] {
        assert!(!runs(&policy, argv), "{argv:?}");
    }
}

#[test]
fn options_that_start_programs_make_it_true() {
    let tree = Tree::new();
    let policy = tree.policy("files");
    for argv in [
        // rg runs decompression programs for compressed files.
        &["rg", "-z", "one"][..],
        &["rg", "-nz", "one"],
        &["rg", "--search-zip", "one"],
        // file runs decompressors with -z (where built without the libraries).
        &["file", "-z", "notes.txt"],
        &["file", "-bZ", "notes.txt"],
        &["file", "--uncompress", "notes.txt"],
        // install -s runs strip.
        &["install", "-s", "notes.txt", "sub/x"],
        &["install", "--strip", "notes.txt", "sub/x"],
    ] {
        assert!(runs(&policy, argv), "{argv:?}");
    }
}

#[test]
fn programs_that_may_start_others_say_so() {
    let tree = Tree::new();
    let policy = tree.policy("files");
    for argv in [
        &["git", "status"][..],
        &["tar", "-tzf", "x.tar.gz"],
        &["make", "all"],
        &["rsync", "-a", "sub", "copy"],
        &["which", "cat"],
        // No table: nothing is known about it.
        &["curl", "http://127.0.0.1:9/"],
    ] {
        assert!(runs(&policy, argv), "{argv:?}");
    }
    // A launcher starts the program it wraps.
    let unwrap = tree.policy("unwrap");
    assert!(runs(&unwrap, &["nice", "cat", "notes.txt"]));
    assert!(runs(&unwrap, &["timeout", "5", "grep", "one", "notes.txt"]));
    // A shell's `-c` string is run without the shell: the inner program.
    let shell = tree
        .policy_builder("unwrap")
        .allow_command("sh")
        .build()
        .expect("policy");
    assert!(!runs(&shell, &["sh", "-c", "cat notes.txt"]));
}

#[test]
fn a_host_table_never_sets_it_back_and_may_clear_it() {
    let tree = Tree::new();
    // The host adds a rule to cat's table: cat still runs nothing.
    let policy = tree.policy("host-rules");
    assert!(!runs(&policy, &["cat", "notes.txt"]));
    // A host table for a program without one says it runs nothing.
    let mut table = ProgramRules::new("tac");
    table.runs_programs = false;
    let policy = tree
        .policy_builder("files")
        .allow_command("tac")
        .rules(table)
        .build()
        .expect("policy");
    assert!(!runs(&policy, &["tac", "notes.txt"]));
    // A host table that leaves the field at its default for a shipped
    // table does not set it back.
    let mut table = ProgramRules::new("grep");
    table.runs_programs = true;
    let policy = tree
        .policy_builder("files")
        .rules(table)
        .build()
        .expect("policy");
    assert!(!runs(&policy, &["grep", "one", "notes.txt"]));
}

#[test]
fn the_field_is_read_from_a_policy_file() {
    let config: agentcaps_shell::ShellPolicyConfig = toml::from_str(
        r#"
        allowed_commands = ["true"]
        working_directory = "/tmp"
        path_policy = false

        [[rules]]
        name = "true"
        runs_programs = false
        starts_programs = ["--run"]
        "#,
    )
    .expect("config");
    let policy = config.build(None).expect("policy");
    let check = |argv: &[&str]| {
        policy
            .validate(&CommandRequest::argv(argv.iter().copied()))
            .expect("allowed")
            .runs_programs()
    };
    assert!(!check(&["true"]));
    assert!(check(&["true", "--run"]));
    assert!(check(&["true", "--ru=x"]));
}
