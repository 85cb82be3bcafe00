//! The view fails closed: nothing the command can reach speaks for the
//! view, a failed view is an error (never a second run with less), and
//! nothing from outside downgrades a run.

use std::os::unix::fs::PermissionsExt;

use agentcaps_shell::{CommandRequest, ShellPolicy};

use crate::support::{Project, run};

/// A policy that also allows `python3`, an interpreter that can make any
/// system call through `ctypes`.
fn with_python(project: &Project) -> ShellPolicy {
    project
        .policy()
        .allow_command("python3")
        .build()
        .expect("policy")
}

/// Tries every way the second generation's view was taken over from
/// inside: ptrace of the view's first process (PID 1), its descriptors
/// through `pidfd_getfd` and `/proc/1/fd`, its memory, and killing it.
const TAKEOVER: &str = r#"
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def err():
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
r = libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH
print("ptrace", r, err() if r != 0 else "ATTACHED")
pidfd = libc.syscall(434, 1, 0)  # pidfd_open
print("pidfd_open", "ok" if pidfd >= 0 else err())
if pidfd >= 0:
    for fd in range(0, 256):
        got = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
        if got >= 0:
            print("TOOK", fd, os.readlink("/proc/self/fd/%d" % got))
# Its descriptors' numbers may show; none may be opened or followed.
try:
    numbers = os.listdir("/proc/1/fd")
except OSError:
    numbers = []
for what in ["/proc/1/fd/" + n for n in numbers] + ["/proc/1/mem", "/proc/1/environ"]:
    try:
        open(what, "rb").read(1)
        print("OPENED", what)
    except OSError as e:
        print("denied", what, errno.errorcode.get(e.errno))
    try:
        print("FOLLOWED", what, os.readlink(what))
    except OSError:
        pass
try:
    os.kill(1, 9)
    print("signalled")
except OSError as e:
    print("kill", errno.errorcode.get(e.errno))
print("still here")
with open("marker.txt", "a") as f:
    f.write("ran\n")
"#;

#[test]
fn the_command_cannot_take_over_the_views_first_process() {
    let project = Project::new();
    let policy = with_python(&project);
    std::fs::write(project.root.join("takeover.py"), TAKEOVER).expect("script");
    let result = run(&policy, CommandRequest::argv(["python3", "takeover.py"]));
    let out = &result.stdout;
    assert!(out.contains("ptrace -1 EPERM"), "{result:#?}");
    assert!(!out.contains("ATTACHED"), "{out}");
    assert!(
        !out.contains("TOOK"),
        "the command took a descriptor of PID 1: {out}"
    );
    assert!(
        !out.contains("OPENED") && !out.contains("FOLLOWED"),
        "{out}"
    );
    assert!(out.contains("denied /proc/1/mem"), "{out}");
    // Its domain is nested inside PID 1's: it cannot signal it either.
    assert!(out.contains("kill EPERM"), "{out}");
    assert!(out.contains("still here"), "{result:#?}");
    // It ran once, in its view, and its one write landed through the
    // write-back.
    assert_eq!(result.enforced.to_string(), "full", "{result:#?}");
    assert_eq!(project.read("marker.txt").as_deref(), Some("ran\n"));
}

#[test]
fn a_view_that_does_not_confirm_its_walls_fails_and_later_runs_keep_theirs() {
    let project = Project::new();
    // The seam: the view applies no Landlock while the runner plans one.
    let broken = project
        .policy()
        .skip_landlock_in_view(true)
        .build()
        .expect("policy");
    std::fs::write(
        project.root.join("run.sh"),
        "echo ran >> marker.txt; cat .env\n",
    )
    .expect("script");
    let command = broken
        .validate(&CommandRequest::argv(["sh", "run.sh"]))
        .expect("valid");
    let error = broken
        .run_blocking(command)
        .expect_err("a view that did not hold");
    assert_eq!(error.rule(), "view-failed", "{error}");
    insta::assert_snapshot!(error.to_string(), @"the private view applied Landlock `none` where `full` was planned; nothing the command wrote was committed, and it was not run again without its view (rule view-failed). Run it again; if it keeps failing, report it");
    // Nothing was committed, and it was not run again without its view.
    assert_eq!(project.read("marker.txt"), None);
    // And nothing changed for later runs in this process.
    let good = project.policy().build().expect("policy");
    let result = project.sh(
        &good,
        "echo ran >> marker.txt; cat .env || echo no-secret\n",
    );
    assert_eq!(result.enforced.to_string(), "full", "{result:#?}");
    assert!(result.stdout.contains("no-secret"), "{result:#?}");
    assert!(!result.stdout.contains("hunter2"));
    assert_eq!(project.read("marker.txt").as_deref(), Some("ran\n"));
}

