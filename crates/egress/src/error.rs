//! The one error type of the crate: refusals (the policy said no) and
//! failures (the network said no).

use std::net::{IpAddr, SocketAddr};

/// Which name rule refused a host name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameRule {
    /// A special-use name that never denotes a public host (`localhost`,
    /// `*.local`, `*.internal`, `*.home.arpa`, `*.onion`, `*.invalid`); the
    /// field is the suffix it matched.
    SpecialUse(&'static str),
    /// A name of one label (`intranet`), which a resolver could complete
    /// with a local search domain.
    SingleLabel,
    /// The policy has an allow list and the name is not on it.
    NotAllowed,
    /// The name is on (or under) an entry of the policy's deny list; the
    /// field is that entry.
    Blocked(String),
    /// The name has an empty label (`a..b`, two trailing dots) or is empty.
    EmptyLabel,
    /// The DNS library cannot encode the name as a query (a label longer
    /// than 63 bytes, a name longer than 255); the field says why.
    Unencodable(String),
}

impl NameRule {
    fn id(&self) -> &'static str {
        match self {
            NameRule::SpecialUse(_) => "name.special-use",
            NameRule::SingleLabel => "name.single-label",
            NameRule::NotAllowed => "name.not-allowed",
            NameRule::Blocked(_) => "name.blocked",
            NameRule::EmptyLabel => "name.empty-label",
            NameRule::Unencodable(_) => "name.unencodable",
        }
    }
}

impl std::fmt::Display for NameRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameRule::SpecialUse(suffix) => write!(
                f,
                "names under `{suffix}` are special-use and never public; use a public DNS name"
            ),
            NameRule::SingleLabel => f.write_str(
                "single-label names are local-network names; use a fully qualified public name",
            ),
            NameRule::NotAllowed => f.write_str(
                "the policy allows only the names on its allowed_domains list; use one of those",
            ),
            NameRule::Blocked(entry) => write!(
                f,
                "it is on or under `{entry}` in the policy's blocked_domains; use another host"
            ),
            NameRule::EmptyLabel => {
                f.write_str("a name may not have an empty label; spell the host name plainly")
            }
            NameRule::Unencodable(why) => write!(
                f,
                "it cannot be sent as a DNS query ({why}); labels are at most 63 bytes and names at most 253"
            ),
        }
    }
}

/// Why an address was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddressRule {
    /// A special-purpose range denied by default (private, loopback,
    /// link-local, documentation, multicast, …); `range` names it.
    SpecialPurpose,
    /// An IPv6 address outside global unicast (`2000::/3`), including
    /// every IPv4-mapped, -compatible or -translated form.
    NotGlobalUnicast,
    /// A range listed in the policy's `denied_cidrs`.
    DeniedCidr,
    /// One of this host's own interface addresses.
    OwnAddress,
}

impl AddressRule {
    fn id(&self) -> &'static str {
        match self {
            AddressRule::SpecialPurpose => "address.special-purpose",
            AddressRule::NotGlobalUnicast => "address.not-global-unicast",
            AddressRule::DeniedCidr => "address.denied-cidr",
            AddressRule::OwnAddress => "address.own-address",
        }
    }
}

/// Which redirect rule stopped a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectRule {
    /// More redirects than `max_redirects`; the field is that limit.
    TooMany(u32),
    /// An `https` URL redirected to an `http` one.
    Downgrade,
    /// A 307/308 (or a 301/302 of a method other than POST) would have sent
    /// the request body to another origin.
    BodyToOtherOrigin,
    /// A redirect status without a usable `Location` header.
    BadLocation,
}

impl RedirectRule {
    fn id(&self) -> &'static str {
        match self {
            RedirectRule::TooMany(_) => "redirect.too-many",
            RedirectRule::Downgrade => "redirect.downgrade",
            RedirectRule::BodyToOtherOrigin => "redirect.body-to-other-origin",
            RedirectRule::BadLocation => "redirect.bad-location",
        }
    }
}

impl std::fmt::Display for RedirectRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedirectRule::TooMany(max) => write!(
                f,
                "the policy follows at most {max} redirects; request the final URL directly"
            ),
            RedirectRule::Downgrade => f.write_str(
                "an https request may not be redirected to plain http; only https targets are followed",
            ),
            RedirectRule::BodyToOtherOrigin => f.write_str(
                "the request body would be replayed to another origin; send it to the new URL yourself if you mean to",
            ),
            RedirectRule::BadLocation => {
                f.write_str("the redirect has no valid Location header; nothing to follow")
            }
        }
    }
}

