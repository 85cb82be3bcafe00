//! The shell policy: what may run, where, with what environment.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use agentcaps_paths::{FileSystem, PathPolicy, RealFs};

use crate::env::{self, DEFAULT_INHERITED, Inherit};
use crate::error::ShellError;
use crate::identity::{identity, is_bare};
use crate::program::Found;
use crate::request::{CommandRequest, ValidatedCommand};
use crate::rules::{ProgramRules, RuleSet};
use crate::waiver::Waivers;

/// The `read_only` preset's commands. `env` is left out on
/// purpose: it is a launcher.
pub const READ_ONLY_COMMANDS: &[&str] = &[
    "ls", "cat", "head", "tail", "pwd", "echo", "wc", "date", "whoami", "which", "file",
];

/// What the `development` preset adds to [`READ_ONLY_COMMANDS`].
pub const DEVELOPMENT_COMMANDS: &[&str] = &[
    "env", "git", "npm", "yarn", "pnpm", "mvn", "gradle", "sbt", "make", "cmake", "grep", "find",
    "rg", "fd", "ag", "cp", "mv", "mkdir", "touch", "rm", "pip", "pip3", "poetry", "cargo", "go",
];

/// A command is refused when its checks would cost more lookups than this.
pub const LOOKUP_BUDGET: u64 = 20_000;

/// The most bytes of standard input a request may give (where allowed).
pub const MAX_STDIN_BYTES: usize = 1 << 20;

/// An argument longer than this many characters is refused.
pub const MAX_ARGUMENT_CHARS: usize = 4096;

/// When Windows option rules (such as `sort /O`) apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum WindowsRules {
    /// On Windows hosts only.
    #[default]
    Auto,
    /// Everywhere (for commands that will also run on Windows).
    Always,
}

/// What an agent's commands may do. Cheap to clone; `Send + Sync`.
///
/// Build one with [`ShellPolicy::read_only`], [`ShellPolicy::builder`],
/// [`ShellPolicyConfig::build`](crate::ShellPolicyConfig::build), or — not a
/// sandbox — [`danger::development`].
#[derive(Debug, Clone)]
pub struct ShellPolicy {
    pub(crate) allowed: Vec<String>,
    pub(crate) programs: Vec<PathBuf>,
    pub(crate) rules: RuleSet,
    pub(crate) default_rules: bool,
    pub(crate) working_directory: PathBuf,
    pub(crate) paths: Option<PathPolicy>,
    pub(crate) timeout: Duration,
    pub(crate) max_output_bytes: u64,
    pub(crate) inherit: Inherit,
    pub(crate) environment: BTreeMap<String, String>,
    pub(crate) unwrap_launchers: bool,
    pub(crate) agent_environment: bool,
    pub(crate) stdin: bool,
    pub(crate) windows_rules: bool,
    pub(crate) allow_network: bool,
    pub(crate) require_kernel_enforcement: bool,
    pub(crate) view: ViewSettings,
    /// Test seam: `sed` scripts and `awk` programs are not scanned.
    pub(crate) skip_script_scan: bool,
    pub(crate) found: Found,
    /// The judging proxy commands reach the web through, if any.
    #[cfg(feature = "runner")]
    pub(crate) proxy: Option<std::sync::Arc<dyn agentcaps_sandbox::NetworkProxy>>,
}

impl ShellPolicy {
    /// A builder with the `read_only` preset's commands, the
    /// default environment and rules, a 30 s timeout and 100 000 output
    /// bytes per stream. Add a path policy with
    /// [`ShellPolicyBuilder::path_policy`]: without one, `cat` can read
    /// anything this process can.
    pub fn read_only(working_directory: impl Into<PathBuf>) -> ShellPolicyBuilder {
        let mut builder = Self::builder(working_directory);
        builder.allowed = READ_ONLY_COMMANDS.iter().map(|s| (*s).to_owned()).collect();
        builder
    }

