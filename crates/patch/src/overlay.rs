//! The tree as a patch would leave it, for the path policy to judge.
//!
//! A patch never creates links (mode `120000` is refused at parse time), so
//! the overlay differs from the tree below it only by files created,
//! removed and moved, and by directories created for new files. A moved
//! entry shows whatever its source was — a link stays a link at its new
//! name — so a patch that renames a link and writes beyond it is judged
//! through the link (CVE-2023-23946).

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use agentcaps_paths::{EntryKind, FileSystem};

/// What a changed name holds after the patch.
#[derive(Debug, Clone)]
pub(crate) enum After {
    /// Removed (deleted, or the source of a move).
    Gone,
    /// A regular file the patch writes.
    File,
    /// Whatever was at this other (absolute) path before the patch.
    MovedFrom(PathBuf),
}

/// A [`FileSystem`] view: `inner` with the patch's changes on top.
pub(crate) struct Overlay<'a> {
    inner: &'a dyn FileSystem,
    changes: HashMap<PathBuf, After>,
    dirs: HashSet<PathBuf>,
}

impl<'a> Overlay<'a> {
    pub(crate) fn new(inner: &'a dyn FileSystem) -> Self {
        Overlay {
            inner,
            changes: HashMap::new(),
            dirs: HashSet::new(),
        }
    }

    /// Records a change at `path` (absolute). Ancestors of written names up
    /// to `base` appear as directories where nothing is.
    pub(crate) fn set(&mut self, base: &Path, path: PathBuf, after: After) {
        if !matches!(after, After::Gone) {
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d == base || !d.starts_with(base) || !self.dirs.insert(d.to_path_buf()) {
                    break;
                }
                dir = d.parent();
            }
        }
        self.changes.insert(path, after);
    }
}

impl FileSystem for Overlay<'_> {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match self.changes.get(path) {
            Some(After::Gone) => Ok(None),
            Some(After::File) => Ok(Some(EntryKind::File)),
            Some(After::MovedFrom(src)) => self.inner.entry(src),
            None => match self.inner.entry(path)? {
                None if self.dirs.contains(path) => Ok(Some(EntryKind::Dir)),
                other => Ok(other),
            },
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        match self.changes.get(path) {
            Some(After::MovedFrom(src)) => self.inner.read_link(src),
            Some(After::Gone | After::File) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a symbolic link after the patch",
            )),
            None => self.inner.read_link(path),
        }
    }
}
