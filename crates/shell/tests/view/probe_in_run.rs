//! The first run of a process is its own probe: its helper tries what a
//! system may refuse before it starts anything of the command, so a run
//! starts the helper once, not twice. It falls back only on what the
//! helper said before the command existed; once the helper passed its
//! probe, whatever happens is the run's failure, never a second run.

use agentcaps_shell::{CommandRequest, Exit, ShellPolicy};
use std::os::unix::fs::PermissionsExt;

use crate::support::{Project, helper, run};

/// A helper of its own path (so this process has not probed it yet) that
/// logs each start's first argument, then does `stage` for the run's
/// outer stage and is the real helper for every other start.
struct Wrapper {
    dir: tempfile::TempDir,
}

impl Wrapper {
    fn new(stage: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = format!(
            "#!/bin/sh\necho \"$1\" >> {log}\nif [ \"$1\" = __agentcaps-view ]; then\n{stage}\nfi\nexec {real} \"$@\"\n",
            log = dir.path().join("log").display(),
            real = helper().display(),
        );
        let path = dir.path().join("helper");
        std::fs::write(&path, script).expect("helper");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Self { dir }
    }

    /// The project's policy, with this helper.
    fn policy(&self, project: &Project) -> ShellPolicy {
        project
            .policy()
            .view_helper(self.dir.path().join("helper"))
            .build()
            .expect("policy")
    }

    /// The first argument of each start, in order.
    fn starts(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[test]
fn the_first_run_is_its_own_probe_and_starts_the_helper_once() {
    let project = Project::new();
    let wrapper = Wrapper::new(":");
    let policy = wrapper.policy(&project);
    let result = run(&policy, CommandRequest::argv(["cat", "README.md"]));
    assert_eq!(result.stdout, "hello\n", "{result:#?}");
    assert_eq!(result.enforced.to_string(), "full", "{result:#?}");
    assert_eq!(wrapper.starts(), ["__agentcaps-view"]);
    // What it found holds for the process: the plan of a command asks
    // no probe, and the next run is not one.
    let validated = policy
        .validate(&CommandRequest::argv(["cat", "README.md"]))
        .expect("valid");
    assert_eq!(policy.planned_enforcement(&validated).0.to_string(), "full");
    let again = run(&policy, CommandRequest::argv(["cat", "README.md"]));
    assert_eq!(again.exit, Exit::Code(0), "{again:#?}");
    assert_eq!(again.enforced.to_string(), "full", "{again:#?}");
    assert_eq!(wrapper.starts(), ["__agentcaps-view", "__agentcaps-view"]);
}

#[test]
fn a_first_run_whose_helper_finds_no_view_falls_back_as_the_probe_says() {
    let project = Project::new();
    // The outer stage says, instead of starting anything, what it says
    // where user namespaces are refused. (And it is no reaper: the
    // fallback's command, under Landlock, could not execute the helper
    // this script starts.)
    let wrapper = Wrapper::new(
        "printf 'unavailable\\nuser namespaces are not available here (test 5531)' > \"$2/probe\"; exit 125\nelif [ \"$1\" = __agentcaps-exec ]; then exit 1",
    );
    let policy = wrapper.policy(&project);
    let result = project.sh(&policy, "echo ran >> marker.txt\n");
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{result:#?}"
    );
    let reason = result.enforced_reason.clone().unwrap_or_default();
    assert!(reason.contains("(test 5531)"), "{reason}");
    // Run once, without its view, as the probe decided.
    assert_eq!(
        project.read("marker.txt").as_deref(),
        Some("ran\n"),
        "{result:#?}"
    );
    let starts = wrapper.starts();
    assert_eq!(
        starts.first().map(String::as_str),
        Some("__agentcaps-view"),
        "{starts:?}"
    );
    assert!(
        !starts.iter().any(|s| s == "__agentcaps-view-probe"),
        "{starts:?}"
    );
    // Later runs and plans of the process say the same, and start no view.
    let validated = policy
        .validate(&CommandRequest::argv(["cat", "README.md"]))
        .expect("valid");
    let planned = policy.planned_enforcement(&validated);
    assert!(planned.1.is_some_and(|r| r.contains("(test 5531)")));
    let later = run(&policy, CommandRequest::argv(["cat", "README.md"]));
    assert_eq!(later.stdout, "hello\n", "{later:#?}");
    let views = wrapper.starts();
    let views = views.iter().filter(|s| *s == "__agentcaps-view");
    assert_eq!(views.count(), 1);
}

#[test]
fn a_first_run_whose_helper_passed_its_probe_fails_rather_than_fall_back() {
    let project = Project::new();
    // The outer stage passes the probe, then ends without starting the
    // view (as a helper killed there would).
    let wrapper = Wrapper::new("echo ok > \"$2/probe\"; exit 125");
    let policy = wrapper.policy(&project);
    std::fs::write(project.root.join("run.sh"), "echo ran >> marker.txt\n").expect("script");
    let command = policy
        .validate(&CommandRequest::argv(["sh", "run.sh"]))
        .expect("valid");
    let error = policy.run_blocking(command).expect_err("no second run");
    assert_eq!(error.rule(), "view-failed", "{error}");
    assert_eq!(project.read("marker.txt"), None);
    assert_eq!(wrapper.starts(), ["__agentcaps-view"]);
}

#[test]
fn a_command_of_the_probing_run_cannot_speak_for_the_probe() {
    let project = Project::new();
    let wrapper = Wrapper::new(":");
    let policy = wrapper.policy(&project);
    // It writes `unavailable` wherever a probe file could be, then fails.
    let result = project.sh(
        &policy,
        "for d in /tmp/agentcaps-* /tmp/agentcaps-*/* \"$TMPDIR\"/agentcaps-*/*; do\n  printf 'unavailable\\nforged' > \"$d/probe\" 2>/dev/null\ndone\necho ran >> marker.txt\nexit 3\n",
    );
    assert_eq!(result.exit, Exit::Code(3), "{result:#?}");
    assert_eq!(result.enforced.to_string(), "full", "{result:#?}");
    assert_eq!(project.read("marker.txt").as_deref(), Some("ran\n"));
    let later = project.sh(&policy, "echo again >> marker.txt\n");
    assert_eq!(later.enforced.to_string(), "full", "{later:#?}");
    assert_eq!(project.read("marker.txt").as_deref(), Some("ran\nagain\n"));
    assert_eq!(wrapper.starts(), ["__agentcaps-view", "__agentcaps-view"]);
}
