//! Added cost of kernel enforcement per command: spawning `/bin/true`
//! confined by a Landlock domain against spawning it plainly, in the same
//! run.
//!
//! "confined" is the usual case: the rules are those of the command before
//! (a session's policy), so the command is handed to the confiner already
//! restricted with their domain. "confined, fresh domain" cycles through
//! more rules than are kept, so every command pays for building the
//! ruleset and starting and restricting a new confining thread: the cost
//! of the first command under new rules.
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
    /// `spawn_confined` with the rules of the command before.
    Confined,
    /// `spawn_confined` with rules no confiner or kept ruleset serves.
    Fresh,
}

/// The rules of a typical policy (the working tree writable, a toolchain
/// read-only), and [`CYCLED`] variants of it that each need their own
/// domain.
struct Rules {
    usual: KernelRules,
    cycled: Vec<KernelRules>,
    next: std::cell::Cell<usize>,
    _dirs: tempfile::TempDir,
}

/// More than the confiners and rulesets kept (8 each).
const CYCLED: usize = 12;

impl Rules {
    fn new() -> Self {
        let rules = |root: &std::path::Path| {
            KernelRules::from_roots(Some([
                (root.to_path_buf(), true),
                (env!("CARGO_MANIFEST_DIR").into(), false),
            ]))
            .with_program("/bin/true")
        };
        let dirs = tempfile::tempdir().expect("a temporary directory");
        let cycled = (0..CYCLED)
            .map(|n| {
                let root = dirs.path().join(n.to_string());
                std::fs::create_dir(&root).expect("a root");
                rules(&root)
            })
            .collect();
        Self {
            usual: rules(&std::env::temp_dir()),
            cycled,
            next: std::cell::Cell::new(0),
            _dirs: dirs,
        }
    }

    fn fresh(&self) -> &KernelRules {
        let at = self.next.get();
        self.next.set((at + 1) % CYCLED);
        &self.cycled[at]
    }
}

/// Spawns `/bin/true` as `how` says and waits for it.
async fn spawn_true(how: How, rules: &Rules) -> Duration {
    let started = Instant::now();
    let mut cmd = tokio::process::Command::new("/bin/true");
    let status = match how {
        How::Plain => cmd.status().await.expect("spawn /bin/true"),
        How::Confined | How::Fresh => {
            let rules = if how == How::Fresh {
                rules.fresh()
            } else {
                &rules.usual
            };
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
    let rules = Rules::new();
    assert_eq!(
        would_enforce(&rules.usual),
        Enforcement::Full,
        "this bench needs Landlock ABI 6+"
    );

    print_single_spawn_stats(&runtime, &rules);

    let mut group = c.benchmark_group("spawn /bin/true");
    for (name, timed_how) in [
        ("plain (baseline)", How::Plain),
        ("confined (landlock)", How::Confined),
        ("confined, fresh domain", How::Fresh),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        for how in [How::Plain, How::Confined, How::Fresh] {
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
fn print_single_spawn_stats(runtime: &tokio::runtime::Runtime, rules: &Rules) {
    const TRIPLES: usize = 400;
    let mut times: [Vec<Duration>; 3] = Default::default();
    runtime.block_on(async {
        for _ in 0..TRIPLES {
            for (slot, how) in [How::Plain, How::Confined, How::Fresh]
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
    let [plain, confined, fresh] = times.map(|mut times| {
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
        ("confined", confined),
        ("confined, fresh domain", fresh),
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
