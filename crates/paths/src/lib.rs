//! `agentcaps-paths` — not built yet.
#![forbid(unsafe_code)]
