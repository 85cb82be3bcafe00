//! `cargo xtask ci | bench | fuzz`: the workspace's automation.
//!
//! - `cargo xtask ci` — what `.ci/run` does: rustfmt check, clippy with
//!   warnings as errors, the whole test suite with `--locked`, rustdoc with
//!   warnings as errors, and a packaging check of every publishable crate.
//! - `cargo xtask bench [ARGS...]` — every criterion benchmark (the patch
//!   bench with the release `agentcaps` binary in `AGENTCAPS_BIN`); `ARGS`
//!   go to criterion (e.g. `--warm-up-time 1 --measurement-time 3`).
//! - `cargo xtask fuzz [--seconds N] [TARGET...]` — each fuzz target for `N`
//!   seconds (default 30) with cargo-fuzz on the stable toolchain.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The crates that are published, in dependency order.
const PUBLISHED: &[&str] = &[
    "agentcaps-paths",
    "agentcaps-sandbox",
    "agentcaps-shell",
    "agentcaps-egress",
    "agentcaps-patch",
    "agentcaps",
    "agentcaps-tools",
];

/// The fuzz targets: every `[[bin]]` of `fuzz/Cargo.toml`, read from the
/// manifest so the list cannot drift from it.
fn fuzz_targets(manifest: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(value) = line.strip_prefix("name").filter(|_| in_bin) {
            let name = value.trim_start().trim_start_matches('=').trim();
            targets.push(name.trim_matches('"').to_string());
        }
    }
    targets
}

fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

fn run(cmd: &mut Command) -> bool {
    eprintln!("xtask: {cmd:?}");
    match cmd.current_dir(workspace_root()).status() {
        Ok(s) => s.success(),
        Err(e) => {
            eprintln!("xtask: cannot run {cmd:?}: {e}");
            false
        }
    }
}

fn cargo(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.args(args);
    c
}

fn ci() -> bool {
    let steps: Vec<Command> = vec![
        cargo(&["fmt", "--all", "--", "--check"]),
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
        cargo(&["test", "--workspace", "--locked"]),
        {
            let mut c = cargo(&["doc", "--workspace", "--no-deps", "--locked"]);
            c.env("RUSTDOCFLAGS", "-D warnings");
            c
        },
    ];
    for mut step in steps {
        if !run(&mut step) {
            return false;
        }
    }
    PUBLISHED.iter().all(|p| {
        run(&mut cargo(&[
            "package",
            "-p",
            p,
            "--allow-dirty",
            "--no-verify",
            "--list",
        ]))
    })
}

fn bench(args: &[String]) -> bool {
    // The patch bench also times `agentcaps patch` as a whole process, like
    // GNU patch and git apply, when it is given the release binary.
    if !run(&mut cargo(&[
        "build",
        "--release",
        "--locked",
        "--bin",
        "agentcaps",
    ])) {
        return false;
    }
    // Absolute: the patch bench runs the binary from other directories.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| std::env::current_dir().map_or(dir.clone(), |cwd| cwd.join(dir)))
        .unwrap_or_else(|| workspace_root().join("target"));
    // The bench profile writes to the same `release/` directory and would
    // rebuild the binary there without the release profile's LTO: time a
    // copy of the release build.
    let bin = target.join("xtask-bench").join("agentcaps");
    let copied = std::fs::create_dir_all(target.join("xtask-bench"))
        .and_then(|()| std::fs::copy(target.join("release/agentcaps"), &bin));
    if let Err(e) = copied {
        eprintln!("xtask bench: cannot copy the release binary: {e}");
        return false;
    }
    let mut c = cargo(&["bench"]);
    c.env("AGENTCAPS_BIN", &bin);
    for p in PUBLISHED {
        c.args(["-p", p]);
    }
    // Only the criterion targets: libtest harnesses reject criterion's flags.
    c.args(["--bench", "*", "--"]);
    c.args(args);
    run(&mut c)
}

fn fuzz(args: &[String]) -> bool {
    let mut seconds = 30u64;
    let mut targets: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--seconds" {
            match it.next().and_then(|s| s.parse().ok()) {
                Some(n) => seconds = n,
                None => {
                    eprintln!("xtask fuzz: --seconds needs a number");
                    return false;
                }
            }
        } else {
            targets.push(a.clone());
        }
    }
    if targets.is_empty() {
        let manifest = workspace_root().join("fuzz").join("Cargo.toml");
        match std::fs::read_to_string(&manifest) {
            Ok(text) => targets = fuzz_targets(&text),
            Err(e) => {
                eprintln!("xtask fuzz: cannot read {}: {e}", manifest.display());
                return false;
            }
        }
    }
    let have_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !have_fuzz && !run(&mut cargo(&["install", "cargo-fuzz", "--locked"])) {
        return false;
    }
    targets.iter().all(|t| {
        let max = format!("-max_total_time={seconds}");
        let mut c = cargo(&["fuzz", "run", t, "--", &max]);
        // Only the stable toolchain exists here; cargo-fuzz needs nightly flags.
        c.env("RUSTC_BOOTSTRAP", "1");
        run(&mut c)
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let ok = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench(rest),
        Some("fuzz") => fuzz(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask ci | bench [CRITERION ARGS] | fuzz [--seconds N] [TARGET...]"
            );
            false
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file in `fuzz/fuzz_targets` is a target the xtask runs.
    #[test]
    fn every_fuzz_target_file_is_listed() {
        let root = workspace_root().join("fuzz");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let mut listed = fuzz_targets(&manifest);
        listed.sort();
        let mut files: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".rs").map(str::to_string)
            })
            .collect();
        files.sort();
        assert!(!files.is_empty());
        assert_eq!(listed, files);
    }
}
