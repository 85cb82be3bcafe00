//! The `agentcaps` command line: `check`, `run`, `fetch`, `patch`, `mcp`.
//! Run `agentcaps --help`.
#![forbid(unsafe_code)]

mod cli;

/// The name of the view helper installed beside this binary.
const HELPER: &str = "agentcaps-helper";

fn main() {
    // Installed with its helper (`agentcaps-helper`, a small binary of this
    // package): each view starts that, not this whole binary.
    if let Some(helper) = agentcaps::shell::kernel::view::helper_beside_this_executable(HELPER) {
        agentcaps::shell::kernel::view::set_default_helper(helper);
    }
    // Started as the view helper of a command's private view: build it,
    // run the command, exit. Otherwise this binary becomes the helper.
    agentcaps::shell::kernel::view::dispatch();
    // A view this machine built once is not probed again by every later
    // invocation (only that positive verdict is kept; see the function).
    agentcaps::shell::kernel::view::keep_probe_verdicts_in_temp_dir();
    let code = cli::main();
    // Each run's staging is gone with it; the directory beneath which they
    // were made goes with this process.
    agentcaps::shell::kernel::view::remove_staging_base();
    std::process::exit(code);
}
