//! Snapshots of what a model reads: every tool's description and input
//! schema, and representative refusal texts. These texts are an interface;
//! they change only on purpose (`INSTA_UPDATE=always`, then read the diff).

mod common;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::json;

const POLICY: &str = r#"
allowed_commands = ["ls", "cat", "echo"]
path_policy = true

[egress]
blocked_domains = ["example.com"]
allowed_methods = ["GET", "HEAD"]
"#;

fn toolbox(tree: &common::Tree) -> Toolbox {
    let policy = Policy::load(&tree.policy(POLICY)).expect("policy");
    Toolbox::new(&policy, &tree.root).expect("toolbox")
}

/// `text` with the tree's directories as `[ROOT]`, `[OUTSIDE]` and
/// `[TOP]`, and the path separators after them as `/` (Windows writes `\`
/// there: the same path, so the same snapshot).
fn normalise(tree: &common::Tree, text: &str) -> String {
    let text = text
        .replace(&tree.root.display().to_string(), "[ROOT]")
        .replace(&tree.outside.display().to_string(), "[OUTSIDE]")
        .replace(&tree.top.display().to_string(), "[TOP]");
    if std::path::MAIN_SEPARATOR == '/' {
        return text;
    }
    // Within each path that starts at a placeholder, up to the first
    // character that ends a path in these texts.
    let mut out = String::with_capacity(text.len());
    let mut in_path = false;
    for (i, c) in text.char_indices() {
        if ["[ROOT]", "[OUTSIDE]", "[TOP]"]
            .iter()
            .any(|p| text[i..].starts_with(p))
        {
            in_path = true;
        } else if c.is_whitespace() || matches!(c, ',' | ';' | ')' | '`' | '\'' | '"') {
            in_path = false;
        }
        out.push(if in_path && c == std::path::MAIN_SEPARATOR {
            '/'
        } else {
            c
        });
    }
    out
}

#[test]
fn tool_schemas() {
    let tree = common::Tree::new();
    let toolbox = toolbox(&tree);
    let names: Vec<_> = toolbox.tools().iter().map(|t| t.name).collect();
    assert_eq!(names, agentcaps_tools::TOOL_NAMES);
    for tool in toolbox.tools() {
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert_eq!(tool.output_schema["type"], "object", "{}", tool.name);
        insta::assert_json_snapshot!(format!("schema_{}", tool.name), tool.input_schema);
        insta::assert_json_snapshot!(format!("output_schema_{}", tool.name), tool.output_schema);
    }
}

#[test]
fn tool_descriptions() {
    let tree = common::Tree::new();
    let toolbox = toolbox(&tree);
    for tool in toolbox.tools() {
        insta::assert_snapshot!(
            format!("description_{}", tool.name),
            normalise(&tree, &tool.description)
        );
    }
}

#[tokio::test]
async fn refusal_texts() {
    let tree = common::Tree::new();
    let toolbox = toolbox(&tree);
    let cases = [
        (
            "read_outside",
            "read_file",
            json!({"path": "../outside/secret.txt"}),
        ),
        ("read_blocked_env", "read_file", json!({"path": ".env"})),
        (
            "write_git_hook",
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        ),
        (
            "shell_operator",
            "shell_command",
            json!({"command": "ls; id"}),
        ),
        (
            "shell_not_allowed",
            "shell_command",
            json!({"argv": ["rm", "-rf", "."]}),
        ),
        (
            "shell_file_argument",
            "shell_command",
            json!({"argv": ["cat", "../outside/secret.txt"]}),
        ),
        (
            "http_metadata",
            "http_request",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
        ),
        (
            "http_domain",
            "http_request",
            json!({"url": "https://example.com/"}),
        ),
        (
            "http_loopback",
            "http_request",
            json!({"url": "http://127.0.0.1/"}),
        ),
        (
            "http_method",
            "http_request",
            json!({"url": "https://docs.rs/", "method": "POST"}),
        ),
        (
            "http_scheme",
            "http_request",
            json!({"url": "file:///etc/passwd"}),
        ),
        ("read_nul", "read_file", json!({"path": "a\u{0}b"})),
        (
            "write_existing",
            "write_file",
            json!({"path": "edit.txt", "content": "x"}),
        ),
        (
            "shell_launcher",
            "shell_command",
            json!({"argv": ["env", "sh", "-c", "id"]}),
        ),
        (
            "patch_no_match",
            "apply_patch",
            json!({"patch": "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,3 +1,3 @@\n uno\n-dos\n+DOS\n tres\n"}),
        ),
        (
            "patch_escape",
            "apply_patch",
            json!({"patch": "--- /dev/null\n+++ b/../outside/evil.txt\n@@ -0,0 +1 @@\n+evil\n"}),
        ),
        ("malformed_arguments", "read_file", json!({"path": 5})),
        ("missing_argument", "write_file", json!({"path": "x"})),
        ("unknown_tool", "rm_rf", json!({})),
    ];
    refusals(&tree, &toolbox, &cases).await;
}

/// The refusal of a read through the tree's link that leads outside.
#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Wine makes no symbolic links (its CreateSymbolicLink reports success and does nothing)"
)]
async fn refusal_text_through_a_link() {
    let tree = common::Tree::new();
    let toolbox = toolbox(&tree);
    let cases = [(
        "read_through_link",
        "read_file",
        json!({"path": "escape/secret.txt"}),
    )];
    refusals(&tree, &toolbox, &cases).await;
}

/// Snapshots the refusal of each `(name, tool, args)` case.
async fn refusals(
    tree: &common::Tree,
    toolbox: &Toolbox,
    cases: &[(&str, &str, serde_json::Value)],
) {
    for (name, tool, args) in cases {
        let error = toolbox
            .call(tool, args.clone())
            .await
            .expect_err("every case here is refused");
        let text = error.to_model_text();
        assert!(
            text.chars().count() <= agentcaps_tools::MAX_ERROR_CHARS + 1,
            "{name}: {} chars",
            text.chars().count()
        );
        insta::assert_snapshot!(
            format!("refusal_{name}"),
            format!("rule: {}\n{}", error.rule(), normalise(tree, &text))
        );
    }
}
