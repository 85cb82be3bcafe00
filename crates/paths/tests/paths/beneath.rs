//! Acting beneath a root's handle with no gap between check and use: what
//! each operation does, and the attacks each refuses.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Beneath, EntryKind, PathError, PathPolicy, WriteMode};

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    files: Beneath,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("a.txt"), b"inside").unwrap();
    std::fs::write(outside.join("secret"), b"SECRET").unwrap();
    symlink(&outside, root.join("out")).unwrap();
    symlink("sub", root.join("sublink")).unwrap();
    symlink("../outside/new", root.join("dangling_out")).unwrap();
    symlink("sub/created", root.join("dangling_in")).unwrap();
    let files = PathPolicy::builder()
        .allow(&root)
        .build()
        .unwrap()
        .open_beneath()
        .map(mechanism)
        .unwrap();
    Fixture {
        _tmp: tmp,
        root,
        outside,
        files,
    }
}

#[test]
fn reads_inside_and_refuses_links_out() {
    let f = fixture();
    assert_eq!(f.files.read(&f.root, "a.txt", 100).unwrap(), b"inside");
    let err = f.files.read(&f.root, "out/secret", 100).unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
    let err = f.files.read(&f.root, "../outside/secret", 100).unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
}

#[test]
fn read_refuses_more_than_the_limit() {
    let f = fixture();
    let err = f.files.read(&f.root, "a.txt", 3).unwrap_err();
    assert!(
        matches!(
            err,
            PathError::TooLarge {
                len: 6,
                limit: 3,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn open_read_refuses_a_fifo_without_blocking() {
    let f = fixture();
    let fifo = f.root.join("fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = f.files.open_read(&f.root, "fifo").unwrap_err();
    assert_eq!(err.rule(), "changed", "{err}");
}

#[test]
fn open_read_refuses_a_directory() {
    let f = fixture();
    assert_eq!(
        f.files.open_read(&f.root, "sub").unwrap_err().rule(),
        "changed"
    );
}

#[test]
fn create_new_writes_once_then_reports_already_exists() {
    let f = fixture();
    f.files
        .write(&f.root, "new.txt", b"one", WriteMode::CreateNew)
        .unwrap();
    let err = f
        .files
        .write(&f.root, "new.txt", b"two", WriteMode::CreateNew)
        .unwrap_err();
    assert!(matches!(err, PathError::AlreadyExists { .. }), "{err:?}");
    assert!(!err.is_refusal());
    assert_eq!(std::fs::read(f.root.join("new.txt")).unwrap(), b"one");
    assert_no_temp_files(&f.root);
}

#[test]
fn a_write_stopped_before_the_rename_leaves_the_target_and_no_temporary() {
    let f = fixture();
    for mode in [WriteMode::CreateNew, WriteMode::Overwrite] {
        let written = f
            .files
            .write_unless(&f.root, "stopped.txt", b"never", mode, || true)
            .unwrap();
        assert!(written.is_none());
        assert!(!f.root.join("stopped.txt").exists());
        let written = f
            .files
            .write_unless(&f.root, "a.txt", b"never", WriteMode::Overwrite, || true)
            .unwrap();
        assert!(written.is_none());
        assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"inside");
        assert_no_temp_files(&f.root);
    }
    let written = f
        .files
        .write_unless(&f.root, "go.txt", b"yes", WriteMode::CreateNew, || false)
        .unwrap();
    assert!(written.is_some());
    assert_eq!(std::fs::read(f.root.join("go.txt")).unwrap(), b"yes");
}

#[test]
fn overwrite_replaces_contents_and_keeps_the_mode() {
    let f = fixture();
    let path = f.root.join("a.txt");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    f.files
        .write(&f.root, "a.txt", b"replaced", WriteMode::Overwrite)
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"replaced");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert_no_temp_files(&f.root);
}

#[test]
fn writing_through_a_hard_link_never_modifies_the_outside_inode() {
    let f = fixture();
    std::fs::hard_link(f.outside.join("secret"), f.root.join("hard")).unwrap();
    // The check cannot see hard links (documented): the write is allowed,
    // but it replaces the name, not the shared inode.
    f.files
        .write(&f.root, "hard", b"overwritten", WriteMode::Overwrite)
        .unwrap();
    assert_eq!(std::fs::read(f.outside.join("secret")).unwrap(), b"SECRET");
    assert_eq!(std::fs::read(f.root.join("hard")).unwrap(), b"overwritten");
}

#[test]
fn dangling_links_are_written_at_their_target_only_when_it_is_inside() {
    let f = fixture();
    f.files
        .write(&f.root, "dangling_in", b"x", WriteMode::CreateNew)
        .unwrap();
    assert_eq!(std::fs::read(f.root.join("sub/created")).unwrap(), b"x");
    let err = f
        .files
        .write(&f.root, "dangling_out", b"x", WriteMode::CreateNew)
        .unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
    assert!(!f.outside.join("new").exists());
}

#[test]
fn writes_refuse_persistence_files_and_non_portable_names() {
    let f = fixture();
    for (spelling, rule) in [
        (".git/config", "write-protected"),
        (".bashrc", "write-protected"),
        ("aux.c", "not-portable"),
        ("bad:name", "not-portable"),
        (".env", "blocked"),
    ] {
        std::fs::create_dir_all(f.root.join(".git")).unwrap();
        let err = f
            .files
            .write(&f.root, spelling, b"x", WriteMode::CreateNew)
            .unwrap_err();
        assert_eq!(err.rule(), rule, "{spelling}: {err}");
        assert!(!f.root.join(spelling).exists(), "{spelling} was written");
    }
}

#[test]
fn metadata_reports_a_link_as_a_link() {
    let f = fixture();
    let info = f.files.metadata(&f.root, "sublink").unwrap();
    assert_eq!(info.kind, EntryKind::Symlink);
    let info = f.files.metadata(&f.root, "a.txt").unwrap();
    assert_eq!((info.kind, info.len), (EntryKind::File, 6));
    assert!(info.modified.is_some());
    assert_eq!(f.files.metadata(&f.root, "").unwrap().kind, EntryKind::Dir);
}

#[test]
fn list_reports_links_without_following_them() {
    let f = fixture();
    let entries = f.files.list(&f.root, "").unwrap();
    let kinds: Vec<(String, EntryKind)> = entries
        .iter()
        .map(|e| (e.name.to_string_lossy().into_owned(), e.kind))
        .collect();
    assert!(kinds.contains(&("out".to_owned(), EntryKind::Symlink)));
    assert!(kinds.contains(&("sub".to_owned(), EntryKind::Dir)));
    assert!(kinds.contains(&("a.txt".to_owned(), EntryKind::File)));
    assert!(!kinds.iter().any(|(name, _)| name == "secret"));
    assert_eq!(
        f.files.list(&f.root, "out").unwrap_err().rule(),
        "outside-roots"
    );
}

#[test]
fn rename_moves_inside_and_never_replaces() {
    let f = fixture();
    f.files
        .write(&f.root, "b.txt", b"b", WriteMode::CreateNew)
        .unwrap();
    let err = f.files.rename(&f.root, "a.txt", "b.txt").unwrap_err();
    assert!(matches!(err, PathError::AlreadyExists { .. }), "{err:?}");
    f.files.rename(&f.root, "a.txt", "sub/moved.txt").unwrap();
    assert_eq!(
        std::fs::read(f.root.join("sub/moved.txt")).unwrap(),
        b"inside"
    );
    let err = f.files.rename(&f.root, "b.txt", "out/b.txt").unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
    let err = f.files.rename(&f.root, "b.txt", "GIT~1").unwrap_err();
    assert_eq!(err.rule(), "not-portable");
    // A link is moved itself, not its target.
    f.files.rename(&f.root, "sublink", "sublink2").unwrap();
    assert!(f.root.join("sub").is_dir());
    assert!(
        f.root
            .join("sublink2")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn remove_file_removes_a_link_not_its_target() {
    let f = fixture();
    std::fs::write(f.root.join("sub/t.txt"), b"t").unwrap();
    symlink("sub/t.txt", f.root.join("tlink")).unwrap();
    f.files.remove_file(&f.root, "tlink").unwrap();
    assert!(f.root.join("sub/t.txt").exists());
    assert!(f.root.join("tlink").symlink_metadata().is_err());
    // A link out of the root can be removed: it is inside, its target is
    // untouched.
    f.files.remove_file(&f.root, "out").unwrap();
    assert!(f.outside.join("secret").exists());
    let err = f
        .files
        .remove_file(&f.root, "../outside/secret")
        .unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
    assert!(f.outside.join("secret").exists());
}

#[test]
fn remove_dir_refuses_the_root_itself() {
    let f = fixture();
    std::fs::create_dir(f.root.join("empty")).unwrap();
    f.files.remove_dir(&f.root, "empty").unwrap();
    assert!(f.files.remove_dir(&f.root, ".").is_err());
    assert!(f.root.exists());
}

#[test]
fn create_dir_all_creates_inside_and_refuses_through_links_out() {
    let f = fixture();
    f.files.create_dir_all(&f.root, "x/y/z").unwrap();
    assert!(f.root.join("x/y/z").is_dir());
    f.files.create_dir_all(&f.root, "x/y/z").unwrap();
    assert_eq!(
        f.files.create_dir_all(&f.root, "out/x").unwrap_err().rule(),
        "outside-roots"
    );
    assert!(!f.outside.join("x").exists());
    assert_eq!(
        f.files.create_dir_all(&f.root, "n/CON").unwrap_err().rule(),
        "not-portable"
    );
    assert!(
        !f.root.join("n").exists(),
        "nothing is created when a later name is refused"
    );
}

#[test]
fn staged_files_commit_atomically_or_vanish() {
    let f = fixture();
    let one = f.files.stage(&f.root, "a.txt", b"staged").unwrap();
    let two = f.files.stage(&f.root, "sub/new.txt", b"new").unwrap();
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"inside");
    assert_eq!(one.target(), f.root.join("a.txt"));
    f.files.commit(one).unwrap();
    f.files.discard(two).unwrap();
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"staged");
    assert!(!f.root.join("sub/new.txt").exists());
    assert_no_temp_files(&f.root);
    assert_no_temp_files(&f.root.join("sub"));
}

#[test]
fn a_staged_hard_link_shares_the_staged_file_and_stays_beneath_the_root() {
    let f = fixture();
    let one = f.files.stage(&f.root, "sub/one.o", b"obj").unwrap();
    let two = f.files.stage_hard_link(&f.root, "two.o", &one).unwrap();
    // Its target is judged like any write: not through a link out.
    let err = f
        .files
        .stage_hard_link(&f.root, "out/planted", &one)
        .unwrap_err();
    assert_eq!(err.rule(), "outside-roots");
    assert!(!f.outside.join("planted").exists());
    f.files.commit_new(one).unwrap();
    f.files.commit_new(two).unwrap();
    let (a, b) = (
        std::fs::metadata(f.root.join("sub/one.o")).unwrap(),
        std::fs::metadata(f.root.join("two.o")).unwrap(),
    );
    assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
    assert_eq!(a.nlink(), 2);
    assert_eq!(std::fs::read(f.root.join("two.o")).unwrap(), b"obj");
    assert_no_temp_files(&f.root);
    assert_no_temp_files(&f.root.join("sub"));
}

/// `replace` keeps the old file aside — exchanged (`RENAME_EXCHANGE`), or
/// where the file system lacks that, by a hard link, or lacking those too,
/// as a copy — and puts it back exactly (the same file where it was kept by
/// name, and the same content and mode always), or removes every trace.
#[test]
fn replace_keeps_the_old_file_aside_and_restores_it_exactly() {
    for (no_exchange, no_links) in [(false, false), (true, false), (true, true)] {
        let mut f = fixture();
        f.files.simulate_missing(no_exchange, no_links);
        let path = f.root.join("a.txt");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o751)).unwrap();
        let inode = std::fs::metadata(&path).unwrap().ino();
        let staged = f.files.stage(&f.root, "a.txt", b"new content").unwrap();
        let aside = f.files.replace(staged).unwrap();
        assert_eq!(aside.target(), path);
        assert_eq!(std::fs::read(&path).unwrap(), b"new content");
        assert_eq!(
            std::fs::metadata(&path).unwrap().mode() & 0o777,
            0o751,
            "the replacement takes the old file's mode"
        );
        f.files.restore(aside).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"inside");
        assert_eq!(meta.mode() & 0o777, 0o751, "no links: {no_links}");
        if !no_links {
            assert_eq!((meta.ino(), meta.nlink()), (inode, 1), "the very same file");
        }
        assert_no_temp_files(&f.root);

        // Done: the old file is released, the new content stays.
        let staged = f.files.stage(&f.root, "a.txt", b"final").unwrap();
        let aside = f.files.replace(staged).unwrap();
        f.files.release(aside).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"final");
        assert_no_temp_files(&f.root);
    }
}

