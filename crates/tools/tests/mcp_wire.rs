//! `agentcaps mcp` spoken to line by line, as a client that does not use an
//! SDK would: a line that is not JSON gets a `-32700` parse error, and
//! `arguments` that are not an object get a tool error (`isError`), like
//! any malformed argument — neither stops the session. Every request is
//! answered: up to the one line limit (64 MiB), and beyond it with an error
//! naming it; every error carries the request's `id` (`null` when it has
//! none readable), bad params are `-32602`; a client that stops reading
//! holds the server's memory bounded; a cancelled write never lands.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// `agentcaps mcp` on pipes, its answers read on a thread (so a test can
/// stop reading, and a missing answer fails after a time instead of
/// hanging).
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<Value>,
}

impl Server {
    fn start(tree: &common::Tree, policy: &std::path::Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentcaps"))
            .args(["mcp", "--policy"])
            .arg(policy)
            .current_dir(&tree.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn agentcaps mcp");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (send, answers) = mpsc::sync_channel::<Value>(0);
        std::thread::spawn(move || {
            let mut line = String::new();
            loop {
                line.clear();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let value = serde_json::from_str(&line)
                            .unwrap_or_else(|e| json!({"unreadable": e.to_string()}));
                        if send.send(value).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut server = Self {
            child,
            stdin,
            answers,
        };
        server.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        assert_eq!(server.receive()["id"], 0);
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    fn send(&mut self, message: &Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// The next message, within a minute.
    fn receive(&mut self) -> Value {
        self.answers
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers within a minute")
    }

    /// The answer to request `id`, skipping anything else.
    fn answer_to(&mut self, id: &Value) -> Value {
        loop {
            let message = self.receive();
            if message.get("method").is_none() && message["id"] == *id {
                return message;
            }
        }
    }

    /// The resident memory of the server, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        kb * 1024
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait");
        assert!(status.success(), "{status}");
    }
}

impl Drop for Server {
    /// A failed test leaves no server behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_file_call(id: u64, extra: Value) -> Value {
    let mut arguments = json!({"path": "edit.txt"});
    if let (Some(arguments), Value::Object(extra)) = (arguments.as_object_mut(), extra) {
        arguments.extend(extra);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "read_file", "arguments": arguments}})
}

#[test]
fn a_16_mib_line_is_served_and_a_65_mib_line_is_answered_naming_the_limit() {
    let tree = common::Tree::new();
    let mut server = Server::start(&tree, &tree.policy(""));
    // 16 MiB and a little: over rmcp's own reader limit, under ours.
    let pad = "x".repeat(16 * 1024 * 1024 + 100);
    server.send(&read_file_call(1, json!({"padding": pad})));
    let answer = server.answer_to(&json!(1));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("padding"),
        "an unknown field is named: {text}"
    );

    let mut line = read_file_call(2, json!({"padding": ""})).to_string();
    line.insert_str(line.len() - 3, &"y".repeat(65 * 1024 * 1024));
    server.send_raw(line.as_bytes());
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("64 MiB"), "the limit is named: {message}");

    server.send(&read_file_call(3, json!({})));
    let answer = server.answer_to(&json!(3));
    assert_eq!(answer["result"]["content"][0]["text"], "one\ntwo\nthree\n");
    server.finish();
}

#[test]
fn malformed_requests_are_answered_with_their_id_and_the_right_code() {
    let tree = common::Tree::new();
    let mut server = Server::start(&tree, &tree.policy(""));
    let cases = [
        // (line, expected id, expected code)
        (
            json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": null}}),
            json!(10),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {"name": 7, "arguments": {}}}),
            json!("s"),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": 5}),
            json!(11),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 12, "method": "tools/call"}),
            json!(12),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 13, "method": "initialize", "params": {"protocolVersion": 3}}),
            json!(13),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 14, "method": 5}),
            json!(14),
            -32600,
        ),
        (json!({"jsonrpc": "2.0", "id": 15}), json!(15), -32600),
        (
            json!({"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}),
            Value::Null,
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            Value::Null,
            -32600,
        ),
        (
            json!([{"jsonrpc": "2.0", "id": 16, "method": "ping"}]),
            Value::Null,
            -32600,
        ),
        (json!("just a string"), Value::Null, -32600),
    ];
    for (line, id, code) in cases {
        server.send(&line);
        let answer = server.receive();
        assert_eq!(answer["error"]["code"], code, "{line} -> {answer}");
        assert_eq!(answer["id"], id, "{line} -> {answer}");
        assert!(answer.get("id").is_some(), "{line} -> {answer}");
    }
    // An unknown method is still "method not found", and the session goes on.
    server.send(&json!({"jsonrpc": "2.0", "id": 20, "method": "no/such"}));
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert_eq!(answer["id"], 20, "{answer}");
    server.send(&json!({"jsonrpc": "2.0", "id": 21, "method": "ping"}));
    assert_eq!(server.receive()["id"], 21);
    server.finish();
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "reads the server's memory from /proc"
)]
fn a_client_that_stops_reading_holds_the_server_under_256_mb() {
    let tree = common::Tree::new();
    let policy = tree.top.join("big-reads.toml");
    std::fs::write(
        &policy,
        "[files]\nallowed = [\"root\"]\nmax_read_bytes = 1048576\n",
    )
    .expect("policy");
    // One MiB in 1024 lines (fewer than read_file's default line limit):
    // each answer carries it twice (text and structured), two MiB and more.
    let line = format!("{}\n", "0123456789abcdef".repeat(64).split_at(1023).0);
    std::fs::write(tree.root.join("big.txt"), line.repeat(1024)).expect("big");
    let mut server = Server::start(&tree, &policy);
    let requests = 150u64;
    let mut stdin = server.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for id in 1..=requests {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": "big.txt"}}});
            if writeln!(stdin, "{call}").is_err() {
                return None;
            }
        }
        stdin.flush().ok()?;
        Some(stdin)
    });
    // Read nothing for a while; the server must stop taking requests.
    let started = Instant::now();
    let mut peak = 0;
    while started.elapsed() < Duration::from_secs(8) {
        peak = peak.max(server.rss());
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "peak RSS while the client read nothing: {} MB",
        peak / (1024 * 1024)
    );
    assert!(
        peak < 256 * 1024 * 1024,
        "the server grew to {} MB while the client read nothing",
        peak / (1024 * 1024)
    );
    // Then every request is answered.
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < usize::try_from(requests).expect("count") {
        let answer = server.receive();
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert_eq!(
            answer["result"]["structuredContent"]["lines_returned"], 1024,
            "the whole MiB is answered"
        );
        peak = peak.max(server.rss());
        answered.insert(answer["id"].as_u64().expect("id"));
    }
    assert_eq!(answered.len() as u64, requests);
    assert!(peak < 256 * 1024 * 1024, "peak {} MB", peak / (1024 * 1024));
    server.stdin = writer.join().expect("writer");
    server.finish();
}

