//! The other names an entry is reachable by: the links a tree holds at
//! guarded names.
//!
//! A write is judged at every location it will be reachable by. A link
//! the tree holds at a name the policy guards — a directory on the way to
//! a write-protected entry (`.cargo -> cfg`, `.github -> gh`), or a
//! write-protected or blocked entry itself (`.cargo/config.toml ->
//! ../cargo.toml`) — makes an ordinary name a guarded one: writing
//! `cfg/config.toml` writes `.cargo/config.toml`, which cargo runs from.
//! Such links are found by walking each root **by handle** (each directory
//! opened relative to its parent, never through a link, so depth is no
//! limit), and each is resolved to where it leads now, as far as that
//! exists (a dangling link leads to where a directory could be made).
//! Links elsewhere make no name guarded and are not kept.
//!
//! On Windows no walk is made (an empty map): links there need a privilege
//! agents do not hold, and junctions are not yet looked for.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use crate::{Access, PathError, PathPolicy};

/// The links of a tree at guarded names, by where they lead: what makes
/// an ordinary name a guarded one.
///
/// Made by [`GuardedLinks::of_roots`] (or [`PathPolicy::guarded_links`]);
/// [`GuardedLinks::judge_write`] refuses a write whose location such a
/// link makes blocked or write-protected. [`Beneath`](crate::Beneath)
/// judges every write with one (see [`LinkJudging`](crate::LinkJudging)).
///
/// ```
/// # #[cfg(unix)] {
/// use agentcaps_paths::{GuardedLinks, PathPolicy};
/// let root = std::env::temp_dir().canonicalize()?.join(format!("links-doc-{}", std::process::id()));
/// std::fs::create_dir_all(root.join("cfg"))?;
/// std::os::unix::fs::symlink("cfg", root.join(".cargo"))?;
/// let policy = PathPolicy::builder().allow(&root).build()?;
/// let links = GuardedLinks::of_roots(&policy, &[&root]);
/// let refused = links.judge_write(&policy, "cfg/config.toml", &root.join("cfg/config.toml")).unwrap_err();
/// assert_eq!(refused.rule(), "write-protected");
/// assert!(links.judge_write(&policy, "cfg/notes.txt", &root.join("cfg/notes.txt")).is_ok());
/// # std::fs::remove_dir_all(&root)?;
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GuardedLinks {
    /// Absolute location a link leads to → the links' own locations.
    by_target: BTreeMap<PathBuf, Vec<PathBuf>>,
}

/// More links than this are not followed while resolving one (a loop).
#[cfg_attr(not(unix), allow(dead_code))]
const MAX_LINKS: usize = 40;

impl GuardedLinks {
    /// The guarded links beneath every directory in `roots` (absolute,
    /// real locations), judged by `policy`. Directories that cannot be
    /// opened are skipped: nothing in them can be written by these handles
    /// either.
    pub fn of_roots(policy: &PathPolicy, roots: &[&Path]) -> Self {
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut links = Self::default();
        for root in roots {
            #[cfg(unix)]
            walk::links(root, &mut |link: PathBuf, stored: PathBuf| {
                if guarded(policy, &link)
                    && let Some(target) = resolve(&link, &stored)
                    && target != link
                {
                    links.by_target.entry(target).or_default().push(link);
                }
            });
            #[cfg(not(unix))]
            let _ = (policy, root);
        }
        links
    }

    /// Whether no guarded link was found.
    pub fn is_empty(&self) -> bool {
        self.by_target.is_empty()
    }

    /// These links less those at or beneath a location in `gone` (what a
    /// caller's allowed changes remove from the tree); `None` when none of
    /// them goes.
    pub fn without(&self, gone: &[PathBuf]) -> Option<Self> {
        let mut kept = BTreeMap::new();
        let mut dropped = false;
        for (target, links) in &self.by_target {
            let links: Vec<PathBuf> = links
                .iter()
                .filter(|link| {
                    let goes = gone.iter().any(|g| link.starts_with(g));
                    dropped |= goes;
                    !goes
                })
                .cloned()
                .collect();
            if !links.is_empty() {
                kept.insert(target.clone(), links);
            }
        }
        dropped.then_some(Self { by_target: kept })
    }

    /// Whether a guarded link is at `location` or beneath it.
    pub fn has_link_at_or_beneath(&self, location: &Path) -> bool {
        self.by_target
            .values()
            .flatten()
            .any(|link| link.starts_with(location))
    }

    /// Every other location `location` is reachable by through a guarded
    /// link: for each link leading to `location` or a directory above it,
    /// the link's location joined with the rest. `(alias, link)` pairs.
    pub fn aliases_of(&self, location: &Path) -> Vec<(PathBuf, PathBuf)> {
        if self.by_target.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for above in location.ancestors() {
            if let Some(links) = self.by_target.get(above) {
                let rest = location.strip_prefix(above).unwrap_or(Path::new(""));
                for link in links {
                    let alias = if rest.as_os_str().is_empty() {
                        link.clone()
                    } else {
                        link.join(rest)
                    };
                    out.push((alias, link.clone()));
                }
            }
        }
        out
    }

