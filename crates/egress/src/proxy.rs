//! An HTTP proxy whose every connection is judged by the egress policy:
//! absolute-form `http://` requests (forwarded, keep-alive on both sides)
//! and `CONNECT host:port` tunnels (for TLS; bytes copied both ways).
//!
//! For each request or tunnel the proxy resolves the name once with the
//! client's own resolver, judges the name, **every** answer, the port and
//! (plain HTTP) the method and headers — the decision `check_url` and
//! [`Client::resolve_and_check`] give for `http(s)://host:port/` — and
//! dials only an address it judged. A refusal is answered `403` with the
//! rule and the reason in the body (and in `x-agentcaps-rule`), before any
//! tunnel opens; a failure (DNS, connect) is `502`, a time limit `504`.
//! Every decision is logged ([`ProxyLog`]).
//!
//! Redirects are the client's business: each request the client makes
//! after one is judged like any other. Response sizes and body times are
//! not limited here (a package download may be large and slow); the
//! command that uses the proxy has its own time limit.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentcaps_egress::EgressError> {
//! use agentcaps_egress::{EgressPolicy, proxy::Proxy};
//!
//! let proxy = Proxy::bind(EgressPolicy::default(), "127.0.0.1:0".parse().unwrap()).await?;
//! println!("HTTP_PROXY=http://{}", proxy.local_addr().unwrap());
//! // ... run a command with HTTP_PROXY/HTTPS_PROXY set ...
//! for entry in proxy.log().entries() {
//!     println!("{} {} {:?} {}", entry.decision, entry.host, entry.address, entry.rule);
//! }
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HOST, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper::server::conn::http1 as server_http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::task::JoinSet;

use crate::client::Client;
use crate::error::{EgressError, Phase};
use crate::headers::judge_meaning;
use crate::policy::{EgressPolicy, UrlVerdict};

/// Entries kept in a [`ProxyLog`]; past this, entries are counted, not kept.
const MAX_LOG_ENTRIES: usize = 10_000;

/// Idle upstream connections kept per (host, port, address).
const MAX_IDLE_PER_KEY: usize = 16;

/// Upstream keys pooled at most.
const MAX_POOL_KEYS: usize = 256;

/// Client connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 512;

/// Buffer of each direction of a tunnel.
const TUNNEL_BUFFER: usize = 64 * 1024;

/// What a proxied connection was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyKind {
    /// An absolute-form `http://` request, forwarded.
    Http,
    /// A `CONNECT host:port` tunnel.
    Connect,
}

/// What the proxy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyDecision {
    /// Judged allowed and forwarded (or tunnelled).
    Allow,
    /// Refused by the policy (`403`).
    Deny,
    /// Could not decide or failed: DNS, connect, a time limit (`502`/`504`).
    Error,
}

impl std::fmt::Display for ProxyDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProxyDecision::Allow => "allow",
            ProxyDecision::Deny => "deny",
            ProxyDecision::Error => "error",
        })
    }
}

/// One logged request or tunnel: what was asked, where it went, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ProxyEntry {
    /// A forwarded request or a tunnel.
    pub kind: ProxyKind,
    /// The method (`CONNECT` for a tunnel).
    pub method: String,
    /// The host as asked (normalized when it parsed).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The judged address dialled (none when refused before dialling).
    pub address: Option<SocketAddr>,
    /// The decision.
    pub decision: ProxyDecision,
    /// The rule id of a refusal or failure (empty when allowed).
    pub rule: String,
    /// The refusal or failure message (empty when allowed).
    pub reason: String,
}

/// The shared log of a proxy's decisions, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ProxyLog {
    inner: Arc<Mutex<LogInner>>,
}

#[derive(Debug, Default)]
struct LogInner {
    entries: Vec<ProxyEntry>,
    dropped: u64,
}

impl ProxyLog {
    fn push(&self, entry: ProxyEntry) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.entries.len() < MAX_LOG_ENTRIES {
            inner.entries.push(entry);
        } else {
            inner.dropped += 1;
        }
    }

    /// A copy of the entries so far.
    #[must_use]
    pub fn entries(&self) -> Vec<ProxyEntry> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.entries.clone()
    }

    /// The entries so far, removed from the log.
    #[must_use]
    pub fn take(&self) -> Vec<ProxyEntry> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut inner.entries)
    }

    /// Entries not kept because the log was full (10 000 entries).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }
}

