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

/// The default base: `agentcaps-view-UID` in the system's temporary
/// directory.
pub(crate) fn default_base() -> PathBuf {
    std::env::temp_dir().join(format!(
        "agentcaps-view-{}",
        rustix::process::geteuid().as_raw()
    ))
}

fn ensure_private_dir(base: &Path) -> io::Result<()> {
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
