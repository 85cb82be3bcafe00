//! Locating hunks in a file and applying them in memory.
//!
//! A hunk is looked for, in order of preference:
//!
//! 1. at its stated line (unified diffs; shifted by the offset the previous
//!    hunk of the file needed, as GNU patch does);
//! 2. at the nearest line where its old lines match **exactly** — two
//!    matches equally near are **ambiguous** and refused;
//! 3. the same, ignoring trailing whitespace;
//! 4. only in lenient mode: indentation and Unicode punctuation folded.
//!
//! The envelope states no line: a hunk without an `@@` anchor must match
//! exactly once after the previous hunk; with anchors, each anchor is the
//! next line equal to it (ignoring surrounding whitespace) and the hunk is
//! the first match after the last anchor. Hunks apply in order and never
//! overlap.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Bound, Candidate, PatchError, cut};
use crate::model::Hunk;
use crate::report::{Concession, HunkReport};
use crate::text::{Output, Text, patch_content};

type Result<T> = std::result::Result<T, PatchError>;

/// How forgiving a comparison is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Exact,
    TrailingWhitespace,
    Lenient,
}

fn trim_end(b: &[u8]) -> &[u8] {
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    b.get(..end).unwrap_or_default()
}

fn trim(b: &[u8]) -> &[u8] {
    let t = trim_end(b);
    let start = t
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(t.len());
    t.get(start..).unwrap_or_default()
}

/// Lenient folding: surrounding whitespace dropped, runs of inner
/// whitespace made one space, typographic punctuation made ASCII.
fn fold(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.trim().chars() {
        let c = match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{2026}' => {
                out.push_str("...");
                space = false;
                continue;
            }
            c if c.is_whitespace() => ' ',
            c => c,
        };
        if c == ' ' {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

fn line_eq(level: Level, file: &[u8], patch: &[u8]) -> bool {
    match level {
        Level::Exact => file == patch,
        Level::TrailingWhitespace => trim_end(file) == trim_end(patch),
        Level::Lenient => file == patch || fold(file) == fold(patch),
    }
}

/// Most comparison work one patch may spend locating its hunks, in units:
/// one per line compared and one more per 64 bytes compared. Normal patches
/// spend a few units per hunk line; this stops a file of repeated (or long,
/// equal) lines and a long hunk from turning the search quadratic (a slow
/// death): the search stops within about a second.
pub const MAX_MATCH_WORK: u64 = 50_000_000;

/// The work units of comparing lines `a` and `b` at `level`: slices of
/// different lengths differ at once; equal lengths are compared byte by
/// byte; folding reads both whole.
fn cost(level: Level, a: &[u8], b: &[u8]) -> u64 {
    let bytes = match level {
        Level::Exact if a.len() != b.len() => 0,
        Level::Exact => a.len(),
        Level::TrailingWhitespace => a.len().min(b.len()),
        Level::Lenient => a.len() + b.len(),
    };
    1 + (bytes / 64) as u64
}

/// The comparison work a patch has left, shared by the threads that plan
/// its files.
pub(crate) struct Budget(AtomicU64);

impl Budget {
    pub(crate) fn new(limit: u64) -> Self {
        Budget(AtomicU64::new(limit))
    }

    /// Takes up to `n` comparisons; how many were left to take.
    fn take(&self, n: u64) -> u64 {
        let taken = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                Some(left - left.min(n))
            })
            .unwrap_or(0);
        taken.min(n)
    }
}

/// How many comparisons a [`Work`] takes from the [`Budget`] at a time.
const DRAW: u64 = 4096;

/// One file's comparison work, drawn from the patch's [`Budget`] a few
/// thousand units at a time (what is left goes back when it is dropped).
pub(crate) struct Work<'b> {
    budget: &'b Budget,
    purse: Cell<u64>,
    /// A spend found the budget empty.
    ran_out: Cell<bool>,
}

