//! The runner with real processes.

use std::path::Path;
use std::time::Duration;

use agentcaps_shell::{CommandRequest, Exit, ShellPolicy, danger};

use crate::fixture::Tree;

fn policy(tree: &Tree, commands: &[&str]) -> agentcaps_shell::ShellPolicyBuilder {
    commands
        .iter()
        .fold(ShellPolicy::builder(&tree.root), |b, c| b.allow_command(*c))
}

/// Whether `pid` is gone (or a zombie waiting for a reaper: it runs no more).
/// A process killed with SIGKILL closes its files before it is a zombie, so
/// it may be seen exiting for a moment: allow it two seconds to finish.
fn is_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if is_gone_now(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn is_gone_now(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn write_script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("script");
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn runs_without_a_shell_and_reports_the_argv() {
    let tree = Tree::new();
    let policy = policy(&tree, &["echo"]).build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["echo", "a;b", "$HOME"]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.stdout, "a;b $HOME\n");
    assert_eq!(out.exit, Exit::Code(0));
    assert!(!out.timed_out);
    assert_eq!(out.argv, ["echo", "a;b", "$HOME"]);
    assert!(out.program.is_absolute());
    let json = serde_json::to_value(&out).unwrap();
    assert_eq!(json["exit"], serde_json::json!({ "code": 0 }));
    assert_eq!(
        json["truncated"],
        serde_json::json!({ "stdout": false, "stderr": false })
    );
    assert!(json["duration_ms"].is_u64());
    assert!(json["enforced"].is_string());
}

#[tokio::test]
async fn exit_codes_and_stderr_are_reported() {
    let tree = Tree::new();
    let policy = policy(&tree, &["ls"]).build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["ls", "/nonexistent-agentcaps"]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(2));
    assert!(
        out.stderr.contains("nonexistent-agentcaps"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn stdin_is_closed() {
    let tree = Tree::new();
    let policy = policy(&tree, &["cat"])
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["cat"])).unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert!(!out.timed_out, "cat waited for input");
    assert_eq!(out.stdout, "");
}

#[tokio::test]
async fn a_host_secret_never_reaches_the_child() {
    // Cargo sets CARGO_MANIFEST_DIR for the test process; it stands for any
    // variable the host did not list (provider keys live there).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let tree = Tree::new();
    let policy = policy(&tree, &["env"]).build().unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["env"])).unwrap();
    let names: Vec<_> = cmd
        .env_names()
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n == "CARGO_MANIFEST_DIR"));
    let out = policy.run(cmd).await.unwrap();
    assert!(!out.stdout.contains("CARGO_MANIFEST_DIR"), "{}", out.stdout);
    assert!(!out.stdout.contains("HOME="), "{}", out.stdout);
    assert!(out.stdout.contains("PATH="), "{}", out.stdout);
}

#[tokio::test]
async fn the_development_preset_inherits_everything() {
    let tree = Tree::new();
    let policy = danger::development(&tree.root).build().unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["env"])).unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(out.stdout.contains("CARGO_MANIFEST_DIR="), "{}", out.stdout);
}

#[tokio::test]
async fn host_variables_are_set() {
    let tree = Tree::new();
    let policy = policy(&tree, &["env"]).env("PAGER", "cat").build().unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["env"])).unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(
        out.stdout.lines().any(|l| l == "PAGER=cat"),
        "{}",
        out.stdout
    );
}

#[tokio::test]
async fn a_binary_planted_in_the_working_directory_is_never_run() {
    let tree = Tree::new();
    let fake = write_script(&tree.root, "cat", "#!/bin/sh\necho PLANTED\n");
    std::process::Command::new("chmod")
        .args(["+x", &fake])
        .status()
        .unwrap();
    // Even with `.` and an empty entry in the command's PATH.
    let policy = policy(&tree, &["cat"])
        .env("PATH", ".::/usr/bin:/bin")
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["cat", "notes.txt"]))
        .unwrap();
    assert!(cmd.program().starts_with("/usr/bin") || cmd.program().starts_with("/bin"));
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.stdout, "1 one\n2 two\n");
}

