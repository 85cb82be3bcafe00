//! Windows: the component walk over directory handles, through `std`.
//!
//! Windows has no `openat`: every open names a whole path. What makes the
//! walk safe instead is that each directory on the way is opened in turn
//! (with `FILE_FLAG_OPEN_REPARSE_POINT`, so a symbolic link or junction is
//! opened itself, never followed, and refused) and **kept open without
//! `FILE_SHARE_DELETE`** until the operation is over: while a handle is
//! open without that share mode, Windows refuses to rename or remove the
//! directory, so no name on the way can be swapped for a link between the
//! check and the use. The roots' handles are held the same way for the
//! life of the [`Beneath`](crate::Beneath).
//!
//! What Windows does not give: exchanging two names (a replaced file is
//! kept by a hard link, or a copy), flushing a directory's entries (a
//! durable write syncs the file only), and creating a name without
//! replacing one atomically for directories (a directory is renamed only
//! when nothing is at the new name, checked just before).

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use super::{Failed, Rename, Stat, Why};
use crate::EntryKind;

/// Needed to open a directory at all.
const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
/// Open a reparse point (symbolic link, junction) itself.
const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
const FILE_ATTRIBUTE_READONLY: u32 = 0x1;
const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
const FILE_SHARE_READ: u32 = 0x1;
const FILE_SHARE_WRITE: u32 = 0x2;
const ERROR_DIRECTORY: i32 = 267;
const ERROR_CANT_RESOLVE_FILENAME: i32 = 1921;
const ERROR_NOT_SUPPORTED: i32 = 50;
const ERROR_INVALID_FUNCTION: i32 = 1;

/// A directory handle, held without `FILE_SHARE_DELETE` (so the directory
/// cannot be renamed or removed while it is open), and the path it was
/// opened by (every open names a whole path on Windows).
#[derive(Debug)]
pub(crate) struct Dir {
    handle: File,
    path: PathBuf,
}

fn why_of(error: &io::Error) -> Why {
    match error.kind() {
        io::ErrorKind::AlreadyExists => Why::Exists,
        io::ErrorKind::NotFound => Why::Missing,
        io::ErrorKind::NotADirectory => Why::NotDir,
        io::ErrorKind::IsADirectory => Why::IsDir,
        io::ErrorKind::DirectoryNotEmpty => Why::NotEmpty,
        io::ErrorKind::Unsupported => Why::Unsupported,
        _ => match error.raw_os_error() {
            Some(ERROR_DIRECTORY) => Why::NotDir,
            Some(ERROR_CANT_RESOLVE_FILENAME) => Why::Link,
            Some(ERROR_NOT_SUPPORTED | ERROR_INVALID_FUNCTION) => Why::Unsupported,
            _ => Why::Other,
        },
    }
}

fn failed(error: io::Error) -> Failed {
    Failed::new(why_of(&error), error)
}

fn link_met() -> Failed {
    Failed::new(
        Why::Link,
        io::Error::other("a symbolic link or junction is in the way"),
    )
}

/// Opens a directory by its whole path, not following a final reparse
/// point, held without `FILE_SHARE_DELETE`.
fn open_dir_path(path: PathBuf, follow: bool) -> Result<Dir, Failed> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(if follow {
            FILE_FLAG_BACKUP_SEMANTICS
        } else {
            FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT
        });
    let handle = options.open(&path).map_err(failed)?;
    let meta = handle.metadata().map_err(failed)?;
    if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(link_met());
    }
    if !meta.is_dir() {
        return Err(Failed::new(
            Why::NotDir,
            io::Error::from(io::ErrorKind::NotADirectory),
        ));
    }
    Ok(Dir { handle, path })
}

/// Opens an allowed root by its absolute path (`None` when it does not
/// exist yet).
pub(crate) fn open_root(path: &Path) -> io::Result<Option<Dir>> {
    match open_dir_path(path.to_path_buf(), true) {
        Ok(dir) => Ok(Some(dir)),
        Err(failed) if failed.why == Why::Missing => Ok(None),
        Err(failed) => Err(failed.error),
    }
}

/// The names of `relative`; a `..`, a root or a prefix is refused
/// ([`Why::Link`]), never dropped: it would leave the root.
fn names(relative: &Path) -> Result<Vec<&OsStr>, Failed> {
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Failed::new(
                    Why::Link,
                    io::Error::other("the path would leave the root"),
                ));
            }
        }
    }
    Ok(names)
}

/// Walks to the parent of `relative`'s last name, holding every directory
/// on the way open; gives the handles (the last is the parent) and the
/// last name (`None` for the root itself).
fn walk<'a>(root: &Dir, relative: &'a Path) -> Result<(Vec<Dir>, Option<&'a OsStr>), Failed> {
    let names = names(relative)?;
    let Some((last, parents)) = names.split_last() else {
        return Ok((Vec::new(), None));
    };
    let mut held: Vec<Dir> = Vec::new();
    for name in parents {
        let parent = held.last().unwrap_or(root);
        let next = open_dir_path(parent.path.join(name), false)?;
        held.push(next);
    }
    Ok((held, Some(*last)))
}

