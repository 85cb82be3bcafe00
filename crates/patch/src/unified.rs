//! The unified diff parser: plain (`diff -u`) and git-style (`diff --git`).
//!
//! Strict where it matters: hunk header counts are checked against the body
//! (never recounted), ed scripts, context diffs, binary patches, copies,
//! mode changes, symbolic links and unknown git headers are refused by name.
//! Text before the first file header (an e-mail, a commit message) is skipped.

use crate::error::{Malformed, PatchError, Unsupported};
use crate::model::{FilePatch, Format, GitNames, Hunk, Incidental, Line, Patch, Stated};
use crate::quote::unquote;

type Result<T> = std::result::Result<T, PatchError>;

/// The patch text split into lines, with the cursor.
pub(crate) struct Lines<'a> {
    lines: Vec<&'a str>,
    pos: usize,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut lines: Vec<&str> = text.split('\n').collect();
        if lines.last() == Some(&"") {
            lines.pop();
        }
        Lines { lines, pos: 0 }
    }
    /// The current line, without a trailing `\r`.
    pub(crate) fn peek(&self) -> Option<&'a str> {
        self.lines
            .get(self.pos)
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    }
    /// The current line exactly as written (a trailing `\r` kept).
    pub(crate) fn peek_raw(&self) -> Option<&'a str> {
        self.lines.get(self.pos).copied()
    }
    pub(crate) fn peek_at(&self, ahead: usize) -> Option<&'a str> {
        self.lines
            .get(self.pos + ahead)
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    }
    pub(crate) fn advance(&mut self) {
        self.pos += 1;
    }
    /// 1-based number of the current line.
    pub(crate) fn number(&self) -> usize {
        self.pos + 1
    }
    pub(crate) fn rest(&self) -> &[&'a str] {
        self.lines.get(self.pos..).unwrap_or_default()
    }
}

/// Whether a line is an `ed` command (`5a`, `1,3d`, `7c`).
pub(crate) fn is_ed_command(t: &str) -> bool {
    let body = t.trim_end();
    let Some(cmd) = body.chars().last() else {
        return false;
    };
    if !matches!(cmd, 'a' | 'c' | 'd' | 'i') {
        return false;
    }
    let range = body.get(..body.len() - 1).unwrap_or_default();
    let mut parts = range.splitn(2, ',');
    let ok =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let first = parts.next();
    match parts.next() {
        None => ok(first),
        second => ok(first) && ok(second),
    }
}

/// Lines that say something other than a unified diff is in the text.
fn foreign(t: &str, line: usize) -> Result<()> {
    if is_ed_command(t) {
        return Err(PatchError::unsupported(line, Unsupported::EdScript, t));
    }
    if t.starts_with("*** ") || t.starts_with("***************") {
        return Err(PatchError::unsupported(line, Unsupported::ContextDiff, t));
    }
    if t.starts_with("GIT binary patch")
        || (t.starts_with("Binary files ") && t.ends_with(" differ"))
    {
        return Err(PatchError::unsupported(line, Unsupported::Binary, t));
    }
    Ok(())
}

/// Parses a unified diff.
pub(crate) fn parse(text: &str) -> Result<Patch> {
    let mut lines = Lines::new(text);
    let mut files = Vec::new();
    while let Some(t) = lines.peek() {
        let n = lines.number();
        if t.starts_with("diff --git ") {
            files.push(git_section(&mut lines)?);
        } else if t.starts_with("--- ") && lines.peek_at(1).is_some_and(|u| u.starts_with("+++ ")) {
            let mut file = FilePatch {
                at: Incidental(n),
                ..FilePatch::default()
            };
            file_names(&mut lines, &mut file)?;
            hunks(&mut lines, &mut file)?;
            if file.hunks.is_empty() {
                return Err(PatchError::parse(
                    lines.number(),
                    "an @@ hunk header",
                    lines.peek().unwrap_or("end of patch"),
                ));
            }
            files.push(file);
        } else if t.starts_with("@@") {
            return Err(PatchError::parse(
                n,
                "a `--- old` / `+++ new` file header before the first @@ hunk",
                t,
            ));
        } else if t == "-- " && is_signature(lines.rest()) {
            break;
        } else {
            foreign(t, n)?;
            let skippable = crate::envelope::skippable(t)
                || t.starts_with("diff ")
                || t.starts_with("Index: ")
                || t.starts_with("====")
                || t.starts_with("Only in ")
                || t.starts_with("Common subdirectories: ");
            if !files.is_empty() && !skippable {
                return Err(PatchError::unsupported(n, Unsupported::UnknownHeader, t));
            }
            lines.advance();
        }
    }
    if files.is_empty() {
        return Err(PatchError::parse(
            lines.number(),
            "a unified diff (`--- a/file` and `+++ b/file` headers, then @@ hunks) or a `*** Begin Patch` envelope",
            text.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("an empty patch"),
        ));
    }
    Ok(Patch {
        format: Format::Unified,
        files,
        source_bytes: Incidental(text.len()),
    })
}

