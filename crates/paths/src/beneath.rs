//! Acting on paths beneath a root's directory handle (SPEC §1.3).

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;

use crate::real_fs::kind_of;
use crate::resolve::Follow;
use crate::{Access, EntryKind, FileSystem, PathError, PathPolicy};

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

/// A file written beside its target, waiting for [`Beneath::commit`],
/// [`Beneath::commit_new`], [`Beneath::replace`] or [`Beneath::discard`].
#[derive(Debug)]
#[must_use = "a staged file stays on disk until committed or discarded"]
pub struct Staged {
    dir: OwnedFd,
    temp: OsString,
    name: OsString,
    target: PathBuf,
    /// The size of the file it replaces, when staged (0: none): the most a
    /// copy of that file kept for undoing may hold.
    replaces_len: u64,
}

impl Staged {
    /// The real location the staged file will replace.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file's name (in the target's directory).
    pub fn temp_name(&self) -> &OsStr {
        &self.temp
    }
}

/// File operations beneath the policy's root directory handles, with no
/// check-then-use gap (SPEC §1.3).
///
/// Every method judges the spelling with the policy first, then acts
/// relative to the root's directory handle at the real location the check
/// computed, with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
/// RESOLVE_NO_SYMLINKS)`: that location holds no link, so a link swapped in
/// after the check makes the operation fail ([`PathError::Changed`]) instead
/// of escaping. Mutations are `*at` calls on the parent's handle; new files
/// are created `O_EXCL | O_NOFOLLOW`; a write goes to a temporary file in the
/// same directory that is renamed into place.
///
/// ```
/// use agentcaps_paths::{PathPolicy, WriteMode};
/// let dir = std::env::temp_dir().canonicalize()?.join(format!("beneath-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let files = PathPolicy::builder().allow(&dir).build()?.open_beneath()?;
/// files.write(&dir, "notes.txt", b"hello", WriteMode::CreateNew)?;
/// assert_eq!(files.read(&dir, "notes.txt", 1024)?, b"hello");
/// assert!(files.read(&dir, "../../etc/passwd", 1024).is_err());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Security
///
/// Hard links are invisible to every path check: a hard link inside a root
/// to a file elsewhere can be read. Writes never modify a file in place (a
/// temporary file is renamed over it), so a hard-linked inode outside the
/// root is never written. Programs the host runs on the same paths (the
/// shell) do not go through these handles and are not protected by them.
pub struct Beneath {
    policy: PathPolicy,
    view: Arc<dyn FileSystem>,
    roots: Vec<(PathBuf, Option<OwnedFd>)>,
    durable: bool,
    /// Test seam: behave as without `RENAME_EXCHANGE` / hard links.
    missing: Missing,
}

/// What [`Beneath::simulate_missing`] makes [`Beneath::replace`] act as if
/// the file system lacked.
#[derive(Debug, Clone, Copy, Default)]
struct Missing {
    exchange: bool,
    hard_links: bool,
}

impl std::fmt::Debug for Beneath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Beneath")
            .field("policy", &self.policy)
            .field("roots", &self.roots)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

/// A file moved out of its place and kept under a temporary name beside
/// it (in the same directory, by the same handle), so that a transaction
/// can put it back exactly — content, mode, owner, links — with one rename,
/// which needs no space on the disk. Made by [`Beneath::replace`] and
/// [`Beneath::set_aside`]; [`Beneath::restore`] puts it back and
/// [`Beneath::release`] removes it for good. (On a file system that can
/// neither exchange nor hard-link names, [`Beneath::replace`] keeps a copy
/// of the content and mode in memory instead.)
#[derive(Debug)]
#[must_use = "a file set aside stays on disk under a temporary name until restored or released"]
pub struct SetAside {
    dir: OwnedFd,
    kept: Kept,
    name: OsString,
    target: PathBuf,
    /// Whether its place holds a replacement (after [`Beneath::replace`]),
    /// which restoring replaces in turn.
    replaced: bool,
}

/// How a file set aside is kept.
#[derive(Debug)]
enum Kept {
    /// The file itself, under this temporary name in the same directory.
    Name(OsString),
    /// A copy of its content and mode, where the file system could neither
    /// exchange two names nor hard-link one.
    Copy { bytes: Vec<u8>, mode: Mode },
}

