//! The host's file system, through `rustix`.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType};

use crate::{EntryKind, FileSystem, Probe};

/// The host's file system: `lstat` and `readlink` through `rustix`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl FileSystem for RealFs {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(kind_of(FileType::from_raw_mode(stat.st_mode)))),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(None),
            Err(rustix::io::Errno::NAMETOOLONG) if name_cannot_exist(path) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(CWD, path, Vec::new())?;
        Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
    }

    fn probes_in_one_lookup(&self) -> bool {
        true
    }

    /// One `readlink`: `EINVAL` means present and not a link.
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        match rustix::fs::readlinkat(CWD, path, Vec::new()) {
            Ok(target) => Ok(Probe::Link(PathBuf::from(OsString::from_vec(
                target.into_bytes(),
            )))),
            Err(rustix::io::Errno::INVAL) => Ok(Probe::Present),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(Probe::Missing),
            Err(rustix::io::Errno::NAMETOOLONG) if name_cannot_exist(path) => Ok(Probe::Missing),
            Err(e) => Err(e.into()),
        }
    }
}

/// The longest name a Linux file system stores (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// Whether `ENAMETOOLONG` for `path` means "nothing is there": its last
/// name is longer than any file system stores, so no file, directory or
/// link can exist under it (the earlier components were resolved one by one
/// before it). The seed assumes no limit on the length of a name, so such a
/// name is judged by its spelling, like any other missing name, instead of
/// failing the check. A whole path longer than the kernel takes is still an
/// error: something may exist there that this lookup cannot see.
fn name_cannot_exist(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.file_name()
        .is_some_and(|name| name.as_bytes().len() > NAME_MAX)
}

pub(crate) fn kind_of(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}
