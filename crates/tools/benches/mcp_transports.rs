//! What one `read_file` call costs a client, end to end, over each way of
//! reaching the server, measured in the same run: `agentcaps mcp` on stdio
//! (one JSON-RPC line out, one back), `agentcaps mcp --http` (one POST on a
//! kept-alive loopback connection, its answer read whole), and the reference
//! filesystem server (`@modelcontextprotocol/server-filesystem`, through
//! `npx`) on stdio with the same file. The clients are minimal on purpose
//! (no SDK), so the time is the server's and the transport's.
//!
//! `cargo bench -p agentcaps-tools --bench mcp_transports`. Without `npx`
//! (or with `AGENTCAPS_BENCH_NO_NPX=1`) the reference server is left out,
//! and the bench says so.

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

/// The reference server's version (pinned).
const REFERENCE: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// A server on pipes: a line out, a line back.
struct Piped {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Piped {
    fn start(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Self {
            child,
            stdin,
            stdout,
            next: 1,
        };
        server.request("initialize", initialize_params());
        server.notify("notifications/initialized");
        server
    }

    fn notify(&mut self, method: &str) {
        let line = json!({"jsonrpc": "2.0", "method": method}).to_string();
        writeln!(self.stdin, "{line}").expect("write");
    }

    /// Sends a request and returns its answer (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").expect("write");
        self.stdin.flush().expect("flush");
        let mut answer = String::new();
        loop {
            answer.clear();
            assert!(
                self.stdout.read_line(&mut answer).expect("read") > 0,
                "server gone"
            );
            let value: Value = serde_json::from_str(&answer).expect("json");
            if value["id"] == id {
                return value;
            }
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}})
}

/// `agentcaps mcp --http 127.0.0.1:0` and one kept-alive connection to it.
struct Http {
    child: Child,
    rt: tokio::runtime::Runtime,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    session: String,
    next: u64,
}

impl Http {
    fn start(binary: &str, root: &Path) -> Self {
        let mut child = Command::new(binary)
            .args(["mcp", "--http", "127.0.0.1:0", "--log", "/dev/null"])
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start agentcaps mcp --http");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr
            .read_line(&mut line)
            .expect("the server says where it listens");
        // Keep draining stderr so the server never blocks on it.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        });
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split("/mcp").next())
            .expect("an address")
            .to_owned();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let sender = rt.block_on(async {
            let stream = tokio::net::TcpStream::connect(&addr)
                .await
                .expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .expect("handshake");
            tokio::spawn(connection);
            sender
        });
        let mut http = Self {
            child,
            rt,
            sender,
            session: String::new(),
            next: 1,
        };
        let (_, session) = http.post(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": initialize_params()}));
        http.session = session.expect("a session id");
        http.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        http
    }

    /// One POST; the JSON-RPC answer in it (if any) and the session id.
    fn post(&mut self, message: Value) -> (Option<Value>, Option<String>) {
        let mut request = http::Request::post("/mcp")
            .header(http::header::HOST, "127.0.0.1")
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18");
        if !self.session.is_empty() {
            request = request.header("mcp-session-id", &self.session);
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .expect("request");
        self.rt.block_on(async {
            self.sender.ready().await.expect("connection ready");
            let response = self.sender.send_request(request).await.expect("response");
            let session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response
                .into_body()
                .collect()
                .await
                .expect("body")
                .to_bytes();
            let text = String::from_utf8_lossy(&body);
            let answer = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .chain(text.trim().starts_with('{').then_some(text.trim()))
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .find(|v| v.get("id").is_some());
            (answer, session)
        })
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .0
            .expect("an answer")
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

fn transports(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(tmp.path()).expect("canonical");
    std::fs::create_dir_all(root.join("src/nested")).expect("mkdir");
    let text: String = (0..200)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(root.join("src/nested/file.txt"), &text).expect("write");
    let binary = env!("CARGO_BIN_EXE_agentcaps");
    let call = json!({"name": "read_file", "arguments": {"path": "src/nested/file.txt"}});

    let mut group = c.benchmark_group("read_file per call");
    let mut stdio = Piped::start(
        Command::new(binary)
            .args(["mcp", "--log", "/dev/null"])
            .current_dir(&root),
    );
    assert_eq!(text_of(&stdio.request("tools/call", call.clone())), text);
    group.bench_function("agentcaps mcp, stdio", |b| {
        b.iter(|| black_box(stdio.request("tools/call", call.clone())))
    });
    drop(stdio);

    let mut http = Http::start(binary, &root);
    assert_eq!(text_of(&http.request("tools/call", call.clone())), text);
    group.bench_function("agentcaps mcp --http, keep-alive POST", |b| {
        b.iter(|| black_box(http.request("tools/call", call.clone())))
    });
    drop(http);

    let npx = std::env::var_os("AGENTCAPS_BENCH_NO_NPX").is_none()
        && Command::new("npx")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if npx {
        let mut reference = Piped::start(
            Command::new("npx")
                .args(["-y", REFERENCE])
                .arg(&root)
                .current_dir(&root),
        );
        let tools = reference.request("tools/list", json!({}));
        let names: Vec<&str> = tools["result"]["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        let tool = if names.contains(&"read_text_file") {
            "read_text_file"
        } else {
            "read_file"
        };
        let file = root.join("src/nested/file.txt").display().to_string();
        let call = json!({"name": tool, "arguments": {"path": file}});
        let first = reference.request("tools/call", call.clone());
        assert!(text_of(&first).contains("line 199 of the file"), "{first}");
        group.bench_function("reference server-filesystem, stdio", |b| {
            b.iter(|| black_box(reference.request("tools/call", call.clone())))
        });
    } else {
        eprintln!(
            "mcp_transports: npx not found (or AGENTCAPS_BENCH_NO_NPX set): the reference server is not measured"
        );
    }
    group.finish();
}

criterion_group!(benches, transports);
criterion_main!(benches);
