//! An absolute location as bytes, built a component at a time.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// An absolute, normalized location: `/` or `/a/b` (no `.`, `..`, empty or
/// trailing components).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Location(Vec<u8>);

impl Location {
    pub(crate) fn root() -> Self {
        Location(vec![b'/'])
    }

    /// A lexically normalized absolute path (`..` above `/` stays at `/`).
    /// `None` when `path` is not absolute.
    pub(crate) fn from_absolute(path: &Path) -> Option<Self> {
        let bytes = path.as_os_str().as_bytes();
        if bytes.first() != Some(&b'/') {
            return None;
        }
        let mut location = Location(Vec::with_capacity(bytes.len() + 32));
        location.0.push(b'/');
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
        if self.0.len() > 1 {
            self.0.push(b'/');
        }
        self.0.extend_from_slice(name);
    }

    /// Go to the parent (`/` stays `/`).
    pub(crate) fn pop(&mut self) {
        match self.0.iter().rposition(|b| *b == b'/') {
            Some(0) | None => self.0.truncate(1),
            Some(at) => self.0.truncate(at),
        }
    }

    pub(crate) fn depth(&self) -> usize {
        if self.0.len() <= 1 {
            0
        } else {
            self.0.iter().filter(|b| **b == b'/').count()
        }
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|b| *b == b'/').filter(|n| !n.is_empty())
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    pub(crate) fn into_path_buf(self) -> PathBuf {
        PathBuf::from(OsString::from_vec(self.0))
    }

    pub(crate) fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }
}
