//! `[shell] network = "proxy"` end to end, with the real `agentcaps`
//! binary: a command in its private view reaches an allowed loopback
//! server only through the judging proxy (`curl` honours the proxy
//! variables set for it); a refused address is answered `403` by the
//! proxy; a `CONNECT` tunnel crosses the view's proxy port whole and one to a
//! denied IP literal is refused before it opens; a client that ignores
//! the proxy, UDP and DNS have no route out;
//! `run --json` lists every connection with its decision.
//!
//! Linux only: the private view (its own network namespace) is what leaves
//! a command no route but the proxy, and the clients here (`curl`) are
//! Linux programs.
#![cfg(target_os = "linux")]

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A loopback HTTP server on 127.0.0.2 answering `hello through the
/// proxy`; counts the connections it accepted.
fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "hello through the proxy";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

#[test]
fn commands_reach_the_web_only_through_the_judging_proxy() {
    let tree = common::Tree::new();
    let (port, hits) = server();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    let allowed = format!("http://127.0.0.2:{port}/");

    let through = tree.run_json(&policy, &["curl", "-sS", "--max-time", "10", &allowed]);
    assert_eq!(through["exit_code"], 0, "{through}");
    assert_eq!(through["stdout"], "hello through the proxy", "{through}");
    assert_eq!(through["enforced"], "full", "{through}");
    let connections = through["connections"]
        .as_array()
        .expect("connections listed");
    assert_eq!(connections.len(), 1, "{through}");
    assert_eq!(connections[0]["decision"], "allow");
    assert_eq!(connections[0]["address"], format!("127.0.0.2:{port}"));
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // 127.0.0.3 is not opened: the proxy answers 403 with the rule.
    let refused = tree.run_json(
        &policy,
        &[
            "curl",
            "-sS",
            "--max-time",
            "10",
            &format!("http://127.0.0.3:{port}/"),
        ],
    );
    assert!(
        refused["stdout"]
            .as_str()
            .unwrap_or_default()
            .contains("[address.special-purpose]"),
        "{refused}"
    );
    let connections = refused["connections"]
        .as_array()
        .expect("connections listed");
    assert_eq!(
        (
            connections[0]["decision"].as_str(),
            connections[0]["rule"].as_str()
        ),
        (Some("deny"), Some("address.special-purpose")),
        "{refused}"
    );

    // Ignoring the proxy: no route out, nothing asked of the proxy.
    let direct = tree.run_json(
        &policy,
        &["curl", "-sS", "--noproxy", "*", "--max-time", "5", &allowed],
    );
    assert_ne!(direct["exit_code"], 0, "{direct}");
    assert_eq!(direct["connections"].as_array().map(Vec::len), Some(0));
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the server was reached directly"
    );

    // DNS does not work from inside: the name is never resolved.
    let dns = tree.run_json(
        &policy,
        &[
            "curl",
            "-sS",
            "--noproxy",
            "*",
            "--max-time",
            "5",
            "http://example.com/",
        ],
    );
    assert_ne!(dns["exit_code"], 0, "{dns}");

    // The proxy's UNIX socket is not in the view (the view's first process
    // reached it on the host and handed it the port's listener): no UNIX
    // socket anywhere in the view's /run, /tmp or the working tree, so a
    // program cannot talk to the proxy but through the port, nor hand it
    // listeners of its own.
    std::fs::write(
        tree.root.join("sockets.py"),
        "import os, stat\n\
         found = []\n\
         for top in ['/run', '/tmp', '/var/run', '.']:\n\
         \x20   for d, _, names in os.walk(top):\n\
         \x20       for n in names:\n\
         \x20           p = os.path.join(d, n)\n\
         \x20           try:\n\
         \x20               if stat.S_ISSOCK(os.lstat(p).st_mode): found.append(p)\n\
         \x20           except OSError: pass\n\
         print(found)\n",
    )
    .unwrap();
    let python = tree.policy(&format!(
        "allowed_commands = [\"python3\"]\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    let sockets = tree.run_json(&python, &["python3", "sockets.py"]);
    assert_eq!(sockets["exit_code"], 0, "{sockets}");
    assert_eq!(sockets["stdout"], "[]\n", "{sockets}");
}

#[test]
fn udp_from_a_proxied_command_goes_nowhere() {
    let tree = common::Tree::new();
    let sink = UdpSocket::bind("127.0.0.2:0").expect("udp sink");
    sink.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = sink.local_addr().unwrap().port();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    // curl's TFTP client sends a UDP datagram to the server (not through
    // the proxy: --noproxy).
    let tftp = tree.run_json(
        &policy,
        &[
            "curl",
            "-sS",
            "--noproxy",
            "*",
            "--max-time",
            "3",
            &format!("tftp://127.0.0.2:{port}/x"),
        ],
    );
    assert_ne!(tftp["exit_code"], 0, "{tftp}");
    let mut buf = [0u8; 512];
    assert!(sink.recv_from(&mut buf).is_err(), "a datagram got out");
}

/// A loopback HTTP server on 127.0.0.2 answering `len` bytes (a repeated
/// pattern) to every request, one connection at a time.
fn big_server(len: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let body: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(&body);
        }
    });
    port
}

