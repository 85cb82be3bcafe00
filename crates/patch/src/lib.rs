//! `agentcaps-patch` — **not built yet.**
//!
//! This crate is a placeholder in the workspace: it compiles and exports nothing.
//! Its contract is in SPEC.md §4.
#![forbid(unsafe_code)]
