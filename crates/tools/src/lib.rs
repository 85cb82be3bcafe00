//! `agentcaps-tools` — agent tools, the MCP server and the `agentcaps` CLI.
//! **Not built yet**: see SPEC.md §5.
#![forbid(unsafe_code)]
