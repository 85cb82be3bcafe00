//! The package clients a coding agent runs, through `[shell] network =
//! "proxy"` in a private view, with the real `agentcaps` binary: `git
//! clone` (HTTP), `npm view`, `cargo fetch` (a sparse registry) and `pip
//! download` (a simple index) each reach a loopback stand-in of their
//! registry through the judging proxy and get what they asked for, and
//! `run --json` lists each request as allowed; a registry at an address the
//! policy does not open is refused by the proxy, and the client fails.
//!
//! Each client finds the proxy through the variables set for it
//! (`HTTP_PROXY` and the rest): there is no other route out of the view.
//!
//! Linux only: the private view is Linux's; the clients are the host's
//! `git`, `npm`, `cargo` and `pip` (all required: a missing one fails).
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Serves the files under `dir` on 127.0.0.2 (`/x/` serves `x/index.html`);
/// the port, and the count of requests answered 200.
fn static_server(dir: PathBuf) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().expect("address").port();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (dir, counter) = (dir.clone(), counter.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    return;
                }
                // The rest of the head, unread by the answer.
                let mut header = String::new();
                while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                    header.clear();
                }
                let path = line.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/");
                let mut file = dir.join(path.trim_start_matches('/'));
                if path.ends_with('/') {
                    file = file.join("index.html");
                }
                let found = !path.contains("..")
                    && file.is_file()
                    && std::fs::read(&file).is_ok_and(|body| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let kind = if file.extension().is_some_and(|e| e == "html") {
                            "text/html"
                        } else {
                            "application/octet-stream"
                        };
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        );
                        let mut out = &stream;
                        out.write_all(head.as_bytes()).is_ok() && out.write_all(&body).is_ok()
                    });
                if !found {
                    let mut out = &stream;
                    let _ = out.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            });
        }
    });
    (port, served)
}

/// Writes the registries' files under `srv` (crate, wheel, packument,
/// indexes) with Python, for the server on `port`.
fn registries(srv: &Path, port: u16) {
    common::registry::cargo_and_npm(srv, &format!("http://127.0.0.2:{port}"), false);
    let script = r#"
import hashlib, io, os, sys, zipfile
srv, port = sys.argv[1], sys.argv[2]
def put(rel, data):
    path = os.path.join(srv, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(data if isinstance(data, bytes) else data.encode())
# A PyPI simple index holding `demo-pkg 1.0`.
wheel = "demo_pkg-1.0-py3-none-any.whl"
files = {
    "demo_pkg/__init__.py": "VALUE = 1\n",
    "demo_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
    "demo_pkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: agentcaps-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr("demo_pkg-1.0.dist-info/RECORD", "".join(f"{n},,\n" for n in files) + "demo_pkg-1.0.dist-info/RECORD,,\n")
put("simple/demo-pkg/" + wheel, buf.getvalue())
digest = hashlib.sha256(buf.getvalue()).hexdigest()
put("simple/demo-pkg/index.html", f'<html><body><a href="{wheel}#sha256={digest}">{wheel}</a></body></html>')
"#;
    let port = port.to_string();
    common::registry::python(script, &[srv.as_os_str(), port.as_ref()]);
    // A git repository served the "dumb" HTTP way (plain files).
    let git = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .expect("git runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let work = srv.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("a.txt"), "from the registry\n").unwrap();
    git(&work, &["add", "a.txt"]);
    git(&work, &["commit", "-qm", "one"]);
    git(srv, &["clone", "-q", "--bare", "work", "repo.git"]);
    git(&srv.join("repo.git"), &["update-server-info"]);
}

/// It ran in a full view, succeeded, and every request it made went
/// through the proxy and was allowed.
fn assert_through_the_proxy(result: &serde_json::Value) {
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["enforced"], "full", "{result}");
    let connections = result["connections"].as_array().expect("listed");
    assert!(
        !connections.is_empty(),
        "nothing went through the proxy: {result}"
    );
    for c in connections {
        assert_eq!(c["decision"], "allow", "{result}");
        assert_eq!(c["host"], "127.0.0.2", "{result}");
    }
}

#[test]
fn git_npm_cargo_and_pip_work_through_the_judging_proxy() {
    let tree = common::Tree::new();
    let srv = tree.top.join("srv");
    std::fs::create_dir_all(&srv).unwrap();
    let (port, served) = static_server(srv.clone());
    registries(&srv, port);
    let policy = tree.policy(&format!(
        "preset = \"development\"\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    let base = format!("http://127.0.0.2:{port}");

    let cloned = tree.run_json(
        &policy,
        &["git", "clone", "-q", &format!("{base}/repo.git"), "cloned"],
    );
    assert_through_the_proxy(&cloned);
    assert_eq!(
        std::fs::read_to_string(tree.root.join("cloned/a.txt")).expect("the clone landed"),
        "from the registry\n"
    );

    let viewed = tree.run_json(
        &policy,
        &[
            "npm",
            "view",
            "leftpad",
            "--registry",
            &format!("{base}/npm/"),
        ],
    );
    assert_through_the_proxy(&viewed);
    assert!(
        viewed["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("pads on the left"),
        "{viewed}"
    );

    let downloaded = tree.run_json(
        &policy,
        &[
            "pip",
            "download",
            "demo-pkg",
            "--no-deps",
            "--index-url",
            &format!("{base}/simple/"),
            "-d",
            "wheels",
        ],
    );
    assert_through_the_proxy(&downloaded);
    assert!(
        tree.root
            .join("wheels/demo_pkg-1.0-py3-none-any.whl")
            .is_file(),
        "{downloaded}"
    );

    let project = tree.root.join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    // The command runs in the policy's working directory (the root), where
    // cargo finds its configuration; the project is under it.
    std::fs::create_dir_all(tree.root.join(".cargo")).unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"proj\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntiny = { version = \"0.1\", registry = \"loop\" }\n",
    )
    .unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    let cargo_config = |host: &str| {
        std::fs::write(
            tree.root.join(".cargo/config.toml"),
            format!("[registries.loop]\nindex = \"sparse+http://{host}:{port}/index/\"\n"),
        )
        .unwrap();
    };
    cargo_config("127.0.0.2");
    let fetch = ["cargo", "fetch", "--manifest-path", "proj/Cargo.toml"];
    let fetched = tree.run_json(&policy, &fetch);
    assert_through_the_proxy(&fetched);
    assert!(
        fetched["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("Downloaded tiny v0.1.0"),
        "{fetched}"
    );
    let answered = served.load(Ordering::SeqCst);

    // The same registry at an address the policy does not open: the proxy
    // refuses it and says why; cargo fails; the server sees nothing.
    cargo_config("127.0.0.3");
    std::fs::remove_file(project.join("Cargo.lock")).ok();
    let refused = tree.run_json(&policy, &fetch);
    assert_ne!(refused["exit_code"], 0, "{refused}");
    let connections = refused["connections"].as_array().expect("listed");
    assert!(!connections.is_empty(), "{refused}");
    assert!(
        connections.iter().all(|c| c["decision"] == "deny"
            && c["rule"].as_str().is_some_and(|r| r.starts_with("address"))),
        "{refused}"
    );
    assert_eq!(served.load(Ordering::SeqCst), answered);
}
