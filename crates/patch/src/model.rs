//! The parsed form of a patch, shared by both formats.
//!
//! Names are kept exactly as the patch wrote them (after C-quote decoding);
//! prefix stripping happens when the patch is applied, because the strip
//! level is an apply option.

/// A number about where something came from (a 1-based line of the patch
/// text, the text's length). It does not take part in equality, so that a
/// patch printed and parsed again compares equal.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Incidental(pub(crate) usize);

impl PartialEq for Incidental {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Incidental {}

/// The two names of a `diff --git` line, when they can be told apart. Like
/// [`Incidental`], not part of equality: a line whose names could not be
/// told apart prints back as one whose names can (the section's other
/// names), which says the same thing.
#[derive(Debug, Clone, Default)]
pub(crate) struct GitNames(pub(crate) Option<(String, String)>);

impl PartialEq for GitNames {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for GitNames {}

/// Which of the two supported formats a patch was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// A unified diff, plain (`diff -u`) or git-style (`diff --git`).
    Unified,
    /// The `*** Begin Patch` … `*** End Patch` envelope.
    Envelope,
}

/// One line of a hunk body, without its line terminator. A `\r` before the
/// terminator stays in the text (CRLF patches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// Present before and after (` `).
    Context(String),
    /// Present before only (`-`).
    Remove(String),
    /// Present after only (`+`).
    Add(String),
}

impl Line {
    /// Reads a body line by its first character: ` `, `-`, `+`, or a blank
    /// line (an empty context line whose space an editor ate). `None` for
    /// anything else.
    pub(crate) fn from_body(raw: &str) -> Option<Line> {
        let mut chars = raw.chars();
        let marker = chars.next();
        let text = chars.as_str().to_owned();
        match marker {
            Some(' ') => Some(Line::Context(text)),
            Some('-') => Some(Line::Remove(text)),
            Some('+') => Some(Line::Add(text)),
            None => Some(Line::Context(String::new())),
            Some('\r') if text.is_empty() => Some(Line::Context(String::new())),
            _ => None,
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            Line::Context(t) | Line::Remove(t) | Line::Add(t) => t,
        }
    }
    pub(crate) fn is_old(&self) -> bool {
        !matches!(self, Line::Add(_))
    }
    pub(crate) fn is_new(&self) -> bool {
        !matches!(self, Line::Remove(_))
    }
}

/// One hunk: a run of context, removed and added lines.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Hunk {
    /// Where the hunk starts in the patch text.
    pub(crate) at: Incidental,
    /// Unified diffs: the stated start lines (`@@ -old_start +new_start @@`).
    pub(crate) stated: Option<Stated>,
    /// Unified diffs: the text after the closing `@@` (informational).
    pub(crate) section: String,
    /// Envelope: the `@@ anchor` lines, searched for in order.
    pub(crate) anchors: Vec<String>,
    /// The body.
    pub(crate) lines: Vec<Line>,
    /// `\ No newline at end of file` after the last old-side line.
    pub(crate) old_no_newline: bool,
    /// `\ No newline at end of file` after the last new-side line.
    pub(crate) new_no_newline: bool,
    /// Envelope: `*** End of File` — the hunk must match at the end.
    pub(crate) end_of_file: bool,
}

/// The start lines a unified hunk header states (1-based; 0 with an empty side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stated {
    pub(crate) old_start: usize,
    pub(crate) new_start: usize,
}

impl Hunk {
    pub(crate) fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter(|l| l.is_old()).map(Line::text)
    }
    pub(crate) fn old_count(&self) -> usize {
        self.lines.iter().filter(|l| l.is_old()).count()
    }
    pub(crate) fn new_count(&self) -> usize {
        self.lines.iter().filter(|l| l.is_new()).count()
    }
}

/// The section of a patch about one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FilePatch {
    /// Where the section starts in the patch text.
    pub(crate) at: Incidental,
    /// The old name as written; `None` for `/dev/null` (creation).
    pub(crate) old: Option<String>,
    /// The new name as written; `None` for `/dev/null` (deletion).
    pub(crate) new: Option<String>,
    /// A move: git's `rename from`/`rename to` or the envelope's
    /// `*** Move to:`. These names are never prefix-stripped.
    pub(crate) rename: Option<(String, String)>,
    /// Written with a `diff --git` header.
    pub(crate) git: bool,
    /// The two names of the `diff --git` line, when they can be told apart
    /// (kept to check that every name of the section agrees).
    pub(crate) git_names: GitNames,
    /// The hunks, in order.
    pub(crate) hunks: Vec<Hunk>,
}

/// What a file section does, once names are resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operation {
    Create(String),
    Delete(String),
    Update(String),
    Move(String, String),
}

/// A parsed patch: what [`Patch::parse`](crate::Patch::parse) returns.
///
/// Its [`Display`](std::fmt::Display) prints it back in its own format, in
/// a canonical form that parses to an equal `Patch`.
///
/// ```
/// let patch = agentcaps_patch::Patch::parse("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")?;
/// assert_eq!(patch.to_string(), "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n+b\n");
/// # Ok::<(), agentcaps_patch::PatchError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub(crate) format: Format,
    pub(crate) files: Vec<FilePatch>,
    /// Length of the text it was parsed from (bounds are checked on it).
    pub(crate) source_bytes: Incidental,
}

impl Hunk {
    /// The hunk that undoes this one (old and new sides swapped).
    #[cfg(test)]
    pub(crate) fn reversed(&self) -> Hunk {
        Hunk {
            stated: self.stated.map(|s| Stated {
                old_start: s.new_start,
                new_start: s.old_start,
            }),
            lines: self
                .lines
                .iter()
                .map(|l| match l {
                    Line::Context(t) => Line::Context(t.clone()),
                    Line::Remove(t) => Line::Add(t.clone()),
                    Line::Add(t) => Line::Remove(t.clone()),
                })
                .collect(),
            old_no_newline: self.new_no_newline,
            new_no_newline: self.old_no_newline,
            ..self.clone()
        }
    }
}