/// `-- ` then a version line closing a `git format-patch` mail, and nothing
/// that looks like a diff after it.
fn is_signature(rest: &[&str]) -> bool {
    rest.iter().skip(1).all(|l| {
        !(l.starts_with("diff ")
            || l.starts_with("--- ")
            || l.starts_with("+++ ")
            || l.starts_with("@@"))
    })
}

/// Parses one name of a header (`--- NAME[\tdate]`, `rename from NAME`).
fn header_name(raw: &str, line: usize) -> Result<String> {
    if raw.starts_with('"') {
        match unquote(raw) {
            Some((name, rest)) if rest.is_empty() || rest.starts_with('\t') => Ok(name),
            _ => Err(PatchError::parse(
                line,
                "a correctly C-quoted file name",
                raw,
            )),
        }
    } else {
        let name = raw.split('\t').next().unwrap_or_default();
        Ok(name.to_owned())
    }
}

fn dev_null(name: String) -> Option<String> {
    (name != "/dev/null").then_some(name)
}

/// `--- old` and `+++ new`, quoted names decoded, `/dev/null` read as "none".
fn file_names(lines: &mut Lines<'_>, file: &mut FilePatch) -> Result<()> {
    let (Some(minus), Some(plus)) = (lines.peek(), lines.peek_at(1)) else {
        return Err(PatchError::parse(
            lines.number(),
            "`--- old` then `+++ new`",
            lines.peek().unwrap_or("end of patch"),
        ));
    };
    let n = lines.number();
    let old_raw = minus.strip_prefix("--- ").unwrap_or_default();
    let new_raw = plus.strip_prefix("+++ ").unwrap_or_default();
    let quoted_null = |r: &str| r.starts_with('"');
    let old = header_name(old_raw, n)?;
    let new = header_name(new_raw, n + 1)?;
    file.old = if quoted_null(old_raw) {
        Some(old)
    } else {
        dev_null(old)
    };
    file.new = if quoted_null(new_raw) {
        Some(new)
    } else {
        dev_null(new)
    };
    if file.old.is_none() && file.new.is_none() {
        return Err(PatchError::parse(
            n,
            "a file name on at least one side (both are /dev/null)",
            minus,
        ));
    }
    lines.advance();
    lines.advance();
    Ok(())
}

/// The names of a `diff --git A B` line, when they can be told apart.
fn git_line_names(rest: &str, line: usize) -> Result<Option<(String, String)>> {
    if rest.starts_with('"') {
        let Some((a, tail)) = unquote(rest) else {
            return Err(PatchError::parse(
                line,
                "a correctly C-quoted file name",
                rest,
            ));
        };
        let tail = tail.strip_prefix(' ').unwrap_or(tail);
        let b = if tail.starts_with('"') {
            match unquote(tail) {
                Some((b, "")) => b,
                _ => {
                    return Err(PatchError::parse(
                        line,
                        "a correctly C-quoted file name",
                        tail,
                    ));
                }
            }
        } else {
            tail.to_owned()
        };
        return Ok(Some((a, b)));
    }
    if let Some(idx) = rest.find(" \"") {
        let a = rest.get(..idx).unwrap_or_default().to_owned();
        return match unquote(rest.get(idx + 1..).unwrap_or_default()) {
            Some((b, "")) => Ok(Some((a, b))),
            _ => Err(PatchError::parse(
                line,
                "a correctly C-quoted file name",
                rest,
            )),
        };
    }
    // Unquoted: find the space where both halves name the same file once
    // their first component is dropped (git's own rule).
    let strip1 = |s: &str| s.split_once('/').map(|(_, r)| r.to_owned());
    let candidates: Vec<(String, String)> = rest
        .match_indices(' ')
        .filter_map(|(i, _)| {
            let (a, b) = (rest.get(..i)?, rest.get(i + 1..)?);
            (strip1(a).is_some() && strip1(a) == strip1(b)).then(|| (a.to_owned(), b.to_owned()))
        })
        .collect();
    if let [only] = candidates.as_slice() {
        return Ok(Some(only.clone()));
    }
    if rest.matches(' ').count() == 1 {
        return Ok(rest
            .split_once(' ')
            .map(|(a, b)| (a.to_owned(), b.to_owned())));
    }
    Ok(None)
}

