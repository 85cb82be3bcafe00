//! `agentcaps check system` on this machine, and in a user namespace
//! where new user namespaces are switched off (`user.max_user_namespaces
//! = 0`, set by `unshare`'s root for that namespace only): the view is
//! then unavailable, and the report names the switch and the fix.
#![cfg(target_os = "linux")]
#![allow(missing_docs)]

use std::process::{Command, Output};

use serde_json::Value;

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&output.stdout));
    })
}

fn here(args: &[&str]) -> Output {
    here_in(args, tempfile::tempdir().unwrap().path())
}

/// `agentcaps ARGS` from `dir`, which is also its temporary directory.
fn here_in(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentcaps"))
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .output()
        .expect("agentcaps runs")
}

/// `agentcaps ARGS` as root of a fresh user namespace in which no further
/// user namespace may be made.
fn without_user_namespaces(args: &[&str]) -> Output {
    without_user_namespaces_in(args, tempfile::tempdir().unwrap().path())
}

/// [`without_user_namespaces`] from `dir`, also its temporary directory.
fn without_user_namespaces_in(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_agentcaps"))
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .output()
        .expect("unshare (util-linux) runs")
}

#[test]
fn this_machine_gives_the_view() {
    let report = json_of(&here(&["check", "system", "--json"]));
    assert_eq!(report["view"]["available"], true, "{report}");
    assert_eq!(report["enforced"], "full", "{report}");
    assert_eq!(report["view"]["causes"], Value::Array(Vec::new()));
    assert!(report["landlock"]["abi"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["seatbelt"]["available"], false);
    assert_eq!(report["job_object"]["available"], false);
    let text = here(&["check", "system"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with("confinement here: full\n"), "{text}");
    assert!(text.contains("private view: available"), "{text}");
    assert!(!text.contains("to enable it"), "{text}");
}

#[test]
fn without_user_namespaces_it_names_the_sysctl_and_prints_the_fix() {
    let report = json_of(&without_user_namespaces(&["check", "system", "--json"]));
    assert_eq!(report["view"]["available"], false, "{report}");
    assert!(
        report["enforced"].as_str().unwrap().starts_with("partial"),
        "{report}"
    );
    let reason = report["enforced_reason"].as_str().unwrap();
    assert!(
        reason.contains("user namespaces are not available"),
        "{reason}"
    );
    assert_eq!(report["facts"]["user.max_user_namespaces"], 0);
    let cause = &report["view"]["causes"][0];
    assert!(
        cause["why"]
            .as_str()
            .unwrap()
            .contains("user.max_user_namespaces is 0"),
        "{report}"
    );
    assert_eq!(
        cause["enable"][0],
        "sudo sysctl -w user.max_user_namespaces=15000"
    );

    let output = without_user_namespaces(&["check", "system"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("private view: unavailable\n"), "{text}");
    assert!(
        text.contains(
            "why: the sysctl user.max_user_namespaces is 0: no user namespace can be created\nto enable it:\n  sudo sysctl -w user.max_user_namespaces=15000\n  echo 'user.max_user_namespaces = 15000' | sudo tee /etc/sysctl.d/60-agentcaps-userns.conf"
        ),
        "{text}"
    );
}

/// The `view-ok-*` records beneath `tmp` (the binary keeps its positive
/// probe verdicts in `tmp/agentcaps-verdicts-UID`).
fn kept_verdicts(tmp: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(tmp).expect("tmp").flatten() {
        if let Ok(inner) = std::fs::read_dir(dir.path()) {
            found.extend(inner.flatten().map(|e| e.path()).filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("view-ok-"))
            }));
        }
    }
    found
}

#[test]
fn a_view_found_here_is_kept_and_no_view_is_never_kept() {
    // Where the view is available, `check system` keeps that verdict.
    let tmp = tempfile::tempdir().unwrap();
    let report = json_of(&here_in(&["check", "system", "--json"], tmp.path()));
    assert_eq!(report["view"]["available"], true, "{report}");
    assert_eq!(kept_verdicts(tmp.path()).len(), 1);
    // Where it is not, nothing is kept.
    let tmp = tempfile::tempdir().unwrap();
    let report = json_of(&without_user_namespaces_in(
        &["check", "system", "--json"],
        tmp.path(),
    ));
    assert_eq!(report["view"]["available"], false, "{report}");
    assert_eq!(kept_verdicts(tmp.path()), Vec::<std::path::PathBuf>::new());
}
