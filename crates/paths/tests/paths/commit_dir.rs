//! `Beneath::stage_in_commit_dir`: every temporary file of a transaction
//! in one hidden directory at the root, and the clean-up of the ones dead
//! runs left, which removes only what is ours.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Beneath, PathPolicy};

fn root() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("sub/old.txt"), b"old").unwrap();
    std::fs::write(root.join("gone.txt"), b"gone").unwrap();
    std::fs::write(outside.join("keep"), b"outside").unwrap();
    (tmp, root, outside)
}

fn beneath(root: &Path) -> Beneath {
    let mut files = PathPolicy::builder()
        .allow(root)
        .build()
        .unwrap()
        .open_beneath()
        .unwrap();
    files.stage_in_commit_dir(true);
    files
}

/// The names in `dir` that start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

#[test]
fn every_temporary_file_is_in_one_private_directory_at_the_root_removed_at_the_end() {
    let (_tmp, root, _) = root();
    let files = beneath(&root);
    let new = files.stage(&root, "sub/new.txt", b"new").unwrap();
    let over = files.stage(&root, "sub/old.txt", b"newer").unwrap();
    // Nothing beside the targets.
    assert_eq!(named(&root.join("sub"), ".agentcaps"), Vec::<String>::new());
    let hidden = named(&root, ".agentcaps-commit-");
    assert_eq!(hidden.len(), 1, "{hidden:?}");
    let dir = root.join(&hidden[0]);
    let meta = std::fs::symlink_metadata(&dir).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    files.commit_new(new).unwrap();
    let replaced = files.replace(over).unwrap();
    let removed = files.set_aside(&root, "gone.txt").unwrap();
    // The old file and the removed one wait in the hidden directory.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
    assert_eq!(std::fs::read(root.join("sub/old.txt")).unwrap(), b"newer");
    assert!(!root.join("gone.txt").exists());
    files.release(replaced).unwrap();
    files.restore(removed).unwrap();
    assert_eq!(std::fs::read(root.join("gone.txt")).unwrap(), b"gone");
    drop(files);
    assert_eq!(named(&root, ".agentcaps"), Vec::<String>::new());
    assert_eq!(std::fs::read(root.join("sub/new.txt")).unwrap(), b"new");
}

#[test]
fn only_left_overs_that_are_ours_by_name_and_owner_and_unlocked_are_removed() {
    let (_tmp, root, outside) = root();
    // A dead run's directory, deep and full.
    let dead = root.join(".agentcaps-commit-1-0");
    std::fs::create_dir_all(dead.join("a/b/c")).unwrap();
    std::fs::write(dead.join("a/b/c/f"), b"old").unwrap();
    std::fs::write(dead.join("t"), b"old").unwrap();
    // A living run's (locked by an open handle of its own).
    let live = root.join(".agentcaps-commit-2-0");
    std::fs::create_dir(&live).unwrap();
    std::fs::write(live.join("staged"), b"in use").unwrap();
    let held = std::fs::File::open(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    // Another user's.
    let theirs = root.join(".agentcaps-commit-3-0");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("f"), b"theirs").unwrap();
    let nobody = 65534;
    let chowned = std::os::unix::fs::chown(&theirs, Some(nobody), Some(nobody)).is_ok()
        && std::fs::metadata(&theirs).unwrap().uid() == nobody;
    assert!(
        chowned || !rustix::process::geteuid().is_root(),
        "root can give it away"
    );
    // A link by that name (to a directory outside), a file by that name,
    // and a directory named almost so.
    symlink(&outside, root.join(".agentcaps-commit-4-0")).unwrap();
    std::fs::write(root.join(".agentcaps-commit-5-0"), b"a file").unwrap();
    std::fs::create_dir(root.join("agentcaps-commit-6-0")).unwrap();

    let files = beneath(&root);
    let staged = files.stage(&root, "sub/new.txt", b"new").unwrap();
    files.commit_new(staged).unwrap();

    assert!(!dead.exists(), "a dead run's directory is removed");
    assert_eq!(std::fs::read(live.join("staged")).unwrap(), b"in use");
    if chowned {
        assert_eq!(std::fs::read(theirs.join("f")).unwrap(), b"theirs");
    }
    assert!(
        std::fs::symlink_metadata(root.join(".agentcaps-commit-4-0"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"outside");
    assert_eq!(
        std::fs::read(root.join(".agentcaps-commit-5-0")).unwrap(),
        b"a file"
    );
    assert!(root.join("agentcaps-commit-6-0").is_dir());
    drop(files);
    // Once its run has ended (the lock released), the next one removes it.
    drop(held);
    let files = beneath(&root);
    let staged = files.stage(&root, "sub/again.txt", b"again").unwrap();
    files.commit_new(staged).unwrap();
    drop(files);
    assert!(!live.exists(), "a run that ended leaves nothing for long");
}
