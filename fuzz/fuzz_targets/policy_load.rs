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

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // `create_missing` creates directories wherever the input says: not on
    // the fuzzing machine.
    if text.contains("create_missing") {
        return;
    }
    if let Err(error) = Policy::from_toml(text, base()) {
        assert!(error.line().is_some(), "an error without a line: {error}");
        assert!(!error.to_string().is_empty());
    }
});
