//! What a confined command may touch, and how it is confined: the
//! [`Sandbox`] and its builder.

use std::path::PathBuf;
use std::sync::Arc;

use agentcaps_paths::PathPolicy;

use crate::network::NetworkProxy;

/// Confinement for prepared commands: the path policy their files are
/// held to, their network, the output cap, and how their private view is
/// built. Cheap to clone (the path policy and proxy are shared).
///
/// Build one with [`Sandbox::builder`]; run commands with
/// [`Sandbox::run`](crate::Sandbox::run).
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub(crate) paths: Option<PathPolicy>,
    pub(crate) allow_network: bool,
    pub(crate) proxy: Option<Arc<dyn NetworkProxy>>,
    pub(crate) require_kernel_enforcement: bool,
    pub(crate) max_output_bytes: u64,
    pub(crate) view: ViewSettings,
    pub(crate) limits: Limits,
}

/// How commands get their private view (Linux): the helper executable, the
/// staging directory, and the switch that turns the view off.
#[derive(Debug, Clone)]
pub(crate) struct ViewSettings {
    /// Run commands in the private view where the system allows it.
    pub(crate) enabled: bool,
    /// The helper executable; `None`: the process default
    /// (`kernel::view::default_helper`).
    pub(crate) helper: Option<PathBuf>,
    /// Where the staging directories go; `None`: the system's temporary
    /// directory.
    pub(crate) staging: Option<PathBuf>,
    /// Test seam: fail the write-back's commit at this step.
    pub(crate) commit_fault: Option<usize>,
    /// Test seam: kill the process at this step of the write-back's commit.
    pub(crate) commit_kill: Option<usize>,
    /// Cache directories overlaid in the view, their writes discarded.
    pub(crate) cache_dirs: Vec<PathBuf>,
    /// Test seam: the view applies no Landlock (the run must then fail).
    pub(crate) skip_landlock: bool,
    /// Test seam: the view goes without its names layer (the run must then
    /// say `partial`).
    pub(crate) skip_names_layer: bool,
    /// Asked about the write-protected changes of a run before its commit.
    pub(crate) decider: Option<crate::writeback::Decider>,
}

/// Bounds on what one run may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The most processes the command may have at once in its view
    /// (default 512): a fork bomb stops there (`fork` fails with
    /// `EAGAIN`), and the host is unaffected.
    pub max_processes: u64,
    /// The most bytes the view's `/tmp` and `/dev/shm` may hold together
    /// (default 1 GiB; each is a private `tmpfs`).
    pub max_tmp_bytes: u64,
    /// The most bytes of changes a run may stage in its writable roots
    /// (default 4 GiB): a run that staged more commits nothing, and says
    /// so.
    pub max_change_bytes: u64,
}

impl Limits {
    /// With at most `n` processes at once.
    #[must_use]
    pub fn with_max_processes(mut self, n: u64) -> Self {
        self.max_processes = n;
        self
    }

    /// With at most `bytes` in `/tmp` and `/dev/shm` together.
    #[must_use]
    pub fn with_max_tmp_bytes(mut self, bytes: u64) -> Self {
        self.max_tmp_bytes = bytes;
        self
    }

    /// With at most `bytes` of staged changes.
    #[must_use]
    pub fn with_max_change_bytes(mut self, bytes: u64) -> Self {
        self.max_change_bytes = bytes;
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_processes: 512,
            max_tmp_bytes: 1 << 30,
            max_change_bytes: 4 << 30,
        }
    }
}

impl Default for ViewSettings {
    fn default() -> Self {
        ViewSettings {
            enabled: true,
            helper: None,
            staging: None,
            commit_fault: None,
            commit_kill: None,
            cache_dirs: Vec::new(),
            skip_landlock: false,
            skip_names_layer: false,
            decider: None,
        }
    }
}

impl Sandbox {
    /// A builder with no path policy, no network, no requirement of full
    /// enforcement, 100 000 output bytes per stream and the private view on.
    pub fn builder() -> SandboxBuilder {
        SandboxBuilder {
            sandbox: Sandbox {
                paths: None,
                allow_network: false,
                proxy: None,
                require_kernel_enforcement: false,
                max_output_bytes: 100_000,
                view: ViewSettings::default(),
                limits: Limits::default(),
            },
        }
    }

    /// The path policy commands' files are held to, if any.
    pub fn path_policy(&self) -> Option<&PathPolicy> {
        self.paths.as_ref()
    }
}

