//! Finding the lines of a text that match a pattern.
//!
//! A line is what lies before each `\n` (a `\r` just before it is not part
//! of the line), and there is no empty line after a final `\n`. The pattern
//! is matched against each line alone, as if the line were the whole text:
//! `^` and `$` are the line's ends, and `.` matches neither `\r` nor `\n`.
//!
//! To be fast the whole text is searched at once, with the same pattern in
//! multi-line mode, for the earliest place where a match ends; only the
//! line holding that place is then matched alone, and the search goes on
//! from the next line. A line that matches alone also has a match ending
//! inside it in the whole text, so no line before that place can match and
//! none is missed. Patterns for which that does not hold — `\A` or `\z`, or
//! a flag group that turns a flag off (`(?-m)`, `(?-R)`) — are matched line
//! by line.

use regex::bytes::{Regex, RegexBuilder};

/// Largest compiled pattern, in bytes.
const SIZE_LIMIT: usize = 1 << 20;

/// A pattern, ready to find matching lines.
pub(super) struct Matcher {
    /// The pattern for one line.
    line: Regex,
    /// The same pattern for the whole text (multi-line), when it finds
    /// every line `line` matches.
    whole: Option<Regex>,
}

impl Matcher {
    pub(super) fn new(pattern: &str) -> Result<Self, regex::Error> {
        let build = |multi_line| {
            RegexBuilder::new(pattern)
                .multi_line(multi_line)
                .crlf(true)
                .size_limit(SIZE_LIMIT)
                .build()
        };
        let line = build(false)?;
        let whole = if line_by_line_only(pattern) {
            None
        } else {
            Some(build(true)?)
        };
        Ok(Self { line, whole })
    }

    /// Calls `found(line_number, line)` for each matching line of `text`
    /// in order (the line without its end; `first` is the number of the
    /// text's first line), until `found` returns `false`.
    pub(super) fn each_match(
        &self,
        text: &[u8],
        first: u64,
        mut found: impl FnMut(u64, &[u8]) -> bool,
    ) {
        let Some(whole) = &self.whole else {
            return self.line_by_line(text, first, found);
        };
        // `at` is always a line's start; `number` is the line number at
        // `counted`, a line's start at or before `at`.
        let (mut at, mut counted, mut number) = (0, 0, first);
        while at < text.len() {
            let Some(end) = whole.shortest_match_at(text, at) else {
                return;
            };
            // The line holding `end` (a `\n` ends the line before it).
            let start = memchr::memrchr(b'\n', &text[at..end]).map_or(at, |i| at + i + 1);
            if start == text.len() {
                return; // past a final `\n`: no line there
            }
            let stop = memchr::memchr(b'\n', &text[end..]).map_or(text.len(), |i| end + i);
            number += memchr::memchr_iter(b'\n', &text[counted..start]).count() as u64;
            counted = start;
            let line = strip_cr(&text[start..stop]);
            if self.line.is_match(line) && !found(number, line) {
                return;
            }
            at = stop + 1;
        }
    }

    fn line_by_line(&self, text: &[u8], first: u64, mut found: impl FnMut(u64, &[u8]) -> bool) {
        if text.is_empty() {
            return;
        }
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        for (index, line) in text.split(|b| *b == b'\n').enumerate() {
            let line = strip_cr(line);
            if self.line.is_match(line) && !found(first + index as u64, line) {
                return;
            }
        }
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Whether the whole-text search could miss a line: `\A` and `\z` mean
/// the text's ends there, and a flag turned off inside the pattern could
/// turn multi-line or CRLF mode off. (A false alarm only costs speed.)
fn line_by_line_only(pattern: &str) -> bool {
    if pattern.contains("\\A") || pattern.contains("\\z") {
        return true;
    }
    pattern.match_indices("(?").any(|(at, _)| {
        pattern[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .any(|c| c == '-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (line number, line) pairs found by `pattern` in `text`, both ways.
    fn lines(pattern: &str, text: &str) -> Vec<(u64, String)> {
        let matcher = Matcher::new(pattern).expect("pattern");
        let mut fast = Vec::new();
        matcher.each_match(text.as_bytes(), 1, |n, l| {
            fast.push((n, String::from_utf8_lossy(l).into_owned()));
            true
        });
        let mut slow = Vec::new();
        matcher.line_by_line(text.as_bytes(), 1, |n, l| {
            slow.push((n, String::from_utf8_lossy(l).into_owned()));
            true
        });
        assert_eq!(fast, slow, "whole-text and line-by-line disagree");
        fast
    }

    fn numbers(pattern: &str, text: &str) -> Vec<u64> {
        lines(pattern, text).into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn finds_each_matching_line_with_its_number() {
        assert_eq!(
            lines("b+", "a\nbb\nc\nb\n"),
            vec![(2, "bb".into()), (4, "b".into())]
        );
    }

    #[test]
    fn anchors_are_the_line_ends_even_with_crlf() {
        assert_eq!(numbers("^foo$", "foo\r\nfoo \r\n foo\nfoo"), vec![1, 4]);
        assert_eq!(numbers("o$", "fo\r\nfo\n"), vec![1, 2]);
    }

    #[test]
    fn a_match_across_lines_is_not_a_line_match() {
        // The whole-text search finds `a\s+b` across the newline; no line
        // holds it alone.
        assert_eq!(numbers(r"a\s+b", "xa\nb\nc a  b\n"), vec![3]);
        assert_eq!(numbers(r"(?s)a.*b", "a\nb\nab\n"), vec![3]);
        assert_eq!(numbers(r"[^x]+z", "a\nz\nyz\n"), vec![3]);
    }

    #[test]
    fn no_empty_line_after_the_last_newline() {
        assert_eq!(numbers("^$", "a\n"), Vec::<u64>::new());
        assert_eq!(numbers("^$", "a\n\nb"), vec![2]);
        assert_eq!(numbers("^$", ""), Vec::<u64>::new());
        assert_eq!(numbers("x*", "a\nb"), vec![1, 2]);
    }

    #[test]
    fn text_anchors_and_turned_off_flags_go_line_by_line() {
        assert!(line_by_line_only(r"\Afoo"));
        assert!(line_by_line_only(r"(?-m)^foo"));
        assert!(line_by_line_only(r"(?i-R)foo$"));
        assert!(!line_by_line_only(r"(?i)foo"));
        assert_eq!(numbers(r"\Afoo\z", "foo\nbar\nfoo\r\n"), vec![1, 3]);
        assert_eq!(numbers(r"(?-m)^b", "a\nb\n"), vec![2]);
    }

    #[test]
    fn a_dot_matches_no_carriage_return() {
        assert_eq!(numbers("a.b", "a\rb\naxb\n"), vec![2]);
    }

    #[test]
    fn stops_when_asked() {
        let matcher = Matcher::new("a").expect("pattern");
        let mut seen = 0;
        matcher.each_match(b"a\na\na\n", 1, |_, _| {
            seen += 1;
            seen < 2
        });
        assert_eq!(seen, 2);
    }

    #[test]
    fn many_long_matches_stay_linear() {
        // `(?s)a.*z` would rescan to the end of the text from every line
        // if the search looked for whole matches; the earliest end keeps
        // each step short.
        let text = "a\n".repeat(200_000) + "z\n";
        let found = numbers(r"(?s)a.*z", &text);
        assert!(found.is_empty(), "{found:?}");
    }
}
