//! Decisions per second for a realistic mix of spellings, against
//! `std::fs::canonicalize` on the same spellings in the same run (the
//! baseline most agent tools use), and lookups per decision.
//!
//! Run: `cargo bench -p agentcaps-paths -- --warm-up-time 1 --measurement-time 3`
//! (warm caches: the tree is built once and every spelling is resolved
//! before measuring).

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::io;
#[cfg(unix)]
use std::os::unix::fs::symlink;
#[cfg(windows)]
use std::os::windows::fs::symlink_dir as symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agentcaps_paths::{Access, EntryKind, FileSystem, PathPolicy, Probe, RealFs};
use criterion::{Criterion, criterion_group, criterion_main};

/// The host's file system, counting lookups (for the report only; the
/// measured runs use `RealFs` directly).
#[derive(Default)]
struct Counting(AtomicU64);

impl FileSystem for Counting {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        RealFs.entry(path)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.0.fetch_add(1, Ordering::Relaxed);
        RealFs.read_link(path)
    }
    fn probes_in_one_lookup(&self) -> bool {
        true
    }
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        self.0.fetch_add(1, Ordering::Relaxed);
        RealFs.probe(path)
    }
}

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

/// A project-like tree: files at the top, a nested source tree, links.
fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(root.join("src/app/module/deep")).unwrap();
    for i in 0..32 {
        std::fs::write(root.join(format!("file{i}.txt")), b"x").unwrap();
        std::fs::write(root.join(format!("src/app/module/deep/m{i}.rs")), b"x").unwrap();
    }
    symlink("src/app/module", root.join("module")).unwrap();
    symlink("module/deep", root.join("deeplink")).unwrap();
    Tree { _tmp: tmp, root }
}

const PLAIN: [&str; 4] = ["file1.txt", "file7.txt", "file19.txt", "file30.txt"];
const NESTED: [&str; 4] = [
    "src/app/module/deep/m1.rs",
    "src/app/module/deep/m9.rs",
    "src/app/module",
    "./src/app/../app/module/deep/m3.rs",
];
const LINKS: [&str; 4] = [
    "module/deep/m2.rs",
    "deeplink/m5.rs",
    "deeplink/../deep/m6.rs",
    "module",
];

fn mix() -> Vec<&'static str> {
    PLAIN.iter().chain(&NESTED).chain(&LINKS).copied().collect()
}

fn compare(c: &mut Criterion, name: &str, spellings: &[&str], tree: &Tree, policy: &PathPolicy) {
    compare_for(c, name, spellings, tree, policy, Access::Read);
}

/// Checks of `spellings` for `access` against `std::fs::canonicalize` of
/// the same spellings, in one group.
fn compare_for(
    c: &mut Criterion,
    name: &str,
    spellings: &[&str],
    tree: &Tree,
    policy: &PathPolicy,
    access: Access,
) {
    let root = &tree.root;
    for spelling in spellings {
        // Every spelling exists, so the baseline does the same work.
        std::fs::canonicalize(root.join(spelling)).unwrap();
        policy.check(root, spelling, access).unwrap();
    }
    let counting = Counting::default();
    for spelling in spellings {
        policy.check_on(&counting, root, spelling, access).unwrap();
    }
    let per = |total: u64| total as f64 / spellings.len() as f64;
    eprintln!(
        "{name}: {:.2} lookups per decision (spelled cost {:.1}, bound with link allowance {:.1})",
        per(counting.0.load(Ordering::Relaxed)),
        per(spellings.iter().map(|s| policy.spelled_cost(s)).sum()),
        per(spellings.iter().map(|s| policy.cost_upper_bound(s)).sum()),
    );
    let mut group = c.benchmark_group(name);
    group.bench_function("check", |b| {
        b.iter(|| {
            for spelling in spellings {
                black_box(policy.check(root, black_box(spelling), access).is_ok());
            }
        })
    });
    group.bench_function("canonicalize", |b| {
        b.iter(|| {
            for spelling in spellings {
                black_box(std::fs::canonicalize(root.join(black_box(spelling))).is_ok());
            }
        })
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    let tree = tree();
    let policy = PathPolicy::builder().allow(&tree.root).build().unwrap();
    compare(c, "plain", &PLAIN, &tree, &policy);
    compare(c, "nested", &NESTED, &tree, &policy);
    compare(c, "links", &LINKS, &tree, &policy);
    compare(c, "mix", &mix(), &tree, &policy);
    // Writes match blocked and write-protected names in every case and
    // Windows alias, whatever the policy's modes: their own figure.
    compare_for(c, "mix-write", &mix(), &tree, &policy, Access::Write);
}

criterion_group!(benches, bench);
criterion_main!(benches);
