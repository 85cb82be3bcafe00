//! Where no view is built (the host turned it off, or the probe found none),
//! the command still starts under the helper's reaper: it inherits only
//! descriptors 0–2, and nothing it starts outlives it, however detached.

use std::io::Write;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use agentcaps_shell::{CommandRequest, Exit};

use crate::support::{Project, processes_with};

/// A file of the host's, open in this process without close-on-exec (as a
/// host that inherited it, or opened it carelessly, would hold it).
fn inheritable_secret() -> (tempfile::NamedTempFile, std::fs::File) {
    let mut secret = tempfile::NamedTempFile::new().expect("secret");
    secret.write_all(b"host-secret-4471\n").expect("write");
    let file = std::fs::File::open(secret.path()).expect("open");
    rustix::io::fcntl_setfd(file.as_fd(), rustix::io::FdFlags::empty()).expect("inheritable");
    (secret, file)
}

/// The project's policy with the private view turned off by the host (the
/// helper still known, so the reaper runs the command).
fn without_view(project: &Project) -> agentcaps_shell::ShellPolicy {
    project
        .policy()
        .private_view(false)
        .build()
        .expect("policy")
}

#[test]
fn a_descriptor_the_host_left_open_is_not_inherited() {
    let (_secret, file) = inheritable_secret();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let project = Project::new();
    let policy = project
        .policy()
        .allow_command("bash")
        .private_view(false)
        .build()
        .expect("policy");
    // bash, since dash reads no descriptor above 9.
    std::fs::write(
        project.root.join("read.sh"),
        format!("cat <&{fd} 2>/dev/null || echo closed\n"),
    )
    .expect("script");
    let result = crate::support::run(&policy, CommandRequest::argv(["bash", "read.sh"]));
    assert!(!result.stdout.contains("host-secret-4471"), "{result:#?}");
    assert!(result.stdout.contains("closed"), "{result:#?}");
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{result:#?}"
    );
    drop(file);
}

#[test]
fn a_setsid_grandchild_dies_when_the_command_ends() {
    let project = Project::new();
    let policy = without_view(&project);
    let result = project.sh(
        &policy,
        "setsid sh -c '(sleep 987681 &) ; (sleep 987681 &)' ; echo started\n",
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:#?}");
    assert!(result.stdout.contains("started"), "{result:#?}");
    assert_eq!(processes_with("sleep 987681"), Vec::<String>::new());
}

#[test]
fn a_timed_out_run_returns_on_time_and_leaves_nothing_though_the_command_ignores_sigterm() {
    let project = Project::new();
    let policy = project
        .policy()
        .private_view(false)
        .timeout(Duration::from_millis(1500))
        .build()
        .expect("policy");
    let started = Instant::now();
    let result = project.sh(
        &policy,
        "trap '' TERM\nsetsid sh -c \"trap '' TERM; sleep 987692\" &\necho started\nsleep 987693\n",
    );
    let took = started.elapsed();
    assert!(result.timed_out, "{result:#?}");
    assert!(result.stdout.contains("started"), "{result:#?}");
    assert!(
        took < Duration::from_millis(3500),
        "returned after {took:?}"
    );
    assert_eq!(processes_with("sleep 98769"), Vec::<String>::new());
}

#[test]
fn a_cancelled_call_kills_the_detached_too() {
    let project = Project::new();
    let policy = without_view(&project);
    std::fs::write(
        project.root.join("run.sh"),
        "setsid sh -c '(sleep 987684 &)' ; echo started > started.txt; sleep 987684\n",
    )
    .expect("script");
    let command = policy
        .validate(&CommandRequest::argv(["sh", "run.sh"]))
        .expect("validated");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let run = policy.run(command);
        let started = async {
            while !project.root.join("started.txt").exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = run => panic!("the command ended by itself"),
            () = started => {}
        }
    });
    // The reaper was asked to end the tree when the call was dropped.
    let deadline = Instant::now() + Duration::from_secs(2);
    while !processes_with("sleep 987684").is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_with("sleep 987684"), Vec::<String>::new());
}

#[test]
fn the_command_status_and_output_come_through_the_reaper() {
    let project = Project::new();
    let policy = without_view(&project);
    let result = project.sh(&policy, "echo out; echo err >&2; exit 7\n");
    assert_eq!(result.exit, Exit::Code(7), "{result:#?}");
    assert_eq!(result.stdout, "out\n");
    assert_eq!(result.stderr, "err\n");
    let killed = project.sh(&policy, "kill -KILL $$\n");
    assert_eq!(killed.exit, Exit::Signal(9), "{killed:#?}");
    let reason = result.enforced_reason.unwrap_or_default();
    assert!(!reason.contains("outlives it"), "{reason}");
}

#[test]
fn a_helper_that_is_not_one_runs_nothing_in_its_place() {
    // `/bin/true` answers neither probe: the command runs directly (and
    // is not reported as run when it was not), with what is then open.
    let project = Project::new();
    let policy = project
        .policy()
        .private_view(false)
        .view_helper("/bin/true")
        .build()
        .expect("policy");
    let result = project.sh(&policy, "echo ran-4472\n");
    assert_eq!(result.stdout, "ran-4472\n", "{result:#?}");
    let reason = result.enforced_reason.unwrap_or_default();
    assert!(reason.contains("outlives it"), "{reason}");
    assert!(reason.contains("inherits every descriptor"), "{reason}");
}
