//! Which entries a search passes over before the policy is asked: the
//! caller's glob, hidden names, and the tree's ignore files.
//!
//! - The `glob` argument decides first: an entry it matches is searched (a
//!   hidden one too), a file it does not match is passed over;
//!   directories are always entered. `!` before a glob excludes instead.
//! - Otherwise a name starting with `.` is passed over, except a hidden
//!   directory the glob can match something beneath: a glob with a `/` is
//!   anchored at the searched directory, and each hidden directory on its
//!   way is entered (`.github/**`, `.github/workflows/*.yml`). A glob
//!   without a `/` matches names at any depth and opens no hidden
//!   directory (`*.yml` does not search `.github`), as ripgrep does.
//! - Otherwise the ignore files decide, read in the searched directory, in
//!   each directory below it, and in the directories above it up to its
//!   allowed root (never outside the roots): `.ignore` files always,
//!   `.gitignore` files when the tree is in a git repository (a `.git` in
//!   one of those directories). The deepest file with a pattern for the
//!   entry decides, and an `.ignore` pattern outranks a `.gitignore` one;
//!   `!pattern` lets an entry back in. Git's global excludes and
//!   `.git/info/exclude` are not read (`.git` is commonly blocked, and the
//!   global file lies outside the roots). An ignore file the policy refuses
//!   to read is not honoured (the entries stay searched, each still judged).
//!
//! These are ripgrep's defaults, except that ripgrep also reads ignore
//! files above the allowed root and git's own exclude files.

use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::overrides::{Override, OverrideBuilder};

/// The caller's glob: what it lets in and out, and for a glob with a `/`,
/// the directories on its way.
pub(super) struct Glob {
    overrides: Override,
    /// The searched directory the glob is anchored at.
    root: std::path::PathBuf,
    /// The glob's components, each matching one name (`None`: `**`); empty
    /// for a glob without a `/` (or an excluding one).
    way: Vec<Option<Override>>,
}

impl Glob {
    /// The glob `text` over the directory `root`.
    ///
    /// # Errors
    ///
    /// A glob that does not parse.
    pub(super) fn new(root: &Path, text: &str) -> Result<Self, ignore::Error> {
        let mut overrides = OverrideBuilder::new(root);
        overrides.add(text)?;
        let overrides = overrides.build()?;
        let anchored = text.trim_start_matches('/');
        let mut way = Vec::new();
        if !text.starts_with('!') && anchored.contains('/') {
            for part in anchored.split('/').filter(|p| !p.is_empty()) {
                way.push(if part == "**" {
                    None
                } else {
                    let mut one = OverrideBuilder::new("/");
                    one.add(part)?;
                    Some(one.build()?)
                });
            }
        }
        Ok(Self {
            overrides,
            root: root.to_path_buf(),
            way,
        })
    }

    fn matched(&self, path: &Path, is_dir: bool) -> Match<ignore::overrides::Glob<'_>> {
        self.overrides.matched(path, is_dir)
    }

    /// Whether the glob can match something beneath the directory `path`:
    /// each of its names below the searched directory matches the glob's
    /// component at that depth (or a `**` came first), and a component is
    /// left for what lies beneath.
    fn opens(&self, path: &Path) -> bool {
        let Ok(below) = path.strip_prefix(&self.root) else {
            return false;
        };
        let mut depth = 0;
        for name in below.components() {
            match self.way.get(depth) {
                Some(None) => return true,
                Some(Some(one)) if one.matched(name.as_os_str(), true).is_whitelist() => {}
                _ => return false,
            }
            depth += 1;
        }
        depth < self.way.len()
    }
}

/// Ignore files larger than this are not honoured.
pub(super) const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// The ignore files in force in one directory: its own, then its parent's.
#[derive(Default)]
pub(super) struct IgnoreFiles {
    parent: Option<Arc<IgnoreFiles>>,
    dot_ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    /// This directory or one above it (within the root) holds `.git`.
    in_git: bool,
}

impl IgnoreFiles {
    /// The rules of a directory `dir` below `parent`, with the contents of
    /// its `.ignore` and `.gitignore` (when it has them) and whether it
    /// holds `.git`.
    pub(super) fn child(
        parent: &Arc<Self>,
        dir: &Path,
        dot_ignore: Option<&[u8]>,
        gitignore: Option<&[u8]>,
        has_git: bool,
    ) -> Arc<Self> {
        if dot_ignore.is_none() && gitignore.is_none() && (!has_git || parent.in_git) {
            return Arc::clone(parent);
        }
        Arc::new(Self {
            parent: Some(Arc::clone(parent)),
            dot_ignore: dot_ignore.and_then(|text| matcher(dir, text)),
            gitignore: gitignore.and_then(|text| matcher(dir, text)),
            in_git: parent.in_git || has_git,
        })
    }