fn mode_check(mode: &str, line: usize, text: &str, creating: bool) -> Result<()> {
    match mode.trim() {
        "100644" => Ok(()),
        "100755" if !creating => Ok(()),
        "120000" => Err(PatchError::unsupported(line, Unsupported::Symlink, text)),
        "160000" => Err(PatchError::unsupported(line, Unsupported::Submodule, text)),
        _ => Err(PatchError::unsupported(line, Unsupported::ModeChange, text)),
    }
}

/// A `diff --git` section: extended headers, then optional names and hunks.
fn git_section(lines: &mut Lines<'_>) -> Result<FilePatch> {
    let n = lines.number();
    let first = lines.peek().unwrap_or_default();
    let names = git_line_names(first.strip_prefix("diff --git ").unwrap_or_default(), n)?;
    lines.advance();
    let mut file = FilePatch {
        at: Incidental(n),
        git: true,
        git_names: GitNames(names.clone()),
        ..FilePatch::default()
    };
    let (mut created, mut deleted) = (false, false);
    let (mut from, mut to) = (None, None);
    while let Some(t) = lines.peek() {
        let n = lines.number();
        if t.starts_with("diff --git ")
            || t.starts_with("--- ")
            || t.starts_with("@@")
            || t.trim().is_empty()
        {
            break;
        }
        if let Some(mode) = t.strip_prefix("new file mode ") {
            mode_check(mode, n, t, true)?;
            created = true;
        } else if let Some(mode) = t.strip_prefix("deleted file mode ") {
            mode_check(mode, n, t, false)?;
            deleted = true;
        } else if t.starts_with("old mode ") || t.starts_with("new mode ") {
            return Err(PatchError::unsupported(n, Unsupported::ModeChange, t));
        } else if let Some(index) = t.strip_prefix("index ") {
            if let Some((_, mode)) = index.split_once(' ') {
                mode_check(mode, n, t, false)?;
            }
        } else if t.starts_with("similarity index ") || t.starts_with("dissimilarity index ") {
        } else if let Some(name) = t.strip_prefix("rename from ") {
            from = Some(header_name(name, n)?);
        } else if let Some(name) = t.strip_prefix("rename to ") {
            to = Some(header_name(name, n)?);
        } else if t.starts_with("copy from ") || t.starts_with("copy to ") {
            return Err(PatchError::unsupported(n, Unsupported::Copy, t));
        } else {
            foreign(t, n)?;
            return Err(PatchError::unsupported(n, Unsupported::UnknownHeader, t));
        }
        lines.advance();
    }
    if created && deleted {
        return Err(PatchError::parse(
            n,
            "a section that creates or deletes a file, not both",
            first,
        ));
    }
    match (from, to) {
        (Some(f), Some(t)) => file.rename = Some((f, t)),
        (None, None) => {}
        _ => {
            return Err(PatchError::parse(
                n,
                "both `rename from` and `rename to`",
                first,
            ));
        }
    }
    if file.rename.is_some() && (created || deleted) {
        return Err(PatchError::parse(
            n,
            "a rename of an existing file (not a creation or deletion)",
            first,
        ));
    }
    let (a, b) = match names {
        Some((a, b)) => (Some(a), Some(b)),
        None => (None, None),
    };
    file.old = if created { None } else { a };
    file.new = if deleted { None } else { b };
    if lines.peek().is_some_and(|t| t.starts_with("--- ")) {
        file_names(lines, &mut file)?;
        if file.old.is_none() != created || file.new.is_none() != deleted {
            return Err(PatchError::parse(
                n,
                "/dev/null exactly where `new file mode` or `deleted file mode` says",
                first,
            ));
        }
        hunks(lines, &mut file)?;
        if file.hunks.is_empty() {
            return Err(PatchError::parse(
                lines.number(),
                "an @@ hunk header",
                lines.peek().unwrap_or("end of patch"),
            ));
        }
    }
    if let (None, None, Some((from, to))) = (&file.old, &file.new, &file.rename) {
        file.old = Some(from.clone());
        file.new = Some(to.clone());
    }
    if file.old.is_none() && file.new.is_none() {
        return Err(PatchError::parse(
            n,
            "file names that can be told apart (quote names with spaces)",
            first,
        ));
    }
    if !created && !deleted && file.rename.is_none() && file.hunks.is_empty() {
        return Err(PatchError::parse(
            n,
            "a change: hunks, a rename, a creation or a deletion",
            first,
        ));
    }
    Ok(file)
}

