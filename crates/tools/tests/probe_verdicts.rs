//! The `agentcaps` binary keeps the verdict "a view was built here" in
//! its temporary directory's `agentcaps-verdicts-UID`, so later
//! invocations do not probe again; a record it did not write itself, or in
//! a directory others may use, is not trusted, and "no view here" is never
//! kept.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// `agentcaps run --json` of `cat` under a policy with a path policy,
/// with `tmp` as the temporary directory: its result.
fn run_in(tree: &common::Tree, tmp: &Path) -> serde_json::Value {
    let policy = tree.policy("allowed_commands = [\"cat\"]\n");
    std::fs::write(tree.root.join("a.txt"), "hi\n").expect("a.txt");
    let result = tree.run_json_with(&policy, &["cat", "a.txt"], &[("TMPDIR", tmp)]);
    assert_eq!(result["stdout"], "hi\n", "{result}");
    result
}

fn verdicts(tmp: &Path) -> PathBuf {
    tmp.join(format!(
        "agentcaps-verdicts-{}",
        std::fs::metadata(tmp).expect("tmp").uid()
    ))
}

/// The records in the verdicts directory: (name, inode).
fn records(dir: &Path) -> Vec<(String, u64)> {
    let mut found: Vec<(String, u64)> = std::fs::read_dir(dir)
        .map(|read| {
            read.flatten()
                .map(|e| {
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.metadata().expect("meta").ino(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn a_view_built_once_is_not_probed_again_and_the_record_must_be_our_own() {
    let tree = common::Tree::new();
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = verdicts(tmp.path());
    // The first run probes, and keeps its positive verdict.
    let first = run_in(&tree, tmp.path());
    assert_eq!(first["enforced"], "full", "{first}");
    let kept = records(&dir);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].0.starts_with("view-ok-"), "{kept:?}");
    assert_eq!(std::fs::metadata(&dir).expect("dir").mode() & 0o777, 0o700);
    // The next one trusts it: the record is not written again.
    let second = run_in(&tree, tmp.path());
    assert_eq!(second["enforced"], "full", "{second}");
    assert_eq!(records(&dir), kept);
    // A record of other content under that name is not trusted: the run
    // probes again and writes the record anew.
    let record = dir.join(&kept[0].0);
    std::fs::write(&record, "agentcaps view probe: ok\n").expect("forge");
    let third = run_in(&tree, tmp.path());
    assert_eq!(third["enforced"], "full", "{third}");
    let rewritten = records(&dir);
    assert_eq!(rewritten.len(), 1);
    assert_ne!(rewritten, kept, "the forged record was replaced");
    assert!(
        std::fs::read_to_string(&record)
            .expect("record")
            .contains("\nboot "),
        "the record names its key"
    );
    // A directory others may write in is neither trusted nor written.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let before = records(&dir);
    let fourth = run_in(&tree, tmp.path());
    assert_eq!(fourth["enforced"], "full", "{fourth}");
    assert_eq!(records(&dir), before, "nothing written there");
}

#[test]
fn a_run_leaves_nothing_in_the_temporary_directory_but_the_verdicts() {
    let tree = common::Tree::new();
    let tmp = tempfile::tempdir().expect("tmp");
    for _ in 0..2 {
        let result = run_in(&tree, tmp.path());
        assert_eq!(result["enforced"], "full", "{result}");
        let mut left: Vec<String> = std::fs::read_dir(tmp.path())
            .expect("tmp")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let verdicts = verdicts(tmp.path());
        let verdicts = verdicts.file_name().expect("name").to_string_lossy();
        assert_eq!(
            left,
            [verdicts.as_ref()],
            "each run's staging base goes with its process"
        );
    }
}
