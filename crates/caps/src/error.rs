//! The facade's one error type: what can go wrong loading a policy file or
//! building the crates' policies from it.

use std::path::PathBuf;

/// Why a policy file could not be loaded, or a policy could not be built
/// from it.
///
/// Every variant that points into the file carries the 1-based `line`, so a
/// host can show the operator exactly what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The policy file could not be read.
    #[error("cannot read policy file {}: {source}", path.display())]
    Read {
        /// The file that was asked for.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("policy file line {line}: not valid TOML: {message}")]
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// What the TOML parser said.
        message: String,
    },
    /// A key that no section knows. Unknown keys are refused, never ignored:
    /// a misspelt `bloked = [...]` would otherwise silently block nothing.
    #[error(
        "policy file line {line}: unknown key `{key}`; check its spelling (the sections are [files], [shell], [egress], [patch], [approvals] and [credentials.NAME])"
    )]
    UnknownKey {
        /// The dotted path of the key, such as `files.bloked`.
        key: String,
        /// 1-based line of the key.
        line: usize,
    },
    /// A key has a value of the wrong type or an invalid value.
    #[error("policy file line {line}: `{key}`: {message}")]
    InvalidValue {
        /// The dotted path of the key whose value is wrong (empty if unknown).
        key: String,
        /// 1-based line of the value.
        line: usize,
        /// What was wrong with it.
        message: String,
    },
    /// An error in the policy file at `path` (the inner error has the line).
    #[error("{}: {source}", path.display())]
    InFile {
        /// The policy file.
        path: PathBuf,
        /// What is wrong in it.
        #[source]
        source: Box<PolicyError>,
    },
    /// The built-in default policy was asked for a directory it must not
    /// open up: `/`, the home directory itself, or a system directory.
    #[error(
        "refusing the built-in default policy in {}: it would let the agent read and write everything under it. Start agentcaps inside a project directory, or pass --policy FILE naming what to allow", dir.display()
    )]
    UnsafeDefault {
        /// The directory.
        dir: PathBuf,
    },
    /// The `[files]` section does not make a valid path policy.
    #[error("[files]: {0}")]
    Files(#[source] agentcaps_paths::PathError),
    /// The `[shell]` section does not make a valid shell policy.
    #[error("[shell]: {0}")]
    Shell(#[source] agentcaps_shell::ShellError),
    /// The `[egress]` section does not make a valid egress policy.
    #[error("[egress]: {0}")]
    Egress(#[source] agentcaps_egress::EgressError),
}

impl PolicyError {
    /// The 1-based line of the policy file the error is on, when it is about
    /// the file's content.
    pub fn line(&self) -> Option<usize> {
        match self {
            PolicyError::Syntax { line, .. }
            | PolicyError::UnknownKey { line, .. }
            | PolicyError::InvalidValue { line, .. } => Some(*line),
            PolicyError::InFile { source, .. } => source.line(),
            _ => None,
        }
    }
}
