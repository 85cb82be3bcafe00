//! `CONNECT` to a host a credential is bound to: the proxy ends the TLS
//! session itself, with a leaf certificate from the run's own certificate
//! authority (which commands are told to trust), and re-sends each request
//! with the egress client — over TLS verified against the real roots, to
//! the address judged when the tunnel opened — after putting the real
//! value in place of each placeholder in the request headers.
//!
//! Before anything is sent, each request must name the tunnel's host
//! (TLS server name, `Host`, an absolute target), pass the method and
//! header rules, and carry placeholders only of credentials bound to its
//! host, method and path (`credential-unbound` otherwise). Tunnels to any
//! other host are never opened here: they stay opaque.

use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::HOST;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt as _, Either, Full, Limited};
use hyper::body::{Body, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio_rustls::TlsAcceptor;

use super::forward::{judge_headers, strip_hop_by_hop, upgrade_asked};
use super::inside::{self, Target};
use super::log::{Logged, ProxyEntry, ProxyKind, ProxyOutcome};
use super::wire::Wire;
use super::{ProxyBody, Shared, dial, failed, refusal, server_builder, unreadable};
use crate::credentials::authority::Authority;
use crate::credentials::{Destination, RunCredentials};
use crate::error::{CredentialRule, EgressError};
use crate::policy::{EgressPolicy, UrlVerdict};
use tokio::io::AsyncReadExt as _;

/// The variables that point programs at a CA bundle. npm's
/// `npm_config_cafile` is among them because npm, given a `cafile` (as
/// distributions' global npmrc commonly sets it), trusts that file alone
/// and ignores `NODE_EXTRA_CA_CERTS`; the variable outranks every npmrc.
pub const CA_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "PIP_CERT",
    "npm_config_cafile",
];

/// What a proxy with credentials gives the command it serves: the
/// placeholders (never the values) and the certificate of its per-run
/// authority (never its key).
#[derive(Debug, Clone)]
pub struct CredentialSession {
    run: RunCredentials,
    ca_pem: String,
    /// The policy's extra roots, PEM.
    roots_pem: String,
}

impl CredentialSession {
    /// The run's credentials and their placeholders.
    #[must_use]
    pub fn credentials(&self) -> &RunCredentials {
        &self.run
    }

    /// The per-run CA certificate, PEM.
    #[must_use]
    pub fn ca_certificate_pem(&self) -> &str {
        &self.ca_pem
    }

    /// What a command must trust besides the system's roots: the policy's
    /// extra roots (`root_certificates`, which the opaque tunnels reach)
    /// and the per-run CA certificate, PEM.
    #[must_use]
    pub fn extra_roots_pem(&self) -> String {
        format!("{}{}", self.roots_pem, self.ca_pem)
    }

    /// The command's variables: each credential's placeholder (and git's
    /// `extraHeader` for its hosts), and every [`CA_VARIABLES`] name set to
    /// `bundle`, the path (as the command sees it) of a file holding the
    /// system roots, the policy's `root_certificates` and this CA.
    #[must_use]
    pub fn environment(&self, bundle: &str) -> Vec<(String, String)> {
        let mut env = self.run.environment();
        for name in CA_VARIABLES {
            env.push(((*name).to_owned(), bundle.to_owned()));
        }
        env
    }
}

/// The terminating side of a proxy with credentials.
pub(super) struct Terminator {
    session: CredentialSession,
    authority: Authority,
}

impl Terminator {
    /// For a policy with credentials: new placeholders and a new CA.
    pub(super) fn new(policy: &EgressPolicy) -> Result<Option<Terminator>, EgressError> {
        if policy.credentials().is_empty() {
            return Ok(None);
        }
        let run = RunCredentials::new(policy.credentials())?.with_ports(&policy.allowed_ports());
        let authority = Authority::new()?;
        Ok(Some(Terminator {
            session: CredentialSession {
                run,
                ca_pem: authority.certificate_pem(),
                roots_pem: policy
                    .extra_roots
                    .iter()
                    .map(|der| crate::credentials::pem_certificate(der))
                    .collect(),
            },
            authority,
        }))
    }

    pub(super) fn session(&self) -> &CredentialSession {
        &self.session
    }

    pub(super) fn binds(&self, host: &str) -> bool {
        self.session.run.binds(host)
    }
}

/// A request that must carry no placeholder (cleartext HTTP): refused when
/// it does, with the credential's name.
pub(super) fn cleartext(shared: &Shared, headers: &HeaderMap, host: &str) -> Option<EgressError> {
    let found = shared.terminator.as_ref()?.session.run.found_in(headers)?;
    Some(EgressError::Credential {
        name: found.name().to_owned(),
        host: host.to_owned(),
        rule: CredentialRule::Cleartext,
    })
}

