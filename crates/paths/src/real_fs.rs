//! The host's file system: through `rustix` on Unix, `std` on Windows.

use std::io;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use rustix::fs::{AtFlags, CWD, FileType};

#[cfg(unix)]
use crate::Probe;
use crate::location::os_bytes;
#[cfg(unix)]
use crate::location::os_string;
use crate::{EntryKind, FileSystem};

/// The host's file system: `lstat` and `readlink` (through `rustix` on
/// Unix; on Windows `std`'s `symlink_metadata` and `read_link`, where a
/// symbolic link or junction is a link).
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

#[cfg(windows)]
impl FileSystem for RealFs {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => {
                let file_type = meta.file_type();
                Ok(Some(if file_type.is_symlink() {
                    EntryKind::Symlink
                } else if file_type.is_dir() {
                    EntryKind::Dir
                } else if file_type.is_file() {
                    EntryKind::File
                } else {
                    EntryKind::Other
                }))
            }
            Err(e) if missing(&e) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::InvalidFilename && name_cannot_exist(path) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }
}

/// Windows: "not found", "path not found" (a parent is missing or not a
/// directory) and "invalid name" (a name Windows cannot hold, such as one
/// with `:` or `*`): nothing can be there.
#[cfg(windows)]
fn missing(error: &io::Error) -> bool {
    const ERROR_PATH_NOT_FOUND: i32 = 3;
    const ERROR_INVALID_NAME: i32 = 123;
    const ERROR_DIRECTORY: i32 = 267;
    error.kind() == io::ErrorKind::NotFound
        || error.kind() == io::ErrorKind::NotADirectory
        || matches!(
            error.raw_os_error(),
            Some(ERROR_PATH_NOT_FOUND | ERROR_INVALID_NAME | ERROR_DIRECTORY)
        )
}

#[cfg(unix)]
impl FileSystem for RealFs {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match rustix::fs::statat(CWD, path, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(kind_of(FileType::from_raw_mode(stat.st_mode)))),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(None),
            Err(rustix::io::Errno::NAMETOOLONG) if name_cannot_exist(path) => Ok(None),
            Err(rustix::io::Errno::NAMETOOLONG) if crate::long_path::is_long(path) => {
                long_entry(path)
            }
            Err(e) => Err(e.into()),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        if crate::long_path::is_long(path) {
            return crate::long_path::read_link(path);
        }
        let target = rustix::fs::readlinkat(CWD, path, Vec::new())?;
        Ok(PathBuf::from(os_string(target.into_bytes())))
    }

    fn probes_in_one_lookup(&self) -> bool {
        true
    }

    /// One `readlink`: `EINVAL` means present and not a link.
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        match rustix::fs::readlinkat(CWD, path, Vec::new()) {
            Ok(target) => Ok(Probe::Link(PathBuf::from(os_string(target.into_bytes())))),
            Err(rustix::io::Errno::INVAL) => Ok(Probe::Present),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(Probe::Missing),
            Err(rustix::io::Errno::NAMETOOLONG) if name_cannot_exist(path) => Ok(Probe::Missing),
            Err(rustix::io::Errno::NAMETOOLONG) if crate::long_path::is_long(path) => {
                match long_entry(path)? {
                    None => Ok(Probe::Missing),
                    Some(EntryKind::Symlink) => self.read_link(path).map(Probe::Link),
                    Some(_) => Ok(Probe::Present),
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// [`RealFs::entry`] of a path longer than one call takes: looked up in
/// pieces (Linux; elsewhere an error, as before).
#[cfg(unix)]
fn long_entry(path: &Path) -> io::Result<Option<EntryKind>> {
    #[cfg(target_os = "linux")]
    {
        match crate::long_path::stat_nofollow(path) {
            Ok(stat) => Ok(Some(kind_of(FileType::from_raw_mode(stat.st_mode)))),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        Err(rustix::io::Errno::NAMETOOLONG.into())
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
    path.file_name()
        .is_some_and(|name| os_bytes(name).len() > NAME_MAX)
}

#[cfg(unix)]
fn kind_of(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}
