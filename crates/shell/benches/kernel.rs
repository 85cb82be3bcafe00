//! Added cost of kernel enforcement per command: spawning `/bin/true`
//! confined by a Landlock domain (build the ruleset, restrict a throwaway
//! thread, spawn, wait) against spawning it plainly, in the same run.
//!
//! `cargo bench -p agentcaps-shell --bench kernel`

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::hint::black_box;

use agentcaps_shell::kernel::{KernelRules, spawn_confined, would_enforce};
use criterion::{Criterion, criterion_group, criterion_main};

fn spawn_true(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let root = std::env::temp_dir();
    let rules = KernelRules::from_roots(Some([(root, true)]))
        .with_program("/bin/true")
        .with_read(env!("CARGO_MANIFEST_DIR"));
    eprintln!("kernel enforcement here: {}", would_enforce(&rules));

    let mut group = c.benchmark_group("spawn /bin/true");
    group.bench_function("plain (baseline)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let status = tokio::process::Command::new("/bin/true")
                    .status()
                    .await
                    .expect("spawn /bin/true");
                black_box(status)
            })
        })
    });
    group.bench_function("confined (landlock)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut cmd = tokio::process::Command::new("/bin/true");
                let (mut child, enforced) =
                    spawn_confined(&mut cmd, black_box(&rules)).expect("spawn confined");
                let status = child.wait().await.expect("wait");
                black_box((status, enforced))
            })
        })
    });
    group.finish();
}

criterion_group!(benches, spawn_true);
criterion_main!(benches);
