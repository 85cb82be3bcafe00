//! The tokenizer never panics, is deterministic, and gives back any argv it
//! quoted itself.
#![no_main]

use agentcaps_shell::{quote, split};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let first = split(line);
    let second = split(line);
    assert_eq!(
        first.as_ref().map_err(|e| e.to_string()),
        second.as_ref().map_err(|e| e.to_string()),
        "split is not deterministic"
    );
    if let Ok(argv) = first {
        assert_eq!(
            split(&quote(&argv)).ok(),
            Some(argv),
            "quote then split changed argv"
        );
    }
    // Treat the input as an argv too (NUL-separated): quoting round-trips.
    let argv: Vec<&str> = line.split('\0').collect();
    if argv.iter().all(|a| !a.is_empty()) {
        let back = split(&quote(&argv)).expect("a quoted argv splits");
        assert_eq!(back, argv);
    }
});
