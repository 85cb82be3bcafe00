//! Plain-data settings: access kinds, Windows modes, and the `[files]`
//! section of the policy file.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{PathError, PathPolicy, PathPolicyBuilder};

/// What the agent wants to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read a file's contents or metadata.
    Read,
    /// Modify, create, rename or remove.
    Write,
    /// List a directory.
    List,
}

/// What an allowed root permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootAccess {
    /// Read, write and list.
    ReadWrite,
    /// Read and list only.
    ReadOnly,
}

impl RootAccess {
    /// Whether this root permits `access`.
    pub fn permits(self, access: Access) -> bool {
        match self {
            RootAccess::ReadWrite => true,
            RootAccess::ReadOnly => access != Access::Write,
        }
    }
}

/// When Windows spelling rules apply.
///
/// The default, [`WindowsAliases::Auto`], applies them on Windows hosts only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowsAliases {
    /// On Windows hosts only: elsewhere `aux` and `a\b` are ordinary names.
    #[default]
    Auto,
    /// Everywhere: for files on NTFS/SMB mounts, or that Windows machines
    /// will open later. `\` separates, `CON` is a device, `.env.` and
    /// `.env::$DATA` are `.env`, names compare case-insensitively.
    Always,
}

impl WindowsAliases {
    /// Whether the rules apply on this host.
    pub fn applies(self) -> bool {
        match self {
            WindowsAliases::Auto => cfg!(windows),
            WindowsAliases::Always => true,
        }
    }
}

/// When comparisons with roots and blocked entries fold case.
///
/// The default, [`CaseInsensitive::Auto`], folds on Windows and macOS hosts
/// (whose default file systems ignore case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseInsensitive {
    /// On Windows and macOS hosts.
    #[default]
    Auto,
    /// Always fold case.
    Always,
    /// Never fold case (unless Windows aliases apply, which fold anyway).
    Never,
}

impl CaseInsensitive {
    /// Whether case folds on this host.
    pub fn applies(self) -> bool {
        match self {
            CaseInsensitive::Auto => cfg!(any(windows, target_os = "macos")),
            CaseInsensitive::Always => true,
            CaseInsensitive::Never => false,
        }
    }
}

fn yes() -> bool {
    true
}

/// The `[files]` section of the policy file, as plain data.
///
/// Every field has a serde default; unknown keys are left to the facade.
/// Lists **extend** the safe defaults unless `defaults = false`.
///
/// ```
/// use agentcaps_paths::PathPolicyConfig;
/// let config = PathPolicyConfig {
///     allowed: vec!["/tmp".into()],
///     blocked: vec!["**/*.key".into()],
///     ..PathPolicyConfig::default()
/// };
/// let policy = config.build()?;
/// # Ok::<(), agentcaps_paths::PathError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PathPolicyConfig {
    /// Absolute roots allowed for reading, writing and listing.
    pub allowed: Vec<PathBuf>,
    /// Absolute roots allowed for reading and listing only.
    pub read_only: Vec<PathBuf>,
    /// Blocked absolute roots and globs (an entry containing `*?[{` or
    /// starting with `**` is a glob). They win over `allowed`.
    pub blocked: Vec<String>,
    /// Globs blocked for writing only (added to the defaults).
    pub write_protected: Vec<String>,
    /// When Windows spelling rules apply.
    pub windows_aliases: WindowsAliases,
    /// When comparisons fold case.
    pub case_insensitive: CaseInsensitive,
    /// Start from the safe defaults (true unless set to false).
    #[serde(default = "yes")]
    pub defaults: bool,
}

impl Default for PathPolicyConfig {
    fn default() -> Self {
        PathPolicyConfig {
            allowed: Vec::new(),
            read_only: Vec::new(),
            blocked: Vec::new(),
            write_protected: Vec::new(),
            windows_aliases: WindowsAliases::default(),
            case_insensitive: CaseInsensitive::default(),
            defaults: true,
        }
    }
}

impl PathPolicyConfig {
    /// Build the policy: roots canonicalized, globs compiled once.
    ///
    /// # Errors
    ///
    /// [`PathError::InvalidPolicy`] for a relative root or blocked path, a
    /// root that cannot be canonicalized, or a glob that does not compile.
    pub fn build(&self) -> Result<PathPolicy, PathError> {
        self.builder().build()
    }

    /// The builder [`PathPolicyConfig::build`] builds, for a host to add to
    /// (say [`PathPolicyBuilder::protect_file_from_writes`] for its own
    /// configuration files) before building.
    pub fn builder(&self) -> PathPolicyBuilder {
        let mut builder = PathPolicy::builder();
        if !self.defaults {
            builder = crate::danger::without_defaults(builder);
        }
        for root in &self.allowed {
            builder = builder.allow(root);
        }
        for root in &self.read_only {
            builder = builder.allow_read_only(root);
        }
        for entry in &self.blocked {
            builder = builder.block(entry);
        }
        for glob in &self.write_protected {
            builder = builder.protect_from_writes(glob);
        }
        builder
            .windows_aliases(self.windows_aliases)
            .case_insensitive(self.case_insensitive)
    }
}
