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
            static SWEPT: std::sync::Once = std::sync::Once::new();
            SWEPT.call_once(|| sweep(hierarchy));
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

/// Removes the cgroups of runners that are gone (a crash, a `SIGKILL`
/// before a run's cgroup was removed): `agentcaps-PID-N` whose `PID` is no
/// process. A cgroup that still holds a process cannot be removed, and is
/// left.
fn sweep(hierarchy: &Path) {
    let Ok(entries) = std::fs::read_dir(hierarchy) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix("agentcaps-"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, n)| {
                n.parse::<u64>().ok()?;
                pid.parse::<u32>().ok()
            })
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that no process has (the kernel's largest is below it).
    const GONE: u32 = 4_194_304 + 7;

    #[test]
    fn a_crashed_runners_cgroup_is_swept_and_a_live_ones_kept() {
        let Some(hierarchy) = HIERARCHIES
            .iter()
            .map(Path::new)
            .find(|h| h.join("cgroup.procs").exists())
            .filter(|_| rustix::process::geteuid().is_root())
        else {
            panic!(
                "this test needs root and a writable cgroup hierarchy (CI and this machine have both)"
            );
        };
        let stale = hierarchy.join(format!("agentcaps-{GONE}-3"));
        let live = hierarchy.join(format!("agentcaps-{}-{}", std::process::id(), u64::MAX));
        let other = hierarchy.join(format!("agentcaps-other-{GONE}"));
        for dir in [&stale, &live, &other] {
            std::fs::create_dir(dir).expect("a cgroup");
        }
        sweep(hierarchy);
        let (stale_left, live_left, other_left) = (stale.exists(), live.exists(), other.exists());
        for dir in [&stale, &live, &other] {
            let _ = std::fs::remove_dir(dir);
        }
        assert!(!stale_left, "a gone runner's cgroup was kept");
        assert!(live_left, "this runner's own cgroup was removed");
        assert!(other_left, "a cgroup of another name was removed");
    }
}
