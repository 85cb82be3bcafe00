//! Staged files and files set aside: the steps a transaction over many
//! files is built from (write beside, put in place, keep the old file,
//! put it back or let it go).

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::sys::{self, Dir, Failed, Rename, Why};
use super::version::Version;
use super::{Beneath, Target, changed, io};
use crate::resolve::Follow;
use crate::{Access, EntryKind, PathError};

/// A file written beside its target (or in the hidden directory of
/// [`Beneath::stage_in_commit_dir`]), waiting for [`Beneath::commit`],
/// [`Beneath::commit_new`], [`Beneath::replace`] or [`Beneath::discard`].
#[derive(Debug)]
#[must_use = "a staged file stays on disk until committed or discarded"]
pub struct Staged {
    /// The target's directory.
    dir: Dir,
    /// Where the temporary file is: `dir`, or the hidden directory.
    temp_dir: Dir,
    temp: OsString,
    name: OsString,
    target: PathBuf,
    /// The size of the file it replaces, when staged (0: none): the most a
    /// copy of that file kept for undoing may hold.
    replaces_len: u64,
    /// Where the target's directory was judged to be: the root's index and
    /// the directory's path below it (checked again once the file is in
    /// place, so a directory renamed meanwhile is noticed).
    root: usize,
    parent: PathBuf,
    /// The staged file itself, as written.
    written: Version,
}

impl Staged {
    /// The real location the staged file will replace.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file's name (in the target's directory, or in the
    /// hidden directory of [`Beneath::stage_in_commit_dir`]).
    pub fn temp_name(&self) -> &OsStr {
        &self.temp
    }

