//! The changes a run reports: what landed and what was refused, and why.

use std::fmt;

/// What a command did to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ChangeAction {
    /// A new file, directory or symbolic link.
    Create,
    /// New content for an existing file (or a link replaced).
    Modify,
    /// An entry removed.
    Delete,
    /// A file moved: `path` is where it is now, `from` where it was.
    /// Reported where the file at the new place is, byte for byte and
    /// with the same modification time, the file removed from the old
    /// one; otherwise a move is a delete and a create.
    Rename,
    /// Permission bits changed.
    Mode,
    /// A symbolic or hard link.
    Link,
}

impl ChangeAction {
    /// The word used in results: `create`, `modify`, `delete`, `rename`,
    /// `mode` or `link`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Modify => "modify",
            Self::Delete => "delete",
            Self::Rename => "rename",
            Self::Mode => "mode",
            Self::Link => "link",
        }
    }
}

impl fmt::Display for ChangeAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rules the write-back itself refuses changes by (the path policy's
/// own, such as `write-protected`, come from the path crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The real entry changed while the command ran.
    Conflict,
    /// A FIFO, socket or device.
    SpecialFile,
    /// A mode change of an existing directory.
    DirectoryMode,
    /// A file or link in the place of a directory or special file.
    ReplacesDirectory,
    /// A hard link to a file the command did not create.
    HardLink,
    /// Set-user-ID, set-group-ID or sticky bits.
    SetId,
    /// A git config key that could run a program.
    GitConfigKey,
    /// A link whose target leaves the roots.
    LinkOutsideRoots,
    /// The staging layer could not be read.
    StagingUnreadable,
    /// The commit failed and was rolled back.
    CommitFailed,
    /// Extended attributes changed (never applied).
    Xattr,
    /// A record in git (an index entry, a commit) deletes a path the view
    /// masked.
    MaskedDeletion,
}

impl Rule {
    /// The rule's ID, as results carry it.
    pub(crate) fn rule(self) -> &'static str {
        match self {
            Self::Conflict => "conflict",
            Self::SpecialFile => "special-file",
            Self::DirectoryMode => "directory-mode",
            Self::ReplacesDirectory => "replaces-directory",
            Self::HardLink => "hard-link",
            Self::SetId => "set-id",
            Self::GitConfigKey => "git-config-key",
            Self::LinkOutsideRoots => "link-outside-roots",
            Self::StagingUnreadable => "staging-unreadable",
            Self::CommitFailed => "commit-failed",
            Self::Xattr => "xattr",
            Self::MaskedDeletion => "masked-deletion",
        }
    }

    /// The ID as an owned string.
    pub(crate) fn id(self) -> String {
        self.rule().to_owned()
    }
}

/// A change that landed in the real tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Change {
    /// Relative to the working directory when beneath it, absolute
    /// otherwise.
    pub path: String,
    /// What was done.
    pub action: ChangeAction,
    /// For a rename, where the file was (shown like `path`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// A change that was dropped: it never reached the real tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct RefusedChange {
    /// Relative to the working directory when beneath it, absolute
    /// otherwise. A directory stands for everything under it.
    pub path: String,
    /// What the command did.
    pub action: ChangeAction,
    /// For a rename, where the file was (and, the rename refused, still
    /// is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The rule that refused it (`write-protected`, `blocked`,
    /// `not-portable`, `link-outside-roots`, `special-file`, `set-id`,
    /// `hard-link`, `read-only`, `outside-roots`, `conflict`,
    /// `commit-failed`, ...).
    pub rule: String,
    /// Why, in one sentence.
    pub reason: String,
}

/// What a command's writes came to.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Changes {
    /// The changes committed to the real tree.
    pub applied: Vec<Change>,
    /// The changes dropped, each with its rule.
    pub refused: Vec<RefusedChange>,
}

impl Changes {
    /// Whether the command changed nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.applied.is_empty() && self.refused.is_empty()
    }
}