impl<'b> Work<'b> {
    pub(crate) fn new(budget: &'b Budget) -> Self {
        Work {
            budget,
            purse: Cell::new(0),
            ran_out: Cell::new(false),
        }
    }

    /// Spends `units`; `false` (and nothing spent) when the budget cannot
    /// pay them.
    fn spend(&self, units: u64) -> bool {
        let mut left = self.purse.get();
        if left < units {
            left += self.budget.take(DRAW.max(units - left));
            if left < units {
                self.purse.set(left);
                self.ran_out.set(true);
                return false;
            }
        }
        self.purse.set(left - units);
        true
    }

    fn exhausted(&self) -> bool {
        self.ran_out.get()
    }
}

impl Drop for Work<'_> {
    fn drop(&mut self) {
        self.budget.0.fetch_add(self.purse.get(), Ordering::Relaxed);
    }
}

/// The old side of a hunk, ready for comparison.
struct Needle<'h> {
    lines: Vec<&'h [u8]>,
    work: &'h Work<'h>,
}

impl Needle<'_> {
    fn matches_at(&self, text: &Text<'_>, pos: usize, level: Level) -> bool {
        if pos + self.lines.len() > text.len() {
            return false;
        }
        self.lines.iter().enumerate().all(|(j, want)| {
            let line = text.content(pos + j);
            self.work.spend(cost(level, line, want)) && line_eq(level, line, want)
        })
    }
}

/// How to search: from a stated line outwards, or forwards from the cursor.
#[derive(Clone, Copy)]
enum Search {
    /// Nearest to `expected`; ties are ambiguous.
    Nearest { expected: usize },
    /// Anywhere at or after the cursor; two matches are ambiguous.
    Unique,
    /// The first match at or after the cursor (after an anchor).
    First,
    /// Only at this position (the hunk must end at the end of the file).
    Only(usize),
}

/// At most this many candidate lines are listed in an ambiguity refusal.
const MAX_AMBIGUOUS_LISTED: usize = 20;

enum Found {
    At(usize),
    Ambiguous(Vec<usize>),
    Nowhere,
}

fn search(text: &Text<'_>, needle: &Needle<'_>, cursor: usize, how: Search, level: Level) -> Found {
    let last = match text.len().checked_sub(needle.lines.len()) {
        Some(l) if l >= cursor => l,
        _ => return Found::Nowhere,
    };
    let hit = |p: usize| needle.matches_at(text, p, level);
    // Every place it matches (up to a limit), so the refusal can list the
    // candidates and the model can add the context that tells them apart.
    let all = || {
        Found::Ambiguous(
            (cursor..=last)
                .filter(|&p| hit(p))
                .take(MAX_AMBIGUOUS_LISTED)
                .collect(),
        )
    };
    match how {
        Search::Only(p) => {
            if p >= cursor && p <= last && hit(p) {
                Found::At(p)
            } else {
                Found::Nowhere
            }
        }
        Search::First => (cursor..=last)
            .find(|&p| hit(p))
            .map_or(Found::Nowhere, Found::At),
        Search::Unique => {
            let mut hits = (cursor..=last).filter(|&p| hit(p));
            match (hits.next(), hits.next()) {
                (Some(_), Some(_)) => all(),
                (Some(a), None) => Found::At(a),
                _ => Found::Nowhere,
            }
        }
        Search::Nearest { expected } => {
            let expected = expected.clamp(cursor, last);
            let reach = (expected - cursor).max(last - expected);
            for d in 0..=reach {
                let below = expected.checked_sub(d).filter(|&p| p >= cursor && hit(p));
                let above = (d > 0)
                    .then_some(expected + d)
                    .filter(|&p| p <= last && hit(p));
                match (below, above) {
                    (Some(_), Some(_)) => return all(),
                    (Some(p), None) | (None, Some(p)) => return Found::At(p),
                    (None, None) => {}
                }
            }
            Found::Nowhere
        }
    }
}

