//! The runner on Windows (run here under Wine), with real processes:
//! Windows programs found through `PATHEXT`, the environment allow-list
//! (`SystemRoot` included), stdin, output caps, and the Job object that
//! kills a command's whole tree on timeout and when the run is cancelled.
//!
//! Where no Windows program does the job (a process that starts another
//! and reports it, a flood of output), this test binary plays the part: run
//! with `AGENTCAPS_TEST_ROLE` set, its `role_entry` test acts that role and
//! exits.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcaps_shell::{CommandRequest, Exit, ShellPolicy, ShellPolicyBuilder, ValidatedCommand};

const ROLE: &str = "AGENTCAPS_TEST_ROLE";
const TICK_FILE: &str = "AGENTCAPS_TEST_TICK_FILE";

/// This binary's path (the child plays a role: see [`role_argv`]).
fn this_binary() -> PathBuf {
    std::env::current_exe().expect("the test binary's path")
}

/// The argv that runs `role_exe`'s `role_entry` alone, its output not
/// captured by the test harness.
fn role_argv(role_exe: &Path) -> Vec<String> {
    vec![
        role_exe.to_string_lossy().into_owned(),
        "windows_runner::role_entry".to_owned(),
        "--exact".to_owned(),
        "--quiet".to_owned(),
        "--nocapture".to_owned(),
    ]
}

/// The roles this binary plays when a test runs it.
#[test]
fn role_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let code = match role.as_str() {
        "env" => {
            for (name, value) in std::env::vars_os() {
                println!("ENV {}={}", name.to_string_lossy(), value.to_string_lossy());
            }
            0
        }
        "exit3" => {
            eprintln!("failing on purpose");
            3
        }
        "flood" => {
            use std::io::Write;
            let block = vec![b'z'; 64 * 1024];
            let mut out = std::io::stdout().lock();
            for _ in 0..80 {
                if out.write_all(&block).is_err() {
                    break;
                }
            }
            0
        }
        "ticker" => tick(),
        "spawner" | "leaver" => spawn_ticker(role == "spawner"),
        _ => 99,
    };
    std::process::exit(code);
}

/// Appends to the tick file every 20 ms, for at most five minutes.
fn tick() -> i32 {
    use std::io::Write;
    let Some(path) = std::env::var_os(TICK_FILE) else {
        return 98;
    };
    for _ in 0..15_000 {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = file.write_all(b"x");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    0
}

/// Starts a ticker (this binary again), waits until it ticks, says
/// `READY`, then waits forever (`spawner`) or exits at once (`leaver`).
fn spawn_ticker(stay: bool) -> i32 {
    let Some(path) = std::env::var_os(TICK_FILE) else {
        return 98;
    };
    let spawned = std::process::Command::new(this_binary())
        .args([
            "windows_runner::role_entry",
            "--exact",
            "--quiet",
            "--nocapture",
        ])
        .env(ROLE, "ticker")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(ticker) = spawned else {
        return 97;
    };
    for _ in 0..1000 {
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            println!("READY {}", ticker.id());
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // The ticker's handle is dropped, never waited for: it lives on.
    drop(ticker);
    if stay {
        std::thread::sleep(Duration::from_secs(300));
    }
    0
}

struct Dir {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn dir() -> Dir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    Dir { _dir: dir, root }
}

fn policy(root: &Path) -> ShellPolicyBuilder {
    ShellPolicy::builder(root).allow_program(this_binary())
}

/// Whether the tick file stopped growing: its size now and 1.5 s later
/// (a ticker writes every 20 ms) are the same.
fn stopped_ticking(tick: &Path) -> bool {
    std::thread::sleep(Duration::from_millis(500));
    let before = std::fs::metadata(tick).map(|m| m.len()).unwrap_or(0);
    std::thread::sleep(Duration::from_millis(1500));
    let after = std::fs::metadata(tick).map(|m| m.len()).unwrap_or(0);
    before == after
}

#[tokio::test]
async fn a_windows_program_is_found_through_pathext_and_runs() {
    let dir = dir();
    let policy = policy(&dir.root).allow_command("hostname").build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["hostname"]))
        .unwrap();
    let program = cmd.program().to_string_lossy().to_ascii_lowercase();
    assert!(program.ends_with("\\hostname.exe"), "{program}");
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "{out:?}");
    assert!(!out.stdout.trim().is_empty(), "{out:?}");
    assert!(!out.timed_out);
}

#[tokio::test]
async fn a_program_planted_in_the_working_directory_is_never_run() {
    let dir = dir();
    // A `hostname.exe` and `hostname.bat` in the working directory, which
    // Windows' own lookup would try first.
    std::fs::copy(this_binary(), dir.root.join("hostname.exe")).unwrap();
    std::fs::write(dir.root.join("hostname.bat"), "@echo PLANTED\r\n").unwrap();
    let policy = policy(&dir.root)
        .allow_command("hostname")
        .env("PATH", format!(".;;{}", std::env::var("PATH").unwrap()))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["hostname"]))
        .unwrap();
    assert!(!cmd.program().starts_with(&dir.root), "{:?}", cmd.program());
    let out = policy.run(cmd).await.unwrap();
    assert!(!out.stdout.contains("PLANTED"), "{out:?}");
    assert!(!out.stdout.contains("running"), "{out:?}");
}

#[tokio::test]
async fn stdin_is_closed() {
    let dir = dir();
    // `find` with no file reads its standard input.
    let policy = policy(&dir.root)
        .allow_command("find")
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["find", "piped"]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert!(!out.timed_out, "find waited for input: {out:?}");
    assert_eq!(out.stdout, "");
}

