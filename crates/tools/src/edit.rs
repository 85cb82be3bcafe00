//! `edit_file`'s text work: exact replacement, refusing a missing or an
//! ambiguous match with the lines where the text occurs, and the unified
//! diff of the change.

use crate::{ToolError, inputs};

const TOOL: &str = "edit_file";
/// The most match lines named in a refusal.
const MAX_LINES_NAMED: usize = 20;

/// The edited text and how many occurrences were replaced.
#[derive(Debug)]
pub(crate) struct Edited {
    pub(crate) text: String,
    pub(crate) count: u64,
}

/// Replaces `old_text` in `text`: exactly one occurrence, or every one with
/// `replace_all`.
pub(crate) fn replace(
    path: &str,
    text: &str,
    input: &inputs::EditFile,
) -> Result<Edited, ToolError> {
    let refuse = |rule: &'static str, message: String| ToolError::Unsupported {
        tool: TOOL,
        rule,
        message,
    };
    if input.old_text.is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: TOOL,
            message: "`old_text` is empty; give the exact text to replace (use write_file to create a file)".to_owned(),
        });
    }
    let starts = occurrences(text, &input.old_text);
    let overlapping = starts
        .windows(2)
        .any(|pair| pair[1] < pair[0] + input.old_text.len());
    match starts.len() {
        0 => Err(refuse(
            "edit-no-match",
            format!(
                "`old_text` does not occur in `{path}` (it must match exactly, whitespace and line endings included); read the file and copy the text"
            ),
        )),
        1 => Ok(Edited {
            text: text.replacen(&input.old_text, &input.new_text, 1),
            count: 1,
        }),
        n if input.replace_all && overlapping => Err(refuse(
            "edit-ambiguous",
            format!(
                "`old_text` occurs {n} times in `{path}` and the occurrences overlap (at lines {}), so which to replace is ambiguous; include more surrounding text so it occurs once",
                line_list(text, &starts)
            ),
        )),
        n if input.replace_all => Ok(Edited {
            text: text.replace(&input.old_text, &input.new_text),
            count: n as u64,
        }),
        n => Err(refuse(
            "edit-ambiguous",
            format!(
                "`old_text` occurs {n} times in `{path}`, at lines {}; include more surrounding text so it occurs once, or set replace_all",
                line_list(text, &starts)
            ),
        )),
    }
}

/// The byte offsets where `needle` starts in `text`, overlapping
/// occurrences included (`aa` occurs twice in `aaa`).
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(at) = text.get(from..).and_then(|rest| rest.find(needle)) {
        let start = from + at;
        starts.push(start);
        // The next occurrence may start inside this one: one character on.
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    starts
}

/// "3, 7, 12" (1-based lines of the byte offsets), at most
/// [`MAX_LINES_NAMED`] then "and N more".
fn line_list(text: &str, starts: &[usize]) -> String {
    let mut lines = Vec::new();
    let mut line = 1usize;
    let mut scanned = 0usize;
    for &start in starts.iter().take(MAX_LINES_NAMED) {
        line += text
            .get(scanned..start)
            .map_or(0, |part| part.matches('\n').count());
        scanned = start;
        lines.push(line.to_string());
    }
    crate::describe::list_at_most(&lines, MAX_LINES_NAMED, starts.len())
}

/// The unified diff from `old` to `new`, named `a/path` and `b/path`.
pub(crate) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old_text: &str, new_text: &str, replace_all: bool) -> inputs::EditFile {
        inputs::EditFile {
            path: "f".into(),
            old_text: old_text.into(),
            new_text: new_text.into(),
            replace_all,
            dry_run: false,
        }
    }

    #[test]
    fn one_match_is_replaced() {
        let done = replace("f", "a\nb\nc\n", &edit("b\n", "B\n", false)).expect("one match");
        assert_eq!((done.text.as_str(), done.count), ("a\nB\nc\n", 1));
    }

    #[test]
    fn several_matches_are_refused_with_their_lines() {
        let err = replace("f", "x\ny\nx\n\nx\n", &edit("x", "z", false)).unwrap_err();
        assert_eq!(err.rule(), "edit-ambiguous");
        assert!(err.to_string().contains("at lines 1, 3, 5"), "{err}");
    }

    #[test]
    fn replace_all_replaces_every_match() {
        let done = replace("f", "x x x", &edit("x", "y", true)).expect("all");
        assert_eq!((done.text.as_str(), done.count), ("y y y", 3));
    }

    #[test]
    fn no_match_and_empty_old_text_are_refused() {
        assert_eq!(
            replace("f", "abc", &edit("zzz", "y", false))
                .unwrap_err()
                .rule(),
            "edit-no-match"
        );
        assert_eq!(
            replace("f", "abc", &edit("", "y", false))
                .unwrap_err()
                .rule(),
            "invalid-arguments"
        );
    }

    #[test]
    fn overlapping_occurrences_count_as_several() {
        let err = replace("f", "aaa", &edit("aa", "b", false)).unwrap_err();
        assert_eq!(err.rule(), "edit-ambiguous");
        assert!(err.to_string().contains("occurs 2 times"), "{err}");
        // Replacing all of them cannot be done either: they share text.
        let err = replace("f", "aaa", &edit("aa", "b", true)).unwrap_err();
        assert_eq!(err.rule(), "edit-ambiguous");
        assert!(err.to_string().contains("overlap"), "{err}");
        // Separate ones are replaced, each once.
        let done = replace("f", "aa-aa", &edit("aa", "b", true)).expect("all");
        assert_eq!((done.text.as_str(), done.count), ("b-b", 2));
        assert_eq!(occurrences("ééé", "éé"), [0, 2]);
    }

    #[test]
    fn the_diff_is_unified_with_headers() {
        let diff = unified_diff("f.txt", "a\nb\n", "a\nB\n");
        assert!(
            diff.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("-b\n+B\n"), "{diff}");
    }
}
