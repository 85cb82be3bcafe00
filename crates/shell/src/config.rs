//! The `[shell]` section of the policy file, as plain data.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agentcaps_paths::PathPolicy;
use serde::{Deserialize, Serialize};

use crate::env::DEFAULT_INHERITED;
use crate::error::ShellError;
use crate::policy::{ShellPolicy, ShellPolicyBuilder, WindowsRules, danger};
use crate::rules::ProgramRules;

/// A preset list of commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Preset {
    /// `ls cat head tail pwd echo wc date whoami which file`.
    ReadOnly,
    /// `read-only` plus build tools; inherits the whole environment.
    /// **Not a sandbox** (see [`danger::development`]).
    Development,
}

/// The caches the `development` preset overlays by default (beneath the
/// home directory).
pub const DEVELOPMENT_CACHES: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".cache/pip",
    ".npm/_cacache",
];

/// `[shell] network`: what network a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Network {
    /// No network at all: a network namespace of its own with only a
    /// private loopback (the command's own test servers work). The
    /// default.
    None,
    /// The web only through the egress judge: an HTTP proxy the host plugs
    /// in ([`crate::ShellPolicy::with_network_proxy`]), reached from the
    /// command's private view at `127.0.0.1:3128` (the proxy variables
    /// point there). Without a proxy plugged in, no network at all.
    Proxy,
    /// The host's network, unfiltered. Only with the `development` preset:
    /// it is not a sandbox.
    Host,
}

/// The `[shell]` section of the policy file. Every field has a default;
/// unknown keys are left to the facade.
///
/// With neither `preset` nor `allowed_commands`, the `read-only` preset
/// applies; with only `allowed_commands`, exactly those; with both, the
/// preset's commands plus the list.
///
/// ```
/// use agentcaps_shell::ShellPolicyConfig;
/// let config: ShellPolicyConfig = toml::from_str(r#"
///     preset = "read-only"
///     working_directory = "/tmp"
///     path_policy = false
///     timeout_ms = 5000
/// "#)?;
/// let policy = config.build(None)?;
/// assert!(policy.allowed_commands().iter().any(|c| c == "cat"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ShellPolicyConfig {
    /// `"read-only"` or `"development"`.
    pub preset: Option<Preset>,
    /// Bare command names (added to the preset's).
    pub allowed_commands: Vec<String>,
    /// Absolute program paths allowed as `argv[0]` exactly.
    pub allowed_programs: Vec<PathBuf>,
    /// The default working directory (absolute; the facade resolves
    /// relative ones). `None`: the process's current directory.
    pub working_directory: Option<PathBuf>,
    /// Hold file arguments to the `[files]` policy (default true).
    pub path_policy: bool,
    /// The longest a command may run, in milliseconds.
    pub timeout_ms: u64,
    /// The most bytes kept of each output stream.
    pub max_output_bytes: u64,
    /// The host variables a command inherits, whichever exist.
    pub inherited_environment: Vec<String>,
    /// Variables set for every command.
    pub environment: BTreeMap<String, String>,
    /// Option rule tables added to the defaults.
    pub rules: Vec<ProgramRules>,
    /// Start from the default option rules (default true).
    pub defaults: bool,
    /// Unwrap launchers and judge their inner command instead of refusing.
    pub unwrap_launchers: bool,
    /// Let the agent set (checked) variables.
    pub allow_agent_environment: bool,
    /// Let a request give bytes on standard input.
    pub allow_stdin: bool,
    /// When Windows option rules apply (`"auto"` or `"always"`).
    pub windows_rules: WindowsRules,
    /// Let commands use the network (kernel enforcement). The older spelling
    /// of `network = "host"`, with no preset restriction; `network` wins
    /// when both are given and they disagree is an error.
    pub allow_network: bool,
    /// `"none"` (default: a private loopback only), `"host"` (the host's
    /// network, unfiltered; `development` preset only) or `"proxy"` (the web
    /// only through the judging proxy the host plugs in).
    pub network: Option<Network>,
    /// Cache directories commands see writable in their view, whose writes
    /// are discarded at the end (absolute, or `~/` for the home
    /// directory). `None`: for the `development` preset
    /// `~/.cargo/registry`, `~/.cargo/git`, `~/.cache/pip`,
    /// `~/.npm/_cacache`; none otherwise.
    pub cache_dirs: Option<Vec<PathBuf>>,
    /// Refuse to run when the kernel cannot enforce the policy.
    pub require_kernel_enforcement: bool,
    /// The most processes a command may have at once in its view (default
    /// 512).
    pub max_processes: u64,
    /// The most bytes the view's `/tmp` and `/dev/shm` may hold together
    /// (default 1 GiB).
    pub max_tmp_bytes: u64,
    /// The most bytes of changes a command may stage in the writable roots
    /// (default 4 GiB); more, and nothing is committed.
    pub max_change_bytes: u64,
}

