//! The client: a request builder, redirects followed and judged hop by
//! hop, resolution by the client itself, connections only to judged
//! addresses.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, LOCATION, USER_AGENT};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Version};
use http_body_util::Full;
use rustls::RootCertStore;
use rustls_pki_types::CertificateDer;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use url::{Position, Url};

use crate::error::{EgressError, Phase, RedirectRule};
use crate::headers::{CREDENTIALS, caller_header, head_size};
use crate::policy::{EgressPolicy, Target, UrlVerdict};
use crate::resolve::DnsResolver;
use crate::response::{Hop, Response};
use crate::transport::{Connector, Pool, PoolKey, ReqBody, Sender};

const DEFAULT_USER_AGENT: &str = concat!("agentcaps-egress/", env!("CARGO_PKG_VERSION"));

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A URL judged with every address its host resolved to
/// ([`Client::resolve_and_check`]); nothing was connected.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResolvedUrl {
    /// The lexical verdict.
    pub verdict: UrlVerdict,
    /// Every address the host resolved to (or the literal), all judged
    /// allowed.
    pub addresses: Vec<IpAddr>,
}

/// Builds a [`Client`]. An extra certificate authority is trusted only
/// through [`danger::add_root_certificate_pem`](crate::danger::add_root_certificate_pem).
#[derive(Debug)]
pub struct ClientBuilder {
    pub(crate) policy: EgressPolicy,
    pub(crate) extra_roots: Vec<CertificateDer<'static>>,
    user_agent: String,
}

impl ClientBuilder {
    /// The `User-Agent` sent when the caller sets none.
    #[must_use]
    pub fn user_agent(mut self, agent: &str) -> Self {
        agent.clone_into(&mut self.user_agent);
        self
    }

    /// Builds the client: its resolver (`dns_servers`, or the system's
    /// name servers), TLS configuration and connection pool.
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] when the system's DNS configuration cannot
    /// be read (and no `dns_servers` are given) or a root is unusable.
    pub fn build(self) -> Result<Client, EgressError> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for cert in self
            .policy
            .extra_roots
            .iter()
            .cloned()
            .chain(self.extra_roots)
        {
            roots.add(cert).map_err(|e| EgressError::Config {
                field: "root_certificate".to_owned(),
                message: e.to_string(),
            })?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| EgressError::Config {
                field: "tls".to_owned(),
                message: e.to_string(),
            })?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let resolver = DnsResolver::new(&self.policy.dns_servers, self.policy.dns_timeout)?;
        let user_agent =
            HeaderValue::from_str(&self.user_agent).map_err(|_| EgressError::Config {
                field: "user_agent".to_owned(),
                message: "not a valid header value".to_owned(),
            })?;
        Ok(Client {
            inner: Arc::new(Inner {
                connector: Connector {
                    tls: TlsConnector::from(Arc::new(tls)),
                    connect_timeout: self.policy.connect_timeout,
                    max_header_bytes: self.policy.max_header_bytes,
                },
                policy: self.policy,
                resolver,
                pool: Pool::default(),
                user_agent,
            }),
        })
    }
}

struct Inner {
    policy: EgressPolicy,
    resolver: DnsResolver,
    connector: Connector,
    pool: Pool,
    user_agent: HeaderValue,
}

