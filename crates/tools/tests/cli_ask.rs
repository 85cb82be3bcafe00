//! `agentcaps run --ask`: with no terminal it refuses at once (exit 3,
//! `approval-unavailable`); through a real pseudo-terminal (Python's `pty`
//! module) `y` runs the command, still confined, and `n` refuses.
#![allow(missing_docs)]
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs ARGV with its stdin and stderr on a pseudo-terminal and stdout on a
/// pipe; waits for the prompt, types ANSWER, and prints what happened as
/// JSON.
const PTY_DRIVER: &str = r#"
import json, os, pty, select, subprocess, sys, time
cwd, answer, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
child = subprocess.Popen(argv, cwd=cwd, stdin=slave, stderr=slave, stdout=subprocess.PIPE)
os.close(slave)
seen = b""
def read(until, seconds):
    global seen
    deadline = time.time() + seconds
    while until not in seen and time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
read(b"[y = yes", 30)
prompted = b"[y = yes" in seen
os.write(master, answer.encode() + b"\n")
out, _ = child.communicate(timeout=60)
read(b"\0never", 1)
print(json.dumps({"code": child.returncode, "stdout": out.decode(), "tty": seen.decode(errors="replace"), "prompted": prompted}))
"#;

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    policy: PathBuf,
}

fn project(timeout_ms: u64) -> Project {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = dir.path().canonicalize().expect("canonical");
    let root = top.join("root");
    std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
    std::fs::write(root.join("names.txt"), "b\na\n").expect("write");
    let policy = top.join("ask.toml");
    std::fs::write(
        &policy,
        format!(
            "[files]\nallowed = [\"root\"]\n[shell]\nworking_directory = \"root\"\n\
             [approvals]\nask = [\"not-allowed-program\"]\ntimeout_ms = {timeout_ms}\n"
        ),
    )
    .expect("policy");
    Project {
        _dir: dir,
        root,
        policy,
    }
}

fn run_args(p: &Project, ask: bool, argv: &[&str]) -> Vec<String> {
    let mut args = vec!["run".to_owned(), "--json".to_owned()];
    if ask {
        args.push("--ask".to_owned());
    }
    args.extend(["--policy".to_owned(), p.policy.display().to_string()]);
    args.push("--".to_owned());
    args.extend(argv.iter().map(|s| (*s).to_owned()));
    args
}

/// `agentcaps ARGS` with stdin from /dev/null and stderr on a pipe.
fn without_tty(p: &Project, args: &[String]) -> (i32, serde_json::Value, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_agentcaps"))
        .args(args)
        .current_dir(&p.root)
        .stdin(Stdio::null())
        .output()
        .expect("run agentcaps");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), json, started.elapsed())
}

/// `agentcaps ARGS` on a pseudo-terminal, answering `answer`.
fn on_pty(p: &Project, args: &[String], answer: &str) -> serde_json::Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(PTY_DRIVER)
        .arg(&p.root)
        .arg(answer)
        .arg(env!("CARGO_BIN_EXE_agentcaps"))
        .args(args)
        .output()
        .expect("python3 runs the pty driver");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("driver JSON")
}

fn tool_json(v: &serde_json::Value) -> serde_json::Value {
    serde_json::from_str(v["stdout"].as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {v}"))
}

#[test]
fn without_a_terminal_ask_refuses_at_once() {
    // A long timeout: refusing at once is not waiting for it.
    let p = project(60_000);
    let (code, json, took) = without_tty(&p, &run_args(&p, true, &["sort", "names.txt"]));
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["rule"], "approval-unavailable", "{json}");
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("not-allowed-program") && reason.contains("terminal"),
        "{reason}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
}

#[test]
fn ask_changes_nothing_for_an_allowed_command_or_without_the_flag() {
    let p = project(60_000);
    let (code, json, _) = without_tty(&p, &run_args(&p, true, &["cat", "names.txt"]));
    assert_eq!(
        (code, json["decision"].as_str()),
        (0, Some("allow")),
        "{json}"
    );
    let (code, json, _) = without_tty(&p, &run_args(&p, false, &["sort", "names.txt"]));
    assert_eq!(code, 3, "{json}");
    assert_eq!(json["rule"], "not-allowed-program", "{json}");
}

#[test]
fn on_a_terminal_y_runs_the_exact_command() {
    let p = project(60_000);
    let run = on_pty(&p, &run_args(&p, true, &["sort", "names.txt"]), "y");
    assert_eq!(run["code"], 0, "{run}");
    let tty = run["tty"].as_str().unwrap_or_default();
    assert!(
        run["prompted"] == true
            && tty.contains("not-allowed-program")
            && tty.contains("`sort names.txt`")
            && tty.contains(&p.root.display().to_string()),
        "{tty}"
    );
    let json = tool_json(&run);
    assert_eq!(json["result"]["stdout"], "a\nb\n", "{json}");
}

#[test]
fn on_a_terminal_n_refuses() {
    let p = project(60_000);
    for answer in ["n", ""] {
        let run = on_pty(&p, &run_args(&p, true, &["sort", "names.txt"]), answer);
        assert_eq!(run["code"], 3, "{answer:?}: {run}");
        let json = tool_json(&run);
        assert_eq!(json["rule"], "not-allowed-program", "{json}");
        assert!(
            json["reason"]
                .as_str()
                .is_some_and(|r| r.contains("declined")),
            "{json}"
        );
    }
}

#[test]
fn on_a_terminal_no_answer_in_time_refuses() {
    let p = project(1_000);
    // The driver answers only after the prompt; a command that is never
    // answered would be the same, so the answer here comes too late.
    let out = Command::new("python3")
        .arg("-c")
        .arg(PTY_DRIVER.replace(
            "os.write(master, answer.encode()",
            "time.sleep(3); os.write(master, answer.encode()",
        ))
        .arg(&p.root)
        .arg("y")
        .arg(env!("CARGO_BIN_EXE_agentcaps"))
        .args(run_args(&p, true, &["sort", "names.txt"]))
        .output()
        .expect("driver");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).expect("driver JSON");
    assert_eq!(run["code"], 3, "{run}");
    let json = tool_json(&run);
    assert!(
        json["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no answer in time")),
        "{json}"
    );
}

#[test]
fn an_approved_command_is_still_judged_at_write_back() {
    let p = project(60_000);
    let writer = "import os; open(os.path.join('.git', 'hooks', 'x'), 'w').write('pwned'); \
                  open('made.txt', 'w').write('ran')";
    let run = on_pty(&p, &run_args(&p, true, &["python3", "-c", writer]), "y");
    assert_eq!(run["code"], 0, "{run}");
    let json = tool_json(&run);
    assert_eq!(json["result"]["enforced"], "full", "{json}");
    let refused = json["result"]["changes"]["refused"].to_string();
    assert!(
        refused.contains(".git/hooks/x") && refused.contains("write-protected"),
        "{json}"
    );
    assert!(!Path::new(&p.root).join(".git/hooks/x").exists());
    assert!(Path::new(&p.root).join("made.txt").exists());
}