/// Parses `@@ -a[,b] +c[,d] @@[ section]`.
fn hunk_header(t: &str, line: usize) -> Result<(Stated, usize, usize, String)> {
    const EXPECTED: &str = "a hunk header `@@ -start,count +start,count @@`";
    let bad = || {
        if is_placeholder_header(t) {
            PatchError::malformed(line, Malformed::PlaceholderHunkHeader, t)
        } else {
            PatchError::parse(line, EXPECTED, t)
        }
    };
    let body = t.strip_prefix("@@ -").ok_or_else(bad)?;
    let (ranges, section) = body.split_once(" @@").ok_or_else(bad)?;
    let (old, new) = ranges.split_once(" +").ok_or_else(bad)?;
    let range = |r: &str| -> Result<(usize, usize)> {
        let (start, count) = match r.split_once(',') {
            Some((s, c)) => (s, c),
            None => (r, "1"),
        };
        let num = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse::<usize>().ok()
        };
        match (num(start), num(count)) {
            (Some(s), Some(c)) if s > 0 || c == 0 => Ok((s, c)),
            _ => Err(bad()),
        }
    };
    let (old_start, old_count) = range(old)?;
    let (new_start, new_count) = range(new)?;
    // Informational only: kept without trailing whitespace so it round-trips.
    let section = section
        .strip_prefix(' ')
        .unwrap_or(section)
        .trim_end()
        .to_owned();
    Ok((
        Stated {
            old_start,
            new_start,
        },
        old_count,
        new_count,
        section,
    ))
}

