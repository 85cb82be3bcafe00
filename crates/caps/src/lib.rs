//! `agentcaps` — the facade: re-exports of the agentcaps crates and the one
//! policy file. **Not built yet**: see SPEC.md §5.1.
#![forbid(unsafe_code)]

pub use agentcaps_egress as egress;
pub use agentcaps_patch as patch;
pub use agentcaps_paths as paths;
pub use agentcaps_shell as shell;