/// Where upstream connections are kept between requests: keyed by the
/// host asked for *and* the judged address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct UpstreamKey {
    host: String,
    port: u16,
    addr: SocketAddr,
}

#[derive(Default)]
struct UpstreamPool {
    idle: Mutex<HashMap<UpstreamKey, Vec<client_http1::SendRequest<Incoming>>>>,
}

impl UpstreamPool {
    fn checkout(&self, key: &UpstreamKey) -> Option<client_http1::SendRequest<Incoming>> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let list = idle.get_mut(key)?;
        list.retain(|s| !s.is_closed());
        let at = list.iter().position(client_http1::SendRequest::is_ready)?;
        Some(list.swap_remove(at))
    }

    fn checkin(&self, key: UpstreamKey, sender: client_http1::SendRequest<Incoming>) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() >= MAX_POOL_KEYS && !idle.contains_key(&key) {
            idle.retain(|_, list| {
                list.retain(|s| !s.is_closed());
                !list.is_empty()
            });
            if idle.len() >= MAX_POOL_KEYS {
                return;
            }
        }
        let list = idle.entry(key).or_default();
        if list.len() < MAX_IDLE_PER_KEY {
            list.push(sender);
        }
    }
}

struct Shared {
    client: Client,
    log: ProxyLog,
    pool: UpstreamPool,
}

impl Shared {
    fn policy(&self) -> &EgressPolicy {
        self.client.policy()
    }
}

type ProxyBody = Either<Incoming, Full<Bytes>>;

/// A running proxy. Dropping it stops accepting and closes the
/// connections it serves.
#[derive(Debug)]
pub struct Proxy {
    addr: Option<SocketAddr>,
    log: ProxyLog,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listens on `addr` (TCP) and serves until dropped. Must be called
    /// inside a Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] when the client cannot be built (resolver
    /// configuration) or the address cannot be bound.
    pub async fn bind(policy: EgressPolicy, addr: SocketAddr) -> Result<Proxy, EgressError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| bind_error(&addr.to_string(), &e))?;
        let local = listener.local_addr().ok();
        let shared = shared(policy)?;
        let log = shared.log.clone();
        let task = tokio::spawn(accept_loop(shared, listener));
        Ok(Proxy {
            addr: local,
            log,
            task,
        })
    }

    /// Listens on a UNIX socket at `path` (created; it must not exist) and
    /// serves until dropped: for a relay inside a private network view,
    /// which accepts TCP there and passes each connection's bytes here.
    ///
    /// # Errors
    ///
    /// As [`Proxy::bind`].
    pub async fn bind_unix(policy: EgressPolicy, path: &Path) -> Result<Proxy, EgressError> {
        let listener =
            UnixListener::bind(path).map_err(|e| bind_error(&path.display().to_string(), &e))?;
        let shared = shared(policy)?;
        let log = shared.log.clone();
        let task = tokio::spawn(accept_loop(shared, listener));
        Ok(Proxy {
            addr: None,
            log,
            task,
        })
    }

    /// The TCP address it listens on (`None` for a UNIX socket).
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The log of every decision.
    #[must_use]
    pub fn log(&self) -> ProxyLog {
        self.log.clone()
    }
}

fn bind_error(what: &str, e: &std::io::Error) -> EgressError {
    EgressError::Config {
        field: "proxy".to_owned(),
        message: format!("cannot listen on {what}: {e}"),
    }
}

fn shared(policy: EgressPolicy) -> Result<Arc<Shared>, EgressError> {
    Ok(Arc::new(Shared {
        client: Client::new(policy)?,
        log: ProxyLog::default(),
        pool: UpstreamPool::default(),
    }))
}

