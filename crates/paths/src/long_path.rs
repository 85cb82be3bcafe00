//! Paths longer than the kernel takes in one call.
//!
//! Linux refuses a path of `PATH_MAX` (4096) bytes or more with
//! `ENAMETOOLONG`, however it was made: a tree can be as deep as its
//! programs make it, one directory at a time. These functions look such a
//! path up the way a single call would, in pieces: each piece of fewer
//! than `PATH_MAX` bytes is opened as a directory handle relative to the
//! previous one (links on the way followed, `..` taken from where the
//! lookup really is — exactly what one lookup of the whole path does), and
//! the last piece is looked up relative to that handle. A path short
//! enough is looked up in one call, as `std::fs` does.
//!
//! Elsewhere than Linux they are `std::fs`'s own calls.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

/// Paths this long or longer are looked up in pieces (Linux's
/// `PATH_MAX`, the terminating NUL included).
pub const PATH_MAX: usize = 4096;

/// The longest piece opened in one call (well below [`PATH_MAX`]).
#[cfg(target_os = "linux")]
const PIECE: usize = 3072;

/// `lstat`: what is at `path`, a final link not followed.
///
/// # Errors
///
/// As [`std::fs::symlink_metadata`].
pub fn symlink_metadata(path: &Path) -> io::Result<Metadata> {
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::open_at_end(path, rustix::fs::OFlags::PATH)?.metadata();
    }
    std::fs::symlink_metadata(path)
}

/// `stat`: what `path` leads to, a final link followed.
///
/// # Errors
///
/// As [`std::fs::metadata`].
pub fn metadata(path: &Path) -> io::Result<Metadata> {
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::open_following(path, rustix::fs::OFlags::PATH)?.metadata();
    }
    std::fs::metadata(path)
}

/// Opens the file at `path` for reading (a final link followed, as
/// [`File::open`] does).
///
/// # Errors
///
/// As [`File::open`].
pub fn open(path: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::open_following(path, rustix::fs::OFlags::RDONLY);
    }
    File::open(path)
}

/// The whole content of the file at `path`.
///
/// # Errors
///
/// As [`std::fs::read`].
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut open(path)?, &mut bytes)?;
    Ok(bytes)
}

/// The whole content of the file at `path`, as UTF-8.
///
/// # Errors
///
/// As [`std::fs::read_to_string`].
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The target of the link at `path`, as stored.
///
/// # Errors
///
/// As [`std::fs::read_link`].
pub fn read_link(path: &Path) -> io::Result<PathBuf> {
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::read_link(path);
    }
    std::fs::read_link(path)
}

/// The names in the directory at `path` (`.` and `..` left out), in no
/// order.
///
/// # Errors
///
/// As [`std::fs::read_dir`], or reading an entry.
pub fn read_dir_names(path: &Path) -> io::Result<Vec<OsString>> {
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::read_dir_names(path);
    }
    std::fs::read_dir(path)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect()
}

/// Opens the directory at `path` (a final link not followed), for calls
/// relative to it.
///
/// # Errors
///
/// As opening it: not a directory, a link, missing, ...
#[cfg(unix)]
pub fn open_dir_nofollow(path: &Path) -> io::Result<File> {
    use rustix::fs::OFlags;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
    #[cfg(target_os = "linux")]
    if is_long(path) {
        return linux::open_at_end(path, flags);
    }
    let fd = rustix::fs::open(path, flags | OFlags::CLOEXEC, rustix::fs::Mode::empty())?;
    Ok(File::from(fd))
}

/// Whether `path` is too long for one call.
pub fn is_long(path: &Path) -> bool {
    crate::location::os_bytes(path.as_os_str()).len() >= PATH_MAX
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{OsStr, OsString};
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, CWD, Mode, OFlags};

    use super::PIECE;

    /// The handle of the directory all of `path` but its last piece leads
    /// to (opened piece by piece, as one lookup would go), and that piece.
    fn split(path: &Path) -> io::Result<(OwnedFd, PathBuf)> {
        let bytes = path.as_os_str().as_bytes();
        // Cut at a `/` before each `PIECE` bytes.
        let mut cuts = Vec::new();
        let mut start = 0usize;
        while bytes.len() - start > PIECE {
            let window = bytes
                .get(start..start + PIECE)
                .ok_or_else(|| io::Error::other("path cut out of bounds"))?;
            let cut = window
                .iter()
                .rposition(|&b| b == b'/')
                .filter(|&at| at > 0)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidFilename,
                        "a name in the path is longer than any file system stores",
                    )
                })?;
            cuts.push(start + cut);
            start += cut + 1;
        }
        let mut dir: Option<OwnedFd> = None;
        let mut from = 0usize;
        for cut in cuts {
            let piece = OsStr::from_bytes(bytes.get(from..cut).unwrap_or_default());
            let piece = if piece.is_empty() {
                OsStr::new("/")
            } else {
                piece
            };
            let at = dir.as_ref().map_or(CWD, AsFd::as_fd);
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            dir = Some(rustix::fs::openat(at, piece, flags, Mode::empty())?);
            from = cut + 1;
        }
        let rest = PathBuf::from(OsStr::from_bytes(bytes.get(from..).unwrap_or_default()));
        let dir = dir.ok_or_else(|| io::Error::other("a long path with no piece"))?;
        Ok((dir, rest))
    }

    /// Opens the last name of `path` with `flags`, not following it.
    pub(super) fn open_at_end(path: &Path, flags: OFlags) -> io::Result<File> {
        open_following(path, flags | OFlags::NOFOLLOW)
    }

    /// Opens `path` with `flags`, following a final link (whose target may
    /// itself be long: it is opened from the link's directory).
    pub(super) fn open_following(path: &Path, flags: OFlags) -> io::Result<File> {
        let (dir, rest) = split(path)?;
        let fd = rustix::fs::openat(&dir, &rest, flags | OFlags::CLOEXEC, Mode::empty())?;
        Ok(File::from(fd))
    }

    pub(super) fn read_link(path: &Path) -> io::Result<PathBuf> {
        let (dir, rest) = split(path)?;
        let target = rustix::fs::readlinkat(&dir, &rest, Vec::new())?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    pub(super) fn read_dir_names(path: &Path) -> io::Result<Vec<OsString>> {
        let dir = open_at_end(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::new(OwnedFd::from(dir))? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_owned());
            }
        }
        Ok(names)
    }

    /// `lstat` relative to the handle `split` gives (for [`RealFs`]).
    pub(crate) fn stat_nofollow(path: &Path) -> io::Result<rustix::fs::Stat> {
        let (dir, rest) = split(path)?;
        Ok(rustix::fs::statat(&dir, &rest, AtFlags::SYMLINK_NOFOLLOW)?)
    }
}

#[cfg(target_os = "linux")]
pub(crate) use linux::stat_nofollow;
