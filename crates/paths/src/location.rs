//! An absolute location as bytes, built a component at a time.
//!
//! Locations are POSIX-shaped on every platform: `/` then names separated
//! by `/`. On Windows a drive is the first name (`C:\Users\a` is
//! `/C:/Users/a`), and each location also keeps the path Windows is given
//! for it (`\\?\C:\Users\a`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// An absolute, normalized location: `/` or `/a/b` (no `.`, `..`, empty or
/// trailing components).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    bytes: Vec<u8>,
    /// The path handed to the system for it.
    #[cfg(windows)]
    host: PathBuf,
}

impl Location {
    fn from_bytes(bytes: Vec<u8>) -> Self {
        #[cfg(windows)]
        {
            let host = host_path(&bytes);
            Location { bytes, host }
        }
        #[cfg(not(windows))]
        Location { bytes }
    }

    pub(crate) fn root() -> Self {
        Location::from_bytes(vec![b'/'])
    }

    /// A lexically normalized absolute path (`..` above `/` stays at `/`).
    /// `None` when `path` is not absolute (on Windows: neither rooted nor
    /// on a drive; UNC and device paths are not modelled).
    pub(crate) fn from_absolute(path: &Path) -> Option<Self> {
        #[cfg(windows)]
        let shaped = windows_shape(path)?;
        #[cfg(windows)]
        let bytes = shaped.as_slice();
        #[cfg(not(windows))]
        let bytes = os_bytes(path.as_os_str());
        if bytes.first() != Some(&b'/') {
            return None;
        }
        let mut location = Vec::with_capacity(bytes.len() + 32);
        location.push(b'/');
        let mut location = Location::from_bytes(location);
        for name in bytes.split(|b| *b == b'/') {
            match name {
                b"" | b"." => {}
                b".." => location.pop(),
                _ => location.push(name),
            }
        }
        Some(location)
    }

    pub(crate) fn push(&mut self, name: &[u8]) {
        if self.bytes.len() > 1 {
            self.bytes.push(b'/');
        }
        self.bytes.extend_from_slice(name);
        self.changed();
    }

    /// Go to the parent (`/` stays `/`).
    pub(crate) fn pop(&mut self) {
        match self.bytes.iter().rposition(|b| *b == b'/') {
            Some(0) | None => self.bytes.truncate(1),
            Some(at) => self.bytes.truncate(at),
        }
        self.changed();
    }

    #[cfg(windows)]
    fn changed(&mut self) {
        self.host = host_path(&self.bytes);
    }

    #[cfg(not(windows))]
    fn changed(&mut self) {}

    pub(crate) fn depth(&self) -> usize {
        if self.bytes.len() <= 1 {
            0
        } else {
            self.bytes.iter().filter(|b| **b == b'/').count()
        }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &[u8]> {
        self.bytes.split(|b| *b == b'/').filter(|n| !n.is_empty())
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub(crate) fn into_path_buf(self) -> PathBuf {
        #[cfg(windows)]
        return self.host;
        #[cfg(not(windows))]
        PathBuf::from(os_string(self.bytes))
    }

    pub(crate) fn as_path(&self) -> &Path {
        #[cfg(windows)]
        return &self.host;
        #[cfg(not(windows))]
        Path::new(os_str(&self.bytes))
    }
}

/// The bytes of a name or path as the crate compares them: the platform's
/// own bytes on Unix, WTF-8 (UTF-8 for every valid name) on Windows.
pub(crate) fn os_bytes(name: &OsStr) -> &[u8] {
    name.as_encoded_bytes()
}

/// The name or path of `bytes` (as [`os_bytes`] gave them).
#[cfg(unix)]
pub(crate) fn os_str(bytes: &[u8]) -> &OsStr {
    std::os::unix::ffi::OsStrExt::from_bytes(bytes)
}

/// The name or path of `bytes` (as [`os_bytes`] gave them).
#[cfg(unix)]
pub(crate) fn os_string(bytes: Vec<u8>) -> std::ffi::OsString {
    std::os::unix::ffi::OsStringExt::from_vec(bytes)
}

/// Windows: `C:\a\b` (or `\\?\C:\a\b`) as `/C:/a/b`, `\a\b` as `/a/b`;
/// `None` for a relative path and for UNC and device paths.
#[cfg(windows)]
fn windows_shape(path: &Path) -> Option<Vec<u8>> {
    use std::path::{Component, Prefix};
    let mut shaped = Vec::new();
    let mut rooted = false;
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => match prefix.kind() {
                Prefix::Disk(drive) | Prefix::VerbatimDisk(drive) => {
                    shaped.extend_from_slice(&[b'/', drive.to_ascii_uppercase(), b':']);
                }
                _ => return None,
            },
            Component::RootDir => rooted = true,
            Component::CurDir => shaped.extend_from_slice(b"/."),
            Component::ParentDir => shaped.extend_from_slice(b"/.."),
            Component::Normal(name) => {
                shaped.push(b'/');
                shaped.extend_from_slice(os_bytes(name));
            }
        }
    }
    if !rooted {
        return None;
    }
    if shaped.is_empty() {
        shaped.push(b'/');
    }
    Some(shaped)
}

/// Windows: the path the system is given for a location — verbatim, so
/// that Windows opens exactly the names judged and trims no trailing dot
/// or space of its own (`/C:` is `\\?\C:\`, `/C:/a` is `\\?\C:\a`); a
/// location without a drive (a simulated tree) is given as it is.
#[cfg(windows)]
fn host_path(bytes: &[u8]) -> PathBuf {
    let text = String::from_utf8_lossy(bytes);
    let drive = text.get(1..3).filter(|d| {
        d.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && d.ends_with(':')
            && matches!(text.as_bytes().get(3), None | Some(b'/'))
    });
    match drive {
        Some(drive) => {
            let rest = text.get(3..).unwrap_or_default().replace('/', "\\");
            let rest = if rest.is_empty() {
                "\\".to_owned()
            } else {
                rest
            };
            PathBuf::from(format!("\\\\?\\{drive}{rest}"))
        }
        None => PathBuf::from(text.into_owned()),
    }
}
