//! The compiled policy and the lexical judgement of a URL.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use http::Method;
use ipnet::IpNet;
use url::Url;

use crate::address::{AddressJudge, CidrList, own_addresses};
use crate::config::EgressPolicyConfig;
use crate::credentials::Credential;
use crate::error::{EgressError, NameRule};
use crate::name::{DomainList, judge_name, strip_root};

/// URLs longer than this are refused before parsing.
pub const MAX_URL_BYTES: usize = 8192;

/// What a policy decides: which URLs, hosts, addresses, ports and methods
/// are reachable, and the limits of a request.
///
/// `EgressPolicy::default()` is the safe setting: public addresses only,
/// ports 80 and 443, `GET`/`HEAD`/`OPTIONS`, 5 redirects, 10 MiB bodies,
/// 30 s per request. Build other policies from an [`EgressPolicyConfig`];
/// loosen one in code only through [`crate::danger`].
#[derive(Debug, Clone)]
pub struct EgressPolicy {
    pub(crate) allow: DomainList,
    pub(crate) deny: DomainList,
    pub(crate) methods: Vec<Method>,
    pub(crate) ports: Vec<u16>,
    pub(crate) addresses: AddressJudge,
    pub(crate) max_redirects: u32,
    pub(crate) max_response_bytes: u64,
    pub(crate) max_header_bytes: usize,
    pub(crate) max_request_bytes: usize,
    pub(crate) timeout: Duration,
    pub(crate) dns_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) dns_servers: Vec<SocketAddr>,
    pub(crate) loosened: Vec<String>,
    /// Credentials requests may carry ([`EgressPolicy::add_credential`]).
    pub(crate) credentials: Vec<Credential>,
    /// CA certificates trusted besides the Web PKI roots
    /// ([`crate::danger::trust_root_certificates_pem`]).
    pub(crate) extra_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        let config = EgressPolicyConfig::default();
        EgressPolicy {
            allow: DomainList::default(),
            deny: DomainList::default(),
            methods: vec![Method::GET, Method::HEAD, Method::OPTIONS],
            ports: Vec::new(),
            addresses: AddressJudge {
                own: own_addresses(),
                defaults: true,
                ..AddressJudge::default()
            },
            max_redirects: config.max_redirects,
            max_response_bytes: config.max_response_bytes,
            max_header_bytes: config.max_header_bytes,
            max_request_bytes: config.max_request_bytes,
            timeout: Duration::from_millis(config.timeout_ms),
            dns_timeout: Duration::from_millis(config.dns_timeout_ms),
            connect_timeout: Duration::from_millis(config.connect_timeout_ms),
            header_timeout: Duration::from_millis(config.header_timeout_ms),
            idle_timeout: Duration::from_millis(config.idle_timeout_ms),
            dns_servers: Vec::new(),
            loosened: Vec::new(),
            credentials: Vec::new(),
            extra_roots: Vec::new(),
        }
    }
}

fn config_error(field: &str, message: impl Into<String>) -> EgressError {
    EgressError::Config {
        field: field.to_owned(),
        message: message.into(),
    }
}

pub(crate) fn parse_cidr(raw: &str) -> Result<IpNet, String> {
    let raw = raw.trim();
    if let Ok(net) = raw.parse::<IpNet>() {
        return Ok(net.trunc());
    }
    raw.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("`{raw}` is not a CIDR (e.g. 127.0.0.0/8) or an IP address"))
}

fn cidrs(field: &str, raw: &[String]) -> Result<Vec<IpNet>, EgressError> {
    raw.iter()
        .map(|r| parse_cidr(r).map_err(|m| config_error(field, m)))
        .collect()
}

fn millis(field: &str, ms: u64) -> Result<Duration, EgressError> {
    if ms == 0 {
        return Err(config_error(field, "must be at least 1 ms"));
    }
    Ok(Duration::from_millis(ms))
}

/// Parses a method name the way fetch does: the standard methods in any
/// case become upper case (`get` is `GET`), others are kept as written.
///
/// # Errors
///
/// [`EgressError::Method`] when the text is not an HTTP token.
pub fn parse_method(raw: &str) -> Result<Method, EgressError> {
    const STANDARD: &[&str] = &["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH"];
    let upper = raw.to_ascii_uppercase();
    let spelled = if STANDARD.contains(&upper.as_str()) {
        upper.as_str()
    } else {
        raw
    };
    Method::from_bytes(spelled.as_bytes()).map_err(|_| EgressError::Method {
        method: raw.to_owned(),
        allowed: Vec::new(),
    })
}

