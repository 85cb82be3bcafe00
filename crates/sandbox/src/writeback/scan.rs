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

#[cfg(unix)]
use agentcaps_paths::long_path;

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
    /// What the real tree holds there, as far as it is the entry the
    /// command replaced: beneath a directory the command put in place of a
    /// link or a file, the real tree holds nothing there (whatever the
    /// link's target holds at that name is not this entry).
    pub(crate) lower: Lower,
    /// The real entry (or, for a directory, anything beneath it that
    /// the commit would remove) changed after the view was built: by the
    /// host or another run, not by this command.
    pub(crate) changed_since: bool,
    /// The real directory the commit would remove or replace here (or one
    /// beneath it) cannot be listed by the runner: it holds entries the
    /// command never saw, and the commit keeps it.
    pub(crate) unseen: bool,
    /// The staged entry's own path (its content, for files).
    pub(crate) staged: PathBuf,
}

/// How much of the real tree the command saw beneath a directory of its
/// staging layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(unix)]
enum Seen {
    /// The real directory, merged with the staging layer's: what the real
    /// tree holds there is what the command worked on.
    Merged,
    /// A real directory the command never saw the entries of (it removed
    /// it and made a new one, an opaque directory, or this is beneath
    /// one): every real entry the staging layer does not hold is deleted.
    Hidden,
    /// No real directory (nothing there, or a link or a file the command
    /// replaced by a directory): every entry beneath is new.
    Nothing,
}

/// When the view was built, as the file system's clock tells it: the
/// staging layer's birth time. A real entry whose status changed after
/// that was changed by someone else while the command ran. `None` where
/// the file system records no birth time (every real entry a change
/// touches then counts as changed: no edit is ever overwritten unseen).
#[cfg(target_os = "linux")]
fn built_at(upper: &Path) -> Option<(i64, u32)> {
    use rustix::fs::{AtFlags, StatxFlags, statx};
    let st = statx(
        rustix::fs::CWD,
        upper,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BTIME,
    )
    .ok()?;
    (st.stx_mask & StatxFlags::BTIME.bits() != 0)
        .then_some((st.stx_btime.tv_sec, st.stx_btime.tv_nsec))
}

#[cfg(all(unix, not(target_os = "linux")))]
fn built_at(_upper: &Path) -> Option<(i64, u32)> {
    None
}

/// Whether the real entry at `path` changed after `built` (its status
/// change time is later; that time cannot be set by any program).
#[cfg(unix)]
fn changed_after(meta: &std::fs::Metadata, built: Option<(i64, u32)>) -> bool {
    let Some(built) = built else {
        return true;
    };
    let ctime = (meta.ctime(), u32::try_from(meta.ctime_nsec()).unwrap_or(0));
    ctime > built
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
        let mut walker = Walker {
            root,
            upper,
            built: built_at(upper),
            out: Vec::new(),
        };
        walker.walk(Path::new(""), Seen::Merged)?;
        Ok(walker.out)
    }
}

#[cfg(unix)]
struct Walker<'a> {
    root: &'a Path,
    upper: &'a Path,
    built: Option<(i64, u32)>,
    out: Vec<Entry>,
}

