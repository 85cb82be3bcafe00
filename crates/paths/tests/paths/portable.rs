//! `Beneath` on every platform (Windows included, where the other suites
//! need symbolic links): writing, reading, listing, renaming, removing and
//! the transaction steps, and escapes by `..` refused — with no links in
//! the tree.

use std::path::{Path, PathBuf};

use agentcaps_paths::{Beneath, EntryKind, PathError, PathPolicy, WriteMode};

struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    files: Beneath,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let (root, outside) = (base.join("root"), base.join("outside"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"SECRET").unwrap();
    let files = PathPolicy::builder()
        .allow(&root)
        .build()
        .unwrap()
        .open_beneath()
        .unwrap();
    Tree {
        _tmp: tmp,
        root,
        outside,
        files,
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn writes_create_once_overwrite_and_leave_no_temporary_file() {
    let t = tree();
    let files = &t.files;
    files
        .write(&t.root, "sub/a.txt", b"one", WriteMode::CreateNew)
        .unwrap();
    let again = files
        .write(&t.root, "sub/a.txt", b"two", WriteMode::CreateNew)
        .unwrap_err();
    assert!(matches!(again, PathError::AlreadyExists { .. }), "{again}");
    assert_eq!(files.read(&t.root, "sub/a.txt", 10).unwrap(), b"one");
    files
        .write(&t.root, "sub/a.txt", b"three", WriteMode::Overwrite)
        .unwrap();
    assert_eq!(files.read(&t.root, "sub/a.txt", 10).unwrap(), b"three");
    assert!(matches!(
        files.read(&t.root, "sub/a.txt", 2),
        Err(PathError::TooLarge { .. })
    ));
    let info = files.metadata(&t.root, "sub/a.txt").unwrap();
    assert_eq!((info.kind, info.len), (EntryKind::File, 5));
    assert_eq!(names(&t.root.join("sub")), ["a.txt"]);
}

#[test]
fn escapes_by_dot_dot_are_refused_and_touch_nothing_outside() {
    let t = tree();
    let files = &t.files;
    for spelling in ["../outside/secret", "sub/../../outside/secret"] {
        let err = files.read(&t.root, spelling, 100).unwrap_err();
        assert_eq!(err.rule(), "outside-roots", "{spelling}: {err}");
        let err = files
            .write(&t.root, spelling, b"x", WriteMode::Overwrite)
            .unwrap_err();
        assert_eq!(err.rule(), "outside-roots", "{spelling}: {err}");
    }
    assert!(files.create_dir_all(&t.root, "../outside/new").is_err());
    assert!(files.remove_file(&t.root, "../outside/secret").is_err());
    assert_eq!(names(&t.outside), ["secret"]);
    assert_eq!(std::fs::read(t.outside.join("secret")).unwrap(), b"SECRET");
}

#[test]
fn directories_are_created_listed_renamed_and_removed() {
    let t = tree();
    let files = &t.files;
    files.create_dir_all(&t.root, "sub/x/y").unwrap();
    files
        .write(&t.root, "sub/x/f", b"f", WriteMode::CreateNew)
        .unwrap();
    let listed: Vec<(String, EntryKind)> = files
        .list(&t.root, "sub/x")
        .unwrap()
        .into_iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    assert_eq!(
        listed,
        [
            ("f".to_owned(), EntryKind::File),
            ("y".to_owned(), EntryKind::Dir)
        ]
    );
    files.rename(&t.root, "sub/x/f", "sub/g").unwrap();
    files
        .write(&t.root, "sub/h", b"h", WriteMode::CreateNew)
        .unwrap();
    let taken = files.rename(&t.root, "sub/g", "sub/h").unwrap_err();
    assert!(matches!(taken, PathError::AlreadyExists { .. }), "{taken}");
    assert_eq!(files.read(&t.root, "sub/h", 10).unwrap(), b"h");
    files.rename(&t.root, "sub/x", "sub/z").unwrap();
    files.remove_dir(&t.root, "sub/z/y").unwrap();
    files.remove_file(&t.root, "sub/g").unwrap();
    assert_eq!(names(&t.root.join("sub")), ["h", "z"]);
    let root_itself = files.remove_dir(&t.root, ".").unwrap_err();
    assert_eq!(root_itself.rule(), "changed", "{root_itself}");
}

#[test]
fn replaced_and_set_aside_files_come_back_exactly() {
    for (no_exchange, no_links) in [(false, false), (true, false), (true, true)] {
        let mut t = tree();
        t.files.simulate_missing(no_exchange, no_links);
        let files = &t.files;
        files
            .write(&t.root, "f", b"old", WriteMode::CreateNew)
            .unwrap();
        let staged = files.stage(&t.root, "f", b"new").unwrap();
        let aside = files.replace(staged).unwrap();
        assert_eq!(files.read(&t.root, "f", 10).unwrap(), b"new");
        files.restore(aside).unwrap();
        assert_eq!(files.read(&t.root, "f", 10).unwrap(), b"old");
        let staged = files.stage(&t.root, "f", b"newer").unwrap();
        files.release(files.replace(staged).unwrap()).unwrap();
        assert_eq!(files.read(&t.root, "f", 10).unwrap(), b"newer");
        let aside = files.set_aside(&t.root, "f").unwrap();
        assert!(!t.root.join("f").exists());
        files.restore(aside).unwrap();
        assert_eq!(files.read(&t.root, "f", 10).unwrap(), b"newer");
        let staged = files.stage(&t.root, "g", b"g").unwrap();
        files.discard(staged).unwrap();
        assert_eq!(names(&t.root), ["f", "sub"], "{no_exchange} {no_links}");
    }
}
