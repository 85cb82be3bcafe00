//! `agentcaps-helper`: the view helper of the `agentcaps` binary on its
//! own. Installed beside `agentcaps` (both are binaries of this package),
//! it is what each command's private view starts, in place of the whole
//! command line; without it, `agentcaps` is its own helper.
#![forbid(unsafe_code)]

fn main() {
    let mut args = std::env::args_os().skip(1);
    let stage = args.next().unwrap_or_default();
    match agentcaps::shell::kernel::view::run_if_helper(&stage, args.next()) {
        Some(code) => std::process::exit(code),
        None => {
            eprintln!(
                "agentcaps-helper is started by agentcaps to build a command's private view; it is not meant to be run by hand"
            );
            std::process::exit(2);
        }
    }
}
