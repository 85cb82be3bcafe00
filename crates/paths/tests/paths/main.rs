//! The integration tests of `agentcaps-paths`: attack corpora (data files in
//! `tests/data/`), the kernel oracle, exact lookup counts, races through
//! `Beneath`, and snapshots of every refusal message.

mod beneath;
mod config;
mod corpus;
mod lookups;
mod oracle;
mod race;
mod snapshots;
