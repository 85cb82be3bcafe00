//! The policy protects itself: in the README's layout (`agentcaps.toml`
//! inside the project, `allowed = ["."]`), no file tool and no patch can
//! rewrite the policy the next run or server start would use, whatever its
//! name; `agentcaps check policy` warns about where it lies.
#![cfg(unix)]

use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::json;

const POLICY: &str = "[files]\nallowed = [\".\"]\n";
/// The same policy kept in the project's `conf/`.
const CONF_POLICY: &str = "[files]\nallowed = [\"..\"]\n";

/// A project directory holding its own policy file `name` (`conf/…`: the
/// project is `..` from it).
fn project(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let project = std::fs::canonicalize(tmp.path()).expect("canonicalize");
    std::fs::create_dir_all(project.join("conf")).expect("mkdir");
    let policy = project.join(name);
    let text = if name.starts_with("conf/") {
        CONF_POLICY
    } else {
        POLICY
    };
    std::fs::write(&policy, text).expect("write policy");
    std::fs::write(project.join("notes.txt"), "notes\n").expect("write");
    (tmp, project, policy)
}

fn toolbox(policy: &Path, project: &Path) -> Toolbox {
    let policy = Policy::load(policy).expect("policy loads");
    Toolbox::new(&policy, project).expect("toolbox")
}

/// Every file tool and a patch try to rewrite, move or replace the policy
/// file `spelling`; each is refused as write-protected and it is unchanged.
async fn cannot_be_rewritten(tools: &Toolbox, policy: &Path, spelling: &str) {
    let before = std::fs::read_to_string(policy).expect("policy");
    let patch = format!(
        "--- a/{spelling}\n+++ b/{spelling}\n@@ -1,2 +1,2 @@\n [files]\n-{old}+allowed = [\"/\"]\n",
        old = before
            .lines()
            .nth(1)
            .map(|l| format!("{l}\n"))
            .unwrap_or_default()
    );
    let envelope = format!("*** Begin Patch\n*** Delete File: {spelling}\n*** End Patch\n");
    let calls = [
        (
            "write_file",
            json!({"path": spelling, "content": "[files]\nallowed = [\"/\"]\n", "overwrite": true}),
        ),
        (
            "edit_file",
            json!({"path": spelling, "old_text": "allowed", "new_text": "read_only"}),
        ),
        ("move_file", json!({"from": spelling, "to": "moved.toml"})),
        ("apply_patch", json!({"patch": patch})),
        ("apply_patch", json!({"patch": envelope})),
    ];
    for (tool, args) in calls {
        let err = tools
            .call(tool, args)
            .await
            .expect_err(&format!("{tool} of {spelling} is refused"));
        assert_eq!(err.rule(), "write-protected", "{tool}: {err}");
        assert_eq!(
            std::fs::read_to_string(policy).expect("policy"),
            before,
            "{tool}"
        );
    }
}

#[tokio::test]
async fn the_policy_file_in_the_project_survives_every_file_tool_and_patch() {
    let (_tmp, project, policy) = project("agentcaps.toml");
    let tools = toolbox(&policy, &project);
    cannot_be_rewritten(&tools, &policy, "agentcaps.toml").await;
    // Nor can another file be moved into its name, or a new policy be
    // written beside it under the default name.
    std::fs::remove_file(project.join("notes.txt")).expect("rm");
    for (tool, args) in [
        (
            "write_file",
            json!({"path": "conf/agentcaps.toml", "content": "[files]\nallowed = [\"/\"]\n"}),
        ),
        (
            "move_file",
            json!({"from": "conf", "to": "elsewhere/agentcaps.toml"}),
        ),
    ] {
        let err = tools.call(tool, args).await.expect_err(tool);
        assert_eq!(err.rule(), "write-protected", "{tool}: {err}");
    }
    // Other files in the project are written as usual.
    tools
        .call(
            "write_file",
            json!({"path": "notes.txt", "content": "ok\n"}),
        )
        .await
        .expect("an ordinary file");
}

#[tokio::test]
async fn a_policy_file_of_any_name_in_use_is_protected_by_path() {
    let (_tmp, project, policy) = project("conf/policy.toml");
    let tools = toolbox(&policy, &project);
    cannot_be_rewritten(&tools, &policy, "conf/policy.toml").await;
    // Moving its directory moves it too.
    let err = tools
        .call("move_file", json!({"from": "conf", "to": "conf2"}))
        .await
        .expect_err("its directory cannot move");
    assert_eq!(err.rule(), "write-protected", "{err}");
    // Reached through a link to it, it is the same file.
    std::os::unix::fs::symlink("conf/policy.toml", project.join("link.toml")).expect("link");
    let err = tools
        .call(
            "write_file",
            json!({"path": "link.toml", "content": "x\n", "overwrite": true}),
        )
        .await
        .expect_err("through a link");
    assert!(
        ["write-protected", "changed"].contains(&err.rule()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&policy).expect("policy"),
        CONF_POLICY
    );
}

#[test]
fn without_the_defaults_the_policy_file_in_use_stays_protected() {
    let (_tmp, project, policy) = project("conf/policy.toml");
    std::fs::write(&policy, "[files]\nallowed = [\"..\"]\ndefaults = false\n").expect("write");
    let loaded = Policy::load(&policy).expect("policy");
    let paths = loaded.path_policy().expect("paths");
    let err = paths
        .check(
            &project,
            "conf/policy.toml",
            agentcaps::paths::Access::Write,
        )
        .expect_err("protected");
    assert_eq!(err.rule(), "write-protected", "{err}");
    assert!(
        paths
            .check(&project, "conf/other.toml", agentcaps::paths::Access::Write)
            .is_ok()
    );
}

#[test]
fn check_policy_warns_when_the_policy_file_lies_in_a_writable_root() {
    let (_tmp, project, policy) = project("agentcaps.toml");
    let check = |policy: &Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentcaps"))
            .args(["check", "policy", "--json", "--policy"])
            .arg(policy)
            .current_dir(&project)
            .output()
            .expect("agentcaps runs");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        (json, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (json, stderr) = check(&policy);
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("lies inside the writable root"), "{json}");
    assert!(stderr.contains("lies inside the writable root"), "{stderr}");
    // Outside the roots it opens: no warning.
    let outside = project.join("conf/outside.toml");
    std::fs::write(
        &outside,
        "[files]\nallowed = [\"../notes-dir\"]\ncreate_missing = true\n",
    )
    .expect("write");
    let (json, _) = check(&outside);
    assert!(
        !json["warnings"].to_string().contains("writable root"),
        "{json}"
    );
}
