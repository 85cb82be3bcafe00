//! The fixture corpus: `tests/fixtures/<case>/` holds `before/` (absent:
//! an empty tree), `patch`, and either `after/` or `expected-refusal`
//! (TOML: `rule`, `refusal`), plus an optional `case.toml` (why, options,
//! bounds and the hunk reports expected).
//!
//! Every case runs in a fresh sandbox: `root/` (allowed, a copy of
//! `before/`) beside `outside/secret.txt` (not allowed; links in fixtures
//! point there as `../outside`). After a refusal or failure the tree must be
//! byte-identical to `before/` (directories included, so a temporary file
//! or a created directory left behind fails the case); `outside/` must never
//! change.

use std::path::Path;

use agentcaps_patch::{ApplyOptions, Concession, Patch, PatchPolicyConfig};
use serde::Deserialize;

use crate::support::{Entry, Sandbox, copy_tree, tree};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[allow(dead_code)]
    why: String,
    strip: Option<usize>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    config: Option<PatchPolicyConfig>,
    #[serde(default)]
    hunk: Vec<ExpectedHunk>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedHunk {
    file: String,
    index: usize,
    applied_line: usize,
    offset: i64,
    concessions: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Refusal {
    rule: String,
    refusal: bool,
    #[allow(dead_code)]
    why: Option<String>,
}

fn concession_name(c: &Concession) -> String {
    serde_json::to_value(c)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Runs one case; `Err` says what was wrong.
fn run(dir: &Path) -> Result<(), String> {
    let read = |name: &str| std::fs::read_to_string(dir.join(name));
    let case: Case = match read("case.toml") {
        Ok(text) => toml::from_str(&text).map_err(|e| format!("case.toml: {e}"))?,
        Err(_) => Case::default(),
    };
    let patch_text = read("patch").map_err(|e| format!("patch: {e}"))?;
    let refusal: Option<Refusal> = match read("expected-refusal") {
        Ok(text) => Some(toml::from_str(&text).map_err(|e| format!("expected-refusal: {e}"))?),
        Err(_) => None,
    };
    // A misspelt file (`expected_refusal`, `case.tml`) would be ignored.
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !["before", "after", "patch", "case.toml", "expected-refusal"].contains(&name.as_str()) {
            return Err(format!("unknown fixture file {name}"));
        }
    }
    let has_after = dir.join("after").is_dir();
    if refusal.is_some() == has_after {
        return Err("needs exactly one of after/ and expected-refusal".into());
    }

    let sandbox = Sandbox::new();
    copy_tree(&dir.join("before"), &sandbox.root);
    let before = tree(&sandbox.root);
    let outside_before = tree(&sandbox.outside);
    let patcher = sandbox.patcher(case.config.clone().unwrap_or_default());
    let options = ApplyOptions {
        dry_run: case.dry_run,
        strip: case.strip,
    };
    let result = patcher
        .parse(&patch_text)
        .and_then(|p| patcher.apply(&p, &sandbox.root, options));

    if tree(&sandbox.outside) != outside_before {
        return Err("outside/ changed".into());
    }
    match (result, refusal) {
        (Ok(report), None) => {
            let got = tree(&sandbox.root);
            let mut want = if case.dry_run {
                before
            } else {
                tree(&dir.join("after"))
            };
            if !case.dry_run {
                // git keeps no empty directories: ignore those left behind.
                let empty: Vec<String> = got
                    .iter()
                    .filter(|(k, v)| {
                        **v == Entry::Dir && !got.keys().any(|o| o.starts_with(&format!("{k}/")))
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in empty {
                    want.entry(k).or_insert(Entry::Dir);
                }
            }
            if got != want {
                return Err(format!("tree differs\n got: {got:#?}\nwant: {want:#?}"));
            }
            if case.dry_run {
                if report.diff.is_none() {
                    return Err("a dry run without its diff".into());
                }
            } else {
                if report.diff.is_some() {
                    return Err("an applied patch reports a diff".into());
                }
                diff_reproduces(dir, &case, &patch_text, &got)?;
            }
            for h in &case.hunk {
                let file = report
                    .files
                    .iter()
                    .find(|f| f.path == h.file)
                    .ok_or(format!("no report for {}", h.file))?;
                let r = file
                    .hunks
                    .get(h.index - 1)
                    .ok_or(format!("no hunk {} for {}", h.index, h.file))?;
                let concessions: Vec<String> = r.concessions.iter().map(concession_name).collect();
                if (r.applied_line, r.offset, &concessions)
                    != (h.applied_line, h.offset, &h.concessions)
                {
                    return Err(format!(
                        "hunk {} of {}: got {r:?}, want {h:?}",
                        h.index, h.file
                    ));
                }
            }
            Ok(())
        }
        (Ok(report), Some(r)) => Err(format!("applied, but {} was expected: {report:?}", r.rule)),
        (Err(e), None) => Err(format!("refused or failed: {e} (rule {})", e.rule())),
        (Err(e), Some(r)) => {
            if tree(&sandbox.root) != before {
                return Err(format!("failed ({e}) but the tree changed"));
            }
            if e.rule() != r.rule || e.is_refusal() != r.refusal {
                return Err(format!(
                    "got rule {} (refusal: {}), want {} (refusal: {}): {e}",
                    e.rule(),
                    e.is_refusal(),
                    r.rule,
                    r.refusal
                ));
            }
            Ok(())
        }
    }
}

/// The diff a dry run shows, applied for real to `before/`, leaves the
/// tree the patch itself left (`applied`): the dry run shows what would
/// be applied, offsets and concessions included.
fn diff_reproduces(
    dir: &Path,
    case: &Case,
    patch_text: &str,
    applied: &std::collections::BTreeMap<String, Entry>,
) -> Result<(), String> {
    let sandbox = Sandbox::new();
    copy_tree(&dir.join("before"), &sandbox.root);
    let before = tree(&sandbox.root);
    let patcher = sandbox.patcher(case.config.clone().unwrap_or_default());
    let dry = ApplyOptions {
        dry_run: true,
        strip: case.strip,
    };
    let report = patcher
        .parse(patch_text)
        .and_then(|p| patcher.apply(&p, &sandbox.root, dry))
        .map_err(|e| format!("dry run: {e}"))?;
    if tree(&sandbox.root) != before {
        return Err("the dry run changed the tree".into());
    }
    let diff = report.diff.ok_or("a dry run without its diff")?;
    let exact = sandbox.patcher(PatchPolicyConfig::default());
    let applied_diff = exact
        .parse(&diff)
        .and_then(|p| exact.apply(&p, &sandbox.root, ApplyOptions::default()))
        .map_err(|e| format!("the dry run's diff does not apply ({e}):\n{diff}"))?;
    if applied_diff
        .files
        .iter()
        .any(|f| f.hunks.iter().any(|h| !h.concessions.is_empty()))
    {
        return Err(format!("the dry run's diff needed concessions:\n{diff}"));
    }
    let got = tree(&sandbox.root);
    let same = got
        .iter()
        .filter(|(_, v)| **v != Entry::Dir)
        .eq(applied.iter().filter(|(_, v)| **v != Entry::Dir));
    if !same {
        return Err(format!(
            "the dry run's diff leaves another tree:\n{diff}\n got: {got:#?}\nwant: {applied:#?}"
        ));
    }
    Ok(())
}

#[test]
fn fixture_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 40,
        "the corpus shrank to {} cases",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            run(c).err().map(|e| {
                format!(
                    "{}: {e}",
                    c.file_name().unwrap_or_default().to_string_lossy()
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn every_fixture_patch_survives_print_and_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for case in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(case.path().join("patch")) else {
            continue;
        };
        let Ok(patch) = Patch::parse(&text) else {
            continue;
        };
        let printed = patch.to_string();
        let again = Patch::parse(&printed).unwrap_or_else(|e| {
            panic!("{:?}: reprint does not parse: {e}\n{printed}", case.path())
        });
        assert_eq!(again, patch, "{:?}", case.path());
    }
}