/// A listener: TCP or UNIX.
trait Accept: Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static;
    fn next(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl Accept for TcpListener {
    type Stream = TcpStream;
    async fn next(&self) -> std::io::Result<TcpStream> {
        let (stream, _) = self.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

impl Accept for UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<tokio::net::UnixStream> {
        Ok(self.accept().await?.0)
    }
}

/// Accepts and serves each connection; at most [`MAX_CONNECTIONS`] at
/// once. The connections are aborted when this task is.
async fn accept_loop(shared: Arc<Shared>, listener: impl Accept) {
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        if connections.len() >= MAX_CONNECTIONS {
            let _ = connections.join_next().await;
            continue;
        }
        let stream = match listener.next().await {
            Ok(stream) => stream,
            // Out of descriptors and the like: wait a little, go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let service = service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, Infallible>(handle(shared, req).await) }
            });
            let _ = server_http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        connect(&shared, req).await
    } else {
        forward(&shared, req).await
    }
}

/// A response for a refusal (`403`), a time limit (`504`), a request the
/// proxy cannot serve (`400`) or a failure (`502`), and its log entry.
fn refusal(shared: &Shared, mut entry: ProxyEntry, e: &EgressError) -> Response<ProxyBody> {
    let (status, decision) = match e {
        EgressError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, ProxyDecision::Error),
        EgressError::InvalidUrl { .. } | EgressError::UrlTooLong { .. } => {
            (StatusCode::BAD_REQUEST, ProxyDecision::Deny)
        }
        _ if e.is_refusal() => (StatusCode::FORBIDDEN, ProxyDecision::Deny),
        _ => (StatusCode::BAD_GATEWAY, ProxyDecision::Error),
    };
    entry.decision = decision;
    e.rule().clone_into(&mut entry.rule);
    entry.reason = e.to_string();
    let body = format!("agentcaps proxy: [{}] {e}\n", e.rule());
    shared.log.push(entry);
    let mut response = Response::new(Either::Right(Full::new(Bytes::from(body))));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    if let Ok(rule) = HeaderValue::from_str(e.rule()) {
        headers.insert(HeaderName::from_static("x-agentcaps-rule"), rule);
    }
    response
}

fn entry(kind: ProxyKind, method: &Method, host: &str, port: u16) -> ProxyEntry {
    ProxyEntry {
        kind,
        method: method.to_string(),
        host: host.to_owned(),
        port,
        address: None,
        decision: ProxyDecision::Allow,
        rule: String::new(),
        reason: String::new(),
    }
}

/// Resolves once and judges every answer; the judged socket addresses.
async fn judge(shared: &Shared, verdict: &UrlVerdict) -> Result<Vec<SocketAddr>, EgressError> {
    let addrs = shared.client.judged_addresses(verdict).await?;
    Ok(addrs
        .into_iter()
        .map(|ip| SocketAddr::new(ip, verdict.port()))
        .collect())
}

/// Dials the judged addresses in order until one connects, within
/// `connect_timeout_ms`.
async fn dial(
    shared: &Shared,
    host: &str,
    url: &str,
    addrs: &[SocketAddr],
) -> Result<(TcpStream, SocketAddr), EgressError> {
    let limit = shared.policy().connect_timeout;
    let attempt = async {
        let mut last = None;
        for addr in addrs {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    let _ = stream.set_nodelay(true);
                    return Ok((stream, *addr));
                }
                Err(e) => {
                    last = Some(EgressError::Connect {
                        host: host.to_owned(),
                        address: *addr,
                        message: e.to_string(),
                    });
                }
            }
        }
        Err(last.unwrap_or_else(|| EgressError::Http {
            url: url.to_owned(),
            message: "no address to connect to".to_owned(),
        }))
    };
    tokio::time::timeout(limit, attempt)
        .await
        .map_err(|_| EgressError::Timeout {
            url: url.to_owned(),
            phase: Phase::Connect,
            limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        })?
}

