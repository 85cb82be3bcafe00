//! Acting on paths beneath a root's directory handle (SPEC §1.3).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::{EntryKind, PathError, PathPolicy};

/// How [`Beneath::write`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteMode {
    /// Refuse when something already exists at the target.
    CreateNew,
    /// Replace the target's contents (atomically, by rename).
    Overwrite,
}

/// What [`Beneath::metadata`] reports (never following a final link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryInfo {
    /// File, directory, link or other.
    pub kind: EntryKind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification time, where the file system records one.
    pub modified: Option<SystemTime>,
    /// Whether the owner's write permission bit is clear.
    pub readonly: bool,
}

/// One entry of [`Beneath::list`]. Links are reported as links, never
/// followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name (not a path).
    pub name: OsString,
    /// What it is, as `lstat` says.
    pub kind: EntryKind,
}

/// A file written beside its target, waiting for [`Beneath::commit`] or
/// [`Beneath::discard`].
#[derive(Debug)]
#[must_use = "a staged file stays on disk until committed or discarded"]
pub struct Staged {
    pub(crate) root: usize,
    pub(crate) target: PathBuf,
    pub(crate) temp: PathBuf,
    pub(crate) spelling: String,
}

impl Staged {
    /// The real location the staged file will replace.
    pub fn target(&self) -> &Path {
        &self.target
    }
}

/// File operations beneath the policy's root directory handles, with no
/// check-then-use gap (SPEC §1.3).
///
/// Every method judges the spelling with the policy first, then acts
/// relative to the root's directory handle at the real location the check
/// computed, refusing any link on the way — a link swapped in after the
/// check makes the operation fail instead of escaping.
///
/// # Security
///
/// Hard links are invisible to every path check: a hard link inside a root
/// to a file elsewhere can be read. Writes never modify a file in place (a
/// temporary file is renamed over it), so a hard-linked inode outside the
/// root is never written.
#[derive(Debug)]
pub struct Beneath {
    pub(crate) policy: PathPolicy,
    pub(crate) durable: bool,
}

fn not_yet(spelling: &str) -> PathError {
    PathError::Io {
        op: "not implemented yet",
        path: PathBuf::from(spelling),
        source: std::io::Error::from(std::io::ErrorKind::Unsupported),
    }
}

impl Beneath {
    /// The policy this handle judges with.
    pub fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    /// Open a file for reading.
    ///
    /// # Errors
    ///
    /// A refusal of [`PathPolicy::check`] for [`Access::Read`](crate::Access::Read),
    /// [`PathError::Changed`] when a link appeared on the way, or I/O.
    pub fn open_read(&self, base: &Path, spelling: &str) -> Result<std::fs::File, PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// Read a whole file of at most `max_bytes` bytes.
    ///
    /// # Errors
    ///
    /// As [`Beneath::open_read`], and [`PathError::TooLarge`].
    pub fn read(&self, base: &Path, spelling: &str, max_bytes: u64) -> Result<Vec<u8>, PathError> {
        let _ = (base, max_bytes);
        Err(not_yet(spelling))
    }

    /// What is at the path, without following a final link.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Read`](crate::Access::Read), or I/O.
    pub fn metadata(&self, base: &Path, spelling: &str) -> Result<EntryInfo, PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// List a directory; links are reported, never followed.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::List`](crate::Access::List), or I/O.
    pub fn list(&self, base: &Path, spelling: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// Write `bytes` to a file: a temporary file beside it (created with
    /// `O_EXCL | O_NOFOLLOW`) renamed into place.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`](crate::Access::Write), a non-portable
    /// new name, [`PathError::AlreadyExists`] with [`WriteMode::CreateNew`],
    /// or I/O.
    pub fn write(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<(), PathError> {
        let _ = (base, bytes, mode);
        Err(not_yet(spelling))
    }

    /// Create a directory and its missing parents.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`](crate::Access::Write), a non-portable
    /// new name, or I/O.
    pub fn create_dir_all(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// Rename `from` to `to`, refusing to replace an existing target.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`](crate::Access::Write) on either,
    /// [`PathError::AlreadyExists`], or I/O.
    pub fn rename(&self, base: &Path, from: &str, to: &str) -> Result<(), PathError> {
        let _ = (base, to);
        Err(not_yet(from))
    }

    /// Remove a file (or a link, never its target).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`](crate::Access::Write), or I/O.
    pub fn remove_file(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// Remove an empty directory.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`](crate::Access::Write), or I/O.
    pub fn remove_dir(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let _ = base;
        Err(not_yet(spelling))
    }

    /// Write `bytes` to a temporary file beside the target, to be put in
    /// place by [`Beneath::commit`] (for transactions over many files).
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`].
    pub fn stage(&self, base: &Path, spelling: &str, bytes: &[u8]) -> Result<Staged, PathError> {
        let _ = (base, bytes);
        Err(not_yet(spelling))
    }

    /// Rename a staged file over its target (replacing it).
    ///
    /// # Errors
    ///
    /// I/O, or [`PathError::Changed`] when the directory was swapped.
    pub fn commit(&self, staged: Staged) -> Result<(), PathError> {
        Err(not_yet(&staged.spelling))
    }

    /// Remove a staged file.
    ///
    /// # Errors
    ///
    /// I/O.
    pub fn discard(&self, staged: Staged) -> Result<(), PathError> {
        Err(not_yet(&staged.spelling))
    }

    /// Whether to `fsync` written files and their directories (off by
    /// default).
    pub fn set_durable(&mut self, on: bool) {
        self.durable = on;
    }
}
