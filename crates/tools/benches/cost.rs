//! What a command and a policy load cost, whole-process, in the same run:
//!
//! - `agentcaps run -- cat a.txt` against `bwrap --unshare-all
//!   --die-with-parent` with the same runtime (the view's runtime
//!   directories and `/etc` files), the project, a private `/tmp`, `/proc`
//!   and `/dev`: the target is a median ratio of at most 2;
//! - `agentcaps run -- cat a.txt` against `agentcaps check shell -- cat
//!   a.txt` (the same policy load and judging, and the probe's kept
//!   verdict, without the view): what the view itself adds; the target is
//!   a median ratio of at most 1.5. The bench also prints the floor under
//!   that ratio which the kernel's share sets: 1 + (bwrap − `--version`) /
//!   `check shell`, what any view made of namespaces and mounts adds;
//! - `agentcaps check path a.txt` (load the built-in default policy, judge
//!   one path) against `agentcaps --version` (start and exit): the target
//!   is a median difference of at most 2 ms.
//!
//! The machines are shared and noisy: each iteration runs both members of
//! a pair back to back, so that both see the same load, and the bench
//! prints the medians of 60 interleaved pairs before criterion runs.
//! Needs `bwrap` (Debian and Ubuntu: `apt-get install bubblewrap`); it
//! stops with that message when it is missing.
//!
//! `cargo bench -p agentcaps-tools --bench cost` (or `cargo xtask bench`,
//! which times the release binary).

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentcaps::shell::kernel::{RUNTIME_DIRS, RUNTIME_ETC};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "whole_process/mod.rs"]
mod whole_process;
use whole_process::{agentcaps, median, project};

const PAIRS: usize = 60;

/// The bubblewrap command with the view's binds.
fn bwrap(project: &Path) -> Command {
    let mut cmd = Command::new("bwrap");
    cmd.args(["--unshare-all", "--die-with-parent"]);
    for dir in RUNTIME_DIRS {
        let path = Path::new(dir);
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let to = std::fs::read_link(path).expect("readlink");
                cmd.arg("--symlink").arg(to).arg(path);
            }
            Ok(meta) if meta.is_dir() => {
                cmd.arg("--ro-bind").arg(path).arg(path);
            }
            _ => {}
        }
    }
    for file in RUNTIME_ETC {
        if Path::new(file).exists() {
            cmd.args(["--ro-bind", file, file]);
        }
    }
    cmd.args(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]);
    cmd.arg("--bind").arg(project).arg(project);
    cmd.arg("--chdir").arg(project);
    cmd.args(["cat", "a.txt"]);
    cmd
}

fn timed(mut cmd: Command, what: &str) -> Duration {
    let started = Instant::now();
    let status = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap_or_else(|e| {
            panic!("{what} does not start ({e}); bwrap: apt-get install bubblewrap")
        });
    assert!(status.success(), "{what} failed: {status}");
    started.elapsed()
}

fn ours(bin: &Path, dir: &Path, args: &[&str]) -> Duration {
    let mut cmd = Command::new(bin);
    cmd.args(args).current_dir(dir);
    timed(cmd, &format!("agentcaps {args:?}"))
}

/// Medians of `PAIRS` interleaved runs of `a` and `b`, with the median
/// ratio and difference of the pairs.
fn pairs(
    a: impl Fn() -> Duration,
    b: impl Fn() -> Duration,
) -> (Duration, Duration, f64, Duration) {
    let (mut xs, mut ys, mut ratios, mut diffs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PAIRS {
        let (x, y) = (a(), b());
        ratios.push(x.as_secs_f64() / y.as_secs_f64());
        diffs.push(x.saturating_sub(y));
        xs.push(x);
        ys.push(y);
    }
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or_default();
    (median(xs), median(ys), ratio, median(diffs))
}

fn bench(c: &mut Criterion) {
    let bin = agentcaps();
    let dir = project();
    let dir = dir.path();
    let (run, bw, ratio, _) = pairs(
        || ours(&bin, dir, &["run", "--", "cat", "a.txt"]),
        || timed(bwrap(dir), "bwrap"),
    );
    println!(
        "{PAIRS} interleaved pairs: run median {run:?}, bwrap median {bw:?}, median ratio run/bwrap {ratio:.2} (target <= 2.0)"
    );
    let (run, check_shell, run_over_check, _) = pairs(
        || ours(&bin, dir, &["run", "--", "cat", "a.txt"]),
        || ours(&bin, dir, &["check", "shell", "--", "cat", "a.txt"]),
    );
    println!(
        "{PAIRS} interleaved pairs: run median {run:?}, check shell median {check_shell:?}, median ratio run/check shell {run_over_check:.2} (target <= 1.5)"
    );
    let (check, version, _, diff) = pairs(
        || ours(&bin, dir, &["check", "path", "a.txt"]),
        || ours(&bin, dir, &["--version"]),
    );
    println!(
        "{PAIRS} interleaved pairs: check path median {check:?}, --version median {version:?}, median difference {diff:?} (target <= 2 ms)"
    );
    // A run is a `check shell` and a view: the view costs at least what
    // bubblewrap takes beyond starting a process, so this is the least
    // run/check shell any view built with namespaces and mounts can reach.
    let floor = 1.0 + bw.saturating_sub(version).as_secs_f64() / check_shell.as_secs_f64();
    println!(
        "the floor under run/check shell: 1 + (bwrap median - --version median) / check shell median = {floor:.2}"
    );
    let mut group = c.benchmark_group("whole process");
    group.bench_function("agentcaps run -- cat a.txt", |b| {
        b.iter(|| ours(&bin, dir, &["run", "--", "cat", "a.txt"]));
    });
    group.bench_function("bwrap (the same view) cat a.txt", |b| {
        b.iter(|| timed(bwrap(dir), "bwrap"));
    });
    group.bench_function("agentcaps check shell -- cat a.txt", |b| {
        b.iter(|| ours(&bin, dir, &["check", "shell", "--", "cat", "a.txt"]));
    });
    group.bench_function("agentcaps check path a.txt", |b| {
        b.iter(|| ours(&bin, dir, &["check", "path", "a.txt"]));
    });
    group.bench_function("agentcaps --version", |b| {
        b.iter(|| ours(&bin, dir, &["--version"]));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
