//! `agentcaps-shell` — **not built yet.**
//!
//! This crate is a placeholder in the workspace: it compiles and exports nothing.
//! Its contract is in SPEC.md §2.
#![forbid(unsafe_code)]
