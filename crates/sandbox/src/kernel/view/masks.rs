//! The mask layer of a root: the overlay layer just above the real tree
//! that makes each blocked entry absent in the view — a whiteout
//! (character device 0:0, which needs no privilege) for a blocked file,
//! an opaque directory for a blocked directory.
//!
//! The real tree is walked **by handle**: each directory is opened
//! relative to its parent's descriptor (never following a link), so depth
//! is no limit (a `.env` whose path is longer than `PATH_MAX` is found),
//! and the mask layer is built the same way. Its directories are made
//! writable by their builder first and given the real directories' modes
//! last, deepest first, so a read-only directory (`0555`) that holds a
//! blocked entry is masked like any other.
//!
//! A directory the runner cannot list (`0300`, another user's `0711`)
//! cannot be judged entry by entry: it is shown **empty** (opaque), which
//! hides whatever a command could open in it by name. Nothing it holds is
//! lost on the host; the view simply does not show what it could not
//! judge.

use std::ffi::OsStr;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, PathPolicy};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// More entries than this in the roots and the view is not built (the
/// masking walk would cost too much), and the run says so.
pub(crate) const MAX_WALKED_ENTRIES: usize = 1_000_000;

/// How a directory is opened: relative to its parent, never through a
/// link.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// The mode the mask layer's directories have while it is built.
const BUILDING: u32 = 0o700;

/// One directory of the real tree on the way down: its handle, the real
/// directory's mode, its subdirectories still to walk, and its twin in
/// the mask layer once one is needed.
struct Frame {
    real: OwnedFd,
    name: PathBuf,
    mode: u32,
    pending: Vec<PathBuf>,
    mask: Option<OwnedFd>,
}

/// The walk of one root and the mask layer it builds.
struct Walk<'a> {
    policy: &'a PathPolicy,
    root: &'a Path,
    layer: OwnedFd,
    frames: Vec<Frame>,
    walked: &'a mut usize,
    masked: bool,
}

/// Builds the mask layer of `root` in the existing, empty directory
/// `masks` (given the root's mode by the caller). `.git` stays visible:
/// git must read it (what a command writes there is judged at
/// write-back). Returns whether anything was masked.
///
/// # Errors
///
/// The root cannot be opened or listed, a directory of the walk cannot
/// be read, the mask layer cannot be written, or the roots hold more than
/// [`MAX_WALKED_ENTRIES`] entries: the view cannot be built as planned.
pub(crate) fn build(
    policy: &PathPolicy,
    root: &Path,
    masks: &Path,
    walked: &mut usize,
) -> io::Result<bool> {
    let real = rustix::fs::open(root, DIRECTORY, Mode::empty())?;
    let layer = rustix::fs::open(masks, DIRECTORY, Mode::empty())?;
    let mut walk = Walk {
        policy,
        root,
        layer,
        frames: Vec::new(),
        walked,
        masked: false,
    };
    let mode = rustix::fs::fstat(&real)?.st_mode;
    walk.enter(real, PathBuf::new(), mode)?;
    walk.run()?;
    Ok(walk.masked)
}

