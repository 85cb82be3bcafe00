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
//! tunnel opens; a failure (DNS, connect, a broken upstream) is `502`, a
//! time limit `504`; the body says which (`deny` or `error`, also in
//! `x-agentcaps-decision`). A request the proxy cannot read is `400` (or
//! `431` for a head too large). Every decision is logged ([`ProxyLog`])
//! when it is made, before any dial, and the entry is completed as the
//! exchange goes on (address, status, bytes each way, how it ended).
//!
//! A tunnel carries TLS (its first bytes are a TLS handshake record) or
//! cleartext HTTP/1, which is judged request by request by the same method
//! and header rules as a forwarded request; nothing else.
//!
//! Client connections are bounded in time: a request head must arrive
//! within `header_timeout_ms` of the connection opening or of the last
//! response (an idle keep-alive connection is closed then too; a head
//! begun and not finished is logged, `time.request-head`). A request or
//! tunnel whose client leaves while its name is resolved is logged too
//! (`undecided`, nothing sent). An
//! idempotent request without a body that fails on a reused upstream
//! connection before any response byte is sent once more on a fresh one.
//! Responses may carry up to [`MAX_RESPONSE_HEADERS`] header fields.
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

mod forward;
#[cfg(target_os = "linux")]
pub mod handoff;
mod inside;
mod log;
mod relay;
mod terminate;
mod thread;
mod tunnel;
mod wire;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1 as server_http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
#[cfg(unix)]
use tokio::net::UnixListener;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

pub use log::{MAX_LOG_ENTRIES, ProxyDecision, ProxyEntry, ProxyKind, ProxyLog, ProxyOutcome};
pub use terminate::{CA_VARIABLES, CredentialSession};
pub use thread::{Listen, ProxyThread};

use crate::client::Client;
use crate::error::{EgressError, Phase};
use crate::policy::{EgressPolicy, UrlVerdict};
use log::Logged;

/// Client connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 512;

/// Header fields a response may carry (hyper reads 100 by default; some
/// servers send more).
pub const MAX_RESPONSE_HEADERS: usize = 1000;

struct Shared {
    client: Client,
    log: ProxyLog,
    pool: forward::UpstreamPool,
    /// Ends TLS for tunnels to hosts a credential is bound to.
    terminator: Option<terminate::Terminator>,
    /// Listeners handed over on the UNIX socket and served now.
    #[cfg(target_os = "linux")]
    handed_over: std::sync::atomic::AtomicUsize,
}

impl Shared {
    fn policy(&self) -> &EgressPolicy {
        self.client.policy()
    }

    fn credentials(&self) -> Option<CredentialSession> {
        self.terminator.as_ref().map(|t| t.session().clone())
    }
}

type ProxyBody = Either<forward::Relayed, Full<Bytes>>;

