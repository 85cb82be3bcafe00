//! A large patch — thousands of hunks over hundreds of files, every hunk at
//! an offset — applied by agentcaps and, in the same run on the same input,
//! by GNU `patch -p1 --no-backup-if-mismatch` and `git apply` (whole
//! processes). Each contender starts from a fresh copy of the tree (copying
//! is not timed) and must leave the same tree as the others, checked before
//! timing.
//!
//! `agentcaps/library` is the crate called in-process (parse + judge every
//! path + plan + stage + rename). When `AGENTCAPS_BIN` names the
//! `agentcaps` binary, `agentcaps/process` runs `agentcaps patch -p 1 FILE`
//! as a whole process too, which is the like-for-like comparison.
//!
//! After criterion, `BENCH_ROUNDS` (default 15) rounds of interleaved runs
//! print medians twice: with each tree reset in place between runs, and
//! with a fresh copy per run.
//!
//! Run: `cargo bench -p agentcaps-patch --bench apply` (or `cargo xtask bench`).
//!
//! # Inode churn
//!
//! On ext4 without a journal (as on the machines here), creating a file
//! skips every inode freed in the last ~30 seconds, one buffer lookup
//! each — except inodes freed in the current second. A harness that copies
//! and deletes trees frees thousands of inodes a second, and then file
//! creation dominates every contender's time. `git apply` unlinks all its
//! targets first and creates them again in the same second, reusing those
//! inodes cheaply; agentcaps (and GNU patch) stage new files while the old
//! ones still exist — agentcaps so that a failure can leave the tree
//! untouched — and pay for fresh inodes. Under heavy churn `git apply` wins
//! for that reason alone; on a quiet file system or on tmpfs (set `TMPDIR`)
//! the comparison is of the tools themselves.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentcaps_patch::{ApplyOptions, Patch, PatchPolicyConfig, Patcher};
use agentcaps_paths::PathPolicy;
use criterion::{BatchSize, Criterion};

const FILES: usize = 200;
const LINES: usize = 400;
/// One changed line every `STRIDE` lines: 16 hunks a file, 3200 in all.
const STRIDE: usize = 25;
/// Unrelated lines inserted at the top of every file: every hunk's offset.
const OFFSET: usize = 7;

fn line(file: usize, i: usize) -> String {
    format!("    let value_{i} = compute(\"file {file}\", {i}); // line {i} of the original text\n")
}

/// The tree the patch applies to, the patch, and the tree it must give.
struct Corpus {
    before: PathBuf,
    expected: PathBuf,
    patch_file: PathBuf,
    patch_text: String,
    _dir: tempfile::TempDir,
}

fn corpus() -> Corpus {
    let dir = tempfile::tempdir().expect("tempdir");
    let top = dir.path().canonicalize().expect("canonicalize");
    let (before, expected) = (top.join("before"), top.join("expected"));
    let mut patch = String::new();
    for f in 0..FILES {
        let name = format!("src/module_{:02}/file_{f:03}.rs", f % 20);
        let prefix: String = (0..OFFSET)
            .map(|i| format!("// unrelated header line {i}\n"))
            .collect();
        let original: Vec<String> = (1..=LINES).map(|i| line(f, i)).collect();
        let mut changed = original.clone();
        patch.push_str(&format!(
            "diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
        ));
        for at in (STRIDE / 2..=LINES - 4).step_by(STRIDE) {
            // Change line `at` (1-based) with three lines of context each side.
            let new_line = format!("    let value_{at} = compute_faster(\"file {f}\", {at});\n");
            patch.push_str(&format!("@@ -{},7 +{},7 @@\n", at - 3, at - 3));
            for i in at - 3..at {
                patch.push_str(&format!(" {}", original[i - 1]));
            }
            patch.push_str(&format!("-{}+{}", original[at - 1], new_line));
            for i in at + 1..=at + 3 {
                patch.push_str(&format!(" {}", original[i - 1]));
            }
            changed[at - 1] = new_line;
        }
        for (root, body) in [(&before, &original), (&expected, &changed)] {
            let path = root.join(&name);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, format!("{prefix}{}", body.concat())).expect("write");
        }
    }
    let patch_file = top.join("change.patch");
    std::fs::write(&patch_file, &patch).expect("write patch");
    Corpus {
        before,
        expected,
        patch_file,
        patch_text: patch,
        _dir: dir,
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let dst = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &dst);
        } else {
            std::fs::copy(entry.path(), &dst).expect("copy");
        }
    }
}