/// The copy kept without hard links is bounded by the size the file had
/// when staged: a file grown meanwhile is refused, not read whole.
#[test]
fn replace_without_links_refuses_a_file_that_grew_since_staging() {
    let mut f = fixture();
    f.files.simulate_missing(true, true);
    let staged = f.files.stage(&f.root, "a.txt", b"new").unwrap();
    std::fs::write(f.root.join("a.txt"), vec![b'x'; 100_000]).unwrap();
    let err = f.files.replace(staged).unwrap_err();
    assert!(matches!(err, PathError::Changed { .. }), "{err}");
    assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap().len(), 100_000);
    assert_no_temp_files(&f.root);
}

#[test]
fn replace_refuses_a_directory_swapped_in_and_leaves_it_where_it_was() {
    let f = fixture();
    let staged = f.files.stage(&f.root, "a.txt", b"new").unwrap();
    // Between staging and committing, a directory takes the file's place.
    std::fs::remove_file(f.root.join("a.txt")).unwrap();
    std::fs::create_dir(f.root.join("a.txt")).unwrap();
    std::fs::write(f.root.join("a.txt/inner"), b"kept").unwrap();
    let err = f.files.replace(staged).unwrap_err();
    assert!(matches!(err, PathError::Changed { .. }), "{err}");
    assert_eq!(std::fs::read(f.root.join("a.txt/inner")).unwrap(), b"kept");
    assert_no_temp_files(&f.root);
}