/// A running proxy. Dropping it stops accepting and closes the
/// connections it serves.
#[derive(Debug)]
pub struct Proxy {
    addr: Option<SocketAddr>,
    log: ProxyLog,
    credentials: Option<CredentialSession>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.log.stop();
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
        let credentials = shared.credentials();
        let task = tokio::spawn(accept_loop(shared, listener));
        Ok(Proxy {
            addr: local,
            log,
            credentials,
            task,
        })
    }

    /// Listens on a UNIX socket at `path` (created; it must not exist) and
    /// serves until dropped: HTTP proxying on each connection, or, on Linux,
    /// on a connection that hands over a listening socket (see `handoff`: a
    /// private network view's `127.0.0.1:PORT`), on each connection that
    /// listener accepts.
    ///
    /// # Errors
    ///
    /// As [`Proxy::bind`]; on platforms without UNIX sockets (Windows),
    /// always an error.
    pub async fn bind_unix(policy: EgressPolicy, path: &Path) -> Result<Proxy, EgressError> {
        #[cfg(not(unix))]
        {
            let _ = policy;
            let unsupported = std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "UNIX sockets are not available on this platform",
            );
            Err(bind_error(&path.display().to_string(), &unsupported))
        }
        #[cfg(unix)]
        {
            Self::bind_unix_socket(policy, path)
        }
    }

    #[cfg(unix)]
    fn bind_unix_socket(policy: EgressPolicy, path: &Path) -> Result<Proxy, EgressError> {
        let listener =
            UnixListener::bind(path).map_err(|e| bind_error(&path.display().to_string(), &e))?;
        let shared = shared(policy)?;
        let log = shared.log.clone();
        let credentials = shared.credentials();
        let task = tokio::spawn(accept_loop(shared, listener));
        Ok(Proxy {
            addr: None,
            log,
            credentials,
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

    /// With credentials in the policy: this run's placeholders and CA
    /// certificate, for the command's environment and view.
    #[must_use]
    pub fn credentials(&self) -> Option<&CredentialSession> {
        self.credentials.as_ref()
    }
}

fn bind_error(what: &str, e: &std::io::Error) -> EgressError {
    EgressError::Config {
        field: "proxy".to_owned(),
        message: format!("cannot listen on {what}: {e}"),
    }
}

fn shared(policy: EgressPolicy) -> Result<Arc<Shared>, EgressError> {
    let terminator = terminate::Terminator::new(&policy)?;
    Ok(Arc::new(Shared {
        client: Client::new(policy)?,
        log: ProxyLog::default(),
        pool: forward::UpstreamPool::default(),
        terminator,
        #[cfg(target_os = "linux")]
        handed_over: std::sync::atomic::AtomicUsize::new(0),
    }))
}

/// A listener: TCP or UNIX.
trait Accept: Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static;
    fn next(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
    /// Serves one accepted connection: HTTP proxying.
    fn serve(shared: Arc<Shared>, stream: Self::Stream) -> impl Future<Output = ()> + Send {
        serve_http(shared, stream)
    }
}

impl Accept for TcpListener {
    type Stream = TcpStream;
    async fn next(&self) -> std::io::Result<TcpStream> {
        let (stream, _) = self.accept().await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

#[cfg(unix)]
impl Accept for UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<tokio::net::UnixStream> {
        Ok(self.accept().await?.0)
    }
    /// HTTP proxying, or (on Linux, whose private views hand theirs over)
    /// the hand-over of a listener.
    async fn serve(shared: Arc<Shared>, stream: tokio::net::UnixStream) {
        #[cfg(target_os = "linux")]
        match handoff::starts_with_handoff(&stream).await {
            Some(true) => handoff::take(shared, stream).await,
            Some(false) => serve_http(shared, stream).await,
            None => {}
        }
        #[cfg(not(target_os = "linux"))]
        serve_http(shared, stream).await;
    }
}

/// Accepts and serves each connection; at most [`MAX_CONNECTIONS`] at
/// once. The connections are aborted when this task is.
async fn accept_loop<L: Accept>(shared: Arc<Shared>, listener: L) {
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
        connections.spawn(L::serve(shared.clone(), stream));
    }
}

/// Serves HTTP proxying on one client connection.
async fn serve_http(
    shared: Arc<Shared>,
    stream: impl AsyncRead + AsyncWrite + Send + Unpin + 'static,
) {
    let serving = shared.clone();
    let service = service_fn(move |req| {
        let shared = serving.clone();
        async move { Ok::<_, Infallible>(handle(shared, req).await) }
    });
    let (stream, unanswered) = wire::Wire::heard(stream);
    let served = server_builder(&shared)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        let begun = unanswered.load(std::sync::atomic::Ordering::Relaxed);
        unreadable(
            &shared,
            ProxyEntry::new(ProxyKind::Http, "", "", 0),
            &e,
            begun,
        );
    }
}

/// The server side of a client connection: a request head must come
/// within `header_timeout_ms` (of the connection opening or the last
/// response).
fn server_builder(shared: &Shared) -> server_http1::Builder {
    let mut builder = server_http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(shared.policy().header_timeout);
    builder
}

/// Logs a request the server side could not read (hyper has answered it
/// `400` or `431`), or whose head did not come whole in time (`begun`:
/// bytes of it came after the last answer; the connection is closed); other
/// ends of a connection (an idle one closed by the same timeout among them)
/// are not requests.
fn unreadable(shared: &Shared, mut entry: ProxyEntry, e: &hyper::Error, begun: bool) {
    let e = if e.is_parse_too_large() {
        EgressError::RequestHeadTooLarge {
            message: e.to_string(),
        }
    } else if e.is_parse() {
        EgressError::BadRequest {
            message: e.to_string(),
        }
    } else if e.is_timeout() && begun {
        EgressError::RequestHeadTimeout {
            limit_ms: millis(shared.policy().header_timeout),
        }
    } else {
        return;
    };
    record(&mut entry, &e);
    shared.log.push(entry);
}

fn millis(limit: Duration) -> u64 {
    u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)
}

