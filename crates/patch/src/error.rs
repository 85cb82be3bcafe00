//! The crate's one error type.

use std::fmt;

use agentcaps_paths::PathError;

/// Something a patch may use that this crate refuses to do, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsupported {
    /// An `ed` script (`5c`, `1,3d`, ...): GNU patch once ran these.
    EdScript,
    /// A context diff (`*** file`, `***************`).
    ContextDiff,
    /// A binary patch (`GIT binary patch`, `Binary files ... differ`).
    Binary,
    /// A git copy (`copy from` / `copy to`).
    Copy,
    /// A mode change (`old mode`/`new mode`, executable new files).
    ModeChange,
    /// Creating, renaming or deleting a symbolic link (mode `120000`).
    Symlink,
    /// A git submodule entry (mode `160000`).
    Submodule,
    /// A header line this parser does not know.
    UnknownHeader,
}

impl Unsupported {
    /// The stable rule id.
    pub fn rule(self) -> &'static str {
        match self {
            Unsupported::EdScript => "ed-script",
            Unsupported::ContextDiff => "context-diff",
            Unsupported::Binary => "binary-patch",
            Unsupported::Copy => "copy",
            Unsupported::ModeChange => "mode-change",
            Unsupported::Symlink => "symlink-mode",
            Unsupported::Submodule => "submodule",
            Unsupported::UnknownHeader => "unknown-header",
        }
    }

    fn advice(self) -> &'static str {
        match self {
            Unsupported::EdScript => {
                "ed scripts are never run; send a unified diff or a *** Begin Patch envelope"
            }
            Unsupported::ContextDiff => {
                "context diffs are not accepted; send a unified diff (diff -u) or a *** Begin Patch envelope"
            }
            Unsupported::Binary => {
                "binary patches are not accepted; only text files can be patched"
            }
            Unsupported::Copy => {
                "copies are not accepted; add the new file with its full content instead"
            }
            Unsupported::ModeChange => {
                "file modes cannot be changed by a patch; only regular (non-executable) file content can"
            }
            Unsupported::Symlink => {
                "symbolic links cannot be created, renamed or deleted by a patch"
            }
            Unsupported::Submodule => "submodules cannot be changed by a patch",
            Unsupported::UnknownHeader => {
                "remove the line or send a plain unified diff or a *** Begin Patch envelope"
            }
        }
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unsupported::EdScript => "an ed script",
            Unsupported::ContextDiff => "a context diff",
            Unsupported::Binary => "a binary patch",
            Unsupported::Copy => "a copy",
            Unsupported::ModeChange => "a mode change",
            Unsupported::Symlink => "a symbolic link",
            Unsupported::Submodule => "a submodule",
            Unsupported::UnknownHeader => "an unknown header",
        })
    }
}

/// A malformed shape that models often write, named so that the refusal
/// can say how to repair it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Malformed {
    /// Line numbers copied from a file reader in front of the lines
    /// (`12: fn main`, `  12 | fn main`, `12\tfn main`).
    LineNumberPrefix,
    /// A hunk header without real numbers (`@@ -XXX @@`, `@@ ... @@`,
    /// `@@ -N,M +N,M @@`).
    PlaceholderHunkHeader,
    /// A path that repeats the repository directory (`repo/src/x` from
    /// inside `repo`, `src/src/x`): `fixed` is the name that exists.
    DoubledPath {
        /// The name with the repetition removed.
        fixed: String,
    },
}