#[tokio::test]
async fn stdin_bytes_are_given_where_allowed() {
    let dir = dir();
    let policy = policy(&dir.root)
        .allow_command("find")
        .allow_stdin(true)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["find", "piped"]).with_stdin("not this\r\npiped in\r\n"))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "{out:?}");
    assert_eq!(out.stdout.trim_end(), "piped in");
}

#[tokio::test]
async fn the_environment_is_the_allow_list_with_system_root() {
    // Cargo sets CARGO_MANIFEST_DIR for the test process; it stands for any
    // variable the host did not list.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let dir = dir();
    let policy = policy(&dir.root)
        .env(ROLE, "env")
        .env("PAGER", "more")
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(role_argv(&this_binary())))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "{out:?}");
    let names: Vec<String> = out
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .filter_map(|l| l.split_once('=').map(|(n, _)| n.to_ascii_uppercase()))
        .collect();
    assert!(names.iter().any(|n| n == "SYSTEMROOT"), "{names:?}");
    assert!(names.iter().any(|n| n == "PATH"), "{names:?}");
    assert!(out.stdout.contains("ENV PAGER=more"), "{}", out.stdout);
    assert!(
        !names.iter().any(|n| n == "CARGO_MANIFEST_DIR"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n == "USERPROFILE"), "{names:?}");
}

#[tokio::test]
async fn exit_codes_and_stderr_are_reported() {
    let dir = dir();
    let policy = policy(&dir.root)
        .env(ROLE, "exit3")
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(role_argv(&this_binary())))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(3), "{out:?}");
    assert!(out.stderr.contains("failing on purpose"), "{out:?}");
}

#[tokio::test]
async fn endless_output_is_capped_and_the_child_is_not_blocked() {
    let dir = dir();
    // 5 MB through a pipe: the child only finishes if the runner keeps reading.
    let policy = policy(&dir.root)
        .env(ROLE, "flood")
        .max_output_bytes(1000)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(role_argv(&this_binary())))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.exit, Exit::Code(0), "the child was blocked: {out:?}");
    assert!(!out.timed_out);
    assert!(out.truncated.stdout);
    assert_eq!(out.stdout.len(), 1000);
    assert!(out.stdout.ends_with("zzzz"));
}

#[tokio::test]
async fn timeout_kills_the_whole_tree() {
    let dir = dir();
    let (policy, cmd, tick) = tree_run(&dir, "spawner", Duration::from_secs(8));
    let out = policy.run(cmd).await.unwrap();
    assert!(out.timed_out, "{out:?}");
    // No signals on Windows: the terminated job's processes exit with 1.
    assert_eq!(out.exit, Exit::Code(1), "{out:?}");
    assert!(
        out.stdout.contains("READY"),
        "the grandchild never ticked: {out:?}"
    );
    assert!(
        stopped_ticking(&tick),
        "the grandchild outlived the timeout"
    );
}

#[tokio::test]
async fn a_process_left_behind_at_exit_is_killed_and_does_not_hold_the_run() {
    let dir = dir();
    let (policy, cmd, tick) = tree_run(&dir, "leaver", Duration::from_secs(60));
    let out = policy.run(cmd).await.unwrap();
    assert!(!out.timed_out, "the run waited for the grandchild: {out:?}");
    assert_eq!(out.exit, Exit::Code(0), "{out:?}");
    assert!(out.stdout.contains("READY"), "{out:?}");
    assert!(
        stopped_ticking(&tick),
        "the grandchild outlived the command"
    );
}

#[tokio::test]
async fn a_cancelled_run_kills_the_whole_tree() {
    let dir = dir();
    let (policy, cmd, tick) = tree_run(&dir, "spawner", Duration::from_secs(300));
    let mut run = Box::pin(policy.run(cmd));
    // Cancel (drop the run) once the grandchild ticks.
    let cancelled = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            tokio::select! {
                out = &mut run => return Some(out),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if std::fs::metadata(&tick).is_ok_and(|m| m.len() > 0) {
                        return None;
                    }
                }
            }
        }
    })
    .await;
    assert!(
        matches!(cancelled, Ok(None)),
        "the grandchild never ticked: {cancelled:?}"
    );
    drop(run);
    assert!(
        stopped_ticking(&tick),
        "the grandchild outlived the cancelled run"
    );
}

#[tokio::test]
async fn nothing_is_enforced_by_the_kernel_and_requiring_it_refuses() {
    let dir = dir();
    let policy = policy(&dir.root).allow_command("hostname").build().unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(["hostname"]))
        .unwrap();
    let out = policy.run(cmd).await.unwrap();
    assert_eq!(out.enforced.to_string(), "none");
    assert!(out.enforced_reason.is_some(), "{out:?}");

    let strict = policy_strict(&dir.root);
    let cmd = strict
        .validate(&CommandRequest::argv(["hostname"]))
        .unwrap();
    let err = strict.run(cmd).await.unwrap_err();
    assert_eq!(err.rule(), "require-kernel-enforcement", "{err}");
}

/// This binary run in `role` (`spawner`, `leaver`), its grandchild
/// appending to the returned tick file while it lives.
fn tree_run(dir: &Dir, role: &str, timeout: Duration) -> (ShellPolicy, ValidatedCommand, PathBuf) {
    let tick = dir.root.join("tick");
    let policy = policy(&dir.root)
        .env(ROLE, role)
        .env(TICK_FILE, tick.to_string_lossy())
        .timeout(timeout)
        .build()
        .unwrap();
    let cmd = policy
        .validate(&CommandRequest::argv(role_argv(&this_binary())))
        .unwrap();
    (policy, cmd, tick)
}

fn policy_strict(root: &Path) -> ShellPolicy {
    policy(root)
        .allow_command("hostname")
        .require_kernel_enforcement(true)
        .build()
        .unwrap()
}
