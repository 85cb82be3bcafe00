//! The parse corpus (`tests/corpus/parse.toml`): input, expected outcome
//! (`ok` or a rule id), the line the error names, and why.

use agentcaps_patch::{Format, Patch, PatchError};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    input: String,
    /// `"ok"` or the rule id of the error.
    expect: String,
    /// For `ok`: the number of file sections; for errors: the line named.
    files: Option<usize>,
    line: Option<usize>,
    format: Option<String>,
    #[allow(dead_code)]
    why: String,
}

fn error_line(e: &PatchError) -> Option<usize> {
    match e {
        PatchError::Parse { line, .. }
        | PatchError::Malformed { line, .. }
        | PatchError::HeaderCounts { line, .. }
        | PatchError::Unsupported { line, .. } => Some(*line),
        _ => None,
    }
}

/// Everything in `tests/corpus` is run by a test of this file: a data
/// file nobody runs tests nothing.
#[test]
fn every_corpus_file_is_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    // parse.toml: `parse_corpus`; fuzz-regressions/: `fuzz_regressions_round_trip`.
    assert_eq!(found, ["fuzz-regressions", "parse.toml"]);
}

#[test]
fn parse_corpus() {
    let text = include_str!("../corpus/parse.toml");
    let corpus: Corpus = toml::from_str(text).unwrap_or_else(|e| panic!("parse.toml: {e}"));
    assert!(corpus.case.len() >= 25, "the corpus shrank");
    let mut failures = Vec::new();
    for case in &corpus.case {
        let got = Patch::parse(&case.input);
        let ok = match (&got, case.expect.as_str()) {
            (Ok(p), "ok") => {
                let format_ok = match case.format.as_deref() {
                    Some("envelope") => p.format() == Format::Envelope,
                    Some("unified") => p.format() == Format::Unified,
                    _ => true,
                };
                format_ok && case.files.is_none_or(|n| p.file_count() == n)
            }
            (Err(e), rule) => {
                e.rule() == rule && case.line.is_none_or(|l| error_line(e) == Some(l))
            }
            (Ok(_), _) => false,
        };
        if !ok {
            failures.push(format!(
                "{}: got {:?}",
                case.name,
                got.map(|p| p.file_count()).map_err(|e| format!(
                    "{} at {:?}: {e}",
                    e.rule(),
                    error_line(&e)
                ))
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Minimized fuzz crashers (`tests/corpus/fuzz-regressions/`), kept as
/// regression cases of the fuzz targets' invariant: parse → print → parse
/// gives the same patch, and printing is stable.
#[test]
fn fuzz_regressions_round_trip() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/fuzz-regressions");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
    {
        let bytes = std::fs::read(entry.path()).unwrap_or_else(|e| panic!("read: {e}"));
        let text = String::from_utf8(bytes)
            .unwrap_or_else(|e| panic!("{:?}: not UTF-8: {e}", entry.path()));
        seen += 1;
        let Ok(patch) = Patch::parse(&text) else {
            continue;
        };
        let printed = patch.to_string();
        let again = Patch::parse(&printed)
            .unwrap_or_else(|e| panic!("{:?}: reprint does not parse: {e}", entry.path()));
        assert_eq!(again, patch, "{:?}", entry.path());
        assert_eq!(again.to_string(), printed, "{:?}", entry.path());
    }
    assert!(seen > 0, "no regression cases found");
}