/// Which caller header rule refused a header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderRule {
    /// The name or value contains CR, LF or NUL (header injection).
    LineBreak,
    /// The header is set by the client itself (`Host`, framing headers) or
    /// is a cloud-metadata credential header.
    Reserved,
    /// The name is not a valid HTTP token or the value is not a valid
    /// header value.
    Invalid,
    /// A method-override header (`X-HTTP-Method-Override`,
    /// `X-HTTP-Method`, `X-Method-Override`) whose value is not a method
    /// the policy allows: it would tunnel a refused method.
    MethodOverride,
}

impl HeaderRule {
    fn id(&self) -> &'static str {
        match self {
            HeaderRule::LineBreak => "header.line-break",
            HeaderRule::Reserved => "header.reserved",
            HeaderRule::Invalid => "header.invalid",
            HeaderRule::MethodOverride => "header.method-override",
        }
    }
}

/// The phase of a request that ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Resolving the host name (`dns_timeout_ms`).
    Dns,
    /// TCP connect and TLS handshake (`connect_timeout_ms`).
    Connect,
    /// Waiting for the response headers (`header_timeout_ms`).
    Headers,
    /// The whole request, redirects and body included (`timeout_ms`).
    Total,
    /// No body byte arrived for `idle_timeout_ms` (a stalled stream).
    Idle,
}

impl Phase {
    fn id(self) -> &'static str {
        match self {
            Phase::Dns => "time.dns",
            Phase::Connect => "time.connect",
            Phase::Headers => "time.headers",
            Phase::Total => "time.total",
            Phase::Idle => "time.idle",
        }
    }
    fn setting(self) -> &'static str {
        match self {
            Phase::Dns => "dns_timeout_ms",
            Phase::Connect => "connect_timeout_ms",
            Phase::Headers => "header_timeout_ms",
            Phase::Total => "timeout_ms",
            Phase::Idle => "idle_timeout_ms",
        }
    }
}

