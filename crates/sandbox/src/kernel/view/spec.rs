//! What the runner hands the view helper: the mounts that make the view,
//! the command, and the second wall. Written as JSON into the run's staging
//! directory; the helper writes its [`Outcome`] beside it.

use std::path::PathBuf;

/// One step of building the view, in order. Every `target` is the path the
/// entry has inside the view (and so, before the view's root is entered,
/// beneath the new root directory).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(crate) enum Mount {
    /// Bind `source` (a file or a directory) at `target`, read-only unless
    /// `writable` (devices).
    Bind {
        /// The host path.
        source: PathBuf,
        /// Where it appears in the view.
        target: PathBuf,
        /// Leave it writable (only the few devices are).
        writable: bool,
    },
    /// A fresh, private `tmpfs` (`/tmp`, `/dev`, `/dev/shm`).
    Tmpfs {
        /// Where it appears in the view.
        target: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A symbolic link created in the view (`/bin -> usr/bin`).
    Symlink {
        /// Where it appears in the view.
        target: PathBuf,
        /// What it points to.
        points_to: PathBuf,
    },
    /// A private `devpts` instance, with `/dev/ptmx` pointing into it.
    Devpts {
        /// Where it appears in the view (`/dev/pts`).
        target: PathBuf,
    },
    /// A fresh `proc` for the view's own PID namespace.
    Proc {
        /// Where it appears in the view (`/proc`).
        target: PathBuf,
    },
    /// A root of the path policy: the real tree below the mask layer (the
    /// blocked entries as whiteouts and opaque directories), and for a
    /// writable root a private staging directory above, which records
    /// every change. A read-only root without masks is a read-only bind.
    Overlay {
        /// The real directory (also where it appears in the view).
        target: PathBuf,
        /// The mask layer, when something in the root is masked.
        masks: Option<PathBuf>,
        /// Upper and work directories, for a writable root.
        upper: Option<(PathBuf, PathBuf)>,
        /// The root's index in the names layer, which then lies between
        /// the masks and the real tree (see [`NamesMount`]).
        #[serde(default)]
        names: Option<usize>,
    },
}

/// The names layer of the view: a read-only file system the runner serves
/// (see the `names` module), mounted by the view's first process at
/// `mount_point` and handed to the runner at `socket`, before the
/// overlays that hold it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct NamesMount {
    /// Where it is mounted (in the run's staging directory).
    pub(crate) mount_point: PathBuf,
    /// The runner's UNIX socket that takes its `/dev/fuse` descriptor.
    pub(crate) socket: PathBuf,
}

/// What the helper needs to build the view and start the command.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct ViewSpec {
    /// The directory the new root is built on (inside the staging dir).
    pub(crate) new_root: PathBuf,
    /// The steps, in order.
    pub(crate) mounts: Vec<Mount>,
    /// A private network namespace (only loopback) for the command.
    pub(crate) private_network: bool,
    /// The resolved program.
    pub(crate) program: PathBuf,
    /// The argv (`argv[0]` as the program sees it).
    pub(crate) argv: Vec<String>,
    /// The working directory, inside the view.
    pub(crate) cwd: PathBuf,
    /// The whole environment of the command.
    pub(crate) env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// Landlock inside the view: directories to read and execute beneath.
    pub(crate) landlock_read: Vec<PathBuf>,
    /// Landlock inside the view: directories to write beneath.
    pub(crate) landlock_write: Vec<PathBuf>,
    /// The highest Landlock ABI to use (`Some(0)`: none).
    pub(crate) max_abi: Option<u8>,
    /// The network proxy's port in the view, its listener handed to the
    /// proxy by the view's first process.
    #[serde(default)]
    pub(crate) proxy: Option<ProxyPort>,
    /// No new root: the command sees the host's files (there is no path
    /// policy), in new user, PID, IPC and network namespaces all the same.
    #[serde(default)]
    pub(crate) host_files: bool,
    /// The names layer, when the runner serves one.
    #[serde(default)]
    pub(crate) names: Option<NamesMount>,
    /// What the runner sets for this one run (its pid, limits, seams).
    #[serde(default)]
    pub(crate) run: RunSettings,
}