/// The window where the old lines come closest (most lines equal ignoring
/// surrounding whitespace), nearest to `expected` among equals.
fn closest(
    text: &Text<'_>,
    needle: &Needle<'_>,
    cursor: usize,
    expected: usize,
) -> Option<Candidate> {
    const MAX_COMPARED: usize = 200;
    let want: Vec<&[u8]> = needle
        .lines
        .iter()
        .take(MAX_COMPARED)
        .map(|l| trim(l))
        .collect();
    let mut best: Option<(usize, usize)> = None; // (score, pos)
    'positions: for pos in cursor..text.len() {
        let mut score = 0;
        for (j, w) in want.iter().enumerate() {
            if pos + j >= text.len() {
                break;
            }
            let line = text.content(pos + j);
            // Trimming reads the line: charged as folding is.
            if !needle.work.spend(cost(Level::Lenient, line, b"")) {
                break 'positions;
            }
            if trim(line) == *w {
                score += 1;
            }
        }
        let better = match best {
            None => score > 0,
            Some((s, p)) => {
                score > s || (score == s && pos.abs_diff(expected) < p.abs_diff(expected))
            }
        };
        if better {
            best = Some((score, pos));
        }
    }
    let (score, pos) = best?;
    let mut diff = String::new();
    let mut shown = 0;
    for (j, w) in needle.lines.iter().enumerate() {
        let found = text.content(pos + j);
        if pos + j < text.len() && trim(found) == trim(w) {
            continue;
        }
        if shown == 3 {
            diff.push_str("  ...\n");
            break;
        }
        diff.push_str(&format!("  -{}\n", cut(&String::from_utf8_lossy(w))));
        if pos + j < text.len() {
            diff.push_str(&format!("  +{}\n", cut(&String::from_utf8_lossy(found))));
        } else {
            diff.push_str("  + (end of file)\n");
        }
        shown += 1;
    }
    let diff = diff.trim_end().to_owned();
    Some(Candidate {
        line: pos + 1,
        equal_lines: score,
        diff,
    })
}

