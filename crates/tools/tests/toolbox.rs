//! The attack corpus `data/tool_cases.toml`, driven through `Toolbox::call`
//! with a real tree, real processes and a real loopback server.

mod common;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
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
    tool: String,
    args: toml::Value,
    expect: String,
    rule: Option<String>,
    /// The case needs the tree's symbolic links.
    #[serde(default)]
    links: bool,
    /// What the case sends on Windows, where it differs.
    windows_args: Option<toml::Value>,
    /// The rule expected on Windows, where it differs.
    windows_rule: Option<String>,
    contains: Option<String>,
    not_contains: Option<String>,
    why: String,
}

const POLICY: &str = r#"
allowed_commands = ["ls", "cat", "echo", "env", "wc", "find"]
path_policy = true

[egress]
allowed_cidrs = ["127.0.0.0/8"]
allowed_ports = [{port}]
allowed_methods = ["GET"]
"#;

struct Fixture {
    tree: common::Tree,
    port: u16,
    toolbox: Toolbox,
}

fn fixture() -> Fixture {
    let tree = common::Tree::new();
    let port = common::http_server();
    let policy_file = tree.policy(&POLICY.replace("{port}", &port.to_string()));
    let policy = Policy::load(&policy_file).expect("policy loads");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox builds");
    Fixture {
        tree,
        port,
        toolbox,
    }
}

fn corpus() -> Corpus {
    let corpus: Corpus =
        toml::from_str(include_str!("data/tool_cases.toml")).expect("corpus parses");
    assert!(corpus.case.len() > 40, "the corpus lost its cases");
    corpus
}

/// Runs `cases`; returns the failures.
async fn run(fixture: &Fixture, cases: &[&Case]) -> Vec<String> {
    let Fixture {
        tree,
        port,
        toolbox,
    } = fixture;
    let mut failures = Vec::new();
    for case in cases {
        let windows = cfg!(windows);
        let case_args = match &case.windows_args {
            Some(args) if windows => args,
            _ => &case.args,
        };
        let expected_rule = match &case.windows_rule {
            Some(rule) if windows => Some(rule),
            _ => case.rule.as_ref(),
        };
        let args_text = serde_json::to_string(case_args).expect("args to json");
        let args: serde_json::Value =
            serde_json::from_str(&tree.subst_json(&args_text, *port)).expect("args json");
        let result = toolbox.call(&case.tool, args).await;
        let (decision, rule, text) = match &result {
            Ok(out) => ("allow", String::new(), out.text.clone()),
            Err(e) if e.is_refusal() => ("deny", e.rule().to_owned(), e.to_model_text()),
            Err(e) => ("error", e.rule().to_owned(), e.to_model_text()),
        };
        let mut wrong = Vec::new();
        if decision != case.expect {
            wrong.push(format!("decision {decision}, expected {}", case.expect));
        }
        match expected_rule {
            Some(expected) if &rule != expected => {
                wrong.push(format!("rule `{rule}`, expected `{expected}`"));
            }
            None if case.expect != "allow" => {
                wrong.push(format!("the row must pin its rule (this run: `{rule}`)"));
            }
            _ => {}
        }
        if let Some(needle) = &case.contains
            && !text.contains(needle.as_str())
        {
            wrong.push(format!("text lacks {needle:?}"));
        }
        if let Some(needle) = &case.not_contains
            && text.contains(needle.as_str())
        {
            wrong.push(format!("text contains {needle:?}"));
        }
        if decision != "allow" && text.chars().count() > agentcaps_tools::MAX_ERROR_CHARS + 1 {
            wrong.push(format!("error text is {} chars", text.chars().count()));
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{} ({}): {}\n    text: {}",
                case.name,
                case.why,
                wrong.join("; "),
                text.replace('\n', "\n          ")
            ));
        }
    }
    failures
}

/// Nothing refused left a trace outside the root.
fn nothing_written_outside(tree: &common::Tree) {
    let outside: Vec<_> = std::fs::read_dir(&tree.outside)
        .expect("read outside")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        outside,
        ["secret.txt"],
        "something was written outside the root"
    );
}

