//! `agentcaps mcp` driven end to end through rmcp's own client over a real
//! child process: list the tools, call each allowed and refused, send
//! malformed arguments, and read the per-call log.

mod common;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: a protocol error instead of a tool result: {e}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_drives_every_tool() {
    let tree = common::Tree::new();
    let port = common::http_server();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"ls\", \"cat\", \"echo\", \"env\", \"find\"]\npath_policy = true\n\n[egress]\nallowed_cidrs = [\"127.0.0.0/8\"]\nallowed_ports = [{port}]\nallowed_methods = [\"GET\"]\n"
    ));
    let log = tree.top.join("calls.log");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentcaps"));
    command
        .arg("mcp")
        .arg("--policy")
        .arg(&policy)
        .arg("--log")
        .arg(&log)
        .current_dir(&tree.root)
        .env("AGENTCAPS_TEST_HOST_SECRET", "host-secret-value-91c2");
    let transport = TokioChildProcess::new(command).expect("spawn agentcaps mcp");
    let client: Client = ().serve(transport).await.expect("initialize");

    let tools = client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    let mut expected: Vec<_> = agentcaps_tools::TOOL_NAMES
        .iter()
        .map(|s| s.to_string())
        .collect();
    expected.sort();
    assert_eq!(names, expected, "exactly the catalog's tools");
    let read_only = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.annotations.as_ref())
            .and_then(|a| a.read_only_hint)
    };
    assert_eq!(read_only("read_file"), Some(true));
    assert_eq!(read_only("write_file"), Some(false));
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            tool.name
        );
        assert!(
            tool.description
                .as_deref()
                .is_some_and(|d| d.contains("Allowed") || d.contains("allowed")),
            "{}",
            tool.name
        );
    }

    // Wine makes no symbolic links (its CreateSymbolicLink reports success
    // and does nothing): on Windows the lexical `..` escape stands in for
    // the link `escape` that leads to the same directory.
    let escape = if cfg!(windows) {
        "../outside"
    } else {
        "escape"
    };
    // `cat` and `env` are not Windows programs; `find` prints the lines
    // that hold a word.
    let print_lib = if cfg!(windows) {
        json!({"argv": ["find", "needle", "src/lib.txt"]})
    } else {
        json!({"argv": ["cat", "src/lib.txt"]})
    };
    // (tool, arguments, expect error?, text that must appear, text that must not)
    let mut calls: Vec<(&str, Value, bool, &str, &str)> = vec![
        (
            "write_file",
            json!({"path": "notes.txt", "content": "hello notes\n"}),
            false,
            "",
            "",
        ),
        (
            "read_file",
            json!({"path": "notes.txt"}),
            false,
            "hello notes",
            "",
        ),
        (
            "read_file",
            json!({"path": format!("{escape}/secret.txt")}),
            true,
            "outside",
            "outside secret",
        ),
        (
            "write_file",
            json!({"path": "../outside/planted.txt", "content": "x"}),
            true,
            "",
            "",
        ),
        (
            "list_directory",
            json!({"path": "."}),
            false,
            "notes.txt",
            "",
        ),
        (
            "list_directory",
            json!({"path": escape}),
            true,
            "",
            "secret.txt",
        ),
        ("file_info", json!({"path": "notes.txt"}), false, "file", ""),
        ("file_info", json!({"path": "/etc/passwd"}), true, "", ""),
        (
            "search_files",
            json!({"pattern": "needle"}),
            false,
            "lib.txt",
            "",
        ),
        (
            "search_files",
            json!({"pattern": "x", "path": "/etc"}),
            true,
            "",
            "",
        ),
        ("shell_command", print_lib, false, "needle here", ""),
        (
            "shell_command",
            json!({"command": "ls; id"}),
            true,
            "",
            "uid=",
        ),
        (
            "http_request",
            json!({"url": format!("http://127.0.0.1:{port}/")}),
            false,
            "hello from loopback",
            "",
        ),
        (
            "http_request",
            json!({"url": "http://169.254.169.254/latest/meta-data/"}),
            true,
            "169.254",
            "",
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/edit.txt\n+++ b/edit.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"}),
            false,
            "",
            "",
        ),
        (
            "apply_patch",
            json!({"patch": "--- /dev/null\n+++ b/../outside/evil.txt\n@@ -0,0 +1 @@\n+evil\n"}),
            true,
            "",
            "",
        ),
        // Malformed arguments: tool errors, not protocol errors.
        (
            "read_file",
            json!({"path": 5}),
            true,
            "invalid arguments",
            "",
        ),
        ("write_file", json!({"path": "x.txt"}), true, "content", ""),
        ("shell_command", json!({}), true, "argv", ""),
        (
            "http_request",
            json!({"url": ["not", "a", "string"]}),
            true,
            "invalid arguments",
            "",
        ),
    ];
    // The environment a command gets: the host's secret is not passed on.
    // Windows has no program that prints its environment (`set` is built
    // into `cmd`); there the shell's own Windows tests check the allow-list
    // with a stand-in program.
    if cfg!(not(windows)) {
        calls.push((
            "shell_command",
            json!({"argv": ["env"]}),
            false,
            "PATH",
            "host-secret-value-91c2",
        ));
    }
    let mut failures = Vec::new();
    for (tool, args, want_error, must, must_not) in &calls {
        let result = call(&client, tool, args.clone()).await;
        let body = text(&result);
        if is_error(&result) != *want_error
            || (!must.is_empty() && !body.contains(must))
            || (!must_not.is_empty() && body.contains(must_not))
        {
            failures.push(format!(
                "{tool} {args}: isError={:?}\n    {body}",
                result.is_error
            ));
        }
    }
    // An unknown tool is a protocol error (JSON-RPC invalid params, as the
    // MCP specification says), naming the tools there are; it is logged too.
    let Value::Object(none) = json!({}) else {
        unreachable!()
    };
    let unknown = client
        .call_tool(CallToolRequestParams::new("no_such_tool").with_arguments(none))
        .await
        .expect_err("an unknown tool is not a tool result");
    let message = unknown.to_string();
    assert!(
        message.contains("-32602")
            && message.contains("unknown tool")
            && message.contains("read_file"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
    assert!(!tree.outside.join("planted.txt").exists() && !tree.outside.join("evil.txt").exists());
    client.cancel().await.expect("close the session");
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // One JSON line per call, with tool, decision, rule and duration.
    let log = std::fs::read_to_string(&log).expect("call log");
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), calls.len() + 1, "{log}");
    let last = lines.last().expect("the unknown tool's line");
    assert_eq!(
        (last["tool"].as_str(), last["decision"].as_str()),
        (Some("no_such_tool"), Some("error")),
        "{last}"
    );
    for (line, (tool, _, want_error, ..)) in lines.iter().zip(&calls) {
        assert_eq!(line["tool"], *tool);
        assert_eq!(line["decision"] == "allow", !want_error, "{line}");
        assert!(
            line["duration_ms"].is_u64() && line["rule"].is_string(),
            "{line}"
        );
    }
}
