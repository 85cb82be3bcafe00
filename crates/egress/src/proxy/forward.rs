//! Plain HTTP through the proxy: an absolute-form `http://` request
//! judged, sent on a pooled or new connection to a judged address, and the
//! response streamed back. The upstream connection is driven by the task
//! that serves the client's connection, as the response is read.
//!
//! An idempotent request without a body is sent once more, on a fresh
//! connection, when a pooled one fails before any byte of the response
//! came (the server closed it as the request arrived: a race every
//! keep-alive client meets). Nothing else is sent twice.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use http::header::{CONNECTION, HOST, HeaderName, HeaderValue, UPGRADE};
use http::request::Parts;
use http::{Method, Request, Response, Uri};
use http_body_util::{Either, Empty};
use hyper::body::{Body, Incoming};
use hyper::client::conn::http1 as client_http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::log::{Bytes, Logged, ProxyKind, ProxyOutcome};
use super::wire::Wire;
use super::{
    MAX_RESPONSE_HEADERS, ProxyBody, Shared, before_decision, dial, entry, failed, judge, refusal,
    refused_url,
};
use crate::error::{EgressError, Phase};
use crate::headers::judge_meaning;
use crate::policy::UrlVerdict;

/// Idle upstream connections kept per (host, port, address).
const MAX_IDLE_PER_KEY: usize = 16;

/// Upstream keys pooled at most.
const MAX_POOL_KEYS: usize = 256;

/// Where upstream connections are kept between requests: keyed by the
/// host asked for *and* the judged address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct UpstreamKey {
    host: String,
    port: u16,
    addr: SocketAddr,
}

/// The bytes of data in a polled body frame (0 for anything else).
fn data_len<E>(frame: &Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, E>>>) -> usize {
    match frame {
        Poll::Ready(Some(Ok(f))) => f.data_ref().map_or(0, bytes::Bytes::len),
        _ => 0,
    }
}

/// A request body as sent upstream: the client's, counted as it goes, or
/// none (a request that may be sent twice).
pub(crate) type Outgoing = Either<Sent, Empty<bytes::Bytes>>;

type Connection = client_http1::Connection<TokioIo<Wire<TcpStream>>, Outgoing>;

/// The client's request body, its bytes counted into the log as they go.
pub(crate) struct Sent {
    body: Incoming,
    bytes: Arc<Bytes>,
}

impl Body for Sent {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        this.bytes.add_sent(data_len(&frame));
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// An upstream connection: the handle requests are sent on and the
/// connection itself, driven by the task serving the client's connection
/// while a request and its response pass (no hand-off between tasks for
/// each piece of a body), and kept idle in the pool between requests.
pub(crate) struct Upstream {
    sender: client_http1::SendRequest<Outgoing>,
    connection: Connection,
    /// What the connection's stream carried so far.
    wire: Arc<Bytes>,
}

impl Upstream {
    /// HTTP/1 on a new connection.
    async fn handshake(stream: TcpStream) -> Result<Upstream, hyper::Error> {
        let wire = Arc::new(Bytes::default());
        let (sender, connection) = client_http1::Builder::new()
            .max_headers(MAX_RESPONSE_HEADERS)
            .handshake(TokioIo::new(Wire::new(stream, wire.clone())))
            .await?;
        Ok(Upstream {
            sender,
            connection,
            wire,
        })
    }