    /// A builder that allows no command yet.
    pub fn builder(working_directory: impl Into<PathBuf>) -> ShellPolicyBuilder {
        ShellPolicyBuilder {
            allowed: Vec::new(),
            programs: Vec::new(),
            rules: Vec::new(),
            default_rules: true,
            working_directory: working_directory.into(),
            paths: None,
            timeout: Duration::from_millis(30_000),
            max_output_bytes: 100_000,
            inherit: Inherit::Named(DEFAULT_INHERITED.iter().map(|s| (*s).to_owned()).collect()),
            environment: BTreeMap::new(),
            unwrap_launchers: false,
            agent_environment: false,
            stdin: false,
            windows_rules: WindowsRules::Auto,
            allow_network: false,
            require_kernel_enforcement: false,
            view: ViewSettings::default(),
            skip_script_scan: false,
        }
    }

    /// Judge `request` on the host's file system: program, options,
    /// file arguments, environment and bounds.
    ///
    /// Synchronous and runtime-free. Nothing runs; with a path policy, the
    /// checks make at most 20 000 lookups, and a command that would need
    /// more is refused before the first.
    ///
    /// # Errors
    ///
    /// A refusal ([`ShellError::is_refusal`]) naming the rule, or
    /// [`ShellError::ProgramNotFound`] / [`ShellError::PathIo`].
    ///
    /// # Security
    ///
    /// Without a path policy, arguments are not looked at as files: an
    /// allowed `cat` reads anything this process can.
    pub fn validate(&self, request: &CommandRequest) -> Result<ValidatedCommand, ShellError> {
        self.validate_on(&RealFs, request)
    }

