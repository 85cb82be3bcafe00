//! Reading, writing, listing, renaming and removing beneath a root.

use crate::Staged;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::sys::{self, Dir, Rename, Why};
use super::transaction::Over;
use super::version::{self, Version, Writers};
use super::{Beneath, DirEntryInfo, EntryInfo, Target, WriteMode, changed, io, opening};

/// What a rename moves: from where, to where, as the agent spelled it.
struct Moving<'a> {
    source: &'a Target,
    dest: &'a Target,
    spelling: &'a str,
}
use crate::location::Location;
use crate::resolve::Follow;
use crate::{Access, EntryKind, PathError};

impl Beneath {
    /// Open a file for reading.
    ///
    /// # Errors
    ///
    /// A refusal of [`PathPolicy::check`](crate::PathPolicy::check) for
    /// [`Access::Read`], [`PathError::Changed`] when a link appeared on the
    /// way or the target is not a regular file, or I/O.
    pub fn open_read(&self, base: &Path, spelling: &str) -> Result<std::fs::File, PathError> {
        let (file, _) = self.open_regular(base, spelling, true)?;
        Ok(file)
    }

    /// [`Beneath::open_read`], with the version the file had when opened
    /// (for a later [`WriteMode::Unchanged`]).
    ///
    /// # Errors
    ///
    /// As [`Beneath::open_read`].
    pub fn open_read_versioned(
        &self,
        base: &Path,
        spelling: &str,
    ) -> Result<(std::fs::File, Version), PathError> {
        let (file, stat) = self.open_regular_stat(base, spelling)?;
        sys::set_blocking(&file).map_err(|e| PathError::io("fcntl", spelling, e))?;
        Ok((file, Version::of(&stat)))
    }

    /// Opens a regular file for reading, and says how long it is.
    ///
    /// The open is non-blocking, so that a FIFO put in the file's place
    /// cannot hang it; with `blocking` the flag is cleared, for handles
    /// given out to callers.
    fn open_regular(
        &self,
        base: &Path,
        spelling: &str,
        blocking: bool,
    ) -> Result<(std::fs::File, u64), PathError> {
        let (file, stat) = self.open_regular_stat(base, spelling)?;
        if blocking {
            sys::set_blocking(&file).map_err(|e| PathError::io("fcntl", spelling, e))?;
        }
        Ok((file, stat.len))
    }

    /// Opens a regular file for reading (non-blocking), with what `fstat`
    /// says of it.
    fn open_regular_stat(
        &self,
        base: &Path,
        spelling: &str,
    ) -> Result<(std::fs::File, sys::Stat), PathError> {
        let target = self.target(base, spelling, Access::Read, Follow::Last)?;
        let root = self.root_dir(&target)?;
        let (file, stat) = sys::open_file_beneath(root, &target.relative, self.missing.openat2)
            .map_err(|failed| opening(&target, failed))?;
        if stat.kind != EntryKind::File {
            return Err(changed(
                spelling,
                &target.location,
                "it is not a regular file",
            ));
        }
        Ok((file, stat))
    }

    /// Read a whole file of at most `max_bytes` bytes.
    ///
    /// # Errors
    ///
    /// As [`Beneath::open_read`], and [`PathError::TooLarge`].
    pub fn read(&self, base: &Path, spelling: &str, max_bytes: u64) -> Result<Vec<u8>, PathError> {
        let (file, len) = self.open_regular(base, spelling, false)?;
        read_bounded(file, len, spelling, max_bytes)
    }
}

