//! A link the project already holds at a guarded name (`.cargo -> cfg`,
//! `.github -> gh`) makes an ordinary name a protected one: `write_file`,
//! `edit_file`, `create_directory`, `move_file` and `apply_patch` (dry run
//! included) refuse writing `cfg/config.toml` as they refuse
//! `.cargo/config.toml`, exactly as a command's write-back does. The links
//! are looked for at the first write and again after every command (where
//! there is no view a command makes links in the real tree itself).
#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::{Value, json};

const POLICY: &str =
    "[files]\nallowed = [\"@\"]\n[shell]\nworking_directory = \"@\"\nallowed_commands = [\"ls\"]\n";

fn project() -> (tempfile::TempDir, PathBuf, Toolbox) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let top = std::fs::canonicalize(tmp.path()).expect("canonicalize");
    let project = top.join("project");
    std::fs::create_dir_all(project.join("cfg")).expect("mkdir");
    std::fs::create_dir_all(project.join("gh/workflows")).expect("mkdir");
    std::fs::write(project.join("cfg/config.toml"), "[build]\njobs = 2\n").expect("write");
    std::fs::write(project.join("cfg/notes.txt"), "notes\n").expect("write");
    std::fs::write(project.join("wrapper.toml"), "[build]\n").expect("write");
    let policy_file = top.join("agentcaps.toml");
    std::fs::write(
        &policy_file,
        POLICY.replace('@', &project.display().to_string()),
    )
    .expect("policy");
    let policy = Policy::load(&policy_file).expect("policy loads");
    let tools = Toolbox::new(&policy, &project).expect("toolbox");
    (tmp, project, tools)
}

fn patch_of(path: &str) -> String {
    format!(
        "--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,2 @@\n [build]\n-jobs = 2\n+rustc-wrapper = \"/tmp/evil\"\n"
    )
}

/// Every writing tool aimed at `cfg/config.toml` (and the rest of `cfg`
/// where noted): `(tool, arguments)`.
fn writes() -> Vec<(&'static str, Value)> {
    let evil = "[build]\nrustc-wrapper = \"/tmp/evil\"\n";
    vec![
        (
            "write_file",
            json!({"path": "cfg/config.toml", "content": evil, "overwrite": true}),
        ),
        (
            "edit_file",
            json!({"path": "cfg/config.toml", "old_text": "jobs = 2", "new_text": "rustc-wrapper = \"/tmp/evil\""}),
        ),
        ("apply_patch", json!({"patch": patch_of("cfg/config.toml")})),
        (
            "apply_patch",
            json!({"patch": patch_of("cfg/config.toml"), "dry_run": true}),
        ),
        (
            "move_file",
            json!({"from": "wrapper.toml", "to": "cfg/config.toml"}),
        ),
    ]
}

/// `write_file` of `content` at `path`.
async fn write(
    tools: &Toolbox,
    path: &str,
    content: &str,
    overwrite: bool,
) -> Result<agentcaps_tools::ToolOutput, agentcaps_tools::ToolError> {
    tools
        .call(
            "write_file",
            json!({"path": path, "content": content, "overwrite": overwrite}),
        )
        .await
}

async fn refused_and_unchanged(tools: &Toolbox, project: &Path, link: &str) {
    let before = std::fs::read_to_string(project.join("cfg/config.toml")).expect("read");
    for (tool, args) in writes() {
        let err = tools
            .call(tool, args.clone())
            .await
            .expect_err(&format!("{tool} {args} through {link}"));
        assert_eq!(err.rule(), "write-protected", "{tool}: {err}");
        let text = err.to_string();
        assert!(
            text.contains(link),
            "{tool}: the refusal names the link: {text}"
        );
        assert_eq!(
            std::fs::read_to_string(project.join("cfg/config.toml")).expect("read"),
            before,
            "{tool}"
        );
        assert!(project.join("wrapper.toml").exists(), "{tool}");
    }
}

#[tokio::test]
async fn every_file_tool_refuses_a_name_a_host_link_makes_cargos_config() {
    // Without the link, the write is ordinary (the fixture is fair).
    let (_tmp, _, tools) = project();
    let dry = tools
        .call(
            "apply_patch",
            json!({"patch": patch_of("cfg/config.toml"), "dry_run": true}),
        )
        .await;
    assert!(dry.is_ok(), "{dry:?}");
    let (_tmp, project, tools) = project();
    symlink("cfg", project.join(".cargo")).expect("link");
    refused_and_unchanged(&tools, &project, ".cargo").await;
    // The link's other names stay ordinary.
    write(&tools, "cfg/notes.txt", "more\n", true)
        .await
        .expect("an ordinary file in the same directory is written");
}

#[tokio::test]
async fn a_workflow_written_through_a_github_link_is_refused() {
    let (_tmp, project, tools) = project();
    symlink("gh", project.join(".github")).expect("link");
    let err = write(&tools, "gh/workflows/ci.yml", "on: push\n", false)
        .await
        .expect_err("a workflow through the link");
    assert_eq!(err.rule(), "write-protected", "{err}");
    assert!(!project.join("gh/workflows/ci.yml").exists());
    let err = tools
        .call("create_directory", json!({"path": "gh/workflows/more"}))
        .await
        .expect_err("a directory of workflows through the link");
    assert_eq!(err.rule(), "write-protected", "{err}");
}

#[tokio::test]
async fn a_link_made_by_a_command_is_seen_by_the_next_write() {
    let (_tmp, project, tools) = project();
    write(&tools, "cfg/notes.txt", "first\n", true)
        .await
        .expect("before the link");
    // Made in the real tree, as a command does where there is no view
    // (in a view its link at a guarded name never lands); the toolbox
    // looks again once a command has run.
    symlink("cfg", project.join(".cargo")).expect("link");
    let ls = json!({"command": "ls"});
    tools
        .call("shell_command", ls.clone())
        .await
        .expect("ls runs");
    refused_and_unchanged(&tools, &project, ".cargo").await;
    // And once the link is gone, the name is ordinary again.
    std::fs::remove_file(project.join(".cargo")).expect("rm");
    tools.call("shell_command", ls).await.expect("ls runs");
    write(&tools, "cfg/config.toml", "[build]\n", true)
        .await
        .expect("no link any more");
}

#[tokio::test]
async fn move_file_never_puts_a_link_at_a_guarded_name() {
    let (_tmp, project, tools) = project();
    symlink("cfg", project.join("cfglink")).expect("link");
    let err = tools
        .call("move_file", json!({"from": "cfglink", "to": ".cargo"}))
        .await
        .expect_err("a link moved to .cargo");
    assert_eq!(err.rule(), "write-protected", "{err}");
    assert!(project.join("cfglink").is_symlink());
    assert!(!project.join(".cargo").exists());
}