    /// [`ShellPolicy::validate`] with the path checks made on `fs` (a
    /// [`SimFs`](agentcaps_paths::SimFs) in tests, to count lookups). The
    /// program itself is still looked up in the real `PATH`.
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::validate`].
    pub fn validate_on(
        &self,
        fs: &dyn FileSystem,
        request: &CommandRequest,
    ) -> Result<ValidatedCommand, ShellError> {
        crate::validate::validate(self, fs, request, &Waivers::none())
    }

    /// [`ShellPolicy::validate`] with the refusals in `waivers` let through
    /// (each one exactly: its rule and the program it names); every other
    /// check is made as always. A host calls it only for the exact command
    /// a person approved.
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::validate`].
    pub fn validate_waiving(
        &self,
        request: &CommandRequest,
        waivers: &Waivers,
    ) -> Result<ValidatedCommand, ShellError> {
        crate::validate::validate(self, &RealFs, request, waivers)
    }

    /// The allowed command names.
    pub fn allowed_commands(&self) -> &[String] {
        &self.allowed
    }

    /// The absolute program paths the host listed.
    pub fn allowed_programs(&self) -> &[PathBuf] {
        &self.programs
    }

    /// The default working directory.
    pub fn working_directory(&self) -> &Path {
        &self.working_directory
    }

    /// The path policy file arguments are held to, if any.
    pub fn path_policy(&self) -> Option<&PathPolicy> {
        self.paths.as_ref()
    }

    /// The longest a command may run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The most bytes kept of each output stream.
    pub fn max_output_bytes(&self) -> u64 {
        self.max_output_bytes
    }

    /// The names a command inherits, or `None` when it inherits the whole
    /// environment (the `development` preset).
    pub fn inherited_environment(&self) -> Option<&[String]> {
        match &self.inherit {
            Inherit::Named(names) => Some(names),
            Inherit::All => None,
        }
    }

    /// The variables the host sets for every command.
    pub fn environment(&self) -> &BTreeMap<String, String> {
        &self.environment
    }

    /// The option rule tables in force.
    pub fn rules(&self) -> impl Iterator<Item = &ProgramRules> {
        self.rules.tables()
    }

    /// Whether launchers (`env cmd`, `timeout 5 cmd`, …) are unwrapped and
    /// their inner command judged, rather than refused.
    pub fn unwraps_launchers(&self) -> bool {
        self.unwrap_launchers
    }

    /// Whether a request may give bytes on standard input.
    pub fn allows_stdin(&self) -> bool {
        self.stdin
    }

    /// Whether commands may use the network (kernel enforcement).
    pub fn allows_network(&self) -> bool {
        self.allow_network
    }

    /// Commands reach the web only through `proxy`: in their private
    /// view (only loopback), `proxy` (started per command on a UNIX
    /// socket) accepts their connections on `127.0.0.1:3128`, a listener
    /// the view's first process hands it, and the proxy variables point
    /// there
    /// ([`crate::Network::Proxy`]). Where no view can be built, `proxy`
    /// serves on a free TCP port of `127.0.0.1` instead and Landlock lets
    /// commands connect to that port only (the result says `partial`:
    /// Landlock judges the port, not the host, and leaves UDP alone).
    #[must_use]
    #[cfg(feature = "runner")]
    pub fn with_network_proxy(
        mut self,
        proxy: std::sync::Arc<dyn agentcaps_sandbox::NetworkProxy>,
    ) -> Self {
        self.proxy = Some(proxy);
        self
    }

    /// The judging proxy commands reach the web through, if any.
    #[cfg(feature = "runner")]
    pub fn network_proxy(&self) -> Option<&std::sync::Arc<dyn agentcaps_sandbox::NetworkProxy>> {
        self.proxy.as_ref()
    }

    /// Whether a command is refused when the kernel cannot enforce the
    /// policy.
    pub fn requires_kernel_enforcement(&self) -> bool {
        self.require_kernel_enforcement
    }

    /// Whether the built-in option rules (`file -C`, `date -f`, …) are in
    /// force; off only through [`danger::without_default_rules`]
    /// (`defaults = false`).
    pub fn has_default_rules(&self) -> bool {
        self.default_rules
    }

    /// What this policy weakens compared with the safe defaults, one line
    /// each, for a host to show loudly: the built-in option rules turned
    /// off, no path policy for file arguments, the whole environment
    /// inherited (the `development` preset), variables set by the agent,
    /// launchers unwrapped, the host's network, and the private view
    /// turned off. Empty for a policy with the default protections.
    pub fn loosenings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.default_rules {
            out.push(
                "defaults = false: the built-in option rules (file -C, date -f, find -exec, ...) are off; only the listed rule tables apply"
                    .to_owned(),
            );
        }
        if self.paths.is_none() {
            out.push(
                "path_policy = false: file arguments are not checked against [files]; an allowed cat reads anything this process can"
                    .to_owned(),
            );
        }
        if matches!(self.inherit, Inherit::All) {
            out.push(
                "the whole environment is inherited (preset = development): every command gets the host's secrets, API keys included"
                    .to_owned(),
            );
        }
        if self.agent_environment {
            out.push(
                "allow_agent_environment = true: the agent sets variables for its commands (those that load code are still refused)"
                    .to_owned(),
            );
        }
        if self.unwrap_launchers {
            out.push(
                "unwrap_launchers = true: env, timeout, nice, ... run the inner command they are given once it is judged"
                    .to_owned(),
            );
        }
        if self.allow_network {
            out.push(
                "network = host (allow_network = true): commands use the host's network unfiltered, loopback and the cloud metadata address included"
                    .to_owned(),
            );
        }
        if !self.view.enabled {
            out.push(
                "private view off: blocked entries inside the roots are guarded by the argument checks only, and writes land unjudged"
                    .to_owned(),
            );
        }
        out
    }
}

/// Builds a [`ShellPolicy`]; [`ShellPolicyBuilder::build`] checks it.
#[derive(Debug, Clone)]
#[must_use]
pub struct ShellPolicyBuilder {
    allowed: Vec<String>,
    programs: Vec<PathBuf>,
    rules: Vec<ProgramRules>,
    default_rules: bool,
    working_directory: PathBuf,
    paths: Option<PathPolicy>,
    timeout: Duration,
    max_output_bytes: u64,
    inherit: Inherit,
    environment: BTreeMap<String, String>,
    unwrap_launchers: bool,
    agent_environment: bool,
    stdin: bool,
    windows_rules: WindowsRules,
    allow_network: bool,
    require_kernel_enforcement: bool,
    view: ViewSettings,
    skip_script_scan: bool,
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
    /// Test seam: kill the process at this step of the commit.
    pub(crate) commit_kill: Option<usize>,
    /// Bounds on processes, temporary files and staged changes.
    #[cfg(feature = "runner")]
    pub(crate) limits: agentcaps_sandbox::Limits,
    /// Test seam: the view applies no Landlock while one is planned.
    pub(crate) skip_landlock: bool,
    /// Test seam: the view goes without its names layer.
    pub(crate) skip_names_layer: bool,
    /// Cache directories overlaid in the view, their writes discarded.
    pub(crate) cache_dirs: Vec<PathBuf>,
}