impl EgressPolicyConfig {
    /// Compiles the section into a policy: names normalized, CIDRs parsed,
    /// this host's own addresses read (when `deny_own_addresses`).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] naming the field for an entry that does not
    /// parse, a zero port or timeout, or `CONNECT` in `allowed_methods`.
    pub fn build(&self) -> Result<EgressPolicy, EgressError> {
        let allow = DomainList::new(&self.allowed_domains)
            .map_err(|m| config_error("allowed_domains", m))?;
        let deny = DomainList::new(&self.blocked_domains)
            .map_err(|m| config_error("blocked_domains", m))?;
        let mut methods = Vec::new();
        for raw in &self.allowed_methods {
            let m = parse_method(raw)
                .map_err(|_| config_error("allowed_methods", format!("`{raw}` is not a method")))?;
            if m == Method::CONNECT {
                return Err(config_error(
                    "allowed_methods",
                    "CONNECT opens a tunnel and is never allowed",
                ));
            }
            methods.push(m);
        }
        if self.allowed_ports.contains(&0) {
            return Err(config_error("allowed_ports", "port 0 is not a port"));
        }
        let mut dns_servers = Vec::new();
        for raw in &self.dns_servers {
            let addr = raw
                .parse::<SocketAddr>()
                .or_else(|_| raw.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| {
                    config_error("dns_servers", format!("`{raw}` is not an ip:port address"))
                })?;
            dns_servers.push(addr);
        }
        let allowed = cidrs("allowed_cidrs", &self.allowed_cidrs)?;
        let mut loosened: Vec<String> = allowed
            .iter()
            .map(|n| format!("allowed_cidrs opens {n}"))
            .collect();
        if !self.defaults {
            loosened
                .push("defaults = false: the default denied ranges and names are off".to_owned());
        }
        if self.nat64 {
            loosened.push("nat64 = true: 64:ff9b::/96 is judged by the IPv4 inside".to_owned());
        }
        if !self.deny_own_addresses {
            loosened.push("deny_own_addresses = false".to_owned());
        }
        Ok(EgressPolicy {
            allow,
            deny,
            methods,
            ports: self.allowed_ports.clone(),
            addresses: AddressJudge {
                allowed: CidrList::new(allowed),
                denied: CidrList::new(cidrs("denied_cidrs", &self.denied_cidrs)?),
                own: if self.deny_own_addresses {
                    own_addresses()
                } else {
                    Vec::new()
                },
                defaults: self.defaults,
                nat64: self.nat64,
            },
            max_redirects: self.max_redirects,
            max_response_bytes: self.max_response_bytes,
            max_header_bytes: self.max_header_bytes.max(1),
            max_request_bytes: self.max_request_bytes,
            timeout: millis("timeout_ms", self.timeout_ms)?,
            dns_timeout: millis("dns_timeout_ms", self.dns_timeout_ms)?,
            connect_timeout: millis("connect_timeout_ms", self.connect_timeout_ms)?,
            header_timeout: millis("header_timeout_ms", self.header_timeout_ms)?,
            idle_timeout: millis("idle_timeout_ms", self.idle_timeout_ms)?,
            dns_servers,
            loosened,
            credentials: Vec::new(),
            extra_roots: Vec::new(),
        })
    }
}

/// The host of a judged URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A DNS name (normalized, without its trailing dot).
    Name(String),
    /// An IP literal (already judged).
    Ip(IpAddr),
}

/// A URL that passed every lexical rule: scheme, userinfo, name rules,
/// IP-literal address, port and method. The request is built from this
/// parsed form, never from the original text.
#[derive(Debug, Clone)]
pub struct UrlVerdict {
    pub(crate) url: Url,
    pub(crate) target: Target,
    pub(crate) port: u16,
    pub(crate) method: Method,
}

impl UrlVerdict {
    /// The URL as parsed and serialized by the WHATWG rules (what is sent).
    #[must_use]
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The normalized host: a punycode, lower-case name without its
    /// trailing dot, or an IP address's canonical text.
    #[must_use]
    pub fn host(&self) -> String {
        match &self.target {
            Target::Name(n) => n.clone(),
            Target::Ip(ip) => ip.to_string(),
        }
    }

