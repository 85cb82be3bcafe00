//! Property tests of parsing and in-memory application against diffs made
//! by an independent library (`similar`).

use proptest::prelude::*;
use similar::TextDiff;

use crate::Patch;
use crate::hunk::{Budget, MAX_MATCH_WORK, Work};
use crate::model::Hunk;

fn diff(a: &str, b: &str, context: usize) -> String {
    TextDiff::from_lines(a, b)
        .unified_diff()
        .context_radius(context)
        .header("a/f.txt", "b/f.txt")
        .to_string()
}

fn apply(
    path: &str,
    bytes: &[u8],
    hunks: &[Hunk],
    lenient: bool,
) -> Result<(Vec<u8>, Vec<crate::HunkReport>), crate::PatchError> {
    let budget = Budget::new(MAX_MATCH_WORK);
    crate::hunk::apply(path, bytes, hunks, lenient, &Work::new(&budget))
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

/// Patch-shaped texts: lines drawn from both formats' vocabulary, so the
/// parsers' deeper states are reached (the fuzz targets do the same from
/// raw bytes).
fn patchish() -> impl Strategy<Value = String> {
    let vocabulary = vec![
        "--- a/x",
        "+++ b/x",
        "--- /dev/null",
        "+++ /dev/null",
        "--- \"a/q\\tx\"",
        "+++ \"b/q\\tx\"",
        "@@ -1 +1 @@",
        "@@ -1,2 +1,2 @@ fn section",
        "@@ -0,0 +1 @@",
        "@@ -1 +0,0 @@",
        "@@ -2,0 +3 @@",
        " ctx",
        "-old",
        "+new",
        "",
        "\r",
        " ctx\r",
        "\\ No newline at end of file",
        "diff --git a/x b/x",
        "diff --git a/x y b/x y",
        "new file mode 100644",
        "deleted file mode 100644",
        "rename from x",
        "rename to y",
        "index 1..2 100644",
        "similarity index 90%",
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: x",
        "*** Delete File: y",
        "*** Update File: z",
        "*** Move to: w",
        "@@",
        "@@ fn a",
        "*** End of File",
        "+*** End Patch",
        "-- ",
        "2.47.0",
    ];
    (
        prop::collection::vec(prop::sample::select(vocabulary), 0..40),
        any::<bool>(),
    )
        .prop_map(|(lines, envelope)| {
            let body = lines.join("\n");
            if envelope {
                format!("*** Begin Patch\n{body}\n*** End Patch\n")
            } else {
                body
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn patch_shaped_text_never_panics_and_round_trips(text in patchish()) {
        if let Ok(patch) = Patch::parse(&text) {
            let printed = patch.to_string();
            let again = Patch::parse(&printed).map_err(|e| TestCaseError::fail(format!("{e}\n--- input\n{text}\n--- printed\n{printed}")))?;
            prop_assert_eq!(&again, &patch, "printed:\n{}", printed);
            prop_assert_eq!(again.to_string(), printed);
        }
    }
}

/// Names that stress quoting: spaces, tabs, quotes, backslashes, non-ASCII.
fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "dir/", "sp ace", "tab\t", "q\"", "back\\", "é", "x.txt", "-", "+",
        ]),
        1..4,
    )
    .prop_map(|parts| parts.concat())
}

/// Hunk body lines whose text may look like markers.
fn body_text() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "x",
        "*** End Patch",
        "--- a/x",
        "+++ b/x",
        "@@ -1 +1 @@",
        "-- ",
        " lead",
        "trail ",
        "cr\r",
        "\\ no",
    ])
    .prop_map(str::to_owned)
}

/// Well-formed unified diffs (counts right) with hostile names and lines.
fn unified_patch() -> impl Strategy<Value = String> {
    let hunk = (
        1usize..50,
        prop::collection::vec((0u8..3, body_text()), 1..8),
        any::<bool>(),
    );
    let file = (name(), any::<bool>(), prop::collection::vec(hunk, 1..4));
    prop::collection::vec(file, 1..4).prop_map(|files| {
        let mut out = String::new();
        for (name, git, hunks) in files {
            if git {
                out.push_str(&format!(
                    "diff --git {} {}\n",
                    crate::quote::quote_if_needed(&format!("a/{name}"), true),
                    crate::quote::quote_if_needed(&format!("b/{name}"), true)
                ));
            }
            out.push_str(&format!(
                "--- {}\n+++ {}\n",
                crate::quote::quote_if_needed(&format!("a/{name}"), false),
                crate::quote::quote_if_needed(&format!("b/{name}"), false)
            ));
            for (start, lines, no_newline) in hunks {
                let old = lines.iter().filter(|(k, _)| *k != 2).count();
                let new = lines.iter().filter(|(k, _)| *k != 1).count();
                out.push_str(&format!("@@ -{start},{old} +{start},{new} @@\n"));
                for (kind, text) in &lines {
                    let marker = [' ', '-', '+'][usize::from(*kind)];
                    out.push_str(&format!("{marker}{text}\n"));
                }
                if no_newline {
                    out.push_str("\\ No newline at end of file\n");
                }
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn well_formed_unified_diffs_parse_and_round_trip(text in unified_patch()) {
        let patch = Patch::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let printed = patch.to_string();
        let again = Patch::parse(&printed).map_err(|e| TestCaseError::fail(format!("{e}\n--- printed\n{printed}")))?;
        prop_assert_eq!(&again, &patch, "printed:\n{}", printed);
        prop_assert_eq!(again.to_string(), printed);
    }
}

/// Arbitrary hunks, stated lines included (up to absurd values).
fn any_hunk() -> impl Strategy<Value = Hunk> {
    use crate::model::{Line, Stated};
    let line =
        (0u8..3, prop::sample::select(vec!["a", "b", "", "c "])).prop_map(|(k, t)| match k {
            0 => Line::Context(t.to_owned()),
            1 => Line::Remove(t.to_owned()),
            _ => Line::Add(t.to_owned()),
        });
    (
        prop::option::of((
            prop_oneof![
                0usize..50,
                Just(usize::MAX),
                Just(1usize << 63),
                Just((1usize << 63) + 1)
            ],
            0usize..50,
        )),
        prop::collection::vec(prop::sample::select(vec!["a", "b", "zz"]), 0..2),
        prop::collection::vec(line, 0..6),
        any::<(bool, bool, bool)>(),
    )
        .prop_map(|(stated, anchors, lines, (old_nl, new_nl, eof))| Hunk {
            stated: stated.map(|(old_start, new_start)| Stated {
                old_start,
                new_start,
            }),
            anchors: anchors.into_iter().map(str::to_owned).collect(),
            lines,
            old_no_newline: old_nl,
            new_no_newline: new_nl,
            end_of_file: eof,
            ..Hunk::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn applying_arbitrary_hunks_never_panics(file in text(), hunks in prop::collection::vec(any_hunk(), 0..5), lenient in any::<bool>()) {
        // Ok or an error; never a panic, and an Ok result reports every hunk.
        if let Ok((_, reports)) = apply("f.txt", file.as_bytes(), &hunks, lenient) {
            prop_assert_eq!(reports.len(), hunks.len());
        }
    }
}
