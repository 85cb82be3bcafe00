//! The private view and the judged write-back, with real processes: what a
//! command can reach, what outlives it, and which of its writes land.
#![cfg(all(target_os = "linux", feature = "landlock"))]

#[path = "view/support.rs"]
mod support;

#[path = "view/commits.rs"]
mod commits;
#[path = "view/crash.rs"]
mod crash;
#[path = "view/exec_only.rs"]
mod exec_only;
#[path = "view/failclosed.rs"]
mod failclosed;
#[path = "view/fallback.rs"]
mod fallback;
#[path = "view/git.rs"]
mod git;
#[path = "view/installations.rs"]
mod installations;
#[path = "view/isolation.rs"]
mod isolation;
#[path = "view/masking.rs"]
mod masking;
#[path = "view/probe_in_run.rs"]
mod probe_in_run;
#[path = "view/read_only_roots.rs"]
mod read_only_roots;
#[path = "view/real_work.rs"]
mod real_work;
#[path = "view/writeback.rs"]
mod writeback;
