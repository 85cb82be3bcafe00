//! The other names an entry of the real tree is reachable by: the links
//! the real tree already holds.
//!
//! A change is judged at every location it will be reachable by once
//! committed. A link the real tree holds at a name the policy guards — a
//! directory on the way to a write-protected entry (`.cargo -> cfg`,
//! `.github -> gh`), or a write-protected or blocked entry itself
//! (`.cargo/config.toml -> ../cargo.toml`) — makes an ordinary name a
//! guarded one: writing `cfg/config.toml` writes `.cargo/config.toml`.
//! Such links are found by walking each root **by handle** (each directory
//! opened relative to its parent, never through a link, so depth is no
//! limit), and each is resolved to where it leads now, as far as that
//! exists (a dangling link leads to where the command could make the
//! directory). Links elsewhere make no name guarded and are not kept.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use agentcaps_paths::{Access, PathPolicy};

/// The guarded links of the real tree, by where they lead.
#[derive(Debug, Default)]
pub(crate) struct Aliases {
    /// Absolute location a link leads to → the links' own locations.
    by_target: BTreeMap<PathBuf, Vec<PathBuf>>,
}

/// More links than this are not followed while resolving one (a loop).
#[cfg_attr(not(unix), allow(dead_code))]
const MAX_LINKS: usize = 40;

impl Aliases {
    /// The guarded links of every root in `roots`.
    pub(crate) fn of_roots(policy: &PathPolicy, roots: &[&Path]) -> Self {
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut aliases = Self::default();
        for root in roots {
            #[cfg(unix)]
            walk::links(root, &mut |link: PathBuf| {
                if guarded(policy, &link)
                    && let Some(target) = resolve(&link)
                    && target != link
                {
                    aliases.by_target.entry(target).or_default().push(link);
                }
            });
            #[cfg(not(unix))]
            let _ = (policy, root);
        }
        aliases
    }

    /// These links less those at or beneath a location in `gone` (what the
    /// command's allowed changes remove from the real tree).
    pub(crate) fn without(&self, gone: &[PathBuf]) -> Option<Self> {
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
    pub(crate) fn has_link_at_or_beneath(&self, location: &Path) -> bool {
        self.by_target
            .values()
            .flatten()
            .any(|link| link.starts_with(location))
    }

    /// Every other location `location` will be reachable by through a
    /// guarded link: for each link leading to `location` or a directory
    /// above it, the link's location joined with the rest. `(alias, link)`
    /// pairs.
    pub(crate) fn of(&self, location: &Path) -> Vec<(PathBuf, PathBuf)> {
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

/// Where the link at `link` leads now: its target read from the link's
/// directory, each link met on the way followed, the part that does not
/// exist taken as spelled. `None` for a loop or an unreadable link.
#[cfg_attr(not(unix), allow(dead_code))]
fn resolve(link: &Path) -> Option<PathBuf> {
    let mut links = 0usize;
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    let mut at = link.parent()?.to_path_buf();
    let target = std::fs::read_link(link).ok()?;
    push_components(&target, &mut at, &mut pending);
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
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};

    const DIRECTORY: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    /// Calls `found` with the location of every symbolic link beneath
    /// `root` (directories that cannot be opened are skipped: nothing in
    /// them can be written through the view either).
    pub(super) fn links(root: &Path, found: &mut dyn FnMut(PathBuf)) {
        let Ok(dir) = rustix::fs::open(root, DIRECTORY, Mode::empty()) else {
            return;
        };
        // One descriptor per depth: each directory's subdirectories wait
        // by name until it is their turn.
        let mut frames: Vec<(OwnedFd, PathBuf, Vec<PathBuf>)> = Vec::new();
        let subdirs = list(&dir, root, found);
        frames.push((dir, root.to_path_buf(), subdirs));
        while let Some((dir, location, pending)) = frames.last_mut() {
            let Some(name) = pending.pop() else {
                frames.pop();
                continue;
            };
            let Ok(child) = rustix::fs::openat(&*dir, &name, DIRECTORY, Mode::empty()) else {
                continue;
            };
            let location = location.join(&name);
            let subdirs = list(&child, &location, found);
            frames.push((child, location, subdirs));
        }
    }

    /// Reports the links of one directory; returns its subdirectories.
    fn list(dir: &OwnedFd, location: &Path, found: &mut dyn FnMut(PathBuf)) -> Vec<PathBuf> {
        let mut subdirs = Vec::new();
        let Ok(read) = rustix::fs::Dir::read_from(dir) else {
            return subdirs;
        };
        for entry in read.flatten() {
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = PathBuf::from(OsStr::from_bytes(bytes));
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    match rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                        Err(_) => continue,
                    }
                }
                kind => kind,
            };
            match kind {
                FileType::Symlink => found(location.join(&name)),
                FileType::Directory => subdirs.push(name),
                _ => {}
            }
        }
        subdirs
    }
}
