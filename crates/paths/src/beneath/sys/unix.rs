//! Unix: `openat2` where the kernel has it (Linux), the `O_NOFOLLOW`
//! component walk everywhere else, and the `*at` calls, through `rustix`.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{Failed, Rename, Stat, Why};
use crate::EntryKind;

/// A directory handle: every operation below is relative to one. Shared
/// handles ([`share`]) are one descriptor.
#[derive(Debug)]
pub(crate) struct Dir(Arc<OwnedFd>);

impl Dir {
    fn new(fd: OwnedFd) -> Self {
        Self(Arc::new(fd))
    }
}

/// The same handle once more, with no new descriptor.
#[expect(
    clippy::unnecessary_wraps,
    reason = "fallible where handles are duplicated (Windows)"
)]
pub(crate) fn share(dir: &Dir) -> io::Result<Dir> {
    Ok(Dir(Arc::clone(&dir.0)))
}

fn failed(errno: Errno) -> Failed {
    let why = match errno {
        Errno::LOOP => Why::Link,
        Errno::NOTDIR => Why::NotDir,
        Errno::ISDIR => Why::IsDir,
        Errno::EXIST => Why::Exists,
        Errno::NOENT => Why::Missing,
        Errno::NOTEMPTY => Why::NotEmpty,
        _ => Why::Other,
    };
    Failed::new(why, errno.into())
}

/// Flags every open below carries.
const ALWAYS: OFlags = OFlags::CLOEXEC.union(OFlags::NOFOLLOW);
const DIRECTORY: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(ALWAYS);
/// Non-blocking, so that a FIFO put in a file's place cannot hang the
/// open (on a regular file the flag changes nothing).
const READ: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(ALWAYS);

/// Opens an allowed root by its absolute path (`None` when it does not
/// exist yet).
pub(crate) fn open_root(path: &Path) -> io::Result<Option<Dir>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(Dir::new(fd))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Opens the directory at `relative` below `root`, refusing every link on
/// the way; the component walk when `walk` (or where `openat2` is
/// missing).
pub(crate) fn open_dir_beneath(root: &Dir, relative: &Path, walk: bool) -> Result<Dir, Failed> {
    open_beneath(root, relative, DIRECTORY, walk).map(Dir::new)
}

/// Opens the regular file at `relative` below `root` for reading,
/// non-blocking, refusing every link on the way; with what `fstat` says.
pub(crate) fn open_file_beneath(
    root: &Dir,
    relative: &Path,
    walk: bool,
) -> Result<(File, Stat), Failed> {
    let fd = open_beneath(root, relative, READ, walk)?;
    let stat = rustix::fs::fstat(&fd).map_err(failed)?;
    Ok((File::from(fd), stat_of(&stat)))
}