/// Applies `hunks` to `bytes` in memory. Returns the new content and where
/// each hunk applied.
///
/// # Errors
///
/// [`PatchError::NoMatch`] and [`PatchError::Ambiguous`].
pub(crate) fn apply(
    path: &str,
    bytes: &[u8],
    hunks: &[Hunk],
    lenient: bool,
    work: &Work<'_>,
) -> Result<(Vec<u8>, Vec<HunkReport>)> {
    let text = Text::new(bytes);
    let mut out = Output::new(bytes.len() + bytes.len() / 8 + 64, text.eol);
    let mut reports = Vec::with_capacity(hunks.len());
    let mut cursor = 0usize;
    let mut drift: i64 = 0;
    let levels: &[Level] = if lenient {
        &[Level::Exact, Level::TrailingWhitespace, Level::Lenient]
    } else {
        &[Level::Exact, Level::TrailingWhitespace]
    };
    for (k, hunk) in hunks.iter().enumerate() {
        let index = k + 1;
        let needle = Needle {
            lines: hunk.old_lines().map(patch_content).collect(),
            work,
        };
        let m = needle.lines.len();
        let mut start = cursor;
        for anchor in &hunk.anchors {
            let want = trim(anchor.as_bytes());
            match (start..text.len()).find(|&i| trim(text.content(i)) == want) {
                Some(i) => start = i + 1,
                None => {
                    return Err(PatchError::NoMatch {
                        path: path.to_owned(),
                        hunk: index,
                        expected: vec![format!("@@ {anchor}")],
                        closest: None,
                    });
                }
            }
        }
        let stated_index = hunk.stated.map(|s| {
            if m == 0 {
                s.old_start
            } else {
                s.old_start.saturating_sub(1)
            }
        });
        let expected = match stated_index {
            Some(s) => usize::try_from(i64::try_from(s).unwrap_or(i64::MAX).saturating_add(drift))
                .unwrap_or(0)
                .max(start),
            None => start,
        };
        let at_end = hunk.end_of_file || hunk.old_no_newline;
        let how = if at_end {
            Search::Only(text.len().saturating_sub(m))
        } else if stated_index.is_some() {
            Search::Nearest { expected }
        } else if hunk.anchors.is_empty() {
            Search::Unique
        } else {
            Search::First
        };
        let (pos, level) = if m == 0 {
            let pos = match how {
                Search::Only(p) => p,
                Search::Nearest { expected } => expected,
                Search::Unique | Search::First if hunk.anchors.is_empty() => text.len(),
                Search::Unique | Search::First => start,
            };
            if pos > text.len() || pos < start {
                return Err(PatchError::NoMatch {
                    path: path.to_owned(),
                    hunk: index,
                    expected: Vec::new(),
                    closest: None,
                });
            }
            (pos, Level::Exact)
        } else {
            let mut found = None;
            for &level in levels {
                let result = search(&text, &needle, start, how, level);
                if work.exhausted() {
                    return Err(PatchError::Bound {
                        bound: Bound::MatchWork,
                        limit: MAX_MATCH_WORK,
                        actual: MAX_MATCH_WORK + 1,
                        path: Some(path.to_owned()),
                    });
                }
                match result {
                    Found::At(p) => {
                        found = Some((p, level));
                        break;
                    }
                    Found::Ambiguous(at) => {
                        return Err(PatchError::Ambiguous {
                            path: path.to_owned(),
                            hunk: index,
                            lines: at.iter().map(|p| p + 1).collect(),
                        });
                    }
                    Found::Nowhere => {}
                }
            }
            match found {
                Some(f) => f,
                None => {
                    return Err(PatchError::NoMatch {
                        path: path.to_owned(),
                        hunk: index,
                        expected: hunk.old_lines().map(cut).collect(),
                        closest: closest(&text, &needle, start, expected),
                    });
                }
            }
        };
        for i in cursor..pos {
            out.push_whole(text.whole(i));
        }
        let mut fi = pos;
        for line in &hunk.lines {
            match line {
                crate::model::Line::Context(_) => {
                    out.push_whole(text.whole(fi));
                    fi += 1;
                }
                crate::model::Line::Remove(_) => fi += 1,
                crate::model::Line::Add(t) => out.push_new(patch_content(t)),
            }
        }
        if fi == text.len() {
            if hunk.new_no_newline {
                out.set_final_newline(false);
            } else if hunk.old_no_newline {
                out.set_final_newline(true);
            }
        }
        cursor = fi;
        let offset = stated_index.map_or(0, |s| {
            let wide =
                i128::try_from(pos).unwrap_or(i128::MAX) - i128::try_from(s).unwrap_or(i128::MAX);
            i64::try_from(wide).unwrap_or(if wide < 0 { i64::MIN } else { i64::MAX })
        });
        drift = offset;
        let mut concessions = Vec::new();
        if offset != 0 {
            concessions.push(Concession::Offset);
        }
        match level {
            Level::Exact => {}
            Level::TrailingWhitespace => concessions.push(Concession::TrailingWhitespace),
            Level::Lenient => concessions.push(Concession::Lenient),
        }
        reports.push(HunkReport {
            index,
            stated_line: hunk.stated.map(|s| s.old_start),
            applied_line: pos + 1,
            offset,
            concessions,
        });
    }
    for i in cursor..text.len() {
        out.push_whole(text.whole(i));
    }
    Ok((out.bytes, reports))
}

