//! The hidden per-run directory a transaction's temporary files live in
//! (with [`Beneath::stage_in_commit_dir`]): one per root, at the root,
//! `.agentcaps-commit-PID-N`, created `0700` and locked (`flock`) by the
//! process that made it for as long as it is in use, removed at the end.
//! Staged files are made there and renamed into place (the same file
//! system, so each rename is atomic); files replaced or removed are moved
//! there. A process killed mid-transaction leaves its directory behind,
//! never a temporary name beside a file of the tree: the next transaction
//! in that root removes every such directory that is ours by its name and
//! owner and that no living process holds locked.
//!
//! A target on another mount than its root's (a file system mounted
//! beneath the root, or a bind mount: a rename cannot cross either) gets
//! its own hidden directory at the top of that mount, made, locked and
//! cleaned the same way.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::sync::Mutex;

use super::Beneath;
use super::sys::{self, Dir};

/// The start of every hidden directory's name. A host that writes into a
/// root by other means should not create such names: a later transaction
/// takes a left-over one for its own and removes it.
pub const COMMIT_DIR_PREFIX: &str = ".agentcaps-commit-";

/// The hidden directories of one [`Beneath`], made on first use.
#[derive(Debug)]
pub(super) struct CommitDirs {
    /// This run's directory name.
    name: OsString,
    /// By root index and mount (see `sys::mount_of`): the directory at
    /// the top of that mount beneath the root (the root itself for the
    /// root's own mount) and the hidden directory in it; `None` once one
    /// could not be made there.
    made: Mutex<HashMap<(usize, Mount), Option<Made>>>,
}

/// A mount, as `sys::mount_of` tells it.
type Mount = (u64, u64);

#[derive(Debug)]
struct Made {
    root: Dir,
    dir: Dir,
}

/// A mount's top is looked for at most this many directories up.
#[cfg(unix)]
const MAX_CLIMB: usize = 4096;

impl CommitDirs {
    pub(super) fn new() -> Self {
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = OsString::from(format!("{COMMIT_DIR_PREFIX}{}-{n}", std::process::id()));
        Self {
            name,
            made: Mutex::new(HashMap::new()),
        }
    }

    /// The hidden directory for a temporary file whose target is in `dir`
    /// below root `root` (handle `root_dir`): the root's, or where `dir` is
    /// on another mount, that mount's; `None` where none could be made.
    fn for_dir(&self, root: usize, root_dir: &Dir, dir: &Dir) -> Option<Dir> {
        let key = sys::mount_of(dir)?;
        let mut made = self.made.lock().ok()?;
        let entry = made.entry((root, key)).or_insert_with(|| {
            let top = if sys::mount_of(root_dir)? == key {
                sys::share(root_dir).ok()?
            } else {
                mount_top(dir, key)?
            };
            make(&top, &self.name)
        });
        sys::share(&entry.as_ref()?.dir).ok()
    }
}

impl Drop for CommitDirs {
    fn drop(&mut self) {
        let Ok(made) = self.made.get_mut() else {
            return;
        };
        for made in made.drain().filter_map(|(_, made)| made) {
            let Made { root, dir, .. } = made;
            drop(dir);
            // Empty by now, unless a file set aside could not be removed.
            let _ = super::transaction::remove_tree_at(&root, &self.name);
        }
    }
}

/// The top directory of the mount `key` that `dir` is on: the last one
/// on that mount climbing by `..` (a target beneath a root is on a mount
/// whose top is beneath the root, or on the root's own).
#[cfg(unix)]
fn mount_top(dir: &Dir, key: Mount) -> Option<Dir> {
    let mut top = sys::share(dir).ok()?;
    for _ in 0..MAX_CLIMB {
        let parent = sys::parent_of(&top).ok()?;
        let same_dir = sys::stat_dir(&parent).ok()?.id == sys::stat_dir(&top).ok()?.id;
        if same_dir || sys::mount_of(&parent)? != key {
            return Some(top);
        }
        top = parent;
    }
    None
}