/// An HTTP(S) client that judges every URL, every redirect and every
/// resolved address by its [`EgressPolicy`], and connects only to
/// addresses it judged. Cheap to clone (the pool is shared).
///
/// Environment proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`,
/// `NO_PROXY`) are ignored: there is no proxy support at all.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("policy", &self.inner.policy)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with the Web PKI roots.
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::build`].
    pub fn new(policy: EgressPolicy) -> Result<Client, EgressError> {
        Client::builder(policy).build()
    }

    /// A builder, to trust an extra CA or set the user agent.
    #[must_use]
    pub fn builder(policy: EgressPolicy) -> ClientBuilder {
        ClientBuilder {
            policy,
            extra_roots: Vec::new(),
            user_agent: DEFAULT_USER_AGENT.to_owned(),
        }
    }

    /// The policy this client enforces.
    #[must_use]
    pub fn policy(&self) -> &EgressPolicy {
        &self.inner.policy
    }

    /// Starts a request. Nothing is judged or sent until
    /// [`RequestBuilder::send`].
    pub fn request(&self, method: Method, url: &str) -> RequestBuilder {
        RequestBuilder {
            client: self.clone(),
            method,
            url: url.to_owned(),
            headers: Vec::new(),
            body: Bytes::new(),
            idle_timeout: None,
            credential: None,
        }
    }

    /// Starts a `GET`.
    pub fn get(&self, url: &str) -> RequestBuilder {
        self.request(Method::GET, url)
    }

    /// Judges `url` for `method`, resolves its host and judges every
    /// address, without connecting (`agentcaps check url`).
    ///
    /// # Errors
    ///
    /// The first refusal (lexical, or an address with the range it fell
    /// in), or a DNS failure.
    pub async fn resolve_and_check(
        &self,
        url: &str,
        method: &Method,
    ) -> Result<ResolvedUrl, EgressError> {
        let verdict = self.inner.policy.check_url(url, method)?;
        let addresses = self.judged_addresses(&verdict).await?;
        Ok(ResolvedUrl { verdict, addresses })
    }

    /// The judged addresses of a verdict's host: the literal, or every
    /// resolved answer (one denied answer refuses the name).
    pub(crate) async fn judged_addresses(
        &self,
        verdict: &UrlVerdict,
    ) -> Result<Vec<IpAddr>, EgressError> {
        match &verdict.target {
            Target::Ip(ip) => Ok(vec![*ip]),
            Target::Name(name) => {
                let addrs = self.inner.resolver.lookup(name, verdict.url()).await?;
                for addr in &addrs {
                    self.inner.policy.check_address(name, *addr)?;
                }
                Ok(addrs)
            }
        }
    }
}

/// A request being built: headers and a body, then [`RequestBuilder::send`].
#[derive(Debug)]
#[must_use = "a request does nothing until it is sent"]
pub struct RequestBuilder {
    client: Client,
    method: Method,
    url: String,
    headers: Vec<(String, String)>,
    body: Bytes,
    idle_timeout: Option<std::time::Duration>,
    credential: Option<String>,
}

impl RequestBuilder {
    /// Adds the policy's credential `name` the way it says (`inject`), for
    /// a request over TLS to a host, method and path it is bound to; a
    /// redirect elsewhere goes without it. The value is never in an error
    /// or in the response.
    ///
    /// When sent: [`EgressError::Credential`] for a first hop it is not
    /// bound to (nothing is sent), [`EgressError::Config`] for a name the
    /// policy does not have.
    pub fn credential(mut self, name: &str) -> Self {
        self.credential = Some(name.to_owned());
        self
    }

    /// Adds a header. It is judged when the request is sent: CR/LF/NUL,
    /// `Host`, framing and cloud-metadata headers are refused.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// How long this response's body may go without a byte before reading
    /// stops with [`Phase::Idle`] (default: the policy's
    /// `idle_timeout_ms`). The total deadline (`timeout_ms`) still holds:
    /// a model-provider adapter sets a long total deadline and a short
    /// idle one to stream for minutes yet notice a stalled stream.
    pub fn idle_timeout(mut self, idle: std::time::Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// Sets the body (at most `max_request_bytes`).
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }

    /// Sends the request and follows redirects, judging each hop like the
    /// first; returns once the final response's headers have arrived.
    ///
    /// # Errors
    ///
    /// The first refusal (URL, name, address, port, method, header,
    /// redirect, size, time) or failure (DNS, connect, TLS, HTTP).
    ///
    /// # Security
    ///
    /// The URL is parsed once; each hop's host is resolved once and every
    /// answer judged before one of them is dialled; TLS verifies the URL's
    /// host, never the address.
    pub async fn send(self) -> Result<Response, EgressError> {
        let timeout = self.client.inner.policy.timeout;
        let deadline = Instant::now() + timeout;
        let url = self.url.clone();
        match tokio::time::timeout_at(deadline, self.run(deadline)).await {
            Ok(result) => result,
            Err(_) => Err(EgressError::Timeout {
                url,
                phase: Phase::Total,
                limit_ms: millis(timeout),
            }),
        }
    }

    async fn run(self, deadline: Instant) -> Result<Response, EgressError> {
        let inner = &self.client.inner;
        let policy = &inner.policy;
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let (n, v) = caller_header(name, value, &policy.methods)?;
            headers.append(n, v);
        }
        if !headers.contains_key(USER_AGENT) {
            headers.insert(USER_AGENT, inner.user_agent.clone());
        }
        if self.body.len() > policy.max_request_bytes {
            return Err(EgressError::RequestTooLarge {
                len: self.body.len(),
                max: policy.max_request_bytes,
            });
        }
        let mut verdict = policy.check_url(&self.url, &self.method)?;
        let credential = match &self.credential {
            Some(name) => Some(
                policy
                    .credentials()
                    .iter()
                    .find(|c| c.name() == name)
                    .ok_or_else(|| EgressError::Config {
                        field: "credential".to_owned(),
                        message: format!("the policy has no credential `{name}`"),
                    })?,
            ),
            None => None,
        };
        let mut method = self.method.clone();
        let mut body = self.body.clone();
        let mut hops: Vec<Hop> = Vec::new();
        loop {
            let mut sent = std::borrow::Cow::Borrowed(&headers);
            if let Some(credential) = credential
                && let Some((name, value)) =
                    crate::credentials::inject_for(credential, &verdict, hops.is_empty())?
            {
                sent.to_mut().insert(name, value);
            }
            let (response, hop) = self.client.exchange(&verdict, &sent, &body).await?;
            drop(sent);
            let status = response.status();
            hops.push(hop);
            let location = response.headers().get(LOCATION).cloned();
            let redirect = matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308);
            let Some(location) = location.filter(|_| redirect) else {
                let (parts, incoming) = response.into_parts();
                return Ok(Response {
                    status,
                    version: parts.version,
                    headers: parts.headers,
                    hops,
                    body: Some(incoming),
                    read: 0,
                    limit: policy.max_response_bytes,
                    truncated: false,
                    deadline,
                    timeout_ms: millis(policy.timeout),
                    idle: self.idle_timeout.unwrap_or(policy.idle_timeout),
                });
            };
            drop(response);
            let from = verdict.url.clone();
            let refuse = |to: String, rule: RedirectRule| EgressError::Redirect {
                from: from.to_string(),
                to,
                rule,
            };
            // Location is read as UTF-8 (as browsers do); bytes that are
            // not UTF-8 make it unusable rather than silently empty.
            let shown = String::from_utf8_lossy(location.as_bytes()).into_owned();
            let next = std::str::from_utf8(location.as_bytes())
                .ok()
                .and_then(|raw| from.join(raw).ok())
                .ok_or_else(|| refuse(shown, RedirectRule::BadLocation))?;
            let followed = u32::try_from(hops.len()).unwrap_or(u32::MAX);
            if followed > policy.max_redirects {
                return Err(refuse(
                    next.to_string(),
                    RedirectRule::TooMany(policy.max_redirects),
                ));
            }
            if from.scheme() == "https" && next.scheme() == "http" {
                return Err(refuse(next.to_string(), RedirectRule::Downgrade));
            }
            let to_get = status == StatusCode::SEE_OTHER && method != Method::HEAD
                || matches!(status.as_u16(), 301 | 302) && method == Method::POST;
            let same_origin = from.origin() == next.origin();
            if to_get {
                method = Method::GET;
                body = Bytes::new();
                headers.remove(CONTENT_TYPE);
            } else if !body.is_empty() && !same_origin {
                return Err(refuse(next.to_string(), RedirectRule::BodyToOtherOrigin));
            }
            if !same_origin {
                for name in CREDENTIALS {
                    headers.remove(*name);
                }
            }
            verdict = policy.check_parsed(next, &method)?;
        }
    }
}

impl Client {
    /// One request to one judged URL: resolve and judge, pick a pooled
    /// connection or dial a judged address, send, wait for the head.
    async fn exchange(
        &self,
        verdict: &UrlVerdict,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<(http::Response<hyper::body::Incoming>, Hop), EgressError> {
        let addrs = self.judged_addresses(verdict).await?;
        self.exchange_at(verdict, &addrs, headers, body).await
    }

    /// One request to one judged URL at addresses judged already (a
    /// tunnel's, pinned when it was opened): a pooled connection or a new
    /// one to one of them, send, wait for the head. No redirect followed.
    pub(crate) async fn exchange_at(
        &self,
        verdict: &UrlVerdict,
        addrs: &[IpAddr],
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<(http::Response<hyper::body::Incoming>, Hop), EgressError> {
        let inner = &self.inner;
        let keys: Vec<PoolKey> = addrs
            .iter()
            .map(|ip| PoolKey {
                https: verdict.is_https(),
                host: verdict.host(),
                port: verdict.port,
                addr: SocketAddr::new(*ip, verdict.port),
            })
            .collect();
        let pooled = keys
            .iter()
            .find_map(|k| inner.pool.checkout(k).map(|s| (k.clone(), s)));
        let (key, mut sender, mut reused) = match pooled {
            Some((key, sender)) => (key, sender, true),
            None => {
                let (key, sender) = self.dial(&keys, verdict.url()).await?;
                (key, sender, false)
            }
        };
        let mut result = self.send_on(&mut sender, verdict, headers, body).await?;
        if reused && matches!(&result, Err(e) if e.is_canceled()) {
            // The pooled connection closed before the request went out:
            // nothing was sent, so a fresh connection may carry it.
            let (k, s) = self.dial(&keys, verdict.url()).await?;
            sender = s;
            reused = false;
            result = self.send_on(&mut sender, verdict, headers, body).await?;
            return self.finish(result, k, sender, reused, verdict);
        }
        self.finish(result, key, sender, reused, verdict)
    }

    fn finish(
        &self,
        result: Result<http::Response<hyper::body::Incoming>, hyper::Error>,
        key: PoolKey,
        sender: Sender,
        reused: bool,
        verdict: &UrlVerdict,
    ) -> Result<(http::Response<hyper::body::Incoming>, Hop), EgressError> {
        let policy = &self.inner.policy;
        let address = key.addr;
        // HTTP/2 connections are pooled when made; HTTP/1.1 ones go back
        // once their response head is in (ready again after the body).
        if !sender.is_h2() || !reused {
            self.inner.pool.checkin(key, sender);
        }
        let response = result.map_err(|e| {
            if e.is_parse() && e.to_string().contains("too large") {
                EgressError::ResponseHeadersTooLarge {
                    url: verdict.url().to_owned(),
                    max: policy.max_header_bytes,
                }
            } else if e.is_timeout() {
                EgressError::Timeout {
                    url: verdict.url().to_owned(),
                    phase: Phase::Headers,
                    limit_ms: millis(policy.header_timeout),
                }
            } else {
                EgressError::Http {
                    url: verdict.url().to_owned(),
                    message: error_chain(&e),
                }
            }
        })?;
        if head_size(response.headers()) > policy.max_header_bytes {
            return Err(EgressError::ResponseHeadersTooLarge {
                url: verdict.url().to_owned(),
                max: policy.max_header_bytes,
            });
        }
        let hop = Hop {
            url: verdict.url().to_owned(),
            method: verdict.method.clone(),
            status: response.status(),
            address,
            reused,
            version: response.version(),
        };
        Ok((response, hop))
    }

    /// Dials the judged addresses in order until one connects.
    async fn dial(&self, keys: &[PoolKey], url: &str) -> Result<(PoolKey, Sender), EgressError> {
        let mut last = None;
        for key in keys {
            match self.inner.connector.connect(key, url).await {
                Ok(sender) => return Ok((key.clone(), sender)),
                Err(e @ (EgressError::Tls { .. } | EgressError::Header { .. })) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| EgressError::Http {
            url: url.to_owned(),
            message: "no address to connect to".to_owned(),
        }))
    }

    /// Sends on one connection and waits (`header_timeout`) for the head.
    async fn send_on(
        &self,
        sender: &mut Sender,
        verdict: &UrlVerdict,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> Result<Result<http::Response<hyper::body::Incoming>, hyper::Error>, EgressError> {
        let policy = &self.inner.policy;
        let request = build_request(verdict, headers, body, sender.is_h2())?;
        tokio::time::timeout(policy.header_timeout, sender.send(request))
            .await
            .map_err(|_| EgressError::Timeout {
                url: verdict.url().to_owned(),
                phase: Phase::Headers,
                limit_ms: millis(policy.header_timeout),
            })
    }
}

/// Builds the request from the parsed URL (never from the caller's text):
/// origin-form with a `Host` header for HTTP/1.1, absolute for HTTP/2.
fn build_request(
    verdict: &UrlVerdict,
    headers: &HeaderMap,
    body: &Bytes,
    h2: bool,
) -> Result<http::Request<ReqBody>, EgressError> {
    let url: &Url = &verdict.url;
    let target = if h2 {
        &url[..Position::AfterQuery]
    } else {
        &url[Position::BeforePath..Position::AfterQuery]
    };
    let uri: http::Uri =
        target
            .parse()
            .map_err(|e: http::uri::InvalidUri| EgressError::InvalidUrl {
                url: url.to_string(),
                reason: format!("cannot be sent as a request target: {e}"),
            })?;
    let mut request = http::Request::new(Full::new(body.clone()));
    *request.method_mut() = verdict.method.clone();
    *request.uri_mut() = uri;
    *request.headers_mut() = headers.clone();
    if h2 {
        *request.version_mut() = Version::HTTP_2;
    } else {
        let host = &url[Position::BeforeHost..Position::BeforePath];
        let value = HeaderValue::from_str(host).map_err(|_| EgressError::InvalidUrl {
            url: url.to_string(),
            reason: "the host cannot be sent in a Host header".to_owned(),
        })?;
        request.headers_mut().insert(HOST, value);
    }
    Ok(request)
}

/// An error and its sources, `: `-separated (hyper's own message alone is
/// often just "http2 error").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
