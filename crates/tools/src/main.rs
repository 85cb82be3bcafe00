//! The `agentcaps` command line: `check`, `run`, `fetch`, `patch`, `mcp`.
//! Run `agentcaps --help`.
#![forbid(unsafe_code)]

mod cli;

fn main() {
    std::process::exit(cli::main());
}
