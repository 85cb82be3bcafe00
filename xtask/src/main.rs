//! `cargo xtask ci | bench | fuzz`: the workspace's automation.
#![forbid(unsafe_code)]

use std::process::{Command, ExitCode};

fn run(program: &str, args: &[&str]) -> bool {
    eprintln!("xtask: {program} {}", args.join(" "));
    match Command::new(program).args(args).status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("xtask: cannot run {program}: {e}");
            false
        }
    }
}

fn ci() -> bool {
    run("cargo", &["fmt", "--all", "--", "--check"])
        && run(
            "cargo",
            &["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"],
        )
        && run("cargo", &["test", "--workspace", "--locked"])
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ok = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        _ => {
            eprintln!("usage: cargo xtask ci | bench | fuzz [--seconds N]");
            false
        }
    };
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