    /// Judge a write at the absolute `location` (spelled `spelling` by the
    /// caller) at every other name these links give it.
    ///
    /// # Errors
    ///
    /// [`PathError::ThroughLink`] when a link makes `location` a blocked
    /// or write-protected entry (its [`PathError::rule`] is that entry's
    /// rule; a blocked one is named first).
    pub fn judge_write(
        &self,
        policy: &PathPolicy,
        spelling: &str,
        location: &Path,
    ) -> Result<(), PathError> {
        // A blocked other name is reported before a write-protected one
        // (a caller that lets write-protected entries through still
        // refuses it).
        let mut found: Option<PathError> = None;
        for (alias, link) in self.aliases_of(location) {
            let (entry, blocked) = match policy.judge_location(&alias, Access::Write) {
                Err(PathError::Blocked { entry, .. }) => (entry, true),
                Err(PathError::WriteProtected { entry, .. }) => (entry, false),
                _ => continue,
            };
            if found.is_none() || blocked {
                found = Some(PathError::ThroughLink {
                    spelling: spelling.to_owned(),
                    location: location.to_path_buf(),
                    link: link.into_boxed_path(),
                    alias: alias.into_boxed_path(),
                    entry,
                    blocked,
                });
            }
            if blocked {
                break;
            }
        }
        found.map_or(Ok(()), Err)
    }
}

impl PathPolicy {
    /// The guarded links beneath every root of this policy (see
    /// [`GuardedLinks`]): one walk of each root's tree.
    pub fn guarded_links(&self) -> GuardedLinks {
        let roots: Vec<&Path> = self.roots().map(|(root, _)| root).collect();
        GuardedLinks::of_roots(self, &roots)
    }
}

/// Whether a link at `location` makes what it leads to reachable by a
/// guarded name.
#[cfg_attr(not(unix), allow(dead_code))]
fn guarded(policy: &PathPolicy, location: &Path) -> bool {
    if policy.judge_link_location(location).is_err() {
        return true;
    }
    matches!(
        policy.judge_location(location, Access::Write),
        Err(error) if matches!(error.rule(), "write-protected" | "blocked")
    )
}

/// Where the link at `link`, whose target is `target` as stored, leads
/// now: from the link's directory, each link met on the way followed, the
/// part that does not exist (or cannot be looked up) taken as spelled.
/// `None` for a loop.
#[cfg_attr(not(unix), allow(dead_code))]
fn resolve(link: &Path, target: &Path) -> Option<PathBuf> {
    let mut links = 0usize;
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let mut at = link.parent()?.to_path_buf();
    push_components(target, &mut at, &mut pending);
    while let Some(name) = pending.pop() {
        if name == ".." {
            at.pop();
            continue;
        }
        let next = at.join(&name);
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return None;
                }
                let target = std::fs::read_link(&next).ok()?;
                push_components(&target, &mut at, &mut pending);
            }
            _ => at = next,
        }
    }
    Some(at)
}

/// Queues `target`'s components (last first, so they pop in order); an
/// absolute target starts again at `/`.
#[cfg_attr(not(unix), allow(dead_code))]
fn push_components(target: &Path, at: &mut PathBuf, pending: &mut Vec<std::ffi::OsString>) {
    let mut names = Vec::new();
    for component in target.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => {
                *at = PathBuf::from("/");
                names.clear();
            }
            Component::CurDir => {}
            Component::ParentDir => names.push("..".into()),
            Component::Normal(name) => names.push(name.to_owned()),
        }
    }
    pending.extend(names.into_iter().rev());
}
#[cfg(unix)]
mod walk {
    //! Walking a root by handle for its links.

    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

    const DIRECTORY: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// Calls `found` with the location of every symbolic link beneath
    /// `root` and its target as stored, read by its directory's handle
    /// (directories that cannot be opened are skipped: nothing in them can
    /// be written by handles either).
    pub(super) fn links(root: &Path, found: &mut dyn FnMut(PathBuf, PathBuf)) {
        let Some(mut dir) = rustix::fs::open(root, DIRECTORY, Mode::empty())
            .ok()
            .and_then(|fd| Dir::new(fd).ok())
        else {
            return;
        };
        // One descriptor per depth: each directory's subdirectories wait
        // by name until it is their turn.
        let subdirs = list(&mut dir, root, found);
        let mut frames: Vec<(Dir, PathBuf, Vec<PathBuf>)> =
            vec![(dir, root.to_path_buf(), subdirs)];
        while let Some((dir, location, pending)) = frames.last_mut() {
            let Some(name) = pending.pop() else {
                frames.pop();
                continue;
            };
            let Some(mut child) = dir
                .fd()
                .and_then(|fd| rustix::fs::openat(fd, &name, DIRECTORY, Mode::empty()))
                .ok()
                .and_then(|fd| Dir::new(fd).ok())
            else {
                continue;
            };
            let location = location.join(&name);
            let subdirs = list(&mut child, &location, found);
            frames.push((child, location, subdirs));
        }
    }

    /// Reports the links of one directory (read by the handle it owns,
    /// which then opens its subdirectories); returns its subdirectories.
    fn list(
        dir: &mut Dir,
        location: &Path,
        found: &mut dyn FnMut(PathBuf, PathBuf),
    ) -> Vec<PathBuf> {
        let mut subdirs = Vec::new();
        let mut links = Vec::new();
        while let Some(Ok(entry)) = dir.read() {
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = PathBuf::from(OsStr::from_bytes(bytes));
            match entry.file_type() {
                FileType::Symlink => links.push(name),
                FileType::Directory => subdirs.push(name),
                FileType::Unknown => links.push(name), // told apart below
                _ => {}
            }
        }
        let Ok(fd) = dir.fd() else {
            return subdirs;
        };
        for name in links {
            match rustix::fs::readlinkat(fd, &name, Vec::new()) {
                Ok(target) => {
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    found(location.join(&name), target);
                }
                // Not a link (a file system that does not say what its
                // entries are): a directory to walk, or nothing.
                Err(_) => {
                    if rustix::fs::statat(fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
                    {
                        subdirs.push(name);
                    }
                }
            }
        }
        subdirs
    }
}
