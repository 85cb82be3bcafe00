//! `agentcaps mcp` spoken to line by line, as a client that does not use an
//! SDK would: a line that is not JSON gets a `-32700` parse error, and
//! `arguments` that are not an object get a tool error (`isError`), like
//! any malformed argument — neither stops the session.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[test]
fn parse_errors_and_non_object_arguments() {
    let tree = common::Tree::new();
    let policy = tree.policy("");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentcaps"))
        .args(["mcp", "--policy"])
        .arg(&policy)
        .current_dir(&tree.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agentcaps mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    };
    let mut receive = || -> Value {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };

    send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string(),
    );
    let init = receive();
    assert_eq!(init["id"], 1, "{init}");
    send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());

    send("this is not json {");
    let parse_error = receive();
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null, "{parse_error}");

    for (id, arguments) in [(2, json!("src/lib.txt")), (3, json!([1, 2])), (4, json!(7))] {
        send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": arguments}})
            .to_string(),
        );
        let reply = receive();
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("not an object"), "{text}");
    }

    // The session goes on: a good call is answered.
    send(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "read_file", "arguments": {"path": "edit.txt"}}})
        .to_string(),
    );
    let reply = receive();
    assert_eq!(
        reply["result"]["content"][0]["text"], "one\ntwo\nthree\n",
        "{reply}"
    );
    assert_eq!(
        reply["result"]["structuredContent"]["content"],
        "one\ntwo\nthree\n"
    );

    drop(stdin);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
}
