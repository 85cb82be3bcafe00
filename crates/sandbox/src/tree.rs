//! A started command together with every process it starts, so that all
//! of them can be killed at once: on Unix the command leads a process
//! group of its own (one `SIGKILL` to the group), on Windows it runs in a
//! Job object (every process it creates joins the job; terminating the job
//! ends them all). A tree dropped before its first process was reaped (a
//! cancelled run) kills itself whole: on Unix until it is disarmed, on
//! Windows by closing the job.

use std::process::ExitStatus;

/// A command's first process and the group (Unix) or job (Windows) that
/// holds everything it started.
pub(crate) struct ProcessTree {
    #[cfg(not(windows))]
    child: tokio::process::Child,
    /// The process group's id: the leader's pid, taken at spawn (a reaped
    /// leader no longer says it).
    #[cfg(not(windows))]
    group: Option<u32>,
    /// Kill the group when dropped (until the leader is reaped: then the
    /// group's id may be reused).
    #[cfg(not(windows))]
    armed: bool,
    /// The first process is the reaper (`EXEC_ARG`): it kills whatever
    /// the command left, however detached, when asked with `SIGTERM` — a
    /// `SIGKILL` of the group would end it first and leave the detached.
    #[cfg(not(windows))]
    reaper: bool,
    #[cfg(windows)]
    child: Box<dyn process_wrap::tokio::ChildWrapper>,
}

#[cfg(not(windows))]
impl From<tokio::process::Child> for ProcessTree {
    /// A child started in a new process group of its own
    /// ([`crate::run::prepare`] asks for one).
    fn from(child: tokio::process::Child) -> Self {
        Self::new(child, false)
    }
}

/// How long the reaper gets to end what the command left, once asked.
#[cfg(not(windows))]
const REAPER_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

#[cfg(not(windows))]
impl ProcessTree {
    /// A child started in a new process group of its own; `reaper`: the
    /// child is the reaper, which ends the tree itself.
    pub(crate) fn new(child: tokio::process::Child, reaper: bool) -> Self {
        let group = child.id();
        Self {
            child,
            group,
            armed: true,
            reaper,
        }
    }

    /// Ends the whole tree before its first process was reaped, and reaps
    /// that: a reaper is asked first (and given [`REAPER_GRACE`]), then
    /// the group is killed.
    pub(crate) async fn stop(&mut self) -> std::io::Result<ExitStatus> {
        if self.reaper {
            self.signal_leader(rustix::process::Signal::TERM);
            if let Ok(status) = tokio::time::timeout(REAPER_GRACE, self.child.wait()).await {
                // The reaper reaped its tree: the group is empty, and its
                // id no longer ours to signal.
                return status;
            }
        }
        self.kill();
        self.wait_leader().await
    }

    fn signal_leader(&self, signal: rustix::process::Signal) {
        if let Some(pid) = self.leader() {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }

    /// The leader's pid, which is also the group's id.
    fn leader(&self) -> Option<rustix::process::Pid> {
        self.group
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
    }
}

impl ProcessTree {
    /// Spawn `cmd` (prepared by [`crate::run::prepare`]) inside a new
    /// Job object that is terminated when the tree is dropped.
    #[cfg(windows)]
    pub(crate) fn spawn(cmd: tokio::process::Command) -> std::io::Result<Self> {
        use process_wrap::tokio::{CommandWrap, JobObject, KillOnDrop};
        let mut wrap = CommandWrap::from(cmd);
        wrap.wrap(JobObject).wrap(KillOnDrop);
        Ok(Self {
            child: wrap.spawn()?,
        })
    }

    /// Ends the whole job and reaps its first process.
    #[cfg(windows)]
    pub(crate) async fn stop(&mut self) -> std::io::Result<ExitStatus> {
        self.kill();
        self.wait_leader().await
    }

    /// The pipe to the first process's standard input, once.
    pub(crate) fn take_stdin(&mut self) -> Option<tokio::process::ChildStdin> {
        #[cfg(not(windows))]
        return self.child.stdin.take();
        #[cfg(windows)]
        return self.child.stdin().take();
    }

    /// The pipe from the first process's standard output, once.
    pub(crate) fn take_stdout(&mut self) -> Option<tokio::process::ChildStdout> {
        #[cfg(not(windows))]
        return self.child.stdout.take();
        #[cfg(windows)]
        return self.child.stdout().take();
    }

    /// The pipe from the first process's standard error, once.
    pub(crate) fn take_stderr(&mut self) -> Option<tokio::process::ChildStderr> {
        #[cfg(not(windows))]
        return self.child.stderr.take();
        #[cfg(windows)]
        return self.child.stderr().take();
    }

    /// Waits for the first process only (not for what it left running:
    /// [`ProcessTree::kill`] ends that).
    pub(crate) async fn wait_leader(&mut self) -> std::io::Result<ExitStatus> {
        #[cfg(not(windows))]
        return self.child.wait().await;
        // The job's own wait also waits for every process of the job; the
        // wrapped child is the first process itself.
        #[cfg(windows)]
        return self.child.inner_mut().wait().await;
    }

    /// Kills every process of the tree that is still running (a group or
    /// job already empty is not an error).
    ///
    /// On Unix the group's id is the leader's pid, which is not reused
    /// while the leader is unreaped or any member of the group lives: call
    /// it before [`ProcessTree::wait_leader`] returns or right after (as
    /// the runner does), never once the tree is known to be empty.
    pub(crate) fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.leader() {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        #[cfg(windows)]
        let _ = self.child.start_kill();
    }

    /// Stops a drop from killing the group: its leader was reaped and its
    /// id may soon belong to another group (on Windows, nothing to do: the
    /// job's handle is this tree's own).
    pub(crate) fn disarm(&mut self) {
        #[cfg(not(windows))]
        {
            self.armed = false;
        }
    }

    /// Waits for the first process on a task of its own (or, outside a
    /// runtime, lets tokio's orphan queue reap it); on Windows the job is
    /// closed, and so emptied, when that wait ends.
    pub(crate) fn reap_in_background(mut self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = self.wait_leader().await;
                });
            }
            Err(_) => drop(self),
        }
    }
}

impl Drop for ProcessTree {
    /// A run cancelled at any await (its future dropped) kills the whole
    /// tree, not only the first process: what it started before it could
    /// arrange for its own end goes too.
    fn drop(&mut self) {
        #[cfg(not(windows))]
        if self.armed {
            // The reaper, asked, kills everything beneath it, the detached
            // too; a group kill would end it first.
            if self.reaper {
                self.signal_leader(rustix::process::Signal::TERM);
            } else {
                self.kill();
            }
        }
    }
}
