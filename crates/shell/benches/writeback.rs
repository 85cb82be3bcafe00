//! Committing a command's writes: the write-back of 1000 and of 32 000
//! changed files (scan the staging layer, judge each, stage, exchange,
//! release) against copying the same files with `cp -r`, in the same run.
//! The target: at most 1.5× for both.
//!
//! Each iteration prepares a fresh tree (files of 2 KiB) and a staging
//! layer holding a new version of each, outside the timing; both contenders
//! run back to back so that both see the same load. Before criterion runs,
//! the bench prints, for each count, the medians of interleaved pairs (15
//! for 1000 files, 5 for 32 000) and their median ratio.
//!
//! `cargo bench -p agentcaps-shell --bench writeback` (`WRITEBACK_FILES=N`
//! for one other count)

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentcaps_paths::PathPolicy;
use agentcaps_shell::writeback::write_back_layers;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

/// How many files: 1000 and 32 000, or only `WRITEBACK_FILES`
/// (`WRITEBACK_FILES=5000 cargo bench -p agentcaps-shell --bench writeback`).
fn counts() -> Vec<usize> {
    match std::env::var("WRITEBACK_FILES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        Some(n) => vec![n],
        None => vec![1000, 32_000],
    }
}

struct Trees {
    _dir: tempfile::TempDir,
    root: PathBuf,
    upper: PathBuf,
}

fn trees(files: usize) -> Trees {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().canonicalize().expect("canonical");
    let root = base.join("root");
    let upper = base.join("upper");
    for (tree, fill) in [(&root, b'a'), (&upper, b'b')] {
        std::fs::create_dir_all(tree.join("src")).expect("mkdir");
        for i in 0..files {
            std::fs::write(tree.join(format!("src/f{i}.rs")), vec![fill; 2048]).expect("write");
        }
    }
    Trees {
        _dir: dir,
        root,
        upper,
    }
}

fn commit(trees: &Trees, files: usize) -> Duration {
    let paths = PathPolicy::builder()
        .allow(&trees.root)
        .build()
        .expect("policy");
    let started = Instant::now();
    let changes = write_back_layers(&paths, &[(&trees.root, &trees.upper)], &trees.root);
    let took = started.elapsed();
    assert_eq!(
        changes.applied.len(),
        files,
        "{:?}",
        changes.refused.first()
    );
    took
}

fn copy(trees: &Trees) -> Duration {
    let started = Instant::now();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(trees.upper.join("src"))
        .arg(&trees.root)
        .status()
        .expect("cp");
    let took = started.elapsed();
    assert!(status.success());
    took
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}

fn interleaved(files: usize, pairs: usize) {
    let (mut commits, mut copies, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let a = commit(&trees(files), files);
        let b = copy(&trees(files));
        ratios.push(a.as_secs_f64() / b.as_secs_f64());
        commits.push(a);
        copies.push(b);
    }
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios.get(ratios.len() / 2).copied().unwrap_or_default();
    println!(
        "{pairs} interleaved pairs: write-back of {files} changed files median {:?}, cp -r of them median {:?}, median ratio {ratio:.2} (target <= 1.5)",
        median(commits),
        median(copies)
    );
}

fn bench(c: &mut Criterion) {
    for files in counts() {
        interleaved(files, if files > 10_000 { 5 } else { 15 });
    }
    for files in counts() {
        let mut group = c.benchmark_group(format!("{files} changed files"));
        group.bench_function("write-back (judge + commit)", |b| {
            b.iter_batched(
                || trees(files),
                |t| commit(&t, files),
                BatchSize::PerIteration,
            );
        });
        group.bench_function("cp -r", |b| {
            b.iter_batched(|| trees(files), |t| copy(&t), BatchSize::PerIteration);
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
