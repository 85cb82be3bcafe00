//! The unified diff a patch would apply, as a dry run shows it.
//!
//! Written from what applying in memory found, not from the patch text:
//! each hunk at the line where it matched, its context and removed lines as
//! the file has them (so a concession such as ignored trailing whitespace
//! shows the file's real lines), its added lines as they would be written.
//! `git apply` and `patch -p1` accept the result.

use std::fmt::Write;

use crate::model::{Hunk, Line, Operation};
use crate::quote::quote_if_needed;
use crate::report::HunkReport;
use crate::text::Text;

/// The diff of one file section: `old` and `new` are the contents before
/// and after (empty for a creation or a deletion); `hunks` and `reports`
/// (updates and moves) say where each hunk applied.
pub(crate) fn file_diff(
    op: &Operation,
    old: &[u8],
    new: &[u8],
    hunks: &[Hunk],
    reports: &[HunkReport],
) -> String {
    let mut out = String::new();
    let name = |prefix: &str, n: &str| quote_if_needed(&format!("{prefix}{n}"), false);
    let (from, to) = match op {
        Operation::Create(p) | Operation::Delete(p) | Operation::Update(p) => (p, p),
        Operation::Move(from, to) => (from, to),
    };
    let _ = writeln!(
        out,
        "diff --git {} {}",
        quote_if_needed(&format!("a/{from}"), true),
        quote_if_needed(&format!("b/{to}"), true)
    );
    let (old_text, new_text) = (Text::new(old), Text::new(new));
    match op {
        Operation::Create(p) => {
            out.push_str("new file mode 100644\n");
            if new_text.len() > 0 {
                let _ = writeln!(out, "--- /dev/null\n+++ {}", name("b/", p));
                let _ = writeln!(out, "@@ -0,0 +{} @@", range(0, new_text.len()));
                for j in 0..new_text.len() {
                    line(&mut out, '+', new_text.whole(j));
                }
            }
        }
        Operation::Delete(p) => {
            out.push_str("deleted file mode 100644\n");
            if old_text.len() > 0 {
                let _ = writeln!(out, "--- {}\n+++ /dev/null", name("a/", p));
                let _ = writeln!(out, "@@ -{} +0,0 @@", range(0, old_text.len()));
                for i in 0..old_text.len() {
                    line(&mut out, '-', old_text.whole(i));
                }
            }
        }
        Operation::Update(_) | Operation::Move(..) => {
            if let Operation::Move(..) = op {
                let _ = writeln!(out, "rename from {}", quote_if_needed(from, false));
                let _ = writeln!(out, "rename to {}", quote_if_needed(to, false));
            }
            if old == new {
                return out;
            }
            let _ = writeln!(out, "--- {}\n+++ {}", name("a/", from), name("b/", to));
            // Lines added minus lines removed by the hunks before this one.
            let mut delta: i64 = 0;
            for (hunk, report) in hunks.iter().zip(reports) {
                let pos = report.applied_line.saturating_sub(1);
                let new_pos = usize::try_from(i64::try_from(pos).unwrap_or(i64::MAX) + delta)
                    .unwrap_or_default();
                let (m, n) = (hunk.old_count(), hunk.new_count());
                let _ = writeln!(out, "@@ -{} +{} @@", range(pos, m), range(new_pos, n));
                let (mut i, mut j) = (pos, new_pos);
                for l in &hunk.lines {
                    match l {
                        Line::Context(_) => {
                            line(&mut out, ' ', old_text.whole(i));
                            i += 1;
                            j += 1;
                        }
                        Line::Remove(_) => {
                            line(&mut out, '-', old_text.whole(i));
                            i += 1;
                        }
                        Line::Add(_) => {
                            line(&mut out, '+', new_text.whole(j));
                            j += 1;
                        }
                    }
                }
                delta +=
                    i64::try_from(n).unwrap_or_default() - i64::try_from(m).unwrap_or_default();
            }
        }
    }
    out
}

/// `start,count` of a hunk header for lines `[index, index + count)`
/// (0-based): 1-based start, or the line before when the side is empty.
fn range(index: usize, count: usize) -> String {
    if count == 0 {
        format!("{index},0")
    } else {
        format!("{},{count}", index + 1)
    }
}

/// One diff line: the marker, the file's line as it is (its own
/// terminator), and git's marker when it has none.
fn line(out: &mut String, marker: char, whole: &[u8]) {
    out.push(marker);
    out.push_str(&String::from_utf8_lossy(whole));
    if !whole.ends_with(b"\n") {
        out.push_str("\n\\ No newline at end of file\n");
    }
}
