//! The integration tests of `agentcaps-paths`: attack corpora (data files in
//! `tests/data/`), the kernel oracle, exact lookup counts, races through
//! `Beneath`, and snapshots of every refusal message.

// The `Beneath` suites are compiled twice on purpose, once per mechanism
// (`openat2` and the component walk).
#![allow(clippy::duplicate_mod)]

mod config;
mod corpus;
mod lookups;
// The kernel's own resolution (`openat2`) is the oracle: Linux only.
#[cfg(target_os = "linux")]
mod oracle;
mod sim_fs;
mod snapshots;

mod component_walk;
mod openat2;
