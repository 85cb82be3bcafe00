//! Real git under the development preset: clones, remotes, tracking
//! branches and `user.*` land and work from the host afterwards; what
//! would make the host's next git run a program never lands.

use std::path::Path;
use std::time::Duration;

use agentcaps_shell::{ShellPolicy, danger};

use crate::support::{Project, applied, helper, refused_rule};

fn development(project: &Project) -> ShellPolicy {
    danger::development(&project.root)
        .allow_command("sh")
        .path_policy(project.paths())
        .view_helper(helper())
        .timeout(Duration::from_secs(60))
        .build()
        .expect("policy")
}

/// Host git in `dir`: whether it succeeded, and its standard output.
fn host_git(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    )
}

/// The project with a real repository (one commit) in place of its stand-in
/// `.git`.
fn repository() -> Project {
    let project = Project::new();
    std::fs::remove_dir_all(project.root.join(".git")).expect("fresh repo");
    for args in [
        &["init", "-q", "-b", "main", "."][..],
        &["add", "README.md", "src"],
    ] {
        assert!(host_git(&project.root, args).0, "git {args:?}");
    }
    commit_on_host(&project, "first");
    project
}

/// Commits what is staged on the host.
fn commit_on_host(project: &Project, message: &str) {
    let args = [
        "-c",
        "user.email=t@example.invalid",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        message,
    ];
    assert!(host_git(&project.root, &args).0, "git {args:?}");
}

#[test]
fn a_clone_its_remotes_tracking_branches_and_user_email_land_and_work_from_the_host() {
    let project = repository();
    let policy = development(&project);
    let result = project.sh(
        &policy,
        "git clone -q --no-hardlinks . copy && cd copy && git remote add mirror ../ && \
         git branch -q --track feature origin/main && git config user.email agent@example.invalid && \
         echo cloned",
    );
    assert!(result.stdout.contains("cloned"), "{result:#?}");
    assert!(
        applied(&result, "copy/.git/config"),
        "{:#?}",
        result.changes
    );
    let copy = project.root.join("copy");
    let (_, remotes) = host_git(&copy, &["remote"]);
    assert_eq!(remotes, "mirror\norigin");
    assert_eq!(
        host_git(&copy, &["config", "user.email"]).1,
        "agent@example.invalid"
    );
    assert_eq!(
        host_git(&copy, &["rev-parse", "--abbrev-ref", "feature@{upstream}"]).1,
        "origin/main"
    );
    assert!(host_git(&copy, &["status", "--short"]).0);
    assert_eq!(host_git(&copy, &["log", "--format=%s"]).1, "first");
    // Its sample hooks never land.
    assert!(!copy.join(".git/hooks/pre-commit.sample").exists());

    let result = project.sh(
        &policy,
        "cd copy && git config core.fsmonitor ./evil; echo set",
    );
    assert!(result.stdout.contains("set"), "{result:#?}");
    assert_eq!(
        refused_rule(&result, "copy/.git/config").as_deref(),
        Some("git-config-key"),
        "{:#?}",
        result.changes
    );
    let refused = result.changes.as_ref().expect("changes");
    assert!(
        refused
            .refused
            .iter()
            .any(|c| c.reason.contains("core.fsmonitor")),
        "the refusal names the key: {refused:#?}"
    );
    assert_eq!(
        host_git(&copy, &["config", "core.fsmonitor"]),
        (false, String::new())
    );
    assert_eq!(
        host_git(&copy, &["config", "user.email"]).1,
        "agent@example.invalid"
    );
}

#[test]
fn every_way_to_point_git_at_a_config_or_hooks_of_the_commands_own_is_refused() {
    let project = repository();
    let policy = development(&project);
    let result = project.sh(
        &policy,
        "mkdir -p evil/hooks && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config && \
         echo ../evil > .git/commondir; \
         mkdir -p .git/modules/sub/hooks && cp evil/config .git/modules/sub/config && \
         echo 'touch pwned' > .git/modules/sub/hooks/post-checkout; \
         mkdir -p .git/worktrees/wt && echo ../../../evil > .git/worktrees/wt/commondir && \
         echo /x/.git > .git/worktrees/wt/gitdir; \
         mkdir -p sub && printf 'gitdir: ../evil\\n' > sub/.git; \
         printf '[include]\\n\\tpath = ../evil/config\\n' >> .git/config; \
         echo 'touch pwned' > .git/hooks/post-checkout; echo done",
    );
    assert!(result.stdout.contains("done"), "{result:#?}");
    let changes = result.changes.as_ref().expect("changes");
    for (path, rule) in [
        (".git/commondir", "write-protected"),
        (".git/modules/sub/config", "git-config-key"),
        (".git/modules/sub/hooks/post-checkout", "write-protected"),
        (".git/worktrees/wt/commondir", "write-protected"),
        (".git/worktrees/wt/gitdir", "write-protected"),
        ("sub/.git", "write-protected"),
        (".git/config", "git-config-key"),
        (".git/hooks/post-checkout", "write-protected"),
    ] {
        assert_eq!(
            refused_rule(&result, path).as_deref(),
            Some(rule),
            "{path}: {changes:#?}"
        );
        if path != ".git/config" {
            assert!(!project.root.join(path).exists(), "{path} landed");
        }
    }
    // The command's own directory lands; nothing points git at it.
    assert!(applied(&result, "evil/config"), "{changes:#?}");
    assert_eq!(
        host_git(&project.root, &["config", "core.fsmonitor"]),
        (false, String::new())
    );
    assert_eq!(
        host_git(&project.root, &["config", "include.path"]),
        (false, String::new())
    );
    assert!(host_git(&project.root, &["status", "--short"]).0);
    assert!(!project.root.join("pwned").exists());
}