/// A refusal because of a credential: logged with its name.
pub(super) fn refused_credential<B>(
    shared: &Shared,
    mut log: ProxyEntry,
    e: &EgressError,
) -> Response<Either<B, Full<Bytes>>> {
    if let EgressError::Credential { name, .. } = e {
        log.credential = Some(name.clone());
    }
    refusal(shared, log, e)
}

fn same_host(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
}

/// A tunnel to a bound host, decided and logged (`logged`): answered `200`,
/// then its TLS ended here and its requests served one by one.
pub(super) fn connect(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
    verdict: &UrlVerdict,
    addrs: Vec<SocketAddr>,
    logged: Logged,
) -> Response<ProxyBody> {
    let shared = shared.clone();
    let host = verdict.host();
    let port = verdict.port();
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(req).await else {
            return;
        };
        logged.update(|e| e.status = Some(200));
        let ips: Vec<IpAddr> = addrs.iter().map(SocketAddr::ip).collect();
        let tunnel = Tunnel {
            shared: shared.clone(),
            host,
            port,
            ips,
        };
        let outcome = match read_ahead(&shared, TokioIo::new(upgraded)).await {
            Err(outcome) => outcome,
            Ok(client) if client.1 => tunnel.serve(client.0).await,
            // Cleartext HTTP to a bound host: judged request by request as
            // in any tunnel (a placeholder is refused there).
            Ok((client, _)) => {
                let url = format!("https://{}:{}/", tunnel.host, tunnel.port);
                match dial(&shared, &tunnel.host, &url, &addrs).await {
                    Ok((upstream, addr)) => {
                        logged.update(|e| e.address = Some(addr));
                        let upstream = Wire::new(upstream, logged.bytes().clone());
                        let target = Target {
                            host: tunnel.host.clone(),
                            port: tunnel.port,
                        };
                        inside::judged_http(&shared, client, upstream, &target).await
                    }
                    Err(_) => ProxyOutcome::Failed,
                }
            }
        };
        logged.close(outcome);
    });
    Response::new(Either::Right(Full::new(Bytes::new())))
}

