//! Programs that run nothing by themselves cannot: with the script scan
//! switched off (a test seam), a `sed` `e` command and an `awk` `system()`,
//! pipe or `getline` from a command reach the kernel, which refuses to
//! execute anything but the program's own file and its loader (`EACCES`).
//! Programs whose table says they start others (`find -exec`, `make`,
//! `git`, `python3`) still do, and everyday `sed` and `awk` still work.

use agentcaps_shell::{CommandRequest, ProgramRules, RunResult, ShellPolicy, danger};

use crate::support::{Project, applied, assert_full, run};

/// `sed`, `awk`, `find`, `make`, `git` and `python3` allowed, in the view;
/// with `scan` off, `sed` scripts and `awk` programs are not looked at.
fn policy(project: &Project, scan: bool) -> ShellPolicy {
    project
        .policy()
        .allow_command("sed")
        .allow_command("awk")
        .allow_command("find")
        .allow_command("make")
        .allow_command("git")
        .allow_command("python3")
        .skip_script_scan(!scan)
        .build()
        .expect("policy")
}

fn argv(words: &[&str]) -> CommandRequest {
    CommandRequest::argv(words.iter().map(|w| (*w).to_owned()))
}

/// The escapes a scanner could miss, each trying to run `id` (whose output
/// names a uid) or to create `x` with `touch`, and what the program says
/// when the kernel refuses to execute its shell: GNU sed's `popen` fails
/// (`EACCES`), awk's child cannot exec `/bin/sh` ("Permission denied", or
/// `system()`'s status 127).
const ESCAPES: &[(&[&str], &str)] = &[
    (&["sed", "e id", "README.md"], "sed: error in subprocess"),
    (
        &["sed", "1e touch x", "README.md"],
        "sed: error in subprocess",
    ),
    (
        &["sed", "-n", "1e id", "README.md"],
        "sed: error in subprocess",
    ),
    (
        &["sed", "s/hello/id/e", "README.md"],
        "sed: error in subprocess",
    ),
    (&["awk", "BEGIN{print system(\"id\")}"], "127"),
    (&["awk", "BEGIN{print system(\"touch x\")}"], "127"),
    (
        &["awk", "BEGIN{print \"id\" | \"sh\"}"],
        "Permission denied",
    ),
    (
        &["awk", "BEGIN{print \"touch x\" | \"sh\"}"],
        "Permission denied",
    ),
    (
        &["awk", "BEGIN{\"id\" | getline line; print line}"],
        "Permission denied",
    ),
    (
        &[
            "awk",
            "BEGIN{print \"x\" > \"/dev/stderr\"; print | \"id 1>&2\"}",
        ],
        "Permission denied",
    ),
];

/// What shows that the kernel stopped the escape: nothing it started ran
/// (no `id` output, no `x`), and the program said why.
fn assert_denied(words: &[&str], refused: &str, result: &RunResult) {
    let said = format!("{}{}", result.stdout, result.stderr);
    assert!(!said.contains("uid="), "{words:?} ran id: {result:?}");
    assert!(
        said.contains(refused),
        "{words:?} was not refused by the kernel: {result:?}"
    );
    assert!(!applied(result, "x"), "{words:?} created x: {result:?}");
}

#[test]
fn a_sed_e_or_awk_command_the_scanner_missed_fails_with_eacces_in_the_view() {
    let project = Project::new();
    // The scanner refuses every one of them (so only the seam lets them
    // through).
    let scanned = policy(&project, true);
    for (words, _) in ESCAPES {
        assert!(
            scanned.validate(&argv(words)).is_err(),
            "{words:?} passed the scanner"
        );
    }
    let policy = policy(&project, false);
    for (words, refused) in ESCAPES {
        let command = policy.validate(&argv(words)).expect("validated");
        assert!(!command.runs_programs(), "{words:?}");
        let result = policy.run_blocking(command).expect("ran");
        assert_denied(words, refused, &result);
        assert_full(&result);
        assert!(project.read("x").is_none(), "{words:?} created x");
    }
}

/// A policy whose only tables are the host's: `find` runs nothing by
/// itself unless given `-exec` (which no refusal stops here), and `sed`
/// and `awk` have none (so nothing is known of them: they may run
/// programs, and their scripts are not scanned).
fn host_tables(project: &Project, view: bool) -> ShellPolicy {
    let mut find = ProgramRules::new("find");
    find.runs_programs = false;
    find.starts_programs = vec!["-exec".to_owned()];
    danger::without_default_rules(project.policy())
        .allow_command("sed")
        .allow_command("awk")
        .allow_command("find")
        .rules(find)
        .private_view(view)
        .build()
        .expect("policy")
}