#[cfg(unix)]
impl Walker<'_> {
    /// What the real tree holds at `rel`, and whether it changed since the
    /// view was built; nothing when the command saw no real directory
    /// above it.
    fn lower(&self, rel: &Path, above: Seen) -> (Lower, bool) {
        if above == Seen::Nothing {
            return (Lower::Absent, false);
        }
        match long_path::symlink_metadata(&self.root.join(rel)) {
            Err(_) => (Lower::Absent, false),
            Ok(meta) => (lower_of(&meta), changed_after(&meta, self.built)),
        }
    }

    fn walk(&mut self, rel: &Path, here: Seen) -> io::Result<()> {
        let dir = self.upper.join(rel);
        let mut names = long_path::read_dir_names(&dir)?;
        names.sort();
        if here == Seen::Hidden {
            self.hidden(rel, &names)?;
        }
        for name in names {
            let rel = rel.join(&name);
            let staged = self.upper.join(&rel);
            let meta = long_path::symlink_metadata(&staged)?;
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
                Upper::Symlink(long_path::read_link(&staged)?)
            } else if kind.is_char_device() && meta.rdev() == 0 {
                Upper::Deleted
            } else {
                Upper::Special
            };
            let (lower, mut changed_since) = self.lower(&rel, here);
            let below = match (&upper_kind, lower) {
                (Upper::Dir { opaque, .. }, Lower::Dir { .. }) => {
                    if *opaque || here == Seen::Hidden {
                        Seen::Hidden
                    } else {
                        Seen::Merged
                    }
                }
                _ => Seen::Nothing,
            };
            // A real directory the commit removes (deleted, or replaced by
            // a file or a link): anything changed beneath it counts too.
            let removes_dir =
                matches!(lower, Lower::Dir { .. }) && !matches!(upper_kind, Upper::Dir { .. });
            let mut unseen = false;
            if removes_dir && !changed_since {
                match self.changed_beneath(&rel) {
                    Some(changed) => changed_since = changed,
                    None => unseen = true,
                }
            }
            let descend = matches!(upper_kind, Upper::Dir { .. });
            self.out.push(Entry {
                rel: rel.clone(),
                upper: upper_kind,
                lower,
                changed_since,
                unseen,
                staged,
            });
            if descend {
                self.walk(&rel, below)?;
            }
        }
        Ok(())
    }

    /// The real entries beneath `rel`, a directory whose real entries the
    /// command did not see, that the staging layer does not hold (`names`):
    /// each is deleted.
    fn hidden(&mut self, rel: &Path, names: &[std::ffi::OsString]) -> io::Result<()> {
        let Ok(mut lower) = long_path::read_dir_names(&self.root.join(rel)) else {
            // What it holds is unknown: the directory is not replaced.
            if let Some(entry) = self.out.iter_mut().rev().find(|entry| entry.rel == rel) {
                entry.unseen = true;
            }
            return Ok(());
        };
        lower.sort();
        for name in lower {
            if names.binary_search(&name).is_ok() {
                continue;
            }
            let child = rel.join(&name);
            let (lower, mut changed_since) = self.lower(&child, Seen::Hidden);
            let mut unseen = false;
            if matches!(lower, Lower::Dir { .. }) && !changed_since {
                match self.changed_beneath(&child) {
                    Some(changed) => changed_since = changed,
                    None => unseen = true,
                }
            }
            self.out.push(Entry {
                staged: self.upper.join(&child),
                rel: child,
                upper: Upper::Deleted,
                lower,
                changed_since,
                unseen,
            });
        }
        Ok(())
    }

    /// Whether anything beneath the real directory `rel` changed since the
    /// view was built (an entry gone since it was listed did); `None` when
    /// a directory there cannot be listed, so what it holds is unknown.
    fn changed_beneath(&self, rel: &Path) -> Option<bool> {
        let names = long_path::read_dir_names(&self.root.join(rel)).ok()?;
        for name in names {
            let child = rel.join(name);
            let changed = match long_path::symlink_metadata(&self.root.join(&child)) {
                Err(error) if error.kind() == io::ErrorKind::NotFound => true,
                Err(_) => return None,
                Ok(meta) => {
                    changed_after(&meta, self.built)
                        || (meta.is_dir() && self.changed_beneath(&child)?)
                }
            };
            if changed {
                return Some(true);
            }
        }
        Some(false)
    }
}

#[cfg(unix)]
fn is_opaque(dir: &Path) -> bool {
    matches!(xattr_value(dir, OPAQUE).as_deref(), Some(b"y" | b"x"))
}

#[cfg(unix)]
fn xattr_value(path: &Path, name: &str) -> Option<Vec<u8>> {
    let mut buffer = [0u8; 8];
    let len = if long_path::is_long(path) {
        let dir = long_path::open_dir_nofollow(path).ok()?;
        rustix::fs::fgetxattr(&dir, name, &mut buffer).ok()?
    } else {
        rustix::fs::lgetxattr(path, name, &mut buffer).ok()?
    };
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
    long_path::symlink_metadata(path).map_or(Lower::Absent, |meta| lower_of(&meta))
}

/// What a real entry of this `lstat` is.
#[cfg(unix)]
fn lower_of(meta: &std::fs::Metadata) -> Lower {
    if meta.file_type().is_symlink() {
        Lower::Symlink
    } else if meta.is_dir() {
        Lower::Dir {
            mode: meta.mode() & 0o7777,
        }
    } else if meta.is_file() {
        Lower::File {
            mode: meta.mode() & 0o7777,
            len: meta.len(),
        }
    } else {
        Lower::Other
    }
}