    /// Whether the ignore files pass over the entry at `path`.
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let decide = |pick: fn(&Self) -> Option<&Gitignore>| {
            let mut level = Some(self);
            while let Some(files) = level {
                match pick(files).map(|g| g.matched(path, is_dir)) {
                    Some(Match::Ignore(_)) => return Some(true),
                    Some(Match::Whitelist(_)) => return Some(false),
                    _ => level = files.parent.as_deref(),
                }
            }
            None
        };
        decide(|f| f.dot_ignore.as_ref())
            .or_else(|| {
                if self.in_git {
                    decide(|f| f.gitignore.as_ref())
                } else {
                    None
                }
            })
            .unwrap_or(false)
    }
}

/// A gitignore matcher for the patterns in `text` (lines that do not
/// parse are left out, as git does), rooted at `dir`.
fn matcher(dir: &Path, text: &[u8]) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    for line in String::from_utf8_lossy(text).lines() {
        let _ = builder.add_line(None, line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

/// Whether the search passes over the entry `name` at `path`.
pub(super) fn skipped(
    glob: Option<&Glob>,
    ignores: &IgnoreFiles,
    path: &Path,
    name: &[u8],
    is_dir: bool,
) -> bool {
    match glob.map(|g| g.matched(path, is_dir)) {
        Some(Match::Ignore(_)) => return true,
        Some(Match::Whitelist(_)) => return false,
        _ => {}
    }
    let hidden = name.starts_with(b".") && !(is_dir && glob.is_some_and(|g| g.opens(path)));
    hidden || ignores.ignored(path, is_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Arc<IgnoreFiles> {
        Arc::new(IgnoreFiles::default())
    }

    #[test]
    fn gitignore_counts_only_in_a_git_tree_and_dot_ignore_always() {
        let top = Path::new("/t");
        let plain = IgnoreFiles::child(&root(), top, None, Some(b"*.log\n"), false);
        assert!(!plain.ignored(Path::new("/t/a.log"), false));
        let git = IgnoreFiles::child(&root(), top, None, Some(b"*.log\n"), true);
        assert!(git.ignored(Path::new("/t/a.log"), false));
        let dot = IgnoreFiles::child(&root(), top, Some(b"*.log\n"), None, false);
        assert!(dot.ignored(Path::new("/t/sub/a.log"), false));
    }

    #[test]
    fn the_deepest_pattern_decides_and_dot_ignore_outranks_gitignore() {
        let top = IgnoreFiles::child(&root(), Path::new("/t"), None, Some(b"*.log\n"), true);
        let sub = IgnoreFiles::child(&top, Path::new("/t/s"), None, Some(b"!keep.log\n"), false);
        assert!(sub.ignored(Path::new("/t/s/a.log"), false));
        assert!(!sub.ignored(Path::new("/t/s/keep.log"), false));
        let dot = IgnoreFiles::child(&sub, Path::new("/t/s/d"), Some(b"keep.log\n"), None, false);
        assert!(dot.ignored(Path::new("/t/s/d/keep.log"), false));
        // Directory patterns match directories only.
        let dirs = IgnoreFiles::child(&root(), Path::new("/t"), None, Some(b"target/\n"), true);
        assert!(dirs.ignored(Path::new("/t/target"), true));
        assert!(!dirs.ignored(Path::new("/t/target"), false));
    }

    #[test]
    fn a_glob_with_a_slash_opens_the_hidden_directories_on_its_way() {
        let none = IgnoreFiles::default();
        let dir = |glob: &Glob, path: &str| {
            let name = path.rsplit('/').next().unwrap_or(path);
            !skipped(Some(glob), &none, Path::new(path), name.as_bytes(), true)
        };
        let all = Glob::new(Path::new("/t"), ".github/**").expect("glob");
        assert!(dir(&all, "/t/.github"));
        assert!(dir(&all, "/t/.github/.hidden"), "beneath `**`, any name");
        assert!(!dir(&all, "/t/.git"));
        let workflows = Glob::new(Path::new("/t"), ".github/workflows/*.yml").expect("glob");
        assert!(dir(&workflows, "/t/.github"));
        assert!(dir(&workflows, "/t/.github/workflows"));
        assert!(!dir(&workflows, "/t/.github/.cache"));
        assert!(
            !dir(&workflows, "/t/.github/workflows/.deep"),
            "no component left"
        );
        let anywhere = Glob::new(Path::new("/t"), "*.yml").expect("glob");
        assert!(
            !dir(&anywhere, "/t/.github"),
            "a glob without `/` opens none"
        );
        let excluding = Glob::new(Path::new("/t"), "!.github/**").expect("glob");
        assert!(!dir(&excluding, "/t/.github"));
    }

    #[test]
    fn hidden_names_are_skipped_unless_the_glob_names_them() {
        let none = IgnoreFiles::default();
        let p = Path::new("/t/.env");
        assert!(skipped(None, &none, p, b".env", false));
        let glob = Glob::new(Path::new("/t"), ".e*").expect("glob");
        assert!(!skipped(Some(&glob), &none, p, b".env", false));
        // A file the glob does not match is skipped; a directory is entered.
        assert!(skipped(
            Some(&glob),
            &none,
            Path::new("/t/a.rs"),
            b"a.rs",
            false
        ));
        assert!(!skipped(
            Some(&glob),
            &none,
            Path::new("/t/src"),
            b"src",
            true
        ));
    }
}