/// Every file under `root`, relative to it, sorted.
fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).expect("prefix").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn same_tree(a: &Path, b: &Path) -> bool {
    let (in_a, in_b) = (files(a), files(b));
    in_a == in_b
        && in_a
            .iter()
            .all(|rel| std::fs::read(a.join(rel)).ok() == std::fs::read(b.join(rel)).ok())
}

/// A fresh copy of `before` in a new temporary directory.
fn fresh(before: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir
        .path()
        .canonicalize()
        .expect("canonicalize")
        .join("tree");
    copy_tree(before, &root);
    (dir, root)
}

fn library(patch_text: &str, root: &Path, dry_run: bool) {
    let policy = PathPolicy::builder().allow(root).build().expect("policy");
    let patcher = Patcher::new(policy, PatchPolicyConfig::default());
    let patch = patcher.parse(patch_text).expect("parse");
    let report = patcher
        .apply(
            &patch,
            root,
            ApplyOptions {
                dry_run,
                strip: None,
            },
        )
        .expect("apply");
    black_box(report);
}

fn gnu_patch(patch_file: &Path, root: &Path) {
    let status = Command::new("patch")
        .args(["-p1", "--no-backup-if-mismatch", "--batch", "-s", "-i"])
        .arg(patch_file)
        .current_dir(root)
        .status()
        .expect("run patch");
    assert!(status.success(), "GNU patch failed");
}

fn git_apply(patch_file: &Path, root: &Path) {
    let status = Command::new("git")
        .arg("apply")
        .arg(patch_file)
        .current_dir(root)
        .status()
        .expect("run git");
    assert!(status.success(), "git apply failed");
}

