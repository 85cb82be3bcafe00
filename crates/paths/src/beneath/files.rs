//! Reading, writing, listing, renaming and removing beneath a root.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::sys::{self, Dir, Rename, Why};
use super::{Beneath, DirEntryInfo, EntryInfo, Target, WriteMode, changed, io, opening};
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
        if blocking {
            sys::set_blocking(&file).map_err(|e| PathError::io("fcntl", &target.location, e))?;
        }
        Ok((file, stat.len))
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
        let how = match mode {
            WriteMode::CreateNew => Rename::NoReplace,
            WriteMode::Overwrite => Rename::Replace,
        };
        let (dir, _, location) = self.put_in_place(staged, how, spelling)?;
        self.sync_dir(&dir, &location)
    }

    /// Create a directory and its missing parents, one component at a
    /// time beneath the root's handle. New names must be portable.
    ///
    /// # Errors
    ///
    /// A refusal for [`Access::Write`], a non-portable new name, or I/O.
    pub fn create_dir_all(&self, base: &Path, spelling: &str) -> Result<(), PathError> {
        let target = self.target(base, spelling, Access::Write, Follow::Last)?;
        let mut dir = self.open_dir(&target, Path::new(""))?;
        for component in target.relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            let next = match sys::open_dir_at(&dir, name) {
                Err(failed) if failed.why == Why::Missing => {
                    match sys::mkdir_at(&dir, name) {
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
        sys::rename_at(&from_dir, &from_name, &to_dir, &to_name, Rename::NoReplace).map_err(
            |failed| match failed.why {
                Why::Exists => PathError::AlreadyExists {
                    spelling: to.to_owned(),
                    location: dest.location.clone(),
                },
                _ => io("rename", &source.location, failed),
            },
        )?;
        self.sync_dir(&to_dir, &dest.location)
    }

    /// A directory being renamed moves everything beneath it: each entry is
    /// judged for writing where it leaves and where it lands (so a
    /// directory holding `config` cannot become `.git`). At most
    /// [`Beneath::MAX_MOVED`] entries; links are not followed.
    fn judge_moved_tree(
        &self,
        from_dir: &Dir,
        from_name: &OsStr,
        source: &Target,
        dest: &Target,
        spelling: &str,
    ) -> Result<(), PathError> {
        let top = match sys::open_dir_at(from_dir, from_name) {
            Ok(dir) => dir,
            // Not a directory (or a link): nothing moves with it.
            Err(failed) if matches!(failed.why, Why::NotDir | Why::Link) => return Ok(()),
            Err(failed) => return Err(io("open", &source.location, failed)),
        };
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
                self.policy
                    .judge_created(spelling, &source.location.join(&inner))?;
                self.policy
                    .judge_created(spelling, &dest.location.join(&inner))?;
                if kind == EntryKind::Dir {
                    match sys::open_dir_at(&dir, &name) {
                        Ok(child) => pending.push((child, inner)),
                        Err(failed) if matches!(failed.why, Why::NotDir | Why::Link) => {}
                        Err(failed) => return Err(io("open", &source.location, failed)),
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
