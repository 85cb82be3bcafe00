//! The one policy file: a TOML document whose sections are the crates' own
//! config types, composed here and nowhere else.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::PolicyError;
use crate::approvals::{self, ApprovalsConfig};
use crate::credentials::{self, CredentialEntry, RootFile};
use crate::egress::{EgressPolicy, EgressPolicyConfig};
use crate::patch::PatchPolicyConfig;
use crate::paths::{PathPolicy, PathPolicyConfig};
use crate::shell::{ShellPolicy, ShellPolicyConfig};
use crate::{load, validate};

/// The built-in policy used when no policy file is given: the
/// current directory allowed for reading and writing with `.git` and
/// `**/.env*` blocked (on top of the safe defaults), the `read-only` shell
/// preset holding file arguments to `[files]`, egress to public addresses
/// with `GET`/`HEAD`, and patches under the current directory.
pub const DEFAULT_POLICY_TOML: &str = r#"# agentcaps built-in default policy (used when no --policy file is given)
[files]
allowed = ["."]
blocked = [".git", "**/.env*"]
max_read_bytes = 1048576

[shell]
preset = "read-only"
working_directory = "."
path_policy = true

[egress]
allowed_methods = ["GET", "HEAD"]

[patch]
"#;

/// Default for `[files] max_read_bytes`: 1 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 1024 * 1024;

/// A loaded policy: one section per capability, each the owning crate's own
/// config type, plus the few keys only the tools use.
///
/// Build it with [`Policy::load`] (a file), [`Policy::from_toml`] (text and
/// the directory its relative paths are relative to) or
/// [`Policy::default_for`] (the built-in default). Turn it into the crates'
/// policies with [`Policy::path_policy`], [`Policy::shell_policy`] and
/// [`Policy::egress_policy`]; [`Policy::patch`] is used as is.
///
/// # Security
///
/// Unknown keys are refused, never ignored, and lists extend the crates'
/// safe defaults. A section that sets `defaults = false` starts from empty;
/// [`Policy::notices`] says so, and `agentcaps check` prints it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Policy {
    /// `[files]`: roots, blocked entries, Windows semantics.
    pub files: PathPolicyConfig,
    /// `[files] max_read_bytes`: the most `read_file` returns in one call.
    pub max_read_bytes: u64,
    /// `[shell]`.
    pub shell: ShellPolicyConfig,
    /// `[egress]`.
    pub egress: EgressPolicyConfig,
    /// `[patch]`.
    pub patch: PatchPolicyConfig,
    /// `[approvals]`: which refusals become a question to a person.
    pub approvals: ApprovalsConfig,
    origin: Origin,
    /// The files the policy was read from (as given and as they really
    /// are): write-protected wherever they lie.
    loaded_from: Vec<PathBuf>,
    notices: Vec<Notice>,
    /// The text the policy was read from (for the origin of each entry).
    source: String,
    /// `[credentials.NAME]`, values read at load.
    credentials: Vec<CredentialEntry>,
    /// `[egress] root_certificates`, read at load.
    root_files: Vec<RootFile>,
}

/// Where a [`Policy`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// A policy file, by path.
    File(PathBuf),
    /// TOML text given directly, relative paths resolved against `base`.
    Text {
        /// The directory relative paths were resolved against.
        base: PathBuf,
    },
    /// The built-in default ([`DEFAULT_POLICY_TOML`]) for directory `base`.
    BuiltIn {
        /// The directory the default allows.
        base: PathBuf,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(file) => write!(f, "policy file {}", file.display()),
            Origin::Text { base } => {
                write!(f, "policy text (relative paths from {})", base.display())
            }
            Origin::BuiltIn { base } => write!(f, "built-in default policy for {}", base.display()),
        }
    }
}

/// Something an operator must know about a policy: a weakened default.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Notice {
    /// The section, such as `files`.
    pub section: String,
    /// 1-based line in the policy file.
    pub line: usize,
    /// What it means, in one sentence.
    pub message: String,
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WARNING: [{}] line {}: {}",
            self.section, self.line, self.message
        )
    }
}

/// The crates' view of the file.
#[derive(Deserialize, Default)]
#[serde(default)]
struct CrateSections {
    files: PathPolicyConfig,
    shell: ShellPolicyConfig,
    egress: EgressPolicyConfig,
    patch: PatchPolicyConfig,
}

/// The tools' view of the file: keys no crate owns.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolKeys {
    files: ToolFileKeys,
    approvals: ApprovalsConfig,
    egress: credentials::EgressToolKeys,
    credentials: std::collections::BTreeMap<String, credentials::CredentialKeys>,
}

#[derive(Deserialize)]
#[serde(default)]
struct ToolFileKeys {
    max_read_bytes: u64,
    create_missing: bool,
}

impl Default for ToolFileKeys {
    fn default() -> Self {
        Self {
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            create_missing: false,
        }
    }
}