/// Clears the non-blocking flag of a file opened above (for handles given
/// out to callers).
pub(crate) fn set_blocking(file: &File) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    rustix::fs::fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_beneath(root: &Dir, relative: &Path, flags: OFlags, walk: bool) -> Result<OwnedFd, Failed> {
    use rustix::fs::ResolveFlags;
    const BENEATH: ResolveFlags = ResolveFlags::BENEATH
        .union(ResolveFlags::NO_MAGICLINKS)
        .union(ResolveFlags::NO_SYMLINKS);
    if walk {
        return walk_open(root, relative, flags);
    }
    let path = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    match rustix::fs::openat2(&root.0, path, flags, Mode::empty(), BENEATH) {
        Ok(fd) => Ok(fd),
        // No openat2 here (old kernel, a seccomp filter), or a path longer
        // than one call takes: the walk opens one name at a time.
        Err(Errno::NOSYS | Errno::NAMETOOLONG) => walk_open(root, relative, flags),
        // RESOLVE_BENEATH refused an escape.
        Err(Errno::XDEV) => Err(Failed::new(Why::Link, Errno::XDEV.into())),
        Err(errno) => Err(failed(errno)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn open_beneath(
    root: &Dir,
    relative: &Path,
    flags: OFlags,
    _walk: bool,
) -> Result<OwnedFd, Failed> {
    walk_open(root, relative, flags)
}

/// The component walk: open one name at a time with `O_NOFOLLOW`, which
/// refuses every link on the way. `relative` is a real location below the
/// root; a `..`, a root or a prefix in it is refused ([`Why::Link`]), never
/// dropped: it would leave the root.
fn walk_open(root: &Dir, relative: &Path, flags: OFlags) -> Result<OwnedFd, Failed> {
    let mut names: Vec<&OsStr> = Vec::new();
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
    let Some((last, parents)) = names.split_last() else {
        return rustix::fs::openat(&root.0, ".", flags, Mode::empty()).map_err(failed);
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let dir = current.as_ref().map_or(root.0.as_fd(), AsFd::as_fd);
        let next = rustix::fs::openat(dir, *name, DIRECTORY, Mode::empty()).map_err(failed)?;
        current = Some(next);
    }
    let dir = current.as_ref().map_or(root.0.as_fd(), AsFd::as_fd);
    rustix::fs::openat(dir, *last, flags, Mode::empty()).map_err(failed)
}

/// Opens the directory `name` in `dir`, not following a link.
pub(crate) fn open_dir_at(dir: &Dir, name: &OsStr) -> Result<Dir, Failed> {
    rustix::fs::openat(&dir.0, name, DIRECTORY, Mode::empty())
        .map(Dir::new)
        .map_err(failed)
}

/// Opens the file `name` in `dir` for reading (non-blocking, not following
/// a link), with what `fstat` says.
pub(crate) fn open_file_at(dir: &Dir, name: &OsStr) -> Result<(File, Stat), Failed> {
    let fd = rustix::fs::openat(&dir.0, name, READ, Mode::empty()).map_err(failed)?;
    let stat = rustix::fs::fstat(&fd).map_err(failed)?;
    Ok((File::from(fd), stat_of(&stat)))
}

/// Creates the new file `name` in `dir` (`O_EXCL`, never following a link)
/// for writing, with permission bits `mode`.
pub(crate) fn create_new_at(dir: &Dir, name: &OsStr, mode: u32) -> Result<File, Failed> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | ALWAYS;
    rustix::fs::openat(&dir.0, name, flags, permissions(mode))
        .map(File::from)
        .map_err(failed)
}

/// Renames `from` in `from_dir` to `to` in `to_dir` (a link is renamed
/// itself). [`Rename::Exchange`] answers [`Why::Unsupported`] where the
/// kernel or file system cannot exchange.
pub(crate) fn rename_at(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
    how: Rename,
) -> Result<(), Failed> {
    let flags = match how {
        Rename::Replace => {
            return rustix::fs::renameat(&from_dir.0, from, &to_dir.0, to).map_err(failed);
        }
        Rename::NoReplace => RenameFlags::NOREPLACE,
        Rename::Exchange => RenameFlags::EXCHANGE,
    };
    rename_with(from_dir, from, to_dir, to, flags, how)
}

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn rename_with(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
    flags: RenameFlags,
    how: Rename,
) -> Result<(), Failed> {
    match rustix::fs::renameat_with(&from_dir.0, from, &to_dir.0, to, flags) {
        Ok(()) => Ok(()),
        Err(errno @ (Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP))
            if how == Rename::Exchange =>
        {
            Err(Failed::new(Why::Unsupported, errno.into()))
        }
        Err(errno) => Err(failed(errno)),
    }
}

/// Other Unix: no exchange; no-replace by a hard link and an unlink (the
/// link fails when the name is taken).
#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn rename_with(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
    _flags: RenameFlags,
    how: Rename,
) -> Result<(), Failed> {
    if how == Rename::Exchange {
        return Err(Failed::new(Why::Unsupported, Errno::NOSYS.into()));
    }
    rustix::fs::linkat(&from_dir.0, from, &to_dir.0, to, AtFlags::empty()).map_err(failed)?;
    rustix::fs::unlinkat(&from_dir.0, from, AtFlags::empty()).map_err(failed)
}

/// Hard-links `from` in `from_dir` as `to` in `to_dir`.
pub(crate) fn link_between(
    from_dir: &Dir,
    from: &OsStr,
    to_dir: &Dir,
    to: &OsStr,
) -> Result<(), Failed> {
    rustix::fs::linkat(&from_dir.0, from, &to_dir.0, to, AtFlags::empty()).map_err(failed)
}

/// Hard-links the file at the path `source` (not following a final link)
/// as `name` in `dir`.
pub(crate) fn link_from(source: &Path, dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    rustix::fs::linkat(rustix::fs::CWD, source, &dir.0, name, AtFlags::empty()).map_err(failed)
}

/// Sets the permission bits of `name` in `dir` (not following a link:
/// `name` is a file this crate created).
pub(crate) fn chmod_at(dir: &Dir, name: &OsStr, mode: u32) -> Result<(), Failed> {
    rustix::fs::chmodat(&dir.0, name, permissions(mode), AtFlags::empty()).map_err(failed)
}

/// Sets the permission bits of the directory `dir` itself.
pub(crate) fn chmod_dir(dir: &Dir, mode: u32) -> Result<(), Failed> {
    rustix::fs::fchmod(&dir.0, permissions(mode)).map_err(failed)
}

/// Creates the symbolic link `name` in `dir`, pointing to `target`.
pub(crate) fn symlink_at(dir: &Dir, target: &Path, name: &OsStr) -> Result<(), Failed> {
    rustix::fs::symlinkat(target, &dir.0, name).map_err(failed)
}

/// Removes the file (or link) `name` from `dir`.
pub(crate) fn remove_file_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    rustix::fs::unlinkat(&dir.0, name, AtFlags::empty()).map_err(failed)
}

