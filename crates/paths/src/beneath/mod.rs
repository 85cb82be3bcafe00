//! Acting on paths beneath a root's directory handle, with no gap between
//! the check and the use.
//!
//! - this module: [`Beneath`] itself — the checked target, the handles;
//! - `files`: reading, writing, listing, renaming and removing;
//! - `transaction`: staged files, files set aside and put back;
//! - `sys`: the system calls, one mechanism per platform.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use crate::resolve::Follow;
use crate::{Access, EntryKind, FileSystem, GuardedLinks, PathError, PathPolicy};

mod commit_dir;
mod files;
mod sys;
mod transaction;
mod version;

pub use commit_dir::COMMIT_DIR_PREFIX;
pub use transaction::{SetAside, Staged};
pub use version::{Version, Writers};

use sys::{Dir, Failed, Why};

/// How [`Beneath::write`] treats an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteMode {
    /// Refuse when something already exists at the target.
    CreateNew,
    /// Replace the target's contents (atomically, by rename).
    Overwrite,
    /// Replace the target, only while it is still this version of the file
    /// (the one the new content was made from, read with
    /// [`Beneath::read_versioned`]); otherwise refuse with
    /// [`PathError::Conflict`] and leave it as it is.
    Unchanged(Version),
}

/// How a [`Beneath`] finds the links that make an ordinary name a guarded
/// one ([`GuardedLinks`]): `.cargo -> cfg` makes a write of
/// `cfg/config.toml` a write of cargo's config, refused like it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum LinkJudging {
    /// Walk the roots for guarded links at every judged write (the
    /// default): never stale, at the cost of one walk of the roots' trees
    /// per write, rename or removal.
    #[default]
    EachWrite,
    /// Walk once and keep what was found until
    /// [`Beneath::refresh_guarded_links`] (and after each rename these
    /// handles make): for a host that knows when links can appear, such as
    /// one that refreshes after each command it runs. A link someone else
    /// makes meanwhile is not seen until then.
    UntilRefreshed,
    /// Judge no link: the caller judges every write at its other names
    /// itself (a write-back that judges the tree as it will be, links the
    /// command removed or made included).
    ByCaller,
}

/// What [`Beneath::metadata`] reports (never following a final link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryInfo {
    /// File, directory, link or other.
    pub kind: EntryKind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification time, where the file system records one.
    pub modified: Option<SystemTime>,
    /// Whether the owner's write permission bit is clear.
    pub readonly: bool,
}

/// One entry of [`Beneath::list`]. Links are reported as links, never
/// followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's name (not a path).
    pub name: OsString,
    /// What it is, as `lstat` says.
    pub kind: EntryKind,
}