/// The hunks of one file section.
fn hunks(lines: &mut Lines<'_>, file: &mut FilePatch) -> Result<()> {
    while let Some(t) = lines.peek() {
        if !t.starts_with("@@") {
            break;
        }
        let header_line = lines.number();
        let (stated, old_count, new_count, section) = hunk_header(t, header_line)?;
        lines.advance();
        let mut hunk = Hunk {
            at: Incidental(header_line),
            stated: Some(stated),
            section,
            ..Hunk::default()
        };
        let (mut old_left, mut new_left) = (old_count, new_count);
        let counts = |side: &'static str, stated: usize, found: usize| PatchError::HeaderCounts {
            line: header_line,
            side,
            stated,
            found,
        };
        while old_left > 0 || new_left > 0 {
            // The body ended (or stopped being a body) before the counts.
            let short = |old_left: usize, new_left: usize| {
                if old_left > 0 {
                    counts("old", old_count, old_count - old_left)
                } else {
                    counts("new", new_count, new_count - new_left)
                }
            };
            let Some(raw) = lines.peek_raw() else {
                return Err(short(old_left, new_left));
            };
            if raw.starts_with('\\') {
                no_newline(&mut hunk, lines.number(), raw)?;
                lines.advance();
                continue;
            }
            let Some(line) = Line::from_body(raw) else {
                if has_line_number_prefix(raw) {
                    return Err(PatchError::malformed(
                        lines.number(),
                        Malformed::LineNumberPrefix,
                        raw,
                    ));
                }
                return Err(short(old_left, new_left));
            };
            if line.is_old() {
                if old_left == 0 || hunk.old_no_newline {
                    return Err(counts("old", old_count, old_count + 1));
                }
                old_left -= 1;
            }
            if line.is_new() {
                if new_left == 0 || hunk.new_no_newline {
                    return Err(counts("new", new_count, new_count + 1));
                }
                new_left -= 1;
            }
            hunk.lines.push(line);
            lines.advance();
        }
        while let Some(raw) = lines.peek_raw() {
            if raw.starts_with('\\') {
                no_newline(&mut hunk, lines.number(), raw)?;
                lines.advance();
            } else {
                break;
            }
        }
        // A body line after the counts are used up: the header undercounts.
        if let Some(t) = lines.peek() {
            let next_is_header =
                t.starts_with("--- ") && lines.peek_at(1).is_some_and(|u| u.starts_with("+++ "));
            let signature = t == "-- " && is_signature(lines.rest());
            if !next_is_header
                && !signature
                && (t.starts_with(' ') || t.starts_with('+') || t.starts_with('-'))
            {
                let (side, stated) = if t.starts_with('+') {
                    ("new", new_count)
                } else {
                    ("old", old_count)
                };
                return Err(counts(side, stated, stated + 1));
            }
        }
        if file.old.is_none() && hunk.old_count() > 0 {
            return Err(PatchError::parse(
                header_line,
                "only added lines in a hunk that creates a file",
                t,
            ));
        }
        if file.new.is_none() && hunk.new_count() > 0 {
            return Err(PatchError::parse(
                header_line,
                "only removed lines in a hunk that deletes a file",
                t,
            ));
        }
        file.hunks.push(hunk);
    }
    Ok(())
}

/// `@@ -XXX @@`, `@@ ... @@`, `@@ -N,M +N,M @@`, a bare `@@`: a hunk
/// header whose ranges hold no real numbers.
pub(crate) fn is_placeholder_header(t: &str) -> bool {
    let Some(rest) = t.strip_prefix("@@") else {
        return false;
    };
    let ranges = rest.split("@@").next().unwrap_or_default();
    !ranges.bytes().any(|b| b.is_ascii_digit())
        || ranges.bytes().any(|b| b.is_ascii_alphabetic())
        || ranges.contains("..")
}

/// `12: fn main`, `  12 | fn main`, `12\tfn main`, `    12→fn main`: a line
/// as a file reader shows it, its number in front.
pub(crate) fn has_line_number_prefix(raw: &str) -> bool {
    let t = raw.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = t.get(digits..).unwrap_or_default();
    rest.starts_with(':')
        || rest.starts_with('\t')
        || rest.starts_with('|')
        || rest.starts_with(" |")
        || rest.starts_with('\u{2192}')
}

/// `\ No newline at end of file`: marks the side(s) of the line before it.
fn no_newline(hunk: &mut Hunk, line: usize, raw: &str) -> Result<()> {
    let Some(last) = hunk.lines.last() else {
        return Err(PatchError::parse(
            line,
            "a hunk line before `\\ No newline at end of file`",
            raw,
        ));
    };
    let (old, new) = (last.is_old(), last.is_new());
    if (old && hunk.old_no_newline) || (new && hunk.new_no_newline) {
        return Err(PatchError::parse(
            line,
            "one `\\ No newline at end of file` per side",
            raw,
        ));
    }
    hunk.old_no_newline |= old;
    hunk.new_no_newline |= new;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ed_commands_are_recognised() {
        for yes in ["5a", "1,3d", "12c", "0a", "3i"] {
            assert!(is_ed_command(yes), "{yes}");
        }
        for no in ["a", "5", "1,d", ",3d", "5x", "add", "1,2,3d", ""] {
            assert!(!is_ed_command(no), "{no}");
        }
    }

    #[test]
    fn git_line_names_split_on_equal_halves() {
        let got = git_line_names("a/my file b/my file", 1).ok().flatten();
        assert_eq!(got, Some(("a/my file".into(), "b/my file".into())));
        let got = git_line_names("\"a/x y\" \"b/x y\"", 1).ok().flatten();
        assert_eq!(got, Some(("a/x y".into(), "b/x y".into())));
        assert_eq!(git_line_names("a/x y b/z w", 1).ok().flatten(), None);
    }
}
