//! The private staging directories of runs: one per run, beneath a base
//! directory that belongs to this user, removed when the run is over — and,
//! for runs of processes that died before they could, on the next start.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

/// One run's staging directory, removed when dropped.
#[derive(Debug)]
pub(crate) struct Staging {
    dir: PathBuf,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl Staging {
    /// A fresh staging directory beneath `base` (created `0700` if
    /// missing; it must be a directory of this user, not a link).
    pub(crate) fn create(base: &Path) -> io::Result<Self> {
        ensure_private_dir(base)?;
        static CLEANED: Once = Once::new();
        CLEANED.call_once(|| remove_stale(base));
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("{}-{n}", std::process::id()));
        if std::fs::symlink_metadata(&dir).is_ok() {
            remove_all(&dir)?;
        }
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(Self { dir })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = remove_all(&self.dir);
    }
}

/// The default base of this process: a fresh directory
/// `agentcaps-UID-PID.RANDOM` in the system's temporary directory, created
/// with `mkdtemp` semantics (a new name, made `0700` by this process; a name
/// someone else made first is never used: another is tried). Made once per
/// process; the bases of processes that no longer run are removed when it
/// is made.
///
/// # Errors
///
/// Why no base could be made (the temporary directory is not writable).
pub(crate) fn default_base() -> Result<PathBuf, String> {
    BASE.get_or_init(|| fresh_base(&std::env::temp_dir()))
        .clone()
}

/// This process's default base, once made.
static BASE: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();

/// Removes this process's default base if one was made and it is empty
/// (no run of this process is in progress); returns whether it is gone.
/// Nothing else is touched: a base that still holds a run stays, and the
/// next process removes it once this one is gone.
pub(crate) fn remove_default_base() -> bool {
    match BASE.get() {
        Some(Ok(base)) => std::fs::remove_dir(base).is_ok(),
        _ => true,
    }
}

/// The name prefix of this user's bases.
fn base_prefix() -> String {
    format!("agentcaps-{}-", rustix::process::geteuid().as_raw())
}

/// A new private directory in `tmp` (see [`default_base`]).
pub(crate) fn fresh_base(tmp: &Path) -> Result<PathBuf, String> {
    use std::hash::{BuildHasher, Hasher};
    remove_stale_bases(tmp);
    let mut last = None;
    for attempt in 0..16u64 {
        // A key the standard library draws from the system's randomness.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(attempt);
        let name = format!(
            "{}{}.{:016x}",
            base_prefix(),
            std::process::id(),
            hasher.finish()
        );
        let dir = tmp.join(name);
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                let meta = std::fs::symlink_metadata(&dir).map_err(|e| e.to_string())?;
                if meta.is_dir() && meta.uid() == rustix::process::geteuid().as_raw() {
                    return Ok(dir);
                }
                last = Some(io::Error::other(
                    "made, but not as a directory of this user",
                ));
            }
            // Someone made that name first: it is never used.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => last = Some(error),
            Err(error) => {
                return Err(format!(
                    "no private staging directory can be made in {} ({error})",
                    tmp.display()
                ));
            }
        }
    }
    Err(format!(
        "no private staging directory can be made in {} ({})",
        tmp.display(),
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

/// Removes this user's bases in `tmp` whose process no longer runs.
fn remove_stale_bases(tmp: &Path) {
    let prefix = base_prefix();
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| rest.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|meta| meta.is_dir() && meta.uid() == me);
        if ours && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = remove_all(&entry.path());
        }
    }
}

/// Makes `base` (`0700`) if missing; it must be a directory of this user,
/// not a link, that no one else may write in (it is then closed to them).
pub(crate) fn ensure_private_dir(base: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(base) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let meta = std::fs::symlink_metadata(base)?;
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(io::Error::other(format!(
            "the staging base {} is not a directory of this user",
            base.display()
        )));
    }
    // A directory others may write in is refused, never re-moded: it is a
    // shared one (`/tmp`), and what others placed in it stays theirs. One
    // they may only enter is this user's own, and closed to them.
    if meta.mode() & 0o1022 != 0 {
        return Err(io::Error::other(format!(
            "the staging base {} is open to other users (mode {:o}); name a directory only this user can write in (0700)",
            base.display(),
            meta.mode() & 0o7777
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Removes the staging directories of processes that no longer run.
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = remove_all(&entry.path());
        }
    }
}

/// `remove_dir_all`, after making every directory removable (an overlay
/// leaves its work directory with no permissions).
pub(crate) fn remove_all(dir: &Path) -> io::Result<()> {
    if std::fs::remove_dir_all(dir).is_ok() {
        return Ok(());
    }
    open_up(dir);
    std::fs::remove_dir_all(dir)
}

fn open_up(dir: &Path) {
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                open_up(&entry.path());
            }
        }
    }
}
