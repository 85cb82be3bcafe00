//! `agentcaps-egress` — **not built yet.**
//!
//! This crate is a placeholder in the workspace: it compiles and exports nothing.
//! Its contract is in SPEC.md §3.
#![forbid(unsafe_code)]
