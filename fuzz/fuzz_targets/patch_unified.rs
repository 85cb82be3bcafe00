//! Fuzz the unified diff parser: no panic on any input, and a parsed patch
//! printed and parsed again is the same patch (parse ∘ print ∘ parse =
//! parse), whose printing is stable.
#![no_main]

use agentcaps_patch::Patch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Steer towards the unified parser: a text opening an envelope is the
    // other target's business.
    if text.trim_start().starts_with("*** Begin Patch") {
        return;
    }
    round_trip(text);
});

fn round_trip(text: &str) {
    let Ok(patch) = Patch::parse(text) else {
        return;
    };
    let printed = patch.to_string();
    let again = match Patch::parse(&printed) {
        Ok(p) => p,
        Err(e) => {
            panic!("printed patch does not parse: {e}\n--- input\n{text}\n--- printed\n{printed}")
        }
    };
    assert_eq!(again, patch, "parse(print(p)) != p\n--- printed\n{printed}");
    assert_eq!(again.to_string(), printed, "print is not stable");
}
