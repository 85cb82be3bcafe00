//! The sandbox's one error type.

use std::path::PathBuf;

/// Why a command could not be run confined. Nothing ran, or what ran was
/// stopped and its writes were not committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The program (or the view helper) could not be started or waited for.
    #[error("could not run `{}`: {source}", program.display())]
    Spawn {
        /// The program that was to run.
        program: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel cannot enforce what the sandbox requires here
    /// (`require_kernel_enforcement`, or a profile the system rejected).
    #[error("{message} (rule require-kernel-enforcement)")]
    KernelEnforcement {
        /// What was refused and why, for the model.
        message: String,
    },
    /// The sandbox was used the wrong way (for example, a blocking run
    /// inside an async runtime).
    #[error("{message}")]
    Config {
        /// What was wrong.
        message: String,
    },
}

impl SandboxError {
    /// The rule this error stands for: `io`, `require-kernel-enforcement`
    /// or `config`.
    #[must_use]
    pub fn rule(&self) -> &'static str {
        match self {
            Self::Spawn { .. } => "io",
            Self::KernelEnforcement { .. } => "require-kernel-enforcement",
            Self::Config { .. } => "config",
        }
    }
}