/// Awaits `deciding` (the name being resolved). When the client's
/// connection ends meanwhile (the future is dropped: the client left, or
/// the proxy stopped), `entry` is logged as undecided, nothing sent.
async fn before_decision<T>(
    shared: &Shared,
    entry: &ProxyEntry,
    deciding: impl Future<Output = T>,
) -> T {
    struct Undecided<'a> {
        log: &'a ProxyLog,
        entry: Option<ProxyEntry>,
    }
    impl Drop for Undecided<'_> {
        fn drop(&mut self) {
            if let Some(mut entry) = self.entry.take() {
                let e = EgressError::Undecided {
                    host: entry.host.clone(),
                };
                record(&mut entry, &e);
                entry.outcome = if self.log.is_stopped() {
                    ProxyOutcome::Stopped
                } else {
                    ProxyOutcome::ClientClosed
                };
                self.log.push(entry);
            }
        }
    }
    let mut undecided = Undecided {
        log: &shared.log,
        entry: Some(entry.clone()),
    };
    let decided = deciding.await;
    undecided.entry = None;
    decided
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        tunnel::connect(&shared, req).await
    } else {
        forward::forward(&shared, req).await
    }
}

/// The status and decision of a refusal (`403`), a time limit (`504`), a
/// request the proxy cannot serve (`400`) or a failure (`502`).
fn verdict(e: &EgressError) -> (StatusCode, ProxyDecision) {
    match e {
        EgressError::Timeout { .. } => (StatusCode::GATEWAY_TIMEOUT, ProxyDecision::Error),
        EgressError::InvalidUrl { .. }
        | EgressError::UrlTooLong { .. }
        | EgressError::BadRequest { .. } => (StatusCode::BAD_REQUEST, ProxyDecision::Deny),
        _ if e.is_refusal() => (StatusCode::FORBIDDEN, ProxyDecision::Deny),
        _ => (StatusCode::BAD_GATEWAY, ProxyDecision::Error),
    }
}

/// Writes `e` into `entry` (decision, rule, reason, outcome).
fn record(entry: &mut ProxyEntry, e: &EgressError) {
    let (_, decision) = verdict(e);
    entry.decision = decision;
    e.rule().clone_into(&mut entry.rule);
    entry.reason = e.to_string();
    entry.outcome = match decision {
        ProxyDecision::Error => ProxyOutcome::Failed,
        _ => ProxyOutcome::Done,
    };
}

/// The answer to a refusal or failure: its status, `deny` or `error` and
/// the rule in the body and headers; the connection closes after it.
fn answer<B>(e: &EgressError) -> Response<Either<B, Full<Bytes>>> {
    let (status, decision) = verdict(e);
    let body = format!("agentcaps proxy: {decision} [{}] {e}\n", e.rule());
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
    if let Ok(decision) = HeaderValue::from_str(&decision.to_string()) {
        headers.insert(HeaderName::from_static("x-agentcaps-decision"), decision);
    }
    response
}

/// A refusal or failure decided before anything was dialled: logged
/// finished, and answered.
fn refusal<B>(
    shared: &Shared,
    mut entry: ProxyEntry,
    e: &EgressError,
) -> Response<Either<B, Full<Bytes>>> {
    record(&mut entry, e);
    shared.log.push(entry);
    answer(e)
}

/// A failure after the decision to allow (the entry is logged already):
/// completed, and answered.
fn failed<B>(
    logged: Logged,
    address: Option<SocketAddr>,
    e: &EgressError,
) -> Response<Either<B, Full<Bytes>>> {
    let mut outcome = ProxyOutcome::Failed;
    logged.update(|entry| {
        record(entry, e);
        if address.is_some() {
            entry.address = address;
        }
        outcome = entry.outcome;
    });
    logged.close(outcome);
    answer(e)
}

/// A refusal of `url` by its judgement, logged under the host as a verdict
/// names it (`0177.0.0.3` as `127.0.0.3`), however it was spelled.
fn refused_url(
    shared: &Shared,
    mut entry: ProxyEntry,
    url: &str,
    e: &EgressError,
) -> Response<ProxyBody> {
    if let Some(host) = EgressPolicy::normalized_host(url) {
        entry.host = host;
    }
    refusal(shared, entry, e)
}

fn entry(kind: ProxyKind, method: &Method, host: &str, port: u16) -> ProxyEntry {
    ProxyEntry::new(kind, method.as_str(), host, port)
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
            match TcpStream::connect(crate::address::dial_address(*addr)).await {
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
            limit_ms: millis(limit),
        })?
}
