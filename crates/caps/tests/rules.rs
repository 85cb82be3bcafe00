//! One rule-ID vocabulary across the crates: every ID any crate's
//! `rule()`/`id()` functions can return is documented, once, in
//! `RULES.md`, with the crates that report it; no row is stale; IDs
//! outside egress are kebab case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates whose errors carry rule IDs (directory names under `crates/`).
const CRATES: [&str; 7] = [
    "paths", "sandbox", "shell", "egress", "patch", "tools", "caps",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals returned by match arms (`=> "id"`) in the bodies of
/// `fn rule(..) -> &'static str` and `fn id(..) -> &'static str`.
fn ids_in(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut rest = text;
    while let Some(at) = ["fn rule(", "fn id("]
        .iter()
        .filter_map(|f| rest.find(f))
        .min()
    {
        rest = &rest[at..];
        let Some(open) = rest.find('{') else { break };
        let signature = &rest[..open];
        let body_start = open + 1;
        let mut depth = 1;
        let mut end = body_start;
        for (i, c) in rest[body_start..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                end = body_start + i;
                break;
            }
        }
        if signature.contains("-> &'static str") {
            let mut body = &rest[body_start..end];
            while let Some(arm) = body.find("=> \"") {
                body = &body[arm + 4..];
                let Some(close) = body.find('"') else { break };
                ids.push(body[..close].to_owned());
                body = &body[close..];
            }
        }
        rest = &rest[end.max(1)..];
    }
    ids
}

/// Every ID each crate can emit: ID → crates.
fn emitted() -> BTreeMap<String, BTreeSet<String>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in CRATES {
        let mut files = Vec::new();
        sources(&crates.join(name).join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("source");
            for id in ids_in(&text) {
                out.entry(id).or_default().insert(name.to_owned());
            }
        }
    }
    out
}

/// The table in RULES.md: ID → crates, with the rows in order.
fn documented() -> Vec<(String, BTreeSet<String>, String)> {
    let text = include_str!("../RULES.md");
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells.len(), 3, "row {l:?} needs three cells");
            let id = cells[0].trim_matches('`').to_owned();
            let crates = cells[1].split(',').map(|c| c.trim().to_owned()).collect();
            (id, crates, cells[2].to_owned())
        })
        .collect()
}

#[test]
fn the_scanner_finds_rule_ids() {
    let ids = ids_in(
        "impl X {\n    pub fn rule(&self) -> &'static str {\n        match self {\n            X::A { .. } => \"a-rule\",\n            X::B(inner) => inner.rule(),\n        }\n    }\n    fn other(&self) -> &'static str { match self { _ => \"ignored\" } }\n}\n",
    );
    assert_eq!(ids, ["a-rule"]);
}

#[test]
fn every_emitted_rule_is_documented_once_and_no_row_is_stale() {
    let emitted = emitted();
    assert!(
        emitted.len() > 80,
        "the scan found only {} IDs",
        emitted.len()
    );
    let table = documented();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (id, crates, meaning) in &table {
        if !seen.insert(id.clone()) {
            problems.push(format!("`{id}` is listed twice: one ID, one meaning"));
        }
        if meaning.is_empty() {
            problems.push(format!("`{id}` says nothing"));
        }
        match emitted.get(id) {
            None => problems.push(format!("`{id}` is documented but no crate emits it")),
            Some(from) if from != crates => problems.push(format!(
                "`{id}` is emitted by {from:?} but documented for {crates:?}"
            )),
            Some(_) => {}
        }
    }
    for (id, from) in &emitted {
        if !seen.contains(id) {
            problems.push(format!("`{id}` (from {from:?}) is not in RULES.md"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn rule_ids_follow_one_scheme() {
    let kebab = |s: &str| {
        !s.is_empty()
            && s.split('-').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            })
    };
    let mut wrong = Vec::new();
    for (id, crates) in emitted() {
        // egress writes `namespace.kebab-id` (see RULES.md).
        let ok = if crates.iter().all(|c| c == "egress") {
            id.split('.').all(kebab) && id.matches('.').count() <= 1
        } else {
            kebab(&id)
        };
        if !ok {
            wrong.push(format!("{id} ({crates:?})"));
        }
    }
    assert!(wrong.is_empty(), "rule IDs outside the scheme: {wrong:?}");
}