impl Default for ShellPolicyConfig {
    fn default() -> Self {
        Self {
            preset: None,
            allowed_commands: Vec::new(),
            allowed_programs: Vec::new(),
            working_directory: None,
            path_policy: true,
            timeout_ms: 30_000,
            max_output_bytes: 100_000,
            inherited_environment: DEFAULT_INHERITED.iter().map(|s| (*s).to_owned()).collect(),
            environment: BTreeMap::new(),
            rules: Vec::new(),
            defaults: true,
            unwrap_launchers: false,
            allow_agent_environment: false,
            allow_stdin: false,
            windows_rules: WindowsRules::Auto,
            allow_network: false,
            network: None,
            cache_dirs: None,
            require_kernel_enforcement: false,
            max_processes: 512,
            max_tmp_bytes: 1 << 30,
            max_change_bytes: 4 << 30,
        }
    }
}

impl ShellPolicyConfig {
    /// Build the policy. `paths` is the `[files]` policy; it is used when
    /// `path_policy` is true (and required then).
    ///
    /// # Errors
    ///
    /// [`ShellError::Config`] when `path_policy` is true and `paths` is
    /// `None`, when the working directory is relative or cannot be found,
    /// and for everything [`ShellPolicyBuilder::build`] refuses.
    pub fn build(&self, paths: Option<PathPolicy>) -> Result<ShellPolicy, ShellError> {
        let config = |message: String| ShellError::Config { message };
        let working_directory = match &self.working_directory {
            Some(dir) => dir.clone(),
            None => std::env::current_dir()
                .map_err(|e| config(format!("the current directory cannot be read: {e}")))?,
        };
        let preset = match (self.preset, self.allowed_commands.is_empty()) {
            (None, true) => Some(Preset::ReadOnly),
            (preset, _) => preset,
        };
        let mut builder: ShellPolicyBuilder = match preset {
            Some(Preset::ReadOnly) => ShellPolicy::read_only(working_directory),
            Some(Preset::Development) => danger::development(working_directory),
            None => ShellPolicy::builder(working_directory),
        };
        for name in &self.allowed_commands {
            builder = builder.allow_command(name.clone());
        }
        for program in &self.allowed_programs {
            builder = builder.allow_program(program.clone());
        }
        if self.path_policy {
            let paths = paths.ok_or_else(|| {
                config("path_policy is on but no path policy ([files]) was given".to_owned())
            })?;
            builder = builder.path_policy(paths);
        }
        if preset != Some(Preset::Development) {
            builder = builder.inherit_only(self.inherited_environment.iter().cloned());
        }
        for (name, value) in &self.environment {
            builder = builder.env(name.clone(), value.clone());
        }
        if !self.defaults {
            builder = danger::without_default_rules(builder);
        }
        for table in &self.rules {
            builder = builder.rules(table.clone());
        }
        let allow_network = match self.network {
            None => self.allow_network,
            Some(Network::None) if self.allow_network => {
                return Err(config(
                    "network = \"none\" and allow_network = true disagree; keep one of them"
                        .to_owned(),
                ));
            }
            Some(Network::None) => false,
            Some(Network::Host) if preset != Some(Preset::Development) => {
                return Err(config(
                    "network = \"host\" gives commands the host's network unfiltered and is allowed only with preset = \"development\"; use network = \"none\""
                        .to_owned(),
                ));
            }
            Some(Network::Host) => true,
            // A private network whose only way out is the judging proxy
            // the host plugs in (`ShellPolicy::with_network_proxy`; the
            // `agentcaps` facade does for `[egress]`); without one, none.
            Some(Network::Proxy) => false,
        };
        #[cfg(feature = "runner")]
        {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let caches: Vec<PathBuf> = match &self.cache_dirs {
                Some(dirs) => dirs.clone(),
                None if preset == Some(Preset::Development) => DEVELOPMENT_CACHES
                    .iter()
                    .map(|d| PathBuf::from(format!("~/{d}")))
                    .collect(),
                None => Vec::new(),
            };
            let mut expanded = Vec::new();
            for dir in caches {
                let dir = match (dir.strip_prefix("~"), &home) {
                    (Ok(rest), Some(home)) => home.join(rest),
                    (Ok(_), None) => continue,
                    (Err(_), _) => dir,
                };
                if !dir.is_absolute() {
                    return Err(config(format!(
                        "cache_dirs: {} is not absolute (or `~/...`)",
                        dir.display()
                    )));
                }
                expanded.push(dir);
            }
            builder = builder.cache_dirs(expanded).limits(
                agentcaps_sandbox::Limits::default()
                    .with_max_processes(self.max_processes)
                    .with_max_tmp_bytes(self.max_tmp_bytes)
                    .with_max_change_bytes(self.max_change_bytes),
            );
        }
        builder
            .timeout(Duration::from_millis(self.timeout_ms))
            .max_output_bytes(self.max_output_bytes)
            .unwrap_launchers(self.unwrap_launchers)
            .allow_agent_environment(self.allow_agent_environment)
            .allow_stdin(self.allow_stdin)
            .windows_rules(self.windows_rules)
            .allow_network(allow_network)
            .require_kernel_enforcement(self.require_kernel_enforcement)
            .build()
    }
}
