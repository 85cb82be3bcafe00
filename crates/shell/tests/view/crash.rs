//! A commit killed (`SIGKILL`) at any of its steps: every file of the tree
//! is as it was or as the whole commit makes it, the temporary files are
//! all in the commit's hidden directory, and the next run into that root
//! removes it, whether it commits anything or not.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};

use agentcaps_shell::CommandRequest;

use crate::support::{Project, rerun, run};
use crate::writeback::tree;

/// Marks this test binary's re-run that commits and is killed at a step:
/// `STEP ROOT`.
const CRASHING: &str = "AGENTCAPS_TEST_CRASH_AT";

/// Every kind of change: files rewritten, a tree and a file removed, new
/// directories (one `0700`) with files, a link, an append.
const SCRIPT: &str = "for i in 0 1 2 3 4; do echo changed $i > src/m$i.rs; done; rm -rf old; \
                      mkdir -m 700 keys; echo key > keys/id; mkdir -p lib/deep; \
                      echo new > lib/deep/new.rs; rm src/main.rs; ln -s README.md readme-link; \
                      echo more >> README.md";

/// The real tree before the command: the project, five sources, a tree to
/// remove, the script.
fn set_up() -> Project {
    let project = Project::new();
    for i in 0..5 {
        project.write(&format!("src/m{i}.rs"), &format!("old {i}\n"));
    }
    project.write("old/a.txt", "a\n");
    project.write("old/deep/b.txt", "b\n");
    project.write("run.sh", SCRIPT);
    project
}

fn commit(project: &Project, kill_at: Option<usize>) {
    let mut policy = project.policy();
    if let Some(step) = kill_at {
        policy = policy.kill_commit_at(step);
    }
    let result = run(
        &policy.build().expect("policy"),
        CommandRequest::argv(["sh", "run.sh"]),
    );
    let changes = result.changes.expect("changes");
    assert!(changes.refused.is_empty(), "{:?}", changes.refused);
}

/// Whether `key` (a path of [`tree`]) is in a commit's hidden directory.
fn hidden(key: &str) -> bool {
    key.starts_with(".agentcaps-commit-")
}

/// Every name beneath `root` that is a temporary one of a commit.
fn temporary_names(root: &Path) -> Vec<String> {
    tree(root)
        .into_keys()
        .filter(|key| key.split('/').any(|name| name.starts_with(".agentcaps-")))
        .collect()
}

#[test]
fn a_commit_killed_at_any_step_leaves_each_file_old_or_new_and_nothing_stray_after_the_next_run() {
    const NAME: &str = "crash::a_commit_killed_at_any_step_leaves_each_file_old_or_new_and_nothing_stray_after_the_next_run";
    if let Some(at) = std::env::var_os(CRASHING) {
        let at = at.to_string_lossy().into_owned();
        let (step, root) = at.split_once(' ').expect("STEP ROOT");
        let project = Project::at(PathBuf::from(root));
        commit(&project, Some(step.parse().expect("a step")));
        return;
    }
    let whole = {
        let project = set_up();
        commit(&project, None);
        tree(&project.root)
    };
    assert!(whole.contains_key("keys/"), "{whole:?}");
    // The steps at which the killed commit left its hidden directory.
    let mut left_over = 0;
    for step in 1..200 {
        let project = set_up();
        let before = tree(&project.root);
        let (status, text) = rerun(
            NAME,
            CRASHING,
            &format!("{step} {}", project.root.display()),
        );
        let after = tree(&project.root);
        if status.success() {
            // Past the last step: the commit was whole.
            eprintln!("the commit took {} steps", step - 1);
            assert!(text.contains("1 passed"), "the re-run ran no test: {text}");
            assert!(step > 20, "a commit of this many changes takes more steps");
            assert_eq!(after, whole);
            assert!(left_over > step / 2, "{left_over} of {step} steps");
            return;
        }
        assert_eq!(status.signal(), Some(9), "step {step}: {text}");
        // Each file, link and directory is old or new; every temporary
        // file is in the hidden directory.
        let outside: BTreeMap<&String, &(Vec<u8>, u32)> =
            after.iter().filter(|(key, _)| !hidden(key)).collect();
        let keys: BTreeSet<&String> = before
            .keys()
            .chain(whole.keys())
            .chain(outside.keys().copied())
            .collect();
        for key in keys {
            let now = after.get(key);
            assert!(
                now == before.get(key) || now == whole.get(key),
                "step {step}: {key} is {now:?}, neither old {:?} nor new {:?}",
                before.get(key),
                whole.get(key)
            );
        }
        let hidden_dirs: Vec<&(Vec<u8>, u32)> = after
            .iter()
            .filter(|(key, _)| hidden(key) && key.matches('/').count() == 1 && key.ends_with('/'))
            .map(|(_, entry)| entry)
            .collect();
        if let [(_, mode)] = hidden_dirs.as_slice() {
            assert_eq!(mode & 0o777, 0o700, "step {step}");
            left_over += 1;
        }
        // The next run removes what the killed one left: at odd steps one
        // that commits, at even steps one that changes nothing.
        let commits = step % 2 == 1;
        let script = if commits {
            "echo next > next.txt"
        } else {
            "true"
        };
        std::fs::write(project.root.join("next.sh"), script).expect("script");
        let next = run(
            &project.policy().build().expect("policy"),
            CommandRequest::argv(["sh", "next.sh"]),
        );
        assert!(
            next.changes.as_ref().is_none_or(|c| c.refused.is_empty()),
            "step {step}: {next:#?}"
        );
        if commits {
            assert_eq!(project.read("next.txt").as_deref(), Some("next\n"));
        }
        assert_eq!(
            temporary_names(&project.root),
            Vec::<String>::new(),
            "step {step}"
        );
    }
    panic!("the commit never ended");
}
