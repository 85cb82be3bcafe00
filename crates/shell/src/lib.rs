//! `agentcaps-shell` — **being built** (issue 3). Contract: SPEC.md §2.
#![forbid(unsafe_code)]

pub mod kernel;