impl Malformed {
    /// The stable rule id.
    pub fn rule(&self) -> &'static str {
        match self {
            Malformed::LineNumberPrefix => "line-number-prefix",
            Malformed::PlaceholderHunkHeader => "placeholder-hunk-header",
            Malformed::DoubledPath { .. } => "doubled-path",
        }
    }
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::LineNumberPrefix => f.write_str(
                "starts with a line number copied from a file reader (`12: fn main`); remove the numbers: a hunk line is ` `, `-` or `+` then the file's text exactly",
            ),
            Malformed::PlaceholderHunkHeader => f.write_str(
                "is a placeholder hunk header; write the real numbers (`@@ -12,3 +12,4 @@`: first line and line count, old side then new side), or send a `*** Begin Patch` envelope, whose `@@` lines need no numbers",
            ),
            Malformed::DoubledPath { fixed } => write!(
                f,
                "spells a directory twice (the repository's own name, or a repeated component); the file is {fixed:?}: name files relative to the working directory"
            ),
        }
    }
}

/// Why a path as spelled in the patch is refused before any policy check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnsafePath {
    /// Starts at a root (`/x`, `\x`, `C:\x`, `C:x`).
    Absolute,
    /// Has a `..` component.
    DotDot,
    /// Empty, or has an empty component (`a//b`, `a/`).
    Empty,
    /// Has a backslash (a separator on Windows, a name character elsewhere).
    Backslash,
    /// Fewer components than the strip level (`-p`) removes.
    Strip,
}

impl UnsafePath {
    /// The stable rule id.
    pub fn rule(self) -> &'static str {
        match self {
            UnsafePath::Absolute => "absolute-path",
            UnsafePath::DotDot => "dot-dot",
            UnsafePath::Empty => "empty-name",
            UnsafePath::Backslash => "backslash",
            UnsafePath::Strip => "strip-level",
        }
    }
}

impl fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnsafePath::Absolute => {
                "absolute paths are refused; name files relative to the working directory"
            }
            UnsafePath::DotDot => {
                "`..` components are refused; name files below the working directory"
            }
            UnsafePath::Empty => "empty names and empty components are refused; name a file",
            UnsafePath::Backslash => "backslashes are refused in names; use `/` between components",
            UnsafePath::Strip => "the name has fewer components than the strip level (-p) removes",
        })
    }
}

/// A limit of [`PatchPolicyConfig`](crate::PatchPolicyConfig).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Bound {
    /// `max_patch_bytes`.
    PatchBytes,
    /// `max_files`.
    Files,
    /// `max_hunks`.
    Hunks,
    /// `max_target_bytes` (a file before or after the patch).
    TargetBytes,
    /// The comparison work spent locating hunks ([`crate::MAX_MATCH_WORK`]
    /// units: one per line compared, one more per 64 bytes; a fixed limit,
    /// not configurable: it only stops pathological searches).
    MatchWork,
}

impl Bound {
    /// What the limit counts.
    pub fn unit(self) -> &'static str {
        match self {
            Bound::PatchBytes | Bound::TargetBytes => "bytes",
            Bound::Files => "files",
            Bound::Hunks => "hunks",
            Bound::MatchWork => {
                "units of comparison work (one per line compared, one more per 64 bytes)"
            }
        }
    }

    /// The stable rule id: the configuration key in kebab case
    /// (`max-hunks`), or `match-work`.
    pub fn rule(self) -> &'static str {
        match self {
            Bound::PatchBytes => "max-patch-bytes",
            Bound::Files => "max-files",
            Bound::Hunks => "max-hunks",
            Bound::TargetBytes => "max-target-bytes",
            Bound::MatchWork => "match-work",
        }
    }

    /// The configuration key (`max_hunks`); `match-work` has none.
    pub fn key(self) -> &'static str {
        match self {
            Bound::PatchBytes => "max_patch_bytes",
            Bound::Files => "max_files",
            Bound::Hunks => "max_hunks",
            Bound::TargetBytes => "max_target_bytes",
            Bound::MatchWork => "match-work",
        }
    }
}

/// Where a hunk that matched nowhere came closest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// 1-based line of the file where the closest window starts.
    pub line: usize,
    /// How many of the expected lines are equal there (ignoring surrounding
    /// whitespace).
    pub equal_lines: usize,
    /// A short diff: `-expected` / `+found` for the first differing lines.
    pub diff: String,
}

