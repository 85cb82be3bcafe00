//! `escape_probe` — a test helper that tries to escape a kernel sandbox by
//! itself (read, write, connect, signal, …) and reports what the kernel
//! said, one line per operation. See the shared module for the operations.
//!
//! ```text
//! escape_probe read:/etc/hostname connect:127.0.0.1:8080 signal:1234
//! probe: read:/etc/hostname err 13
//! ```

#[path = "../../../crates/shell/tests/kernel/probe.rs"]
#[allow(dead_code, unreachable_pub, missing_docs)]
mod probe;

fn main() {
    std::process::exit(probe::main_with(std::env::args().skip(1)));
}