/// `CONNECT host:port`: judged as `https://host:port/` (every rule but
/// the method, which travels inside the tunnel); the judged address is
/// dialled before the `200` is sent, then bytes are copied both ways.
async fn connect(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let authority = req
        .uri()
        .authority()
        .map(ToString::to_string)
        .unwrap_or_default();
    let (raw_host, port) = split_authority(&authority);
    let mut log = entry(ProxyKind::Connect, &Method::CONNECT, raw_host, port);
    if authority.is_empty() || port == 0 {
        let e = EgressError::InvalidUrl {
            url: authority,
            reason: "CONNECT needs host:port".to_owned(),
        };
        return refusal(shared, log, &e);
    }
    let url = format!("https://{authority}/");
    let verdict = match shared.policy().check_target(&url) {
        Ok(v) => v,
        Err(e) => return refusal(shared, log, &e),
    };
    log.host = verdict.host();
    let addrs = match judge(shared, &verdict).await {
        Ok(a) => a,
        Err(e) => return refusal(shared, log, &e),
    };
    let (mut upstream, addr) = match dial(shared, &log.host, &url, &addrs).await {
        Ok(c) => c,
        Err(e) => return refusal(shared, log, &e),
    };
    log.address = Some(addr);
    shared.log.push(log);
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(req).await {
            let mut client = TokioIo::new(upgraded);
            let _ = tokio::io::copy_bidirectional_with_sizes(
                &mut client,
                &mut upstream,
                TUNNEL_BUFFER,
                TUNNEL_BUFFER,
            )
            .await;
        }
    });
    Response::new(Either::Right(Full::new(Bytes::new())))
}

/// `host:port` → (host without brackets, port); port 0 when missing.
fn split_authority(authority: &str) -> (&str, u16) {
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.is_empty() && !port.contains(']') => (
            host.trim_start_matches('[').trim_end_matches(']'),
            port.parse().unwrap_or(0),
        ),
        _ => (authority, 0),
    }
}

/// Hop-by-hop headers: never forwarded in either direction.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn strip_hop_by_hop(headers: &mut http::HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(*name);
    }
}

/// An absolute-form `http://` request: judged (URL, method, headers, every
/// answer), sent on a pooled or new connection to a judged address, and
/// the response streamed back as it comes.
async fn forward(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let (mut parts, body) = req.into_parts();
    let uri = parts.uri.to_string();
    let host = parts.uri.host().unwrap_or_default().to_owned();
    let port = parts.uri.port_u16().unwrap_or(80);
    let mut log = entry(ProxyKind::Http, &parts.method, &host, port);
    if parts.uri.scheme_str() != Some("http") || parts.uri.authority().is_none() {
        let e = EgressError::InvalidUrl {
            url: uri,
            reason: "a proxy request needs an absolute http:// URL; use CONNECT for https"
                .to_owned(),
        };
        return refusal(shared, log, &e);
    }
    let verdict = match shared.policy().check_url(&uri, &parts.method) {
        Ok(v) => v,
        Err(e) => return refusal(shared, log, &e),
    };
    log.host = verdict.host();
    log.port = verdict.port();
    strip_hop_by_hop(&mut parts.headers);
    for (name, value) in &parts.headers {
        if let Err(e) = judge_meaning(name, value, &shared.policy().methods) {
            return refusal(shared, log, &e);
        }
    }
    let addrs = match judge(shared, &verdict).await {
        Ok(a) => a,
        Err(e) => return refusal(shared, log, &e),
    };
    // Sent as the judged URL says: origin-form target, Host from the URL.
    let target = match origin_form(&verdict) {
        Ok(t) => t,
        Err(e) => return refusal(shared, log, &e),
    };
    parts.uri = target;
    if let Ok(host) = HeaderValue::from_str(&host_header(&verdict)) {
        parts.headers.insert(HOST, host);
    }
    let request = Request::from_parts(parts, body);
    match send(shared, &verdict, &log.host, &addrs, request).await {
        Ok((response, addr)) => {
            log.address = Some(addr);
            shared.log.push(log);
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Either::Left(body))
        }
        Err((e, addr)) => {
            log.address = addr;
            refusal(shared, log, &e)
        }
    }
}

fn origin_form(verdict: &UrlVerdict) -> Result<Uri, EgressError> {
    let url = url::Url::parse(verdict.url()).map_err(|e| EgressError::InvalidUrl {
        url: verdict.url().to_owned(),
        reason: e.to_string(),
    })?;
    url[url::Position::BeforePath..url::Position::AfterQuery]
        .parse()
        .map_err(|e: http::uri::InvalidUri| EgressError::InvalidUrl {
            url: verdict.url().to_owned(),
            reason: format!("cannot be sent as a request target: {e}"),
        })
}

