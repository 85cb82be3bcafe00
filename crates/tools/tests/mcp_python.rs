//! `agentcaps mcp` against the INDEPENDENT official Python MCP SDK
//! (`tests/python/mcp_e2e.py` at the workspace root). This test fails — it
//! never skips — when the SDK is missing: `.ci/run` installs it into
//! `target/pyvenv`; set `AGENTCAPS_PYTHON` to use another interpreter.

use std::path::PathBuf;
use std::process::Command;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("AGENTCAPS_PYTHON") {
        return python.into();
    }
    let venv = workspace().join("target/pyvenv/bin/python");
    if venv.exists() {
        venv
    } else {
        "python3".into()
    }
}

#[test]
fn official_python_sdk_drives_every_tool() {
    let python = python();
    let probe = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        probe.status.success(),
        "the official Python MCP SDK is missing for {}: run `python3 -m venv target/pyvenv && target/pyvenv/bin/pip install mcp` (as .ci/run does), or set AGENTCAPS_PYTHON.\n{}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr)
    );
    let script = workspace().join("tests/python/mcp_e2e.py");
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