#[test]
fn the_same_escapes_run_where_no_wall_is_asked_for() {
    // What the tests above show is the wall's doing: a program whose table
    // does not say it runs nothing gets none, and each escape then runs.
    let project = Project::new();
    let policy = host_tables(&project, true);
    for (words, _) in ESCAPES {
        let command = policy.validate(&argv(words)).expect("validated");
        assert!(command.runs_programs(), "{words:?}");
        let result = policy.run_blocking(command).expect("ran");
        let said = format!("{}{}", result.stdout, result.stderr);
        let touched = applied(&result, "x");
        assert!(said.contains("uid=") || touched, "{words:?}: {result:?}");
        assert_full(&result);
        if touched {
            std::fs::remove_file(project.root.join("x")).expect("rm x");
        }
    }
}

#[test]
fn programs_that_start_others_still_do_in_the_view() {
    let project = Project::new();
    // find -exec: the table lists `-exec` as starting programs.
    let found = run(
        &host_tables(&project, true),
        argv(&["find", ".", "-name", "README.md", "-exec", "cat", "{}", ";"]),
    );
    assert_eq!(found.stdout, "hello\n", "{found:?}");
    assert_full(&found);
    let policy = policy(&project, true);
    // make runs its recipes' shell.
    project.write("Makefile", "all:\n\techo made > made.txt\n\t@id -u\n");
    let made = run(&policy, argv(&["make"]));
    assert_eq!(made.exit, agentcaps_shell::Exit::Code(0), "{made:?}");
    assert!(applied(&made, "made.txt"), "{made:?}");
    // python3 starts a child process.
    std::fs::write(
        project.root.join("child.py"),
        "import subprocess\nprint(subprocess.run(['id', '-u'], capture_output=True, text=True).stdout.strip())\n",
    )
    .expect("script");
    let python = run(&policy, argv(&["python3", "child.py"]));
    assert_eq!(python.exit, agentcaps_shell::Exit::Code(0), "{python:?}");
    assert!(
        python.stdout.trim().parse::<u32>().is_ok(),
        "the child did not run: {python:?}"
    );
    // git runs a hook the repository holds.
    std::fs::remove_dir_all(project.root.join(".git")).expect("fresh repo");
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&project.root)
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main", "."]);
    git(&["add", "README.md"]);
    git(&["config", "user.email", "t@example.invalid"]);
    git(&["config", "user.name", "t"]);
    let hook = project.root.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho hook ran >&2\n").expect("hook");
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let committed = run(&policy, argv(&["git", "commit", "-qm", "first"]));
    assert!(committed.stderr.contains("hook ran"), "{committed:?}");
}

#[test]
fn everyday_sed_and_awk_still_work_behind_the_wall() {
    let project = Project::new();
    project.write("data.txt", "alpha 1\n# comment\nbeta 2\nfoo 3\n");
    let policy = policy(&project, true);
    let cases: &[(&[&str], &str)] = &[
        (&["sed", "-n", "/foo/p", "data.txt"], "foo 3\n"),
        (&["sed", "/^#/d", "data.txt"], "alpha 1\nbeta 2\nfoo 3\n"),
        (
            &["sed", "s/alpha/ALPHA/;2q", "data.txt"],
            "ALPHA 1\n# comment\n",
        ),
        (
            &["sed", ":a;N;$!ba;s/\\n/,/g", "data.txt"],
            "alpha 1,# comment,beta 2,foo 3\n",
        ),
        (&["awk", "/foo/{print $2}", "data.txt"], "3\n"),
        (&["awk", "{ s += $2 } END { print s }", "data.txt"], "6\n"),
        (
            &["awk", "-F", " ", "NR==1{print toupper($1)}", "data.txt"],
            "ALPHA\n",
        ),
    ];
    for (words, expected) in cases {
        let command = policy.validate(&argv(words)).expect("validated");
        assert!(!command.runs_programs(), "{words:?}");
        let result = policy.run_blocking(command).expect("ran");
        assert_eq!(result.stdout, *expected, "{words:?}: {result:?}");
        assert_full(&result);
    }
}

#[test]
fn without_the_view_landlock_alone_holds_the_wall_and_says_so() {
    let project = Project::new();
    let policy = project
        .policy()
        .allow_command("sed")
        .allow_command("awk")
        .allow_command("find")
        .skip_script_scan(true)
        .private_view(false)
        .build()
        .expect("policy");
    for (words, refused) in ESCAPES {
        let result = run(&policy, argv(words));
        assert_denied(words, refused, &result);
        assert!(project.read("x").is_none(), "{words:?} created x");
        let reason = result.enforced_reason.clone().unwrap_or_default();
        assert!(
            reason.contains("the program could execute only its own file and the loader"),
            "{words:?}: {reason}"
        );
    }
    // A program that starts others is not held, and the reason does not
    // claim it is.
    let found = run(
        &host_tables(&project, false),
        argv(&["find", ".", "-name", "README.md", "-exec", "cat", "{}", ";"]),
    );
    assert_eq!(found.stdout, "hello\n", "{found:?}");
    let reason = found.enforced_reason.unwrap_or_default();
    assert!(!reason.contains("execute only"), "{reason}");
    // Everyday sed still works there.
    let printed = run(&policy, argv(&["sed", "-n", "1p", "README.md"]));
    assert_eq!(printed.stdout, "hello\n", "{printed:?}");
}