impl Default for ViewSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            helper: None,
            staging: None,
            commit_fault: None,
            commit_kill: None,
            #[cfg(feature = "runner")]
            limits: agentcaps_sandbox::Limits::default(),
            skip_landlock: false,
            skip_names_layer: false,
            cache_dirs: Vec::new(),
        }
    }
}

impl ShellPolicyBuilder {
    /// Allow a command by bare name (looked up in the command's `PATH`).
    pub fn allow_command(mut self, name: impl Into<String>) -> Self {
        self.allowed.push(name.into());
        self
    }

    /// Allow exactly this absolute program path as `argv[0]`.
    pub fn allow_program(mut self, path: impl Into<PathBuf>) -> Self {
        self.programs.push(path.into());
        self
    }

    /// Hold every file argument to `paths`.
    pub fn path_policy(mut self, paths: PathPolicy) -> Self {
        self.paths = Some(paths);
        self
    }

    /// Add an option rule table (extends the table of a program already
    /// present).
    pub fn rules(mut self, table: ProgramRules) -> Self {
        self.rules.push(table);
        self
    }

    /// The longest a command may run; on expiry its whole process group is
    /// killed.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The most bytes kept of each output stream.
    pub fn max_output_bytes(mut self, bytes: u64) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Inherit exactly these names from the host (whichever exist),
    /// replacing the default list.
    pub fn inherit_only<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inherit = Inherit::Named(names.into_iter().map(Into::into).collect());
        self
    }

    /// Set a variable for every command (the host's choice, not checked
    /// against the agent's refusal list).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.environment.insert(name.into(), value.into());
        self
    }

    /// Unwrap launchers (`env`, `nice`, `nohup`, `timeout`, `stdbuf`,
    /// `time`, `command`, `setsid`) and judge their inner command, instead
    /// of refusing them. The launcher itself must be allowed too. An allowed
    /// shell given exactly `-c STRING` is unwrapped as well: the string is
    /// split like a command string (no expansion; operators, and the
    /// characters a shell would expand, refused), judged as that command,
    /// and run without the shell.
    pub fn unwrap_launchers(mut self, on: bool) -> Self {
        self.unwrap_launchers = on;
        self
    }

    /// Let the agent set variables ([`CommandRequest::env`]); names that
    /// make a child load or run code are still refused.
    pub fn allow_agent_environment(mut self, on: bool) -> Self {
        self.agent_environment = on;
        self
    }

    /// Let a request give bytes on standard input (at most
    /// [`MAX_STDIN_BYTES`]); otherwise stdin is closed.
    pub fn allow_stdin(mut self, on: bool) -> Self {
        self.stdin = on;
        self
    }

    /// When Windows option rules apply.
    pub fn windows_rules(mut self, mode: WindowsRules) -> Self {
        self.windows_rules = mode;
        self
    }

    /// Let commands use the network (kernel enforcement; off by default).
    pub fn allow_network(mut self, on: bool) -> Self {
        self.allow_network = on;
        self
    }

    /// Refuse to run when the kernel cannot enforce the policy.
    pub fn require_kernel_enforcement(mut self, on: bool) -> Self {
        self.require_kernel_enforcement = on;
        self
    }

    /// The executable that builds the private view (see
    /// [`kernel::view`](crate::kernel::view)): the `agentcaps` binary, the
    /// `agentcaps-view` binary of this crate, or any program that calls
    /// [`kernel::view::dispatch`](crate::kernel::view::dispatch) first.
    /// Default: the one this process registered (by calling `dispatch`).
    #[cfg(feature = "runner")]
    pub fn view_helper(mut self, path: impl Into<PathBuf>) -> Self {
        self.view.helper = Some(path.into());
        self
    }

    /// Where each run's private staging directory is made (default: a
    /// directory of this user in the system's temporary directory). It
    /// must lie outside every root, on a file system with user extended
    /// attributes.
    #[cfg(feature = "runner")]
    pub fn staging_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.view.staging = Some(path.into());
        self
    }

    /// Run commands in the private view where the system allows it (the
    /// default). Off, every command gets the fallback confinement, reported
    /// as `partial` — as on a system without user namespaces; meant for
    /// tests of that path.
    ///
    /// # Security
    ///
    /// Off, blocked entries inside the roots are guarded by the argument
    /// checks only, and a command's writes land unjudged.
    #[cfg(feature = "runner")]
    pub fn private_view(mut self, on: bool) -> Self {
        self.view.enabled = on;
        self
    }

    /// Cache directories (a package manager's download cache) that
    /// commands see in their view, writable, and whose writes are
    /// **discarded** when the command ends: a cache written by an agent is
    /// a place to plant code. Never list a directory that holds
    /// configuration. Those that do not exist are skipped.
    #[cfg(feature = "runner")]
    pub fn cache_dirs<I, P>(mut self, dirs: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.view.cache_dirs = dirs.into_iter().map(Into::into).collect();
        self
    }

    /// Bounds on what each command may take: processes, temporary files,
    /// staged changes (see [`Limits`](agentcaps_sandbox::Limits); its
    /// defaults unless set).
    #[cfg(feature = "runner")]
    pub fn limits(mut self, limits: agentcaps_sandbox::Limits) -> Self {
        self.view.limits = limits;
        self
    }

    /// Test seam, not for production: the view applies no Landlock domain
    /// while one is planned, so every run fails (`view-failed`).
    #[cfg(feature = "runner")]
    #[doc(hidden)]
    pub fn skip_landlock_in_view(mut self, on: bool) -> Self {
        self.view.skip_landlock = on;
        self
    }

    /// Test seam, not for production: the view goes without its names
    /// layer (as where FUSE cannot be had), so every run in it says
    /// `partial`.
    #[cfg(feature = "runner")]
    #[doc(hidden)]
    pub fn skip_names_layer_in_view(mut self, on: bool) -> Self {
        self.view.skip_names_layer = on;
        self
    }

    /// Test seam, not for production: `sed` scripts and `awk` programs are
    /// accepted unscanned, so that tests can show what the kernel holds
    /// when the scanner misses a command (the execute-only wall).
    #[doc(hidden)]
    pub fn skip_script_scan(mut self, on: bool) -> Self {
        self.skip_script_scan = on;
        self
    }

    /// Test seam, not for production: make the write-back's commit fail at
    /// its `step`-th operation on the real tree.
    #[cfg(feature = "runner")]
    #[doc(hidden)]
    pub fn fail_commit_at(mut self, step: usize) -> Self {
        self.view.commit_fault = Some(step);
        self
    }

    /// Test seam, not for production: kill this process (`SIGKILL`) at the
    /// write-back commit's `step`-th operation on the real tree.
    #[cfg(feature = "runner")]
    #[doc(hidden)]
    pub fn kill_commit_at(mut self, step: usize) -> Self {
        self.view.commit_kill = Some(step);
        self
    }

    pub(crate) fn inherit_all(mut self) -> Self {
        self.inherit = Inherit::All;
        self
    }

    /// Check and build the policy.
    ///
    /// # Errors
    ///
    /// [`ShellError::Config`] for a relative working directory, a command
    /// name that is not bare, a program path that is not absolute, an empty
    /// timeout, a bad variable name, or a bad rule table.
    pub fn build(self) -> Result<ShellPolicy, ShellError> {
        let config = |message: String| ShellError::Config { message };
        if !self.working_directory.is_absolute() {
            return Err(config(format!(
                "the working directory {} is not absolute",
                self.working_directory.display()
            )));
        }
        // The path checks need a real location (no links) as their base.
        let working_directory = std::fs::canonicalize(&self.working_directory)
            .unwrap_or_else(|_| normalize(&self.working_directory));
        for name in &self.allowed {
            if name.is_empty() || !is_bare(name) || name.contains('\0') || identity(name).is_empty()
            {
                return Err(config(format!(
                    "allowed command `{name}` must be a bare program name; list paths in \
                     allowed_programs"
                )));
            }
        }
        for program in &self.programs {
            if !program.is_absolute() {
                return Err(config(format!(
                    "allowed program {} is not an absolute path",
                    program.display()
                )));
            }
        }
        if self.timeout.is_zero() {
            return Err(config("the timeout must be longer than zero".to_owned()));
        }
        for (name, value) in &self.environment {
            env::check_host_variable(name, value)?;
        }
        let mut inherit = self.inherit;
        if let Inherit::Named(names) = &mut inherit {
            for name in names.iter() {
                env::check_name(name)?;
            }
            let mut seen = std::collections::HashSet::new();
            names.retain(|name| seen.insert(name.clone()));
        }
        let mut rules = if self.default_rules {
            RuleSet::defaults()?
        } else {
            RuleSet::default()
        };
        for table in self.rules {
            rules.add(table)?;
        }
        let mut allowed = self.allowed;
        allowed.dedup();
        Ok(ShellPolicy {
            allowed,
            programs: self.programs,
            rules,
            default_rules: self.default_rules,
            working_directory,
            paths: self.paths,
            timeout: self.timeout,
            max_output_bytes: self.max_output_bytes,
            inherit,
            environment: self.environment,
            unwrap_launchers: self.unwrap_launchers,
            agent_environment: self.agent_environment,
            stdin: self.stdin,
            windows_rules: match self.windows_rules {
                WindowsRules::Auto => cfg!(windows),
                WindowsRules::Always => true,
            },
            allow_network: self.allow_network,
            require_kernel_enforcement: self.require_kernel_enforcement,
            view: self.view,
            skip_script_scan: self.skip_script_scan,
            found: Found::default(),
            #[cfg(feature = "runner")]
            proxy: None,
        })
    }
}

