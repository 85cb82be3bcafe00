//! Added cost of kernel enforcement per command: spawning `/bin/true`
//! confined by a Landlock domain (build the ruleset, restrict a throwaway
//! thread, spawn, wait) against spawning it plainly, in the same run.
//!
//! A third kind spawns from a throwaway thread *without* a domain, to tell
//! the thread hand-off's cost (which `spawn_confined` needs to keep the
//! caller unrestricted) from the domain's own.
//!
//! The machines are shared and noisy, so every iteration runs the three
//! kinds back to back and each benchmark times one of them: all see the
//! same load. Compare the medians.
//!
//! Under load, spawn times have a long tail (waiting for a CPU), and a
//! criterion sample sums many spawns, so its median carries the tail; the
//! bench therefore also prints, before criterion runs, the median, mean and
//! 90th percentile of single spawns from 400 interleaved triples.
//!
//! `cargo bench -p agentcaps-shell --bench kernel`

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentcaps_shell::kernel::{Enforcement, KernelRules, spawn_confined, would_enforce};
use criterion::{Criterion, criterion_group, criterion_main};

/// How `/bin/true` is spawned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// On the calling thread, no domain: the baseline.
    Plain,
    /// From a throwaway thread, no domain: the thread hand-off alone, to
    /// tell its cost from the domain's.
    Thread,
    /// `spawn_confined`: a throwaway thread restricted by the domain.
    Confined,
}

/// Spawns `/bin/true` as `how` says and waits for it.
async fn spawn_true(how: How, rules: &KernelRules) -> Duration {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/true");
    let status = match how {
        How::Plain => cmd.status().await.expect("spawn /bin/true"),
        How::Thread => {
            let runtime = tokio::runtime::Handle::current();
            let mut child = std::thread::scope(|scope| {
                scope
                    .spawn(|| {
                        let _entered = runtime.enter();
                        cmd.spawn()
                    })
                    .join()
                    .expect("thread")
                    .expect("spawn /bin/true")
            });
            child.wait().await.expect("wait")
        }
        How::Confined => {
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
    for (name, timed_how) in [
        ("plain (baseline)", How::Plain),
        ("thread, no domain", How::Thread),
        ("confined (landlock)", How::Confined),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        for how in [How::Plain, How::Thread, How::Confined] {
                            let took = spawn_true(how, &rules).await;
                            if how == timed_how {
                                timed += took;
                            }
                        }
                    }
                    timed
                })
            })
        });
    }
    group.finish();
}

/// Median, mean and 90th percentile of single spawns of each kind, from
/// interleaved triples.
fn print_single_spawn_stats(runtime: &tokio::runtime::Runtime, rules: &KernelRules) {
    const TRIPLES: usize = 400;
    let mut times: [Vec<Duration>; 3] = Default::default();
    runtime.block_on(async {
        for _ in 0..TRIPLES {
            for (slot, how) in [How::Plain, How::Thread, How::Confined]
                .into_iter()
                .enumerate()
            {
                let took = spawn_true(how, rules).await;
                if let Some(times) = times.get_mut(slot) {
                    times.push(took);
                }
            }
        }
    });
    let [plain, thread, confined] = times.map(|mut times| {
        times.sort();
        let at = |q: usize| {
            times
                .get(times.len() * q / 100)
                .copied()
                .unwrap_or_default()
        };
        let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
        (at(50), mean, at(90))
    });
    let added = |c: Duration, p: Duration| 100.0 * (c.as_secs_f64() / p.as_secs_f64() - 1.0);
    for (name, (median, mean, p90)) in [
        ("plain", plain),
        ("thread, no domain", thread),
        ("confined", confined),
    ] {
        eprintln!(
            "single spawns ({TRIPLES}, interleaved) {name}: median {median:?} ({:+.1}%), mean {mean:?} ({:+.1}%), p90 {p90:?}",
            added(median, plain.0),
            added(mean, plain.1),
        );
    }
}

criterion_group!(benches, spawn);
criterion_main!(benches);
