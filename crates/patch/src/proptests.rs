//! Property tests of parsing and in-memory application against diffs made
//! by an independent library (`similar`).

use proptest::prelude::*;
use similar::TextDiff;

use crate::Patch;
use crate::hunk::apply;
use crate::model::Hunk;

fn diff(a: &str, b: &str, context: usize) -> String {
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(context)
        .header("a/f.txt", "b/f.txt")
        .to_string()
}

fn hunks_of(patch_text: &str) -> Vec<Hunk> {
    if patch_text.is_empty() {
        return Vec::new(); // similar writes nothing for equal texts
    }
    match Patch::parse(patch_text) {
        Ok(p) => p.files.into_iter().flat_map(|f| f.hunks).collect(),
        Err(e) => panic!("similar's diff did not parse: {e}\n{patch_text}"),
    }
}

/// Texts with many repeated lines, blank lines, trailing spaces, and with or
/// without a final newline.
fn text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "c", "", "x  ", "  indented", "}"]),
            0..40,
        ),
        any::<bool>(),
    )
        .prop_map(|(lines, final_newline)| {
            let mut s = lines.join("\n");
            if final_newline && !s.is_empty() {
                s.push('\n');
            }
            s
        })
}

/// Texts whose lines are all distinct (so no context can match twice).
fn distinct_text() -> impl Strategy<Value = (String, String)> {
    (prop::collection::vec((any::<bool>(), any::<bool>(), "[a-z]{0,6}"), 1..60))
        .prop_map(|edits| {
            let (mut a, mut b) = (String::new(), String::new());
            for (i, (keep, add, word)) in edits.iter().enumerate() {
                if *keep || !*add {
                    a.push_str(&format!("line {i} {word}\n"));
                }
                if *keep {
                    b.push_str(&format!("line {i} {word}\n"));
                }
                if *add {
                    b.push_str(&format!("new {i} {word}\n"));
                }
            }
            (a, b)
        })
        // With nothing to keep, a pure insertion has no context to find.
        .prop_filter("a must keep a line", |(a, _)| !a.is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn diff_of_a_to_b_applied_to_a_gives_b(a in text(), b in text(), context in 0usize..4) {
        let hunks = hunks_of(&diff(&a, &b, context));
        let (out, reports) = apply("f.txt", a.as_bytes(), &hunks, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(String::from_utf8_lossy(&out), b.as_str());
        prop_assert!(reports.iter().all(|r| r.offset == 0 && r.concessions.is_empty()));
    }

    #[test]
    fn reversed_diff_applied_to_b_gives_a(a in text(), b in text(), context in 0usize..4) {
        let reversed: Vec<Hunk> = hunks_of(&diff(&a, &b, context)).iter().map(Hunk::reversed).collect();
        let (out, _) = apply("f.txt", b.as_bytes(), &reversed, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(String::from_utf8_lossy(&out), a.as_str());
    }

    #[test]
    fn unrelated_lines_above_shift_every_hunk_by_their_count((a, b) in distinct_text(), above in 1usize..30, context in 1usize..4) {
        let hunks = hunks_of(&diff(&a, &b, context));
        let prefix: String = (0..above).map(|i| format!("unrelated {i}\n")).collect();
        let shifted = format!("{prefix}{a}");
        let (out, reports) = apply("f.txt", shifted.as_bytes(), &hunks, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(String::from_utf8_lossy(&out), format!("{prefix}{b}"));
        for r in &reports {
            // A pure insertion at the very top has no context to find and
            // stays at its stated line, inside the unrelated lines.
            if r.stated_line != Some(0) {
                prop_assert_eq!(r.offset, above as i64, "{:?}", r);
                prop_assert!(r.concessions.contains(&crate::Concession::Offset));
            }
        }
    }

    #[test]
    fn print_then_parse_is_identity(a in text(), b in text(), context in 0usize..4) {
        prop_assume!(a != b);
        let patch = Patch::parse(&diff(&a, &b, context)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let printed = patch.to_string();
        let again = Patch::parse(&printed).map_err(|e| TestCaseError::fail(format!("{e}\n{printed}")))?;
        prop_assert_eq!(&again, &patch);
        prop_assert_eq!(again.to_string(), printed);
    }
}
