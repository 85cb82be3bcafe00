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

impl PatchPolicyConfig {
    /// What this configuration weakens compared with the defaults, one
    /// line each, for a host to show loudly: lenient matching, and every
    /// bound raised above its default. Empty for the defaults.
    ///
    /// ```
    /// let mut config = agentcaps_patch::PatchPolicyConfig::default();
    /// assert!(config.loosenings().is_empty());
    /// config.lenient = true;
    /// config.max_files = 5000;
    /// assert_eq!(config.loosenings().len(), 2);
    /// ```
    #[must_use]
    pub fn loosenings(&self) -> Vec<String> {
        let defaults = PatchPolicyConfig::default();
        let mut out = Vec::new();
        if self.lenient {
            out.push(
                "lenient = true: hunks also match with indentation and Unicode punctuation folded"
                    .to_owned(),
            );
        }
        let bounds = [
            (
                "max_patch_bytes",
                self.max_patch_bytes,
                defaults.max_patch_bytes,
            ),
            (
                "max_files",
                as_u64(self.max_files),
                as_u64(defaults.max_files),
            ),
            (
                "max_hunks",
                as_u64(self.max_hunks),
                as_u64(defaults.max_hunks),
            ),
            (
                "max_target_bytes",
                self.max_target_bytes,
                defaults.max_target_bytes,
            ),
        ];
        for (key, value, default) in bounds {
            if value > default {
                out.push(format!("{key} = {value}: above the default {default}"));
            }
        }
        out
    }
}

fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