/// Lexical normalization of an absolute path (`.` dropped, `..` applied).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Loosening a policy past what a sandbox allows.
///
/// # Security
///
/// Everything here weakens the policy on purpose and says so at the call
/// site.
pub mod danger {
    use std::path::PathBuf;

    use super::{DEVELOPMENT_COMMANDS, READ_ONLY_COMMANDS, ShellPolicy, ShellPolicyBuilder};

    /// The `development` preset: `read_only` plus `env`, `git`,
    /// package managers, build tools, `grep`/`find`/`rg`, and `cp mv mkdir
    /// touch rm`; it inherits the **whole** environment, because build
    /// tools need it.
    ///
    /// # Security
    ///
    /// **This is not a sandbox.** These programs run arbitrary code by
    /// design (`make` recipes, `npm` scripts, `cargo` build scripts, git
    /// hooks), and the whole environment — provider API keys included — is
    /// passed to them. The argument checks still apply, but a program can
    /// open any file it likes by itself; only kernel enforcement can stop
    /// that.
    pub fn development(working_directory: impl Into<PathBuf>) -> ShellPolicyBuilder {
        let mut builder = ShellPolicy::builder(working_directory).inherit_all();
        builder.allowed = READ_ONLY_COMMANDS
            .iter()
            .chain(DEVELOPMENT_COMMANDS)
            .map(|s| (*s).to_owned())
            .collect();
        builder
    }

