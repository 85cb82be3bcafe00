//! Versions of a file, and the order of its writers in this process: what
//! lets a write refuse to replace a file that changed since it was read
//! ([`PathError::Conflict`](crate::PathError::Conflict)), and what keeps two
//! writers of one path in one process from interleaving their read and
//! their write.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use super::sys::Stat;

/// One version of a regular file, as the file system tells versions apart:
/// which file it is (device and inode on Unix), its size and its
/// modification time. A file rewritten in place or replaced by a rename has
/// another version.
///
/// On Windows the identity is not read: size and modification time stand
/// for the version there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    id: (u64, u64),
    len: u64,
    modified: Option<SystemTime>,
}

impl Version {
    pub(crate) fn of(stat: &Stat) -> Self {
        Version {
            id: stat.id,
            len: stat.len,
            modified: stat.modified,
        }
    }

    /// The file's size in bytes, in this version.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file was empty in this version.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// What tells `now` apart from this version, for a message.
    pub(crate) fn difference(&self, now: &Version) -> &'static str {
        if self.id != now.id {
            "another file took its place"
        } else if self.len != now.len {
            "its size changed"
        } else {
            "it was modified"
        }
    }
}

/// How many locks the writers of all paths share (a path takes the one its
/// hash picks; two paths rarely share one, and then only wait longer).
const STRIPES: usize = 64;

static WRITERS: [Mutex<()>; STRIPES] = [const { Mutex::new(()) }; STRIPES];

/// Held while a caller reads and writes some files: every other writer of
/// those files in this process (through any [`Beneath`](super::Beneath))
/// waits until it is dropped. Take it once per operation, for all its
/// files: taking a second one while holding one may wait forever.
#[must_use = "the writers wait only while this is held"]
pub struct Writers {
    _held: Vec<MutexGuard<'static, ()>>,
}

impl std::fmt::Debug for Writers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writers")
            .field("locks", &self._held.len())
            .finish()
    }
}

fn stripe(location: &Path) -> usize {
    let mut hasher = std::hash::DefaultHasher::new();
    location.hash(&mut hasher);
    (hasher.finish() % STRIPES as u64) as usize
}

/// Waits for, then holds, the locks of `locations` (always taken in one
/// order, so two callers never wait for each other).
pub(crate) fn hold<'a>(locations: impl IntoIterator<Item = &'a Path>) -> Writers {
    let mut stripes: Vec<usize> = locations.into_iter().map(stripe).collect();
    stripes.sort_unstable();
    stripes.dedup();
    Writers {
        _held: stripes
            .into_iter()
            .filter_map(|i| WRITERS.get(i))
            .map(|lock| lock.lock().unwrap_or_else(PoisonError::into_inner))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_path_is_held_once_and_others_are_free() {
        let a = Path::new("/t/a");
        let held = hold([a, a]);
        assert_eq!(held._held.len(), 1);
        // Another path on another stripe is free meanwhile.
        let other = (0..1000)
            .map(|i| format!("/t/b{i}"))
            .find(|p| stripe(Path::new(p)) != stripe(a))
            .expect("a path on another stripe");
        drop(hold([Path::new(&other)]));
        // The same path waits until the first is dropped.
        let waited = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let started = std::time::Instant::now();
                drop(hold([a]));
                started.elapsed()
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(held);
            waiter.join().expect("join")
        });
        assert!(waited >= std::time::Duration::from_millis(40), "{waited:?}");
    }
}
