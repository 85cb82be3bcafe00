//! Added cost of kernel enforcement per command: spawning `/bin/true`
//! confined by a Landlock domain (build the ruleset, restrict a throwaway
//! thread, spawn, wait) against spawning it plainly, in the same run.
//!
//! The machines are shared and noisy, so every iteration runs the plain
//! spawn and the confined spawn back to back and each benchmark times one
//! of the two: both see the same load. Compare the medians.
//!
//! Under load, spawn times have a long tail (waiting for a CPU), and a
//! criterion sample sums many spawns, so its median carries the tail; the
//! bench therefore also prints, before criterion runs, the median, mean and
//! 90th percentile of single spawns from 400 interleaved pairs.
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

    print_single_spawn_stats(&runtime, &rules);

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

/// Median, mean and 90th percentile of single spawns, plain and confined,
/// from interleaved pairs.
fn print_single_spawn_stats(runtime: &tokio::runtime::Runtime, rules: &KernelRules) {
    const PAIRS: usize = 400;
    let (plain, confined): (Vec<_>, Vec<_>) = runtime.block_on(async {
        let mut pairs = Vec::with_capacity(PAIRS);
        for _ in 0..PAIRS {
            pairs.push((spawn_true(None).await, spawn_true(Some(rules)).await));
        }
        pairs.into_iter().unzip()
    });
    let describe = |mut times: Vec<Duration>| {
        times.sort();
        let at = |q: usize| {
            times
                .get(times.len() * q / 100)
                .copied()
                .unwrap_or_default()
        };
        let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
        (at(50), mean, at(90))
    };
    let (plain, confined) = (describe(plain), describe(confined));
    let ratio = |c: Duration, p: Duration| 100.0 * (c.as_secs_f64() / p.as_secs_f64() - 1.0);
    eprintln!(
        "single spawns ({PAIRS} interleaved pairs): plain median {:?} mean {:?} p90 {:?}; \
         confined median {:?} mean {:?} p90 {:?}; added: median {:+.1}%, mean {:+.1}%",
        plain.0,
        plain.1,
        plain.2,
        confined.0,
        confined.1,
        confined.2,
        ratio(confined.0, plain.0),
        ratio(confined.1, plain.1),
    );
}

criterion_group!(benches, spawn);
criterion_main!(benches);