#[tokio::test]
async fn the_commands_path_keeps_only_absolute_entries() {
    // What the command starts in turn (git starting `ssh` or a pager, make
    // starting the compiler) looks programs up in its PATH: no `.`, empty
    // or relative entry may send it to the working directory.
    let tree = Tree::new();
    let policy = policy(&tree, &["env"])
        .env("PATH", ".::/usr/bin:bin:/bin:../x:")
        .build()
        .unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["env"])).unwrap();
    let out = policy.run(cmd).await.unwrap();
    let paths: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("PATH="))
        .collect();
    assert_eq!(paths, ["PATH=/usr/bin:/bin"], "{}", out.stdout);
}

#[tokio::test]
async fn the_working_directory_is_the_judged_one() {
    let tree = Tree::new();
    let policy = policy(&tree, &["pwd"])
        .path_policy(tree.paths())
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["pwd"]).with_cwd("inlink"))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    // `inlink` -> `sub`: the command runs at the real location that was judged.
    assert_eq!(
        out.stdout.trim_end(),
        tree.root.join("sub").to_str().unwrap()
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group_grandchildren_included() {
    let tree = Tree::new();
    let script = write_script(&tree.root, "spawn.sh", "sleep 300 &\necho $!\nwait\n");
    let policy = policy(&tree, &["sh"])
        .timeout(Duration::from_millis(700))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["sh", &script]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.exit, Exit::Signal(9));
    let grandchild: u32 = out
        .stdout
        .trim()
        .parse()
        .expect("the script printed its child's pid");
    assert!(
        is_gone(grandchild),
        "grandchild {grandchild} outlived the timeout"
    );
    assert!(out.duration < Duration::from_secs(10));
}

#[tokio::test]
async fn a_grandchild_left_behind_at_exit_is_killed_and_does_not_hold_the_run() {
    let tree = Tree::new();
    let script = write_script(&tree.root, "leave.sh", "sleep 300 &\necho $!\n");
    let policy = policy(&tree, &["sh"])
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["sh", &script]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(!out.timed_out, "the run waited for the grandchild's pipe");
    assert_eq!(out.exit, Exit::Code(0));
    let grandchild: u32 = out.stdout.trim().parse().expect("pid");
    let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat"));
    assert!(
        is_gone(grandchild),
        "grandchild {grandchild} outlived the command: {stat:?} {out:?}"
    );
}

#[tokio::test]
async fn a_request_timeout_is_capped_by_the_policy() {
    let tree = Tree::new();
    let policy = policy(&tree, &["sleep"])
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let req = CommandRequest::argv(["sleep", "30"]).with_timeout(Duration::from_secs(60));
    let cmd = policy.validate(&req).unwrap();
    assert_eq!(cmd.timeout(), Duration::from_millis(300));
    let out = policy.run(cmd).await.unwrap();
    assert!(out.timed_out);
}

#[tokio::test]
async fn endless_output_is_capped_and_the_child_is_not_blocked() {
    let tree = Tree::new();
    // 5 MB through a 64 KiB pipe: head only finishes if we keep reading.
    let policy = policy(&tree, &["head"])
        .max_output_bytes(1000)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv([
            "head",
            "-c",
            "5000000",
            "/dev/zero",
        ]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "head was blocked on a full pipe");
    assert!(!out.timed_out);
    assert!(out.truncated.stdout);
    assert!(!out.truncated.stderr);
    assert_eq!(out.stdout.len(), 1000);
}

#[tokio::test]
async fn yes_forever_is_capped_then_timed_out() {
    let tree = Tree::new();
    let policy = policy(&tree, &["yes"])
        .max_output_bytes(4096)
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["yes"])).unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(out.timed_out);
    assert!(out.truncated.stdout);
    assert_eq!(out.stdout, "y\n".repeat(2048));
}

#[tokio::test]
async fn a_character_cut_by_the_cap_is_not_split() {
    let tree = Tree::new();
    let policy = policy(&tree, &["echo"])
        .max_output_bytes(2)
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["echo", "aé"]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.stdout, "a");
    assert!(out.truncated.stdout);
}

