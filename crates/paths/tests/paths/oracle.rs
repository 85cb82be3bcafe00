//! The kernel as a second opinion (Linux): on generated trees of
//! directories, files and symlinks, the POSIX real location equals
//! `std::fs::canonicalize`, the decision is "inside" exactly when every
//! reading is under the root, and `openat2(RESOLVE_BENEATH)` agrees.

use std::io::ErrorKind;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, PathError, PathPolicy, RealFs};
use proptest::prelude::*;
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const NAMES: [&str; 3] = ["a", "b", "c"];

/// Link targets: relative (down, up, sideways, through `..`), absolute
/// (inside and outside the root), dangling, chained through other links.
const TARGETS: [&str; 14] = [
    "a",
    "b/c",
    "..",
    "../a",
    "../../outside",
    "c/../a",
    "{root}/a/b",
    "{outside}",
    "missing/x",
    ".",
    "a/b/c",
    "../..",
    "b",
    "{root}",
];

/// Targets that only go down: with them, and with spellings whose `..`
/// never climbs above the root lexically, nothing ever steps outside.
const DOWN_TARGETS: [&str; 5] = ["a", "b/c", "./b", "c/a", "missing"];

#[derive(Debug, Clone)]
enum Kind {
    Dir,
    File,
    Link(usize),
}

#[derive(Debug, Clone)]
struct Entry {
    path: Vec<usize>,
    kind: Kind,
}

fn entries(targets: usize) -> impl Strategy<Value = Vec<Entry>> {
    let entry = (
        prop::collection::vec(0..NAMES.len(), 1..=3),
        prop_oneof![
            2 => Just(Kind::Dir),
            1 => Just(Kind::File),
            2 => (0..targets).prop_map(Kind::Link),
        ],
    )
        .prop_map(|(path, kind)| Entry { path, kind });
    prop::collection::vec(entry, 1..12)
}

fn spellings(with_up: bool) -> impl Strategy<Value = Vec<String>> {
    let part = if with_up {
        prop_oneof![4 => (0..NAMES.len()).prop_map(|i| NAMES[i].to_owned()), 1 => Just("..".to_owned()), 1 => Just(".".to_owned())]
            .boxed()
    } else {
        (0..NAMES.len()).prop_map(|i| NAMES[i].to_owned()).boxed()
    };
    prop::collection::vec(
        prop::collection::vec(part, 1..5).prop_map(|p| p.join("/")),
        1..12,
    )
}

/// Build the tree under `tmp/root` (with `tmp/outside` beside it).
fn build(tmp: &Path, entries: &[Entry], targets: &[&str]) -> PathBuf {
    let root = tmp.join("root");
    let outside = tmp.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"s").unwrap();
    for entry in entries {
        let mut path = root.clone();
        for name in &entry.path {
            path.push(NAMES[*name]);
        }
        // Parents that are missing become directories; an entry whose
        // parent is a file or a link (or that exists) is skipped.
        let parent = path.parent().unwrap();
        if std::fs::create_dir_all(parent).is_err() || parent.symlink_metadata().is_err() {
            continue;
        }
        if path.symlink_metadata().is_ok() {
            continue;
        }
        match entry.kind {
            Kind::Dir => {
                let _ = std::fs::create_dir(&path);
            }
            Kind::File => {
                let _ = std::fs::write(&path, b"f");
            }
            Kind::Link(target) => {
                let target = targets[target]
                    .replace("{root}", &root.display().to_string())
                    .replace("{outside}", &outside.display().to_string());
                let _ = std::os::unix::fs::symlink(target, &path);
            }
        }
    }
    root
}

fn beneath(root_fd: &OwnedFd, spelling: &str) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        root_fd,
        spelling,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
}

