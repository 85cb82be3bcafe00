//! An in-memory file system that counts lookups exactly.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{EntryKind, FileSystem, Probe};

/// How a [`SimFs`] compares names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SimMode {
    /// Byte-exact names, as on Linux.
    #[default]
    Posix,
    /// Names compare case-insensitively (default macOS volumes).
    CaseInsensitive,
    /// Windows (NTFS): case-insensitive, and a trailing dot or space or a
    /// `:stream` suffix names the same file as the bare name.
    Windows,
}

#[derive(Debug, Clone)]
enum Node {
    Dir(BTreeMap<Vec<u8>, Node>),
    File,
    Symlink(PathBuf),
}

/// An in-memory file system of directories, files and symlinks.
///
/// A test and simulation aid: it shows what a check does on file systems
/// this host does not have (Windows, case-insensitive), and counts every
/// lookup ([`FileSystem::entry`] and [`FileSystem::read_link`]) exactly.
/// Intermediate links are followed inside one lookup, as the kernel does.
///
/// ```
/// use agentcaps_paths::{FileSystem, SimFs};
/// use std::path::Path;
/// let mut fs = SimFs::new();
/// fs.add_dir("/srv/app").add_symlink("/srv/app/out", "/etc");
/// assert!(fs.entry(Path::new("/srv/app/out"))?.is_some());
/// assert_eq!(fs.lookups(), 1);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct SimFs {
    root: Node,
    mode: SimMode,
    lookups: AtomicU64,
}

impl Default for SimFs {
    fn default() -> Self {
        SimFs::new()
    }
}

impl Clone for SimFs {
    fn clone(&self) -> Self {
        SimFs {
            root: self.root.clone(),
            mode: self.mode,
            lookups: AtomicU64::new(self.lookups()),
        }
    }
}

const MAX_LINKS: u32 = 40;

impl SimFs {
    /// An empty POSIX file system holding only `/`.
    pub fn new() -> Self {
        SimFs::with_mode(SimMode::Posix)
    }

    /// An empty file system comparing names as `mode` says.
    pub fn with_mode(mode: SimMode) -> Self {
        SimFs {
            root: Node::Dir(BTreeMap::new()),
            mode,
            lookups: AtomicU64::new(0),
        }
    }

    /// How this file system compares names.
    pub fn mode(&self) -> SimMode {
        self.mode
    }

    /// Lookups made so far.
    pub fn lookups(&self) -> u64 {
        self.lookups.load(Ordering::Relaxed)
    }

    /// Set the lookup counter back to zero.
    pub fn reset_lookups(&self) {
        self.lookups.store(0, Ordering::Relaxed);
    }

    /// Create a directory and its missing parents (like `mkdir -p`; existing
    /// links on the way are replaced by directories).
    pub fn add_dir(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.insert(path.as_ref(), Node::Dir(BTreeMap::new()));
        self
    }

    /// Create a file (and missing parent directories).
    pub fn add_file(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.insert(path.as_ref(), Node::File);
        self
    }

    /// Create a symlink at `path` pointing to `target` (stored as given).
    pub fn add_symlink(&mut self, path: impl AsRef<Path>, target: impl AsRef<Path>) -> &mut Self {
        self.insert(path.as_ref(), Node::Symlink(target.as_ref().to_path_buf()));
        self
    }

    /// Remove whatever is at `path` (and below it).
    pub fn remove(&mut self, path: impl AsRef<Path>) -> &mut Self {
        let names = self.names(path.as_ref());
        if let Some((last, parents)) = names.split_last() {
            let mut node = &mut self.root;
            for name in parents {
                match node {
                    Node::Dir(children) => match children.get_mut(name) {
                        Some(child) => node = child,
                        None => return self,
                    },
                    _ => return self,
                }
            }
            if let Node::Dir(children) = node {
                children.remove(last);
            }
        }
        self
    }

    /// The name under which an entry is stored and found: the name itself
    /// (POSIX), its case-folded form, or the name Windows opens, folded.
    /// (This model is written apart from the checks' own: a test comparing
    /// the two finds a bug in either.)
    fn key(&self, name: &OsStr) -> Vec<u8> {
        let bytes = name.as_encoded_bytes();
        match self.mode {
            SimMode::Posix => bytes.to_vec(),
            SimMode::CaseInsensitive => case_key(bytes, false),
            SimMode::Windows => case_key(ntfs_name(bytes), true),
        }
    }

