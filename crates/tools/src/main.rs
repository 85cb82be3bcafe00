//! The `agentcaps` command line: `check`, `run`, `fetch`, `patch`, `mcp`.
//! Run `agentcaps --help`.
#![forbid(unsafe_code)]

mod cli;

/// mimalloc: the binary allocates many small objects per command (a large
/// patch is tens of thousands), where it is markedly faster than the
/// system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(cli::main());
}