#[tokio::test]
async fn blocking_run_refuses_inside_a_runtime() {
    let tree = Tree::new();
    let policy = policy(&tree, &["echo"]).build().unwrap();
    let cmd = policy.validate(&CommandRequest::argv(["echo"])).unwrap();
    assert_eq!(policy.run_blocking(cmd).unwrap_err().rule(), "config");
}

#[test]
fn blocking_run_works_without_a_runtime() {
    let tree = Tree::new();
    let policy = policy(&tree, &["echo"]).build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["echo", "hi"]))
        .unwrap();
    assert_eq!(policy.run_blocking(cmd).unwrap().stdout, "hi\n");
}

#[tokio::test]
async fn stdin_bytes_are_given_where_allowed() {
    let tree = Tree::new();
    let policy = policy(&tree, &["cat"]).allow_stdin(true).build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["cat"]).with_stdin("piped in\n"))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.stdout, "piped in\n");
    assert_eq!(out.exit, Exit::Code(0));
}

/// Run the real `git` outside the runner (to build and to attack the
/// fixture), with no variable but `PATH`, as the runner's children get.
fn real_git(cwd: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("git runs")
}

/// The bare-repository attack: the agent writes `HEAD`, `config` and
/// `objects/` into a directory and runs `git` there; git would take it for
/// a bare repository and run the programs its `config` names.
#[tokio::test]
async fn git_never_takes_a_written_directory_for_a_bare_repository() {
    let tree = Tree::new();
    // A real repository with two commits, pushed into `root/evil`, which
    // is then given an attacker's `config` and `info/attributes`.
    let evil = tree.root.join("evil");
    let marker = tree.root.join("MARKER");
    let ok = |out: std::process::Output| assert!(out.status.success(), "{out:?}");
    ok(real_git(&tree.root, &["init", "-q", "--bare", "evil"]));
    ok(real_git(&tree.root, &["init", "-q", "w"]));
    let w = tree.root.join("w");
    let commit = [
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
        "commit",
        "-qam",
    ];
    std::fs::write(w.join("f"), "one\n").unwrap();
    ok(real_git(&w, &["add", "f"]));
    ok(real_git(&w, &[&commit[..], &["one"]].concat()));
    std::fs::write(w.join("f"), "two\n").unwrap();
    ok(real_git(&w, &[&commit[..], &["two"]].concat()));
    ok(real_git(
        &w,
        &["push", "-q", evil.to_str().unwrap(), "HEAD:refs/heads/main"],
    ));
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir_all(evil.join("info")).unwrap();
    std::fs::write(evil.join("info/attributes"), "* diff=x\n").unwrap();
    let run_marker = format!("touch '{}'; cat", marker.display());
    std::fs::write(
        evil.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = \"{run_marker}\"\n\
             [diff \"x\"]\n\ttextconv = \"{run_marker}\"\n"
        ),
    )
    .unwrap();

    // Control: without the runner, this git runs the attacker's program.
    let out = real_git(&evil, &["log", "-p"]);
    assert!(
        marker.exists(),
        "the attack must work on this git for the test to mean anything: {out:?}"
    );
    std::fs::remove_file(&marker).unwrap();

    // Through the runner, git refuses the implicit bare repository.
    let policy = policy(&tree, &["git"]).build().unwrap();
    for argv in [
        &["git", "log", "-p"][..],
        &["git", "show"],
        &["git", "status"],
    ] {
        let cmd = policy
            .validate(&CommandRequest::argv(argv.iter().copied()).with_cwd("evil"))
            .unwrap();
        let out = policy.run(cmd).await.unwrap();
        assert_ne!(out.exit, Exit::Code(0), "{argv:?}: {out:?}");
        assert!(
            out.stderr.contains("cannot use bare repository")
                && out.stderr.contains("safe.bareRepository"),
            "{argv:?}: {}",
            out.stderr
        );
        assert!(!marker.exists(), "{argv:?} ran the attacker's program");
    }

    // A repository with a work tree still works through the runner.
    let cmd = policy
        .validate(&CommandRequest::argv(["git", "log", "--oneline"]).with_cwd("w"))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "{out:?}");
    assert_eq!(out.stdout.lines().count(), 2, "{}", out.stdout);
}