    fn names(&self, path: &Path) -> Vec<Vec<u8>> {
        path.components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(self.key(name)),
                _ => None,
            })
            .collect()
    }

    fn insert(&mut self, path: &Path, leaf: Node) {
        let names = self.names(path);
        let Some((last, parents)) = names.split_last() else {
            return;
        };
        let mut node = &mut self.root;
        for name in parents {
            let Node::Dir(children) = node else { return };
            let child = children
                .entry(name.clone())
                .or_insert_with(|| Node::Dir(BTreeMap::new()));
            if !matches!(child, Node::Dir(_)) {
                *child = Node::Dir(BTreeMap::new());
            }
            node = child;
        }
        if let Node::Dir(children) = node {
            children.insert(last.clone(), leaf);
        }
    }

    /// Walk to `path` following intermediate links (and the final one when
    /// `follow_last`), as the kernel does for one system call.
    ///
    /// A path ending in a separator names a directory: its final link is
    /// followed, and anything but a directory there is not found (`lstat`
    /// of `file/` fails with `ENOTDIR`).
    fn walk(&self, path: &Path, follow_last: bool) -> io::Result<Option<&Node>> {
        let trailing = path
            .as_os_str()
            .as_encoded_bytes()
            .last()
            .is_some_and(|&b| std::path::is_separator(char::from(b)));
        let follow_last = follow_last || trailing;
        let mut pending: Vec<OsString> = Vec::new();
        push_reversed(&mut pending, path);
        let mut stack: Vec<&Node> = vec![&self.root];
        let mut links = 0u32;
        while let Some(name) = pending.pop() {
            match name.as_encoded_bytes() {
                b"" | b"." => continue,
                b"/" => {
                    stack.truncate(1);
                    continue;
                }
                b".." => {
                    if stack.len() > 1 {
                        stack.pop();
                    }
                    continue;
                }
                _ => {}
            }
            let Some(&current) = stack.last() else {
                return Ok(None);
            };
            let Node::Dir(children) = current else {
                return Ok(None);
            };
            let Some(child) = children.get(&self.key(&name)) else {
                return Ok(None);
            };
            let is_last = pending.is_empty();
            if let Node::Symlink(target) = child
                && (!is_last || follow_last)
            {
                links += 1;
                if links > MAX_LINKS {
                    return Err(io::Error::from_raw_os_error(
                        rustix::io::Errno::LOOP.raw_os_error(),
                    ));
                }
                push_reversed(&mut pending, target);
                continue;
            }
            stack.push(child);
        }
        let last = stack.last().copied();
        if trailing && !matches!(last, Some(Node::Dir(_))) {
            return Ok(None);
        }
        Ok(last)
    }
}

fn push_reversed(pending: &mut Vec<OsString>, path: &Path) {
    let mut parts: Vec<OsString> = path
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => OsString::from("/"),
            Component::CurDir => OsString::from("."),
            Component::ParentDir => OsString::from(".."),
            Component::Normal(name) => name.to_os_string(),
        })
        .collect();
    parts.reverse();
    pending.extend(parts);
}

/// The name NTFS stores a Win32 name under: everything from the first `:`
/// on names a stream of the file (`.env::$DATA`, `a:b`), and trailing dots
/// and spaces are dropped (`.env. .` is `.env`) — except that a name made
/// only of dots and spaces that reads `.` or `..` once its spaces are gone
/// stays `.` or `..`.
fn ntfs_name(name: &[u8]) -> &[u8] {
    let file = name.split(|&b| b == b':').next().unwrap_or(name);
    let kept = |keep: fn(&u8) -> bool| {
        let end = file.iter().rposition(keep).map_or(0, |last| last + 1);
        file.get(..end).unwrap_or(file)
    };
    let bare = kept(|b| !matches!(b, b'.' | b' '));
    if !bare.is_empty() {
        return bare;
    }
    match kept(|b| *b != b' ') {
        dots @ (b"." | b"..") => dots,
        _ => &[],
    }
}

/// A name folded for a case-insensitive comparison, one character at a
/// time as NTFS and APFS compare: each character by its simple uppercase
/// mapping (one character for one: `é` and `É` meet, `ß` does not become
/// `SS`). On `ntfs`, final sigma `ς` stays itself: Windows' table leaves
/// it (Wine, which copies that table, finds `ςοφία` apart from `ΣΟΦΊΑ`),
/// where APFS folds it with `σ`. A name that is not UTF-8 folds its ASCII
/// letters only.
fn case_key(name: &[u8], ntfs: bool) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(name) else {
        return name.to_ascii_uppercase();
    };
    let mut key = String::with_capacity(text.len());
    for c in text.chars() {
        if ntfs && c == 'ς' {
            key.push(c);
            continue;
        }
        let mut upper = c.to_uppercase();
        match (upper.next(), upper.next()) {
            (Some(single), None) => key.push(single),
            _ => key.push(c),
        }
    }
    key.into_bytes()
}