/// Which check on the existing tree a file failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateCheck {
    /// Creating (or moving onto) a file that exists.
    Exists,
    /// Updating, deleting or moving a file that does not exist.
    Missing,
    /// Deleting a file whose content differs from what the patch removes.
    ContentDiffers,
    /// The name is a directory or something other than a regular file.
    NotAFile,
    /// A directory the file needs is a file.
    ParentNotADirectory,
    /// The file is not UTF-8 text and a line-based edit cannot be trusted.
    NotText,
}

impl StateCheck {
    /// The stable rule id.
    pub fn rule(self) -> &'static str {
        match self {
            StateCheck::Exists => "exists",
            StateCheck::Missing => "missing",
            StateCheck::ContentDiffers => "content-differs",
            StateCheck::NotAFile => "not-a-file",
            StateCheck::ParentNotADirectory => "parent-not-a-directory",
            StateCheck::NotText => "not-text",
        }
    }
}

impl fmt::Display for StateCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateCheck::Exists => "it already exists; update it instead of creating it, or delete it first in a separate patch",
            StateCheck::Missing => "it does not exist; create it with a new-file section",
            StateCheck::ContentDiffers => "its content differs from what the patch deletes; re-read it and delete exactly its content",
            StateCheck::NotAFile => "it is not a regular file; only regular files can be patched",
            StateCheck::ParentNotADirectory => "one of its parent directories is a file",
            StateCheck::NotText => "it is not UTF-8 text",
        })
    }
}