fn agentcaps_process(bin: &Path, patch_file: &Path, root: &Path) {
    let output = Command::new(bin)
        .args(["patch", "-p", "1"])
        .arg(patch_file)
        .current_dir(root)
        .output()
        .expect("run agentcaps");
    assert!(
        output.status.success(),
        "agentcaps patch failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A contender: its name, and how it applies the corpus's patch to a tree.
type Contender<'a> = (&'a str, Box<dyn Fn(&Path) + 'a>);

/// The library, GNU patch, git apply, and the `agentcaps` binary when
/// `bin` names it.
fn contenders<'a>(corpus: &'a Corpus, bin: Option<&'a Path>) -> Vec<Contender<'a>> {
    let patch_file = &corpus.patch_file;
    let mut contenders: Vec<Contender<'a>> = vec![
        (
            "agentcaps/library",
            Box::new(|root: &Path| library(&corpus.patch_text, root, false)),
        ),
        (
            "gnu-patch/process",
            Box::new(|root: &Path| gnu_patch(patch_file, root)),
        ),
        (
            "git-apply/process",
            Box::new(|root: &Path| git_apply(patch_file, root)),
        ),
    ];
    if let Some(bin) = bin {
        contenders.push((
            "agentcaps/process",
            Box::new(move |root: &Path| agentcaps_process(bin, patch_file, root)),
        ));
    }
    contenders
}

fn bench(c: &mut Criterion) {
    let corpus = corpus();
    let patch = Patch::parse(&corpus.patch_text).expect("parse");
    assert_eq!(
        (patch.file_count(), patch.hunk_count()),
        (FILES, FILES * 16)
    );
    let agentcaps_bin = std::env::var_os("AGENTCAPS_BIN").map(PathBuf::from);
    // Same input, same result: checked once per contender before timing.
    let contenders = contenders(&corpus, agentcaps_bin.as_deref());
    for (name, run) in &contenders {
        let (_dir, root) = fresh(&corpus.before);
        run(&root);
        assert!(
            same_tree(&root, &corpus.expected),
            "{name} left a different tree"
        );
    }

    let mut group = c.benchmark_group(format!(
        "apply_{FILES}_files_{}_hunks_offset_{OFFSET}",
        FILES * 16
    ));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(15))
        .warm_up_time(Duration::from_secs(2));
    for (name, run) in &contenders {
        group.bench_function(*name, |b| {
            b.iter_batched(
                || fresh(&corpus.before),
                |(dir, root)| {
                    run(&root);
                    (dir, root) // dropped (deleted) after timing
                },
                BatchSize::PerIteration,
            )
        });
    }
    // Not a contender: the same without writing (parse, judge, plan), to
    // show how the time splits between checking and writing.
    group.bench_function("agentcaps/library-dry-run", |b| {
        b.iter_batched(
            || fresh(&corpus.before),
            |(dir, root)| {
                library(&corpus.patch_text, &root, true);
                (dir, root)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// How each timed run gets its starting tree.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reset {
    /// A fresh copy in a new directory, deleted after the run (as the
    /// criterion benchmarks do). The harness itself then creates and
    /// deletes hundreds of files per run — see "Inode churn" in the module
    /// docs.
    FreshCopy,
    /// One tree per contender, reset after each run by rewriting every
    /// file in place (same inodes): the harness creates and deletes
    /// nothing, so only the contenders' own file creations and deletions
    /// shape the file system.
    InPlace,
}

/// Rewrites `root` to hold exactly `before`'s files, in place: existing
/// files keep their inodes (`std::fs::copy` truncates and writes), files
/// `before` lacks are removed.
fn reset_in_place(before: &Path, root: &Path) {
    for rel in files(root) {
        if !before.join(&rel).is_file() {
            std::fs::remove_file(root.join(&rel)).expect("remove a stray file");
        }
    }
    copy_tree(before, root);
}

/// Round-robin timing: contenders take turns, so a change in the shared
/// machine's load hits them alike. Prints medians and ratios against the
/// faster of GNU patch and git apply.
fn interleaved(corpus: &Corpus, rounds: usize, reset: Reset) {
    let agentcaps_bin = std::env::var_os("AGENTCAPS_BIN").map(PathBuf::from);
    let contenders = contenders(corpus, agentcaps_bin.as_deref());
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); contenders.len()];
    let trees: Vec<(tempfile::TempDir, PathBuf)> = match reset {
        Reset::InPlace => contenders.iter().map(|_| fresh(&corpus.before)).collect(),
        Reset::FreshCopy => Vec::new(),
    };
    for round in 0..rounds {
        for i in 0..contenders.len() {
            // Rotate the order each round as well.
            let slot = (i + round) % contenders.len();
            let (name, run) = &contenders[slot];
            let (dir, root) = match trees.get(slot) {
                Some((_, root)) => {
                    reset_in_place(&corpus.before, root);
                    assert!(same_tree(root, &corpus.before), "{name}: reset failed");
                    (None, root.clone())
                }
                None => {
                    let (dir, root) = fresh(&corpus.before);
                    (Some(dir), root)
                }
            };
            let started = std::time::Instant::now();
            run(&root);
            times[slot].push(started.elapsed());
            drop(dir);
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let medians: Vec<Duration> = times.iter_mut().map(median).collect();
    let baseline = medians[1].min(medians[2]);
    println!(
        "interleaved, {rounds} rounds, {FILES} files, {} hunks each at offset {OFFSET}, {}:",
        FILES * 16,
        match reset {
            Reset::FreshCopy => "a fresh copy of the tree per run",
            Reset::InPlace => "each tree reset in place after its run",
        }
    );
    for ((name, _), m) in contenders.iter().zip(&medians) {
        println!(
            "  {name:<20} median {:>8.2} ms   ratio to the faster of GNU patch / git apply: {:.2}",
            m.as_secs_f64() * 1e3,
            m.as_secs_f64() / baseline.as_secs_f64()
        );
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    let rounds = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    if rounds > 0 {
        let corpus = corpus();
        interleaved(&corpus, rounds, Reset::InPlace);
        interleaved(&corpus, rounds, Reset::FreshCopy);
    }
}