/// The cases that need no symbolic link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_attack_corpus() {
    let fixture = fixture();
    let tree = &fixture.tree;
    let corpus = corpus();
    let cases: Vec<&Case> = corpus.case.iter().filter(|c| !c.links).collect();
    assert!(cases.len() > 40, "the corpus lost its cases");
    let failures = run(&fixture, &cases).await;
    nothing_written_outside(tree);
    assert!(
        !tree.root.join(".git/hooks").exists(),
        "a git hook was written"
    );
    assert!(!tree.root.join(".bashrc").exists(), ".bashrc was written");
    assert!(tree.root.join("made/here").is_dir(), "create_directory ran");
    assert!(
        !tree.root.join("stolen.txt").exists(),
        "a file was moved in"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).expect("edit.txt"),
        "one\ntwo\nthree\n",
        "a dry run or a refused patch changed a file"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("new/dir/file.txt")).expect("written file"),
        "fresh\n"
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The cases that go through the tree's symbolic links.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    windows,
    ignore = "Wine makes no symbolic links (its CreateSymbolicLink reports success and does nothing)"
)]
async fn tool_attack_corpus_through_links() {
    let fixture = fixture();
    let corpus = corpus();
    let cases: Vec<&Case> = corpus.case.iter().filter(|c| c.links).collect();
    assert!(cases.len() >= 13, "the corpus lost its link cases");
    let failures = run(&fixture, &cases).await;
    nothing_written_outside(&fixture.tree);
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn overwrite_true_replaces_and_overwrite_false_keeps() {
    let tree = common::Tree::new();
    let policy = Policy::load(&tree.policy("")).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let keep = toolbox
        .call(
            "write_file",
            serde_json::json!({"path": "edit.txt", "content": "new"}),
        )
        .await;
    assert!(keep.is_err());
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).unwrap(),
        "one\ntwo\nthree\n"
    );
    toolbox
        .call(
            "write_file",
            serde_json::json!({"path": "edit.txt", "content": "new", "overwrite": true}),
        )
        .await
        .expect("overwrite allowed");
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).unwrap(),
        "new"
    );
}

#[tokio::test]
async fn list_directory_stops_at_max_entries() {
    let tree = common::Tree::new();
    let policy = Policy::load(&tree.policy("")).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let out = toolbox
        .call(
            "list_directory",
            serde_json::json!({"path": ".", "recursive": true, "max_entries": 2}),
        )
        .await
        .expect("list");
    assert_eq!(out.structured["entries"].as_array().map(Vec::len), Some(2));
    assert_eq!(out.structured["truncated"], true);
}

#[tokio::test]
async fn every_call_is_recorded_with_decision_and_rule() {
    let tree = common::Tree::new();
    let policy = Policy::load(&tree.policy("")).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let (_, allowed) = toolbox
        .call_recorded("read_file", serde_json::json!({"path": "edit.txt"}))
        .await;
    assert_eq!((allowed.decision, allowed.rule), ("allow", ""));
    let (_, denied) = toolbox
        .call_recorded(
            "read_file",
            serde_json::json!({"path": "../outside/secret.txt"}),
        )
        .await;
    assert_eq!((denied.decision, denied.rule), ("deny", "outside-roots"));
    let (_, malformed) = toolbox
        .call_recorded("read_file", serde_json::json!({"path": []}))
        .await;
    assert_eq!(
        (malformed.decision, malformed.rule),
        ("error", "invalid-arguments")
    );
    let line = agentcaps_tools::CallLog::line(&denied);
    let parsed: serde_json::Value = serde_json::from_str(&line).expect("one JSON line");
    assert_eq!(parsed["tool"], "read_file");
    assert_eq!(parsed["decision"], "deny");
    assert!(!line.contains('\n'));
}

#[tokio::test]
async fn recursive_listing_is_sorted_and_enters_subdirectories_in_order() {
    let tree = common::Tree::new();
    let policy = Policy::load(&tree.policy("")).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let out = toolbox
        .call(
            "list_directory",
            serde_json::json!({"path": "src", "recursive": true}),
        )
        .await
        .expect("list");
    let paths: Vec<&str> = out.structured["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["deep", "lib.txt", "deep/more.txt"]);
}

/// Every table in `tests/data` has a runner: a file added there without
/// one (or a runner's file renamed) fails here instead of passing unread.
#[test]
fn every_data_file_has_a_runner() {
    // `tool_cases.toml` is run above, `cli_cases.toml` by `tests/cli.rs`.
    let run = ["cli_cases.toml", "tool_cases.toml"];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/data")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    assert_eq!(
        found, run,
        "a data file without a runner, or a runner without its file"
    );
}
