//! `agentcaps-view`: the view helper on its own, for hosts that embed the
//! shell crate and do not want to call
//! `agentcaps_shell::kernel::view::dispatch()` in their own `main`. Point
//! `ShellPolicyBuilder::view_helper` at it.
#![forbid(unsafe_code)]

fn main() {
    let mut args = std::env::args_os().skip(1);
    let stage = args.next().unwrap_or_default();
    match agentcaps_shell::kernel::view::run_if_helper(&stage, args.next()) {
        Some(code) => std::process::exit(code),
        None => {
            eprintln!(
                "agentcaps-view is started by the agentcaps shell runner to build a command's private view; it is not meant to be run by hand"
            );
            std::process::exit(2);
        }
    }
}
