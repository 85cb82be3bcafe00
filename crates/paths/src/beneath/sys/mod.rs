//! The system calls of [`Beneath`](super::Beneath), in one place, behind
//! one small interface: a directory handle ([`Dir`]) and the `*at`
//! operations relative to it. Each platform has its own mechanism:
//!
//! - **Linux**: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//!   RESOLVE_NO_MAGICLINKS)` resolves a path below a root's handle in one
//!   call, refusing every link; where the kernel lacks it (`ENOSYS`: old
//!   kernels, seccomp filters) the component walk below takes over.
//!   Exchanging two names is `renameat2(RENAME_EXCHANGE)`.
//! - **macOS and other Unix**: the component walk — one `openat` per name,
//!   each with `O_NOFOLLOW`, so a link anywhere on the way fails the open.
//!   Exchanging is `renameatx_np(RENAME_SWAP)` on macOS.
//! - **Windows**: see the `windows` module.
//!
//! The layers above decide on [`Why`] an operation failed, never on a
//! platform's error numbers.

use std::io;
use std::time::SystemTime;

use crate::EntryKind;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

/// What the layers above need to know about a failed system call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// A link was met where none may be, or the path would leave the root
    /// (`..`, an absolute component).
    Link,
    /// A component that must be a directory is not one.
    NotDir,
    /// A directory is where something else was expected.
    IsDir,
    /// Something already exists at the name.
    Exists,
    /// Nothing is at the name.
    Missing,
    /// A directory being replaced is not empty.
    NotEmpty,
    /// The platform or file system cannot do this (no exchange, no hard
    /// links).
    Unsupported,
    /// Anything else: reported as I/O.
    Other,
}

/// A failed system call: why, in the terms above, and the platform's own
/// error for the report.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) why: Why,
    pub(crate) error: io::Error,
}

impl Failed {
    pub(crate) fn new(why: Why, error: io::Error) -> Self {
        Failed { why, error }
    }
}

impl From<Failed> for io::Error {
    fn from(failed: Failed) -> Self {
        failed.error
    }
}

/// How a rename treats the name it moves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rename {
    /// Replace whatever file is there.
    Replace,
    /// Fail with [`Why::Exists`] when anything is there.
    NoReplace,
    /// Swap the two names atomically (both must exist).
    Exchange,
}

/// What `lstat` (or `fstat`) says, in platform-neutral terms.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stat {
    pub(crate) kind: EntryKind,
    pub(crate) len: u64,
    /// Permission bits (`0o777`); on Windows `0o444` or `0o644`.
    pub(crate) mode: u32,
    pub(crate) modified: Option<SystemTime>,
    /// Which file it is: device and inode on Unix; `(0, 0)` on Windows,
    /// where a directory held open cannot be renamed and a file's identity
    /// is not read (its size and modification time stand for it).
    pub(crate) id: (u64, u64),
}

/// The permission bits of a new file that replaces nothing.
pub(crate) const NEW_FILE_MODE: u32 = 0o644;