impl Walk<'_> {
    /// Walks until every directory is done.
    fn run(&mut self) -> io::Result<()> {
        while let Some(frame) = self.frames.last_mut() {
            let Some(name) = frame.pending.pop() else {
                self.leave()?;
                continue;
            };
            let opened = rustix::fs::openat(&frame.real, &name, DIRECTORY, Mode::empty());
            match opened {
                Ok(real) => {
                    let mode = rustix::fs::fstat(&real)?.st_mode;
                    self.enter(real, name, mode)?;
                }
                Err(rustix::io::Errno::ACCESS | rustix::io::Errno::PERM) => {
                    // Not listable here: shown empty (see the module docs).
                    let mode = self.mode_of(&name)?;
                    self.mask_directory(&name, mode)?;
                }
                // Gone or replaced since it was listed: what the host does
                // to the tree while the view is built is not judged (see
                // the view's module docs).
                Err(
                    rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP,
                ) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }

    /// Lists the directory `real` (named `name` in the current frame) and
    /// makes it the current frame: its blocked entries masked, its other
    /// subdirectories pending.
    fn enter(&mut self, real: OwnedFd, name: PathBuf, mode: u32) -> io::Result<()> {
        let mut pending = Vec::new();
        let mut blocked = Vec::new();
        let location = self.location().join(&name);
        for entry in rustix::fs::Dir::read_from(&real)? {
            let entry = entry?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            *self.walked += 1;
            if *self.walked > MAX_WALKED_ENTRIES {
                return Err(io::Error::other(format!(
                    "the roots hold more than {MAX_WALKED_ENTRIES} entries to judge"
                )));
            }
            let child = PathBuf::from(OsStr::from_bytes(bytes));
            if bytes == b".git" {
                // Visible to commands; its contents are git's.
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => FileType::from_raw_mode(
                    rustix::fs::statat(&real, &child, AtFlags::SYMLINK_NOFOLLOW)?.st_mode,
                ),
                kind => kind,
            };
            // What the policy does not let a command read (blocked, or
            // refused for any other reason) is not shown.
            let judged = self
                .policy
                .judge_location(&location.join(&child), Access::Read);
            if judged.is_err() {
                blocked.push((child, kind == FileType::Directory));
            } else if kind == FileType::Directory {
                pending.push(child);
            }
        }
        self.frames.push(Frame {
            real,
            name,
            mode,
            pending,
            mask: None,
        });
        for (child, is_dir) in blocked {
            if is_dir {
                let mode = self.mode_of(&child)?;
                self.mask_directory(&child, mode)?;
            } else {
                let parent = self.mask_of_current()?;
                rustix::fs::mknodat(parent, &child, FileType::CharacterDevice, Mode::empty(), 0)?;
                self.masked = true;
            }
        }
        Ok(())
    }

    /// The current directory is done: its twin in the mask layer gets the
    /// real directory's mode (after everything beneath it did).
    fn leave(&mut self) -> io::Result<()> {
        if let Some(frame) = self.frames.pop()
            && let Some(mask) = frame.mask
            && !self.frames.is_empty()
        {
            rustix::fs::fchmod(&mask, Mode::from_raw_mode(frame.mode & 0o7777))?;
        }
        Ok(())
    }

    /// Where the current directory is, as the policy judges it.
    fn location(&self) -> PathBuf {
        let mut location = self.root.to_path_buf();
        for frame in &self.frames {
            location.push(&frame.name);
        }
        location
    }

    /// The mode of the entry `name` of the current directory.
    fn mode_of(&self, name: &Path) -> io::Result<u32> {
        let frame = self.frames.last().ok_or_else(no_frame)?;
        Ok(rustix::fs::statat(&frame.real, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode)
    }

    /// An opaque, empty directory in the mask layer for the entry `name`
    /// of the current directory, with `mode`.
    fn mask_directory(&mut self, name: &Path, mode: u32) -> io::Result<()> {
        let parent = self.mask_of_current()?;
        rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(BUILDING))?;
        let made = rustix::fs::openat(parent, name, DIRECTORY, Mode::empty())?;
        rustix::fs::fsetxattr(
            &made,
            "user.overlay.opaque",
            b"y",
            rustix::fs::XattrFlags::empty(),
        )?;
        rustix::fs::fchmod(&made, Mode::from_raw_mode(mode & 0o7777))?;
        self.masked = true;
        Ok(())
    }

    /// The current directory's twin in the mask layer, made (with those
    /// of the directories above it) when first needed.
    fn mask_of_current(&mut self) -> io::Result<&OwnedFd> {
        let missing = self
            .frames
            .iter()
            .rposition(|f| f.mask.is_some())
            .map_or(0, |i| i + 1);
        for index in missing..self.frames.len() {
            let made = if index == 0 {
                rustix::io::dup(&self.layer)?
            } else {
                let parent = self.frames[index - 1].mask.as_ref().ok_or_else(no_frame)?;
                let name = &self.frames[index].name;
                rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(BUILDING))?;
                rustix::fs::openat(parent, name, DIRECTORY, Mode::empty())?
            };
            self.frames[index].mask = Some(made);
        }
        self.frames
            .last()
            .and_then(|f| f.mask.as_ref())
            .ok_or_else(no_frame)
    }
}

fn no_frame() -> io::Error {
    io::Error::other("the masking walk lost its place")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_directory_is_masked_and_keeps_its_mode() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        let masks = dir.path().join("masks");
        std::fs::create_dir_all(root.join("vendor/pkg")).expect("mkdir");
        std::fs::create_dir(&masks).expect("mkdir");
        std::fs::write(root.join("vendor/pkg/test.pem"), "x").expect("write");
        std::fs::write(root.join("vendor/pkg/lib.py"), "x").expect("write");
        let policy = PathPolicy::builder().allow(&root).build().expect("policy");
        let mut walked = 0;
        assert!(build(&policy, &root, &masks, &mut walked).expect("built"));
        let mode = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::symlink_metadata(p)
                .expect("meta")
                .permissions()
                .mode()
                & 0o7777
        };
        let whiteout = std::fs::symlink_metadata(masks.join("vendor/pkg/test.pem")).expect("mask");
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &whiteout.file_type()
        ));
        assert!(!masks.join("vendor/pkg/lib.py").exists());
        assert_eq!(
            mode(&masks.join("vendor/pkg")),
            mode(&root.join("vendor/pkg"))
        );
        assert_eq!(walked, 4);
    }
}