/// What the runner sets for one run, beside what the plan says the view
/// holds.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct RunSettings {
    /// The runner's process id: the helper ends when its runner is gone.
    pub(crate) runner_pid: u32,
    /// The most processes the command's user may have in the view
    /// (`RLIMIT_NPROC`, counted in the view's user namespace); 0: no limit.
    pub(crate) max_processes: u64,
    /// The most bytes one file may grow to (`RLIMIT_FSIZE`); 0: no limit.
    pub(crate) max_file_bytes: u64,
    /// The most bytes each writable `tmpfs` of the view (`/tmp`, `/dev/shm`,
    /// a private home) may hold; 0: the kernel's default.
    pub(crate) tmpfs_bytes: u64,
    /// A `pids` cgroup the helper joins before it makes the view (when the
    /// runner is root, whose processes `RLIMIT_NPROC` does not count).
    pub(crate) pids_cgroup: Option<PathBuf>,
    /// Test seam: apply no Landlock inside the view (the runner must then
    /// refuse the run's result, since it planned a domain).
    pub(crate) skip_landlock: bool,
    /// The command executes nothing but its program and the loader: its
    /// nested domain holds the execute-only wall too.
    #[serde(default)]
    pub(crate) exec_only_program: bool,
    /// The first run of its process, where no probe ran: the outer stage
    /// tries what a system may refuse (the probe's steps) before it starts
    /// anything of the command, and says what it found in [`PROBE_FILE`].
    #[serde(default)]
    pub(crate) probe: bool,
    /// The runner's [`SOURCES_MARK`](super::SOURCES_MARK): a helper built
    /// from other sources refuses the spec.
    #[serde(default)]
    pub(crate) sources: String,
}

/// What the view's first process applied, as the kernel answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Applied {
    /// The Landlock ABI level of the domain applied (0: none).
    pub(crate) landlock_abi: u8,
    /// Whether the kernel said the domain is fully enforced, with
    /// `no_new_privs`.
    pub(crate) landlock_full: bool,
    /// Whether the command runs in a domain nested inside the first
    /// process's (so that it cannot trace or signal it).
    pub(crate) nested: bool,
    /// Whether that nested domain lets the command execute only its
    /// program and the loader.
    #[serde(default)]
    pub(crate) exec_only: bool,
    /// Whether the names layer is mounted beneath the roots' masks.
    #[serde(default)]
    pub(crate) names: bool,
}

/// One message of the view's first process to the helper's outer stage,
/// over a pipe only they hold (one JSON object a line).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Report {
    /// The walls are up and the command started.
    Applied(Applied),
    /// How it ended.
    Outcome(Outcome),
}

/// What the first process reported, as the runner reads it from the
/// outcome file, where the helper's outer stage (which nothing in the view
/// can reach) copies each [`Report`] line as it comes: the last of each
/// kind counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reported {
    /// The walls, as applied.
    pub(crate) applied: Option<Applied>,
    /// How the run ended.
    pub(crate) outcome: Option<Outcome>,
}

impl Reported {
    /// Reads the lines of an outcome file; lines that do not parse (one
    /// cut short by a kill) are ignored.
    pub(crate) fn parse(text: &[u8]) -> Self {
        let mut reported = Reported::default();
        for line in text.split(|b| *b == b'\n') {
            match serde_json::from_slice::<Report>(line) {
                Ok(Report::Applied(applied)) => reported.applied = Some(applied),
                Ok(Report::Outcome(outcome)) => reported.outcome = Some(outcome),
                Err(_) => {}
            }
        }
        reported
    }
}

/// The variable that tells the first process which descriptor is its end
/// of the report pipe.
pub(crate) const REPORT_FD_VAR: &str = "AGENTCAPS_VIEW_REPORT_FD";

/// The network proxy's port in a view and the socket to hand it to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ProxyPort {
    /// The port on the view's loopback.
    pub(crate) port: u16,
    /// The proxy's UNIX socket on the host (reached before the view's
    /// root replaces the host's).
    pub(crate) socket: PathBuf,
}

/// How the helper's run ended, as it writes it into the staging dir.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// The namespaces could not be created here: nothing ran. (Only the
    /// probe decides whether views exist; for a run this is a failure,
    /// unless the run is the probe, whose [`PROBE_FILE`] then says so.)
    Unavailable(String),
    /// The view could not be built, or the command could not be started:
    /// nothing ran.
    Failed(String),
    /// The program could not be started (`io::ErrorKind` as text, message).
    SpawnFailed(String, String),
    /// The command exited with this code.
    Exited(i32),
    /// The command was killed by this signal.
    Signaled(i32),
}

/// The name of the spec file in a staging dir.
pub(crate) const SPEC_FILE: &str = "spec.json";
/// The name of the outcome file in a staging dir.
pub(crate) const OUTCOME_FILE: &str = "outcome.json";
/// The name of the file holding the inner stage's process id (as the
/// host sees it).
pub(crate) const INNER_PID_FILE: &str = "inner.pid";
/// The name of the file the outer stage writes once the inner stage (and
/// so every process of the view) is gone: the outer stage's exit code.
/// The runner needs no more than this and the end of the output pipes;
/// the kernel's slower teardown of the namespaces is not waited for.
pub(crate) const DONE_FILE: &str = "done";
/// The name of the file where the outer stage of a probing run says what
/// its probe found: [`PROBE_PASSED`], written before the view's first
/// process is started, or `unavailable` and why on a line of its own,
/// written instead of starting it.
pub(crate) const PROBE_FILE: &str = "probe";
/// What the probe file holds when a view can be built here.
pub(crate) const PROBE_PASSED: &str = "ok";