    /// Let commands inherit the host's whole environment.
    ///
    /// # Security
    ///
    /// The host's environment is where provider API keys and other secrets
    /// live; every command, and everything it runs, gets them.
    pub fn inherit_whole_environment(builder: ShellPolicyBuilder) -> ShellPolicyBuilder {
        builder.inherit_all()
    }

    /// Start from no option rules at all (the `defaults = false` of the
    /// policy file): only the tables added with
    /// [`ShellPolicyBuilder::rules`] apply.
    ///
    /// # Security
    ///
    /// This removes the built-in refusals (`file -C`, `date -f`,
    /// `find -exec`, …) that keep an allowed program from reading a file
    /// named in an option, running another program or writing where it
    /// should not. Listed by [`ShellPolicy::loosenings`].
    pub fn without_default_rules(mut builder: ShellPolicyBuilder) -> ShellPolicyBuilder {
        builder.default_rules = false;
        builder
    }
}

#[cfg(test)]
mod tests {
    use super::{ShellPolicy, ShellPolicyBuilder, danger};
    use agentcaps_paths::PathPolicy;

    /// The strict starting point: `read_only` with a path policy.
    fn strict(dir: &std::path::Path) -> ShellPolicyBuilder {
        let paths = PathPolicy::builder().allow(dir).build().unwrap();
        ShellPolicy::read_only(dir).path_policy(paths)
    }

