//! Fuzz the `*** Begin Patch` envelope parser: no panic on any input, and a
//! parsed patch printed and parsed again is the same patch, whose printing
//! is stable. Inputs are wrapped in the envelope's markers so most reach
//! its body.
#![no_main]

use agentcaps_patch::Patch;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    for text in [
        format!("*** Begin Patch\n{body}\n*** End Patch\n"),
        format!("*** Begin Patch\n{body}"),
    ] {
        let Ok(patch) = Patch::parse(&text) else {
            continue;
        };
        let printed = patch.to_string();
        let again = match Patch::parse(&printed) {
            Ok(p) => p,
            Err(e) => panic!(
                "printed patch does not parse: {e}\n--- input\n{text}\n--- printed\n{printed}"
            ),
        };
        assert_eq!(again, patch, "parse(print(p)) != p\n--- printed\n{printed}");
        assert_eq!(again.to_string(), printed, "print is not stable");
    }
});