    /// Bytes read from the connection so far.
    fn received(&self) -> u64 {
        self.wire
            .received
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Lets the connection take in what happened while it sat idle (a close
    /// by the server, the end of the last response); still usable?
    fn usable(&mut self) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        if Pin::new(&mut self.connection).poll(&mut cx).is_ready() {
            return false;
        }
        !self.sender.is_closed()
    }

    /// Sends `request` and drives the connection until the response head
    /// has come.
    async fn exchange(&mut self, request: Request<Outgoing>) -> Result<Response<Incoming>, String> {
        let Upstream {
            sender, connection, ..
        } = self;
        let mut ended = false;
        let mut drive = |cx: &mut Context<'_>| {
            if !ended && Pin::new(&mut *connection).poll(cx).is_ready() {
                ended = true;
            }
            ended
        };
        std::future::poll_fn(|cx| {
            let ended = drive(cx);
            match sender.poll_ready(cx) {
                Poll::Pending if ended => Poll::Ready(Err("the connection closed".to_owned())),
                Poll::Pending => Poll::Pending,
                Poll::Ready(r) => Poll::Ready(r.map_err(|e| e.to_string())),
            }
        })
        .await?;
        let mut sending = std::pin::pin!(sender.send_request(request));
        std::future::poll_fn(|cx| {
            if let Poll::Ready(r) = sending.as_mut().poll(cx) {
                return Poll::Ready(r.map_err(|e| e.to_string()));
            }
            let ended = drive(cx);
            match sending.as_mut().poll(cx) {
                Poll::Pending if ended => Poll::Ready(Err(
                    "the connection closed before the response came".to_owned(),
                )),
                other => other.map_err(|e| e.to_string()),
            }
        })
        .await
    }
}

/// A response body streamed from upstream, the upstream connection driven
/// as it is read; at its end the connection goes back to the pool.
pub(crate) struct Relayed {
    body: Incoming,
    upstream: Option<Upstream>,
    /// The upstream connection has ended (closed or failed).
    ended: bool,
    /// The whole body went through.
    finished: bool,
    home: Option<(Arc<Shared>, UpstreamKey)>,
    /// The log entry, completed when the body ends or is dropped.
    logged: Option<Logged>,
}

impl Body for Relayed {
    type Data = bytes::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let mut frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Some(up) = this.upstream.as_mut().filter(|_| !this.ended) {
            // Pending: the connection reads the next piece now. Ready: it
            // reads the one after while this one is written to the client
            // (without it, reading upstream and writing to the client took
            // turns, and a download ran about a fifth slower).
            if Pin::new(&mut up.connection).poll(cx).is_ready() {
                this.ended = true;
            }
            if frame.is_pending() {
                frame = Pin::new(&mut this.body).poll_frame(cx);
            }
        }
        if let Poll::Ready(None) = frame {
            this.finished = true;
        }
        if let Some(logged) = &this.logged {
            logged.bytes().add_received(data_len(&frame));
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Relayed {
    fn drop(&mut self) {
        // Kept only when the whole body went through and the connection is
        // still open; otherwise it closes here.
        let whole = self.finished || self.body.is_end_stream();
        if let Some(logged) = self.logged.take() {
            if whole {
                logged.close(ProxyOutcome::Done);
            } else if self.ended {
                logged.close(ProxyOutcome::Failed);
            }
            // Otherwise the client went away first: the handle's drop says so.
        }
        if let (Some(up), Some((shared, key)), false, true) =
            (self.upstream.take(), self.home.take(), self.ended, whole)
        {
            shared.pool.checkin(key, up);
        }
    }
}

#[derive(Default)]
pub(crate) struct UpstreamPool {
    idle: Mutex<HashMap<UpstreamKey, Vec<Upstream>>>,
}

impl UpstreamPool {
    fn checkout(&self, key: &UpstreamKey) -> Option<Upstream> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let list = idle.get_mut(key)?;
        while let Some(mut up) = list.pop() {
            if up.usable() {
                return Some(up);
            }
        }
        None
    }

    fn checkin(&self, key: UpstreamKey, up: Upstream) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() >= MAX_POOL_KEYS && !idle.contains_key(&key) {
            idle.retain(|_, list| {
                list.retain_mut(Upstream::usable);
                !list.is_empty()
            });
            if idle.len() >= MAX_POOL_KEYS {
                return;
            }
        }
        let list = idle.entry(key).or_default();
        // Idle connections are not driven: let those the server closed go.
        list.retain_mut(Upstream::usable);
        if list.len() < MAX_IDLE_PER_KEY {
            list.push(up);
        }
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

pub(crate) fn strip_hop_by_hop(headers: &mut http::HeaderMap) {
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
/// answer), logged, sent on a pooled or new connection to a judged
/// address, and the response streamed back as it comes.
pub(crate) async fn forward(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
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
        Err(e) => return refused_url(shared, log, &uri, &e),
    };
    log.host = verdict.host();
    log.port = verdict.port();
    if let Some(protocol) = upgrade_asked(&parts.headers, &[]) {
        let e = EgressError::Upgrade {
            url: verdict.url().to_owned(),
            protocol,
        };
        return refusal(shared, log, &e);
    }
    strip_hop_by_hop(&mut parts.headers);
    if let Err(e) = judge_headers(shared, &parts.headers) {
        return refusal(shared, log, &e);
    }
    if let Some(e) = super::terminate::cleartext(shared, &parts.headers, &log.host) {
        return super::terminate::refused_credential(shared, log, &e);
    }
    let addrs = match before_decision(shared, &log, judge(shared, &verdict)).await {
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
    let host = log.host.clone();
    // Decided: logged before anything is dialled.
    let logged = shared.log.open(log);
    let again = (idempotent(&parts.method) && body.is_end_stream()).then(|| copy_head(&parts));
    let body = if again.is_some() {
        Either::Right(Empty::new())
    } else {
        Either::Left(Sent {
            body,
            bytes: logged.bytes().clone(),
        })
    };
    let request = Request::from_parts(parts, body);
    match send(shared, &verdict, &host, &addrs, request, again, &logged).await {
        Ok((response, addr, upstream)) => {
            logged.update(|e| e.status = Some(response.status().as_u16()));
            let key = upstream_key(&verdict, &host, addr);
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            let body = Relayed {
                body,
                upstream: Some(upstream),
                ended: false,
                finished: false,
                home: Some((shared.clone(), key)),
                logged: Some(logged),
            };
            Response::from_parts(parts, Either::Left(body))
        }
        Err((e, addr)) => failed(logged, addr, &e),
    }
}

/// The method and header rules on a request's headers (hop-by-hop ones
/// already removed).
pub(crate) fn judge_headers(shared: &Shared, headers: &http::HeaderMap) -> Result<(), EgressError> {
    for (name, value) in headers {
        judge_meaning(name, value, &shared.policy().methods)?;
    }
    Ok(())
}

/// The protocol an `Upgrade` header asks for, unless every one it names is
/// `h2c` (dropped with the other hop-by-hop headers: the server answers in
/// HTTP/1.1) or in `relayed`.
pub(crate) fn upgrade_asked(headers: &http::HeaderMap, relayed: &[&str]) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(UPGRADE)
        .iter()
        .map(|v| v.to_str().unwrap_or("?"))
        .collect();
    let other = values.iter().flat_map(|v| v.split(',')).any(|p| {
        let name = p.trim().split('/').next().unwrap_or_default();
        !name.eq_ignore_ascii_case("h2c") && !relayed.iter().any(|r| name.eq_ignore_ascii_case(r))
    });
    other.then(|| values.join(", "))
}

/// Methods a server must treat as the same request when it comes twice.
fn idempotent(method: &Method) -> bool {
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::TRACE,
        Method::PUT,
        Method::DELETE,
    ]
    .contains(method)
}

/// The head of a request, for sending it again.
fn copy_head(parts: &Parts) -> Parts {
    let mut copy = Request::new(());
    *copy.method_mut() = parts.method.clone();
    *copy.uri_mut() = parts.uri.clone();
    *copy.version_mut() = parts.version;
    *copy.headers_mut() = parts.headers.clone();
    copy.into_parts().0
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

type Exchanged =
    Result<(Response<Incoming>, SocketAddr, Upstream), (EgressError, Option<SocketAddr>)>;

/// Sends on an idle pooled connection to one of the judged addresses, or
/// dials one; waits `header_timeout_ms` for the head. `again`: the head of
/// a request that may be sent once more (without a body) on a fresh
/// connection when the pooled one fails before any response byte. The
/// address in use goes into the log entry as soon as it is.
async fn send(
    shared: &Shared,
    verdict: &UrlVerdict,
    host: &str,
    addrs: &[SocketAddr],
    request: Request<Outgoing>,
    again: Option<Parts>,
    logged: &Logged,
) -> Exchanged {
    let pooled = addrs.iter().find_map(|a| {
        shared
            .pool
            .checkout(&upstream_key(verdict, host, *a))
            .map(|s| (*a, s))
    });
    let request = match pooled {
        None => request,
        Some((addr, mut up)) => {
            logged.update(|e| e.address = Some(addr));
            let before = up.received();
            match exchange(shared, verdict, &mut up, request).await {
                Ok(response) => return Ok((response, addr, up)),
                Err(e) => match again {
                    Some(head)
                        if up.received() == before && !matches!(e, EgressError::Timeout { .. }) =>
                    {
                        Request::from_parts(head, Either::Right(Empty::new()))
                    }
                    _ => return Err((e, Some(addr))),
                },
            }
        }
    };
    let (stream, addr) = dial(shared, host, verdict.url(), addrs)
        .await
        .map_err(|e| (e, None))?;
    logged.update(|e| e.address = Some(addr));
    let mut up = Upstream::handshake(stream)
        .await
        .map_err(|e| (http_error(verdict, &e.to_string()), Some(addr)))?;
    match exchange(shared, verdict, &mut up, request).await {
        Ok(response) => Ok((response, addr, up)),
        Err(e) => Err((e, Some(addr))),
    }
}

/// One exchange on `up`, within `header_timeout_ms`.
async fn exchange(
    shared: &Shared,
    verdict: &UrlVerdict,
    up: &mut Upstream,
    request: Request<Outgoing>,
) -> Result<Response<Incoming>, EgressError> {
    let limit = shared.policy().header_timeout;
    tokio::time::timeout(limit, up.exchange(request))
        .await
        .map_err(|_| EgressError::Timeout {
            url: verdict.url().to_owned(),
            phase: Phase::Headers,
            limit_ms: super::millis(limit),
        })?
        .map_err(|e| http_error(verdict, &e))
}

fn upstream_key(verdict: &UrlVerdict, host: &str, addr: SocketAddr) -> UpstreamKey {
    UpstreamKey {
        host: host.to_owned(),
        port: verdict.port(),
        addr,
    }
}

fn http_error(verdict: &UrlVerdict, message: &str) -> EgressError {
    EgressError::Http {
        url: verdict.url().to_owned(),
        message: message.to_owned(),
    }
}