/// Everything that can go wrong parsing or applying a patch.
///
/// Refusals ([`is_refusal`](Self::is_refusal)) are decisions of the policy:
/// a path outside what is allowed, a symbolic link, a mode change, an ed
/// script, a bound. The other variants say the patch does not fit the files
/// (or could not be read or written); nothing was changed in either case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PatchError {
    /// The patch text is malformed.
    #[error("patch line {line}: expected {expected}, found {found:?}")]
    Parse {
        /// 1-based line of the patch.
        line: usize,
        /// What the parser expected there.
        expected: &'static str,
        /// The line (cut to 80 characters).
        found: String,
    },
    /// A hunk header's line counts disagree with its body.
    #[error(
        "patch line {line}: the hunk header says {stated} {side} lines but the body has {found}; counts are checked, not recounted, so fix the @@ header"
    )]
    HeaderCounts {
        /// 1-based line of the hunk header.
        line: usize,
        /// `"old"` or `"new"`.
        side: &'static str,
        /// What the header says.
        stated: usize,
        /// What the body has (so far, when it ended early).
        found: usize,
    },
    /// A construct refused by name (ed scripts, binary patches, copies, mode
    /// changes, symbolic links, unknown headers).
    #[error("patch line {line}: {what} is refused ({text:?}): {}", .what.advice())]
    Unsupported {
        /// 1-based line of the patch.
        line: usize,
        /// What was found.
        what: Unsupported,
        /// The line (cut to 80 characters).
        text: String,
    },
    /// A malformed shape that models often write, with its repair.
    #[error("patch line {line}: {found:?} {shape}")]
    Malformed {
        /// 1-based line of the patch.
        line: usize,
        /// Which shape.
        shape: Malformed,
        /// The line, or the name (cut to 80 characters).
        found: String,
    },
    /// The names one file section gives disagree after prefix stripping
    /// (`diff --git a/.env b/.env` over `--- a/a.txt`, `+++ b/.bashrc` in a
    /// rename): which one would be written is not clear, so none is.
    #[error(
        "patch line {line} refused (inconsistent-names): {first_header} names {first:?} but {second_header} names {second:?}; every name of a section (`diff --git`, `---`/`+++`, `rename from`/`rename to`) must be the same file once the a/ and b/ prefixes are removed; give each file its own section"
    )]
    InconsistentNames {
        /// 1-based line where the section starts.
        line: usize,
        /// The header that gave the first name (`diff --git`, `---`, ...).
        first_header: &'static str,
        /// The first name, prefix stripped.
        first: String,
        /// The header that disagrees.
        second_header: &'static str,
        /// Its name, prefix stripped.
        second: String,
    },
    /// A path refused from its spelling alone.
    #[error("path {path:?} refused ({}): {why}", .why.rule())]
    UnsafePath {
        /// The path as the patch names it.
        path: String,
        /// The rule.
        why: UnsafePath,
    },
    /// The path policy refused a path.
    #[error("path {path:?} refused by the path policy: {source}")]
    PathPolicy {
        /// The path as the patch names it (after prefix stripping).
        path: String,
        /// The policy's decision (boxed, as in [`PatchError::Io`]).
        #[source]
        source: Box<PathError>,
    },
    /// A path goes through a symbolic link (now or as the patch would leave
    /// the tree).
    #[error(
        "path {path:?} refused (symlink): {link:?} is a symbolic link; patches never write through, create, rename or delete links; name the real file instead"
    )]
    Symlink {
        /// The path as the patch names it.
        path: String,
        /// The component that is a link.
        link: String,
    },
    /// Two sections of one patch name the same file.
    #[error(
        "path {path:?} refused (one-fate): it is named by two sections of the patch; give each file one section (all its hunks together)"
    )]
    DuplicatePath {
        /// The path named twice.
        path: String,
    },
    /// A check on the existing tree failed.
    #[error("{path:?} cannot be patched ({}): {check}", .check.rule())]
    State {
        /// The path.
        path: String,
        /// The failed check.
        check: StateCheck,
    },
    /// A hunk matches nowhere.
    #[error("{}", no_match_message(path, *hunk, expected, closest.as_ref()))]
    NoMatch {
        /// The file.
        path: String,
        /// 1-based index of the hunk within its file section.
        hunk: usize,
        /// The lines the hunk expected (context and removed lines).
        expected: Vec<String>,
        /// Where it came closest, if anywhere.
        closest: Option<Candidate>,
    },
    /// A hunk matches in more than one place equally well.
    #[error(
        "hunk {hunk} of {path:?} is ambiguous: its context matches at lines {}; add more context lines (or an @@ anchor) so it matches once",
        line_list(lines)
    )]
    Ambiguous {
        /// The file.
        path: String,
        /// 1-based index of the hunk within its file section.
        hunk: usize,
        /// 1-based lines where it matches (every one, up to 20).
        lines: Vec<usize>,
    },
    /// A limit of the configuration was exceeded.
    #[error("refused ({}): {actual} {unit}, more than the limit of {limit}{}", .bound.rule(), bound_subject(*bound, path.as_deref()), unit = .bound.unit())]
    Bound {
        /// Which limit.
        bound: Bound,
        /// The limit.
        limit: u64,
        /// What the patch needs.
        actual: u64,
        /// The file, for [`Bound::TargetBytes`].
        path: Option<String>,
    },
    /// Reading or writing failed (not a policy decision). Nothing was left
    /// changed: what had been done was rolled back.
    #[error("{op} {path:?} failed: {source}")]
    Io {
        /// What was being done (`"read"`, `"stage"`, `"rename"`, ...).
        op: &'static str,
        /// The path.
        path: String,
        /// The failure. Boxed: a [`PathError`] holds paths, which are
        /// larger on some platforms (Windows), and every `Result` of this
        /// crate carries a [`PatchError`]; the box keeps them small.
        #[source]
        source: Box<PathError>,
    },
    /// Applying failed and so did undoing it: the tree may be partly changed.
    #[error(
        "applying failed ({cause}) and the rollback failed too for {failed:?}; check these files by hand"
    )]
    RollbackFailed {
        /// Why applying stopped.
        cause: Box<PatchError>,
        /// The paths that could not be restored.
        failed: Vec<String>,
    },
}

