//! Trees deeper than one path can spell (`PATH_MAX`, 4096 bytes): checks
//! and `Beneath` work there as anywhere, looking such paths up in pieces;
//! the rules (blocked, protected, links refused) hold the same.

use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, Beneath, PathPolicy, WriteMode, long_path};

/// `root` and, beneath it, 25 directories of 200-byte names (5 025 bytes
/// in all), made one at a time as a program would.
fn deep_tree() -> (tempfile::TempDir, PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap().join("r");
    std::fs::create_dir_all(&root).unwrap();
    let name = "d".repeat(200);
    crate::mkdir_chain(&root, &name, 25);
    let rel = vec![name; 25].join("/");
    (tmp, root, rel)
}

fn beneath(root: &Path) -> Beneath {
    PathPolicy::builder()
        .allow(root)
        .build()
        .unwrap()
        .open_beneath()
        .unwrap()
}

#[test]
fn a_file_beyond_path_max_is_written_read_renamed_and_removed() {
    let (_tmp, root, rel) = deep_tree();
    assert!(long_path::is_long(&root.join(&rel)));
    for walk in [false, true] {
        let mut files = beneath(&root);
        files.simulate_missing_openat2(walk);
        let file = format!("{rel}/leaf.txt");
        files
            .write(&root, &file, b"deep\n", WriteMode::CreateNew)
            .unwrap();
        assert_eq!(files.read(&root, &file, 100).unwrap(), b"deep\n");
        assert_eq!(long_path::read(&root.join(&file)).unwrap(), b"deep\n");
        assert_eq!(files.metadata(&root, &file).unwrap().len, 5);
        files
            .create_dir_all(&root, &format!("{rel}/more/dirs"))
            .unwrap();
        let moved = format!("{rel}/more/dirs/leaf.txt");
        files.rename(&root, &file, &moved).unwrap();
        assert!(
            long_path::symlink_metadata(&root.join(&moved))
                .unwrap()
                .is_file()
        );
        assert_eq!(
            files
                .list(&root, &format!("{rel}/more/dirs"))
                .unwrap()
                .len(),
            1
        );
        files.remove_file(&root, &moved).unwrap();
        files
            .remove_dir(&root, &format!("{rel}/more/dirs"))
            .unwrap();
        files.remove_dir(&root, &format!("{rel}/more")).unwrap();
        assert!(
            long_path::read_dir_names(&root.join(&rel))
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn the_rules_hold_beyond_path_max() {
    let (_tmp, root, rel) = deep_tree();
    let files = beneath(&root);
    for (name, rule) in [
        (".env", "blocked"),
        (".git/hooks/pre-commit", "write-protected"),
    ] {
        let spelling = format!("{rel}/{name}");
        if let Some(parent) = Path::new(&spelling).parent()
            && name.contains('/')
        {
            let _ = files.create_dir_all(&root, &parent.display().to_string());
        }
        let error = files
            .write(&root, &spelling, b"x", WriteMode::CreateNew)
            .expect_err(name);
        assert_eq!(error.rule(), rule, "{name}: {error}");
    }
    // A link at depth is seen as a link, and refused on the way.
    let deep = root.join(&rel);
    let dir = long_path::open_dir_nofollow(&deep).unwrap();
    rustix::fs::symlinkat("/etc", &dir, "out").unwrap();
    let policy = PathPolicy::builder().allow(&root).build().unwrap();
    let refused = policy
        .check(&root, &format!("{rel}/out/passwd"), Access::Read)
        .unwrap_err();
    assert_eq!(refused.rule(), "outside-roots", "{refused}");
    assert_eq!(
        long_path::read_link(&deep.join("out")).unwrap(),
        Path::new("/etc")
    );
    let error = files
        .read(&root, &format!("{rel}/out/passwd"), 100)
        .unwrap_err();
    assert_eq!(error.rule(), "outside-roots", "{error}");
}
