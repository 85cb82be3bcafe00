//! Asking about a write the paths policy protects (`write-protected`: git
//! hooks, shell start-up files, CI workflows, ...): the question is about
//! the one real location the tool writes and the access (`write`). A "yes"
//! runs that one call with the matched protected glob left out; just before,
//! the path is judged again and must still be refused exactly as asked
//! (the same location, the same glob), so a link swapped in meanwhile does
//! not carry the approval elsewhere. Blocked entries, the roots and every
//! other protected glob hold as always.

use agentcaps::paths::{Access, PathError, PathPolicy};

use super::Action;
use crate::ToolError;

/// The rule a write can be asked about.
pub(crate) const RULE: &str = "write-protected";

/// A write-protected refusal of the tool's own target, asked about.
#[derive(Debug, Clone)]
pub(crate) struct Protected {
    /// The protected glob the approved write leaves out.
    pub(crate) entry: String,
    /// The path as the call spelled it.
    pub(crate) spelling: String,
    /// The refusal's text, which must still hold just before the write.
    pub(crate) refusal: String,
    /// The exact write: location and access.
    pub(crate) action: Action,
}

impl Protected {
    /// What a remembered "yes" covers besides the location: the rule and
    /// the glob (however the path was spelled).
    pub(crate) fn key(&self) -> String {
        format!("{RULE} {}", self.entry)
    }
}

impl Protected {
    /// Whether `spelling` under `base` is still refused exactly as asked
    /// about (the same location and glob) by `policy`.
    pub(crate) fn still_holds(&self, policy: &PathPolicy, base: &std::path::Path) -> bool {
        matches!(
            policy.check(base, &self.spelling, Access::Write),
            Err(e) if e.to_string() == self.refusal
        )
    }
}

/// What `refused` asks about: a `write-protected` refusal of `target` (the
/// call's one path) under one of `policy`'s protected globs. A refusal of
/// another path (a parent directory the call would create) or of a file
/// the policy protects by name is not asked about.
pub(crate) fn asked_about(
    refused: &ToolError,
    target: Option<&str>,
    policy: &PathPolicy,
) -> Option<Protected> {
    let ToolError::Path { source, .. } = refused else {
        return None;
    };
    let PathError::WriteProtected {
        spelling,
        location,
        entry,
        ..
    } = source.as_ref()
    else {
        return None;
    };
    let is_glob = policy.write_protected().any(|glob| glob == entry);
    (target == Some(spelling.as_str()) && is_glob).then(|| Protected {
        entry: entry.clone(),
        spelling: spelling.clone(),
        refusal: source.to_string(),
        action: Action::path("write", location),
    })
}
