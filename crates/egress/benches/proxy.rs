//! The judging proxy against going direct, same client, same server, same
//! run (target: through the proxy ≥ 0.8× direct, both figures):
//!
//! - `download_100mb/*`: one 100 MB body on a kept-alive HTTP/1.1
//!   connection, bytes per second;
//! - `keepalive_get/*`: small GET requests (64-byte body) one after the
//!   other on one kept-alive connection, requests per second.
//!
//! Each through the proxy two ways: `proxy` (plain HTTP, the request
//! forwarded) and `proxy_connect` (a `CONNECT` tunnel, as HTTPS clients
//! use it; the HTTP inside is plain here, so the proxy reads and judges
//! each request inside the tunnel, as it does for `curl -p http://…`; a
//! TLS tunnel is relayed unread and costs what `bare_relay` costs).
//!
//! Each party runs as it would as a process of its own: the server on its
//! own thread and single-threaded runtime (one event loop, as a server
//! process), the proxy on its own thread and runtime exactly as the
//! `agentcaps` command line runs it ([`ProxyThread`]), and the client on a
//! single-threaded runtime of the bench thread (as `curl` is one thread).
//! The client is a bare hyper HTTP/1.1 connection: direct, it talks to the
//! server in origin form; through the proxy, it talks to the proxy in
//! absolute form (`GET http://127.0.0.1:PORT/ HTTP/1.1`) and the proxy
//! judges, resolves nothing (an IP literal), dials, and streams back.
//!
//! A fourth route, `bare_relay`, is the floor of any proxy: a TCP relay
//! that judges nothing and parses nothing, only copies bytes both ways
//! (the proxy's own relay loop, on its own thread and runtime, connected
//! to the server before the client arrives). What it costs against going
//! direct is what a second hop costs on this machine; what the proxy costs
//! above it is what judging, HTTP and the pool cost.
//!
//! All of them share this machine's cores: on loopback every proxied byte
//! and every request costs a second hop (two more socket writes and reads,
//! a second TCP connection's processing), which going direct does not pay.
//!
//! Run: `cargo bench -p agentcaps-egress --bench proxy -- --warm-up-time 1 --measurement-time 5`.

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::convert::Infallible;
use std::net::SocketAddr;

use agentcaps_egress::EgressPolicyConfig;
use agentcaps_egress::proxy::{Listen, ProxyThread};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Empty};
use hyper::body::Frame;
use hyper::client::conn::http1::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

const BIG: usize = 100 * 1024 * 1024;
const PIECE: usize = 64 * 1024;
/// The server thread's name (its CPU time is counted as the server's).
const SERVER_THREAD: &str = "bench-server";
/// The proxy's threads' name ([`ProxyThread`] names them so).
const PROXY_THREAD: &str = "agentcaps-proxy";
/// The bare relay's thread name.
const RELAY_THREAD: &str = "bench-relay";

/// A body of `left` bytes sent as frames of one shared buffer.
struct Repeat {
    piece: Bytes,
    left: usize,
}

impl hyper::body::Body for Repeat {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return std::task::Poll::Ready(None);
        }
        let len = self.left.min(self.piece.len());
        self.left -= len;
        std::task::Poll::Ready(Some(Ok(Frame::data(self.piece.slice(..len)))))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.left as u64)
    }
}

/// Listens on 127.0.0.1 from a thread named `name` with a single-threaded
/// runtime of its own (one event loop, as a process of its own would
/// have), serving each connection with `serve` on a task; the address.
fn on_own_thread<F, Fut>(name: &str, serve: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new().name(name.to_owned());
    let _ = thread.spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream));
            }
        });
    });
    rx.recv().unwrap()
}

