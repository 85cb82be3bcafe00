//! The file-system view a check looks through.

use std::io;
use std::path::{Path, PathBuf};

/// What is at a name, without following a final link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (device, socket, FIFO).
    Other,
}

/// A file-system view: the two lookups a check makes.
///
/// Each call is one *lookup* in the sense of SPEC §1.2. Implementations:
/// [`RealFs`](crate::RealFs) (the host), [`SimFs`](crate::SimFs) (in memory,
/// for tests and simulation), or a host's own overlay (such as the tree a
/// patch would leave behind).
pub trait FileSystem: Send + Sync {
    /// `lstat` on an absolute path: what is there, without following a final
    /// link. `Ok(None)` when nothing is (including when a parent is missing
    /// or is not a directory).
    ///
    /// # Errors
    ///
    /// Any other I/O failure (permission denied, ...).
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>>;

    /// The target of the link at `path`, exactly as stored.
    ///
    /// # Errors
    ///
    /// When `path` is not a link or cannot be read.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
}

impl<T: FileSystem + ?Sized> FileSystem for &T {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        (**self).entry(path)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        (**self).read_link(path)
    }
}