#[test]
fn a_staging_base_someone_else_made_first_neither_is_used_nor_downgrades() {
    // The second generation's base was `agentcaps-view-UID` in /tmp: a
    // local user who made it first turned every run into Landlock-only.
    struct Squat(std::path::PathBuf);
    impl Drop for Squat {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let uid = rustix::process::geteuid().as_raw();
    let squat = Squat(std::env::temp_dir().join(format!("agentcaps-view-{uid}")));
    let squatted = &squat.0;
    let _ = std::fs::create_dir(squatted);
    std::fs::set_permissions(squatted, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    if uid == 0 {
        // As root: hand it to nobody, as another user would have it.
        std::os::unix::fs::chown(squatted, Some(65534), Some(65534)).expect("chown");
    }
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(&policy, "cat .env || echo no-secret\n");
    assert_eq!(result.enforced.to_string(), "full", "{result:#?}");
    assert!(!result.stdout.contains("hunter2"), "{result:#?}");
}

#[test]
fn a_command_in_the_view_finds_no_staging_directory_and_no_outcome_file() {
    // What the runner reads (the outcome, the staged writes) is not in the
    // view: the command cannot write its own report.
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let tmp = std::env::temp_dir();
    let result = project.sh(
        &policy,
        &format!("ls {} | grep agentcaps || echo none-here\n", tmp.display()),
    );
    assert!(result.stdout.contains("none-here"), "{result:#?}");
}

#[test]
fn without_a_path_policy_the_network_is_still_private() {
    // No path policy: files are as on the host, but the command still runs
    // in its own namespaces, so `network = "none"` holds for UDP too.
    let host = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    host.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .expect("timeout");
    let port = host.local_addr().expect("addr").port();
    let project = Project::new();
    let policy = ShellPolicy::builder(&project.root)
        .allow_command("python3")
        .view_helper(crate::support::helper())
        .build()
        .expect("policy");
    std::fs::write(
        project.root.join("udp.py"),
        format!(
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             try:\n    s.sendto(b'leak', ('127.0.0.1', {port}))\n    print('sent')\n\
             except OSError as e:\n    print('refused', e)\n"
        ),
    )
    .expect("script");
    let result = run(&policy, CommandRequest::argv(["python3", "udp.py"]));
    let mut buf = [0u8; 16];
    assert!(
        host.recv(&mut buf).is_err(),
        "a datagram reached the host: {result:#?}"
    );
    assert!(result.stdout.contains("sent"), "{result:#?}");
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{result:#?}"
    );
    assert!(
        result
            .enforced_reason
            .as_deref()
            .is_some_and(|r| r.contains("files are not confined")),
        "{result:#?}"
    );
}

#[test]
fn a_fork_bomb_stops_at_max_processes() {
    // Bounded on purpose (200 forks at most), so that a limit that did not
    // hold would not harm the machine: the view must stop it far earlier.
    let project = Project::new();
    let policy = project
        .policy()
        .limits(agentcaps_shell::Limits::default().with_max_processes(32))
        .build()
        .expect("policy");
    // Builtins and redirections only (no fork) record each started job.
    let result = project.sh(
        &policy,
        "i=0; while [ $i -lt 200 ]; do sleep 60 & echo \"$!\" >> pids.txt; i=$((i+1)); done 2>> err.txt\n",
    );
    let pids = project
        .read("pids.txt")
        .unwrap_or_else(|| panic!("{result:#?}"));
    let started: std::collections::BTreeSet<&str> = pids.lines().collect();
    assert!(
        started.len() <= 32,
        "{} processes started: {result:#?}",
        started.len()
    );
    assert!(started.len() >= 20, "the loop hardly ran: {result:#?}");
    let errors = project.read("err.txt").unwrap_or_default();
    assert!(errors.contains("fork"), "{errors}");
}

#[test]
fn a_tmpfs_fill_stops_at_max_tmp_bytes() {
    let project = Project::new();
    let policy = project
        .policy()
        .limits(agentcaps_shell::Limits::default().with_max_tmp_bytes(16 << 20))
        .build()
        .expect("policy");
    let result = project.sh(
        &policy,
        "head -c 100000000 /dev/zero > /tmp/big; echo \"size $(wc -c < /tmp/big)\"\n",
    );
    assert!(
        result.stderr.contains("No space left on device"),
        "{result:#?}"
    );
    let size: u64 = result
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("size "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{result:#?}"));
    assert!(size <= 8 << 20, "{size} bytes in /tmp");
}

#[test]
fn a_timed_out_run_returns_on_time_though_the_command_ignores_sigterm_and_its_children_setsid() {
    let project = Project::new();
    let policy = project
        .policy()
        .timeout(std::time::Duration::from_millis(1500))
        .build()
        .expect("policy");
    let started = std::time::Instant::now();
    let result = project.sh(
        &policy,
        "trap '' TERM\nsetsid sh -c \"trap '' TERM; sleep 987673\" &\necho started\nsleep 987674\n",
    );
    let took = started.elapsed();
    assert!(result.timed_out, "{result:#?}");
    assert!(
        took < std::time::Duration::from_millis(3500),
        "returned after {took:?}"
    );
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).into_owned())
        .filter(|c| c.contains("98767"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

#[test]
fn a_run_that_stages_more_than_max_change_bytes_commits_nothing() {
    let project = Project::new();
    let policy = project
        .policy()
        .limits(agentcaps_shell::Limits::default().with_max_change_bytes(1 << 20))
        .build()
        .expect("policy");
    std::fs::write(
        project.root.join("run.sh"),
        "for n in 1 2 3; do head -c 600000 /dev/zero > big$n; done; echo small > small.txt\n",
    )
    .expect("script");
    let command = policy
        .validate(&CommandRequest::argv(["sh", "run.sh"]))
        .expect("valid");
    let error = policy.run_blocking(command).expect_err("too much staged");
    assert_eq!(error.rule(), "view-failed", "{error}");
    assert!(error.to_string().contains("max_change_bytes"), "{error}");
    assert_eq!(project.read("small.txt"), None);
    assert_eq!(project.read("big1"), None);
}

#[test]
fn where_there_is_no_view_the_result_names_everything_that_is_open() {
    let project = Project::new();
    let policy = project
        .policy()
        .private_view(false)
        .build()
        .expect("policy");
    let result = project.sh(&policy, "echo hi\n");
    let reason = result.enforced_reason.clone().unwrap_or_default();
    for open in [
        "UDP",
        "host UNIX sockets",
        "readable by the program itself",
        "land unjudged",
    ] {
        assert!(reason.contains(open), "{open:?} missing from {reason:?}");
    }
    // The helper's reaper holds the command's processes together and
    // closes the host's descriptors, so neither is listed as open.
    assert!(!reason.contains("outlives it"), "{reason}");
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{result:#?}"
    );
}

#[test]
fn a_helper_built_from_other_sources_builds_no_view() {
    // A helper whose spec names other sources than its own (as one left
    // from another build would find): it refuses the spec, and nothing is
    // run in a view it did not build as its runner planned.
    let project = Project::new();
    let outside = tempfile::tempdir().expect("outside");
    let helper = outside.path().join("helper.sh");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\n\
             [ -f \"$2/spec.json\" ] && /usr/bin/sed -i 's/agentcaps-sandbox-sources:[0-9a-f]*;/agentcaps-sandbox-sources:0123456789abcdef;/' \"$2/spec.json\"\n\
             exec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_agentcaps-view")
        ),
    )
    .expect("helper");
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let policy = project
        .policy()
        .view_helper(&helper)
        .build()
        .expect("policy");
    std::fs::write(project.root.join("run.sh"), "echo ran-5581 > ran.txt\n").expect("script");
    let command = policy
        .validate(&CommandRequest::argv(["sh", "run.sh"]))
        .expect("validated");
    let error = policy.run_blocking(command).expect_err("no view, no run");
    let text = error.to_string();
    assert!(
        text.contains("built from other sources than the runner"),
        "{text}"
    );
    assert!(text.contains("(rule view-failed)"), "{text}");
    assert!(project.read("ran.txt").is_none(), "the command ran: {text}");
}
