//! The crate's one error type: refusals (the policy said no) and failures.

use std::io;
use std::path::PathBuf;

/// Which reading of a spelling produced a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reading {
    /// The absolute, lexically normalized spelling (no file-system access).
    Lexical,
    /// Links followed as met; `..` goes to the physical parent.
    Posix,
    /// `..` applied lexically first, then the remaining links followed.
    Windows,
}

impl std::fmt::Display for Reading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Reading::Lexical => "lexical",
            Reading::Posix => "POSIX",
            Reading::Windows => "Windows",
        })
    }
}

/// Why a spelling cannot be judged at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unjudgeable {
    /// A NUL byte: the OS would cut the spelling short.
    Nul,
    /// `\\.\` or `\\?\` (or `\??\`): a Windows device or verbatim namespace.
    DeviceNamespace,
    /// `\\server\share` or `//server/share`: a network location.
    Unc,
    /// `C:foo` or `C:\foo`: resolved through a per-drive current directory
    /// this judge cannot see.
    Drive,
    /// `CON`, `NUL`, `COM1`, `LPT¹`, `CONIN$`, ... (any extension, any case):
    /// a device, not a file.
    ReservedName,
    /// `GIT~1`: a Windows 8.3 short name, resolved through a hidden table.
    ShortName,
    /// `...`, `. .`, `:x`: Windows strips it to an empty name or a stream of
    /// the directory.
    EmptyName,
    /// `．．／x`: look-alikes of `/`, `\`, `:` and `.` that Windows'
    /// best-fit mapping (in programs using the ANSI APIs) turns into them.
    BestFit,
}

impl Unjudgeable {
    /// The stable rule id (`"nul"`, `"windows-device"`, ...).
    pub fn rule(self) -> &'static str {
        match self {
            Unjudgeable::Nul => "nul",
            Unjudgeable::DeviceNamespace => "windows-namespace",
            Unjudgeable::Unc => "windows-unc",
            Unjudgeable::Drive => "windows-drive",
            Unjudgeable::ReservedName => "windows-device",
            Unjudgeable::ShortName => "windows-short-name",
            Unjudgeable::EmptyName => "windows-empty-name",
            Unjudgeable::BestFit => "windows-best-fit",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Unjudgeable::Nul => "it contains a NUL byte",
            Unjudgeable::DeviceNamespace => {
                "Windows reads it as a device or verbatim namespace path"
            }
            Unjudgeable::Unc => "Windows reads it as a network (UNC) path",
            Unjudgeable::Drive => {
                "Windows resolves a drive letter through state this check cannot see"
            }
            Unjudgeable::ReservedName => {
                "Windows reads a reserved device name (CON, NUL, COM1, ...) as a device"
            }
            Unjudgeable::ShortName => "Windows may read it as an 8.3 short name of another file",
            Unjudgeable::EmptyName => {
                "Windows strips a name made of dots, spaces or a stream to nothing"
            }
            Unjudgeable::BestFit => {
                "Windows programs may read its look-alike of `/`, `\\`, `:` or `.` as the real character"
            }
        }
    }
}

impl std::fmt::Display for Unjudgeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.what())
    }
}

/// Why a name is not portable enough to be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotPortable {
    /// Empty name, `.` or `..`.
    Empty,
    /// A control character (U+0000–U+001F, U+007F–U+009F).
    Control,
    /// A bidirectional-text control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C).
    Bidi,
    /// A character Windows forbids in names: `:` `*` `?` `"` `<` `>` `|` `\` or `/`.
    Reserved,
    /// A trailing dot or space, which Windows strips.
    TrailingDotOrSpace,
    /// A reserved device name (`CON`, `NUL`, `COM1`, ...).
    DeviceName,
    /// An 8.3 short-name look-alike of a protected name (`GIT~1`).
    ShortName,
    /// Not valid UTF-8 (other systems cannot spell it).
    NotUtf8,
}

impl NotPortable {
    fn what(self) -> &'static str {
        match self {
            NotPortable::Empty => "it is empty, `.` or `..`",
            NotPortable::Control => "it contains a control character",
            NotPortable::Bidi => "it contains a bidirectional-text control character",
            NotPortable::Reserved => {
                "it contains a character Windows forbids in names (: * ? \" < > | \\) or a look-alike of one"
            }
            NotPortable::TrailingDotOrSpace => {
                "it ends with a dot or a space, which Windows strips"
            }
            NotPortable::DeviceName => "it is a reserved Windows device name (CON, NUL, COM1, ...)",
            NotPortable::ShortName => "it looks like a Windows 8.3 short name (such as GIT~1)",
            NotPortable::NotUtf8 => "it is not valid UTF-8",
        }
    }
}

impl std::fmt::Display for NotPortable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.what())
    }
}

