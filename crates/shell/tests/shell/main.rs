//! Integration tests of agentcaps-shell: attack tables, exact lookup
//! counts, properties, refusal messages and the runner with real processes.
#![allow(missing_docs)]

mod attacks;
mod config;
mod fixture;
mod git;
mod lookups;
mod messages;
mod properties;
#[cfg(feature = "runner")]
mod runner;
