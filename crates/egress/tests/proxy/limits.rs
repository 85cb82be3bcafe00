//! What everyday clients meet: idle and half-sent client connections are
//! closed after the header-read timeout (so they cannot lock the command
//! out of its own proxy), a pooled upstream connection the server closes
//! as the next request arrives is retried once on a fresh one (an
//! idempotent request only), responses may carry many header fields, and
//! an absolute-form websocket upgrade is refused by its rule (an `h2c`
//! upgrade is dropped, as before).

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentcaps_egress::proxy::{ProxyDecision, ProxyOutcome};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::clients::curl;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::{eventually, policy, proxy, raw, url_of};

/// Opens `count` connections to `proxy` from a separate process (a real
/// client's descriptors, not the test's): every other one sends half a
/// request head and nothing more. Ready when this returns; killed on drop.
async fn idle_clients(proxy: std::net::SocketAddr, count: usize) -> tokio::process::Child {
    let script = r#"
import socket, sys
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
held = []
for i in range(count):
    s = socket.create_connection((host, port))
    if i % 2:
        s.sendall(b"GET http://allowed.example.com/ HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
print("ready", flush=True)
sys.stdin.read()
"#;
    let mut child = tokio::process::Command::new("python3")
        .args([
            "-c",
            script,
            &proxy.ip().to_string(),
            &proxy.port().to_string(),
        ])
        .arg(count.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs (.ci/run has it)");
    let stdout = child.stdout.take().unwrap();
    let mut line = String::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("the idle clients connected in time")
    .unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl and python3")]
async fn idle_and_half_sent_connections_do_not_lock_out_the_next_request() {
    let dns = DnsServer::start().await;
    let server = Server::start("127.0.0.2:0", handler(|_| Reply::ok("served"))).await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let config = policy(&dns, &["127.0.0.2/32"], &[server.port()]);
    let header_timeout = Duration::from_millis(config.header_timeout_ms);
    let proxy = proxy(&config).await;
    let at = proxy.local_addr().unwrap();
    let _idle = idle_clients(at, 600).await;
    let started = Instant::now();
    let run = curl(
        &url_of(&proxy),
        &[&format!("http://allowed.example.com:{}/", server.port())],
    )
    .await;
    let took = started.elapsed();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "served"),
        "{}",
        run.stderr
    );
    assert!(
        took < header_timeout + Duration::from_millis(1500),
        "600 idle connections held the next request for {took:?} (header timeout {header_timeout:?})"
    );

    // A keep-alive connection left idle after its response is closed too.
    let mut stream = TcpStream::connect(at).await.unwrap();
    let request = format!(
        "GET http://allowed.example.com:{}/ HTTP/1.1\r\nHost: x\r\n\r\n",
        server.port()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = stream.read(&mut buf).await.unwrap();
    assert!(
        buf[..n].ends_with(b"served"),
        "{:?}",
        String::from_utf8_lossy(&buf[..n])
    );
    let idle_from = Instant::now();
    let closed = tokio::time::timeout(header_timeout * 3, stream.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0) | Err(_))),
        "the idle connection stayed open: {closed:?}"
    );
    assert!(idle_from.elapsed() < header_timeout + Duration::from_millis(1500));
}