    /// The address when the host is an IP literal (`None` for a name,
    /// which is judged when it is resolved).
    #[must_use]
    pub fn ip(&self) -> Option<IpAddr> {
        match self.target {
            Target::Ip(ip) => Some(ip),
            Target::Name(_) => None,
        }
    }

    /// The port (explicit, or the scheme's default).
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// True for `https`.
    #[must_use]
    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// The method judged with the URL.
    #[must_use]
    pub fn method(&self) -> &Method {
        &self.method
    }
}

/// A raw URL whose host is an IPv6 literal with a `%` (a zone id): the
/// URL parser refuses these too, but with a less useful message.
fn has_zone_id(raw: &str) -> bool {
    let Some(open) = raw.find('[') else {
        return false;
    };
    let rest = raw.get(open..).unwrap_or("");
    let close = rest.find(']').unwrap_or(rest.len());
    rest.get(..close).is_some_and(|inside| inside.contains('%'))
}

impl EgressPolicy {
    /// Judges a URL and a method without any DNS query: length, WHATWG
    /// parse, scheme, userinfo, zone id, name rules (or, for an IP
    /// literal, the address rules), port and method.
    ///
    /// A name that passes here is still judged again, address by address,
    /// when it is resolved ([`crate::Client::resolve_and_check`] and every
    /// request).
    ///
    /// # Errors
    ///
    /// The refusal for the first rule the URL breaks.
    pub fn check_url(&self, raw: &str, method: &Method) -> Result<UrlVerdict, EgressError> {
        let url = Self::parse(raw)?;
        self.check_parsed(url, method)
    }

    /// Judges a URL like [`EgressPolicy::check_url`] but without a method:
    /// for a tunnel (`CONNECT`), whose requests are not seen.
    #[cfg(feature = "proxy")]
    pub(crate) fn check_target(&self, raw: &str) -> Result<UrlVerdict, EgressError> {
        let url = Self::parse(raw)?;
        self.check_parsed_for(url, None)
    }

    /// The host of `raw` as a verdict would name it (see
    /// [`UrlVerdict::host`]), for a URL that parses but is refused: what a
    /// log records, whichever way the host was spelled.
    #[cfg(feature = "proxy")]
    pub(crate) fn normalized_host(raw: &str) -> Option<String> {
        match Self::parse(raw).ok()?.host()? {
            url::Host::Domain(d) => Some(strip_root(d).to_owned()),
            url::Host::Ipv4(ip) => Some(ip.to_string()),
            url::Host::Ipv6(ip) => Some(ip.to_string()),
        }
    }

    /// Length, then the WHATWG parse (a zone id named as such).
    fn parse(raw: &str) -> Result<Url, EgressError> {
        if raw.len() > MAX_URL_BYTES {
            return Err(EgressError::UrlTooLong {
                len: raw.len(),
                max: MAX_URL_BYTES,
            });
        }
        // The parser refuses zone ids too; name the rule when that is why.
        Url::parse(raw).map_err(|e| {
            if has_zone_id(raw) {
                EgressError::ZoneId {
                    url: raw.to_owned(),
                }
            } else {
                EgressError::InvalidUrl {
                    url: raw.to_owned(),
                    reason: e.to_string(),
                }
            }
        })
    }

    /// Judges an already parsed URL (a redirect target) exactly like
    /// [`EgressPolicy::check_url`].
    pub(crate) fn check_parsed(
        &self,
        url: Url,
        method: &Method,
    ) -> Result<UrlVerdict, EgressError> {
        self.check_parsed_for(url, Some(method))
    }

