//! What applying a patch did (or, in a dry run, would do).

use serde::Serialize;

/// The result of [`Patcher::apply`](crate::Patcher::apply): one entry per
/// file section, in patch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ApplyReport {
    /// `true` when nothing was written.
    pub dry_run: bool,
    /// Per file, in patch order.
    pub files: Vec<FileReport>,
    /// Replaced or deleted files that were kept aside under a temporary
    /// name while the patch was put in place, and could not be removed
    /// afterwards. The patch is applied; these are left for the user to
    /// remove. Normally empty (and then not serialised).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_over: Vec<String>,
    /// Dry runs: the unified diff that would be applied, every file in
    /// patch order, as a git-style diff (`git apply` and `patch -p1` accept
    /// it). Each hunk stands at the line where it matched, with the file's
    /// own context and removed lines, so offsets and concessions are
    /// visible. `None` (and not serialised) when the patch was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FileReport {
    /// The file's path relative to the base directory (its new path for a move).
    pub path: String,
    /// The old path, for a move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// Created, modified, deleted or moved.
    pub action: FileAction,
    /// Each hunk, in order.
    pub hunks: Vec<HunkReport>,
}

/// What a patch did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FileAction {
    /// The file did not exist and now does.
    Created,
    /// The file's content changed in place.
    Modified,
    /// The file was removed.
    Deleted,
    /// The file was renamed (its content may have changed too).
    Moved,
}

impl FileAction {
    /// The word for it, as serialised: `created`, `modified`, `deleted`,
    /// `moved`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Created => "created",
            FileAction::Modified => "modified",
            FileAction::Deleted => "deleted",
            FileAction::Moved => "moved",
        }
    }
}

/// Where one hunk applied, and what was conceded to make it apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HunkReport {
    /// 1-based index of the hunk within its file section.
    pub index: usize,
    /// The line the hunk header stated (unified diffs), 1-based.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stated_line: Option<usize>,
    /// The line where the hunk's first old line was found, 1-based.
    pub applied_line: usize,
    /// `applied_line - stated_line` (0 for the envelope, which states none).
    pub offset: i64,
    /// What matching conceded, in the order tried; empty for an exact match
    /// at the stated line.
    pub concessions: Vec<Concession>,
}

/// A way matching was more forgiving than "exactly here".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Concession {
    /// Found at a different line than stated.
    Offset,
    /// Matched only once trailing whitespace was ignored.
    TrailingWhitespace,
    /// Matched only with indentation and Unicode punctuation folded
    /// (lenient mode).
    Lenient,
}

#[cfg(test)]
mod tests {
    use super::FileAction;

    #[test]
    fn action_words_are_the_serialised_ones() {
        for action in [
            FileAction::Created,
            FileAction::Modified,
            FileAction::Deleted,
            FileAction::Moved,
        ] {
            let json = serde_json::to_value(action).unwrap_or_default();
            assert_eq!(json.as_str(), Some(action.as_str()));
        }
    }
}