impl SetAside {
    /// Where the file was (and goes back to).
    pub fn target(&self) -> &Path {
        &self.target
    }
}

/// A checked target: which root handle, and the path below it.
struct Target {
    spelling: String,
    root: usize,
    /// Below the root; empty for the root itself.
    relative: PathBuf,
    location: PathBuf,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many names [`create_temp`] tries before giving up.
const TEMP_TRIES: usize = 64;

/// Creates a new temporary file in `dir` (`O_EXCL`, never following a
/// link), named `.agentcaps-PID-N.tmp`. The process id is read once: a
/// forked child shares it and the counter, so a name already taken is not
/// an error but a reason to take the next one.
fn create_temp(dir: &OwnedFd, mode: Mode) -> Result<(OsString, OwnedFd), Errno> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    with_temp_name(|temp| rustix::fs::openat(dir, temp, flags, mode))
}

/// Calls `take` with fresh temporary names until one is not taken yet
/// (`EEXIST`), at most [`TEMP_TRIES`] times.
fn with_temp_name<T>(
    mut take: impl FnMut(&OsStr) -> Result<T, Errno>,
) -> Result<(OsString, T), Errno> {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let pid = *PID.get_or_init(std::process::id);
    let mut tries = 0;
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = OsString::from(format!(".agentcaps-{pid}-{n}.tmp"));
        match take(&temp) {
            Ok(taken) => return Ok((temp, taken)),
            Err(Errno::EXIST) if tries + 1 < TEMP_TRIES => tries += 1,
            Err(errno) => return Err(errno),
        }
    }
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_MAGICLINKS)
    .union(ResolveFlags::NO_SYMLINKS);

fn errno_io(op: &'static str, path: &Path, errno: Errno) -> PathError {
    PathError::io(op, path, errno.into())
}

impl Beneath {
    /// The most entries a renamed directory may hold (each is judged where
    /// it lands).
    pub const MAX_MOVED: usize = 10_000;

    pub(crate) fn open(policy: &PathPolicy, view: Arc<dyn FileSystem>) -> Result<Self, PathError> {
        let mut roots = Vec::new();
        for (root, _) in policy.roots() {
            let fd = match rustix::fs::open(
                root,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => Some(fd),
                Err(Errno::NOENT) => None,
                Err(e) => return Err(errno_io("open root", root, e)),
            };
            roots.push((root.to_path_buf(), fd));
        }
        Ok(Beneath {
            policy: policy.clone(),
            view,
            roots,
            durable: false,
            missing: Missing::default(),
        })
    }

    /// The policy this handle judges with.
    pub fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    fn target(
        &self,
        base: &Path,
        spelling: &str,
        access: Access,
        follow: Follow,
    ) -> Result<Target, PathError> {
        let checked =
            self.policy
                .judge(self.view.as_ref(), base, spelling, access, None, follow)?;
        let location = checked.location().to_path_buf();
        let root = self
            .roots
            .iter()
            .position(|(root, _)| root == checked.root())
            .ok_or_else(|| self.changed(spelling, &location, "its root has no handle"))?;
        let relative = location
            .strip_prefix(checked.root())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        Ok(Target {
            spelling: spelling.to_owned(),
            root,
            relative,
            location,
        })
    }

    fn changed(&self, spelling: &str, location: &Path, detail: &str) -> PathError {
        PathError::Changed {
            spelling: spelling.to_owned(),
            location: location.to_path_buf(),
            detail: detail.to_owned(),
        }
    }