/// A server that answers the first request of each connection (`c1`,
/// `c2`, …, keep-alive) and closes the connection when the next request
/// arrives, without a byte of answer.
async fn closing_on_reuse() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let count = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let n = count.fetch_add(1, Ordering::SeqCst) + 1;
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => head.extend_from_slice(&buf[..k]),
                    }
                }
                let body = format!("c{n}");
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                if stream.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                // The next request: read, then closed unanswered.
                let _ = stream.read(&mut buf).await;
            });
        }
    });
    (port, connections)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_reused_connection_the_server_closes_is_retried_once_on_a_fresh_one() {
    let dns = DnsServer::start().await;
    let (port, connections) = closing_on_reuse().await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let mut config = policy(&dns, &["127.0.0.2/32"], &[port]);
    config.allowed_methods = vec!["GET".into(), "POST".into()];
    let proxy = proxy(&config).await;
    let via = url_of(&proxy);
    let base = format!("http://allowed.example.com:{port}");
    let run = curl(
        &via,
        &[
            &format!("{base}/a"),
            "--next",
            "--proxy",
            &via,
            &format!("{base}/b"),
        ],
    )
    .await;
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "c1c2"),
        "{}",
        run.stderr
    );
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    let entries = proxy.log().entries();
    assert_eq!(entries.len(), 2, "{entries:#?}");
    assert!(
        entries
            .iter()
            .all(|e| e.decision == ProxyDecision::Allow && e.status == Some(200)),
        "{entries:#?}"
    );

    // A request that is not idempotent is never sent twice: the failure is
    // the answer.
    let run = curl(
        &via,
        &[
            &format!("{base}/c"),
            "--next",
            "--proxy",
            &via,
            "-d",
            "once",
            "-w",
            " %{http_code}",
            &format!("{base}/d"),
        ],
    )
    .await;
    assert!(
        run.stdout.starts_with("c3") && run.stdout.ends_with(" 502"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("agentcaps proxy: error [http]"),
        "{}",
        run.stdout
    );
    assert_eq!(connections.load(Ordering::SeqCst), 3);
    let last = proxy.log().entries().pop().unwrap();
    assert_eq!(
        (last.method.as_str(), last.decision, last.outcome),
        ("POST", ProxyDecision::Error, ProxyOutcome::Failed),
        "{last:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn responses_with_many_header_fields_pass() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| {
            let count: usize = seen.path.trim_start_matches('/').parse().unwrap();
            let mut reply = Reply::ok("many");
            reply.headers = (0..count)
                .map(|i| (format!("x-many-{i}"), "v".to_owned()))
                .collect();
            reply
        }),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    // The server adds `date` and `content-length`: 120 and 1000 fields.
    for count in [118, 998] {
        let run = curl(
            &url_of(&proxy),
            &[
                "-D",
                "-",
                &format!("http://allowed.example.com:{}/{count}", server.port()),
            ],
        )
        .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let head = run.stdout.split("\r\n\r\n").next().unwrap_or_default();
        let fields = head.lines().skip(1).count();
        let many = head.lines().filter(|l| l.starts_with("x-many-")).count();
        assert_eq!(
            (fields, many),
            (count + 2, count),
            "{}",
            run.stdout.get(..300).unwrap_or_default()
        );
        assert!(run.stdout.ends_with("many"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absolute_form_websocket_upgrade_is_refused_by_its_rule() {
    let dns = DnsServer::start().await;
    let server = Server::start(
        "127.0.0.2:0",
        handler(|seen| Reply::ok(&format!("upgrade={:?}", seen.headers.get("upgrade")))),
    )
    .await;
    dns.set("allowed.example.com", vec![Rec::ip("127.0.0.2")]);
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[server.port()])).await;
    let at = proxy.local_addr().unwrap();
    let p = server.port();
    let answer = raw(
        at,
        &format!(
            "GET http://allowed.example.com:{p}/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        ),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 403")
            && answer.contains("x-agentcaps-rule: upgrade")
            && answer.contains("CONNECT"),
        "{answer}"
    );
    assert_eq!(server.hits(), 0, "the upgrade reached the server");
    crate::assert_refused(
        &proxy,
        "allowed.example.com",
        agentcaps_egress::proxy::ProxyKind::Http,
        "upgrade",
    );
    // An h2c upgrade is dropped: the server answers in HTTP/1.1, as before.
    let answer = raw(
        at,
        &format!(
            "GET http://allowed.example.com:{p}/ HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings, close\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"
        ),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("upgrade=None"),
        "{answer}"
    );
    let log = proxy.log();
    eventually("both listed", || log.entries().len() == 2).await;
}