#[test]
fn tunnels_go_through_the_views_proxy_port_and_are_judged_before_they_open() {
    let tree = common::Tree::new();
    const LEN: usize = 8 * 1024 * 1024 + 17;
    let port = big_server(LEN);
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    // `-p`: curl asks the proxy for a CONNECT tunnel even for http://, so
    // the bytes cross the view's port and the proxy's tunnel as HTTPS
    // would; 8 MiB of them arrive whole.
    let tunnelled = tree.run_json(
        &policy,
        &[
            "curl",
            "-sS",
            "-p",
            "--max-time",
            "20",
            "-o",
            "big.bin",
            "-w",
            "%{size_download}",
            &format!("http://127.0.0.2:{port}/big"),
        ],
    );
    assert_eq!(tunnelled["exit_code"], 0, "{tunnelled}");
    assert_eq!(tunnelled["stdout"], LEN.to_string(), "{tunnelled}");
    let written = std::fs::read(tree.root.join("big.bin")).expect("the download landed");
    assert_eq!(written.len(), LEN);
    assert!(
        written
            .iter()
            .enumerate()
            .all(|(i, b)| *b == b'a' + (i % 26) as u8),
        "the bytes arrived in order"
    );
    let connections = tunnelled["connections"].as_array().expect("listed");
    assert_eq!(connections.len(), 1, "{tunnelled}");
    assert_eq!(
        (
            connections[0]["kind"].as_str(),
            connections[0]["decision"].as_str()
        ),
        (Some("connect"), Some("allow")),
        "{tunnelled}"
    );

    // A CONNECT to an IP literal in a denied range, spelled as a mapped
    // IPv6 address: refused (403) before any tunnel opens, and logged.
    let refused = tree.run_json(
        &policy,
        &[
            "curl",
            "-sS",
            "-p",
            "--max-time",
            "10",
            &format!("http://[::ffff:127.0.0.3]:{port}/"),
        ],
    );
    assert_ne!(refused["exit_code"], 0, "{refused}");
    assert!(
        refused["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("403"),
        "{refused}"
    );
    let connections = refused["connections"].as_array().expect("listed");
    assert_eq!(
        (
            connections[0]["kind"].as_str(),
            connections[0]["decision"].as_str()
        ),
        (Some("connect"), Some("deny")),
        "{refused}"
    );
    assert!(
        connections[0]["rule"]
            .as_str()
            .unwrap_or_default()
            .starts_with("address"),
        "{refused}"
    );
}

/// A loopback server on 127.0.0.2 that reads each request and never
/// answers (holds the connection); counts the connections it accepted.
fn silent_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(10) {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while stream.read(&mut buf).is_ok_and(|n| n > 0) {}
            });
        }
    });
    (port, hits)
}

#[test]
fn a_request_of_a_command_that_timed_out_is_listed() {
    let tree = common::Tree::new();
    let (port, hits) = silent_server();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\ntimeout_ms = 3000\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    let url = format!("http://127.0.0.2:{port}/sent-before-the-timeout");
    let run = tree.run_json(&policy, &["curl", "-sS", "--max-time", "30", &url]);
    assert_eq!(run["timed_out"], true, "{run}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the request reached the server"
    );
    let connections = run["connections"].as_array().expect("listed");
    assert_eq!(connections.len(), 1, "{run}");
    assert_eq!(
        (
            connections[0]["decision"].as_str(),
            connections[0]["address"].as_str()
        ),
        (Some("allow"), Some(format!("127.0.0.2:{port}").as_str())),
        "{run}"
    );
}

#[test]
fn stderr_tells_a_refusal_from_a_failure() {
    let tree = common::Tree::new();
    let closed = {
        let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        listener.local_addr().unwrap().port()
    };
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{closed}]\n"
    ));
    let run = |url: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentcaps"))
            .args(["run", "--policy"])
            .arg(&policy)
            .args(["--", "curl", "-sS", "--max-time", "10", url])
            .current_dir(&tree.root)
            .output()
            .expect("agentcaps runs");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // Nothing listens on the allowed port: a failure, not a refusal.
    let failed = run(&format!("http://127.0.0.2:{closed}/"));
    assert!(
        failed.contains(&format!(
            "agentcaps: network proxy could not complete GET 127.0.0.2:{closed} (rule connect)"
        )) && !failed.contains("refused GET"),
        "{failed}"
    );
    let refused = run(&format!("http://127.0.0.3:{closed}/"));
    assert!(
        refused.contains(&format!(
            "agentcaps: network proxy refused GET 127.0.0.3:{closed} (rule address.special-purpose)"
        )),
        "{refused}"
    );
}

/// Past the proxy's limit of listed connections, refusals are counted in
/// `connections_dropped` (and said on stderr) while an allowed request
/// after them is still listed.
#[test]
fn refusals_past_the_limit_are_counted_and_the_allowed_request_is_listed() {
    let tree = common::Tree::new();
    let (port, hits) = server();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"curl\"]\nnetwork = \"proxy\"\ntimeout_ms = 120000\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
    ));
    // 10 005 refusals (curl's URL glob), then one allowed request.
    let refused = format!("http://127.0.0.3:{port}/[1-10005]");
    let allowed = format!("http://127.0.0.2:{port}/after-the-limit");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentcaps"))
        .args(["run", "--json", "--policy"])
        .arg(&policy)
        .args(["--", "curl", "-s", &refused, &allowed])
        .current_dir(&tree.root)
        .output()
        .expect("agentcaps runs");
    let stdout: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("run --json prints JSON");
    let run = &stdout["result"];
    assert_eq!(run["timed_out"], false, "{run}");
    let connections = run["connections"].as_array().expect("listed");
    assert_eq!(connections.len(), 10_001, "{}", run["connections_dropped"]);
    assert_eq!(run["connections_dropped"], 5, "{}", connections.len());
    let last = connections.last().expect("an entry");
    assert_eq!(
        (last["decision"].as_str(), last["address"].as_str()),
        (Some("allow"), Some(format!("127.0.0.2:{port}").as_str())),
        "{last}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("agentcaps: 5 more network proxy refusals and failures are not listed"),
        "{}",
        stderr.lines().last().unwrap_or_default()
    );
}