/// File operations beneath the policy's root directory handles, with no
/// check-then-use gap.
///
/// Every method judges the spelling with the policy first, then acts
/// relative to the root's directory handle at the real location the check
/// computed, refusing every link on the way: that location holds no link,
/// so a link swapped in after the check makes the operation fail
/// ([`PathError::Changed`]) instead of escaping. Mutations are `*at` calls
/// on the parent's handle; new files are created `O_EXCL | O_NOFOLLOW`; a
/// write goes to a temporary file in the same directory that is renamed
/// into place, and the directory is then opened again by its path: when it
/// is no longer the one written through (renamed meanwhile, say `x` to
/// `.cargo`), the write is undone and refused ([`PathError::Changed`]). A
/// rename judges what moved again at its new place, and is undone when
/// that is refused.
///
/// # Concurrent writers
///
/// [`Beneath::hold_writers`] serialises the writers of a file within a
/// process (across every `Beneath`); [`WriteMode::Unchanged`],
/// [`Beneath::replace_unchanged`] and [`Beneath::set_aside_unchanged`]
/// replace or remove a file only while it is still the [`Version`] it was
/// read as (device, inode, size, modification time), refusing with
/// [`PathError::Conflict`] otherwise, so a write by another process is
/// never lost silently.
///
/// ```
/// use agentcaps_paths::{PathPolicy, WriteMode};
/// let dir = std::env::temp_dir().canonicalize()?.join(format!("beneath-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let files = PathPolicy::builder().allow(&dir).build()?.open_beneath()?;
/// files.write(&dir, "notes.txt", b"hello", WriteMode::CreateNew)?;
/// assert_eq!(files.read(&dir, "notes.txt", 1024)?, b"hello");
/// assert!(files.read(&dir, "../../etc/passwd", 1024).is_err());
/// drop(files); // (on Windows the root cannot be removed while it is held)
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Platforms
///
/// - **Linux**: one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
///   RESOLVE_NO_MAGICLINKS)` per open; where the kernel lacks it, the
///   component walk below. [`Beneath::replace`] exchanges the two names
///   with `renameat2(RENAME_EXCHANGE)`.
/// - **macOS** (and other Unix): the component walk — each name opened
///   relative to its parent's handle with `O_NOFOLLOW`, so a link anywhere
///   on the way fails the open; the same guarantee as on Linux, one system
///   call per component. [`Beneath::replace`] exchanges with
///   `renameatx_np(RENAME_SWAP)` on macOS.
/// - **Windows**: the same walk over directory handles, each name opened
///   without following a reparse point (symbolic link or junction) and
///   refused if it is one; [`Beneath::replace`] keeps the replaced file by
///   a hard link (no exchange). See the crate's README for what Windows
///   does not give.
///
/// # Links at guarded names
///
/// A write is also judged at every other name a link of the tree gives it
/// ([`GuardedLinks`], found as [`LinkJudging`] says): with `.cargo -> cfg`
/// in the tree, writing, renaming into or removing `cfg/config.toml` is
/// refused like `.cargo/config.toml` ([`PathError::ThroughLink`]), and a
/// rename that would put a link at such a name is refused.
///
/// # Security
///
/// Hard links are invisible to every path check: a hard link inside a root
/// to a file elsewhere can be read. Writes never modify a file in place (a
/// temporary file is renamed over it), so a hard-linked inode outside the
/// root is never written. Programs the host runs on the same paths (the
/// shell) do not go through these handles and are not protected by them.
pub struct Beneath {
    policy: PathPolicy,
    view: Arc<dyn FileSystem>,
    roots: Vec<(PathBuf, Option<Dir>)>,
    durable: bool,
    /// With [`Beneath::share_dir_handles`]: one handle per parent
    /// directory, by root and path beneath it.
    dir_cache: Option<std::sync::Mutex<std::collections::HashMap<(usize, PathBuf), Dir>>>,
    /// With [`Beneath::stage_in_commit_dir`]: the hidden directories the
    /// temporary files go to.
    commit_dirs: Option<commit_dir::CommitDirs>,
    /// Test seams: behave as without `openat2`, `RENAME_EXCHANGE` or hard
    /// links.
    missing: Missing,
    /// How guarded links are found, and with
    /// [`LinkJudging::UntilRefreshed`] the ones found.
    link_judging: LinkJudging,
    guarded_links: std::sync::Mutex<Option<Arc<GuardedLinks>>>,
}

/// What [`Beneath::simulate_missing`] and
/// [`Beneath::simulate_missing_openat2`] make the operations act as if the
/// system lacked.
#[derive(Debug, Clone, Copy, Default)]
struct Missing {
    openat2: bool,
    exchange: bool,
    hard_links: bool,
}

impl std::fmt::Debug for Beneath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Beneath")
            .field("policy", &self.policy)
            .field("roots", &self.roots)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

/// A checked target: which root handle, and the path below it.
struct Target {
    spelling: String,
    root: usize,
    /// Below the root; empty for the root itself.
    relative: PathBuf,
    location: PathBuf,
}

impl Beneath {
    /// The most entries a renamed directory may hold (each is judged where
    /// it lands).
    pub const MAX_MOVED: usize = 10_000;

