//! Fuzz target for agentcaps-egress URL judgement.
//!
//! Invariants (checked by `oracle::violations`, shared with the crate's
//! property test):
//! - no input panics `EgressPolicy::check_url`;
//! - a URL judged allowed never denotes a denied address: its IP literal
//!   (if any) is outside every default range, by a second, independent
//!   implementation of the special-purpose ranges;
//! - a host judged to be a name is not an IP literal in disguise, and is
//!   not a special-use or single-label name;
//! - judging is stable: the serialized URL is judged the same way again.
#![no_main]

use std::sync::LazyLock;

use agentcaps_egress::{EgressPolicy, Method};
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/egress/tests/egress/oracle.rs"]
#[allow(dead_code)]
mod oracle;

static POLICY: LazyLock<EgressPolicy> = LazyLock::new(EgressPolicy::default);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(verdict) = POLICY.check_url(text, &Method::GET) else {
        return;
    };
    let again = POLICY
        .check_url(verdict.url(), &Method::GET)
        .map_err(|e| e.to_string());
    if let Some(problem) = oracle::violations(text, &verdict, again) {
        panic!("{problem}");
    }
});
