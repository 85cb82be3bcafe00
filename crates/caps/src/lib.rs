//! # agentcaps
//!
//! Capabilities for LLM agents: files, a shell, the web and patches that
//! cannot reach what they must not. This crate is the facade: the four
//! mechanism crates under short names, and the one policy file
//! ([`Policy`]) that composes their configuration. It has no
//! other logic.
//!
//! | module | crate | decides |
//! |---|---|---|
//! | [`paths`] | `agentcaps-paths` | where a spelled path really goes |
//! | [`shell`] | `agentcaps-shell` | what a command may run and touch |
//! | [`egress`] | `agentcaps-egress` | where an HTTP request may connect |
//! | [`patch`] | `agentcaps-patch` | what a patch may write |
//!
//! ```
//! use agentcaps::paths::Access;
//! use agentcaps::Policy;
//!
//! let dir = std::env::temp_dir();
//! let policy = Policy::from_toml(
//!     r#"
//!     [files]
//!     allowed = ["."]
//!     blocked = ["**/*.key"]
//!     "#,
//!     &dir,
//! )?;
//! let paths = policy.path_policy()?;
//!
//! // Allowed: a file under the policy file's directory.
//! assert!(paths.check(&dir, "notes.txt", Access::Read).is_ok());
//! // Refused: a blocked name, and a path outside every root.
//! assert!(paths.check(&dir, "server.key", Access::Read).is_err());
//! assert!(paths.check(&dir, "/etc/passwd", Access::Read).is_err());
//!
//! // Unknown keys are refused with their line.
//! let err = Policy::from_toml("[files]\nbloked = []\n", &dir).unwrap_err();
//! assert_eq!(err.to_string().contains("files.bloked"), true);
//! # Ok::<(), agentcaps::PolicyError>(())
//! ```
//!
//! # The policy file
//!
//! One TOML file with the sections `[files]`, `[shell]`, `[egress]` and
//! `[patch]`, each the owning crate's own config type
//! ([`paths::PathPolicyConfig`], [`shell::ShellPolicyConfig`],
//! [`egress::EgressPolicyConfig`], [`patch::PatchPolicyConfig`]) plus the
//! tools' `files.max_read_bytes` and `[approvals]` ([`ApprovalsConfig`]:
//! which refusals become a question to a person; a rule that is not
//! askable there is an error with its line). Relative paths are relative to the file's
//! directory. Lists extend the safe defaults; `defaults = false` in a section
//! starts it from empty and is reported by [`Policy::notices`]. With no file,
//! [`Policy::default_for`] gives the built-in default
//! ([`DEFAULT_POLICY_TOML`]).
#![forbid(unsafe_code)]

mod approvals;
mod credentials;
mod defaults;
mod effective;
mod error;

/// Every rule ID the crates report, what each means and which crates
/// report it (checked against the crates' sources by a test).
#[doc = include_str!("../RULES.md")]
pub mod rules {}
mod load;
mod network;
mod policy;
mod validate;

pub use agentcaps_egress as egress;
pub use agentcaps_patch as patch;
pub use agentcaps_paths as paths;
pub use agentcaps_shell as shell;

pub use approvals::{
    ASKABLE_RULES, ApprovalsConfig, DEFAULT_APPROVAL_TIMEOUT_MS, NEVER_ASKABLE, Remember,
};
pub use credentials::{CredentialEntry, CredentialSource};
pub use error::PolicyError;
pub use policy::{DEFAULT_MAX_READ_BYTES, DEFAULT_POLICY_TOML, Notice, Origin, Policy};
pub use validate::KNOWN_METHODS;
