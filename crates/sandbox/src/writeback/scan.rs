//! Reading a writable root's staging (upper) layer after the command.
//!
//! An overlay records a command's changes in its upper directory: new and
//! modified files whole (a copy-up), deletions as whiteouts (character
//! devices 0:0), a directory replaced as an *opaque* directory (extended
//! attribute `user.overlay.opaque`, whose old entries are all gone), and
//! the directories leading to any of these. This module turns that into a
//! list of entries, each with what the real tree holds at the same path.

use std::io;
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What is in the staging layer at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    not(unix),
    expect(dead_code, reason = "staging layers are only read on Unix (overlays)")
)]
pub(crate) enum Upper {
    /// A regular file (new, modified, or only its mode changed).
    File {
        /// Permission bits, set-id and sticky bits included.
        mode: u32,
        /// Device and inode (hard links share them).
        inode: (u64, u64),
        /// Hard links to it.
        links: u64,
    },
    /// A directory; `opaque` when it replaced the real one (whose entries
    /// are then all deleted).
    Dir {
        /// Permission bits.
        mode: u32,
        /// It hides everything the real tree has beneath it.
        opaque: bool,
    },
    /// A symbolic link to this target.
    Symlink(PathBuf),
    /// A deletion (a whiteout, or an entry an opaque directory hides).
    Deleted,
    /// A FIFO, socket or device.
    Special,
}

/// What the real tree holds at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lower {
    /// Nothing.
    Absent,
    /// A regular file with these permission bits and size.
    File {
        /// Permission bits.
        mode: u32,
        /// Size in bytes.
        len: u64,
    },
    /// A directory with these permission bits.
    Dir {
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link.
    Symlink,
    /// Something else.
    Other,
}

/// One changed path of a writable root.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The path relative to the root.
    pub(crate) rel: PathBuf,
    /// What the command left there.
    pub(crate) upper: Upper,
    /// What the real tree holds there.
    pub(crate) lower: Lower,
    /// The staged entry's own path (its content, for files).
    pub(crate) staged: PathBuf,
}

/// The extended attribute that makes an upper directory opaque (overlays
/// mounted with `userxattr`).
#[cfg(unix)]
const OPAQUE: &str = "user.overlay.opaque";

/// Every entry of `upper` (the staging layer over `root`), parents before
/// their children, each with what `root` holds at that path.
///
/// # Errors
///
/// I/O reading the staging layer (the caller then commits nothing).
pub(crate) fn scan(root: &Path, upper: &Path) -> io::Result<Vec<Entry>> {
    #[cfg(not(unix))]
    {
        let _ = (root, upper);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "staging layers exist only where views do (Linux)",
        ))
    }
    #[cfg(unix)]
    {
        let mut entries = Vec::new();
        walk(root, upper, Path::new(""), &mut entries)?;
        Ok(entries)
    }
}

#[cfg(unix)]
fn walk(root: &Path, upper: &Path, rel: &Path, out: &mut Vec<Entry>) -> io::Result<()> {
    let dir = upper.join(rel);
    let mut names: Vec<_> = std::fs::read_dir(&dir)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<io::Result<_>>()?;
    names.sort();
    for name in names {
        let rel = rel.join(&name);
        let staged = upper.join(&rel);
        let meta = std::fs::symlink_metadata(&staged)?;
        let kind = meta.file_type();
        let upper_kind = if kind.is_file() {
            Upper::File {
                mode: meta.mode() & 0o7777,
                inode: (meta.dev(), meta.ino()),
                links: meta.nlink(),
            }
        } else if kind.is_dir() {
            Upper::Dir {
                mode: meta.mode() & 0o7777,
                opaque: is_opaque(&staged),
            }
        } else if kind.is_symlink() {
            Upper::Symlink(std::fs::read_link(&staged)?)
        } else if kind.is_char_device() && meta.rdev() == 0 {
            Upper::Deleted
        } else {
            Upper::Special
        };
        let lower = lower_at(&root.join(&rel));
        let descend = matches!(upper_kind, Upper::Dir { .. });
        let opaque = matches!(upper_kind, Upper::Dir { opaque: true, .. });
        out.push(Entry {
            rel: rel.clone(),
            upper: upper_kind,
            lower,
            staged,
        });
        if opaque && matches!(lower, Lower::Dir { .. }) {
            hidden_by_opaque(root, upper, &rel, out)?;
        }
        if descend {
            walk(root, upper, &rel, out)?;
        }
    }
    Ok(())
}

/// The real tree's entries beneath an opaque directory that the command
/// did not recreate: each is deleted.
#[cfg(unix)]
fn hidden_by_opaque(root: &Path, upper: &Path, rel: &Path, out: &mut Vec<Entry>) -> io::Result<()> {
    let Ok(read) = std::fs::read_dir(root.join(rel)) else {
        return Ok(());
    };
    let mut names: Vec<_> = read.filter_map(|e| e.ok().map(|e| e.file_name())).collect();
    names.sort();
    for name in names {
        let child = rel.join(&name);
        let staged = upper.join(&child);
        if std::fs::symlink_metadata(&staged).is_ok() {
            continue;
        }
        out.push(Entry {
            lower: lower_at(&root.join(&child)),
            rel: child,
            upper: Upper::Deleted,
            staged,
        });
    }
    Ok(())
}

#[cfg(unix)]
fn is_opaque(dir: &Path) -> bool {
    matches!(xattr_value(dir, OPAQUE).as_deref(), Some(b"y" | b"x"))
}

#[cfg(unix)]
fn xattr_value(path: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buffer = [0u8; 8];
    let len = rustix::fs::lgetxattr(path, name, &mut buffer).ok()?;
    buffer.get(..len).map(<[u8]>::to_vec)
}

/// What the real tree holds at `path` (never following a final link).
#[cfg(not(unix))]
pub(crate) fn lower_at(path: &Path) -> Lower {
    let mode = |meta: &std::fs::Metadata| {
        if meta.permissions().readonly() {
            0o555
        } else {
            0o755
        }
    };
    match std::fs::symlink_metadata(path) {
        Err(_) => Lower::Absent,
        Ok(meta) if meta.file_type().is_symlink() => Lower::Symlink,
        Ok(meta) if meta.is_dir() => Lower::Dir { mode: mode(&meta) },
        Ok(meta) if meta.is_file() => Lower::File {
            mode: mode(&meta) & 0o666,
            len: meta.len(),
        },
        Ok(_) => Lower::Other,
    }
}

/// What the real tree holds at `path` (never following a final link).
#[cfg(unix)]
pub(crate) fn lower_at(path: &Path) -> Lower {
    match std::fs::symlink_metadata(path) {
        Err(_) => Lower::Absent,
        Ok(meta) if meta.file_type().is_symlink() => Lower::Symlink,
        Ok(meta) if meta.is_dir() => Lower::Dir {
            mode: meta.mode() & 0o7777,
        },
        Ok(meta) if meta.is_file() => Lower::File {
            mode: meta.mode() & 0o7777,
            len: meta.len(),
        },
        Ok(_) => Lower::Other,
    }
}
