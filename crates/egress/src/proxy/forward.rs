//! Plain HTTP through the proxy: an absolute-form `http://` request
//! judged, sent on a pooled or new connection to a judged address, and the
//! response streamed back.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use http::header::{CONNECTION, HOST, HeaderName, HeaderValue};
use http::{Request, Response, Uri};
use http_body_util::Either;
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper_util::rt::TokioIo;

use super::log::ProxyKind;
use super::{ProxyBody, Shared, dial, entry, judge, refusal};
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

#[derive(Default)]
pub(crate) struct UpstreamPool {
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