#[test]
fn a_cancelled_write_never_lands() {
    let tree = common::Tree::new();
    let mut server = Server::start(&tree, &tree.policy(""));
    let before: Vec<_> = std::fs::read_dir(&tree.root)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    let content = "z".repeat(12 * 1024 * 1024);
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "cancelled.txt", "content": content}}}));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "the user stopped it"}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let answer = server.answer_to(&json!(2));
    assert!(answer.get("result").is_some(), "{answer}");
    // Give a write that was not stopped every chance to land.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !tree.root.join("cancelled.txt").exists(),
        "a cancelled write_file landed"
    );
    let after: Vec<_> = std::fs::read_dir(&tree.root)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(before, after, "no temporary file is left either");
    server.finish();
}

#[test]
fn parse_errors_and_non_object_arguments() {
    let tree = common::Tree::new();
    let mut server = Server::start(&tree, &tree.policy(""));
    server.send_raw(b"this is not json {");
    let parse_error = server.receive();
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null, "{parse_error}");

    for (id, arguments) in [(2, json!("src/lib.txt")), (3, json!([1, 2])), (4, json!(7))] {
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": arguments}}));
        let reply = server.receive();
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.contains("not an object"), "{text}");
    }

    // The session goes on: a good call is answered.
    server.send(&read_file_call(5, json!({})));
    let reply = server.receive();
    assert_eq!(
        reply["result"]["content"][0]["text"], "one\ntwo\nthree\n",
        "{reply}"
    );
    assert_eq!(
        reply["result"]["structuredContent"]["content"],
        "one\ntwo\nthree\n"
    );

    server.finish();
}