/// Builds a [`Sandbox`]. Every setting has a safe default.
#[derive(Debug, Clone)]
#[must_use]
pub struct SandboxBuilder {
    sandbox: Sandbox,
}

impl SandboxBuilder {
    /// Hold commands' files to `paths`: in the private view only its roots
    /// exist (read-only ones read-only), blocked entries are absent and
    /// writes are judged by it before they land.
    pub fn path_policy(mut self, paths: Option<PathPolicy>) -> Self {
        self.sandbox.paths = paths;
        self
    }

    /// Let commands use the host's network (off by default).
    ///
    /// # Security
    ///
    /// On, commands reach every address the host can, loopback and the
    /// cloud metadata address included.
    pub fn allow_network(mut self, on: bool) -> Self {
        self.sandbox.allow_network = on;
        self
    }

    /// Commands reach the web only through `proxy` (see [`NetworkProxy`]).
    pub fn network_proxy(mut self, proxy: Option<Arc<dyn NetworkProxy>>) -> Self {
        self.sandbox.proxy = proxy;
        self
    }

    /// Refuse to run when the kernel cannot enforce everything.
    pub fn require_kernel_enforcement(mut self, on: bool) -> Self {
        self.sandbox.require_kernel_enforcement = on;
        self
    }

    /// Keep at most `bytes` of each output stream.
    pub fn max_output_bytes(mut self, bytes: u64) -> Self {
        self.sandbox.max_output_bytes = bytes;
        self
    }

    /// The executable that builds the private view: any program that calls
    /// [`kernel::view::dispatch`](crate::kernel::view::dispatch) first.
    /// `None`: the one this process registered (by calling `dispatch`).
    pub fn view_helper(mut self, path: Option<PathBuf>) -> Self {
        self.sandbox.view.helper = path;
        self
    }

    /// Where each run's private staging directory is made (`None`: a
    /// directory of this user in the system's temporary directory).
    pub fn staging_dir(mut self, path: Option<PathBuf>) -> Self {
        self.sandbox.view.staging = path;
        self
    }

    /// Run commands in the private view where the system allows it (the
    /// default).
    ///
    /// # Security
    ///
    /// Off, blocked entries inside the roots are not masked, and a
    /// command's writes land unjudged.
    pub fn private_view(mut self, on: bool) -> Self {
        self.sandbox.view.enabled = on;
        self
    }

    /// Cache directories commands see writable in their view, whose writes
    /// are discarded when the command ends.
    pub fn cache_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.sandbox.view.cache_dirs = dirs;
        self
    }

    /// Bounds on processes, temporary files and staged changes
    /// ([`Limits::default`] unless set).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.sandbox.limits = limits;
        self
    }

    /// Test seam, not for production: the view applies no Landlock domain
    /// while the runner plans one, so that the run must fail (`view-failed`):
    /// a result says `full` only for what the view confirmed it applied.
    #[doc(hidden)]
    pub fn skip_landlock_in_view(mut self, on: bool) -> Self {
        self.sandbox.view.skip_landlock = on;
        self
    }

    /// Test seam, not for production: the view goes without its names
    /// layer, as where FUSE cannot be had, so that the run says `partial`.
    #[doc(hidden)]
    pub fn skip_names_layer_in_view(mut self, on: bool) -> Self {
        self.sandbox.view.skip_names_layer = on;
        self
    }

    /// Test seam, not for production: make the write-back's commit fail at
    /// its `step`-th operation on the real tree.
    #[doc(hidden)]
    pub fn fail_commit_at(mut self, step: Option<usize>) -> Self {
        self.sandbox.view.commit_fault = step;
        self
    }

    /// Test seam, not for production: kill this process (`SIGKILL`) at the
    /// write-back commit's `step`-th operation on the real tree, as a crash
    /// would.
    #[doc(hidden)]
    pub fn kill_commit_at(mut self, step: Option<usize>) -> Self {
        self.sandbox.view.commit_kill = step;
        self
    }

    /// Asks `decider` about each run's write-protected changes (a
    /// workflow, `.cargo/config.toml`, a commit that records one) before
    /// its write-back commits: the approved ones land with the rest, the
    /// others stay refused. Without one they are refused.
    pub fn write_back_decider(
        mut self,
        decider: std::sync::Arc<dyn crate::writeback::WriteBackDecider>,
    ) -> Self {
        self.sandbox.view.decider = Some(crate::writeback::Decider(decider));
        self
    }

    /// The sandbox.
    pub fn build(self) -> Sandbox {
        self.sandbox
    }
}
