//! Fuzz target for agentcaps-egress's credential header rewrite.
//!
//! Arbitrary header sets, with and without the placeholder (plain and
//! inside `Authorization: Basic`), toward the bound host or another, over
//! TLS or not, with bound methods and paths or not. Invariants (checked by
//! `rewrite_oracle::violations`, shared with the crate's property test):
//! the real value appears only in requests to the bound host over TLS with
//! a bound method and path; a request without a placeholder passes
//! unchanged; no header is ever lost, duplicated, renamed or moved; every
//! placeholder is replaced; a refusal is a credential rule.
#![no_main]

use std::sync::LazyLock;

use agentcaps_egress::credentials::RunCredentials;
use libfuzzer_sys::fuzz_target;

#[path = "../../crates/egress/tests/egress/rewrite_oracle.rs"]
#[allow(dead_code)]
mod rewrite_oracle;

static RUN: LazyLock<RunCredentials> = LazyLock::new(rewrite_oracle::credentials);

fuzz_target!(|data: &[u8]| {
    let Some(placeholder) = RUN.placeholder("api") else {
        return;
    };
    let Some(case) = rewrite_oracle::case(data, placeholder) else {
        return;
    };
    if let Some(problem) = rewrite_oracle::violations(&RUN, &case) {
        panic!("{problem}");
    }
});
