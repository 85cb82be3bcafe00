//! `[shell] network = "proxy"` where commands cannot get their private
//! view: this test binary registers no view helper (as a host that never
//! calls `dispatch`), so every command runs with Landlock alone. The
//! judging proxy then listens on a free TCP port of loopback and Landlock
//! lets the command connect to that port only: `curl` through the proxy
//! reaches an allowed server, a refused address is answered `403` and
//! logged, a direct TCP connect to another port fails with `EACCES`, and
//! the result says `partial` and what is not covered.
//! `require_kernel_enforcement = true` refuses to run.
//!
//! Linux only: Landlock is what holds the port.
#![cfg(target_os = "linux")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentcaps::Policy;
use agentcaps::shell::{CommandRequest, RunResult, ShellError};

/// A listener on 127.0.0.2 that counts the connections it accepted and,
/// given a body, answers each with it over HTTP; its port and the count.
fn counting(body: Option<&'static str>) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().expect("address").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let Some(body) = body else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, hits)
}

/// A loopback HTTP server answering `hello through the proxy`.
fn server() -> (u16, Arc<AtomicUsize>) {
    counting(Some("hello through the proxy"))
}

/// A listener nobody is allowed to reach.
fn bystander() -> (u16, Arc<AtomicUsize>) {
    counting(None)
}

struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(tmp.path())
            .expect("canonicalize")
            .join("root");
        std::fs::create_dir(&root).expect("mkdir");
        Self { _tmp: tmp, root }
    }

    fn policy(&self, port: u16, extra: &str) -> Policy {
        let text = format!(
            "[files]\nallowed = [\"root\"]\n\n[shell]\nworking_directory = \"root\"\nallowed_commands = [\"curl\", \"bash\"]\nnetwork = \"proxy\"\n{extra}\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n"
        );
        let base = self.root.parent().expect("parent");
        Policy::from_toml(&text, base).expect("policy")
    }
}

fn run(policy: &Policy, argv: &[&str]) -> Result<RunResult, ShellError> {
    let shell = policy.shell_policy().expect("shell policy");
    let command = shell
        .validate(&CommandRequest::argv(argv.iter().copied()))
        .expect("valid command");
    shell.run_blocking(command)
}

#[test]
fn without_a_view_the_proxy_port_is_the_only_tcp_way_out_and_the_result_says_partial() {
    let setup = Setup::new();
    let (port, hits) = server();
    let (other, bystander_hits) = bystander();
    let policy = setup.policy(port, "");
    let allowed = format!("http://127.0.0.2:{port}/");

    let through = run(&policy, &["curl", "-sS", "--max-time", "10", &allowed]).expect("ran");
    assert_eq!(through.stdout, "hello through the proxy", "{through:?}");
    assert!(
        through.enforced.to_string().starts_with("partial"),
        "{through:?}"
    );
    let reason = through.enforced_reason.clone().unwrap_or_default();
    assert!(
        reason.contains("no view helper") && reason.contains("any host on that port"),
        "{reason}"
    );
    assert!(reason.contains("UDP is not restricted"), "{reason}");
    // `check shell` says the same before anything runs.
    let shell = policy.shell_policy().expect("shell policy");
    let command = shell
        .validate(&CommandRequest::argv(["curl", &allowed]))
        .expect("valid command");
    let (planned, why) = shell.planned_enforcement(&command);
    assert!(planned.to_string().starts_with("partial"), "{planned}");
    let why = why.unwrap_or_default();
    assert!(
        why.contains("a free port of 127.0.0.1") && why.contains("any host on that port"),
        "{why}"
    );
    let connections = through.connections.expect("connections listed");
    assert_eq!(connections.len(), 1, "{connections:?}");
    assert_eq!(connections[0].decision, "allow");
    assert_eq!(
        connections[0].address.as_deref(),
        Some(format!("127.0.0.2:{port}").as_str())
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // A refused address: the proxy answers 403 with the rule, and logs it.
    let refused = run(
        &policy,
        &[
            "curl",
            "-sS",
            "--max-time",
            "10",
            &format!("http://127.0.0.3:{port}/"),
        ],
    )
    .expect("ran");
    assert!(
        refused.stdout.contains("[address.special-purpose]"),
        "{refused:?}"
    );
    let connections = refused.connections.expect("connections listed");
    assert_eq!(
        (
            connections[0].decision.as_str(),
            connections[0].rule.as_str()
        ),
        ("deny", "address.special-purpose")
    );

    // Around the proxy: the allowed server itself, and another port.
    let direct = run(
        &policy,
        &["curl", "-sS", "--noproxy", "*", "--max-time", "5", &allowed],
    )
    .expect("ran");
    assert_ne!(direct.exit, agentcaps::shell::Exit::Code(0), "{direct:?}");
    assert_eq!(direct.connections.map(|c| c.len()), Some(0));
    assert_eq!(hits.load(Ordering::SeqCst), 1, "reached around the proxy");
    std::fs::write(
        setup.root.join("connect.sh"),
        format!("echo hi > /dev/tcp/127.0.0.2/{other}\n"),
    )
    .expect("script");
    let raw = run(&policy, &["bash", "connect.sh"]).expect("ran");
    assert!(
        raw.stderr.contains("Permission denied"),
        "a direct connect is refused by the kernel (EACCES): {raw:?}"
    );
    assert_eq!(bystander_hits.load(Ordering::SeqCst), 0);
}

#[test]
fn without_a_view_require_kernel_enforcement_refuses_a_proxied_command() {
    let setup = Setup::new();
    let (port, hits) = server();
    let policy = setup.policy(port, "require_kernel_enforcement = true");
    let allowed = format!("http://127.0.0.2:{port}/");
    match run(&policy, &["curl", "-sS", "--max-time", "10", &allowed]) {
        Err(error @ ShellError::KernelEnforcement { .. }) => {
            assert!(error.to_string().contains("nothing ran"), "{error}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}
