//! The `*** Begin Patch` … `*** End Patch` envelope parser.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path        then `+` lines
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path     (optional)
//! @@ anchor                 (optional; searched for in order)
//!  context / -removed / +added
//! *** End of File           (optional: the hunk ends at the end of the file)
//! *** End Patch
//! ```
//!
//! Only lines that start with `***` are markers, so `+*** End Patch` inside
//! an added file is content.

use crate::error::PatchError;
use crate::model::{FilePatch, Format, Hunk, Incidental, Line, Patch};
use crate::unified::Lines;

type Result<T> = std::result::Result<T, PatchError>;

pub(crate) const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF: &str = "*** End of File";

/// Whether the text is an envelope: its first non-blank line opens one.
pub(crate) fn detect(text: &str) -> bool {
    text.lines()
        .find(|l| !skippable(l))
        .is_some_and(|l| l.trim() == BEGIN)
}

/// Blank lines and Markdown code fences (```` ``` ````, ```` ```diff ````),
/// which models often wrap patches in, around the envelope.
pub(crate) fn skippable(t: &str) -> bool {
    let t = t.trim();
    t.is_empty() || t.starts_with("```")
}

fn name(t: &str, prefix: &str) -> Option<String> {
    t.strip_prefix(prefix).map(|n| n.trim().to_owned())
}

/// Parses an envelope.
pub(crate) fn parse(text: &str) -> Result<Patch> {
    let mut lines = Lines::new(text);
    while lines.peek().is_some_and(skippable) {
        lines.advance();
    }
    match lines.peek() {
        Some(t) if t.trim() == BEGIN => lines.advance(),
        other => {
            return Err(PatchError::parse(
                lines.number(),
                "`*** Begin Patch`",
                other.unwrap_or("end of patch"),
            ));
        }
    }
    let mut files = Vec::new();
    loop {
        let n = lines.number();
        let Some(t) = lines.peek() else {
            return Err(PatchError::parse(n, "`*** End Patch`", "end of patch"));
        };
        if t.trim() == END {
            lines.advance();
            break;
        }
        let mut file = FilePatch {
            at: Incidental(n),
            ..FilePatch::default()
        };
        if let Some(path) = name(t, ADD) {
            lines.advance();
            file.new = Some(path);
            let mut hunk = Hunk {
                at: Incidental(n + 1),
                ..Hunk::default()
            };
            while let Some(raw) = lines.peek_raw() {
                match raw.strip_prefix('+') {
                    Some(text) => hunk.lines.push(Line::Add(text.to_owned())),
                    None if raw.starts_with("***") => break,
                    None => {
                        return Err(PatchError::parse(
                            lines.number(),
                            "a `+` line (every line of an added file starts with `+`) or a `***` marker",
                            raw,
                        ));
                    }
                }
                lines.advance();
            }
            if !hunk.lines.is_empty() {
                file.hunks.push(hunk);
            }
        } else if let Some(path) = name(t, DELETE) {
            lines.advance();
            file.old = Some(path);
        } else if let Some(path) = name(t, UPDATE) {
            lines.advance();
            if let Some(to) = lines.peek().and_then(|m| name(m, MOVE)) {
                lines.advance();
                file.rename = Some((path.clone(), to));
            }
            file.old = Some(path.clone());
            file.new = Some(path);
            file.hunks = chunks(&mut lines)?;
            if file.hunks.is_empty() && file.rename.is_none() {
                return Err(PatchError::parse(
                    lines.number(),
                    "`@@` or change lines (` `, `-`, `+`) after `*** Update File:`",
                    lines.peek().unwrap_or("end of patch"),
                ));
            }
        } else {
            return Err(PatchError::parse(
                n,
                "`*** Add File: `, `*** Delete File: `, `*** Update File: ` or `*** End Patch`",
                t,
            ));
        }
        files.push(file);
    }
    while let Some(t) = lines.peek() {
        if !skippable(t) {
            return Err(PatchError::parse(
                lines.number(),
                "nothing after `*** End Patch`",
                t,
            ));
        }
        lines.advance();
    }
    Ok(Patch {
        format: Format::Envelope,
        files,
        source_bytes: Incidental(text.len()),
    })
}

/// The hunks of an `*** Update File:` section.
fn chunks(lines: &mut Lines<'_>) -> Result<Vec<Hunk>> {
    let mut hunks: Vec<Hunk> = Vec::new();
    let mut current: Option<Hunk> = None;
    let finish = |hunk: Hunk, hunks: &mut Vec<Hunk>, line: usize, found: &str| {
        if hunk.lines.is_empty() {
            return Err(PatchError::parse(
                line,
                "change lines (` `, `-`, `+`) after `@@`",
                found,
            ));
        }
        hunks.push(hunk);
        Ok(())
    };
    while let Some(raw) = lines.peek_raw() {
        let t = lines.peek().unwrap_or_default();
        let n = lines.number();
        if t.starts_with("***") {
            if t.trim() == EOF {
                let mut hunk = current.take().unwrap_or_default();
                hunk.end_of_file = true;
                finish(hunk, &mut hunks, n, t)?;
                lines.advance();
                continue;
            }
            if t.trim() == END
                || t.starts_with(ADD)
                || t.starts_with(DELETE)
                || t.starts_with(UPDATE)
            {
                break;
            }
            return Err(PatchError::parse(
                n,
                "a change line, `@@`, `*** End of File` or the next `***` section",
                t,
            ));
        }
        if t == "@@" || t.starts_with("@@ ") {
            let anchor = t.strip_prefix("@@").unwrap_or_default().trim();
            let hunk = match current.take() {
                Some(h) if h.lines.is_empty() => h,
                Some(h) => {
                    finish(h, &mut hunks, n, t)?;
                    Hunk {
                        at: Incidental(n),
                        ..Hunk::default()
                    }
                }
                None => Hunk {
                    at: Incidental(n),
                    ..Hunk::default()
                },
            };
            let mut hunk = hunk;
            if !anchor.is_empty() {
                hunk.anchors.push(anchor.to_owned());
            }
            current = Some(hunk);
            lines.advance();
            continue;
        }
        let Some(line) = Line::from_body(raw) else {
            if crate::unified::has_line_number_prefix(raw) {
                return Err(PatchError::malformed(
                    n,
                    crate::error::Malformed::LineNumberPrefix,
                    raw,
                ));
            }
            return Err(PatchError::parse(
                n,
                "a change line starting with ` `, `-` or `+`, or `@@`",
                raw,
            ));
        };
        current
            .get_or_insert_with(|| Hunk {
                at: Incidental(n),
                ..Hunk::default()
            })
            .lines
            .push(line);
        lines.advance();
    }
    if let Some(hunk) = current {
        finish(
            hunk,
            &mut hunks,
            lines.number(),
            lines.peek().unwrap_or("end of patch"),
        )?;
    }
    Ok(hunks)
}