fn line_list(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn bound_subject(bound: Bound, path: Option<&str>) -> String {
    if bound == Bound::MatchWork {
        return format!(
            " locating hunks in {:?}; give the hunks more distinctive context lines",
            path.unwrap_or_default()
        );
    }
    let key = bound.key();
    match path {
        Some(p) => format!(" for {p:?}; split the change or raise `{key}` in the policy"),
        None => format!("; split the patch or raise `{key}` in the policy"),
    }
}

fn no_match_message(
    path: &str,
    hunk: usize,
    expected: &[String],
    closest: Option<&Candidate>,
) -> String {
    let mut s = format!("hunk {hunk} of {path:?} matches nowhere; it expected");
    for line in expected.iter().take(6) {
        s.push_str(&format!("\n  {}", cut(line)));
    }
    if expected.len() > 6 {
        s.push_str(&format!("\n  ({} more lines)", expected.len() - 6));
    }
    match closest {
        Some(c) => s.push_str(&format!(
            "\nclosest: line {} ({} of {} lines equal):\n{}\nre-read the file and rebase the hunk on its current content",
            c.line,
            c.equal_lines,
            expected.len(),
            c.diff
        )),
        None => s.push_str("\nnothing in the file is close; re-read the file"),
    }
    if !expected.is_empty()
        && expected
            .iter()
            .all(|l| crate::unified::has_line_number_prefix(l.trim_start()))
    {
        s.push_str(
            "\nevery line starts with a line number (`12: `) that a file reader adds; remove the numbers",
        );
    }
    s
}

/// Cuts a line to at most 80 characters for messages.
pub(crate) fn cut(s: &str) -> String {
    let s = s.trim_end_matches('\r');
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(77).collect();
        t.push_str("...");
        t
    }
}

impl PatchError {
    /// A short stable id of the rule or failure (`"dot-dot"`, `"symlink"`,
    /// `"ambiguous"`, `"max-hunks"`, ... or the path policy's own rule).
    pub fn rule(&self) -> &'static str {
        match self {
            PatchError::Parse { .. } => "parse",
            PatchError::Malformed { shape, .. } => shape.rule(),
            PatchError::InconsistentNames { .. } => "inconsistent-names",
            PatchError::HeaderCounts { .. } => "header-counts",
            PatchError::Unsupported { what, .. } => what.rule(),
            PatchError::UnsafePath { why, .. } => why.rule(),
            PatchError::PathPolicy { source, .. } => source.rule(),
            PatchError::Symlink { .. } => "symlink",
            PatchError::DuplicatePath { .. } => "one-fate",
            PatchError::State { check, .. } => check.rule(),
            PatchError::NoMatch { .. } => "no-match",
            PatchError::Ambiguous { .. } => "ambiguous",
            PatchError::Bound { bound, .. } => bound.rule(),
            PatchError::Io { .. } => "io",
            PatchError::RollbackFailed { .. } => "rollback-failed",
        }
    }

    /// Whether this is a decision of the policy (exit code 3 in the CLI)
    /// rather than a patch that does not apply or an I/O failure.
    pub fn is_refusal(&self) -> bool {
        match self {
            PatchError::Unsupported { .. }
            | PatchError::UnsafePath { .. }
            | PatchError::Symlink { .. }
            | PatchError::DuplicatePath { .. }
            | PatchError::InconsistentNames { .. }
            | PatchError::Bound { .. } => true,
            PatchError::PathPolicy { source, .. } => source.is_refusal(),
            _ => false,
        }
    }

    pub(crate) fn parse(line: usize, expected: &'static str, found: &str) -> Self {
        PatchError::Parse {
            line,
            expected,
            found: cut(found),
        }
    }

    pub(crate) fn malformed(line: usize, shape: Malformed, found: &str) -> Self {
        PatchError::Malformed {
            line,
            shape,
            found: cut(found),
        }
    }

    pub(crate) fn unsupported(line: usize, what: Unsupported, text: &str) -> Self {
        PatchError::Unsupported {
            line,
            what,
            text: cut(text),
        }
    }
}
