//! Walking a tree by directory handle: a directory is opened beneath its
//! root's handle one component at a time, and each child is opened from
//! its parent's handle (never following a link), so a walk costs one open
//! and one read per directory however deep it is — no path is resolved
//! again from the root. Each child is judged by the path policy as one
//! plain name inside its (real) parent, which needs no lookup beyond what
//! the directory read already said.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use agentcaps::paths::{Access, Checked, EntryKind, FileSystem, PathPolicy, RealFs};
use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

/// The roots' directory handles, opened once.
pub(crate) struct Roots {
    roots: Vec<(PathBuf, Option<OwnedFd>)>,
}

/// One directory entry.
pub(crate) struct Child {
    pub(crate) name: OsString,
    pub(crate) kind: EntryKind,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Roots {
    pub(crate) fn open(policy: &PathPolicy) -> Self {
        let roots = policy
            .roots()
            .map(|(root, _)| {
                let fd = rustix::fs::open(
                    root,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok();
                (root.to_path_buf(), fd)
            })
            .collect();
        Self { roots }
    }

    /// Opens the judged directory `checked` beneath its root's handle, one
    /// component at a time, refusing every link on the way.
    pub(crate) fn open_dir(&self, checked: &Checked) -> io::Result<OwnedFd> {
        let root_fd = self
            .roots
            .iter()
            .find(|(root, _)| root == checked.root())
            .and_then(|(_, fd)| fd.as_ref())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the root has no handle"))?;
        let relative = checked
            .location()
            .strip_prefix(checked.root())
            .map_err(|_| io::Error::other("the location is not beneath its root"))?;
        let mut dir = rustix::fs::openat(root_fd, ".", DIR_FLAGS, Mode::empty())?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                return Err(io::Error::other("the location is not plain"));
            };
            dir = rustix::fs::openat(&dir, name, DIR_FLAGS, Mode::empty())?;
        }
        Ok(dir)
    }
}

/// The entries of the directory `dir`, sorted by name.
pub(crate) fn read_dir(dir: &OwnedFd) -> io::Result<Vec<Child>> {
    let mut children = Vec::new();
    read_dir_into(dir, &mut children)?;
    children.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(children)
}

/// Appends the entries of the directory `dir` to `children`, in the
/// directory's order.
pub(crate) fn read_dir_into(dir: &OwnedFd, children: &mut Vec<Child>) -> io::Result<()> {
    let mut reader = Dir::read_from(dir)?;
    while let Some(entry) = reader.read() {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| kind_of(FileType::from_raw_mode(st.st_mode)))
                .unwrap_or(EntryKind::Other),
            file_type => kind_of(file_type),
        };
        children.push(Child {
            name: name.to_os_string(),
            kind,
        });
    }
    Ok(())
}

/// Opens the subdirectory `name` of `parent`, never following a link.
pub(crate) fn open_child_dir(parent: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(parent, name, DIR_FLAGS, Mode::empty())?)
}

/// Whether the policy allows `access` to the entry `name` (of kind `kind`)
/// inside the real directory `dir`.
pub(crate) fn allowed(
    policy: &PathPolicy,
    dir: &Path,
    name: &str,
    kind: EntryKind,
    access: Access,
) -> bool {
    allowed_at(policy, dir, name, &dir.join(name), kind, access)
}

/// [`allowed`], for the entry's path `path` (`dir` joined with `name`)
/// already at hand.
pub(crate) fn allowed_at(
    policy: &PathPolicy,
    dir: &Path,
    name: &str,
    path: &Path,
    kind: EntryKind,
    access: Access,
) -> bool {
    let known = Known { path, kind };
    policy.check_on(&known, dir, name, access).is_ok()
}

/// A file-system view that knows one entry (from the directory read) and
/// asks the real file system about anything else.
struct Known<'a> {
    path: &'a Path,
    kind: EntryKind,
}

impl FileSystem for Known<'_> {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        if path == self.path {
            Ok(Some(self.kind))
        } else {
            RealFs.entry(path)
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        RealFs.read_link(path)
    }
}

fn kind_of(file_type: FileType) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File,
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    }
}
