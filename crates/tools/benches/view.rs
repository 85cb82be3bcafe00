//! The private view's cost, whole-process: `agentcaps run -- cat a.txt`
//! (validate, build the view, run, judge the writes, tear it down) against
//! `agentcaps check shell -- cat a.txt` (the same start-up and validation,
//! nothing run), in the same run. The target: at most 2.5×.
//!
//! The machines are shared and noisy: each iteration runs both back to
//! back so that both see the same load, and before criterion runs the bench
//! prints the medians of 60 interleaved pairs and their ratio.
//!
//! `cargo bench -p agentcaps-tools --bench view`

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "whole_process/mod.rs"]
mod whole_process;
use whole_process::{agentcaps, median, project};

fn once(bin: &Path, dir: &Path, subcommand: &[&str]) -> Duration {
    let started = Instant::now();
    let status = Command::new(bin)
        .args(subcommand)
        .args(["--", "cat", "a.txt"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("agentcaps runs");
    assert!(status.success(), "{subcommand:?} failed");
    started.elapsed()
}

fn interleaved(bin: &Path, dir: &Path) {
    let (mut run, mut check, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..60 {
        let r = once(bin, dir, &["run"]);
        let c = once(bin, dir, &["check", "shell"]);
        ratios.push(r.as_secs_f64() / c.as_secs_f64());
        run.push(r);
        check.push(c);
    }
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or_default();
    println!(
        "60 interleaved pairs: run median {:?}, check shell median {:?}, median ratio run/check {ratio:.2} (target <= 2.5)",
        median(run),
        median(check)
    );
}

fn bench(c: &mut Criterion) {
    let bin = agentcaps();
    let dir = project();
    interleaved(&bin, dir.path());
    let mut group = c.benchmark_group("whole process");
    group.bench_function("agentcaps run -- cat a.txt", |b| {
        b.iter(|| once(&bin, dir.path(), &["run"]));
    });
    group.bench_function("agentcaps check shell -- cat a.txt", |b| {
        b.iter(|| once(&bin, dir.path(), &["check", "shell"]));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
