//! Benchmarks of agentcaps-egress, each next to a baseline measured in the
//! same run:
//!
//! - `keepalive/*`: GET requests on loopback with keep-alive, through the
//!   egress client vs a bare `hyper-util` legacy client, same server, same
//!   body (target: egress ≥ 0.9× the bare client's requests per second);
//! - `judge/*`: judging a URL without DNS (`EgressPolicy::check_url`) vs
//!   parsing it alone with `url::Url::parse` (target: microseconds).
//!
//! Run: `cargo bench -p agentcaps-egress -- --warm-up-time 1 --measurement-time 3`.

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::convert::Infallible;
use std::hint::black_box;

use agentcaps_egress::{Client, EgressPolicyConfig, Method};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Empty, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client as BareClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// A keep-alive HTTP/1.1 server on 127.0.0.1 answering 64 bytes.
async fn server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service = service_fn(|_req| async {
                    Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(
                        &[b'x'; 64],
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

fn keepalive(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr = rt.block_on(server());
    let url = format!("http://{addr}/");

    let bare: BareClient<HttpConnector, Empty<Bytes>> =
        BareClient::builder(TokioExecutor::new()).build_http();
    let egress = rt.block_on(async {
        let config = EgressPolicyConfig {
            allowed_cidrs: vec!["127.0.0.1/32".into()],
            allowed_ports: vec![addr.port()],
            dns_servers: vec!["127.0.0.1:53".into()],
            ..EgressPolicyConfig::default()
        };
        Client::new(config.build().unwrap()).unwrap()
    });

    let mut group = c.benchmark_group("keepalive");
    group.throughput(Throughput::Elements(1));
    let uri: hyper::Uri = url.parse().unwrap();
    group.bench_function("bare_hyper_util", |b| {
        b.to_async(&rt).iter(|| async {
            let response = bare.get(uri.clone()).await.unwrap();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body.len(), 64);
        });
    });
    group.bench_function("egress", |b| {
        b.to_async(&rt).iter(|| async {
            let response = egress.get(&url).send().await.unwrap();
            let body = response.bytes().await.unwrap();
            assert_eq!(body.bytes.len(), 64);
        });
    });
    group.finish();
}

fn judge(c: &mut Criterion) {
    let policy = EgressPolicyConfig {
        allowed_domains: vec![
            "*.github.com".into(),
            "docs.rs".into(),
            "bücher.example".into(),
        ],
        blocked_domains: vec!["gist.github.com".into()],
        ..EgressPolicyConfig::default()
    }
    .build()
    .unwrap();
    let urls = [
        "https://api.github.com/repos/rust-lang/rust/issues?state=open",
        "https://docs.rs/url/latest/url/",
        "http://xn--bcher-kva.example/",
        "http://0x7f.1/",
        "http://[::ffff:169.254.169.254]/",
        "http://metadata.google.internal/",
    ];
    let mut group = c.benchmark_group("judge");
    group.throughput(Throughput::Elements(urls.len() as u64));
    group.bench_function("url_parse_only", |b| {
        b.iter(|| {
            for u in urls {
                let _ = black_box(url::Url::parse(black_box(u)));
            }
        });
    });
    group.bench_function("check_url", |b| {
        b.iter(|| {
            for u in urls {
                let _ = black_box(policy.check_url(black_box(u), &Method::GET));
            }
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = keepalive, judge
}
criterion_main!(benches);
