//! The tools under a link-swapping race (DESIGN.md "Races"): while one
//! thread swaps a directory inside the root for a symlink to outside and
//! back, another reads, writes, lists and searches through it thousands of
//! times with the same `Toolbox` an MCP server uses. Nothing outside the
//! root may ever be read or written.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::json;

const ROUNDS: usize = 1500;
const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-4b1d";

/// Swaps `root/dir` between a real directory and a link to `outside`,
/// atomically (rename over), until `stop`.
fn swapper(root: &Path, outside: &Path, stop: &AtomicBool) -> usize {
    let real = root.join("dir.real");
    let link = root.join("dir.link");
    let dir = root.join("dir");
    let mut swaps = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        // Put the link in place, then the real directory back.
        let _ = std::os::unix::fs::symlink(outside, &link);
        if std::fs::rename(&dir, &real).is_ok() {
            let _ = std::fs::rename(&link, &dir);
            // Both states last about as long, so the readers meet both.
            std::thread::sleep(Duration::from_micros(20));
            let _ = std::fs::remove_file(&dir);
            let _ = std::fs::rename(&real, &dir);
        }
        swaps += 1;
        std::thread::sleep(Duration::from_micros(20));
    }
    swaps
}

#[test]
fn link_swapping_never_leaks_or_writes_outside() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let top = std::fs::canonicalize(tmp.path()).expect("canonical");
    let root = top.join("root");
    let outside = top.join("outside");
    std::fs::create_dir_all(root.join("dir")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(root.join("dir/secret.txt"), "inside\n").expect("write");
    std::fs::write(outside.join("secret.txt"), format!("{OUTSIDE_SECRET}\n")).expect("write");

    let policy = Policy::from_toml("[files]\nallowed = [\"root\"]\n", &top).expect("policy");
    let toolbox = Toolbox::new(&policy, &root).expect("toolbox");
    let stop = Arc::new(AtomicBool::new(false));
    let swapping = {
        let (root, outside, stop) = (root.clone(), outside.clone(), Arc::clone(&stop));
        std::thread::spawn(move || swapper(&root, &outside, &stop))
    };

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut leaks = Vec::new();
    let mut allowed_reads = 0;
    let mut failed_reads = 0;
    rt.block_on(async {
        for round in 0..ROUNDS {
            let calls = [
                ("read_file", json!({"path": "dir/secret.txt"})),
                (
                    "write_file",
                    json!({"path": "dir/planted.txt", "content": format!("{round}"), "overwrite": true}),
                ),
                ("list_directory", json!({"path": "dir"})),
                ("search_files", json!({"pattern": "SECRET", "path": "dir"})),
                ("file_info", json!({"path": "dir/secret.txt"})),
            ];
            for (tool, args) in calls {
                let result = toolbox.call(tool, args).await;
                if tool == "read_file" && result.is_err() {
                    failed_reads += 1;
                }
                if let Ok(out) = result {
                    if tool == "read_file" {
                        allowed_reads += 1;
                    }
                    if out.text.contains(OUTSIDE_SECRET) {
                        leaks.push(format!("round {round}: {tool} returned the outside secret"));
                    }
                }
            }
        }
    });
    stop.store(true, Ordering::Relaxed);
    let swaps = swapping.join().expect("swapper");

    let outside_names: Vec<_> = std::fs::read_dir(&outside)
        .expect("read outside")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        outside_names,
        ["secret.txt"],
        "something was written outside the root"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).expect("secret"),
        format!("{OUTSIDE_SECRET}\n"),
        "the outside file was modified"
    );
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    // The race really ran, and the tools still worked when the tree was sane.
    assert!(swaps > 100, "only {swaps} swaps happened");
    assert!(
        allowed_reads > 0 && failed_reads > 0,
        "reads: {allowed_reads} allowed, {failed_reads} refused or failed; both must happen or the race was not met"
    );
}
