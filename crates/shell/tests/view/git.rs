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
        &[
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "user.name=t",
            "commit",
            "-qm",
            "first",
        ],
    ] {
        assert!(host_git(&project.root, args).0, "git {args:?}");
    }
    project
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
