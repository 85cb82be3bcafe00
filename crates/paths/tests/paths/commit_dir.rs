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

/// Where [`targets_on_other_mounts_stage_in_that_mounts_own_hidden_directory`]
/// runs again, inside its own mount namespace, with mounts beneath it.
#[cfg(target_os = "linux")]
const MOUNTED_ROOT: &str = "AGENTCAPS_TEST_MOUNTED_ROOT";

/// A file system mounted beneath the root (a tmpfs at `mnt`) and a bind
/// mount (`bnd`, of `src` in the root: one device, another mount): a
/// rename cannot cross into either, so each gets its own hidden directory
/// at its top, and nothing temporary is ever beside a target there.
#[cfg(target_os = "linux")]
#[test]
fn targets_on_other_mounts_stage_in_that_mounts_own_hidden_directory() {
    if let Ok(root) = std::env::var(MOUNTED_ROOT) {
        on_mounts(Path::new(&root));
        return;
    }
    let (_tmp, root, _) = root();
    for dir in ["mnt", "bnd", "src"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    // A new user and mount namespace: the mounts are this test's alone.
    let status = std::process::Command::new("unshare")
        .args(["-Urm", "sh", "-c"])
        .arg(
            "mount -t tmpfs none \"$0/mnt\" && mount --bind \"$0/src\" \"$0/bnd\" && \
             mkdir \"$0/mnt/sub\" \"$0/mnt/.agentcaps-commit-999999-0\" && \
             exec \"$1\" --exact commit_dir::targets_on_other_mounts_stage_in_that_mounts_own_hidden_directory --nocapture",
        )
        .arg(&root)
        .arg(&exe)
        .env(MOUNTED_ROOT, &root)
        .status()
        .expect("unshare runs");
    assert!(
        status.success(),
        "the test inside the mount namespace failed"
    );
}

#[cfg(target_os = "linux")]
fn on_mounts(root: &Path) {
    let files = beneath(root);
    let targets = ["mnt/sub/new.txt", "bnd/new.txt", "sub/new.txt"];
    let staged: Vec<_> = targets
        .iter()
        .map(|t| files.stage(root, t, b"new").unwrap())
        .collect();
    // Staged: each in the hidden directory of its own mount, none beside
    // its target; the dead run's left-over on the tmpfs is gone.
    for (dir, top) in [("mnt/sub", "mnt"), ("bnd", "bnd"), ("sub", ".")] {
        let beside: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.to_string_lossy().starts_with(".agentcaps"))
            .collect();
        let hidden = named(&root.join(top), ".agentcaps-commit-");
        assert_eq!(hidden.len(), 1, "{top}: {hidden:?}");
        assert_eq!(
            std::fs::read_dir(root.join(top).join(&hidden[0]))
                .unwrap()
                .count(),
            1,
            "{top}: the staged file is in its hidden directory"
        );
        if dir != top {
            assert!(beside.is_empty(), "{dir}: {beside:?}");
        }
    }
    assert!(!root.join("mnt/.agentcaps-commit-999999-0").exists());
    for file in staged {
        files.commit_new(file).unwrap();
    }
    for target in targets {
        assert_eq!(
            std::fs::read(root.join(target)).unwrap(),
            b"new",
            "{target}"
        );
    }
    drop(files);
    for top in ["mnt", "bnd", "."] {
        assert!(named(&root.join(top), ".agentcaps").is_empty(), "{top}");
    }
}
