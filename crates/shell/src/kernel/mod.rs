//! Kernel enforcement: run a command inside a Landlock domain derived from the
//! same policy (issue 7).
//!
//! **Not built yet.** [`spawn_confined`] currently spawns without any kernel
//! confinement and reports [`Enforcement::None`] — honestly. The Landlock
//! implementation replaces the body; the signature is the contract with the
//! runner.

use std::path::PathBuf;

/// What the kernel is asked to enforce for one command.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct KernelRules {
    /// Directories (and files) the command may read and execute beneath.
    pub read: Vec<PathBuf>,
    /// Directories the command may write, create, remove and rename beneath.
    pub write: Vec<PathBuf>,
    /// Whether TCP `bind`/`connect` is allowed.
    pub allow_network: bool,
    /// Refuse to run when the kernel cannot enforce all of the above.
    pub require: bool,
}

/// How much of [`KernelRules`] the kernel actually enforced for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Enforcement {
    /// Every rule is enforced by the kernel.
    Full,
    /// Some rules are enforced; the kernel's Landlock ABI is `abi`.
    Partial {
        /// The Landlock ABI version the kernel offers.
        abi: u8,
    },
    /// Nothing is enforced by the kernel: only the argument checks apply.
    None,
}

/// Spawn `cmd` confined by `rules`.
///
/// # Errors
///
/// The spawn's I/O error. (Once Landlock lands: also a refusal when
/// `rules.require` is set and the kernel cannot enforce everything.)
pub fn spawn_confined(
    cmd: &mut tokio::process::Command,
    rules: &KernelRules,
) -> std::io::Result<(tokio::process::Child, Enforcement)> {
    let _ = rules;
    cmd.spawn().map(|child| (child, Enforcement::None))
}