    fn root_fd(&self, target: &Target) -> Result<BorrowedFd<'_>, PathError> {
        match self.roots.get(target.root) {
            Some((_, Some(fd))) => Ok(fd.as_fd()),
            Some((root, None)) => Err(errno_io("open root", root, Errno::NOENT)),
            None => Err(self.changed(&target.spelling, &target.location, "unknown root")),
        }
    }

    /// Open `relative` beneath the root's handle, refusing every link.
    fn open_at(
        &self,
        target: &Target,
        relative: &Path,
        flags: OFlags,
    ) -> Result<OwnedFd, PathError> {
        let dir = self.root_fd(target)?;
        let path = if relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            relative
        };
        let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let result = match rustix::fs::openat2(dir, path, flags, Mode::empty(), BENEATH) {
            Err(Errno::NOSYS) => walk_open(dir, path, flags),
            other => other,
        };
        result.map_err(|errno| match errno {
            Errno::LOOP | Errno::XDEV => self.changed(
                &target.spelling,
                &target.location,
                "a link appeared on the way after the check",
            ),
            Errno::NOTDIR => {
                self.changed(&target.spelling, &target.location, "it is not a directory")
            }
            Errno::ISDIR => self.changed(&target.spelling, &target.location, "it is a directory"),
            other => errno_io("open", &target.location, other),
        })
    }

    /// The parent directory's handle and the final name.
    fn parent(&self, target: &Target) -> Result<(OwnedFd, OsString), PathError> {
        let name = target
            .relative
            .file_name()
            .ok_or_else(|| {
                self.changed(
                    &target.spelling,
                    &target.location,
                    "it is an allowed root itself, which cannot be replaced, renamed or removed",
                )
            })?
            .to_os_string();
        let parent = target.relative.parent().unwrap_or(Path::new(""));
        let dir = self.open_at(target, parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
        Ok((dir, name))
    }

    /// Open a file for reading.
    ///
    /// # Errors
    ///
    /// A refusal of [`PathPolicy::check`] for [`Access::Read`],
    /// [`PathError::Changed`] when a link appeared on the way or the target
    /// is not a regular file, or I/O.
    pub fn open_read(&self, base: &Path, spelling: &str) -> Result<std::fs::File, PathError> {
        let (file, _) = self.open_regular(base, spelling, true)?;
        Ok(file)
    }

    /// Opens a regular file for reading, and says how long it is.
    ///
    /// The open is non-blocking, so that a FIFO put in the file's place
    /// cannot hang it. On a regular file the flag changes nothing (Linux
    /// ignores it there); with `blocking` it is cleared anyway, for handles
    /// given out to callers.
    fn open_regular(
        &self,
        base: &Path,
        spelling: &str,
        blocking: bool,
    ) -> Result<(std::fs::File, u64), PathError> {
        let target = self.target(base, spelling, Access::Read, Follow::Last)?;
        let fd = self.open_at(&target, &target.relative, OFlags::RDONLY | OFlags::NONBLOCK)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| errno_io("fstat", &target.location, e))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(self.changed(spelling, &target.location, "it is not a regular file"));
        }
        if blocking {
            let flags =
                rustix::fs::fcntl_getfl(&fd).map_err(|e| errno_io("fcntl", &target.location, e))?;
            rustix::fs::fcntl_setfl(&fd, flags - OFlags::NONBLOCK)
                .map_err(|e| errno_io("fcntl", &target.location, e))?;
        }
        Ok((std::fs::File::from(fd), non_negative(stat.st_size)))
    }

    /// Read a whole file of at most `max_bytes` bytes.
    ///
    /// # Errors
    ///
    /// As [`Beneath::open_read`], and [`PathError::TooLarge`].
    pub fn read(&self, base: &Path, spelling: &str, max_bytes: u64) -> Result<Vec<u8>, PathError> {
        let (file, len) = self.open_regular(base, spelling, false)?;
        let too_large = |len| PathError::TooLarge {
            spelling: spelling.to_owned(),
            len,
            limit: max_bytes,
        };
        if len > max_bytes {
            return Err(too_large(len));
        }
        // Room for the whole file and one byte more, so that a file of the
        // size `fstat` gave is read in one call and the end seen in the
        // next; a file that grows meanwhile is still bounded by the limit.
        let hint = usize::try_from(len.saturating_add(1)).unwrap_or(usize::MAX);
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(hint)
            .map_err(|e| PathError::io("read", spelling, std::io::Error::other(e)))?;
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| PathError::io("read", spelling, e))?;
        if bytes.len() as u64 > max_bytes {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(bytes)
    }

    /// What is at the path, without following a final link (the link itself
    /// is judged and reported).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Read`], or I/O.
    pub fn metadata(&self, base: &Path, spelling: &str) -> Result<EntryInfo, PathError> {
        let target = self.target(base, spelling, Access::Read, Follow::NotLast)?;
        let stat = if target.relative.as_os_str().is_empty() {
            rustix::fs::fstat(self.root_fd(&target)?)
        } else {
            let (dir, name) = self.parent(&target)?;
            rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
        }
        .map_err(|e| errno_io("lstat", &target.location, e))?;
        let modified = u64::try_from(stat.st_mtime).ok().map(|secs| {
            SystemTime::UNIX_EPOCH
                + Duration::from_secs(secs)
                + Duration::from_nanos(non_negative(stat.st_mtime_nsec))
        });
        Ok(EntryInfo {
            kind: kind_of(FileType::from_raw_mode(stat.st_mode)),
            len: u64::try_from(stat.st_size).unwrap_or(0),
            modified,
            readonly: stat.st_mode & 0o200 == 0,
        })
    }

    /// List a directory; links are reported as links, never followed.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::List`], or I/O.
    pub fn list(&self, base: &Path, spelling: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let target = self.target(base, spelling, Access::List, Follow::Last)?;
        let fd = self.open_at(
            &target,
            &target.relative,
            OFlags::RDONLY | OFlags::DIRECTORY,
        )?;
        let mut dir = rustix::fs::Dir::read_from(&fd)
            .map_err(|e| errno_io("opendir", &target.location, e))?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(|e| errno_io("readdir", &target.location, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| kind_of(FileType::from_raw_mode(st.st_mode)))
                    .unwrap_or(EntryKind::Other),
                file_type => kind_of(file_type),
            };
            entries.push(DirEntryInfo {
                name: name.to_os_string(),
                kind,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Write `bytes` to a file: a temporary file beside it (created with
    /// `O_EXCL | O_NOFOLLOW`) renamed into place. A new name must be
    /// portable (SPEC §1.4).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], a non-portable new name,
    /// [`PathError::AlreadyExists`] with [`WriteMode::CreateNew`], or I/O.
    /// On failure the target is untouched and no temporary file is left.
    pub fn write(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let (dir, name) = self.parent(&target)?;
        let staged = self.stage_in(&target, dir, name, bytes)?;
        let flags = match mode {
            WriteMode::CreateNew => RenameFlags::NOREPLACE,
            WriteMode::Overwrite => RenameFlags::empty(),
        };
        let (dir, _, location) = self.put_in_place(staged, flags, spelling)?;
        self.sync_dir(&dir, &location)
    }

    fn stage_in(
        &self,
        target: &Target,
        dir: OwnedFd,
        name: OsString,
        bytes: &[u8],
    ) -> Result<Staged, PathError> {
        let existing = rustix::fs::statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).ok();
        if let Some(stat) = &existing
            && FileType::from_raw_mode(stat.st_mode) == FileType::Directory
        {
            return Err(self.changed(&target.spelling, &target.location, "it is a directory"));
        }
        let replaced =
            existing.filter(|st| FileType::from_raw_mode(st.st_mode) == FileType::RegularFile);
        let mode = replaced
            .as_ref()
            .map_or(Mode::from_bits_truncate(0o644), |st| {
                Mode::from_bits_truncate(st.st_mode & 0o777)
            });
        let replaces_len = replaced.map_or(0, |st| non_negative(st.st_size));
        let temp = self.write_temp(&dir, mode, bytes, &target.location)?;
        Ok(Staged {
            dir,
            temp,
            name,
            target: target.location.clone(),
            replaces_len,
        })
    }

    /// Writes `bytes` to a new temporary file of `mode` in `dir` (synced
    /// when durable) and names it; nothing is left on failure.
    fn write_temp(
        &self,
        dir: &OwnedFd,
        mode: Mode,
        bytes: &[u8],
        location: &Path,
    ) -> Result<OsString, PathError> {
        let (temp, fd) = create_temp(dir, mode).map_err(|e| errno_io("create", location, e))?;
        let mut file = std::fs::File::from(fd);
        let written = file.write_all(bytes).and_then(|()| {
            if self.durable {
                file.sync_all()
            } else {
                Ok(())
            }
        });
        if let Err(e) = written {
            remove_quietly(dir, &temp);
            return Err(PathError::io("write", location, e));
        }
        Ok(temp)
    }

    /// Renames a staged file to its target's name; on success gives back
    /// the directory handle, the name and the location, for syncing or
    /// undoing.
    fn put_in_place(
        &self,
        staged: Staged,
        flags: RenameFlags,
        spelling: &str,
    ) -> Result<(OwnedFd, OsString, PathBuf), PathError> {
        let renamed = rustix::fs::renameat_with(
            &staged.dir,
            staged.temp.as_os_str(),
            &staged.dir,
            staged.name.as_os_str(),
            flags,
        );
        if let Err(errno) = renamed {
            remove_quietly(&staged.dir, &staged.temp);
            return Err(match errno {
                Errno::EXIST => PathError::AlreadyExists {
                    spelling: spelling.to_owned(),
                    location: staged.target,
                },
                Errno::ISDIR | Errno::NOTEMPTY => {
                    self.changed(spelling, &staged.target, "it is a directory")
                }
                other => errno_io("rename", &staged.target, other),
            });
        }
        Ok((staged.dir, staged.name, staged.target))
    }

    fn sync_dir(&self, dir: &OwnedFd, location: &Path) -> Result<(), PathError> {
        if self.durable {
            rustix::fs::fsync(dir).map_err(|e| errno_io("fsync", location, e))?;
        }
        Ok(())
    }

    /// Create a directory and its missing parents, one component at a
    /// time beneath the root's handle. New names must be portable.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], a non-portable new name, or I/O.
    pub fn create_dir_all(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let mut dir = self.open_at(&target, Path::new(""), OFlags::RDONLY | OFlags::DIRECTORY)?;
        for component in target.relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let next = match rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&dir, name, Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(errno_io("mkdir", &target.location, e)),
                    }
                    self.sync_dir(&dir, &target.location)?;
                    rustix::fs::openat(&dir, name, flags, Mode::empty())
                }
                other => other,
            };
            dir = next.map_err(|errno| match errno {
                Errno::LOOP | Errno::NOTDIR => {
                    self.changed(spelling, &target.location, "a link or a file is in the way")
                }
                other => errno_io("open", &target.location, other),
            })?;
        }
        Ok(())
    }

    /// Rename `from` to `to`, refusing to replace an existing target. A link
    /// is renamed itself, never its target. The new name must be portable.
    /// A directory's contents are judged where they leave and where they
    /// land, so a directory holding `config` cannot be renamed to `.git`.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`] on either side or on anything moved
    /// with a directory, [`PathError::TooCostly`] for a directory of more
    /// than [`Beneath::MAX_MOVED`] entries, [`PathError::AlreadyExists`], or
    /// I/O.
    pub fn rename(&self, base: &Path, from: &str, to: &str) -> Result<(), PathError> {
        let source = self.target(base, from, Access::Write, Follow::NotLast)?;
        let dest = self.target(base, to, Access::Write, Follow::NotLast)?;
        if let Some(name) = dest.relative.file_name() {
            crate::spelling::check_portable_os(name)?;
        }
        let (from_dir, from_name) = self.parent(&source)?;
        let (to_dir, to_name) = self.parent(&dest)?;
        self.judge_moved_tree(&from_dir, &from_name, &source, &dest, from)?;
        rustix::fs::renameat_with(
            &from_dir,
            from_name.as_os_str(),
            &to_dir,
            to_name.as_os_str(),
            RenameFlags::NOREPLACE,
        )
        .map_err(|errno| match errno {
            Errno::EXIST => PathError::AlreadyExists {
                spelling: to.to_owned(),
                location: dest.location.clone(),
            },
            other => errno_io("rename", &source.location, other),
        })?;
        self.sync_dir(&to_dir, &dest.location)
    }

    /// A directory being renamed moves everything beneath it: each entry is
    /// judged for writing where it leaves and where it lands (so a
    /// directory holding `config` cannot become `.git`). At most
    /// [`Beneath::MAX_MOVED`] entries; links are not followed.
    fn judge_moved_tree(
        &self,
        from_dir: &OwnedFd,
        from_name: &OsStr,
        source: &Target,
        dest: &Target,
        spelling: &str,
    ) -> Result<(), PathError> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let top = match rustix::fs::openat(from_dir, from_name, flags, Mode::empty()) {
            Ok(fd) => fd,
            // Not a directory (or a link): nothing moves with it.
            Err(Errno::NOTDIR | Errno::LOOP) => return Ok(()),
            Err(e) => return Err(errno_io("open", &source.location, e)),
        };
        let mut pending = vec![(top, PathBuf::new())];
        let mut seen = 0usize;
        while let Some((fd, relative)) = pending.pop() {
            let mut dir = rustix::fs::Dir::read_from(&fd)
                .map_err(|e| errno_io("opendir", &source.location, e))?;
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(|e| errno_io("readdir", &source.location, e))?;
                let name = OsStr::from_bytes(entry.file_name().to_bytes());
                if name == "." || name == ".." {
                    continue;
                }
                seen += 1;
                if seen > Self::MAX_MOVED {
                    return Err(PathError::TooCostly {
                        spelling: spelling.to_owned(),
                        budget: Self::MAX_MOVED as u64,
                    });
                }
                let inner = relative.join(name);
                self.policy
                    .judge_created(spelling, &source.location.join(&inner))?;
                self.policy
                    .judge_created(spelling, &dest.location.join(&inner))?;
                if entry.file_type() == FileType::Directory
                    || entry.file_type() == FileType::Unknown
                {
                    match rustix::fs::openat(&fd, name, flags, Mode::empty()) {
                        Ok(child) => pending.push((child, inner)),
                        Err(Errno::NOTDIR | Errno::LOOP) => {}
                        Err(e) => return Err(errno_io("open", &source.location, e)),
                    }
                }
            }
        }
        Ok(())
    }

    /// Remove a file (or a link, never its target).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], or I/O.
    pub fn remove_file(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        self.remove(base, spelling, AtFlags::empty())
    }

    /// Remove an empty directory.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], or I/O.
    pub fn remove_dir(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        self.remove(base, spelling, AtFlags::REMOVEDIR)
    }

    fn remove(&self, base: &Path, spelling: &str, flags: AtFlags) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (dir, name) = self.parent(&target)?;
        rustix::fs::unlinkat(&dir, name.as_os_str(), flags)
            .map_err(|e| errno_io("remove", &target.location, e))?;
        self.sync_dir(&dir, &target.location)
    }

    /// Write `bytes` to a temporary file beside the target, to be put in
    /// place by [`Beneath::commit`] (for transactions over many files).
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`].
    pub fn stage(&self, base: &Path, spelling: &str, bytes: &[u8]) -> Result<Staged, PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let (dir, name) = self.parent(&target)?;
        self.stage_in(&target, dir, name, bytes)
    }

    /// Rename a staged file over its target (replacing it). The rename is
    /// relative to the directory handle opened when staging.
    ///
    /// # Errors
    ///
    /// I/O (the temporary file is removed).
    pub fn commit(&self, staged: Staged) -> Result<(), PathError> {
        let spelling = staged.target.display().to_string();
        let (dir, _, location) = self.put_in_place(staged, RenameFlags::empty(), &spelling)?;
        self.sync_dir(&dir, &location)
    }

    /// Rename a staged file to its target's name, refusing to replace
    /// anything that appeared there since.
    ///
    /// # Errors
    ///
    /// [`PathError::AlreadyExists`], or I/O (nothing is left: neither the
    /// temporary file nor, when the directory could not be synced, the new
    /// file).
    pub fn commit_new(&self, staged: Staged) -> Result<(), PathError> {
        let spelling = staged.target.display().to_string();
        let (dir, name, location) = self.put_in_place(staged, RenameFlags::NOREPLACE, &spelling)?;
        self.sync_dir(&dir, &location).inspect_err(|_| {
            remove_quietly(&dir, &name);
        })
    }

    /// Put a staged file in place of the file at its target, and keep the
    /// replaced file aside (the two are exchanged, atomically) for
    /// [`Beneath::restore`] or [`Beneath::release`].
    ///
    /// Where the file system cannot exchange two names, the old file is
    /// hard-linked under a temporary name before the staged file is renamed
    /// over it; where it cannot hard-link either, a copy of its content (no
    /// larger than when the file was staged) and mode is kept instead.
    ///
    /// # Errors
    ///
    /// I/O, [`PathError::Changed`] when a directory took the file's place
    /// (it is put back) or the file grew since staging; the temporary file
    /// is removed either way.
    pub fn replace(&self, staged: Staged) -> Result<SetAside, PathError> {
        let exchanged = if self.missing.exchange {
            Err(Errno::INVAL)
        } else {
            rustix::fs::renameat_with(
                &staged.dir,
                staged.temp.as_os_str(),
                &staged.dir,
                staged.name.as_os_str(),
                RenameFlags::EXCHANGE,
            )
        };
        match exchanged {
            Ok(()) => {}
            // No exchange here (old kernel, or a file system without it).
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {
                return self.replace_without_exchange(staged);
            }
            Err(errno) => {
                remove_quietly(&staged.dir, &staged.temp);
                return Err(errno_io("rename", &staged.target, errno));
            }
        }
        let Staged {
            dir,
            temp,
            name,
            target,
            ..
        } = staged;
        // Exchanging also swaps a directory out: swap back, drop the staged
        // file, and refuse.
        if is_directory(&dir, &temp) {
            let back = rustix::fs::renameat_with(
                &dir,
                temp.as_os_str(),
                &dir,
                name.as_os_str(),
                RenameFlags::EXCHANGE,
            );
            if back.is_ok() {
                remove_quietly(&dir, &temp);
            }
            return Err(self.changed(&target.display().to_string(), &target, "it is a directory"));
        }
        let aside = SetAside {
            dir,
            kept: Kept::Name(temp),
            name,
            target,
            replaced: true,
        };
        self.synced(aside)
    }

    /// [`Beneath::replace`] where names cannot be exchanged: keep the old
    /// file by a hard link (or, failing that, a copy), then rename over it.
    fn replace_without_exchange(&self, staged: Staged) -> Result<SetAside, PathError> {
        let spelling = staged.target.display().to_string();
        let linked = with_temp_name(|temp| {
            if self.missing.hard_links {
                return Err(Errno::PERM);
            }
            rustix::fs::linkat(
                &staged.dir,
                staged.name.as_os_str(),
                &staged.dir,
                temp,
                AtFlags::empty(),
            )
        });
        let kept = match linked {
            Ok((temp, ())) => Kept::Name(temp),
            Err(_) => match self.copy_of(&staged) {
                Ok(copy) => copy,
                Err(error) => {
                    remove_quietly(&staged.dir, &staged.temp);
                    return Err(error);
                }
            },
        };
        let dir = staged
            .dir
            .try_clone()
            .map_err(|e| PathError::io("dup", &staged.target, e))?;
        let (name, target) = (staged.name.clone(), staged.target.clone());
        if let Err(error) = self.put_in_place(staged, RenameFlags::empty(), &spelling) {
            if let Kept::Name(temp) = &kept {
                remove_quietly(&dir, temp);
            }
            return Err(error);
        }
        self.synced(SetAside {
            dir,
            kept,
            name,
            target,
            replaced: true,
        })
    }

    /// The content and mode of the regular file a staged file replaces,
    /// refusing one that grew since staging.
    fn copy_of(&self, staged: &Staged) -> Result<Kept, PathError> {
        let location = &staged.target;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let spelling = location.display().to_string();
        let fd = rustix::fs::openat(&staged.dir, staged.name.as_os_str(), flags, Mode::empty())
            .map_err(|e| match e {
                Errno::LOOP => self.changed(&spelling, location, "a link took its place"),
                other => errno_io("open", location, other),
            })?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| errno_io("fstat", location, e))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(self.changed(&spelling, location, "it is not a regular file"));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(staged.replaces_len.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| PathError::io("read", location, e))?;
        if bytes.len() as u64 > staged.replaces_len {
            return Err(self.changed(&spelling, location, "it grew since it was read"));
        }
        Ok(Kept::Copy {
            bytes,
            mode: Mode::from_bits_truncate(stat.st_mode & 0o777),
        })
    }

    /// Move the file (or link, never its target) at the path aside, under
    /// a temporary name in the same directory: gone from its place, and
    /// restorable by [`Beneath::restore`] until [`Beneath::release`].
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], [`PathError::Changed`] for a
    /// directory (left in place), or I/O.
    pub fn set_aside(&self, base: &Path, spelling: &str) -> Result<SetAside, PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (dir, name) = self.parent(&target)?;
        let (temp, ()) = with_temp_name(|temp| {
            rustix::fs::renameat_with(&dir, name.as_os_str(), &dir, temp, RenameFlags::NOREPLACE)
        })
        .map_err(|e| errno_io("rename", &target.location, e))?;
        let directory = is_directory(&dir, &temp);
        let aside = SetAside {
            dir,
            kept: Kept::Name(temp),
            name,
            target: target.location,
            replaced: false,
        };
        if directory {
            let location = aside.target.clone();
            self.restore(aside)?;
            return Err(self.changed(spelling, &location, "it is a directory"));
        }
        self.synced(aside)
    }

    /// `aside` once its directory is synced (when durable); if that fails,
    /// the file is put back first, so the error leaves the tree as it was.
    fn synced(&self, aside: SetAside) -> Result<SetAside, PathError> {
        match self.sync_dir(&aside.dir, &aside.target) {
            Ok(()) => Ok(aside),
            Err(error) => {
                let _ = self.restore(aside);
                Err(error)
            }
        }
    }

    /// Put a file set aside back in its place: over the replacement after
    /// [`Beneath::replace`]; after [`Beneath::set_aside`], only if nothing
    /// has taken the place since.
    ///
    /// # Errors
    ///
    /// [`PathError::AlreadyExists`], or I/O (the file stays aside, under
    /// its temporary name).
    pub fn restore(&self, aside: SetAside) -> Result<(), PathError> {
        let flags = if aside.replaced {
            RenameFlags::empty()
        } else {
            RenameFlags::NOREPLACE
        };
        let temp = match aside.kept {
            Kept::Name(temp) => temp,
            Kept::Copy { bytes, mode } => {
                self.write_temp(&aside.dir, mode, &bytes, &aside.target)?
            }
        };
        rustix::fs::renameat_with(
            &aside.dir,
            temp.as_os_str(),
            &aside.dir,
            aside.name.as_os_str(),
            flags,
        )
        .map_err(|errno| match errno {
            Errno::EXIST => PathError::AlreadyExists {
                spelling: aside.target.display().to_string(),
                location: aside.target.clone(),
            },
            other => errno_io("rename", &aside.target, other),
        })?;
        self.sync_dir(&aside.dir, &aside.target)
    }

    /// Remove a file set aside, for good.
    ///
    /// # Errors
    ///
    /// I/O (the file stays under its temporary name).
    pub fn release(&self, aside: SetAside) -> Result<(), PathError> {
        let Kept::Name(temp) = &aside.kept else {
            return Ok(());
        };
        // Not synced: the tree is already as it should be; a temporary file
        // a crash brings back holds only old content.
        rustix::fs::unlinkat(&aside.dir, temp.as_os_str(), AtFlags::empty())
            .map_err(|e| errno_io("remove", &aside.target, e))
    }

    /// Remove a staged file.
    ///
    /// # Errors
    ///
    /// I/O.
    pub fn discard(&self, staged: Staged) -> Result<(), PathError> {
        rustix::fs::unlinkat(&staged.dir, staged.temp.as_os_str(), AtFlags::empty())
            .map_err(|e| errno_io("remove", &staged.target, e))
    }

    /// Test seam, not for production use: make [`Beneath::replace`] act as
    /// on a file system without `RENAME_EXCHANGE` (it then keeps the old
    /// file by a hard link) and, with `hard_links` too, without hard links
    /// (it then keeps a copy). The fallbacks run exactly as they would
    /// there; only the kernel's refusal is simulated.
    #[doc(hidden)]
    pub fn simulate_missing(&mut self, exchange: bool, hard_links: bool) {
        self.missing = Missing {
            exchange,
            hard_links,
        };
    }

    /// Whether to `fsync` written files and their directories (off by
    /// default).
    pub fn set_durable(&mut self, on: bool) {
        self.durable = on;
    }
}

/// Where `openat2` is missing: open one component at a time with
/// `O_NOFOLLOW`, which refuses every link on the way. `path` is a real
/// location below the root (no `.`, `..` or links).
fn walk_open(dir: BorrowedFd<'_>, path: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let names: Vec<&OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let step = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Some((last, parents)) = names.split_last() else {
        return rustix::fs::openat(dir, ".", flags, Mode::empty());
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let next = match &current {
            Some(fd) => rustix::fs::openat(fd, *name, step, Mode::empty())?,
            None => rustix::fs::openat(dir, *name, step, Mode::empty())?,
        };
        current = Some(next);
    }
    match &current {
        Some(fd) => rustix::fs::openat(fd, *last, flags, Mode::empty()),
        None => rustix::fs::openat(dir, *last, flags, Mode::empty()),
    }
}

/// Removes `name` from `dir`: clean-up on a way that already fails.
fn remove_quietly(dir: &OwnedFd, name: &OsStr) {
    let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
}

/// Whether `name` in `dir` is a directory (not following a link).
fn is_directory(dir: &OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
}

/// A platform integer as `u64` (negative or too large: 0).
fn non_negative(value: impl TryInto<u64>) -> u64 {
    value.try_into().unwrap_or(0)
}