    /// Every rule but the method's when `method` is `None`.
    fn check_parsed_for(
        &self,
        url: Url,
        method: Option<&Method>,
    ) -> Result<UrlVerdict, EgressError> {
        let scheme = url.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(EgressError::Scheme {
                url: url.to_string(),
                scheme: scheme.to_owned(),
            });
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EgressError::Userinfo {
                url: url.to_string(),
            });
        }
        let target = match url.host() {
            Some(url::Host::Domain(d)) => {
                let name = strip_root(d).to_owned();
                judge_name(&name, &self.allow, &self.deny, self.addresses.defaults).map_err(
                    |rule| EgressError::Name {
                        name: name.clone(),
                        rule,
                    },
                )?;
                Target::Name(name)
            }
            Some(url::Host::Ipv4(ip)) => self.check_ip_host(IpAddr::V4(ip))?,
            Some(url::Host::Ipv6(ip)) => self.check_ip_host(IpAddr::V6(ip))?,
            None => {
                return Err(EgressError::InvalidUrl {
                    url: url.to_string(),
                    reason: "no host".to_owned(),
                });
            }
        };
        let port = url.port_or_known_default().unwrap_or(0);
        if !self.port_allowed(port) {
            return Err(EgressError::Port {
                url: url.to_string(),
                port,
                allowed: self.allowed_ports(),
            });
        }
        if let Some(method) = method {
            self.check_method(method)?;
        }
        Ok(UrlVerdict {
            url,
            target,
            port,
            method: method.cloned().unwrap_or(Method::CONNECT),
        })
    }

    fn check_ip_host(&self, ip: IpAddr) -> Result<Target, EgressError> {
        let host = ip.to_string();
        if let Some(entry) = self.deny.blocks_ip(ip) {
            return Err(EgressError::Name {
                name: host,
                rule: NameRule::Blocked(entry),
            });
        }
        if !self.allow.is_empty() && !self.allow.allows_ip(ip, self.addresses.nat64) {
            return Err(EgressError::Name {
                name: host,
                rule: NameRule::NotAllowed,
            });
        }
        self.check_address(&host, ip)?;
        Ok(Target::Ip(ip))
    }

    /// Judges one address for `host` (a resolved answer or a literal).
    ///
    /// # Errors
    ///
    /// [`EgressError::Address`] with the range the address fell in.
    pub fn check_address(&self, host: &str, address: IpAddr) -> Result<(), EgressError> {
        self.addresses
            .judge(address)
            .map_err(|d| EgressError::Address {
                host: host.to_owned(),
                address,
                range: d.range,
                label: d.label,
                rule: d.rule,
            })
    }

    /// Judges a method alone.
    ///
    /// # Errors
    ///
    /// [`EgressError::Method`] when the policy does not list it.
    pub fn check_method(&self, method: &Method) -> Result<(), EgressError> {
        if *method != Method::CONNECT && self.methods.contains(method) {
            Ok(())
        } else {
            Err(EgressError::Method {
                method: method.to_string(),
                allowed: self.methods.iter().map(ToString::to_string).collect(),
            })
        }
    }

    fn port_allowed(&self, port: u16) -> bool {
        if self.ports.is_empty() {
            port == 80 || port == 443
        } else {
            self.ports.contains(&port)
        }
    }

    /// The ports this policy allows.
    #[must_use]
    pub fn allowed_ports(&self) -> Vec<u16> {
        if self.ports.is_empty() {
            vec![80, 443]
        } else {
            self.ports.clone()
        }
    }

    /// What this policy opens beyond the safe defaults, one line each
    /// (`allowed_cidrs`, `defaults = false`, NAT64, …), for a host to
    /// show loudly. Empty for a policy with the default protections.
    #[must_use]
    pub fn loosenings(&self) -> &[String] {
        &self.loosened
    }

    /// Adds a credential requests may carry to its bound hosts (through
    /// the proxy, or [`crate::RequestBuilder::credential`]).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] when a credential of that name (or with
    /// the same variable) is there already.
    pub fn add_credential(&mut self, credential: Credential) -> Result<(), EgressError> {
        let clash = self.credentials.iter().find(|c| {
            c.name() == credential.name() || (c.env().is_some() && c.env() == credential.env())
        });
        if let Some(other) = clash {
            return Err(config_error(
                &format!("credentials.{}", credential.name()),
                format!(
                    "clashes with credentials.{} (same name or env)",
                    other.name()
                ),
            ));
        }
        self.credentials.push(credential);
        Ok(())
    }

    /// The credentials requests may carry.
    #[must_use]
    pub fn credentials(&self) -> &[Credential] {
        &self.credentials
    }

    /// Whether the default denied ranges and names are in force.
    #[must_use]
    pub fn defaults_enabled(&self) -> bool {
        self.addresses.defaults
    }

    /// The `max_response_bytes` limit.
    #[must_use]
    pub fn max_response_bytes(&self) -> u64 {
        self.max_response_bytes
    }

    /// The `max_redirects` limit.
    #[must_use]
    pub fn max_redirects(&self) -> u32 {
        self.max_redirects
    }

    /// The total deadline of one request (`timeout_ms`).
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How long a body may go without a byte (`idle_timeout_ms`).
    #[must_use]
    pub fn idle_timeout(&self) -> Duration {
        self.idle_timeout
    }
}