/// Everything that can go wrong in this crate.
///
/// Refusals (see [`PathError::is_refusal`]) name the refused spelling, the
/// reading that escaped, where it landed and the rule; their `Display` is
/// written for the model that asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// A reading of the spelling lands outside every allowed root.
    #[error(
        "refused `{}`: its {reading} reading lands at {at}, outside the allowed directories ({allowed}); use a path inside them", shown(.spelling), at = shown_path(.location))]
    OutsideRoots {
        /// What the agent wrote.
        spelling: String,
        /// The reading that escaped.
        reading: Reading,
        /// Where it landed.
        location: PathBuf,
        /// The allowed roots, for the message.
        allowed: String,
    },
    /// A reading lands on or under a blocked entry.
    #[error(
        "refused `{}`: its {reading} reading lands at {at}, which is blocked by `{entry}`; choose another file", shown(.spelling), at = shown_path(.location))]
    Blocked {
        /// What the agent wrote.
        spelling: String,
        /// The reading that was blocked.
        reading: Reading,
        /// Where it landed.
        location: PathBuf,
        /// The blocked root or glob that matched.
        entry: String,
    },
    /// A write or create under a root allowed for reading only.
    #[error(
        "refused writing `{}`: {at} is under {root}, which is read-only; write only inside the read-write directories", shown(.spelling), at = shown_path(.location))]
    ReadOnly {
        /// What the agent wrote.
        spelling: String,
        /// The reading that landed there.
        reading: Reading,
        /// Where it landed.
        location: PathBuf,
        /// The read-only root.
        root: PathBuf,
    },
    /// A write to a place where written files become code run later.
    #[error(
        "refused writing `{}`: {at} matches `{entry}`, a file that tools run or load later, so it is protected from writes; it can still be read", shown(.spelling), at = shown_path(.location))]
    WriteProtected {
        /// What the agent wrote.
        spelling: String,
        /// The reading that landed there.
        reading: Reading,
        /// Where it landed.
        location: PathBuf,
        /// The write-protected glob that matched.
        entry: String,
    },
    /// A write whose location a link at a guarded name makes a blocked or
    /// write-protected entry (`.cargo -> cfg` makes `cfg/config.toml`
    /// cargo's config).
    #[error(
        "refused writing `{}`: the link {link} makes {at} reachable as {alias}, which {}; write elsewhere, or remove the link if it should not be there", shown(.spelling), through_link_reason(.entry, *.blocked), at = shown_path(.location), link = shown_path(.link), alias = shown_path(.alias))]
    ThroughLink {
        /// What the agent wrote.
        spelling: String,
        /// Where the write lands.
        location: PathBuf,
        /// The link that gives it the other name.
        link: Box<std::path::Path>,
        /// The other name.
        alias: Box<std::path::Path>,
        /// The blocked or write-protected glob the other name matches.
        entry: String,
        /// Whether `entry` is blocked (otherwise write-protected).
        blocked: bool,
    },
    /// A spelling whose location cannot be judged.
    #[error("refused `{}`: {why}; spell a plain path instead", shown(.spelling))]
    Unjudgeable {
        /// What the agent wrote (NUL shown as `\0`).
        spelling: String,
        /// Which rule.
        why: Unjudgeable,
    },
    /// A name being created is not portable.
    #[error("refused creating `{}`: {why}; use a name of letters, digits, `.`, `-` and `_`", shown(.name))]
    NotPortable {
        /// The refused name component.
        name: String,
        /// Which rule.
        why: NotPortable,
    },
    /// Following links came back to a link already followed.
    #[error("refused `{}`: its links loop (at {via}); use a path without the loop", shown(.spelling), via = shown_path(.link))]
    LinkLoop {
        /// What the agent wrote.
        spelling: String,
        /// The reading that looped.
        reading: Reading,
        /// A link in the loop.
        link: PathBuf,
    },
    /// More than 40 links on the way.
    #[error(
        "refused `{}`: resolving it follows more than {limit} links; use a more direct path", shown(.spelling))]
    TooManyLinks {
        /// What the agent wrote.
        spelling: String,
        /// The reading that gave up.
        reading: Reading,
        /// The limit (40).
        limit: u32,
    },
    /// Judging would take more lookups than allowed.
    #[error(
        "refused `{}`: checking it would take more than {budget} file-system lookups; use a shorter path or fewer links", shown(.spelling))]
    TooCostly {
        /// What the agent wrote.
        spelling: String,
        /// The budget that would be exceeded.
        budget: u64,
    },
    /// The path is a directory, file or link where the operation needs
    /// something else, or a link was swapped in after the check.
    #[error(
        "refused `{}`: at {at}, {detail}; check the path and try again", shown(.spelling), at = shown_path(.location))]
    Changed {
        /// What the agent wrote.
        spelling: String,
        /// The checked real location.
        location: PathBuf,
        /// What was found.
        detail: String,
    },
    /// The file changed since the writer read it (another writer replaced
    /// or modified it): nothing was written.
    #[error(
        "refused writing `{}`: {at} changed since it was read ({detail}), so writing would lose that change; read it again and redo the change", shown(.spelling), at = shown_path(.location))]
    Conflict {
        /// What the agent wrote.
        spelling: String,
        /// The file's real location.
        location: PathBuf,
        /// What changed.
        detail: String,
    },
    /// A link would point outside every allowed root once moved (a
    /// relative link moved shallower or deeper resolves elsewhere).
    #[error(
        "refused moving `{}`: the link {link} would point to {at}, outside the allowed directories; move the link where it still points inside them, or recreate it", shown(.spelling), link = shown_path(.link), at = shown_path(.target))]
    LinkOutsideRoots {
        /// What the agent wrote (the moved path).
        spelling: String,
        /// Where the link would be.
        link: PathBuf,
        /// Where it would then lead.
        target: PathBuf,
    },
    /// A link would be put at a name on the way to a write-protected entry
    /// (`.cargo`, `.github`, `.git/hooks`): through it, files written under
    /// ordinary names elsewhere would be read at protected ones.
    #[error(
        "refused moving `{}`: the link would be at {link}, which matches `{entry}`; through it, files written under ordinary names would be read as protected ones, so give the link another name", shown(.spelling), link = shown_path(.link))]
    LinkAtGuardedName {
        /// What the agent wrote (the moved path).
        spelling: String,
        /// Where the link would be.
        link: PathBuf,
        /// The write-protected glob its name leads to.
        entry: String,
    },
    /// The target already exists and the operation does not replace files.
    #[error(
        "`{}` already exists at {at}; choose another name or overwrite it explicitly", shown(.spelling), at = shown_path(.location))]
    AlreadyExists {
        /// What the agent wrote.
        spelling: String,
        /// Where it exists.
        location: PathBuf,
    },
    /// A file is larger than the caller's limit.
    #[error(
        "refused reading `{}`: it is {len} bytes, more than the limit of {limit}; read a part of it", shown(.spelling))]
    TooLarge {
        /// What the agent wrote.
        spelling: String,
        /// The file's size.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The policy itself is wrong (relative root, bad glob, root missing).
    #[error("invalid path policy entry `{entry}`: {reason}")]
    InvalidPolicy {
        /// The entry.
        entry: String,
        /// Why.
        reason: String,
    },
    /// The base directory is not absolute.
    #[error("the base directory {base} is not absolute")]
    RelativeBase {
        /// The base given.
        base: PathBuf,
    },
    /// A real I/O failure (not a policy decision).
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation (`"open"`, `"lstat"`, ...).
        op: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Text from the agent, with control and bidirectional-text characters
/// escaped so a message cannot be garbled or disguised by them.
fn shown(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// What the other name of a [`PathError::ThroughLink`] is.
fn through_link_reason(entry: &str, blocked: bool) -> String {
    if blocked {
        format!("is blocked by `{entry}`")
    } else {
        format!(
            "matches `{entry}`, a file that tools run or load later, so it is protected from writes"
        )
    }
}

/// A location for a message: lossy, escaped like agent text (names on disk
/// and link targets are attacker-controlled too).
fn shown_path(path: &std::path::Path) -> String {
    shown(&path.to_string_lossy())
}

impl PathError {
    /// Whether this is a policy decision (the agent asked for something not
    /// allowed) rather than a failure.
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            PathError::InvalidPolicy { .. }
                | PathError::RelativeBase { .. }
                | PathError::Io { .. }
                | PathError::AlreadyExists { .. }
        )
    }

    /// A short stable id for the rule (used in CLI JSON and logs).
    pub fn rule(&self) -> &'static str {
        match self {
            PathError::OutsideRoots { .. } => "outside-roots",
            PathError::Blocked { .. } => "blocked",
            PathError::ReadOnly { .. } => "read-only",
            PathError::WriteProtected { .. } => "write-protected",
            PathError::ThroughLink { blocked: true, .. } => "blocked",
            PathError::ThroughLink { blocked: false, .. } => "write-protected",
            PathError::Unjudgeable { why, .. } => why.rule(),
            PathError::NotPortable { .. } => "not-portable",
            PathError::LinkLoop { .. } => "link-loop",
            PathError::TooManyLinks { .. } => "too-many-links",
            PathError::TooCostly { .. } => "too-costly",
            PathError::Changed { .. } => "changed",
            PathError::Conflict { .. } => "conflict",
            PathError::LinkOutsideRoots { .. } => "link-outside-roots",
            PathError::LinkAtGuardedName { .. } => "write-protected",
            PathError::AlreadyExists { .. } => "already-exists",
            PathError::TooLarge { .. } => "too-large",
            PathError::InvalidPolicy { .. } => "invalid-policy",
            PathError::RelativeBase { .. } => "relative-base",
            PathError::Io { .. } => "io",
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        PathError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}
