//! The model-provider adapter example (`examples/sse_adapter.rs`) against
//! real loopback servers: one that streams slowly for longer than the idle
//! limit in total (must succeed: the idle limit is per gap), and one that
//! stalls (the idle limit fires, well before the total deadline, and the
//! events that arrived were delivered).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::dns::DnsServer;
use crate::support::{client, loopback_policy};

#[path = "../../examples/sse_adapter.rs"]
#[allow(dead_code)]
mod sse_adapter;

use sse_adapter::{Adapter, AdapterError, Events};

/// What the provider stand-in does after the head.
#[derive(Clone, Copy)]
enum Provider {
    /// `n` events, one every `gap`, then `[DONE]`.
    Slow { n: usize, gap: Duration },
    /// Two events, then silence.
    Stalls,
}

/// A raw HTTP/1.1 server: reads one request (head and `Content-Length`
/// body), records it, answers with a chunked `text/event-stream`.
async fn provider(how: Provider) -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut piece = [0u8; 4096];
                let head_end = loop {
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break i + 4;
                    }
                    match stream.read(&mut piece).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&piece[..n]),
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (n, v) = l.split_once(':')?;
                        n.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + length {
                    match stream.read(&mut piece).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&piece[..n]),
                    }
                }
                let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).to_string();
                log.lock().unwrap().push(format!("{head}{body}"));
                let start = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                if stream.write_all(start).await.is_err() {
                    return;
                }
                let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
                match how {
                    Provider::Slow { n, gap } => {
                        for i in 0..n {
                            let event = chunk(&format!("data: {{\"token\":{i}}}\n\n"));
                            if stream.write_all(event.as_bytes()).await.is_err() {
                                return;
                            }
                            tokio::time::sleep(gap).await;
                        }
                        let end = format!("{}0\r\n\r\n", chunk("data: [DONE]\n\n"));
                        let _ = stream.write_all(end.as_bytes()).await;
                    }
                    Provider::Stalls => {
                        for i in 0..2 {
                            let event = chunk(&format!("data: {{\"token\":{i}}}\n\n"));
                            let _ = stream.write_all(event.as_bytes()).await;
                        }
                        tokio::time::sleep(Duration::from_secs(60)).await;
                    }
                }
            });
        }
    });
    (addr, seen)
}

fn adapter_for(dns: &DnsServer, addr: std::net::SocketAddr, idle: Duration) -> Adapter {
    let mut config = loopback_policy(dns, &["127.0.0.2/32"], &[addr.port()]);
    config.allowed_methods = vec!["POST".into()];
    config.timeout_ms = 20_000;
    config.header_timeout_ms = 5_000;
    Adapter::new(
        client(&config),
        &format!("http://{addr}/v1/chat"),
        "sk-test-token",
        idle,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_longer_than_the_idle_limit_in_total_succeeds() {
    let dns = DnsServer::start().await;
    let gap = Duration::from_millis(100);
    let (addr, seen) = provider(Provider::Slow { n: 12, gap }).await;
    let adapter = adapter_for(&dns, addr, Duration::from_millis(700));
    let mut events = Vec::new();
    let started = Instant::now();
    let count = adapter
        .complete("say \"hi\"", |data| events.push(data.to_owned()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        started.elapsed() > Duration::from_millis(700),
        "the stream lasted longer than the idle limit in total"
    );
    assert_eq!(count, 12);
    assert_eq!(events.first().map(String::as_str), Some("{\"token\":0}"));
    assert_eq!(events.last().map(String::as_str), Some("{\"token\":11}"));
    let request = seen.lock().unwrap().join("");
    assert!(
        request.starts_with("POST /v1/chat HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request
            .to_ascii_lowercase()
            .contains("authorization: bearer sk-test-token"),
        "{request}"
    );
    let body = request.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["messages"][0]["content"], "say \"hi\"");
    assert_eq!(json["stream"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_is_stopped_by_the_idle_limit() {
    let dns = DnsServer::start().await;
    let (addr, _) = provider(Provider::Stalls).await;
    let adapter = adapter_for(&dns, addr, Duration::from_millis(400));
    let mut events = Vec::new();
    let started = Instant::now();
    let err = adapter
        .complete("hello", |data| events.push(data.to_owned()))
        .await
        .unwrap_err();
    let AdapterError::Egress(e) = &err else {
        panic!("{err}");
    };
    assert_eq!(e.rule(), "time.idle", "{e}");
    assert!(e.to_string().contains("idle_timeout_ms"), "{e}");
    assert_eq!(
        events.len(),
        2,
        "the events before the stall were delivered"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the idle limit fired long before the 20 s total deadline"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_wide_idle_limit_applies_without_a_per_request_one() {
    let dns = DnsServer::start().await;
    let (addr, _) = provider(Provider::Stalls).await;
    let mut config = loopback_policy(&dns, &["127.0.0.2/32"], &[addr.port()]);
    config.allowed_methods = vec!["POST".into()];
    config.timeout_ms = 20_000;
    config.idle_timeout_ms = 300;
    let response = client(&config)
        .request(agentcaps_egress::Method::POST, &format!("http://{addr}/"))
        .body("{}")
        .send()
        .await
        .unwrap();
    let body = response.bytes().await.unwrap();
    assert!(body.timed_out && body.stalled, "{body:?}");
    assert!(String::from_utf8_lossy(&body.bytes).contains("token\":1"));
}

#[test]
fn events_are_split_on_blank_lines_in_any_chunking() {
    let stream = b"data: a\n\ndata: b1\ndata: b2\r\n\r\n: comment\n\nevent: x\ndata: c\n\n";
    for cut in 0..stream.len() {
        let mut events = Events::default();
        let mut out = events.push(&stream[..cut]);
        out.extend(events.push(&stream[cut..]));
        assert_eq!(out, ["a", "b1\nb2", "c"], "cut at {cut}");
    }
}