const SECTIONS: [&str; 4] = ["files", "shell", "egress", "patch"];

impl Policy {
    /// Loads the policy file at `path`; relative paths in it are relative to
    /// the file's directory.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Read`] if the file cannot be read, and everything
    /// [`Policy::from_toml`] refuses.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let read_err = |source| PolicyError::Read {
            path: path.to_path_buf(),
            source,
        };
        let text = std::fs::read_to_string(path).map_err(read_err)?;
        let absolute = std::path::absolute(path).map_err(read_err)?;
        let base = absolute.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut policy = Self::from_toml(&text, &base).map_err(|source| PolicyError::InFile {
            path: absolute.clone(),
            source: Box::new(source),
        })?;
        policy.loaded_from = vec![absolute.clone()];
        if let Ok(real) = std::fs::canonicalize(&absolute)
            && real != absolute
        {
            policy.loaded_from.push(real);
        }
        policy.origin = Origin::File(absolute);
        Ok(policy)
    }

    /// Parses policy TOML; relative paths in it are resolved against `base`
    /// (which should be absolute).
    ///
    /// # Errors
    ///
    /// [`PolicyError::Syntax`], [`PolicyError::UnknownKey`] and
    /// [`PolicyError::InvalidValue`], each with the line to fix: that
    /// includes a glob, domain, CIDR, DNS server or method that does not
    /// parse, a method the egress client does not know, a `[shell]` section
    /// that does not build, and a root that does not exist (unless
    /// `create_missing = true` in `[files]`, which creates it).
    pub fn from_toml(text: &str, base: &Path) -> Result<Self, PolicyError> {
        Self::parse(text, base, true)
    }

    /// [`Policy::from_toml`]; `check_shell`: whether the `[shell]` section
    /// is built now, to report a mistake in it with its line. The built-in
    /// default's section is a constant (a test builds it): it is built when
    /// a command needs it, so that loading the default and judging a path
    /// does not parse the shell's rule tables (most of a load's cost).
    fn parse(text: &str, base: &Path, check_shell: bool) -> Result<Self, PolicyError> {
        let (sections, tools) = load::two_views::<CrateSections, ToolKeys>(text)?;
        let mut notices = Vec::new();
        for section in SECTIONS {
            if let Some((false, line)) = load::bool_key(text, section, "defaults") {
                notices.push(Notice {
                    section: section.to_owned(),
                    line,
                    message: format!(
                        "`defaults = false`: the [{section}] safe defaults are OFF; only what this file lists applies"
                    ),
                });
            }
        }
        let mut policy = Self {
            files: sections.files,
            max_read_bytes: tools.files.max_read_bytes,
            shell: sections.shell,
            egress: sections.egress,
            patch: sections.patch,
            approvals: tools.approvals,
            origin: Origin::Text {
                base: base.to_path_buf(),
            },
            loaded_from: Vec::new(),
            notices,
            source: text.to_owned(),
            credentials: Vec::new(),
            root_files: Vec::new(),
        };
        policy.resolve_relative(base);
        let spans = load::Spans::new(text);
        policy.credentials = credentials::load(&spans, &tools.credentials, base)?;
        credentials::sources_outside_roots(&spans, &policy.credentials, &policy.files)?;
        policy.root_files = credentials::roots(&spans, &tools.egress, base)?;
        validate::files(&spans, &policy.files, tools.files.create_missing)?;
        validate::egress(&spans, &policy.egress)?;
        approvals::validate(&spans, &policy.approvals)?;
        if check_shell && let Err(e) = policy.shell_policy() {
            return Err(spans.invalid_section("shell", e.to_string()));
        }
        Ok(policy)
    }

    /// The built-in default policy for the directory `cwd`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::UnsafeDefault`] when `cwd` is `/`, the user's home
    /// directory itself, or a system directory (`/etc`, `/usr`, `/var`,
    /// `/root`, ... and anything beneath `/etc`, `/usr`, `/bin`, `/sbin`,
    /// `/lib*`, `/boot`, `/dev`, `/proc`, `/sys`): the default would let the
    /// agent write everywhere under it. On Windows also a drive's root
    /// (`C:\`), the users' directory (`C:\Users`), the home
    /// (`%USERPROFILE%`), the temporary directory (`%TEMP%`), and anything
    /// beneath the Windows directory
    /// (`%SystemRoot%`), the program directories (`%ProgramFiles%`,
    /// `%ProgramFiles(x86)%`) and `%ProgramData%`, compared in any case and
    /// spelling.
    pub fn default_for(cwd: &Path) -> Result<Self, PolicyError> {
        if crate::defaults::unsafe_for_default(cwd) {
            return Err(PolicyError::UnsafeDefault {
                dir: cwd.to_path_buf(),
            });
        }
        let mut policy = Self::parse(DEFAULT_POLICY_TOML, cwd, false)?;
        policy.origin = Origin::BuiltIn {
            base: cwd.to_path_buf(),
        };
        Ok(policy)
    }

    /// Where this policy came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// The effective policy as TOML: every section with every key, defaults
    /// expanded (the built-in blocked entries and the shell preset's
    /// programs included), each value or list entry followed by a comment
    /// saying where it came from — `built-in`, or the file and line.
    pub fn effective_toml(&self) -> String {
        crate::effective::render(self, &self.source)
    }

    /// Weakened defaults an operator must be told about (`defaults = false`).
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    /// Builds the `[files]` path policy (roots are canonicalised now).
    ///
    /// # Errors
    ///
    /// [`PolicyError::Files`] if a root or glob is invalid.
    ///
    /// # Security
    ///
    /// The files the policy was loaded from ([`Policy::loaded_from`]) are
    /// write-protected in it wherever they lie, even with
    /// `defaults = false`: no tool, patch or command judged by it can
    /// rewrite the policy the next run or server start would use.
    pub fn path_policy(&self) -> Result<PathPolicy, PolicyError> {
        let mut builder = self.files.builder();
        for file in &self.loaded_from {
            builder = builder.protect_file_from_writes(file);
        }
        builder.build().map_err(PolicyError::Files)
    }

    /// The files this policy was read from: the policy file as given (made
    /// absolute) and, when that is a link, the file it leads to. Empty for
    /// text and the built-in default.
    pub fn loaded_from(&self) -> &[PathBuf] {
        &self.loaded_from
    }

    /// A warning when the policy file lies inside a root allowed for
    /// writing: it is write-protected there, but any program the host runs
    /// unconfined in that tree (or a policy without this protection) could
    /// rewrite it; a policy file is best kept outside the roots it opens.
    pub fn placement_warning(&self) -> Option<String> {
        let file = self.loaded_from.last()?;
        let paths = self.path_policy().ok()?;
        let (root, _) = paths
            .roots()
            .filter(|(_, access)| *access == crate::paths::RootAccess::ReadWrite)
            .find(|(root, _)| file.starts_with(root))?;
        Some(format!(
            "WARNING: the policy file {} lies inside the writable root {}; the tools and commands cannot rewrite it, but keep it outside the roots it opens where you can",
            file.display(),
            root.display()
        ))
    }

    /// Builds the `[shell]` policy, holding file arguments to `[files]` when
    /// `path_policy = true`.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Files`] or [`PolicyError::Shell`].
    pub fn shell_policy(&self) -> Result<ShellPolicy, PolicyError> {
        let paths = if self.shell.path_policy {
            Some(self.path_policy()?)
        } else {
            None
        };
        let shell = self.shell.build(paths).map_err(PolicyError::Shell)?;
        if self.shell.network == Some(crate::shell::Network::Proxy) {
            let proxy = crate::network::EgressProxy {
                policy: self.egress_policy()?,
            };
            return Ok(shell.with_network_proxy(std::sync::Arc::new(proxy)));
        }
        Ok(shell)
    }

    /// Builds the `[egress]` policy.
    ///
    /// # Errors
    ///
    /// [`PolicyError::Egress`] if a name, range or server is invalid.
    pub fn egress_policy(&self) -> Result<EgressPolicy, PolicyError> {
        let mut policy = self.egress.build().map_err(PolicyError::Egress)?;
        credentials::apply(&mut policy, &self.root_files, &self.credentials)?;
        Ok(policy)
    }

    /// `[credentials.NAME]`: each credential's name, source and binding
    /// (its value only inside, redacted when formatted).
    pub fn credentials(&self) -> &[CredentialEntry] {
        &self.credentials
    }

    /// `[egress] root_certificates`, resolved against the policy file's
    /// directory.
    pub fn root_certificates(&self) -> Vec<&Path> {
        self.root_files.iter().map(|r| r.path.as_path()).collect()
    }

    fn resolve_relative(&mut self, base: &Path) {
        for root in self
            .files
            .allowed
            .iter_mut()
            .chain(self.files.read_only.iter_mut())
        {
            if root.is_relative() {
                *root = base.join(&*root);
            }
        }
        for entry in &mut self.files.blocked {
            if is_relative_path_entry(entry) {
                *entry = base.join(&*entry).to_string_lossy().into_owned();
            }
        }
        if let Some(cwd) = &mut self.shell.working_directory
            && cwd.is_relative()
        {
            *cwd = base.join(&*cwd);
        }
    }
}

/// A `blocked` entry is a glob when it contains a glob metacharacter or
/// starts with `**`; otherwise it is a path, and a relative one is resolved
/// against the policy file's directory.
fn is_relative_path_entry(entry: &str) -> bool {
    let glob = entry.starts_with("**") || entry.contains(['*', '?', '[', '{']);
    !glob && Path::new(entry).is_relative()
}