#[cfg(not(unix))]
fn mount_top(_dir: &Dir, _key: Mount) -> Option<Dir> {
    None
}

/// Makes the hidden directory `name` in `root` (a root, or the top of a
/// mount beneath one), after removing the left-overs of dead runs there.
#[cfg(unix)]
fn make(root: &Dir, name: &OsStr) -> Option<Made> {
    remove_left_overs(root, name);
    sys::mkdir_mode_at(root, name, 0o700).ok()?;
    let dir = match sys::open_dir_at(root, name) {
        Ok(dir) if sys::try_lock(&dir).unwrap_or(false) => dir,
        _ => {
            let _ = sys::remove_dir_at(root, name);
            return None;
        }
    };
    Some(Made {
        root: sys::share(root).ok()?,
        dir,
    })
}

/// Elsewhere, temporary names stay beside their targets.
#[cfg(not(unix))]
fn make(_root: &Dir, _name: &OsStr) -> Option<Made> {
    None
}

/// Removes each hidden directory of the root other than `ours` that is
/// this user's and held by no living process (its lock is free).
#[cfg(unix)]
fn remove_left_overs(root: &Dir, ours: &OsStr) {
    let Ok(entries) = sys::read_dir(root) else {
        return;
    };
    for (entry, kind) in entries {
        let hidden = entry
            .to_str()
            .is_some_and(|name| name.starts_with(COMMIT_DIR_PREFIX));
        if !hidden || entry == ours || kind != crate::EntryKind::Dir {
            continue;
        }
        // Opened without following a link; a link by that name is not ours.
        let Ok(dir) = sys::open_dir_at(root, &entry) else {
            continue;
        };
        if sys::owned_by_me(&dir) && sys::try_lock(&dir).unwrap_or(false) {
            let _ = super::transaction::remove_tree_at(root, &entry);
        }
    }
}

impl Beneath {
    /// Keep a transaction's temporary files — staged files, files replaced
    /// or removed — in one hidden directory per root for as long as this
    /// value lives (off by default; Unix only): `.agentcaps-commit-PID-N`
    /// at the root, `0700`, removed when this value is dropped. Each file
    /// is renamed into place from there, so a process killed at any point
    /// of a transaction leaves every file of the tree old or new and every
    /// temporary file in that directory; the next transaction of a
    /// `Beneath` in this mode removes such left-overs from the roots it
    /// writes (those of this user that no living process holds locked).
    pub fn stage_in_commit_dir(&mut self, on: bool) {
        self.commit_dirs = on.then(CommitDirs::new);
    }

    /// Remove the hidden directories dead runs left at the roots (this
    /// user's, held locked by no living process), as the first
    /// transaction in [`Beneath::stage_in_commit_dir`]'s mode does: for a
    /// host that wants them gone also when it has nothing to commit.
    /// Left-overs at the top of a mount beneath a root go with the next
    /// transaction that writes on that mount.
    pub fn remove_commit_left_overs(&self) {
        #[cfg(unix)]
        for (_, dir) in &self.roots {
            if let Some(dir) = dir {
                remove_left_overs(dir, OsStr::new(""));
            }
        }
    }

    /// Where the temporary files for a target in `dir` (below root
    /// `root`) go: the root's hidden directory in that mode, or `dir`.
    pub(super) fn temp_dir(&self, root: usize, dir: &Dir) -> Result<Dir, super::PathError> {
        let hidden = self.commit_dirs.as_ref().and_then(|dirs| {
            let root_dir = self.roots.get(root)?.1.as_ref()?;
            dirs.for_dir(root, root_dir, dir)
        });
        match hidden {
            Some(hidden) => Ok(hidden),
            None => sys::share(dir).map_err(|e| super::PathError::io("open", "", e)),
        }
    }
}