/// Between staging and replacing, the target becomes a link to a file
/// outside: the exchange moves the link itself aside (it is never
/// followed), the outside file is untouched, and releasing removes the
/// link, not what it points to.
#[test]
fn a_link_swapped_in_for_the_target_is_replaced_never_followed() {
    for (no_exchange, no_links) in [(false, false), (true, false), (true, true)] {
        let mut f = fixture();
        f.files.simulate_missing(no_exchange, no_links);
        let staged = f.files.stage(&f.root, "a.txt", b"mine").unwrap();
        std::fs::remove_file(f.root.join("a.txt")).unwrap();
        symlink(f.outside.join("secret"), f.root.join("a.txt")).unwrap();
        match f.files.replace(staged) {
            Ok(aside) => f.files.release(aside).unwrap(),
            // Without hard links, the copy kept for undoing must be of a
            // regular file: a link is refused.
            Err(err) => assert!(
                no_links && matches!(err, PathError::Changed { .. }),
                "{err}"
            ),
        }
        assert_eq!(std::fs::read(f.outside.join("secret")).unwrap(), b"SECRET");
        let meta = std::fs::symlink_metadata(f.root.join("a.txt")).unwrap();
        if no_links {
            assert!(meta.file_type().is_symlink() || meta.is_file());
        } else {
            assert!(meta.is_file(), "the link was replaced by the staged file");
            assert_eq!(std::fs::read(f.root.join("a.txt")).unwrap(), b"mine");
        }
        assert_no_temp_files(&f.root);
        assert_no_temp_files(&f.outside);
    }
}