/// A keep-alive HTTP/1.1 server: `/big` answers 100 MB (64 KiB frames of
/// one shared buffer), anything else 64 bytes.
fn server() -> SocketAddr {
    let piece = Bytes::from(vec![b'x'; PIECE]);
    on_own_thread(SERVER_THREAD, move |stream| {
        let piece = piece.clone();
        async move {
            let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let left = if req.uri().path() == "/big" { BIG } else { 64 };
                let body = Repeat {
                    piece: piece.clone(),
                    left,
                };
                async move { Ok::<_, Infallible>(hyper::Response::new(body)) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
    })
}

/// A bare TCP relay: each connection accepted is relayed to `server`,
/// bytes copied both ways with the proxy's buffer size (256 KiB each way),
/// nothing parsed or judged.
fn bare_relay(server: SocketAddr) -> SocketAddr {
    on_own_thread(RELAY_THREAD, move |mut client| async move {
        let mut upstream = TcpStream::connect(server).await.unwrap();
        let _ = upstream.set_nodelay(true);
        let _ = tokio::io::copy_bidirectional_with_sizes(
            &mut client,
            &mut upstream,
            256 * 1024,
            256 * 1024,
        )
        .await;
    })
}

/// How the client reaches the server.
#[derive(Clone, Copy)]
enum Route {
    /// Straight to the server, origin-form requests.
    Direct,
    /// Through the proxy, absolute-form requests.
    Forward,
    /// Through a `CONNECT` tunnel of the proxy, origin-form requests.
    Tunnel,
}

/// One kept-alive client connection to `connect` (for a tunnel: the
/// proxy, asked to `CONNECT` to `server` first).
async fn connection(
    connect: SocketAddr,
    route: Route,
    server: SocketAddr,
) -> SendRequest<Empty<Bytes>> {
    let mut stream = TcpStream::connect(connect).await.unwrap();
    stream.set_nodelay(true).unwrap();
    if let Route::Tunnel = route {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let ask = format!("CONNECT {server} HTTP/1.1\r\nHost: {server}\r\n\r\n");
        stream.write_all(ask.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&head)
        );
    }
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn get(sender: &mut SendRequest<Empty<Bytes>>, target: &str, host: &str) -> usize {
    sender.ready().await.unwrap();
    let request = hyper::Request::builder()
        .uri(target)
        .header("host", host)
        .body(Empty::new())
        .unwrap();
    let mut body = sender.send_request(request).await.unwrap().into_body();
    let mut read = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            read += data.len();
        }
    }
    read
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let addr = server();
    let config = EgressPolicyConfig {
        allowed_cidrs: vec!["127.0.0.1/32".into()],
        allowed_ports: vec![addr.port()],
        dns_servers: vec!["127.0.0.1:53".into()],
        ..EgressPolicyConfig::default()
    };
    let proxy = ProxyThread::start(
        config.build().unwrap(),
        Listen::Tcp("127.0.0.1:0".parse().unwrap()),
    )
    .unwrap();
    let via = proxy.local_addr().unwrap();
    let bare = bare_relay(addr);
    let host = addr.to_string();
    let routes = [
        ("direct", addr, Route::Direct, String::new()),
        ("bare_relay", bare, Route::Direct, String::new()),
        ("proxy", via, Route::Forward, format!("http://{addr}")),
        ("proxy_connect", via, Route::Tunnel, String::new()),
    ];

    let mut group = c.benchmark_group("download_100mb");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(BIG as u64));
    for (name, connect, route, prefix) in &routes {
        let mut sender = rt.block_on(connection(*connect, *route, addr));
        let target = format!("{prefix}/big");
        group.bench_function(*name, |b| {
            b.iter(|| {
                rt.block_on(async { assert_eq!(get(&mut sender, &target, &host).await, BIG) })
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("keepalive_get");
    group.throughput(Throughput::Elements(1));
    for (name, connect, route, prefix) in &routes {
        let mut sender = rt.block_on(connection(*connect, *route, addr));
        let target = format!("{prefix}/small");
        group.bench_function(*name, |b| {
            b.iter(|| {
                rt.block_on(async { assert_eq!(get(&mut sender, &target, &host).await, 64) })
            });
        });
    }
    group.finish();

    interleaved(&rt, &routes, addr, &host);
    drop(proxy);
}

/// The same measurements again, the routes taking turns round after round
/// (the machine is shared and noisy: a paired ratio per round, then the
/// median, says more than two separate medians).
fn interleaved(
    rt: &tokio::runtime::Runtime,
    routes: &[(&str, SocketAddr, Route, String)],
    server: SocketAddr,
    host: &str,
) {
    const ROUNDS: usize = 9;
    const SMALL_PER_ROUND: usize = 2000;
    let mut senders: Vec<_> = routes
        .iter()
        .map(|(_, connect, route, _)| rt.block_on(connection(*connect, *route, server)))
        .collect();
    for (what, path, per_round, unit) in [
        ("download_100mb", "/big", 1, "MiB/s"),
        ("keepalive_get", "/small", SMALL_PER_ROUND, "req/s"),
    ] {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); routes.len()];
        let mut cpu: Vec<[u64; 4]> = vec![[0; 4]; routes.len()];
        for round in 0..ROUNDS {
            for k in 0..routes.len() {
                // Rotate who goes first each round.
                let i = (k + round) % routes.len();
                let target = format!("{}{path}", routes[i].3);
                let sender = &mut senders[i];
                let before = cpu_by_party();
                let start = std::time::Instant::now();
                let bytes = rt.block_on(async {
                    let mut bytes = 0;
                    for _ in 0..per_round {
                        bytes += get(sender, &target, host).await;
                    }
                    bytes
                });
                let secs = start.elapsed().as_secs_f64();
                let after = cpu_by_party();
                for party in 0..4 {
                    cpu[i][party] += after[party].saturating_sub(before[party]);
                }
                let rate = if per_round == 1 {
                    bytes as f64 / secs / (1024.0 * 1024.0)
                } else {
                    per_round as f64 / secs
                };
                rates[i].push(rate);
            }
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let base = median(rates[0].clone());
        let mut line = format!(
            "interleaved {what} ({ROUNDS} rounds): {} {base:.0} {unit}",
            routes[0].0
        );
        for i in 1..routes.len() {
            let ratios: Vec<f64> = rates[i].iter().zip(&rates[0]).map(|(r, d)| r / d).collect();
            line.push_str(&format!(
                "; {} {:.0} {unit} (median paired ratio {:.2}x)",
                routes[i].0,
                median(rates[i].clone()),
                median(ratios)
            ));
        }
        println!("{line}");
        // CPU time (on-CPU time of each party's threads, kernel work done
        // on their behalf included) per unit: what a saturated machine
        // pays for each MiB or request, whatever the contention.
        let units = if per_round == 1 {
            (ROUNDS * BIG) as f64 / (1024.0 * 1024.0)
        } else {
            (ROUNDS * per_round) as f64
        };
        let per = if per_round == 1 { "MiB" } else { "request" };
        let mut line = format!("  cpu µs per {per}:");
        for (i, route) in routes.iter().enumerate() {
            let [client, server, proxy, relay] = cpu[i].map(|ns| ns as f64 / 1000.0 / units);
            line.push_str(&format!(
                " {}: client {client:.1} + server {server:.1} + proxy {:.1} = {:.1};",
                route.0,
                proxy + relay,
                client + server + proxy + relay
            ));
        }
        println!("{line}");
    }
}

/// On-CPU nanoseconds of this process's threads so far, by party:
/// client (every other thread), server, proxy, bare relay — from each
/// thread's `schedstat` (Linux; zeros elsewhere).
fn cpu_by_party() -> [u64; 4] {
    let mut sums = [0u64; 4];
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return sums;
    };
    for task in tasks.flatten() {
        let read = |name: &str| std::fs::read_to_string(task.path().join(name)).unwrap_or_default();
        let comm = read("comm");
        let ns: u64 = read("schedstat")
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let party = match comm.trim() {
            SERVER_THREAD => 1,
            PROXY_THREAD => 2,
            RELAY_THREAD => 3,
            _ => 0,
        };
        sums[party] += ns;
    }
    sums
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