fn host_header(verdict: &UrlVerdict) -> String {
    let host = match verdict.ip() {
        Some(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        _ => verdict.host(),
    };
    if verdict.port() == 80 {
        host
    } else {
        format!("{host}:{}", verdict.port())
    }
}

type Sent = Result<(Response<Incoming>, SocketAddr), (EgressError, Option<SocketAddr>)>;

/// Sends on an idle pooled connection to one of the judged addresses, or
/// dials one; waits `header_timeout_ms` for the head.
async fn send(
    shared: &Shared,
    verdict: &UrlVerdict,
    host: &str,
    addrs: &[SocketAddr],
    request: Request<Incoming>,
) -> Sent {
    let key = |addr: SocketAddr| UpstreamKey {
        host: host.to_owned(),
        port: verdict.port(),
        addr,
    };
    let pooled = addrs
        .iter()
        .find_map(|a| shared.pool.checkout(&key(*a)).map(|s| (*a, s)));
    let (addr, mut sender) = match pooled {
        Some(found) => found,
        None => {
            let (stream, addr) = dial(shared, host, verdict.url(), addrs)
                .await
                .map_err(|e| (e, None))?;
            let (sender, conn) = client_http1::Builder::new()
                .handshake(TokioIo::new(stream))
                .await
                .map_err(|e| (http_error(verdict, &e), Some(addr)))?;
            tokio::spawn(conn);
            (addr, sender)
        }
    };
    let limit = shared.policy().header_timeout;
    let response = tokio::time::timeout(limit, sender.send_request(request))
        .await
        .map_err(|_| {
            let e = EgressError::Timeout {
                url: verdict.url().to_owned(),
                phase: Phase::Headers,
                limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            };
            (e, Some(addr))
        })?
        .map_err(|e| (http_error(verdict, &e), Some(addr)))?;
    // Ready for the next request once this body has been read.
    shared.pool.checkin(key(addr), sender);
    Ok((response, addr))
}

fn http_error(verdict: &UrlVerdict, e: &hyper::Error) -> EgressError {
    EgressError::Http {
        url: verdict.url().to_owned(),
        message: e.to_string(),
    }
}

/// A proxy on its own thread and runtime, for hosts without one (the
/// `agentcaps` command line). Dropping it stops the proxy and joins the
/// thread.
#[derive(Debug)]
pub struct ProxyThread {
    addr: Option<SocketAddr>,
    log: ProxyLog,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where a [`ProxyThread`] listens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Listen {
    /// A TCP address (port 0: any free port).
    Tcp(SocketAddr),
    /// A UNIX socket path (must not exist).
    Unix(std::path::PathBuf),
}

impl ProxyThread {
    /// Starts the proxy on a new thread with a two-worker runtime.
    ///
    /// # Errors
    ///
    /// As [`Proxy::bind`], or [`EgressError::Config`] when the thread or
    /// runtime cannot be started.
    pub fn start(policy: EgressPolicy, listen: Listen) -> Result<ProxyThread, EgressError> {
        let config_error = |m: String| EgressError::Config {
            field: "proxy".to_owned(),
            message: m,
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("agentcaps-proxy")
            .enable_all()
            .build()
            .map_err(|e| config_error(format!("cannot start a runtime: {e}")))?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("agentcaps-proxy".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let proxy = match listen {
                        Listen::Tcp(addr) => Proxy::bind(policy, addr).await,
                        Listen::Unix(path) => Proxy::bind_unix(policy, &path).await,
                    };
                    match proxy {
                        Ok(proxy) => {
                            let _ = ready_tx.send(Ok((proxy.local_addr(), proxy.log())));
                            let _ = stop_rx.await;
                            drop(proxy);
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .map_err(|e| config_error(format!("cannot start a thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok((addr, log))) => Ok(ProxyThread {
                addr,
                log,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(config_error("the proxy thread ended early".to_owned()))
            }
        }
    }

    /// The TCP address it listens on (`None` for a UNIX socket).
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The log of every decision.
    #[must_use]
    pub fn log(&self) -> ProxyLog {
        self.log.clone()
    }
}

impl Drop for ProxyThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::split_authority;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("example.com:443"), ("example.com", 443));
        assert_eq!(split_authority("[::1]:8443"), ("::1", 8443));
        assert_eq!(split_authority("example.com"), ("example.com", 0));
        assert_eq!(split_authority("[::1]"), ("[::1]", 0));
        assert_eq!(split_authority("example.com:x"), ("example.com", 0));
    }
}
