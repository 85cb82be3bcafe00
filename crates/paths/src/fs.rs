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

/// What one [`FileSystem::probe`] found at a name with more to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Nothing is there (or a parent is not a directory).
    Missing,
    /// A link, and its target as stored.
    Link(PathBuf),
    /// Something that is not a link (a directory, unless a later lookup
    /// says otherwise).
    Present,
}

/// A file-system view: the two lookups a check makes.
///
/// Each call is one *lookup* (one metadata call or readlink). Implementations:
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

    /// Whether [`FileSystem::probe`] answers in **one** lookup. When false
    /// (the default), checks use [`FileSystem::entry`] and
    /// [`FileSystem::read_link`] only.
    fn probes_in_one_lookup(&self) -> bool {
        false
    }

    /// One lookup for a name that is not the last to resolve: missing, a
    /// link (with its target), or present. [`RealFs`](crate::RealFs) answers
    /// with a single `readlink`, which also saves the second lookup a link
    /// costs.
    ///
    /// # Errors
    ///
    /// I/O failures other than "missing", "not a directory" and "not a
    /// link".
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        match self.entry(path)? {
            None => Ok(Probe::Missing),
            Some(EntryKind::Symlink) => self.read_link(path).map(Probe::Link),
            Some(_) => Ok(Probe::Present),
        }
    }
}

impl<T: FileSystem + ?Sized> FileSystem for &T {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        (**self).entry(path)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        (**self).read_link(path)
    }
    fn probes_in_one_lookup(&self) -> bool {
        (**self).probes_in_one_lookup()
    }
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        (**self).probe(path)
    }
}
