//! Loosening a path policy in code. Everything here makes places reachable
//! that the safe defaults keep out; the call site says so by its path
//! (`danger::without_defaults(...)`).
//!
//! # Security
//!
//! A policy loosened here lets an agent read the host's secrets (`.env`,
//! keys, `~/.ssh`), reach `/proc`'s magic links, or write the files that
//! run code later (git hooks, shell start-up files, CI workflows) inside
//! its roots. Keep these calls out of code paths an agent can influence.
//! Every loosening is listed by [`crate::PathPolicy::loosenings`].

use crate::PathPolicyBuilder;

/// Starts from empty blocked and write-protected lists instead of the safe
/// defaults (the `defaults = false` of the policy file): only the entries
/// the host adds remain.
///
/// ```
/// use agentcaps_paths::{Access, PathPolicy, danger};
///
/// let root = std::env::temp_dir().canonicalize()?;
/// let policy = PathPolicy::builder().allow(&root).build()?;
/// assert!(policy.check(&root, ".env", Access::Read).is_err());
///
/// let loose = danger::without_defaults(PathPolicy::builder().allow(&root)).build()?;
/// assert!(loose.check(&root, ".env", Access::Read).is_ok());
/// assert_eq!(loose.loosenings().len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Security
///
/// See the [module docs](self): without the defaults, `/proc`, `/sys`,
/// `/dev`, the host's secrets and the files that tools run later are
/// reachable inside allowed roots.
pub fn without_defaults(mut builder: PathPolicyBuilder) -> PathPolicyBuilder {
    builder.defaults = false;
    builder
}