/// The content of a created file: the added lines, each terminated unless
/// the patch says the last has no newline.
pub(crate) fn created(hunks: &[Hunk]) -> Vec<u8> {
    let mut out = Vec::new();
    for hunk in hunks {
        for line in &hunk.lines {
            out.extend_from_slice(line.text().as_bytes());
            out.push(b'\n');
        }
        if hunk.new_no_newline && out.last() == Some(&b'\n') {
            out.pop();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Line;

    fn spend_all(work: &Work<'_>) -> u64 {
        let mut spent = 0;
        while work.spend(1) {
            spent += 1;
        }
        spent
    }

    #[test]
    fn work_never_spends_more_than_the_budget_and_gives_back_what_it_keeps() {
        let budget = Budget::new(10_000);
        let a = Work::new(&budget);
        for _ in 0..5000 {
            assert!(a.spend(1));
        }
        let b = Work::new(&budget);
        let by_b = spend_all(&b);
        assert!(by_b < 5000, "a still holds part of the budget");
        drop(a);
        let c = Work::new(&budget);
        let by_c = spend_all(&c);
        assert_eq!(5000 + by_b + by_c, 10_000);
        assert!(b.exhausted() && c.exhausted());
    }

    #[test]
    fn long_equal_lines_cost_by_their_bytes() {
        let long = [b'a'; 640];
        assert_eq!(cost(Level::Exact, &long, &long), 11);
        // Different lengths differ at once.
        assert_eq!(cost(Level::Exact, &long, &long[1..]), 1);
        assert_eq!(cost(Level::TrailingWhitespace, &long, &long[1..]), 10);
        assert_eq!(cost(Level::Lenient, &long, &long), 21);
        // A spend larger than the purse draws what it needs, or fails
        // whole.
        let budget = Budget::new(100);
        let work = Work::new(&budget);
        assert!(work.spend(60));
        assert!(!work.spend(60));
        assert!(work.exhausted());
        assert!(work.spend(40));
    }

    #[test]
    fn threads_sharing_a_budget_spend_exactly_it() {
        let budget = Budget::new(1_000_003);
        let spent: u64 = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| spend_all(&Work::new(&budget))))
                .collect();
            threads.into_iter().map(|t| t.join().unwrap_or(0)).sum()
        });
        assert_eq!(spent, 1_000_003);
    }

    #[test]
    fn folding_maps_typographic_punctuation_and_indentation() {
        assert_eq!(
            fold("  let s = \u{201C}x\u{201D};  ".as_bytes()),
            "let s = \"x\";"
        );
        assert_eq!(fold("\tit\u{2019}s\u{2026}".as_bytes()), "it's...");
        assert_eq!(fold("a \t  b".as_bytes()), "a b");
    }

    #[test]
    fn trims_ascii_whitespace_only() {
        assert_eq!(trim_end(b"ab \t\r"), b"ab");
        assert_eq!(trim(b"  ab  "), b"ab");
        assert_eq!(trim(b"   "), b"");
    }

    #[test]
    fn repeated_lines_cannot_make_the_search_quadratic() {
        // 200 000 equal lines and a 1 000-line hunk that differs only at its
        // end: every position compares ~1 000 lines before failing.
        let file = "a\n".repeat(200_000);
        let mut lines: Vec<Line> = (0..999).map(|_| Line::Context("a".into())).collect();
        lines.push(Line::Remove("b".into()));
        let hunk = Hunk {
            lines,
            ..Hunk::default()
        };
        // A smaller budget than MAX_MATCH_WORK keeps the debug-build test fast;
        // the mechanism is the same.
        let result = apply(
            "big.txt",
            file.as_bytes(),
            &[hunk],
            true,
            &Work::new(&Budget::new(2_000_000)),
        );
        assert!(
            matches!(
                result,
                Err(PatchError::Bound {
                    bound: Bound::MatchWork,
                    ..
                })
            ),
            "{result:?}"
        );
        // The same file and a hunk that does match are found within budget.
        let ok = Hunk {
            lines: vec![Line::Context("a".into()), Line::Add("b".into())],
            ..Hunk::default()
        };
        let end = Hunk {
            end_of_file: true,
            ..ok
        };
        assert!(
            apply(
                "big.txt",
                file.as_bytes(),
                &[end],
                false,
                &Work::new(&Budget::new(2_000_000))
            )
            .is_ok()
        );
    }
}