    /// The loosenings of `loosen(strict)`, after checking the strict
    /// policy has none.
    fn loosenings(loosen: impl FnOnce(ShellPolicyBuilder) -> ShellPolicyBuilder) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let base = strict(dir.path()).build().unwrap();
        assert!(base.loosenings().is_empty(), "{:?}", base.loosenings());
        loosen(strict(dir.path())).build().unwrap().loosenings()
    }

    /// Exactly one loosening, starting with `prefix`.
    fn assert_one(lines: &[String], prefix: &str) {
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with(prefix), "{lines:?}");
    }

    #[test]
    fn default_rules_off_is_listed() {
        let lines = loosenings(danger::without_default_rules);
        assert_one(&lines, "defaults = false: the built-in option rules");
        let dir = tempfile::tempdir().unwrap();
        let policy = danger::without_default_rules(strict(dir.path()))
            .build()
            .unwrap();
        assert!(!policy.has_default_rules());
        assert_eq!(policy.rules().count(), 0);
    }

    #[test]
    fn no_path_policy_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let lines = ShellPolicy::read_only(dir.path())
            .build()
            .unwrap()
            .loosenings();
        assert_one(&lines, "path_policy = false:");
    }

    #[test]
    fn whole_environment_is_listed() {
        let lines = loosenings(danger::inherit_whole_environment);
        assert_one(&lines, "the whole environment is inherited");
    }

    #[test]
    fn development_preset_is_listed() {
        let dir = tempfile::tempdir().unwrap();
        let paths = PathPolicy::builder().allow(dir.path()).build().unwrap();
        let lines = danger::development(dir.path())
            .path_policy(paths)
            .build()
            .unwrap()
            .loosenings();
        assert_one(
            &lines,
            "the whole environment is inherited (preset = development)",
        );
    }

    #[test]
    fn agent_environment_is_listed() {
        let lines = loosenings(|b| b.allow_agent_environment(true));
        assert_one(&lines, "allow_agent_environment = true:");
    }

    #[test]
    fn unwrapped_launchers_are_listed() {
        let lines = loosenings(|b| b.unwrap_launchers(true));
        assert_one(&lines, "unwrap_launchers = true:");
    }

    #[test]
    fn host_network_is_listed() {
        let lines = loosenings(|b| b.allow_network(true));
        assert_one(&lines, "network = host");
    }

    #[cfg(feature = "runner")]
    #[test]
    fn private_view_off_is_listed() {
        let lines = loosenings(|b| b.private_view(false));
        assert_one(&lines, "private view off:");
    }

    #[test]
    fn every_loosening_at_once_is_listed_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let builder = danger::without_default_rules(danger::development(dir.path()))
            .allow_agent_environment(true)
            .unwrap_launchers(true)
            .allow_network(true);
        let lines = builder.build().unwrap().loosenings();
        let mut unique = lines.clone();
        unique.dedup();
        assert_eq!(unique, lines);
        assert_eq!(lines.len(), 6, "{lines:?}");
    }
}
