//! The credential-injecting path against the opaque tunnel, same client,
//! same server, same run (target: ≥ 0.5×; a second TLS session per
//! request is the floor), and what a run's certificate authority costs
//! (target: < 5 ms):
//!
//! - `credentials_keepalive_get/opaque_tunnel`: small HTTPS GETs one after
//!   the other on one kept-alive connection through a `CONNECT` tunnel to
//!   a host no credential is bound to (TLS end to end with the server,
//!   relayed unread);
//! - `credentials_keepalive_get/credential_path`: the same GETs, with a
//!   placeholder in `Authorization`, through a `CONNECT` tunnel to a bound
//!   host: the proxy ends TLS with its per-run CA, swaps the placeholder
//!   and re-sends each request with the egress client (its own pooled TLS
//!   connection to the server);
//! - `credentials_setup/proxy_start_*`: starting a proxy without and with a
//!   credential (the difference is the per-run CA and the placeholders);
//! - `credentials_setup/run_credentials`: drawing the placeholders alone.
//!
//! The server (HTTPS, HTTP/1.1, a 64-byte body, certificate from a test
//! CA the policy trusts) and the proxy each run on their own thread and
//! runtime; names are answered by a DNS server on loopback.
//!
//! Run: `cargo bench -p agentcaps-egress --bench credentials -- --warm-up-time 1 --measurement-time 5`.

#![allow(missing_docs)] // criterion_group! generates an undocumented function

#[path = "../tests/egress/support/mod.rs"]
#[allow(dead_code, unreachable_pub)]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;

use agentcaps_egress::credentials::{Credential, RunCredentials, Secret};
use agentcaps_egress::proxy::Proxy;
use agentcaps_egress::{EgressPolicy, danger};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use support::dns::{DnsServer, Rec};
use support::http::{Reply, Server, handler};
use support::tls::TestCa;

const VALUE: &str = "ghp_BenchValue0123456789abcdefABCDEF0123";
const BOUND: &str = "bound.bench.test";
const OPAQUE: &str = "opaque.bench.test";

struct World {
    rt: tokio::runtime::Runtime,
    _dns: DnsServer,
    server: Server,
    proxy: Proxy,
    roots: rustls::RootCertStore,
    policy: EgressPolicy,
}

fn world() -> World {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ca = TestCa::new();
    let (dns, server) = rt.block_on(async {
        let dns = DnsServer::start().await;
        dns.set(BOUND, vec![Rec::ip("127.0.0.2")]);
        dns.set(OPAQUE, vec![Rec::ip("127.0.0.2")]);
        let body = "x".repeat(64);
        let server = Server::start_tls(
            "127.0.0.2:0",
            handler(move |_| Reply::ok(&body)),
            ca.leaf(&[BOUND, OPAQUE]),
        )
        .await;
        (dns, server)
    });
    let mut policy = support::loopback_policy(&dns, &["127.0.0.2/32"], &[server.port()])
        .build()
        .unwrap();
    danger::trust_root_certificates_pem(&mut policy, ca.pem().as_bytes(), "bench CA").unwrap();
    let credential =
        Credential::new("api", Secret::new(VALUE.to_owned()), &[BOUND.to_owned()]).unwrap();
    policy.add_credential(credential).unwrap();
    let proxy = rt
        .block_on(Proxy::bind(policy.clone(), "127.0.0.1:0".parse().unwrap()))
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    let session = proxy.credentials().unwrap();
    for pem in [ca.pem(), session.ca_certificate_pem().to_owned()] {
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
    }
    World {
        rt,
        _dns: dns,
        server,
        proxy,
        roots,
        policy,
    }
}

/// A kept-alive HTTPS connection to `host` through a `CONNECT` tunnel of
/// the proxy at `via`.
async fn connection(
    via: SocketAddr,
    host: &str,
    port: u16,
    roots: rustls::RootCertStore,
) -> SendRequest<Empty<Bytes>> {
    let mut stream = TcpStream::connect(via).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let ask = format!("CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n");
    stream.write_all(ask.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).await.unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"));
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from(host.to_owned()).unwrap(), stream)
        .await
        .unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

async fn get(sender: &mut SendRequest<Empty<Bytes>>, host: &str, authorization: &str) -> usize {
    sender.ready().await.unwrap();
    let request = hyper::Request::builder()
        .uri("/small")
        .header("host", host)
        .header("authorization", authorization)
        .body(Empty::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut read = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            read += data.len();
        }
    }
    read
}

fn bench(c: &mut Criterion) {
    let w = world();
    let via = w.proxy.local_addr().unwrap();
    let port = w.server.port();
    let placeholder = w
        .proxy
        .credentials()
        .unwrap()
        .credentials()
        .placeholder("api")
        .unwrap()
        .to_owned();
    let bearer = format!("Bearer {placeholder}");
    let mut group = c.benchmark_group("credentials_keepalive_get");
    group.throughput(Throughput::Elements(1));
    for (name, host) in [("opaque_tunnel", OPAQUE), ("credential_path", BOUND)] {
        let mut sender = w.rt.block_on(connection(via, host, port, w.roots.clone()));
        let authority = format!("{host}:{port}");
        group.bench_function(name, |b| {
            b.iter(|| {
                w.rt.block_on(async { assert_eq!(get(&mut sender, &authority, &bearer).await, 64) })
            });
        });
    }
    group.finish();
    // The bound server saw the value, never the placeholder.
    let seen = w.server.seen();
    assert!(
        seen.iter()
            .any(|s| s.headers["authorization"] == format!("Bearer {VALUE}").as_str())
    );

    let mut group = c.benchmark_group("credentials_setup");
    let plain = support::loopback_policy(&w._dns, &["127.0.0.2/32"], &[port])
        .build()
        .unwrap();
    for (name, policy) in [
        ("proxy_start_without", &plain),
        ("proxy_start_with_credential", &w.policy),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                w.rt.block_on(async {
                    Proxy::bind(policy.clone(), "127.0.0.1:0".parse().unwrap())
                        .await
                        .unwrap()
                })
            });
        });
    }
    group.bench_function("run_credentials", |b| {
        b.iter(|| RunCredentials::new(w.policy.credentials()).unwrap());
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = bench
}
criterion_main!(benches);
