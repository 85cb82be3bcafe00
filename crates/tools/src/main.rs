//! The `agentcaps` command line: `check`, `run`, `fetch`, `patch`, `mcp`.
//! Run `agentcaps --help`.
#![forbid(unsafe_code)]

mod cli;

fn main() {
    // Started as the view helper of a command's private view: build it,
    // run the command, exit. Otherwise this binary becomes the helper.
    agentcaps::shell::kernel::view::dispatch();
    // A view this machine built once is not probed again by every later
    // invocation (only that positive verdict is kept; see the function).
    agentcaps::shell::kernel::view::keep_probe_verdicts_in_temp_dir();
    std::process::exit(cli::main());
}