    /// The version the file will have once in place (a rename keeps it).
    pub fn version(&self) -> Version {
        self.written
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
    /// The directory it was in.
    dir: Dir,
    /// Where it is kept: `dir`, or the hidden directory.
    temp_dir: Dir,
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
    /// A copy of its content and permission bits, where the file system
    /// could neither exchange two names nor hard-link one, and the version
    /// it had when copied.
    Copy {
        bytes: Vec<u8>,
        mode: u32,
        version: Version,
    },
}

impl SetAside {
    /// Where the file was (and goes back to).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The version of the file kept aside (`None` when it cannot be read).
    fn version(&self) -> Option<Version> {
        match &self.kept {
            Kept::Name(temp) => sys::stat_at(&self.temp_dir, temp)
                .ok()
                .map(|st| Version::of(&st)),
            Kept::Copy { version, .. } => Some(*version),
        }
    }
}

/// What a staged file may take the place of.
#[derive(Debug, Clone, Copy)]
pub(super) enum Over {
    /// Nothing: the name must be free.
    Nothing,
    /// Whatever file is there, or nothing.
    Any,
    /// A file, which must be there.
    Existing,
    /// Exactly this version of the file, which must still be there.
    Unchanged(Version),
}

/// A staged file in its place, and how to undo that.
pub(super) enum Placed {
    /// It took a free name (in `dir`, as `name`, at `location`).
    New {
        dir: Dir,
        name: OsString,
        location: PathBuf,
    },
    /// It replaced a file, kept aside.
    Replaced(SetAside),
}

/// Why a staged file did not take a free name.
pub(super) enum PlaceNew {
    /// The name is taken: the staged file, still staged.
    Taken(Box<Staged>),
    /// Anything else (the staged file is removed).
    Failed(PathError),
}

impl PlaceNew {
    /// The error, the staged file removed.
    fn into_error(self, spelling: &str) -> PathError {
        match self {
            PlaceNew::Taken(staged) => {
                remove_quietly(&staged.temp_dir, &staged.temp);
                PathError::AlreadyExists {
                    spelling: spelling.to_owned(),
                    location: staged.target,
                }
            }
            PlaceNew::Failed(error) => error,
        }
    }
}

/// The file a placed file replaced (never a new name: only
/// [`Over::Existing`] and [`Over::Unchanged`] ask for this).
fn kept_aside(placed: Placed, spelling: &str) -> Result<SetAside, PathError> {
    match placed {
        Placed::Replaced(aside) => Ok(aside),
        Placed::New {
            dir,
            name,
            location,
        } => {
            remove_quietly(&dir, &name);
            Err(changed(spelling, &location, "nothing was there to replace"))
        }
    }
}

/// The refusal of a write over a file that changed since it was read.
fn conflict(spelling: &str, location: &Path, detail: &str) -> PathError {
    PathError::Conflict {
        spelling: spelling.to_owned(),
        location: location.to_path_buf(),
        detail: detail.to_owned(),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many names [`with_temp_name`] tries before giving up.
const TEMP_TRIES: usize = 64;

/// Calls `take` with fresh temporary names, `.agentcaps-PID-N.tmp`, until
/// one is not taken yet ([`Why::Exists`]), at most [`TEMP_TRIES`] times.
/// The process id is read once: a forked child shares it and the counter,
/// so a name already taken is not an error but a reason to take the next
/// one.
fn with_temp_name<T>(
    mut take: impl FnMut(&OsStr) -> Result<T, Failed>,
) -> Result<(OsString, T), Failed> {
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let pid = *PID.get_or_init(std::process::id);
    let mut tries = 0;
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = OsString::from(format!(".agentcaps-{pid}-{n}.tmp"));
        match take(&temp) {
            Ok(taken) => return Ok((temp, taken)),
            Err(failed) if failed.why == Why::Exists && tries + 1 < TEMP_TRIES => tries += 1,
            Err(failed) => return Err(failed),
        }
    }
}

/// Removes `name` from `dir`: clean-up on a way that already fails.
fn remove_quietly(dir: &Dir, name: &OsStr) {
    let _ = sys::remove_file_at(dir, name);
}

/// Whether `name` in `dir` is a directory (not following a link).
/// Removes the directory `name` of `dir` with everything beneath it, by
/// handle and with two directories open at a time, whatever the depth:
/// each subdirectory's entries are moved up into the top one (under
/// temporary names) before it is removed, until the top one is empty.
pub(super) fn remove_tree_at(dir: &Dir, name: &OsStr) -> Result<(), Failed> {
    let top = sys::open_dir_at(dir, name)?;
    loop {
        let entries = sys::read_dir(&top)?;
        if entries.is_empty() {
            break;
        }
        for (entry, kind) in entries {
            if kind != EntryKind::Dir {
                sys::remove_file_at(&top, &entry)?;
                continue;
            }
            let sub = sys::open_dir_at(&top, &entry)?;
            for (inner, _) in sys::read_dir(&sub)? {
                with_temp_name(|temp| sys::rename_at(&sub, &inner, &top, temp, Rename::NoReplace))?;
            }
            drop(sub);
            sys::remove_dir_at(&top, &entry)?;
        }
    }
    drop(top);
    sys::remove_dir_at(dir, name)
}

fn is_directory(dir: &Dir, name: &OsStr) -> bool {
    sys::stat_at(dir, name).is_ok_and(|st| st.kind == EntryKind::Dir)
}

impl Beneath {
    /// The target of a staged file with a given mode: its parent handle and
    /// name, and the size of the file it replaces (0 when none). A
    /// directory in its place is refused.
    fn stage_target(
        &self,
        base: &Path,
        spelling: &str,
    ) -> Result<(Target, Dir, OsString, u64), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let (dir, name) = self.parent(&target)?;
        let existing = sys::stat_at(&dir, &name).ok();
        if existing.is_some_and(|st| st.kind == EntryKind::Dir) {
            return Err(changed(
                &target.spelling,
                &target.location,
                "it is a directory",
            ));
        }
        let replaces_len = existing
            .filter(|st| st.kind == EntryKind::File)
            .map_or(0, |st| st.len);
        Ok((target, dir, name, replaces_len))
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

    /// [`Beneath::stage`] with the new file's permission bits given
    /// (`mode & 0o777`: set-user-ID, set-group-ID and sticky bits are never
    /// applied) instead of taken from the file it replaces.
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`].
    pub fn stage_with_mode(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: u32,
    ) -> Result<Staged, PathError> {
        let (target, dir, name, replaces_len) = self.stage_target(base, spelling)?;
        let temp_dir = self.temp_dir(target.root, &dir)?;
        let temp = self.write_temp(&temp_dir, mode & 0o777, bytes, &target.location)?;
        self.staged(&target, dir, temp_dir, temp, name, replaces_len)
    }

    /// [`Beneath::stage_with_mode`] for content that is already a file on
    /// the same file system (a command's staging layer): the file is
    /// hard-linked beside the target under a temporary name, and given
    /// `mode & 0o777`, instead of being read and written again. Where it
    /// cannot be linked (another file system, no hard links), its content
    /// is copied as [`Beneath::stage_with_mode`] does.
    ///
    /// The caller must own `source` and keep nothing else from writing it:
    /// once committed it *is* the file in the tree.
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`]; reading `source` for the copy.
    pub fn stage_file(
        &self,
        base: &Path,
        spelling: &str,
        source: &Path,
        mode: u32,
    ) -> Result<Staged, PathError> {
        let (target, dir, name, replaces_len) = self.stage_target(base, spelling)?;
        let temp_dir = self.temp_dir(target.root, &dir)?;
        let temp = match with_temp_name(|temp| sys::link_from(source, &temp_dir, temp)) {
            Ok((temp, ())) => {
                if let Err(failed) = sys::chmod_at(&temp_dir, &temp, mode & 0o777) {
                    remove_quietly(&temp_dir, &temp);
                    return Err(io("chmod", &target.location, failed));
                }
                temp
            }
            Err(_) => {
                let bytes = crate::long_path::read(source)
                    .map_err(|e| io("read", source, sys::Failed::new(Why::Other, e)))?;
                self.write_temp(&temp_dir, mode & 0o777, &bytes, &target.location)?
            }
        };
        self.staged(&target, dir, temp_dir, temp, name, replaces_len)
    }

    /// Stage another name for the file `first` stages (a hard link between
    /// two new files): a temporary name beside the target `spelling` that
    /// is a hard link to `first`'s temporary file, to be put in place like
    /// any staged file. Once both are committed the two names share one
    /// file, as they did where they were made.
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`]; the link's own failure (`first` on another
    /// file system, no hard links), after which the caller may stage a
    /// copy instead.
    pub fn stage_hard_link(
        &self,
        base: &Path,
        spelling: &str,
        first: &Staged,
    ) -> Result<Staged, PathError> {
        let (target, dir, name, replaces_len) = self.stage_target(base, spelling)?;
        let temp_dir = self.temp_dir(target.root, &dir)?;
        let (temp, ()) =
            with_temp_name(|temp| sys::link_between(&first.temp_dir, &first.temp, &temp_dir, temp))
                .map_err(|failed| io("link", &target.location, failed))?;
        self.staged(&target, dir, temp_dir, temp, name, replaces_len)
    }

    /// Stage a symbolic link to `link_target` beside the target, to be put
    /// in place like a staged file ([`Beneath::commit_new`],
    /// [`Beneath::replace`]). The link's own location is judged for
    /// writing (a link already there is not followed); where it points is
    /// the caller's to judge.
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`]; on Windows, always (links are not created).
    pub fn stage_symlink(
        &self,
        base: &Path,
        spelling: &str,
        link_target: &Path,
    ) -> Result<Staged, PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (dir, name) = self.parent(&target)?;
        let temp_dir = self.temp_dir(target.root, &dir)?;
        let (temp, ()) = with_temp_name(|temp| sys::symlink_at(&temp_dir, link_target, temp))
            .map_err(|failed| io("symlink", &target.location, failed))?;
        self.staged(&target, dir, temp_dir, temp, name, 0)
    }

    /// A staged file: the temporary file `temp` in `temp_dir`, for `name`
    /// in `dir`, with the version it was written as.
    fn staged(
        &self,
        target: &Target,
        dir: Dir,
        temp_dir: Dir,
        temp: OsString,
        name: OsString,
        replaces_len: u64,
    ) -> Result<Staged, PathError> {
        let written = match sys::stat_at(&temp_dir, &temp) {
            Ok(stat) => Version::of(&stat),
            Err(failed) => {
                remove_quietly(&temp_dir, &temp);
                return Err(io("lstat", &target.location, failed));
            }
        };
        Ok(Staged {
            dir,
            temp_dir,
            temp,
            name,
            target: target.location.clone(),
            replaces_len,
            root: target.root,
            parent: target
                .relative
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            written,
        })
    }

    pub(super) fn stage_in(
        &self,
        target: &Target,
        dir: Dir,
        name: OsString,
        bytes: &[u8],
    ) -> Result<Staged, PathError> {
        let existing = sys::stat_at(&dir, &name).ok();
        if existing.is_some_and(|st| st.kind == EntryKind::Dir) {
            return Err(changed(
                &target.spelling,
                &target.location,
                "it is a directory",
            ));
        }
        let replaced = existing.filter(|st| st.kind == EntryKind::File);
        let mode = replaced.map_or(sys::NEW_FILE_MODE, |st| st.mode);
        let replaces_len = replaced.map_or(0, |st| st.len);
        let temp_dir = self.temp_dir(target.root, &dir)?;
        let temp = self.write_temp(&temp_dir, mode, bytes, &target.location)?;
        self.staged(target, dir, temp_dir, temp, name, replaces_len)
    }

    /// Writes `bytes` to a new temporary file of permission bits `mode` in
    /// `dir` (synced when durable) and names it; nothing is left on failure.
    fn write_temp(
        &self,
        dir: &Dir,
        mode: u32,
        bytes: &[u8],
        location: &Path,
    ) -> Result<OsString, PathError> {
        let (temp, mut file) = with_temp_name(|temp| sys::create_new_at(dir, temp, mode))
            .map_err(|failed| io("create", location, failed))?;
        let written = file.write_all(bytes).and_then(|()| {
            if self.durable {
                file.sync_all()
            } else {
                Ok(())
            }
        });
        drop(file);
        if let Err(e) = written {
            remove_quietly(dir, &temp);
            return Err(PathError::io("write", location, e));
        }
        Ok(temp)
    }

    /// Renames a staged file to its target's name; on success gives back
    /// the directory handle, the name and the location, for syncing or
    /// undoing.
    pub(super) fn put_in_place(
        &self,
        staged: Staged,
        how: Rename,
        spelling: &str,
    ) -> Result<(Dir, OsString, PathBuf), PathError> {
        let renamed = sys::rename_at(
            &staged.temp_dir,
            &staged.temp,
            &staged.dir,
            &staged.name,
            how,
        );
        if let Err(failed) = renamed {
            remove_quietly(&staged.temp_dir, &staged.temp);
            return Err(match failed.why {
                Why::Exists => PathError::AlreadyExists {
                    spelling: spelling.to_owned(),
                    location: staged.target,
                },
                Why::IsDir | Why::NotEmpty => {
                    changed(spelling, &staged.target, "it is a directory")
                }
                _ => io("rename", &staged.target, failed),
            });
        }
        Ok((staged.dir, staged.name, staged.target))
    }

    /// Put a staged file in place of `over`, then check that its directory
    /// is still where it was judged to be: a directory renamed while the
    /// file was written (`x` renamed to `.cargo`) would otherwise receive a
    /// file it was never judged for. A misplaced file is taken back out
    /// (the file it replaced put back) and refused as
    /// [`PathError::Changed`].
    pub(super) fn place(
        &self,
        staged: Staged,
        over: Over,
        spelling: &str,
    ) -> Result<Placed, PathError> {
        let (root, parent, written) = (staged.root, staged.parent.clone(), staged.written);
        let target = staged.target.clone();
        let exists = || sys::stat_at(&staged.dir, &staged.name).is_ok();
        let placed = match over {
            Over::Nothing => self
                .place_new(staged, spelling)
                .map_err(|e| e.into_error(spelling))?,
            Over::Any if !exists() => match self.place_new(staged, spelling) {
                // Appeared meanwhile: replaced like any existing file (the
                // staged file was kept for this).
                Err(PlaceNew::Taken(staged)) => Placed::Replaced(self.exchange(*staged)?),
                other => other.map_err(|e| e.into_error(spelling))?,
            },
            Over::Any | Over::Existing => Placed::Replaced(self.exchange(staged)?),
            Over::Unchanged(read) => {
                if !exists() {
                    remove_quietly(&staged.temp_dir, &staged.temp);
                    return Err(conflict(spelling, &target, "it was removed"));
                }
                let aside = self.exchange(staged)?;
                match aside.version() {
                    Some(now) if now == read => Placed::Replaced(aside),
                    now => {
                        let detail = now.map_or("it cannot be read", |now| read.difference(&now));
                        self.restore(aside)?;
                        return Err(conflict(spelling, &target, detail));
                    }
                }
            }
        };
        let dir = match &placed {
            Placed::New { dir, .. } => dir,
            Placed::Replaced(aside) => &aside.dir,
        };
        if self.still_judged(root, &parent, dir) {
            return Ok(placed);
        }
        match placed {
            Placed::New { dir, name, .. } => {
                if sys::stat_at(&dir, &name).is_ok_and(|st| Version::of(&st) == written) {
                    remove_quietly(&dir, &name);
                }
            }
            Placed::Replaced(aside) => self.restore(aside)?,
        }
        Err(changed(
            spelling,
            &target,
            "its directory was moved or replaced while the file was written, so nothing was written",
        ))
    }

    /// Whether `dir` is still the directory at `parent` below root `root`
    /// (the same directory, opened again by its path, refusing links).
    pub(super) fn still_judged(&self, root: usize, parent: &Path, dir: &Dir) -> bool {
        let Some((_, Some(root_dir))) = self.roots.get(root) else {
            return false;
        };
        let Ok(now) = sys::open_dir_beneath(root_dir, parent, self.missing.openat2) else {
            return false;
        };
        matches!(
            (sys::stat_dir(&now), sys::stat_dir(dir)),
            (Ok(now), Ok(then)) if now.id == then.id
        )
    }

    /// Renames a staged file to its free name; gives the staged file back
    /// when the name is taken.
    fn place_new(&self, staged: Staged, spelling: &str) -> Result<Placed, PlaceNew> {
        match sys::rename_at(
            &staged.temp_dir,
            &staged.temp,
            &staged.dir,
            &staged.name,
            Rename::NoReplace,
        ) {
            Ok(()) => Ok(Placed::New {
                dir: staged.dir,
                name: staged.name,
                location: staged.target,
            }),
            Err(failed) if failed.why == Why::Exists => Err(PlaceNew::Taken(Box::new(staged))),
            Err(failed) => {
                remove_quietly(&staged.temp_dir, &staged.temp);
                Err(PlaceNew::Failed(match failed.why {
                    Why::IsDir | Why::NotEmpty => {
                        changed(spelling, &staged.target, "it is a directory")
                    }
                    _ => io("rename", &staged.target, failed),
                }))
            }
        }
    }

    /// Rename a staged file over its target (replacing it). The rename is
    /// relative to the directory handle opened when staging, and is undone
    /// when that directory is no longer where it was judged to be.
    ///
    /// # Errors
    ///
    /// [`PathError::Changed`] when the directory was moved meanwhile (the
    /// replaced file is put back), or I/O (the temporary file is removed).
    pub fn commit(&self, staged: Staged) -> Result<(), PathError> {
        let spelling = staged.target.display().to_string();
        let placed = self.place(staged, Over::Any, &spelling)?;
        self.settle(placed)
    }

    /// Once a file is in place: the file it replaced is removed, the
    /// directory synced (when durable).
    pub(super) fn settle(&self, placed: Placed) -> Result<(), PathError> {
        match placed {
            Placed::New {
                dir,
                name,
                location,
            } => self.sync_dir(&dir, &location).inspect_err(|_| {
                remove_quietly(&dir, &name);
            }),
            Placed::Replaced(aside) => {
                let (dir, location) = match sys::dup(&aside.dir) {
                    Ok(dir) => (dir, aside.target.clone()),
                    Err(e) => return Err(PathError::io("dup", &aside.target, e)),
                };
                // The replaced file is gone from the tree already; one that
                // cannot be removed is a stray temporary file, not a failure
                // of the write.
                let _ = self.release(aside);
                self.sync_dir(&dir, &location)
            }
        }
    }

    /// Rename a staged file to its target's name, refusing to replace
    /// anything that appeared there since (and undone when its directory
    /// is no longer where it was judged to be).
    ///
    /// # Errors
    ///
    /// [`PathError::AlreadyExists`], [`PathError::Changed`], or I/O
    /// (nothing is left: neither the temporary file nor, when the directory
    /// could not be synced, the new file).
    pub fn commit_new(&self, staged: Staged) -> Result<(), PathError> {
        let spelling = staged.target.display().to_string();
        let placed = self.place(staged, Over::Nothing, &spelling)?;
        self.settle(placed)
    }

    /// [`Beneath::replace`], only while the file there is still the
    /// version `read` (the one the new content was made from): otherwise
    /// the file is put back and the write refused as
    /// [`PathError::Conflict`]. The file kept aside is the one compared, so
    /// no write by another process between the comparison and the rename
    /// can be lost.
    ///
    /// # Errors
    ///
    /// [`PathError::Conflict`], and as [`Beneath::replace`].
    pub fn replace_unchanged(&self, staged: Staged, read: Version) -> Result<SetAside, PathError> {
        let spelling = staged.target.display().to_string();
        self.place(staged, Over::Unchanged(read), &spelling)
            .and_then(|placed| kept_aside(placed, &spelling))
    }

    /// Put a staged file in place of the file at its target, and keep the
    /// replaced file aside (the two are exchanged, atomically) for
    /// [`Beneath::restore`] or [`Beneath::release`]. Undone when the
    /// target's directory is no longer where it was judged to be.
    ///
    /// Where the file system cannot exchange two names, the old file is
    /// hard-linked under a temporary name before the staged file is renamed
    /// over it; where it cannot hard-link either, a copy of its content (no
    /// larger than when the file was staged) and mode is kept instead.
    ///
    /// # Errors
    ///
    /// I/O, [`PathError::Changed`] when a directory took the file's place
    /// (it is put back), the file grew since staging, or the directory was
    /// moved meanwhile; the temporary file is removed either way.
    pub fn replace(&self, staged: Staged) -> Result<SetAside, PathError> {
        let spelling = staged.target.display().to_string();
        self.place(staged, Over::Existing, &spelling)
            .and_then(|placed| kept_aside(placed, &spelling))
    }

    /// The exchange of [`Beneath::replace`], without the check of where the
    /// directory is.
    fn exchange(&self, staged: Staged) -> Result<SetAside, PathError> {
        let exchanged = if self.missing.exchange {
            Err(Failed::new(
                Why::Unsupported,
                std::io::Error::from(std::io::ErrorKind::Unsupported),
            ))
        } else {
            sys::rename_at(
                &staged.temp_dir,
                &staged.temp,
                &staged.dir,
                &staged.name,
                Rename::Exchange,
            )
        };
        match exchanged {
            Ok(()) => {}
            // No exchange here (old kernel, a file system without it).
            Err(failed) if failed.why == Why::Unsupported => {
                return self.replace_without_exchange(staged);
            }
            Err(failed) => {
                remove_quietly(&staged.temp_dir, &staged.temp);
                return Err(io("rename", &staged.target, failed));
            }
        }
        let Staged {
            dir,
            temp_dir,
            temp,
            name,
            target,
            ..
        } = staged;
        // Exchanging also swaps a directory out: swap back, drop the staged
        // file, and refuse.
        if is_directory(&temp_dir, &temp) {
            if sys::rename_at(&temp_dir, &temp, &dir, &name, Rename::Exchange).is_ok() {
                remove_quietly(&temp_dir, &temp);
            }
            return Err(changed(
                &target.display().to_string(),
                &target,
                "it is a directory",
            ));
        }
        let aside = SetAside {
            dir,
            temp_dir,
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
                return Err(Failed::new(
                    Why::Unsupported,
                    std::io::Error::from(std::io::ErrorKind::Unsupported),
                ));
            }
            sys::link_between(&staged.dir, &staged.name, &staged.temp_dir, temp)
        });
        let kept = match linked {
            Ok((temp, ())) => Kept::Name(temp),
            Err(_) => match self.copy_of(&staged) {
                Ok(copy) => copy,
                Err(error) => {
                    remove_quietly(&staged.temp_dir, &staged.temp);
                    return Err(error);
                }
            },
        };
        let dir = sys::dup(&staged.dir).map_err(|e| PathError::io("dup", &staged.target, e))?;
        let temp_dir =
            sys::share(&staged.temp_dir).map_err(|e| PathError::io("dup", &staged.target, e))?;
        let (name, target) = (staged.name.clone(), staged.target.clone());
        if let Err(error) = self.put_in_place(staged, Rename::Replace, &spelling) {
            if let Kept::Name(temp) = &kept {
                remove_quietly(&temp_dir, temp);
            }
            return Err(error);
        }
        self.synced(SetAside {
            dir,
            temp_dir,
            kept,
            name,
            target,
            replaced: true,
        })
    }

    /// The content and permission bits of the regular file a staged file
    /// replaces, refusing one that grew since staging.
    fn copy_of(&self, staged: &Staged) -> Result<Kept, PathError> {
        let location = &staged.target;
        let spelling = location.display().to_string();
        let (file, stat) =
            sys::open_file_at(&staged.dir, &staged.name).map_err(|failed| match failed.why {
                Why::Link => changed(&spelling, location, "a link took its place"),
                _ => io("open", location, failed),
            })?;
        if stat.kind != EntryKind::File {
            return Err(changed(&spelling, location, "it is not a regular file"));
        }
        let mut bytes = Vec::new();
        file.take(staged.replaces_len.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| PathError::io("read", location, e))?;
        if bytes.len() as u64 > staged.replaces_len {
            return Err(changed(&spelling, location, "it grew since it was read"));
        }
        Ok(Kept::Copy {
            bytes,
            mode: stat.mode,
            version: Version::of(&stat),
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
        self.set_aside_as(base, spelling, false)
    }

    /// Moves the entry at the path aside; puts it back and refuses it as
    /// [`PathError::Changed`] unless it is a directory exactly when `dir`.
    fn set_aside_as(&self, base: &Path, spelling: &str, dir: bool) -> Result<SetAside, PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (parent, name) = self.parent(&target)?;
        self.move_aside(target.root, parent, name, target.location, spelling, dir)
    }

    /// [`Beneath::set_aside`] (or, with `dir`, [`Beneath::set_aside_dir`])
    /// for the entry `name` of the directory `parent`, whatever bytes the
    /// name holds (one that is not UTF-8 included). The entry is judged
    /// for [`Access::Write`] at a spelling of its name with each byte that
    /// is not UTF-8 a replacement character (`U+FFFD`), so a pattern that
    /// matches the name whatever those bytes are refuses it; its directory
    /// is judged too, and opened beneath the root refusing every link.
    ///
    /// # Errors
    ///
    /// As [`Beneath::set_aside`]; a `name` that is not one component.
    pub fn set_aside_entry(
        &self,
        base: &Path,
        parent: &str,
        name: &OsStr,
        dir: bool,
    ) -> Result<SetAside, PathError> {
        let parent = if parent.is_empty() { "." } else { parent };
        let shown = Path::new(parent).join(name.to_string_lossy().as_ref());
        let spelling = shown.to_string_lossy();
        let one_name = Path::new(name).components().count() == 1
            && matches!(
                Path::new(name).components().next(),
                Some(std::path::Component::Normal(_))
            );
        let entry = self.target(base, &spelling, Access::Write, Follow::NotLast)?;
        if !one_name {
            return Err(changed(&spelling, &entry.location, "it is not one name"));
        }
        let holder = self.target(base, parent, Access::Write, Follow::Last)?;
        let handle = self.open_dir(&holder, &holder.relative)?;
        let location = holder.location.join(name);
        self.move_aside(
            holder.root,
            handle,
            name.to_owned(),
            location,
            &spelling,
            dir,
        )
    }

    /// Moves `name` of `parent` to the temporary directory; puts it back
    /// and refuses it as [`PathError::Changed`] unless it is a directory
    /// exactly when `dir`.
    fn move_aside(
        &self,
        root: usize,
        parent: Dir,
        name: OsString,
        location: PathBuf,
        spelling: &str,
        dir: bool,
    ) -> Result<SetAside, PathError> {
        let temp_dir = self.temp_dir(root, &parent)?;
        let (temp, ()) = with_temp_name(|temp| {
            sys::rename_at(&parent, &name, &temp_dir, temp, Rename::NoReplace)
        })
        .map_err(|failed| io("rename", &location, failed))?;
        let directory = is_directory(&temp_dir, &temp);
        let aside = SetAside {
            dir: parent,
            temp_dir,
            kept: Kept::Name(temp),
            name,
            target: location,
            replaced: false,
        };
        if directory != dir {
            let location = aside.target.clone();
            self.restore(aside)?;
            let detail = if dir {
                "it is not a directory"
            } else {
                "it is a directory"
            };
            return Err(changed(spelling, &location, detail));
        }
        self.synced(aside)
    }

    /// Move the directory at the path aside, whole, by one rename under a
    /// temporary name in the same directory: gone from its place with
    /// everything beneath it (whatever the names or the depth), restorable
    /// by [`Beneath::restore`] until [`Beneath::release`] removes it.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], [`PathError::Changed`] for an entry
    /// that is not a directory (left in place), or I/O.
    pub fn set_aside_dir(&self, base: &Path, spelling: &str) -> Result<SetAside, PathError> {
        self.set_aside_as(base, spelling, true)
    }

    /// [`Beneath::set_aside`], only while the file there is still the
    /// version `read`: otherwise it is put back and the removal refused as
    /// [`PathError::Conflict`].
    ///
    /// # Errors
    ///
    /// [`PathError::Conflict`], and as [`Beneath::set_aside`].
    pub fn set_aside_unchanged(
        &self,
        base: &Path,
        spelling: &str,
        read: Version,
    ) -> Result<SetAside, PathError> {
        let aside = self.set_aside(base, spelling)?;
        match aside.version() {
            Some(now) if now == read => Ok(aside),
            now => {
                let detail = now.map_or("it cannot be read", |now| read.difference(&now));
                let location = aside.target.clone();
                self.restore(aside)?;
                Err(conflict(spelling, &location, detail))
            }
        }
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
        let how = if aside.replaced {
            Rename::Replace
        } else {
            Rename::NoReplace
        };
        let temp = match aside.kept {
            Kept::Name(temp) => temp,
            Kept::Copy { bytes, mode, .. } => {
                self.write_temp(&aside.temp_dir, mode, &bytes, &aside.target)?
            }
        };
        sys::rename_at(&aside.temp_dir, &temp, &aside.dir, &aside.name, how).map_err(|failed| {
            match failed.why {
                Why::Exists => PathError::AlreadyExists {
                    spelling: aside.target.display().to_string(),
                    location: aside.target.clone(),
                },
                _ => io("rename", &aside.target, failed),
            }
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
        if is_directory(&aside.temp_dir, temp) {
            return remove_tree_at(&aside.temp_dir, temp)
                .map_err(|failed| io("remove", &aside.target, failed));
        }
        sys::remove_file_at(&aside.temp_dir, temp)
            .map_err(|failed| io("remove", &aside.target, failed))
    }

    /// Remove a staged file.
    ///
    /// # Errors
    ///
    /// I/O.
    pub fn discard(&self, staged: Staged) -> Result<(), PathError> {
        sys::remove_file_at(&staged.temp_dir, &staged.temp)
            .map_err(|failed| io("remove", &staged.target, failed))
    }
}
