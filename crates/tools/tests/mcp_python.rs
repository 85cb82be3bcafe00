//! `agentcaps mcp` against the INDEPENDENT official Python MCP SDK
//! (`tests/python/mcp_e2e.py` on stdio and `tests/python/mcp_http_e2e.py`
//! over Streamable HTTP, at the workspace root). This test fails — it
//! never skips — when the SDK cannot be had. It uses `AGENTCAPS_PYTHON` when
//! set; otherwise `target/pyvenv`, which it creates and fills from PyPI
//! (`tests/python/requirements.txt`, pinned) when the SDK is not there yet,
//! so `cargo test --workspace --locked` works on a fresh machine.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn has_sdk(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed while installing the official Python MCP SDK:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The interpreter with the SDK: `AGENTCAPS_PYTHON`, or `target/pyvenv`
/// (created and filled from PyPI if needed).
fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("AGENTCAPS_PYTHON") {
        return python.into();
    }
    let venv = workspace().join("target/pyvenv");
    let python = venv.join("bin/python");
    if !has_sdk(&python) {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
        run(Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(workspace().join("tests/python/requirements.txt")));
    }
    python
}

/// Runs `tests/python/SCRIPT` with the SDK's interpreter against the
/// server; every check in it must pass.
fn run_script(script: &str) {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        probe.status.success(),
        "the official Python MCP SDK is missing for {}: install it with `pip install -r tests/python/requirements.txt`, or set AGENTCAPS_PYTHON.\n{}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let script = workspace().join("tests/python").join(script);
    let out = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_agentcaps"))
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the Python MCP client failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a Windows Python with the MCP SDK; this machine has only Linux's python3 (the rmcp client test drives the same server on Windows)"
)]
fn official_python_sdk_drives_every_tool() {
    run_script("mcp_e2e.py");
}

/// Approvals through the SDK's elicitation callback: approve, decline,
/// cancel, timeout, once and session, a client without elicitation, an
/// approved command still confined, never-askable rules at load, the log.
#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "the approved command is checked for `enforced: full` and its judged write-back, which only the Linux view gives"
)]
fn official_python_sdk_answers_approval_questions() {
    run_script("mcp_approvals.py");
}

/// The other askable rules through the SDK's elicitation callback:
/// `unknown-option`, `name.not-allowed` (a DNS server and an HTTP server on
/// loopback) and `write-protected` (file tools, and a command's write-back:
/// approved changes land in the run's one commit, declined ones not at
/// all), each approved, declined, once and for the session, another action
/// asked again, no elicitation, the log.
#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "the approved command is checked for `enforced: full`, which only the Linux view gives"
)]
fn official_python_sdk_answers_questions_of_every_askable_rule() {
    run_script("mcp_approvals_rules.py");
}

/// Over Streamable HTTP: the tools, the Host/Origin/token gate, roots that
/// narrow, progress, and both protocol versions.
#[test]
#[cfg_attr(
    windows,
    ignore = "needs a Windows Python with the MCP SDK; this machine has only Linux's python3"
)]
fn official_python_sdk_over_http() {
    run_script("mcp_http_e2e.py");
}
