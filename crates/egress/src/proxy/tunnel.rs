//! `CONNECT` through the proxy: the target judged like an `https://` URL,
//! logged, the judged address dialled before the `200`, then the tunnel
//! carried ([`inside`](super::inside): TLS relayed, cleartext HTTP judged).

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use super::inside::{self, Target};
use super::log::ProxyKind;
use super::wire::Wire;
use super::{ProxyBody, Shared, before_decision, dial, entry, failed, judge, refusal, refused_url};
use crate::error::EgressError;

/// `CONNECT host:port`: judged as `https://host:port/` (every rule but
/// the method, which travels inside the tunnel); the judged address is
/// dialled before the `200` is sent, then bytes are relayed both ways.
pub(crate) async fn connect(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
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
        Err(e) => return refused_url(shared, log, &url, &e),
    };
    log.host = verdict.host();
    let addrs = match before_decision(shared, &log, judge(shared, &verdict)).await {
        Ok(a) => a,
        Err(e) => return refusal(shared, log, &e),
    };
    let host = log.host.clone();
    if shared.terminator.as_ref().is_some_and(|t| t.binds(&host)) {
        return super::terminate::connect(shared, req, &verdict, addrs, shared.log.open(log));
    }
    // Decided: logged before anything is dialled.
    let logged = shared.log.open(log);
    let (upstream, addr) = match dial(shared, &host, &url, &addrs).await {
        Ok(c) => c,
        Err(e) => return failed(logged, None, &e),
    };
    logged.update(|e| e.address = Some(addr));
    let shared = shared.clone();
    tokio::spawn(async move {
        // A client that left before the `200`: the handle's drop says so.
        let Ok(upgraded) = hyper::upgrade::on(req).await else {
            return;
        };
        logged.update(|e| e.status = Some(200));
        let upstream = Wire::new(upstream, logged.bytes().clone());
        let target = Target {
            host,
            port: verdict.port(),
        };
        let outcome = inside::carry(&shared, TokioIo::new(upgraded), upstream, &target).await;
        logged.close(outcome);
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
