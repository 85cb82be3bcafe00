//! The attack corpus (`tests/data/attacks.toml`), run row by row.

use std::collections::BTreeMap;

use agentcaps_shell::CommandRequest;
use serde::Deserialize;

use crate::fixture::Tree;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    why: String,
    argv: Option<Vec<String>>,
    line: Option<String>,
    cwd: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    stdin: Option<String>,
    #[serde(default = "files")]
    policy: String,
    expect: Expect,
    rule: Option<String>,
    path_rule: Option<String>,
}

fn files() -> String {
    "files".to_owned()
}

#[derive(Debug, Deserialize, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Expect {
    Allow,
    Deny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    case: Vec<Case>,
}

pub(crate) fn load() -> Vec<(String, CommandRequest)> {
    table()
        .case
        .into_iter()
        .map(|c| (c.policy.clone(), request(&c)))
        .collect()
}

/// The corpus: the general attack table, then the per-program grammar
/// table (allowed and refused spellings from each program's manual), then
/// git's.
fn table() -> Table {
    let mut table: Table =
        toml::from_str(include_str!("../data/attacks.toml")).expect("attacks.toml parses");
    let grammar: Table =
        toml::from_str(include_str!("../data/grammar.toml")).expect("grammar.toml parses");
    let git: Table = toml::from_str(include_str!("../data/git.toml")).expect("git.toml parses");
    assert!(!table.case.is_empty(), "attacks.toml has no cases");
    assert!(!grammar.case.is_empty(), "grammar.toml has no cases");
    assert!(!git.case.is_empty(), "git.toml has no cases");
    table.case.extend(grammar.case);
    table.case.extend(git.case);
    table
}

/// The files [`table`] reads: every data file in `tests/data`.
const DATA_FILES: [&str; 3] = ["attacks.toml", "git.toml", "grammar.toml"];

/// A data file nobody runs is a table of attacks that tests nothing.
#[test]
fn every_data_file_is_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/data")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, DATA_FILES, "files in {}", dir.display());
}

fn request(case: &Case) -> CommandRequest {
    let mut req = match (&case.argv, &case.line) {
        (Some(argv), None) => CommandRequest::argv(argv.clone()),
        (None, Some(line)) => CommandRequest::line(line.clone()),
        _ => panic!("case {:?} needs exactly one of argv and line", case.why),
    };
    if let Some(cwd) = &case.cwd {
        req = req.with_cwd(cwd.clone());
    }
    if let Some(input) = &case.stdin {
        req = req.with_stdin(input.clone());
    }
    for (name, value) in &case.env {
        req = req.with_env(name.clone(), value.clone());
    }
    req
}

