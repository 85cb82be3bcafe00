//! What a `CONNECT` tunnel carries, told apart by its first bytes.
//!
//! A TLS handshake record (`16 03 0x`) is relayed as it is, unread: the
//! method and headers travel encrypted and the tunnel's target was judged.
//! Anything else is read as cleartext HTTP/1 — the only other protocol a
//! tunnel carries — and each request is judged by the method and header
//! rules of a forwarded request before it is passed to the tunnel's
//! target; a refused one is answered `403` inside the tunnel and logged,
//! and bytes that are not HTTP are answered `400` and logged (an upstream
//! server might have read them as a request the rules never saw). A
//! websocket upgrade is relayed (after its `101` the bytes are the
//! websocket's); other upgrades are dropped (`h2c`) or refused.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONNECTION, HeaderValue, UPGRADE};
use http::{Request, Response, StatusCode};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1 as client_http1;
use hyper::service::service_fn;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::forward::{judge_headers, strip_hop_by_hop, upgrade_asked};
use super::log::{ProxyEntry, ProxyKind, ProxyOutcome};
use super::wire::Wire;
use super::{MAX_RESPONSE_HEADERS, Shared, answer, refusal, relay, server_builder, unreadable};
use crate::error::{EgressError, Phase};

/// Bytes read ahead to tell TLS from HTTP.
pub(super) const AHEAD: usize = 3;

/// The only upgrade relayed inside a tunnel.
const WEBSOCKET: &str = "websocket";

/// Where a tunnel goes (judged already).
pub(super) struct Target {
    pub(super) host: String,
    pub(super) port: u16,
}

pub(super) type Client = TokioIo<Upgraded>;

type InnerBody = Either<Incoming, Full<Bytes>>;

/// Carries a tunnel to its end; how it ended.
pub(super) async fn carry(
    shared: &Arc<Shared>,
    mut client: Client,
    mut upstream: Wire<TcpStream>,
    target: &Target,
) -> ProxyOutcome {
    let limit = shared.policy().header_timeout;
    let mut ahead = Vec::with_capacity(64);
    let first = tokio::time::timeout(limit, async {
        while ahead.len() < AHEAD {
            if client.read_buf(&mut ahead).await? == 0 {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    match first {
        // Nothing in time: nothing was sent upstream either.
        Err(_) => return ProxyOutcome::Done,
        Ok(Err(_)) => return ProxyOutcome::ClientClosed,
        Ok(Ok(())) if ahead.is_empty() => return ProxyOutcome::Done,
        Ok(Ok(())) => {}
    }
    let tls = is_tls(&ahead);
    let mut client = Wire::ahead(ahead, client);
    if tls {
        return match relay::relay(&mut client, &mut upstream).await {
            Ok(()) => ProxyOutcome::Done,
            Err(_) => ProxyOutcome::Failed,
        };
    }
    judged_http(shared, client, upstream, target).await
}

/// A TLS record of the handshake type, versions 3.0 to 3.4 (a ClientHello
/// starts so).
pub(super) fn is_tls(first: &[u8]) -> bool {
    matches!(first, [0x16, 0x03, minor, ..] if *minor <= 4)
}

/// Cleartext HTTP/1 between the client and the tunnel's target, judged
/// request by request.
pub(super) async fn judged_http(
    shared: &Arc<Shared>,
    client: Wire<Client>,
    upstream: Wire<TcpStream>,
    target: &Target,
) -> ProxyOutcome {
    let Ok((sender, connection)) = client_http1::Builder::new()
        .max_headers(MAX_RESPONSE_HEADERS)
        .handshake::<_, Incoming>(TokioIo::new(upstream))
        .await
    else {
        return ProxyOutcome::Failed;
    };
    // The upstream side ends when the sender is dropped or the server
    // closes; an upgraded connection is handed over and relayed.
    tokio::spawn(connection.with_upgrades());
    let sender = Arc::new(Mutex::new(sender));
    let (host, port) = (target.host.clone(), target.port);
    let serving = shared.clone();
    let service = service_fn(move |req| {
        let (shared, sender, host) = (serving.clone(), sender.clone(), host.clone());
        async move { Ok::<_, Infallible>(judged(&shared, &sender, &host, port, req).await) }
    });
    let (client, unanswered) = Wire::heard(client);
    let served = server_builder(shared)
        .serve_connection(TokioIo::new(client), service)
        .with_upgrades()
        .await;
    match served {
        Ok(()) => ProxyOutcome::Done,
        Err(e) => {
            unreadable(
                shared,
                ProxyEntry::new(ProxyKind::Connect, "", &target.host, target.port),
                &e,
                unanswered.load(std::sync::atomic::Ordering::Relaxed),
            );
            if e.is_parse() || e.is_timeout() {
                ProxyOutcome::Done
            } else {
                ProxyOutcome::Failed
            }
        }
    }
}

/// One request inside a tunnel: judged, then sent to the tunnel's target.
async fn judged(
    shared: &Shared,
    sender: &Mutex<client_http1::SendRequest<Incoming>>,
    host: &str,
    port: u16,
    mut req: Request<Incoming>,
) -> Response<InnerBody> {
    let log = ProxyEntry::new(ProxyKind::Connect, req.method().as_str(), host, port);
    let url = format!("http://{host}:{port}{}", req.uri());
    if let Err(e) = shared.policy().check_method(req.method()) {
        return refusal(shared, log, &e);
    }
    if let Some(protocol) = upgrade_asked(req.headers(), &[WEBSOCKET]) {
        return refusal(shared, log, &EgressError::Upgrade { url, protocol });
    }
    let websocket = upgrade_asked(req.headers(), &[]).is_some();
    strip_hop_by_hop(req.headers_mut());
    if let Err(e) = judge_headers(shared, req.headers()) {
        return refusal(shared, log, &e);
    }
    if let Some(e) = super::terminate::cleartext(shared, req.headers(), host) {
        return super::terminate::refused_credential(shared, log, &e);
    }
    let client_side = websocket.then(|| {
        let headers = req.headers_mut();
        headers.insert(UPGRADE, HeaderValue::from_static(WEBSOCKET));
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
        hyper::upgrade::on(&mut req)
    });
    let limit = shared.policy().header_timeout;
    let mut sender = sender.lock().await;
    let sent = tokio::time::timeout(limit, async {
        sender.ready().await?;
        sender.send_request(req).await
    })
    .await;
    let mut response = match sent {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => {
            return answer(&EgressError::Http {
                url,
                message: e.to_string(),
            });
        }
        Err(_) => {
            return answer(&EgressError::Timeout {
                url,
                phase: Phase::Headers,
                limit_ms: super::millis(limit),
            });
        }
    };
    match client_side {
        Some(client_side) if response.status() == StatusCode::SWITCHING_PROTOCOLS => {
            let server_side = hyper::upgrade::on(&mut response);
            tokio::spawn(async move {
                if let (Ok(client), Ok(server)) = tokio::join!(client_side, server_side) {
                    let _ =
                        relay::relay(&mut TokioIo::new(client), &mut TokioIo::new(server)).await;
                }
            });
        }
        _ => strip_hop_by_hop(response.headers_mut()),
    }
    response.map(Either::Left)
}
