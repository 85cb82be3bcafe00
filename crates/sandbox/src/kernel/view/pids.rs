//! A `pids` cgroup per run, for a runner that is root.
//!
//! The view bounds its processes with `RLIMIT_NPROC`, which the kernel
//! counts per user namespace — but never for processes whose user is the
//! host's root (the view's user is the runner's). A runner that is root
//! puts each view in a `pids` cgroup of its own (`pids.max`) instead, where
//! the cgroup file system is writable; the helper joins it before it makes
//! the view, so every process of the view is in it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where `pids` cgroups are made: the v1 controller's hierarchy, or the
/// unified hierarchy where it is mounted alone.
const HIERARCHIES: &[&str] = &["/sys/fs/cgroup/pids", "/sys/fs/cgroup"];

/// One run's cgroup, removed when dropped (once its processes are gone).
#[derive(Debug)]
pub(crate) struct PidsCgroup {
    dir: PathBuf,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl PidsCgroup {
    /// A cgroup holding at most `max_processes` processes (plus the
    /// helper's two), when this process is root and one can be made;
    /// otherwise `None` (and `RLIMIT_NPROC` holds the view).
    pub(crate) fn for_root(max_processes: u64) -> Option<Self> {
        if max_processes == 0 || !rustix::process::geteuid().is_root() {
            return None;
        }
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        HIERARCHIES.iter().find_map(|hierarchy| {
            let hierarchy = Path::new(hierarchy);
            if !hierarchy.join("cgroup.procs").exists() {
                return None;
            }
            let dir = hierarchy.join(format!("agentcaps-{}-{n}", std::process::id()));
            std::fs::create_dir(&dir).ok()?;
            let cgroup = Self { dir };
            std::fs::write(cgroup.dir.join("pids.max"), (max_processes + 2).to_string()).ok()?;
            Some(cgroup)
        })
    }

    /// The cgroup's directory.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Its last process (the helper) may not be reaped yet.
        let dir = std::mem::take(&mut self.dir);
        if std::fs::remove_dir(&dir).is_err() {
            std::thread::spawn(move || {
                for _ in 0..100 {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                    if std::fs::remove_dir(&dir).is_ok() {
                        return;
                    }
                }
            });
        }
    }
}