    pub(crate) fn open(policy: &PathPolicy, view: Arc<dyn FileSystem>) -> Result<Self, PathError> {
        let mut roots = Vec::new();
        for (root, _) in policy.roots() {
            let dir = sys::open_root(root).map_err(|e| PathError::io("open root", root, e))?;
            roots.push((root.to_path_buf(), dir));
        }
        Ok(Beneath {
            policy: policy.clone(),
            view,
            roots,
            durable: false,
            dir_cache: None,
            commit_dirs: None,
            missing: Missing::default(),
            link_judging: LinkJudging::default(),
            guarded_links: std::sync::Mutex::new(None),
        })
    }

    /// The policy this handle judges with.
    pub fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    fn target(
        &self,
        base: &Path,
        spelling: &str,
        access: Access,
        follow: Follow,
    ) -> Result<Target, PathError> {
        let checked =
            self.policy
                .judge(self.view.as_ref(), base, spelling, access, None, follow)?;
        let location = checked.location().to_path_buf();
        let root = self
            .roots
            .iter()
            .position(|(root, _)| root == checked.root())
            .ok_or_else(|| changed(spelling, &location, "its root has no handle"))?;
        let relative = location
            .strip_prefix(checked.root())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if access == Access::Write {
            self.judge_guarded_links(spelling, &location)?;
        }
        Ok(Target {
            spelling: spelling.to_owned(),
            root,
            relative,
            location,
        })
    }

    /// The guarded links these handles judge writes with, as
    /// [`LinkJudging`] says (found now unless kept); `None` when the
    /// caller judges them. Another handle can be given them with
    /// [`Beneath::use_guarded_links`].
    pub fn guarded_links(&self) -> Option<Arc<GuardedLinks>> {
        match self.link_judging {
            LinkJudging::ByCaller => None,
            LinkJudging::EachWrite => Some(Arc::new(self.policy.guarded_links())),
            LinkJudging::UntilRefreshed => {
                let mut kept = self
                    .guarded_links
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                Some(Arc::clone(kept.get_or_insert_with(|| {
                    Arc::new(self.policy.guarded_links())
                })))
            }
        }
    }

    /// Judge a write at the absolute `location` (spelled `spelling`) at
    /// the other names the tree's guarded links give it, as every write
    /// of these handles is: for a caller that plans writes before making
    /// them (a patch's dry run) and must refuse exactly what they would.
    ///
    /// # Errors
    ///
    /// [`PathError::ThroughLink`]; nothing with [`LinkJudging::ByCaller`].
    pub fn judge_guarded_links(&self, spelling: &str, location: &Path) -> Result<(), PathError> {
        match self.guarded_links() {
            Some(links) => links.judge_write(&self.policy, spelling, location),
            None => Ok(()),
        }
    }

    /// How writes are judged at the other names links give them (see
    /// [`LinkJudging`]; [`LinkJudging::EachWrite`] by default).
    pub fn set_link_judging(&mut self, judging: LinkJudging) {
        self.link_judging = judging;
        self.refresh_guarded_links();
    }

    /// Judge writes with `links` (found by another handle on the same
    /// roots, say) until [`Beneath::refresh_guarded_links`]: the mode
    /// becomes [`LinkJudging::UntilRefreshed`].
    pub fn use_guarded_links(&mut self, links: Arc<GuardedLinks>) {
        self.link_judging = LinkJudging::UntilRefreshed;
        *self
            .guarded_links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(links);
    }

