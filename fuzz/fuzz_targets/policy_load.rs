//! The policy-file loader never panics, and every error it returns for a
//! file's content names the line to fix.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentcaps::Policy;
use libfuzzer_sys::fuzz_target;

fn base() -> &'static PathBuf {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::env::temp_dir().join("agentcaps-fuzz-policy");
        std::fs::create_dir_all(&dir).expect("base dir");
        dir.canonicalize().expect("canonical base")
    })
}

/// Where `create_missing = true` may create directories: a scratch
/// directory emptied before each such input.
fn scratch() -> PathBuf {
    let dir = base().join("create-missing");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Whether every string in `text` is a plain relative path inside the
/// base (no root, drive, home, `..`, backslash or control character), so
/// that `create_missing` can only create directories inside the scratch
/// directory.
fn stays_inside(text: &str) -> bool {
    !text.contains("..")
        && !text.contains('\\')
        && !text.contains('~')
        && !text.contains(':')
        && !text.contains("'/")
        && !text.contains("\"/")
        && !text.contains("'''")
        && !text.contains("\"\"\"")
        && !text.chars().any(|c| c.is_control() && c != '\n')
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let base = if text.contains("create_missing") {
        // `create_missing` creates directories wherever the input says:
        // only inputs whose paths all stay inside the scratch directory.
        if !stays_inside(text) {
            return;
        }
        scratch()
    } else {
        base().clone()
    };
    if let Err(error) = Policy::from_toml(text, &base) {
        assert!(error.line().is_some(), "an error without a line: {error}");
        assert!(!error.to_string().is_empty());
    }
});
