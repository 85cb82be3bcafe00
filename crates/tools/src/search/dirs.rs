//! The directories and files a search reaches, and the policy's word on
//! each.
//!
//! Unix: the searched directory is opened beneath its root's handle one
//! component at a time, every directory below it from its parent's handle
//! and every file from its directory's handle, each by one plain name with
//! links refused (`O_NOFOLLOW`) — no path is resolved again from the root,
//! and an entry swapped for a link during the walk fails to open. Each
//! entry is judged by the path policy as that name inside its directory's
//! real location before it is opened. Elsewhere each directory is listed,
//! and each file opened, through [`Beneath`](agentcaps::paths::Beneath),
//! which judges the path again.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::Path;

use agentcaps::paths::{Access, Checked, EntryKind};

use crate::files::FileTools;

/// One directory entry, as the directory's listing says.
#[cfg(not(unix))]
pub(super) struct Entry {
    pub(super) name: std::ffi::OsString,
    pub(super) kind: EntryKind,
}
#[cfg(unix)]
pub(super) use crate::walk::Child as Entry;

pub(super) use platform::{Dir, allowed, open_child, open_file, open_start, read};

#[cfg(unix)]
mod platform {
    use super::*;
    use rustix::fd::OwnedFd;
    use rustix::fs::{FileType, Mode, OFlags};

    /// An open directory.
    pub(in crate::search) struct Dir(OwnedFd);

    const FILE_FLAGS: OFlags = OFlags::RDONLY
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);

    /// Opens the judged directory `checked` beneath its root's handle.
    pub(in crate::search) fn open_start(files: &FileTools, checked: &Checked) -> io::Result<Dir> {
        files.roots().open_dir(checked).map(Dir)
    }

    /// Opens the subdirectory `name` of `parent` from its handle, never
    /// following a link.
    pub(in crate::search) fn open_child(
        _: &FileTools,
        parent: &Dir,
        name: &OsStr,
        _: &Path,
    ) -> io::Result<Dir> {
        crate::walk::open_child_dir(&parent.0, name).map(Dir)
    }

    /// The entries of `dir` (not `.` and `..`), in directory order.
    pub(in crate::search) fn read(
        _: &FileTools,
        dir: &Dir,
        _: &Path,
        entries: &mut Vec<Entry>,
    ) -> io::Result<()> {
        entries.clear();
        crate::walk::read_dir_into(&dir.0, entries)
    }

    /// Opens the regular file `name` in `dir` from the directory's handle,
    /// never following a link nor blocking on a FIFO; with its size.
    pub(in crate::search) fn open_file(
        _: &FileTools,
        dir: &Dir,
        name: &OsStr,
        _: &Path,
    ) -> io::Result<(File, u64)> {
        let fd = rustix::fs::openat(&dir.0, name, FILE_FLAGS, Mode::empty())?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::other("not a regular file"));
        }
        Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
    }

    /// Whether the policy allows `access` to the entry `name` (of `kind`,
    /// at `path`) inside the real directory `dir`.
    pub(in crate::search) fn allowed(
        files: &FileTools,
        dir: &Path,
        name: &str,
        path: &Path,
        kind: EntryKind,
        access: Access,
    ) -> bool {
        crate::walk::allowed_at(files.policy(), dir, name, path, kind, access)
    }
}

#[cfg(not(unix))]
mod platform {
    use super::*;

    /// A directory: reached by its real location, which the walk keeps.
    pub(in crate::search) struct Dir;

    pub(in crate::search) fn open_start(_: &FileTools, _: &Checked) -> io::Result<Dir> {
        Ok(Dir)
    }

    pub(in crate::search) fn open_child(
        _: &FileTools,
        _: &Dir,
        _: &OsStr,
        _: &Path,
    ) -> io::Result<Dir> {
        Ok(Dir)
    }

    /// The entries of `dir`, listed through `Beneath` (judged again).
    pub(in crate::search) fn read(
        files: &FileTools,
        _: &Dir,
        location: &Path,
        entries: &mut Vec<Entry>,
    ) -> io::Result<()> {
        entries.clear();
        // The real location is the base and `.` the spelling: on Windows
        // the judge refuses an absolute spelling (a drive letter or `\\?\`),
        // so the location cannot be spelled as the path to list.
        let listed = files
            .beneath()
            .list(location, ".")
            .map_err(io::Error::other)?;
        entries.extend(listed.into_iter().map(|e| Entry {
            name: e.name,
            kind: e.kind,
        }));
        Ok(())
    }

    /// Opens the file at `path` through `Beneath` (judged again).
    pub(in crate::search) fn open_file(
        files: &FileTools,
        _: &Dir,
        name: &OsStr,
        path: &Path,
    ) -> io::Result<(File, u64)> {
        // The directory's real location is the base and the plain name the
        // spelling (an absolute spelling is refused on Windows).
        let dir = path
            .parent()
            .ok_or_else(|| io::Error::other("the file has no directory"))?;
        let name = name
            .to_str()
            .ok_or_else(|| io::Error::other("the name is not UTF-8"))?;
        let file = files
            .beneath()
            .open_read(dir, name)
            .map_err(io::Error::other)?;
        let size = file.metadata()?.len();
        Ok((file, size))
    }

    /// `Beneath` judges each listing and open itself.
    pub(in crate::search) fn allowed(
        _: &FileTools,
        _: &Path,
        _: &str,
        _: &Path,
        _: EntryKind,
        _: Access,
    ) -> bool {
        true
    }
}