#[test]
fn every_attack_row_is_decided_as_expected() {
    let tree = Tree::new();
    let table = table();
    assert!(table.case.len() > 100, "the corpus shrank");
    let mut failures = Vec::new();
    for case in &table.case {
        let policy = tree.policy(&case.policy);
        let got = policy.validate(&request(case));
        let ok = match (&got, case.expect) {
            (Ok(_), Expect::Allow) => true,
            (Err(e), Expect::Deny) => {
                e.is_refusal()
                    && case.rule.as_deref() == Some(e.rule())
                    && case
                        .path_rule
                        .as_deref()
                        .is_none_or(|r| e.path_rule() == Some(r))
            }
            _ => false,
        };
        if !ok {
            let got = match &got {
                Ok(cmd) => format!("allowed: {:?}", cmd.argv()),
                Err(e) => format!("{} / {:?}: {e}", e.rule(), e.path_rule()),
            };
            failures.push(format!(
                "{}\n    expected {:?} {:?}, got {got}",
                case.why, case.expect, case.rule
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_denied_row_names_a_rule_and_every_row_says_why() {
    for case in table().case {
        assert!(!case.why.trim().is_empty());
        assert_eq!(
            case.expect == Expect::Deny,
            case.rule.is_some(),
            "{}",
            case.why
        );
    }
}

#[test]
fn refusals_are_stable() {
    let tree = Tree::new();
    for (policy, req) in load() {
        let policy = tree.policy(&policy);
        let first = policy
            .validate(&req)
            .map_err(|e| e.to_string())
            .map(|c| c.argv().to_vec());
        let second = policy
            .validate(&req)
            .map_err(|e| e.to_string())
            .map(|c| c.argv().to_vec());
        assert_eq!(first, second);
    }
}

/// Every option a default table refuses (its subcommands' too) is refused
/// by at least one row of the corpus, so each rule is tried by an attack
/// and not only written down.
#[test]
fn every_refused_option_has_an_attack_row() {
    use agentcaps_shell::ShellError;
    use std::collections::BTreeSet;

    let tree = Tree::new();
    let mut tried = BTreeSet::new();
    for case in table().case {
        let policy = tree.policy(&case.policy);
        if let Err(ShellError::RefusedOption {
            program, option, ..
        }) = policy.validate(&request(&case))
        {
            tried.insert((program, option));
        }
    }
    let policy = tree.policy("files");
    // A refusal names the program as called (`gawk`); its table may be
    // another name's (`awk`).
    let tried: BTreeSet<(String, String)> = tried
        .into_iter()
        .map(|(program, option)| {
            let (first, rest) = program.split_once(' ').unwrap_or((&program, ""));
            let table = policy
                .rules()
                .find(|t| t.aliases.iter().any(|a| a == first))
                .map_or(first, |t| t.name.as_str());
            let name = if rest.is_empty() {
                table.to_owned()
            } else {
                format!("{table} {rest}")
            };
            (name, option)
        })
        .collect();
    let mut missing = Vec::new();
    let mut total = 0;
    for table in policy.rules() {
        let mut rules: Vec<(String, &str)> = table
            .refuse
            .iter()
            .map(|r| (table.name.clone(), r.option.as_str()))
            .collect();
        for sub in table.grammar.iter().flat_map(|g| &g.subcommands) {
            let name = format!("{} {}", table.name, sub.name);
            rules.extend(sub.refuse.iter().map(|r| (name.clone(), r.option.as_str())));
            rules.extend(
                sub.refuse_operands
                    .iter()
                    .map(|r| (name.clone(), r.operand.as_str())),
            );
        }
        for (program, option) in rules {
            total += 1;
            if !tried.contains(&(program.clone(), option.to_owned())) {
                missing.push(format!("{program} {option}"));
            }
        }
    }
    assert!(total > 150, "the tables shrank: {total} refused options");
    assert!(
        missing.is_empty(),
        "{} of {total} refused options have no attack row that is refused by them:\n{}",
        missing.len(),
        missing.join("\n")
    );
}

/// `-c` strings nested in `-c` strings are unwrapped a few levels deep,
/// then refused: a deep nest is refused, not followed without end.
#[test]
fn nested_shell_strings_stop_at_a_depth() {
    let tree = Tree::new();
    let policy = tree.policy("unwrap");
    let nest = |levels: usize| {
        let mut argv = vec!["cat".to_owned(), "notes.txt".to_owned()];
        for _ in 0..levels {
            argv = vec![
                "sh".to_owned(),
                "-c".to_owned(),
                agentcaps_shell::quote(&argv),
            ];
        }
        argv
    };
    let shallow = policy.validate(&CommandRequest::argv(nest(3)));
    assert_eq!(
        shallow.map(|c| c.argv().to_vec()).ok(),
        Some(vec!["cat".to_owned(), "notes.txt".to_owned()])
    );
    let deep = policy
        .validate(&CommandRequest::argv(nest(6)))
        .expect_err("six levels are refused");
    assert_eq!(deep.rule(), "launcher");
    assert!(deep.to_string().contains("nest more than"), "{deep}");
}
