//! Added cost of kernel enforcement per command: spawning `/bin/true`
//! confined by a Landlock domain (build the ruleset, restrict a throwaway
//! thread, spawn, wait) against spawning it plainly, in the same run.
//!
//! The machines are shared and noisy, so every iteration runs the plain
//! spawn and the confined spawn back to back and each benchmark times one
//! of the two: both see the same load. Compare the medians.
//!
//! `cargo bench -p agentcaps-shell --bench kernel`

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentcaps_shell::kernel::{Enforcement, KernelRules, spawn_confined, would_enforce};
use criterion::{Criterion, criterion_group, criterion_main};

/// Spawns `/bin/true` and waits, plainly or confined by `rules`.
async fn spawn_true(rules: Option<&KernelRules>) -> Duration {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/true");
    let status = match rules {
        None => cmd.status().await.expect("spawn /bin/true"),
        Some(rules) => {
            let (mut child, enforced) = spawn_confined(&mut cmd, rules).expect("spawn confined");
            assert_eq!(enforced, Enforcement::Full);
            child.wait().await.expect("wait")
        }
    };
    assert!(black_box(status).success());
    started.elapsed()
}

fn spawn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    // A typical policy: the working tree writable, a toolchain read-only.
    let rules = KernelRules::from_roots(Some([
        (std::env::temp_dir(), true),
        (env!("CARGO_MANIFEST_DIR").into(), false),
    ]))
    .with_program("/bin/true");
    assert_eq!(
        would_enforce(&rules),
        Enforcement::Full,
        "this bench needs Landlock ABI 6+"
    );

    let mut group = c.benchmark_group("spawn /bin/true");
    for (name, time_confined) in [("plain (baseline)", false), ("confined (landlock)", true)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        let plain = spawn_true(None).await;
                        let confined = spawn_true(Some(&rules)).await;
                        timed += if time_confined { confined } else { plain };
                    }
                    timed
                })
            })
        });
    }
    group.finish();
}

criterion_group!(benches, spawn);
criterion_main!(benches);