/// Opens the directory at `relative` below `root`, refusing every link on
/// the way.
pub(crate) fn open_dir_beneath(root: &Dir, relative: &Path, _walk: bool) -> Result<Dir, Failed> {
    let (held, last) = walk(root, relative)?;
    let parent = held.last().unwrap_or(root);
    match last {
        Some(name) => open_dir_at(parent, name),
        None => dup(root).map_err(failed),
    }
}

/// Opens the regular file at `relative` below `root` for reading, refusing
/// every link on the way; with what the handle's metadata says.
pub(crate) fn open_file_beneath(
    root: &Dir,
    relative: &Path,
    _walk: bool,
) -> Result<(File, Stat), Failed> {
    let (held, last) = walk(root, relative)?;
    let parent = held.last().unwrap_or(root);
    match last {
        Some(name) => open_file_at(parent, name),
        None => {
            let handle = root.handle.try_clone().map_err(failed)?;
            let stat = stat_of(&handle.metadata().map_err(failed)?);
            Ok((handle, stat))
        }
    }
}

/// Nothing to do: Windows opens are blocking.
pub(crate) fn set_blocking(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Opens the directory `name` in `dir`, not following a reparse point.
pub(crate) fn open_dir_at(dir: &Dir, name: &OsStr) -> Result<Dir, Failed> {
    open_dir_path(dir.path.join(name), false)
}

/// Opens the file `name` in `dir` for reading, not following a reparse
/// point (one is refused), with what its metadata says.
pub(crate) fn open_file_at(dir: &Dir, name: &OsStr) -> Result<(File, Stat), Failed> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(dir.path.join(name))
        .map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        return Err(link_met());
    }
    Ok((file, stat_of(&meta)))
}

/// Creates the new file `name` in `dir` for writing (`CREATE_NEW`, which
/// fails on any existing name, a link included); read-only when `mode`
/// has no owner write bit.
pub(crate) fn create_new_at(dir: &Dir, name: &OsStr, mode: u32) -> Result<File, Failed> {
    let attributes = if mode & 0o200 == 0 {
        FILE_ATTRIBUTE_READONLY
    } else {
        0
    };
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .attributes(attributes)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(dir.path.join(name))
        .map_err(failed)
}

/// Renames `from` in `from_dir` to `to` in `to_dir` (a link is renamed
/// itself). No exchange on Windows ([`Why::Unsupported`]).
pub(crate) fn rename_at(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
    how: Rename,
) -> Result<(), Failed> {
    let (source, dest) = (from_dir.path.join(from), to_dir.path.join(to));
    match how {
        Rename::Replace => std::fs::rename(&source, &dest).map_err(failed),
        Rename::Exchange => Err(Failed::new(
            Why::Unsupported,
            io::Error::from(io::ErrorKind::Unsupported),
        )),
        Rename::NoReplace => {
            let is_dir = std::fs::symlink_metadata(&source).is_ok_and(|m| m.is_dir());
            if !is_dir && std::fs::hard_link(&source, &dest).is_ok() {
                // The new name was created without replacing anything.
                return std::fs::remove_file(&source).map_err(failed);
            }
            if std::fs::symlink_metadata(&dest).is_ok() {
                return Err(Failed::new(
                    Why::Exists,
                    io::Error::from(io::ErrorKind::AlreadyExists),
                ));
            }
            std::fs::rename(&source, &dest).map_err(failed)
        }
    }
}

/// Hard-links `from` in `from_dir` as `to` in `to_dir`.
pub(crate) fn link_between(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
) -> Result<(), Failed> {
    std::fs::hard_link(from_dir.path.join(from), to_dir.path.join(to)).map_err(failed)
}

/// Hard-links the file at the path `source` as `name` in `dir`.
pub(crate) fn link_from(source: &Path, dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    std::fs::hard_link(source, dir.path.join(name)).map_err(failed)
}

/// Permission bits are not set on Windows beyond read-only, which a new
/// file does not have.
pub(crate) fn chmod_at(_dir: &Dir, _name: &OsStr, _mode: u32) -> Result<(), Failed> {
    Ok(())
}

/// Windows has no permission bits to set.
pub(crate) fn chmod_dir(_dir: &Dir, _mode: u32) -> Result<(), Failed> {
    Ok(())
}

/// Symbolic links are not created on Windows (they need a privilege or
/// developer mode, and a file or directory kind chosen up front).
pub(crate) fn symlink_at(_dir: &Dir, _target: &Path, _name: &OsStr) -> Result<(), Failed> {
    Err(Failed::new(
        Why::Unsupported,
        io::Error::new(
            io::ErrorKind::Unsupported,
            "symbolic links are not created on Windows",
        ),
    ))
}