/// Removes the empty directory `name` from `dir`.
pub(crate) fn remove_dir_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    rustix::fs::unlinkat(&dir.0, name, AtFlags::REMOVEDIR).map_err(failed)
}

/// Creates the directory `name` in `dir`.
pub(crate) fn mkdir_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    rustix::fs::mkdirat(&dir.0, name, Mode::from_bits_truncate(0o755)).map_err(failed)
}

/// Creates the directory `name` in `dir` with permission bits `mode`.
pub(crate) fn mkdir_mode_at(dir: &Dir, name: &OsStr, mode: u32) -> Result<(), Failed> {
    rustix::fs::mkdirat(&dir.0, name, permissions(mode)).map_err(failed)
}

/// Takes an exclusive `flock` on the directory without waiting: `false`
/// when another open of it holds one (released when its process dies).
pub(crate) fn try_lock(dir: &Dir) -> Result<bool, Failed> {
    match rustix::fs::flock(&dir.0, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(Errno::WOULDBLOCK) => Ok(false),
        Err(errno) => Err(failed(errno)),
    }
}

/// Whether the directory belongs to this process's effective user.
pub(crate) fn owned_by_me(dir: &Dir) -> bool {
    rustix::fs::fstat(&dir.0).is_ok_and(|st| st.st_uid == rustix::process::geteuid().as_raw())
}

/// `lstat` of `name` in `dir` (a final link is not followed).
pub(crate) fn stat_at(dir: &Dir, name: &OsStr) -> Result<Stat, Failed> {
    rustix::fs::statat(&dir.0, name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|st| stat_of(&st))
        .map_err(failed)
}

/// Where the link `name` in `dir` points (its text, not resolved).
pub(crate) fn read_link_at(dir: &Dir, name: &OsStr) -> Result<std::path::PathBuf, Failed> {
    rustix::fs::readlinkat(&dir.0, name, Vec::new())
        .map(|target| std::path::PathBuf::from(OsStr::from_bytes(target.as_bytes())))
        .map_err(failed)
}

/// `fstat` of the directory itself.
pub(crate) fn stat_dir(dir: &Dir) -> Result<Stat, Failed> {
    rustix::fs::fstat(&dir.0)
        .map(|st| stat_of(&st))
        .map_err(failed)
}

/// Which mount the directory is on: its device and, on Linux, the
/// mount's id (two bind mounts of one file system share a device, yet a
/// rename from one to the other fails). `None` when it cannot be read.
/// One `statx` on Linux (it is asked once per staged file).
pub(crate) fn mount_of(dir: &Dir) -> Option<(u64, u64)> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::StatxFlags;
        let st = rustix::fs::statx(&dir.0, "", AtFlags::EMPTY_PATH, StatxFlags::MNT_ID).ok()?;
        let device = rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor);
        let id = if st.stx_mask & StatxFlags::MNT_ID.bits() != 0 {
            st.stx_mnt_id
        } else {
            0
        };
        Some((device, id))
    }
    #[cfg(not(target_os = "linux"))]
    Some((stat_dir(dir).ok()?.id.0, 0))
}