    /// Forget the guarded links found so far: with
    /// [`LinkJudging::UntilRefreshed`], the next write walks the roots
    /// again.
    pub fn refresh_guarded_links(&self) {
        *self
            .guarded_links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    fn root_dir(&self, target: &Target) -> Result<&Dir, PathError> {
        match self.roots.get(target.root) {
            Some((_, Some(dir))) => Ok(dir),
            Some((root, None)) => Err(PathError::io(
                "open root",
                root,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )),
            None => Err(changed(&target.spelling, &target.location, "unknown root")),
        }
    }

    /// Open the directory at `relative` beneath the root's handle, refusing
    /// every link.
    fn open_dir(&self, target: &Target, relative: &Path) -> Result<Dir, PathError> {
        let root = self.root_dir(target)?;
        sys::open_dir_beneath(root, relative, self.missing.openat2)
            .map_err(|failed| opening(target, failed))
    }

    /// The parent directory's handle and the final name.
    fn parent(&self, target: &Target) -> Result<(Dir, OsString), PathError> {
        let name = target
            .relative
            .file_name()
            .ok_or_else(|| {
                changed(
                    &target.spelling,
                    &target.location,
                    "it is an allowed root itself, which cannot be replaced, renamed or removed",
                )
            })?
            .to_os_string();
        let parent = target.relative.parent().unwrap_or(Path::new(""));
        let Some(cache) = &self.dir_cache else {
            return Ok((self.open_dir(target, parent)?, name));
        };
        let shared =
            |dir: &Dir| sys::share(dir).map_err(|e| PathError::io("open", &target.location, e));
        let key = (target.root, parent.to_path_buf());
        let mut cache = cache
            .lock()
            .map_err(|_| changed(&target.spelling, &target.location, "a handle cache failed"))?;
        if let Some(dir) = cache.get(&key) {
            return Ok((shared(dir)?, name));
        }
        let dir = self.open_dir(target, parent)?;
        let handle = shared(&dir)?;
        cache.insert(key, dir);
        Ok((handle, name))
    }

    fn sync_dir(&self, dir: &Dir, location: &Path) -> Result<(), PathError> {
        if self.durable {
            sys::sync_dir(dir).map_err(|e| PathError::io("fsync", location, e))?;
        }
        Ok(())
    }

    /// Test seam, not for production use: make [`Beneath::replace`] act as
    /// on a file system without `RENAME_EXCHANGE` (it then keeps the old
    /// file by a hard link) and, with `hard_links` too, without hard links
    /// (it then keeps a copy). The fallbacks run exactly as they would
    /// there; only the kernel's refusal is simulated.
    #[doc(hidden)]
    pub fn simulate_missing(&mut self, exchange: bool, hard_links: bool) {
        self.missing.exchange = exchange;
        self.missing.hard_links = hard_links;
    }

    /// Test seam, not for production use: open every path by the
    /// component walk (one `O_NOFOLLOW` open per name), as where `openat2`
    /// is missing — old kernels, seccomp filters, macOS — instead of one
    /// `openat2`. No effect where the walk is the only mechanism.
    #[doc(hidden)]
    pub fn simulate_missing_openat2(&mut self, on: bool) {
        self.missing.openat2 = on;
    }

    /// Keep one handle per directory for as long as this value lives, and
    /// use it for every later operation in that directory (off by
    /// default). A transaction over many files in few directories then
    /// holds one descriptor per directory, not one per staged file or
    /// file set aside. A directory is opened beneath the root refusing
    /// every link the first time, as always; later operations there go
    /// through that handle, wherever the directory has been moved since.
    pub fn share_dir_handles(&mut self, on: bool) {
        self.dir_cache = on.then(Default::default);
    }

    /// Whether to `fsync` written files and their directories (off by
    /// default).
    pub fn set_durable(&mut self, on: bool) {
        self.durable = on;
    }
}

fn changed(spelling: &str, location: &Path, detail: &str) -> PathError {
    PathError::Changed {
        spelling: spelling.to_owned(),
        location: location.to_path_buf(),
        detail: detail.to_owned(),
    }
}

/// The refusal for an open beneath a root that failed.
fn opening(target: &Target, failed: Failed) -> PathError {
    let (spelling, location) = (&target.spelling, &target.location);
    match failed.why {
        Why::Link => changed(
            spelling,
            location,
            "a link appeared on the way after the check",
        ),
        Why::NotDir => changed(spelling, location, "it is not a directory"),
        Why::IsDir => changed(spelling, location, "it is a directory"),
        _ => PathError::io("open", location, failed.error),
    }
}

/// An I/O failure of `op` at `location`.
fn io(op: &'static str, location: &Path, failed: Failed) -> PathError {
    PathError::io(op, location, failed.error)
}
