//! `search_files` against ripgrep on the same tree, in the same run, with
//! the policy applied (every file judged, opened beneath the root's handle):
//! interleaved rounds, medians and the ratio. Also the per-call latency of
//! `read_file` through the `Toolbox`.
//!
//! The tree is `AGENTCAPS_BENCH_TREE`, or the cargo registry sources the
//! build downloaded; the pattern `AGENTCAPS_BENCH_PATTERN` (default
//! `impl Drop for`, a few hundred matches, below `max_matches`). ripgrep
//! runs as a process (`rg -n PATTERN TREE`, output discarded), so its
//! figure includes its start-up (a few ms). Run with
//! `cargo bench -p agentcaps-tools --bench search_vs_rg`.

#![allow(missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::json;

const ROUNDS: usize = 11;

fn tree() -> Option<PathBuf> {
    if let Some(tree) = std::env::var_os("AGENTCAPS_BENCH_TREE") {
        return Some(tree.into());
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    let first = std::fs::read_dir(src).ok()?.flatten().next()?;
    Some(first.path())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let Some(tree) = tree().and_then(|t| std::fs::canonicalize(t).ok()) else {
        eprintln!("no tree to search: set AGENTCAPS_BENCH_TREE");
        std::process::exit(1);
    };
    let pattern =
        std::env::var("AGENTCAPS_BENCH_PATTERN").unwrap_or_else(|_| "impl Drop for".into());
    let policy = Policy::from_toml(
        "[files]\nallowed = [\".\"]\nmax_read_bytes = 67108864\n",
        &tree,
    )
    .expect("policy");
    let toolbox = Toolbox::new(&policy, &tree).expect("toolbox");
    // As `agentcaps mcp` runs it: a multi-thread runtime.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let search = || {
        let started = Instant::now();
        let out = rt
            .block_on(toolbox.call(
                "search_files",
                json!({"pattern": pattern, "max_matches": 1000}),
            ))
            .expect("search");
        (started.elapsed(), out)
    };
    let rg = || {
        let started = Instant::now();
        let out = Command::new("rg")
            .args(["-n", "--no-messages", &pattern])
            .arg(&tree)
            .stdout(Stdio::piped())
            .output()
            .expect("run rg (apt-get install ripgrep)");
        (started.elapsed(), out.stdout)
    };
    // Warm the cache, and compare what each found.
    let (_, out) = search();
    let (_, rg_out) = rg();
    let ours = out.structured["matches"].as_array().map_or(0, Vec::len);
    let theirs = rg_out
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    println!(
        "tree {} ({} files searched by search_files, {} skipped); pattern {pattern:?}: search_files {ours} matches (truncated: {}), rg {theirs}",
        tree.display(),
        out.structured["files_searched"],
        out.structured["files_skipped"],
        out.structured["truncated"]
    );
    let mut ours_t = Vec::new();
    let mut rg_t = Vec::new();
    for _ in 0..ROUNDS {
        ours_t.push(search().0);
        rg_t.push(rg().0);
    }
    let (ours_m, rg_m) = (median(ours_t), median(rg_t));
    println!(
        "search_files median {:.1} ms, rg median {:.1} ms, ratio {:.2} ({ROUNDS} interleaved rounds, shared noisy machine)",
        ours_m.as_secs_f64() * 1e3,
        rg_m.as_secs_f64() * 1e3,
        ours_m.as_secs_f64() / rg_m.as_secs_f64()
    );

    // read_file per call, through the Toolbox as the server calls it.
    let file = out.structured["matches"][0]["path"]
        .as_str()
        .unwrap_or("Cargo.toml")
        .to_owned();
    let mut per_call = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..200 {
            rt.block_on(toolbox.call("read_file", json!({"path": file, "max_lines": 50})))
                .expect("read_file");
        }
        per_call.push(started.elapsed() / 200);
    }
    println!(
        "read_file per call (multi-thread runtime, {file}): median {:.1} µs",
        median(per_call).as_secs_f64() * 1e6
    );
}
