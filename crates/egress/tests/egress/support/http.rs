//! Real HTTP and HTTPS servers on loopback that log every request they
//! see (which local address received it, the SNI, the headers), and raw
//! TCP servers that stall, drip or never stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, Version};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::tls::Leaf;

/// One request a server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub local: SocketAddr,
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub version: Version,
    pub sni: Option<String>,
}

/// What the handler answers.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn ok(body: &str) -> Reply {
        Reply {
            status: 200,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }
    pub fn redirect(status: u16, location: &str) -> Reply {
        Reply {
            status,
            headers: vec![("location".to_owned(), location.to_owned())],
            body: Vec::new(),
        }
    }
}

pub type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

pub fn handler(f: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Handler {
    Arc::new(f)
}

/// A running server and what it saw.
pub struct Server {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<Seen>>>,
    pub connections: Arc<AtomicUsize>,
}

impl Server {
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
    pub fn hits(&self) -> usize {
        self.log.lock().unwrap().len()
    }
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Plain HTTP on `ip:port` (port 0: any).
    pub async fn start(bind: &str, handler: Handler) -> Server {
        Server::start_inner(bind, handler, None).await
    }

    /// HTTPS (HTTP/1.1 and HTTP/2 by ALPN) with `leaf`.
    pub async fn start_tls(bind: &str, handler: Handler, leaf: Leaf) -> Server {
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(leaf.chain, leaf.key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Server::start_inner(bind, handler, Some(TlsAcceptor::from(Arc::new(config)))).await
    }

    async fn start_inner(bind: &str, handler: Handler, tls: Option<TlsAcceptor>) -> Server {
        let listener = TcpListener::bind(bind).await.expect("bind test server");
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (task_log, task_conns) = (log.clone(), connections.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                task_conns.fetch_add(1, Ordering::SeqCst);
                let local = stream.local_addr().unwrap();
                let (handler, log, tls) = (handler.clone(), task_log.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(TokioIo::new(stream), local, None, handler, log).await,
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else {
                                return;
                            };
                            let sni = stream.get_ref().1.server_name().map(str::to_owned);
                            serve(TokioIo::new(stream), local, sni, handler, log).await;
                        }
                    }
                });
            }
        });
        Server {
            addr,
            log,
            connections,
        }
    }
}

async fn serve<I>(
    io: TokioIo<I>,
    local: SocketAddr,
    sni: Option<String>,
    handler: Handler,
    log: Arc<Mutex<Vec<Seen>>>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let (handler, log, sni) = (handler.clone(), log.clone(), sni.clone());
        async move {
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let seen = Seen {
                local,
                method: parts.method,
                path: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str().to_owned())
                    .unwrap_or_default(),
                headers: parts.headers,
                body,
                version: parts.version,
                sni,
            };
            let reply = handler(&seen);
            log.lock().unwrap().push(seen);
            let mut response = Response::new(Full::new(Bytes::from(reply.body)));
            *response.status_mut() = http::StatusCode::from_u16(reply.status).unwrap();
            for (n, v) in reply.headers {
                response.headers_mut().append(
                    http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(&v).unwrap(),
                );
            }
            Ok::<_, Infallible>(response)
        }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}

/// How a raw server misbehaves after reading the request head.
#[derive(Debug, Clone)]
pub enum Misbehave {
    /// Never answers.
    Stall,
    /// Sends a valid head, then one body byte every `Duration`, forever.
    Drip(Duration),
    /// Sends a valid head, then body bytes as fast as it can, forever.
    Forever,
    /// Sends `usize` bytes of header fields, then a valid end.
    HugeHeaders(usize),
    /// Sends a head and one chunk, then waits until told, then another
    /// chunk: for reading a stream as it comes.
    TwoChunks(Arc<tokio::sync::Notify>),
}

/// A raw TCP server for the limits tests; counts connections.
pub async fn misbehaving(bind: &str, how: Misbehave) -> Server {
    let listener = TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let conns = connections.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            conns.fetch_add(1, Ordering::SeqCst);
            let how = how.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                match how {
                    Misbehave::Stall => {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                    }
                    Misbehave::Drip(every) => {
                        if stream.write_all(chunked).await.is_err() {
                            return;
                        }
                        loop {
                            if stream.write_all(b"1\r\nx\r\n").await.is_err() {
                                return;
                            }
                            tokio::time::sleep(every).await;
                        }
                    }
                    Misbehave::Forever => {
                        if stream.write_all(chunked).await.is_err() {
                            return;
                        }
                        let chunk = format!("4000\r\n{}\r\n", "y".repeat(0x4000));
                        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
                    }
                    Misbehave::HugeHeaders(size) => {
                        let mut out = b"HTTP/1.1 200 OK\r\n".to_vec();
                        let mut i = 0;
                        while out.len() < size {
                            out.extend_from_slice(
                                format!("x-filler-{i}: {}\r\n", "z".repeat(100)).as_bytes(),
                            );
                            i += 1;
                        }
                        out.extend_from_slice(b"content-length: 0\r\n\r\n");
                        let _ = stream.write_all(&out).await;
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                    Misbehave::TwoChunks(go) => {
                        if stream.write_all(chunked).await.is_err() {
                            return;
                        }
                        let _ = stream.write_all(b"5\r\nfirst\r\n").await;
                        go.notified().await;
                        let _ = stream.write_all(b"6\r\nsecond\r\n0\r\n\r\n").await;
                    }
                }
            });
        }
    });
    Server {
        addr,
        log: Arc::new(Mutex::new(Vec::new())),
        connections,
    }
}