impl FileSystem for SimFs {
    fn entry(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        Ok(self.walk(path, false)?.map(|node| match node {
            Node::Dir(_) => EntryKind::Dir,
            Node::File => EntryKind::File,
            Node::Symlink(_) => EntryKind::Symlink,
        }))
    }

    fn probes_in_one_lookup(&self) -> bool {
        true
    }

    /// Counted as one lookup, as `readlink` is on a real file system.
    fn probe(&self, path: &Path) -> io::Result<Probe> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        Ok(match self.walk(path, false)? {
            None => Probe::Missing,
            Some(Node::Symlink(target)) => Probe::Link(target.clone()),
            Some(_) => Probe::Present,
        })
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        match self.walk(path, false)? {
            Some(Node::Symlink(target)) => Ok(target.clone()),
            Some(_) => Err(io::Error::from(io::ErrorKind::InvalidInput)),
            None => Err(io::Error::from(io::ErrorKind::NotFound)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finds(fs: &SimFs, path: &str) -> bool {
        fs.entry(Path::new(path)).unwrap().is_some()
    }

    #[test]
    fn windows_names_drop_streams_and_trailing_dots_and_spaces() {
        let mut fs = SimFs::with_mode(SimMode::Windows);
        fs.add_file("/d/.env").add_file("/d/x.txt");
        for alias in [
            "/d/.env",
            "/d/.ENV",
            "/d/.env.",
            "/d/.env. . ",
            "/d/.env::$DATA",
            "/d/.Env:stream:$DATA",
            "/D/X.TXT.",
        ] {
            assert!(finds(&fs, alias), "{alias}");
        }
        for other in ["/d/.env.x", "/d/env", "/d/ .env", "/d/...", "/d/x.tx"] {
            assert!(!finds(&fs, other), "{other}");
        }
        // A name stored with its trailing dot is stored as Windows would.
        fs.add_file("/d/y.");
        assert!(finds(&fs, "/d/Y"));
    }

    #[test]
    fn only_dots_and_spaces_keep_dot_and_dot_dot() {
        assert_eq!(ntfs_name(b". "), b".");
        assert_eq!(ntfs_name(b".. "), b"..");
        assert_eq!(ntfs_name(b"..."), b"");
        assert_eq!(ntfs_name(b". ."), b"");
        assert_eq!(ntfs_name(b":x"), b"");
        assert_eq!(ntfs_name(b"a. :b"), b"a");
    }

    #[test]
    fn case_folding_covers_letters_beyond_ascii_one_for_one() {
        let mut fs = SimFs::with_mode(SimMode::CaseInsensitive);
        fs.add_file("/Été/Привет")
            .add_file("/straße")
            .add_file("/ΣΟΦΊΑ")
            .add_file("/Ǆ");
        assert!(finds(&fs, "/été/привет"));
        assert!(finds(&fs, "/ÉTÉ/ПРИВЕТ"));
        // Final and medial sigma both meet capital sigma.
        assert!(!finds(&fs, "/σοφίας"));
        assert!(finds(&fs, "/σοφία"));
        assert!(finds(&fs, "/ςοφία"));
        // `ß` has no one-character uppercase: it stays itself.
        assert!(finds(&fs, "/STRAßE"));
        assert!(!finds(&fs, "/STRASSE"));
        // Title-case and lower-case digraphs meet the capital one.
        assert!(finds(&fs, "/ǅ"));
        assert!(finds(&fs, "/ǆ"));
        // Composed and decomposed `é` are different names here.
        assert!(!finds(&fs, "/E\u{301}t\u{e9}/Привет"));
        // NTFS leaves final sigma alone.
        let mut ntfs = SimFs::with_mode(SimMode::Windows);
        ntfs.add_file("/ΣΟΦΊΑ");
        assert!(finds(&ntfs, "/σοφία"));
        assert!(!finds(&ntfs, "/ςοφία"));
    }

    #[test]
    fn posix_names_compare_byte_for_byte() {
        let mut fs = SimFs::new();
        fs.add_file("/a/File").add_file("/a/.env");
        assert!(finds(&fs, "/a/File"));
        for other in [
            "/a/file",
            "/a/FILE",
            "/a/.env.",
            "/a/.env::$DATA",
            "/A/File",
        ] {
            assert!(!finds(&fs, other), "{other}");
        }
    }
}
