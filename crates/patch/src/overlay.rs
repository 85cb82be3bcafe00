//! The tree as a patch would leave it, for the path policy to judge.
//!
//! A patch never creates links (mode `120000` is refused at parse time), so
//! the overlay differs from the tree below it only by files created,
//! removed and moved, and by directories created for new files. A moved
//! entry shows whatever its source was — a link stays a link at its new
//! name — so a patch that renames a link and writes beyond it is judged
//! through the link (CVE-2023-23946).

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use agentcaps_paths::{EntryKind, FileSystem};

/// What a changed name holds after the patch.
#[derive(Debug, Clone)]
pub(crate) enum After {
    /// Removed (deleted, or the source of a move).
    Gone,
    /// A regular file the patch writes.
    File,
    /// Whatever was at this other (absolute) path before the patch.
    MovedFrom(PathBuf),
}

/// A [`FileSystem`] view: `inner` with the patch's changes on top.
pub(crate) struct Overlay<'a> {
    inner: &'a dyn FileSystem,
    changes: HashMap<PathBuf, After>,
    dirs: HashSet<PathBuf>,
}

impl<'a> Overlay<'a> {
    pub(crate) fn new(inner: &'a dyn FileSystem) -> Self {
        Overlay {
            inner,
            changes: HashMap::new(),
            dirs: HashSet::new(),
        }
    }

    /// Records a change at `path` (absolute). Ancestors of written names up
    /// to `base` appear as directories where nothing is.
    pub(crate) fn set(&mut self, base: &Path, path: PathBuf, after: After) {
        if !matches!(after, After::Gone) {
            let mut dir = path.parent();
            while let Some(d) = dir {
                if d == base || !d.starts_with(base) || !self.dirs.insert(d.to_path_buf()) {
                    break;
                }
                dir = d.parent();
            }
        }
        self.changes.insert(path, after);
    }
}

impl FileSystem for Overlay<'_> {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match self.changes.get(path) {
            Some(After::Gone) => Ok(None),
            Some(After::File) => Ok(Some(EntryKind::File)),
            Some(After::MovedFrom(src)) => self.inner.entry(src),
            None => match self.inner.entry(path)? {
                None if self.dirs.contains(path) => Ok(Some(EntryKind::Dir)),
                other => Ok(other),
            },
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        match self.changes.get(path) {
            Some(After::MovedFrom(src)) => self.inner.read_link(src),
            Some(After::Gone | After::File) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a symbolic link after the patch",
            )),
            None => self.inner.read_link(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use agentcaps_paths::{Access, PathPolicy, SimFs};

    use super::*;

    fn sim() -> SimFs {
        let mut fs = SimFs::new();
        fs.add_dir("/root")
            .add_dir("/outside")
            .add_file("/outside/secret.txt");
        fs.add_file("/root/file.txt")
            .add_symlink("/root/link", "/outside");
        fs
    }

    #[test]
    fn shows_created_removed_and_moved_entries() {
        let fs = sim();
        let base = Path::new("/root");
        let mut overlay = Overlay::new(&fs);
        overlay.set(base, base.join("new/deep/x.txt"), After::File);
        overlay.set(base, base.join("file.txt"), After::Gone);
        overlay.set(
            base,
            base.join("moved"),
            After::MovedFrom(base.join("link")),
        );
        overlay.set(base, base.join("link"), After::Gone);
        let entry = |p: &str| overlay.entry(Path::new(p)).ok().flatten();
        assert_eq!(entry("/root/new"), Some(EntryKind::Dir));
        assert_eq!(entry("/root/new/deep"), Some(EntryKind::Dir));
        assert_eq!(entry("/root/new/deep/x.txt"), Some(EntryKind::File));
        assert_eq!(entry("/root/file.txt"), None);
        assert_eq!(entry("/root/link"), None);
        // A moved link is still a link, with the same target.
        assert_eq!(entry("/root/moved"), Some(EntryKind::Symlink));
        assert_eq!(
            overlay.read_link(Path::new("/root/moved")).ok(),
            Some("/outside".into())
        );
        assert!(overlay.read_link(Path::new("/root/link")).is_err());
        // Untouched entries are the inner view's.
        assert_eq!(entry("/outside/secret.txt"), Some(EntryKind::File));
        assert_eq!(entry("/root/absent"), None);
    }

    #[test]
    fn the_policy_judges_through_a_link_the_patch_moves_into_place() {
        // The policy's root must exist on the host; the view is simulated.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("canonicalize: {e}"));
        let base = root.as_path();
        let mut fs = SimFs::new();
        for a in root.ancestors().collect::<Vec<_>>().into_iter().rev() {
            fs.add_dir(a);
        }
        fs.add_dir("/outside")
            .add_symlink(base.join("link"), "/outside");
        let policy = PathPolicy::builder()
            .allow(base)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        let mut overlay = Overlay::new(&fs);
        overlay.set(
            base,
            base.join("moved"),
            After::MovedFrom(base.join("link")),
        );
        overlay.set(base, base.join("link"), After::Gone);
        // On the tree as it is, `moved/x` is a new name under the root.
        assert!(policy.check_on(&fs, base, "moved/x", Access::Write).is_ok());
        // On the tree as the patch leaves it, it is /outside/x.
        let refused = policy.check_on(&overlay, base, "moved/x", Access::Write);
        assert_eq!(refused.err().map(|e| e.rule()), Some("outside-roots"));
    }
}