/// Removes the file (or link) `name` from `dir`.
pub(crate) fn remove_file_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    std::fs::remove_file(dir.path.join(name)).map_err(failed)
}

/// Removes the empty directory `name` from `dir`.
pub(crate) fn remove_dir_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    std::fs::remove_dir(dir.path.join(name)).map_err(failed)
}

/// Creates the directory `name` in `dir`.
pub(crate) fn mkdir_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    std::fs::create_dir(dir.path.join(name)).map_err(failed)
}

/// Creates the directory `name` in `dir` (no permission bits here).
pub(crate) fn mkdir_mode_at(dir: &Dir, name: &OsStr, _mode: u32) -> Result<(), Failed> {
    mkdir_at(dir, name)
}

/// What is at `name` in `dir`, a final link not followed.
pub(crate) fn stat_at(dir: &Dir, name: &OsStr) -> Result<Stat, Failed> {
    std::fs::symlink_metadata(dir.path.join(name))
        .map(|meta| stat_of(&meta))
        .map_err(failed)
}

/// Where the link `name` in `dir` points (its text, not resolved).
pub(crate) fn read_link_at(dir: &Dir, name: &OsStr) -> Result<PathBuf, Failed> {
    std::fs::read_link(dir.path.join(name)).map_err(failed)
}

/// Which mount the directory is on: one for all (hidden directories are
/// not made on Windows).
#[expect(
    clippy::unnecessary_wraps,
    reason = "the same signature as on Unix, where it can fail"
)]
pub(crate) fn mount_of(_dir: &Dir) -> Option<(u64, u64)> {
    Some((0, 0))
}

/// What the directory itself is.
pub(crate) fn stat_dir(dir: &Dir) -> Result<Stat, Failed> {
    dir.handle
        .metadata()
        .map(|meta| stat_of(&meta))
        .map_err(failed)
}

/// Nothing to do: Windows cannot flush a directory's entries.
pub(crate) fn sync_dir(_dir: &Dir) -> io::Result<()> {
    Ok(())
}

/// The same directory once more (a duplicated handle).
pub(crate) fn share(dir: &Dir) -> io::Result<Dir> {
    dup(dir)
}

/// A second handle to the same directory.
pub(crate) fn dup(dir: &Dir) -> io::Result<Dir> {
    Ok(Dir {
        handle: dir.handle.try_clone()?,
        path: dir.path.clone(),
    })
}

/// The entries of `dir`, each with its kind (links are not followed).
pub(crate) fn read_dir(dir: &Dir) -> Result<Vec<(OsString, EntryKind)>, Failed> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&dir.path).map_err(failed)? {
        let entry = entry.map_err(failed)?;
        let kind = entry
            .file_type()
            .map_or(EntryKind::Other, |file_type| kind_of(&file_type));
        entries.push((entry.file_name(), kind));
    }
    Ok(entries)
}

fn kind_of(file_type: &std::fs::FileType) -> EntryKind {
    if file_type.is_symlink() {
        EntryKind::Symlink
    } else if file_type.is_dir() {
        EntryKind::Dir
    } else if file_type.is_file() {
        EntryKind::File
    } else {
        EntryKind::Other
    }
}

fn stat_of(meta: &std::fs::Metadata) -> Stat {
    let kind = if meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        EntryKind::Symlink
    } else {
        kind_of(&meta.file_type())
    };
    Stat {
        kind,
        len: meta.len(),
        mode: if meta.permissions().readonly() {
            0o444
        } else {
            0o644
        },
        modified: meta.modified().ok(),
        id: (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_refuses_parent_and_absolute_components_instead_of_dropping_them() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::fs::write(tmp.path().join("a/b/f"), b"x").unwrap();
        let root = open_root(tmp.path()).unwrap().unwrap();
        assert!(open_file_beneath(&root, Path::new("a/b/f"), true).is_ok());
        for escape in ["a/../a/b/f", "../a/b/f", "/a/b/f", "C:/a"] {
            let err = open_file_beneath(&root, Path::new(escape), true).unwrap_err();
            assert_eq!(err.why, Why::Link, "{escape}");
        }
    }

    #[test]
    fn a_directory_on_the_way_cannot_be_renamed_while_the_walk_holds_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        let root = open_root(tmp.path()).unwrap().unwrap();
        let held = open_dir_beneath(&root, Path::new("a/b"), true).unwrap();
        assert!(std::fs::rename(tmp.path().join("a/b"), tmp.path().join("a/c")).is_err());
        drop(held);
        assert!(std::fs::rename(tmp.path().join("a/b"), tmp.path().join("a/c")).is_ok());
    }
}