#[test]
fn replace_of_a_vanished_file_fails_and_leaves_nothing() {
    let f = fixture();
    let staged = f.files.stage(&f.root, "a.txt", b"new").unwrap();
    std::fs::remove_file(f.root.join("a.txt")).unwrap();
    assert!(f.files.replace(staged).is_err());
    assert!(!f.root.join("a.txt").exists());
    assert_no_temp_files(&f.root);
}

#[test]
fn commit_new_refuses_a_file_that_appeared_since_staging() {
    let f = fixture();
    let staged = f.files.stage(&f.root, "sub/new.txt", b"mine").unwrap();
    std::fs::write(f.root.join("sub/new.txt"), b"theirs").unwrap();
    let err = f.files.commit_new(staged).unwrap_err();
    assert!(matches!(err, PathError::AlreadyExists { .. }), "{err}");
    assert_eq!(
        std::fs::read(f.root.join("sub/new.txt")).unwrap(),
        b"theirs"
    );
    assert_no_temp_files(&f.root.join("sub"));

    let staged = f.files.stage(&f.root, "sub/other.txt", b"mine").unwrap();
    f.files.commit_new(staged).unwrap();
    assert_eq!(
        std::fs::read(f.root.join("sub/other.txt")).unwrap(),
        b"mine"
    );
}