/// The tunnel's first bytes, read ahead (given back first), and whether
/// they start TLS; how it ended when nothing came.
async fn read_ahead(
    shared: &Shared,
    mut client: inside::Client,
) -> Result<(Wire<inside::Client>, bool), ProxyOutcome> {
    let limit = shared.policy().header_timeout;
    let mut ahead = Vec::with_capacity(64);
    let first = tokio::time::timeout(limit, async {
        while ahead.len() < inside::AHEAD {
            if client.read_buf(&mut ahead).await? == 0 {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    match first {
        Err(_) => Err(ProxyOutcome::Done),
        Ok(Err(_)) => Err(ProxyOutcome::ClientClosed),
        Ok(Ok(())) if ahead.is_empty() => Err(ProxyOutcome::Done),
        Ok(Ok(())) => {
            let tls = inside::is_tls(&ahead);
            Ok((Wire::ahead(ahead, client), tls))
        }
    }
}

struct Tunnel {
    shared: Arc<Shared>,
    host: String,
    port: u16,
    ips: Vec<IpAddr>,
}

type InnerBody = Either<Counted, Full<Bytes>>;

impl Tunnel {
    fn entry(&self, method: &str) -> ProxyEntry {
        ProxyEntry::new(ProxyKind::Connect, method, &self.host, self.port)
    }

    fn mismatch(&self, other: &str) -> EgressError {
        EgressError::Credential {
            name: String::new(),
            host: self.host.clone(),
            rule: CredentialRule::HostMismatch(other.to_owned()),
        }
    }

    async fn serve(self, io: Wire<inside::Client>) -> ProxyOutcome {
        let Some(terminator) = &self.shared.terminator else {
            return ProxyOutcome::Failed;
        };
        let config = match terminator.authority.server_config(&self.host) {
            Ok(c) => c,
            Err(e) => {
                let _ = refusal::<Full<Bytes>>(&self.shared, self.entry(""), &e);
                return ProxyOutcome::Failed;
            }
        };
        let limit = self.shared.policy().header_timeout;
        let tls = match tokio::time::timeout(limit, TlsAcceptor::from(config).accept(io)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(_)) => return ProxyOutcome::ClientClosed,
            Err(_) => return ProxyOutcome::Done,
        };
        let sni = tls.get_ref().1.server_name().unwrap_or_default().to_owned();
        if !same_host(&sni, &self.host) {
            let _ = refusal::<Full<Bytes>>(&self.shared, self.entry(""), &self.mismatch(&sni));
            return ProxyOutcome::Done;
        }
        let this = Arc::new(self);
        let serving = this.clone();
        let service = service_fn(move |req| {
            let tunnel = serving.clone();
            async move { Ok::<_, std::convert::Infallible>(tunnel.request(req).await) }
        });
        let (tls, unanswered) = super::wire::Wire::heard(tls);
        let served = server_builder(&this.shared)
            .serve_connection(TokioIo::new(tls), service)
            .await;
        match served {
            Ok(()) => ProxyOutcome::Done,
            Err(e) => {
                unreadable(
                    &this.shared,
                    this.entry(""),
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

    /// The host a request names (its `Host`, or an absolute target), when
    /// it is not the tunnel's.
    fn other_host(&self, req: &Request<Incoming>) -> Option<String> {
        let named = req
            .uri()
            .authority()
            .map(|a| a.as_str().to_owned())
            .or_else(|| {
                req.headers()
                    .get(HOST)
                    .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
            })?;
        let (name, port) = match named.rsplit_once(':') {
            Some((n, p)) if !n.ends_with(']') || n.starts_with('[') => (n, p.parse().ok()),
            _ => (named.as_str(), None),
        };
        let same = same_host(name, &self.host) && port.is_none_or(|p: u16| p == self.port);
        (!same).then_some(named)
    }

    /// One request inside the tunnel: judged, its placeholders swapped,
    /// sent with the egress client to the pinned address.
    async fn request(&self, req: Request<Incoming>) -> Response<InnerBody> {
        let shared = &*self.shared;
        let mut log = self.entry(req.method().as_str());
        if let Some(other) = self.other_host(&req) {
            return refusal(shared, log, &self.mismatch(&other));
        }
        let target = req
            .uri()
            .path_and_query()
            .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
        let url = format!("https://{}:{}{target}", self.host, self.port);
        let verdict = match shared.policy().check_url(&url, req.method()) {
            Ok(v) => v,
            Err(e) => return refusal(shared, log, &e),
        };
        if let Some(protocol) = upgrade_asked(req.headers(), &[]) {
            return refusal(shared, log, &EgressError::Upgrade { url, protocol });
        }
        let (mut parts, body) = req.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.remove(HOST);
        if let Err(e) = judge_headers(shared, &parts.headers) {
            return refusal(shared, log, &e);
        }
        let Some(terminator) = &shared.terminator else {
            return refusal(shared, log, &self.mismatch(""));
        };
        let run = &terminator.session.run;
        log.credential = run.found_in(&parts.headers).map(|c| c.name().to_owned());
        let to = Destination {
            host: &self.host,
            method: &parts.method,
            target: &target,
            tls: true,
        };
        let headers = match run.rewrite(&parts.headers, &to) {
            Ok(h) => h,
            Err(e) => return refused_credential(shared, log, &e),
        };
        let max = shared.policy().max_request_bytes;
        let body = match Limited::new(body, max).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                let e = EgressError::RequestTooLarge { len: max + 1, max };
                return refusal(shared, log, &e);
            }
        };
        let logged = shared.log.open(log);
        logged.bytes().add_sent(body.len());
        match shared
            .client
            .exchange_at(&verdict, &self.ips, &headers, &body)
            .await
        {
            Ok((response, hop)) => {
                logged.update(|e| {
                    e.address = Some(hop.address);
                    e.status = Some(response.status().as_u16());
                });
                let (mut parts, body) = response.into_parts();
                strip_hop_by_hop(&mut parts.headers);
                parts.version = http::Version::HTTP_11;
                Response::from_parts(
                    parts,
                    Either::Left(Counted {
                        body,
                        logged: Some(logged),
                    }),
                )
            }
            Err(e) => failed(logged, None, &e),
        }
    }
}

/// A response body relayed from upstream, counted into its log entry,
/// which is closed at its end (or when the client leaves first).
struct Counted {
    body: Incoming,
    logged: Option<Logged>,
}

impl Body for Counted {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        match &frame {
            Poll::Ready(Some(Ok(f))) => {
                if let (Some(data), Some(logged)) = (f.data_ref(), &this.logged) {
                    logged.bytes().add_received(data.len());
                }
            }
            Poll::Ready(None) => {
                if let Some(logged) = this.logged.take() {
                    logged.close(ProxyOutcome::Done);
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(logged) = this.logged.take() {
                    logged.close(ProxyOutcome::Failed);
                }
            }
            Poll::Pending => {}
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

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(logged) = self.logged.take()
            && self.body.is_end_stream()
        {
            logged.close(ProxyOutcome::Done);
        }
    }
}
