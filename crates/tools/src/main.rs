//! The `agentcaps` command line (not built yet).
#![forbid(unsafe_code)]

fn main() {
    eprintln!("agentcaps: not built yet");
    std::process::exit(1);
}
