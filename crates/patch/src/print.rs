//! Printing a parsed patch back in its own format.
//!
//! The printed text parses to an equal [`Patch`] (`parse ∘ print ∘ parse =
//! parse`, checked by the fuzz targets and the tests); it is canonical
//! rather than byte-identical to the input (counts always written, names
//! quoted only where needed).

use std::fmt::{self, Write};

use crate::model::{FilePatch, Format, Hunk, Line, Patch};
use crate::quote::quote_if_needed;

impl fmt::Display for Patch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.format {
            Format::Unified => self.files.iter().try_for_each(|file| unified_file(f, file)),
            Format::Envelope => {
                writeln!(f, "{}", crate::envelope::BEGIN)?;
                self.files
                    .iter()
                    .try_for_each(|file| envelope_file(f, file))?;
                writeln!(f, "*** End Patch")
            }
        }
    }
}

fn unified_file(f: &mut fmt::Formatter<'_>, file: &FilePatch) -> fmt::Result {
    let header = |name: &Option<String>| match name {
        Some(n) => quote_if_needed(n, false),
        None => "/dev/null".to_owned(),
    };
    if file.git {
        let (a, b) = match &file.git_names.0 {
            Some((a, b)) => (a.as_str(), b.as_str()),
            None => (
                file.old
                    .as_ref()
                    .or(file.new.as_ref())
                    .map(String::as_str)
                    .unwrap_or_default(),
                file.new
                    .as_ref()
                    .or(file.old.as_ref())
                    .map(String::as_str)
                    .unwrap_or_default(),
            ),
        };
        writeln!(
            f,
            "diff --git {} {}",
            quote_if_needed(a, true),
            quote_if_needed(b, true)
        )?;
        if file.old.is_none() {
            writeln!(f, "new file mode 100644")?;
        }
        if file.new.is_none() {
            writeln!(f, "deleted file mode 100644")?;
        }
        if let Some((from, to)) = &file.rename {
            writeln!(f, "rename from {}", quote_if_needed(from, false))?;
            writeln!(f, "rename to {}", quote_if_needed(to, false))?;
        }
        if file.hunks.is_empty() {
            return Ok(());
        }
    }
    writeln!(f, "--- {}", header(&file.old))?;
    writeln!(f, "+++ {}", header(&file.new))?;
    for hunk in &file.hunks {
        unified_hunk(f, hunk)?;
    }
    Ok(())
}

fn unified_hunk(f: &mut fmt::Formatter<'_>, hunk: &Hunk) -> fmt::Result {
    let (old_start, new_start) = hunk
        .stated
        .map(|s| (s.old_start, s.new_start))
        .unwrap_or((1, 1));
    write!(
        f,
        "@@ -{},{} +{},{} @@",
        old_start,
        hunk.old_count(),
        new_start,
        hunk.new_count()
    )?;
    if hunk.section.is_empty() {
        writeln!(f)?;
    } else {
        writeln!(f, " {}", hunk.section)?;
    }
    let last_old = hunk.lines.iter().rposition(Line::is_old);
    let last_new = hunk.lines.iter().rposition(Line::is_new);
    for (i, line) in hunk.lines.iter().enumerate() {
        body_line(f, line)?;
        let old_marks = hunk.old_no_newline && last_old == Some(i);
        let new_marks = hunk.new_no_newline && last_new == Some(i);
        if old_marks || new_marks {
            writeln!(f, "\\ No newline at end of file")?;
        }
    }
    Ok(())
}

fn body_line(f: &mut fmt::Formatter<'_>, line: &Line) -> fmt::Result {
    let marker = match line {
        Line::Context(_) => ' ',
        Line::Remove(_) => '-',
        Line::Add(_) => '+',
    };
    f.write_char(marker)?;
    writeln!(f, "{}", line.text())
}

fn envelope_file(f: &mut fmt::Formatter<'_>, file: &FilePatch) -> fmt::Result {
    match (&file.old, &file.new) {
        (None, Some(new)) => {
            writeln!(f, "*** Add File: {new}")?;
            for line in file.hunks.iter().flat_map(|h| &h.lines) {
                writeln!(f, "+{}", line.text())?;
            }
            Ok(())
        }
        (Some(old), None) => writeln!(f, "*** Delete File: {old}"),
        (None, None) => Ok(()),
        (Some(old), Some(_)) => {
            let name = match &file.rename {
                Some((from, _)) => from.as_str(),
                None => old.as_str(),
            };
            writeln!(f, "*** Update File: {name}")?;
            if let Some((_, to)) = &file.rename {
                writeln!(f, "*** Move to: {to}")?;
            }
            for hunk in &file.hunks {
                if hunk.anchors.is_empty() {
                    writeln!(f, "@@")?;
                }
                for anchor in &hunk.anchors {
                    writeln!(f, "@@ {anchor}")?;
                }
                for line in &hunk.lines {
                    body_line(f, line)?;
                }
                if hunk.end_of_file {
                    writeln!(f, "*** End of File")?;
                }
            }
            Ok(())
        }
    }
}
