//! The `agentcaps` command line: `check`, `run`, `fetch`, `patch`, `mcp`.
//! Run `agentcaps --help`.
#![forbid(unsafe_code)]

mod cli;

fn main() {
    // Started as the view helper of a command's private view: build it,
    // run the command, exit. Otherwise this binary becomes the helper.
    agentcaps::shell::kernel::view::dispatch();
    std::process::exit(cli::main());
}