/// The whole of `file` (`len` bytes by `fstat`), at most `max_bytes`.
fn read_bounded(
    file: std::fs::File,
    len: u64,
    spelling: &str,
    max_bytes: u64,
) -> Result<Vec<u8>, PathError> {
    {
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
}

impl Beneath {
    /// What is at the path, without following a final link (the link itself
    /// is judged and reported).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Read`], or I/O.
    pub fn metadata(&self, base: &Path, spelling: &str) -> Result<EntryInfo, PathError> {
        let target = self.target(base, spelling, Access::Read, Follow::NotLast)?;
        let stat = if target.relative.as_os_str().is_empty() {
            sys::stat_dir(self.root_dir(&target)?)
        } else {
            let (dir, name) = self.parent(&target)?;
            sys::stat_at(&dir, &name)
        }
        .map_err(|failed| io("lstat", &target.location, failed))?;
        Ok(EntryInfo {
            kind: stat.kind,
            len: stat.len,
            modified: stat.modified,
            readonly: stat.mode & 0o200 == 0,
        })
    }

    /// List a directory; links are reported as links, never followed.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::List`], or I/O.
    pub fn list(&self, base: &Path, spelling: &str) -> Result<Vec<DirEntryInfo>, PathError> {
        let target = self.target(base, spelling, Access::List, Follow::Last)?;
        let dir = self.open_dir(&target, &target.relative)?;
        let mut entries: Vec<DirEntryInfo> = sys::read_dir(&dir)
            .map_err(|failed| io("readdir", &target.location, failed))?
            .into_iter()
            .map(|(name, kind)| DirEntryInfo { name, kind })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Write `bytes` to a file: a temporary file beside it (created with
    /// `O_EXCL | O_NOFOLLOW`) renamed into place. A new name must be
    /// portable (see [`check_portable_name`](crate::check_portable_name)).
    /// Once renamed, the file's directory is opened again by its path: when
    /// it is no longer the directory the file was written in (it was
    /// renamed meanwhile, say to `.cargo`), the write is undone and refused
    /// ([`PathError::Changed`]).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], a non-portable new name,
    /// [`PathError::AlreadyExists`] with [`WriteMode::CreateNew`],
    /// [`PathError::Conflict`] with [`WriteMode::Unchanged`],
    /// [`PathError::Changed`], or I/O. On failure the target is untouched
    /// and no temporary file is left.
    pub fn write(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<(), PathError> {
        self.write_versioned(base, spelling, bytes, mode)
            .map(|_| ())
    }

    /// [`Beneath::write`], giving the version the written file has (for a
    /// later [`WriteMode::Unchanged`]).
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`].
    pub fn write_versioned(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<Version, PathError> {
        let staged = self.stage_for_write(base, spelling, bytes)?;
        self.place_written(staged, mode, spelling)
    }

    /// [`Beneath::write_versioned`], abandoned when `stopped()` is true just
    /// before the final rename: the temporary file is removed, the target
    /// is left as it was, and the answer is `Ok(None)`; otherwise the
    /// version written.
    ///
    /// # Errors
    ///
    /// As [`Beneath::write`].
    pub fn write_unless(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
        mode: WriteMode,
        stopped: impl Fn() -> bool,
    ) -> Result<Option<Version>, PathError> {
        let staged = self.stage_for_write(base, spelling, bytes)?;
        if stopped() {
            self.discard(staged)?;
            return Ok(None);
        }
        self.place_written(staged, mode, spelling).map(Some)
    }

    /// `bytes` staged beside the file `spelling` names (judged for writing).
    fn stage_for_write(
        &self,
        base: &Path,
        spelling: &str,
        bytes: &[u8],
    ) -> Result<Staged, PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let (dir, name) = self.parent(&target)?;
        self.stage_in(&target, dir, name, bytes)
    }

    /// Puts a staged write in place as `mode` says; the version written.
    fn place_written(
        &self,
        staged: Staged,
        mode: WriteMode,
        spelling: &str,
    ) -> Result<Version, PathError> {
        let written = staged.version();
        let over = match mode {
            WriteMode::CreateNew => Over::Nothing,
            WriteMode::Overwrite => Over::Any,
            WriteMode::Unchanged(read) => Over::Unchanged(read),
        };
        let placed = self.place(staged, over, spelling)?;
        self.settle(placed)?;
        Ok(written)
    }

    /// Read a whole file of at most `max_bytes` bytes, with the version it
    /// had when opened (for [`WriteMode::Unchanged`]: a write made from
    /// this content then refuses to replace a file changed meanwhile).
    ///
    /// # Errors
    ///
    /// As [`Beneath::read`].
    pub fn read_versioned(
        &self,
        base: &Path,
        spelling: &str,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, Version), PathError> {
        let (file, stat) = self.open_regular_stat(base, spelling)?;
        let bytes = read_bounded(file, stat.len, spelling, max_bytes)?;
        Ok((bytes, Version::of(&stat)))
    }

    /// The version of the regular file at the path (`None` when nothing or
    /// something else is there).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Read`], or I/O.
    pub fn version(&self, base: &Path, spelling: &str) -> Result<Option<Version>, PathError> {
        let target = self.target(base, spelling, Access::Read, Follow::NotLast)?;
        if target.relative.as_os_str().is_empty() {
            return Ok(None);
        }
        let (dir, name) = self.parent(&target)?;
        match sys::stat_at(&dir, &name) {
            Ok(stat) if stat.kind == EntryKind::File => Ok(Some(Version::of(&stat))),
            Ok(_) => Ok(None),
            Err(failed) if failed.why == Why::Missing => Ok(None),
            Err(failed) => Err(io("lstat", &target.location, failed)),
        }
    }

    /// Hold the writers of the files at `spellings` (judged for writing
    /// first): until the returned guard is dropped, every other caller in
    /// this process that holds any of them waits. Hold it across a read
    /// and the write made from it, so that two writers of one file in one
    /// process never interleave (and neither is refused as a conflict).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`] of any of them.
    pub fn hold_writers(&self, base: &Path, spellings: &[&str]) -> Result<Writers, PathError> {
        let mut locations = Vec::with_capacity(spellings.len());
        for spelling in spellings {
            locations.push(
                self.target(base, spelling, Access::Write, Follow::Last)?
                    .location,
            );
        }
        Ok(version::hold(locations.iter().map(PathBuf::as_path)))
    }

    /// Create a directory and its missing parents, one component at a
    /// time beneath the root's handle. New names must be portable.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], a non-portable new name, or I/O.
    pub fn create_dir_all(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        self.create_dirs(base, spelling, None)
    }

    /// [`Beneath::create_dir_all`], the directory itself (when new) made
    /// with the permission bits `mode | 0o700` (so that its owner can fill
    /// it; the rest as given, never wider), its missing parents `0o755`.
    ///
    /// # Errors
    ///
    /// As [`Beneath::create_dir_all`].
    pub fn create_dir_all_with_mode(
        &self,
        base: &Path,
        spelling: &str,
        mode: u32,
    ) -> Result<(), PathError> {
        self.create_dirs(base, spelling, Some(mode))
    }

    fn create_dirs(&self, base: &Path, spelling: &str, mode: Option<u32>) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let mut dir = self.open_dir(&target, Path::new(""))?;
        let last = target.relative.components().count();
        for (n, component) in target.relative.components().enumerate() {
            let Component::Normal(name) = component else {
                continue;
            };
            let next = match sys::open_dir_at(&dir, name) {
                Err(failed) if failed.why == Why::Missing => {
                    let made = match mode {
                        Some(mode) if n + 1 == last => sys::mkdir_mode_at(&dir, name, mode | 0o700),
                        _ => sys::mkdir_at(&dir, name),
                    };
                    match made {
                        Ok(()) => {}
                        Err(failed) if failed.why == Why::Exists => {}
                        Err(failed) => return Err(io("mkdir", &target.location, failed)),
                    }
                    self.sync_dir(&dir, &target.location)?;
                    sys::open_dir_at(&dir, name)
                }
                other => other,
            };
            dir = next.map_err(|failed| match failed.why {
                Why::Link | Why::NotDir => {
                    changed(spelling, &target.location, "a link or a file is in the way")
                }
                _ => io("open", &target.location, failed),
            })?;
        }
        Ok(())
    }

    /// Rename `from` to `to`, refusing to replace an existing target. A link
    /// is renamed itself, never its target. The new name must be portable.
    /// A directory's contents are judged where they leave and where they
    /// land, so a directory holding `config` cannot be renamed to `.git`;
    /// a link (moved itself or inside a moved directory) whose relative
    /// target would lead elsewhere from its new place must still lead
    /// inside the roots.
    ///
    /// What moved is judged again once it has moved, at its new place by
    /// handle: an entry written into the directory meanwhile, or a
    /// directory swapped in before the rename, is judged as what actually
    /// moved, and the rename is undone when it is refused or when the new
    /// place is no longer where it was judged to be.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`] on either side or on anything moved
    /// with a directory, [`PathError::LinkOutsideRoots`],
    /// [`PathError::TooCostly`] for a directory of more than
    /// [`Beneath::MAX_MOVED`] entries, [`PathError::AlreadyExists`],
    /// [`PathError::Changed`], or I/O.
    pub fn rename(&self, base: &Path, from: &str, to: &str) -> Result<(), PathError> {
        let source = self.target(base, from, Access::Write, Follow::NotLast)?;
        let dest = self.target(base, to, Access::Write, Follow::NotLast)?;
        if let Some(name) = dest.relative.file_name() {
            crate::spelling::check_portable_os(name)?;
        }
        let (from_dir, from_name) = self.parent(&source)?;
        let (to_dir, to_name) = self.parent(&dest)?;
        let moving = Moving {
            source: &source,
            dest: &dest,
            spelling: from,
        };
        self.judge_moved(&from_dir, &from_name, &moving)?;
        // Whatever the rename moved, the links found so far may have moved.
        self.refresh_guarded_links();
        sys::rename_at(&from_dir, &from_name, &to_dir, &to_name, Rename::NoReplace).map_err(
            |failed| match failed.why {
                Why::Exists => PathError::AlreadyExists {
                    spelling: to.to_owned(),
                    location: dest.location.clone(),
                },
                _ => io("rename", &source.location, failed),
            },
        )?;
        let parent = dest.relative.parent().unwrap_or(Path::new(""));
        let landed = if self.still_judged(dest.root, parent, &to_dir) {
            self.judge_moved(&to_dir, &to_name, &moving)
        } else {
            Err(changed(
                to,
                &dest.location,
                "its directory was moved or replaced meanwhile, so nothing was moved",
            ))
        };
        if let Err(refused) = landed {
            sys::rename_at(&to_dir, &to_name, &from_dir, &from_name, Rename::NoReplace)
                .map_err(|failed| io("rename back", &dest.location, failed))?;
            return Err(refused);
        }
        self.sync_dir(&to_dir, &dest.location)
    }

    /// Judges what a rename moves, found as `name` in `dir` (its old place
    /// before the rename, its new one after): a link's target where it will
    /// lead; a directory's every entry for writing where it leaves and
    /// where it lands (so a directory holding `config` cannot become
    /// `.git`), and the links among them. At most [`Beneath::MAX_MOVED`]
    /// entries; links are not followed.
    fn judge_moved(&self, dir: &Dir, name: &OsStr, moving: &Moving<'_>) -> Result<(), PathError> {
        let (source, dest, spelling) = (moving.source, moving.dest, moving.spelling);
        let top = match sys::open_dir_at(dir, name) {
            Ok(top) => top,
            Err(failed) if matches!(failed.why, Why::NotDir | Why::Link) => {
                let is_link = sys::stat_at(dir, name).is_ok_and(|st| st.kind == EntryKind::Symlink);
                return if is_link {
                    self.judge_moved_link(dir, name, &source.location, &dest.location, spelling)
                } else {
                    Ok(())
                };
            }
            Err(failed) => return Err(io("open", &source.location, failed)),
        };
        let links = self.guarded_links();
        let mut pending = vec![(top, PathBuf::new())];
        let mut seen = 0usize;
        while let Some((dir, relative)) = pending.pop() {
            let entries =
                sys::read_dir(&dir).map_err(|failed| io("readdir", &source.location, failed))?;
            for (name, kind) in entries {
                seen += 1;
                if seen > Self::MAX_MOVED {
                    return Err(PathError::TooCostly {
                        spelling: spelling.to_owned(),
                        budget: Self::MAX_MOVED as u64,
                    });
                }
                let inner = relative.join(&name);
                let (left, landed) = (source.location.join(&inner), dest.location.join(&inner));
                self.policy.judge_created(spelling, &left)?;
                self.policy.judge_created(spelling, &landed)?;
                if let Some(links) = &links {
                    links.judge_write(&self.policy, spelling, &landed)?;
                }
                match kind {
                    EntryKind::Dir => match sys::open_dir_at(&dir, &name) {
                        Ok(child) => pending.push((child, inner)),
                        Err(failed) if matches!(failed.why, Why::NotDir | Why::Link) => {}
                        Err(failed) => return Err(io("open", &source.location, failed)),
                    },
                    EntryKind::Symlink => {
                        self.judge_moved_link(&dir, &name, &left, &landed, spelling)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// A link moved from `left` to `landed`: when its target, read from
    /// its new place, leads elsewhere than from its old one (a relative
    /// target), it must lead inside the roots in every reading. A target
    /// that leads to the same place wherever the link is (an absolute one)
    /// gains nothing by the move and is not judged here.
    fn judge_moved_link(
        &self,
        dir: &Dir,
        name: &OsStr,
        left: &Path,
        landed: &Path,
        spelling: &str,
    ) -> Result<(), PathError> {
        // A link put at a name on the way to a write-protected entry
        // (`.cargo`, `.github`) makes ordinary names protected ones.
        if let Err(PathError::WriteProtected { entry, .. }) =
            self.policy.judge_link_location(landed)
        {
            return Err(PathError::LinkAtGuardedName {
                spelling: spelling.to_owned(),
                link: landed.to_path_buf(),
                entry,
            });
        }
        let target = sys::read_link_at(dir, name).map_err(|failed| io("readlink", left, failed))?;
        let from_parent = left.parent().unwrap_or(left);
        let to_parent = landed.parent().unwrap_or(landed);
        let before = Location::from_absolute(&from_parent.join(&target));
        let after = Location::from_absolute(&to_parent.join(&target));
        if before.is_some() && before == after {
            return Ok(());
        }
        let Some(spelled) = target.to_str() else {
            return Err(PathError::LinkOutsideRoots {
                spelling: spelling.to_owned(),
                link: landed.to_path_buf(),
                target: to_parent.join(&target),
            });
        };
        match self.policy.judge(
            self.view.as_ref(),
            to_parent,
            spelled,
            Access::Read,
            None,
            Follow::Last,
        ) {
            Err(PathError::OutsideRoots { location, .. }) => Err(PathError::LinkOutsideRoots {
                spelling: spelling.to_owned(),
                link: landed.to_path_buf(),
                target: location,
            }),
            _ => Ok(()),
        }
    }

    /// Remove a file (or a link, never its target).
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], or I/O.
    pub fn remove_file(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (dir, name) = self.parent(&target)?;
        sys::remove_file_at(&dir, &name)
            .map_err(|failed| io("remove", &target.location, failed))?;
        self.sync_dir(&dir, &target.location)
    }

    /// Remove an empty directory.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], or I/O.
    pub fn remove_dir(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let (dir, name) = self.parent(&target)?;
        sys::remove_dir_at(&dir, &name).map_err(|failed| io("remove", &target.location, failed))?;
        self.sync_dir(&dir, &target.location)
    }

    /// Give the directory at the path the permission bits `mode & 0o777`
    /// (set-id and sticky bits are never set). The directory is opened
    /// beneath the root's handle refusing every link, and changed through
    /// that handle. On Windows, nothing is done.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], [`PathError::Changed`] when a link
    /// or a file is there, or I/O.
    pub fn set_dir_mode(&self, base: &Path, spelling: &str, mode: u32) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::NotLast)?;
        let dir = self.open_dir(&target, &target.relative)?;
        sys::chmod_dir(&dir, mode).map_err(|failed| io("chmod", &target.location, failed))
    }
}
