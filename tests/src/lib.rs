//! Shared support for agentcaps' cross-crate and end-to-end tests.
#![forbid(unsafe_code)]
