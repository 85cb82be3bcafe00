//! Cross-crate and end-to-end tests for agentcaps.
//!
//! - `tests/race.rs`: the tools under a link-swapping race.
//! - `python/mcp_e2e.py`: the independent MCP client (the official Python
//!   SDK), run by `crates/tools/tests/mcp_python.rs`, which can locate the
//!   `agentcaps` binary.
//! - `src/bin/escape_probe.rs`: a helper that tries to escape the shell's
//!   kernel sandbox (used by `agentcaps-shell`'s kernel tests).
//!
//! The library itself is empty on purpose.
#![forbid(unsafe_code)]