#[test]
fn set_aside_removes_a_file_restorably_and_never_follows_a_link() {
    let f = fixture();
    let path = f.root.join("a.txt");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
    let aside = f.files.set_aside(&f.root, "a.txt").unwrap();
    assert!(!path.exists());
    f.files.restore(aside).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"inside");
    assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o700);

    // A link is set aside itself; its target outside is untouched.
    let aside = f.files.set_aside(&f.root, "out").unwrap();
    f.files.release(aside).unwrap();
    assert!(std::fs::symlink_metadata(f.root.join("out")).is_err());
    assert_eq!(std::fs::read(f.outside.join("secret")).unwrap(), b"SECRET");

    // Restoring never replaces what took the place meanwhile.
    let aside = f.files.set_aside(&f.root, "a.txt").unwrap();
    std::fs::write(&path, b"newcomer").unwrap();
    let err = f.files.restore(aside).unwrap_err();
    assert!(matches!(err, PathError::AlreadyExists { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"newcomer");
    assert_no_temp_files(&f.root.join("sub"));
}

#[test]
fn set_aside_refuses_directories_and_what_the_policy_refuses() {
    let f = fixture();
    let err = f.files.set_aside(&f.root, "sub").unwrap_err();
    assert!(matches!(err, PathError::Changed { .. }), "{err}");
    assert!(f.root.join("sub").is_dir());
    assert_no_temp_files(&f.root);
    let err = f.files.set_aside(&f.root, "out/secret").unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert!(f.outside.join("secret").exists());
}

#[test]
fn a_taken_temporary_name_is_skipped_not_clobbered() {
    let f = fixture();
    // Take the next names this process would use for temporary files.
    let probe = f.files.stage(&f.root, "sub/probe.txt", b"p").unwrap();
    let name = probe.temp_name().to_string_lossy().into_owned();
    f.files.discard(probe).unwrap();
    let (stem, n) = name
        .trim_end_matches(".tmp")
        .rsplit_once('-')
        .expect("a counter in the temporary name");
    let n: u64 = n.parse().unwrap();
    let squatted: Vec<PathBuf> = (n + 1..n + 9)
        .map(|k| f.root.join(format!("sub/{stem}-{k}.tmp")))
        .collect();
    for path in &squatted {
        std::fs::write(path, b"squatter").unwrap();
    }
    let staged = f.files.stage(&f.root, "sub/new.txt", b"mine").unwrap();
    f.files.commit_new(staged).unwrap();
    assert_eq!(std::fs::read(f.root.join("sub/new.txt")).unwrap(), b"mine");
    for path in &squatted {
        assert_eq!(std::fs::read(path).unwrap(), b"squatter");
    }
}

#[test]
fn durable_writes_work() {
    let mut f = fixture();
    f.files.set_durable(true);
    f.files
        .write(&f.root, "d.txt", b"durable", WriteMode::CreateNew)
        .unwrap();
    assert_eq!(std::fs::read(f.root.join("d.txt")).unwrap(), b"durable");
}

#[test]
fn read_only_roots_refuse_every_mutation() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::write(root.join("r.txt"), b"r").unwrap();
    let files = PathPolicy::builder()
        .allow_read_only(&root)
        .build()
        .unwrap()
        .open_beneath()
        .map(mechanism)
        .unwrap();
    assert_eq!(files.read(&root, "r.txt", 10).unwrap(), b"r");
    let refusals = [
        files
            .write(&root, "r.txt", b"x", WriteMode::Overwrite)
            .unwrap_err(),
        files
            .write(&root, "n.txt", b"x", WriteMode::CreateNew)
            .unwrap_err(),
        files.create_dir_all(&root, "d").unwrap_err(),
        files.rename(&root, "r.txt", "s.txt").unwrap_err(),
        files.remove_file(&root, "r.txt").unwrap_err(),
    ];
    for err in refusals {
        assert_eq!(err.rule(), "read-only", "{err}");
    }
    assert_eq!(std::fs::read(root.join("r.txt")).unwrap(), b"r");
}

fn assert_no_temp_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            !name.to_string_lossy().starts_with(".agentcaps-"),
            "temporary file left: {name:?}"
        );
    }
}

#[test]
fn renaming_a_directory_cannot_plant_persistence_files() {
    let f = fixture();
    std::fs::create_dir_all(f.root.join("evil/hooks")).unwrap();
    std::fs::write(f.root.join("evil/config"), b"[core]\n\tfsmonitor = evil").unwrap();
    let err = f.files.rename(&f.root, "evil", ".git").unwrap_err();
    assert_eq!(err.rule(), "write-protected", "{err}");
    assert!(!f.root.join(".git").exists());
    std::fs::create_dir_all(f.root.join("tasks")).unwrap();
    std::fs::write(f.root.join("tasks/tasks.json"), b"{}").unwrap();
    assert_eq!(
        f.files
            .rename(&f.root, "tasks", ".vscode")
            .unwrap_err()
            .rule(),
        "write-protected"
    );
    // An ordinary directory moves with its contents.
    std::fs::create_dir_all(f.root.join("plain/inner")).unwrap();
    std::fs::write(f.root.join("plain/inner/x.txt"), b"x").unwrap();
    f.files.rename(&f.root, "plain", "moved").unwrap();
    assert!(f.root.join("moved/inner/x.txt").exists());
}

/// `files` opening paths by the mechanism this copy of the suite tests
/// (`openat2`, or the component walk).
fn mechanism(mut files: agentcaps_paths::Beneath) -> agentcaps_paths::Beneath {
    files.simulate_missing_openat2(super::COMPONENT_WALK);
    files
}