#[test]
fn an_ordinary_commit_lands_and_the_host_sees_it() {
    let project = repository();
    let policy = development(&project);
    let result = project.sh(
        &policy,
        "echo 'fn two() {}' >> src/main.rs && git -c user.email=a@b -c user.name=a commit -qam second && echo ok",
    );
    assert!(result.stdout.contains("ok"), "{result:#?}");
    let changes = result.changes.as_ref().expect("changes");
    assert!(
        changes
            .refused
            .iter()
            .all(|c| c.path.starts_with(".git/hooks") || c.path.starts_with(".git/info")),
        "{changes:#?}"
    );
    assert_eq!(
        host_git(&project.root, &["log", "--format=%s"]).1,
        "second\nfirst"
    );
    let (_, status) = host_git(&project.root, &["status", "--short"]);
    assert!(
        status.lines().all(|line| line.starts_with("??")),
        "the work tree is what was committed: {status}"
    );
}

/// The host's `HEAD` commit.
fn head(project: &Project) -> String {
    let (ok, head) = host_git(&project.root, &["rev-parse", "HEAD"]);
    assert!(ok, "rev-parse HEAD");
    head
}

/// The refusal at `path`: its rule and reason.
fn refusal(result: &agentcaps_shell::RunResult, path: &str) -> (String, String) {
    let changes = result.changes.as_ref().expect("changes");
    changes
        .refused
        .iter()
        .find(|c| c.path == path)
        .map(|c| (c.rule.clone(), c.reason.clone()))
        .unwrap_or_else(|| panic!("{path} was not refused: {changes:#?}"))
}

/// Runs `script` in `project`'s repository and asserts that the index and
/// the branch it changed were refused by `rule`, naming `path`, with the
/// host's `HEAD` where it was. Returns the run and the refusal of the ref.
fn refused_record(
    project: &Project,
    script: &str,
    rule: &str,
    path: &str,
) -> (agentcaps_shell::RunResult, String, String) {
    let before = head(project);
    let result = project.sh(&development(project), script);
    assert!(result.stdout.contains("recorded"), "{result:#?}");
    let (ref_rule, ref_reason) = refusal(&result, ".git/refs/heads/main");
    let (index_rule, index_reason) = refusal(&result, ".git/index");
    for (got, reason) in [(&ref_rule, &ref_reason), (&index_rule, &index_reason)] {
        assert_eq!(got, rule, "{reason}");
        assert!(
            reason.contains(&format!("`{path}`")),
            "names {path}: {reason}"
        );
    }
    assert!(
        ref_reason.starts_with("commit "),
        "names the commit: {ref_reason}"
    );
    assert_eq!(head(project), before, "the branch did not move");
    (result, ref_reason, index_reason)
}

#[test]
fn a_workflow_recorded_through_git_plumbing_never_reaches_the_branch() {
    let project = repository();
    // No file of the work tree is written: the workflow exists only as
    // an object, an index entry and a commit.
    let (_, reason, index_reason) = refused_record(
        &project,
        "blob=$(echo 'on: push' | git hash-object -w --stdin) && \
         git update-index --add --cacheinfo 100644,$blob,.github/workflows/x.yml && \
         tree=$(git write-tree) && \
         commit=$(git -c user.email=a@b -c user.name=a commit-tree $tree -p HEAD -m ci) && \
         git update-ref refs/heads/main $commit && git log --format=%s -1 && echo recorded",
        "write-protected",
        ".github/workflows/x.yml",
    );
    let commit = reason
        .strip_prefix("commit ")
        .and_then(|rest| rest.get(..12))
        .expect("the commit's id");
    insta::assert_snapshot!(
        "git_records_refused",
        format!("{}\n{index_reason}", reason.replace(commit, "<commit>"))
    );
    let (_, files) = host_git(&project.root, &["ls-files"]);
    assert!(
        !files.contains(".github"),
        "the index holds no workflow: {files}"
    );
    assert!(host_git(&project.root, &["status", "--short"]).0);
}

#[test]
fn a_hook_added_through_the_index_and_committed_is_refused() {
    let project = repository();
    refused_record(
        &project,
        "blob=$(printf '#!/bin/sh\\ntouch pwned\\n' | git hash-object -w --stdin) && \
         git update-index --add --cacheinfo 100755,$blob,.husky/pre-commit && \
         git -c user.email=a@b -c user.name=a commit -qm hook && echo recorded",
        "write-protected",
        ".husky/pre-commit",
    );
    assert_eq!(host_git(&project.root, &["log", "--format=%s"]).1, "first");
}

#[test]
fn a_commit_deleting_a_masked_tracked_file_is_refused() {
    let project = repository();
    // A tracked `.env`: masked in the view, so git there sees it deleted.
    assert!(host_git(&project.root, &["add", ".env"]).0);
    commit_on_host(&project, "env");
    let (result, _, _) = refused_record(
        &project,
        "git status --short; echo 'fn two() {}' >> src/main.rs && \
         git -c user.email=a@b -c user.name=a commit -qam second && echo recorded",
        "masked-deletion",
        ".env",
    );
    assert!(
        result.stdout.contains(" D .env"),
        "git in the view sees the masked file deleted: {result:#?}"
    );
    let (_, files) = host_git(&project.root, &["ls-files"]);
    assert!(files.lines().any(|f| f == ".env"), "{files}");
    assert_eq!(project.read(".env").as_deref(), Some("SECRET=hunter2\n"));
    // The source edit itself lands in the work tree.
    assert!(applied(&result, "src/main.rs"), "{:#?}", result.changes);
}
