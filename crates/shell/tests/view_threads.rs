//! What the runner starts for a view ends with it: the names layer's
//! server thread is gone once the view is, run after run (an MCP server
//! runs commands for as long as its client lives). Its own test binary,
//! since the threads counted are the whole process's.
#![cfg(all(target_os = "linux", feature = "landlock"))]

#[path = "view/support.rs"]
#[allow(
    dead_code,
    reason = "the view suite's support; this binary uses a part"
)]
mod support;

use support::Project;

/// This process's threads named `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| comm.trim() == name)
        })
        .count()
}

#[test]
fn the_names_layer_server_ends_with_each_view() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    for _ in 0..5 {
        let result = project.sh(&policy, "cat README.md; cat .env");
        assert_eq!(result.stdout, "hello\n", "{result:?}");
        support::assert_full(&result);
    }
    // The kernel ends the layer's connection when the view's mount
    // namespace goes, which the run does not wait for: a moment's grace.
    let start = std::time::Instant::now();
    while threads_named("agentcaps-names") > 0 && start.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(threads_named("agentcaps-names"), 0);
}
