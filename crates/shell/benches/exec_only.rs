//! What the execute-only wall adds to a run: `cat` of a small file through
//! `ShellPolicy::run`, once as a program that runs nothing by itself (its
//! table says so: the wall goes up) and once with no table (it may start
//! programs: no wall), in its private view and in the Landlock-only
//! fallback. The target: under 1 ms added to a run.
//!
//! The two runs of a pair go back to back so that both see the same load;
//! before criterion runs, the bench prints the medians of interleaved pairs
//! and their difference.
//!
//! `cargo bench -p agentcaps-shell --bench exec_only`

// criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, ShellPolicy, ShellPolicyBuilder, ValidatedCommand, danger};
use criterion::{Criterion, criterion_group, criterion_main};

/// One way of running: the command with the wall, and the same without.
struct Pair {
    name: &'static str,
    walled: (ShellPolicy, ValidatedCommand),
    open: (ShellPolicy, ValidatedCommand),
}

fn pair(name: &'static str, root: &PathBuf, view: bool) -> Pair {
    let builder = || -> ShellPolicyBuilder {
        ShellPolicy::builder(root)
            .allow_command("cat")
            .path_policy(PathPolicy::builder().allow(root).build().expect("paths"))
            .view_helper(env!("CARGO_BIN_EXE_agentcaps-view"))
            .private_view(view)
    };
    let request = CommandRequest::argv(["cat", "notes.txt"]);
    let validated = |policy: ShellPolicy, runs_programs: bool| {
        let command = policy.validate(&request).expect("cat is allowed");
        assert_eq!(command.runs_programs(), runs_programs);
        (policy, command)
    };
    Pair {
        name,
        walled: validated(builder().build().expect("policy"), false),
        open: validated(
            danger::without_default_rules(builder())
                .build()
                .expect("policy"),
            true,
        ),
    }
}

fn run_once(
    runtime: &tokio::runtime::Runtime,
    (policy, command): &(ShellPolicy, ValidatedCommand),
) -> Duration {
    let started = Instant::now();
    let result = runtime.block_on(policy.run(command.clone())).expect("ran");
    assert_eq!(result.stdout, "hello\n", "{result:?}");
    black_box(result);
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("notes.txt"), "hello\n").expect("write");
    let pairs = [
        pair("in the view", &root, true),
        pair("Landlock only", &root, false),
    ];
    for pair in &pairs {
        let walled = run_once(&runtime, &pair.walled);
        let open = run_once(&runtime, &pair.open);
        black_box((walled, open));
    }
    const PAIRS: usize = 200;
    for pair in &pairs {
        let mut walled = Vec::with_capacity(PAIRS);
        let mut open = Vec::with_capacity(PAIRS);
        for i in 0..PAIRS {
            // Alternate which goes first, so neither always follows the other.
            if i % 2 == 0 {
                walled.push(run_once(&runtime, &pair.walled));
                open.push(run_once(&runtime, &pair.open));
            } else {
                open.push(run_once(&runtime, &pair.open));
                walled.push(run_once(&runtime, &pair.walled));
            }
        }
        let (walled, open) = (median(walled), median(open));
        eprintln!(
            "{} ({PAIRS} interleaved pairs): with the wall median {walled:?}, without {open:?}, added {:+.3} ms ({:+.1}%)",
            pair.name,
            (walled.as_secs_f64() - open.as_secs_f64()) * 1e3,
            100.0 * (walled.as_secs_f64() / open.as_secs_f64() - 1.0),
        );
    }
    let mut group = c.benchmark_group("cat in a run");
    group.sample_size(30);
    for pair in &pairs {
        for (label, walled) in [("with the execute-only wall", true), ("without", false)] {
            group.bench_function(format!("{}: {label}", pair.name), |b| {
                b.iter_custom(|iters| {
                    let mut timed = Duration::ZERO;
                    for _ in 0..iters {
                        let with = run_once(&runtime, &pair.walled);
                        let without = run_once(&runtime, &pair.open);
                        timed += if walled { with } else { without };
                    }
                    timed
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