/// Everything that can go wrong: a refusal by the policy
/// ([`EgressError::is_refusal`]) or a failure of the network or the peer.
///
/// Every variant has a stable rule id ([`EgressError::rule`]) and a
/// `Display` that says what was refused, which rule, and what is allowed
/// instead, meant to be shown to a model as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EgressError {
    /// The text is not an absolute URL by the WHATWG URL standard.
    #[error(
        "refused URL {url:?}: it is not a valid absolute URL ({reason}); give an absolute http:// or https:// URL"
    )]
    InvalidUrl {
        /// The refused input.
        url: String,
        /// What the parser objected to.
        reason: String,
    },
    /// The URL is longer than the client accepts.
    #[error(
        "refused URL of {len} bytes: URLs longer than {max} bytes are not fetched; use a shorter URL"
    )]
    UrlTooLong {
        /// Length of the refused input.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A scheme other than `http` or `https`.
    #[error(
        "refused URL {url:?}: scheme `{scheme}` is not allowed; only http and https URLs are fetched"
    )]
    Scheme {
        /// The refused URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The URL carries a user name or password (`http://user:pw@host/`).
    #[error(
        "refused URL {url:?}: credentials in the URL (userinfo) are not allowed; remove the `user@` part"
    )]
    Userinfo {
        /// The refused URL.
        url: String,
    },
    /// An IPv6 literal with a zone id (`[fe80::1%25eth0]`).
    #[error(
        "refused URL {url:?}: IPv6 zone ids name a local interface and are not allowed; use a public host"
    )]
    ZoneId {
        /// The refused URL.
        url: String,
    },
    /// A host name refused by a name rule, before any DNS query.
    #[error("refused host `{name}`: {rule}")]
    Name {
        /// The normalized (punycode, lower-case) name.
        name: String,
        /// The rule that refused it.
        rule: NameRule,
    },
    /// An address (literal or resolved) in a denied range.
    #[error(
        "refused address {address} for `{host}`: it is in {range} ({label}); {}",
        address_help(rule)
    )]
    Address {
        /// The host as written in the URL (normalized).
        host: String,
        /// The refused address.
        address: IpAddr,
        /// The range it fell in, as a CIDR.
        range: String,
        /// A short name for the range (`loopback`, `private-use`, …).
        label: String,
        /// Which address rule refused it.
        rule: AddressRule,
    },
    /// A port the policy does not list.
    #[error("refused URL {url:?}: port {port} is not allowed; allowed ports are {allowed:?}")]
    Port {
        /// The refused URL.
        url: String,
        /// The port (explicit or the scheme's default).
        port: u16,
        /// The ports the policy allows.
        allowed: Vec<u16>,
    },
    /// A method the policy does not list.
    #[error("refused method `{method}`: the policy allows only {allowed:?}; use one of those")]
    Method {
        /// The refused method.
        method: String,
        /// The methods the policy allows.
        allowed: Vec<String>,
    },
    /// A redirect that was not followed.
    #[error("refused redirect from {from:?} to {to:?}: {rule}")]
    Redirect {
        /// The URL that answered with the redirect.
        from: String,
        /// The `Location` it pointed at (resolved against `from` when it could be).
        to: String,
        /// The rule that stopped the chain.
        rule: RedirectRule,
    },
    /// A caller header refused.
    #[error("refused header `{name}`: {}", header_help(rule))]
    Header {
        /// The header name as given.
        name: String,
        /// The rule that refused it.
        rule: HeaderRule,
    },
    /// Response headers larger than `max_header_bytes`.
    #[error(
        "refused the response of {url:?}: its headers exceed {max} bytes (max_header_bytes); ask a server that answers with a smaller head"
    )]
    ResponseHeadersTooLarge {
        /// The URL that answered.
        url: String,
        /// The limit.
        max: usize,
    },
    /// A request body larger than `max_request_bytes`.
    #[error(
        "refused request body of {len} bytes: the policy sends at most {max} bytes; send a smaller body"
    )]
    RequestTooLarge {
        /// The body's length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A request the proxy could not read (answered `400`): not an
    /// HTTP/1 request, or a malformed one.
    #[error(
        "refused a request the proxy could not read ({message}); send an HTTP/1.1 request in absolute form (`GET http://host/path`) or `CONNECT host:port`"
    )]
    BadRequest {
        /// What the parser objected to.
        message: String,
    },
    /// A request head larger than the proxy reads (answered `431`).
    #[error(
        "refused a request whose head is too large ({message}); send fewer or smaller header fields"
    )]
    RequestHeadTooLarge {
        /// What the parser said.
        message: String,
    },
    /// A request head that did not arrive whole within `header_timeout_ms`
    /// of the connection opening or the last answer (the connection is
    /// closed).
    #[error(
        "refused a request whose head did not arrive whole within {limit_ms} ms (header_timeout_ms); send the whole head at once"
    )]
    RequestHeadTimeout {
        /// The limit in milliseconds.
        limit_ms: u64,
    },
    /// A request or tunnel whose connection to the proxy ended while its
    /// name was being resolved, before any decision: nothing was sent.
    #[error(
        "did not decide on `{host}`: the connection to the proxy ended while the name was being resolved (the client left, or the command ended); nothing was sent"
    )]
    Undecided {
        /// The host asked for.
        host: String,
    },
    /// An absolute-form request asking to switch protocols (a websocket),
    /// which the proxy does not forward.
    #[error(
        "refused the upgrade of {url:?} to `{protocol}`: the proxy forwards plain http:// requests only; open a CONNECT tunnel for it instead (a wss:// URL, or `curl -p` for ws://)"
    )]
    Upgrade {
        /// The URL asked for.
        url: String,
        /// The protocol asked for (the `Upgrade` header).
        protocol: String,
    },
    /// A credential's placeholder in a request it is not bound to: another
    /// host, method or path, or cleartext HTTP. Nothing was sent.
    #[error(
        "refused a request to `{host}`{}: {}; nothing was sent",
        carrying(name),
        credential_help(rule)
    )]
    Credential {
        /// The credential's name (never its value; empty for a request in a
        /// terminated tunnel that names another host).
        name: String,
        /// The host the request was for.
        host: String,
        /// What the binding did not allow.
        rule: CredentialRule,
    },
    /// A phase ran out of time.
    #[error("stopped {url:?}: {} took longer than {limit_ms} ms ({}); try a faster source or a smaller request", phase_help(*phase), phase.setting())]
    Timeout {
        /// The URL being fetched.
        url: String,
        /// The phase that ran out of time.
        phase: Phase,
        /// The limit in milliseconds.
        limit_ms: u64,
    },
    /// The name does not exist or has no A/AAAA record.
    #[error("could not resolve `{host}`: {message}")]
    Dns {
        /// The host name.
        host: String,
        /// What the resolver said.
        message: String,
    },
    /// The TCP connection failed.
    #[error("could not connect to {address} for `{host}`: {message}")]
    Connect {
        /// The host name.
        host: String,
        /// The (judged) address dialled.
        address: SocketAddr,
        /// What the OS said.
        message: String,
    },
    /// The TLS handshake or certificate check failed.
    #[error("TLS with `{host}` failed: {message}")]
    Tls {
        /// The host name (the SNI and the certificate name).
        host: String,
        /// What rustls said.
        message: String,
    },
    /// The peer broke the HTTP protocol or the connection dropped.
    #[error("HTTP exchange with {url:?} failed: {message}")]
    Http {
        /// The URL being fetched.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The policy or client configuration is not usable.
    #[error("invalid egress configuration `{field}`: {message}")]
    Config {
        /// The field at fault.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

/// What a credential's binding did not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CredentialRule {
    /// The host is not one it is bound to; the field lists its hosts.
    Host(String),
    /// The method is not one of its `methods`.
    Method(String),
    /// The path (normalised) matches none of its `paths`.
    Path(String),
    /// Cleartext `http://`: a secret only travels over verified TLS.
    Cleartext,
    /// Inside a tunnel to a bound host, the `Host` header or the TLS name
    /// asked for another host.
    HostMismatch(String),
}

impl CredentialRule {
    fn id(&self) -> &'static str {
        match self {
            CredentialRule::Cleartext => "credential-cleartext",
            _ => "credential-unbound",
        }
    }
}