fn is_loop(error: &PathError) -> bool {
    matches!(
        error,
        PathError::LinkLoop { .. } | PathError::TooManyLinks { .. }
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn posix_reading_agrees_with_the_kernel(tree in entries(TARGETS.len()), spellings in spellings(true)) {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let root = build(&tmp, &tree, &TARGETS);
        let everything = agentcaps_paths::danger::without_defaults(PathPolicy::builder().allow("/")).build().unwrap();
        let rooted = agentcaps_paths::danger::without_defaults(PathPolicy::builder().allow(&root)).build().unwrap();
        let root_fd = rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        for spelling in &spellings {
            let kernel = std::fs::canonicalize(root.join(spelling));
            let located = everything.locate(&RealFs, &root, spelling);
            match (&kernel, &located) {
                (Ok(real), Ok(located)) => prop_assert_eq!(&located.posix, real, "{} in {:?}", spelling, tree),
                (Err(e), Err(error)) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                    prop_assert!(is_loop(error), "{}: kernel ELOOP, crate {:?}", spelling, error)
                }
                (Err(e), Ok(_)) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                    prop_assert!(false, "{}: kernel ELOOP, crate found a location", spelling)
                }
                (Err(e), _) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {}
                (Ok(real), Err(error)) => prop_assert!(false, "{}: kernel {:?}, crate {:?}", spelling, real, error),
                (Err(e), crate_says) => prop_assert!(false, "{}: kernel {:?}, crate {:?}", spelling, e, crate_says),
            }
            let Ok(located) = located else { continue };
            // The decision is "inside" exactly when every reading is.
            let inside = [&located.lexical, &located.posix, &located.windows].iter().all(|p| p.starts_with(&root));
            let decision = rooted.check(&root, spelling, Access::Read);
            prop_assert_eq!(decision.is_ok(), inside, "{}: {:?} vs {:?}", spelling, decision, located);
            if let Err(PathError::OutsideRoots { reading: agentcaps_paths::Reading::Posix, .. }) = &decision {
                prop_assert!(!located.posix.starts_with(&root));
            }
            // The kernel's RESOLVE_BENEATH: success means it never left the
            // root, so the real location is inside; a real location outside
            // means it must have left.
            if kernel.is_ok() {
                match beneath(&root_fd, spelling) {
                    Ok(_) => prop_assert!(located.posix.starts_with(&root), "{}: openat2 ok, posix {:?}", spelling, located.posix),
                    Err(errno) => prop_assert!(
                        errno == Errno::XDEV || !located.posix.starts_with(&root) || errno == Errno::LOOP,
                        "{}: openat2 {:?} for an inside location {:?}", spelling, errno, located.posix
                    ),
                }
                if !located.posix.starts_with(&root) {
                    prop_assert_eq!(beneath(&root_fd, spelling).err(), Some(Errno::XDEV), "{}", spelling);
                }
            }
        }
    }

    #[test]
    fn decision_agrees_with_openat2_beneath_when_nothing_steps_out(
        tree in entries(DOWN_TARGETS.len()),
        spellings in spellings(false),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let tmp = tmp.path().canonicalize().unwrap();
        let root = build(&tmp, &tree, &DOWN_TARGETS);
        let rooted = agentcaps_paths::danger::without_defaults(PathPolicy::builder().allow(&root)).build().unwrap();
        let root_fd = rustix::fs::open(&root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        for spelling in &spellings {
            let decision = rooted.check(&root, spelling, Access::Read);
            match beneath(&root_fd, spelling) {
                Ok(_) => prop_assert!(decision.is_ok(), "{}: openat2 ok, crate {:?}", spelling, decision),
                Err(Errno::XDEV) => prop_assert!(decision.is_err(), "{}: EXDEV, crate allowed", spelling),
                Err(Errno::LOOP) => prop_assert!(
                    matches!(&decision, Err(e) if is_loop(e)),
                    "{}: ELOOP, crate {:?}", spelling, decision
                ),
                // Missing or not a directory: the crate judges where it
                // would be created, inside.
                Err(_) => prop_assert!(decision.is_ok(), "{}: crate {:?}", spelling, decision),
            }
        }
    }
}