/// The directory above `dir` (its `..`).
pub(crate) fn parent_of(dir: &Dir) -> Result<Dir, Failed> {
    rustix::fs::openat(&dir.0, "..", DIRECTORY, Mode::empty())
        .map(Dir::new)
        .map_err(failed)
}

/// Flushes the directory's entries to the disk.
pub(crate) fn sync_dir(dir: &Dir) -> io::Result<()> {
    Ok(rustix::fs::fsync(&dir.0)?)
}

/// A second handle to the same directory.
pub(crate) fn dup(dir: &Dir) -> io::Result<Dir> {
    dir.0.try_clone().map(Dir::new)
}

/// The entries of `dir` (without `.` and `..`), each with its kind as
/// `lstat` says (links are not followed).
pub(crate) fn read_dir(dir: &Dir) -> Result<Vec<(OsString, EntryKind)>, Failed> {
    let mut reader = rustix::fs::Dir::read_from(&dir.0).map_err(failed)?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry.map_err(failed)?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(&dir.0, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| kind_of(FileType::from_raw_mode(st.st_mode)))
                .unwrap_or(EntryKind::Other),
            file_type => kind_of(file_type),
        };
        entries.push((name.to_os_string(), kind));
    }
    Ok(entries)
}

/// Permission bits as the platform's `mode_t` (`u16` on macOS).
#[allow(clippy::unnecessary_cast)]
fn permissions(bits: u32) -> Mode {
    Mode::from_bits_truncate((bits & 0o777) as rustix::fs::RawMode)
}

fn kind_of(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}

/// A platform integer as `u64` (negative or too large: 0).
fn non_negative(value: impl TryInto<u64>) -> u64 {
    value.try_into().unwrap_or(0)
}

fn stat_of(stat: &rustix::fs::Stat) -> Stat {
    #[allow(clippy::unnecessary_cast)] // `st_mode` is u16 on macOS
    let raw_mode = stat.st_mode as u32;
    let modified = u64::try_from(stat.st_mtime).ok().map(|secs| {
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(secs)
            + Duration::from_nanos(non_negative(stat.st_mtime_nsec))
    });
    Stat {
        kind: kind_of(FileType::from_raw_mode(stat.st_mode)),
        len: non_negative(stat.st_size),
        mode: raw_mode & 0o777,
        modified,
        id: (non_negative(stat.st_dev), non_negative(stat.st_ino)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Dir) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::fs::write(tmp.path().join("a/b/f"), b"x").unwrap();
        let dir = open_root(tmp.path()).unwrap().unwrap();
        (tmp, dir)
    }

    #[test]
    fn the_walk_refuses_parent_and_absolute_components_instead_of_dropping_them() {
        let (_tmp, dir) = root();
        assert!(walk_open(&dir, Path::new("a/b/f"), READ).is_ok());
        for escape in ["a/../a/b/f", "../a/b/f", "a/b/..", "/a/b/f"] {
            let err = walk_open(&dir, Path::new(escape), READ).unwrap_err();
            assert_eq!(err.why, Why::Link, "{escape}");
        }
    }

    #[test]
    fn the_walk_refuses_a_link_at_any_step() {
        let (tmp, dir) = root();
        std::os::unix::fs::symlink("a", tmp.path().join("l")).unwrap();
        std::os::unix::fs::symlink("b", tmp.path().join("a/lb")).unwrap();
        std::os::unix::fs::symlink("f", tmp.path().join("a/b/lf")).unwrap();
        for through in ["l/b/f", "a/lb/f", "a/b/lf"] {
            let err = walk_open(&dir, Path::new(through), READ).unwrap_err();
            assert!(
                matches!(err.why, Why::Link | Why::NotDir),
                "{through}: {err:?}"
            );
        }
    }
}