fn carrying(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" carrying credential `{name}`")
    }
}

fn credential_help(rule: &CredentialRule) -> String {
    match rule {
        CredentialRule::Host(hosts) => format!(
            "the credential is bound to {hosts} only; send it there, or bind this host in its policy section"
        ),
        CredentialRule::Method(m) => {
            format!("{m} is not among the credential's methods; use one of them")
        }
        CredentialRule::Path(p) => format!(
            "the path {p} matches none of the credential's paths; use a path it is bound to"
        ),
        CredentialRule::Cleartext => {
            "a credential travels only over https://; use the https:// URL".to_owned()
        }
        CredentialRule::HostMismatch(other) => format!(
            "the tunnel was opened to this host but the request names `{other}`; send each host's requests through its own tunnel"
        ),
    }
}

fn header_help(rule: &HeaderRule) -> String {
    match rule {
        HeaderRule::LineBreak => {
            "header names and values may not contain CR, LF or NUL; send one line per header"
                .to_owned()
        }
        HeaderRule::Reserved => {
            "this header is set by the client or is a cloud-metadata header; leave it out".to_owned()
        }
        HeaderRule::Invalid => {
            "not a valid HTTP header name or value; use token characters in names and visible ASCII in values".to_owned()
        }
        HeaderRule::MethodOverride => {
            "it asks the server for a method the policy does not allow; only an allowed method may be named here".to_owned()
        }
    }
}

fn address_help(rule: &AddressRule) -> &'static str {
    match rule {
        AddressRule::SpecialPurpose | AddressRule::NotGlobalUnicast => {
            "only public addresses are reachable"
        }
        AddressRule::DeniedCidr => "the policy's denied_cidrs exclude it; use another host",
        AddressRule::OwnAddress => "this host is not reachable through its own addresses",
    }
}

fn phase_help(phase: Phase) -> &'static str {
    match phase {
        Phase::Dns => "resolving the host",
        Phase::Connect => "connecting",
        Phase::Headers => "waiting for the response headers",
        Phase::Total => "the whole request",
        Phase::Idle => "waiting for the next piece of the body",
    }
}

impl EgressError {
    /// A stable identifier of the rule or failure kind, e.g.
    /// `"scheme"`, `"name.special-use"`, `"address.special-purpose"`,
    /// `"redirect.downgrade"`, `"time.total"`, `"dns"`.
    #[must_use]
    pub fn rule(&self) -> &'static str {
        match self {
            EgressError::InvalidUrl { .. } => "url.invalid",
            EgressError::UrlTooLong { .. } => "url.too-long",
            EgressError::Scheme { .. } => "scheme",
            EgressError::Userinfo { .. } => "userinfo",
            EgressError::ZoneId { .. } => "zone-id",
            EgressError::Name { rule, .. } => rule.id(),
            EgressError::Address { rule, .. } => rule.id(),
            EgressError::Port { .. } => "port",
            EgressError::Method { .. } => "method",
            EgressError::Redirect { rule, .. } => rule.id(),
            EgressError::Header { rule, .. } => rule.id(),
            EgressError::ResponseHeadersTooLarge { .. } => "size.headers",
            EgressError::RequestTooLarge { .. } => "size.request",
            EgressError::BadRequest { .. } => "request.malformed",
            EgressError::RequestHeadTooLarge { .. } => "size.request-head",
            EgressError::RequestHeadTimeout { .. } => "time.request-head",
            EgressError::Undecided { .. } => "undecided",
            EgressError::Upgrade { .. } => "upgrade",
            EgressError::Credential { rule, .. } => rule.id(),
            EgressError::Timeout { phase, .. } => phase.id(),
            EgressError::Dns { .. } => "dns",
            EgressError::Connect { .. } => "connect",
            EgressError::Tls { .. } => "tls",
            EgressError::Http { .. } => "http",
            EgressError::Config { .. } => "config",
        }
    }

    /// True when the policy refused (exit code 3 in the CLI); false for
    /// network, TLS, protocol and configuration failures.
    ///
    /// Time limits count as refusals: the policy's limit stopped the
    /// request.
    #[must_use]
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            EgressError::Dns { .. }
                | EgressError::Undecided { .. }
                | EgressError::Connect { .. }
                | EgressError::Tls { .. }
                | EgressError::Http { .. }
                | EgressError::Config { .. }
        )
    }
}
