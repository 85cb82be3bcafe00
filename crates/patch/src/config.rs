//! The `[patch]` section of the policy file.

use serde::{Deserialize, Serialize};

/// Limits and modes of a [`Patcher`](crate::Patcher): the `[patch]`
/// section of the policy file. Every field has a default, so an empty
/// section is valid; unknown keys are left to the facade to report.
///
/// `Default` is the safe setting: strict matching, bounded sizes.
///
/// ```
/// let config: agentcaps_patch::PatchPolicyConfig = toml::from_str("max_files = 10").unwrap();
/// assert_eq!(config.max_files, 10);
/// assert!(!config.lenient);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PatchPolicyConfig {
    /// Largest patch text accepted, in bytes (default 4 MiB).
    pub max_patch_bytes: u64,
    /// Most file sections in one patch (default 1000).
    pub max_files: usize,
    /// Most hunks in one patch, all files together (default 10 000).
    pub max_hunks: usize,
    /// Largest file a patch may read or produce, in bytes (default 16 MiB).
    pub max_target_bytes: u64,
    /// Also match hunks with indentation and Unicode punctuation folded
    /// (reported per hunk). Off by default.
    pub lenient: bool,
    /// `fsync` every written file and its directory before reporting
    /// success. Off by default: a crash or power loss soon after a patch
    /// may then lose it, and on some file systems leave the files it wrote
    /// empty (as with `git apply`); the process itself never leaves a
    /// half-written file, since files are renamed into place.
    pub durable: bool,
}

impl Default for PatchPolicyConfig {
    fn default() -> Self {
        PatchPolicyConfig {
            max_patch_bytes: 4 * 1024 * 1024,
            max_files: 1000,
            max_hunks: 10_000,
            max_target_bytes: 16 * 1024 * 1024,
            lenient: false,
            durable: false,
        }
    }
}
