//! The `[egress]` section of the policy file, as plain data.

use serde::{Deserialize, Serialize};

/// The `[egress]` section of the policy file: plain data that
/// [`EgressPolicyConfig::build`] compiles into an [`crate::EgressPolicy`].
///
/// Every field has a default, and the defaults are the safe setting:
/// public addresses only, ports 80 and 443, `GET`/`HEAD`/`OPTIONS`.
///
/// ```
/// use agentcaps_egress::EgressPolicyConfig;
///
/// let config: EgressPolicyConfig = toml::from_str(r#"
///     allowed_domains = ["docs.rs", "*.github.com"]
///     allowed_methods = ["GET", "HEAD"]
/// "#).unwrap();
/// let policy = config.build().unwrap();
/// assert!(policy.check_url("https://api.github.com/", &"GET".parse().unwrap()).is_ok());
/// assert!(policy.check_url("https://github.com/", &"GET".parse().unwrap()).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EgressPolicyConfig {
    /// When non-empty, only these hosts are reachable: exact names, and
    /// `*.suffix` for names under `suffix` (not `suffix` itself). IP
    /// literals may be listed too. Names are compared after UTS-46
    /// mapping, lower-casing and dropping one trailing dot.
    pub allowed_domains: Vec<String>,
    /// Hosts never reachable; an entry covers itself and every name under
    /// it (`*.suffix` covers only the names under it). Wins over
    /// `allowed_domains`.
    pub blocked_domains: Vec<String>,
    /// Methods the caller may use (exact, upper case). Default
    /// `["GET", "HEAD", "OPTIONS"]`. `CONNECT` is never allowed.
    pub allowed_methods: Vec<String>,
    /// CIDRs reachable even though a default rule denies them (for a test
    /// server on loopback, or a deliberate internal service).
    ///
    /// # Security
    ///
    /// This is the one knob that opens the host's network: every address in
    /// these ranges becomes reachable by any URL the agent writes.
    pub allowed_cidrs: Vec<String>,
    /// CIDRs never reachable, added to the defaults; wins over
    /// `allowed_cidrs`.
    pub denied_cidrs: Vec<String>,
    /// Ports allowed. Empty means 80 and 443; a non-empty list replaces
    /// them (list 443 yourself if you still want it).
    pub allowed_ports: Vec<u16>,
    /// How many redirects are followed (each judged like the first URL).
    pub max_redirects: u32,
    /// Response body bytes read; past this the body is cut and the result
    /// says `truncated`.
    pub max_response_bytes: u64,
    /// Response header bytes accepted (status line and all fields).
    pub max_header_bytes: usize,
    /// Request body bytes the caller may send.
    pub max_request_bytes: usize,
    /// One deadline over the whole request: every redirect, and the body.
    pub timeout_ms: u64,
    /// Time for one DNS resolution.
    pub dns_timeout_ms: u64,
    /// Time for one TCP connect plus TLS handshake.
    pub connect_timeout_ms: u64,
    /// Time from sending a request to receiving its response headers. The
    /// proxy gives its clients the same time to send a request head (from
    /// the connection's opening, or from the last response on a kept-alive
    /// one): a connection idle or half-sent for longer is closed.
    pub header_timeout_ms: u64,
    /// Time the body may go without a byte arriving (between body chunks,
    /// and from the response head to the first chunk), beside the total
    /// deadline: a stalled stream is noticed without cutting a long one.
    /// A request can set its own ([`crate::RequestBuilder::idle_timeout`]).
    pub idle_timeout_ms: u64,
    /// DNS servers (`"ip:port"` or `"ip"` for port 53) queried over UDP
    /// (TCP on truncation). Empty: the system's name servers, without its
    /// search list.
    pub dns_servers: Vec<String>,
    /// Decode the NAT64 well-known prefix `64:ff9b::/96` and judge the
    /// IPv4 address inside it (off: the whole prefix is denied).
    pub nat64: bool,
    /// Deny this host's own interface addresses (read from `/proc` on
    /// Linux), so a public address of the host itself is not a way back in.
    pub deny_own_addresses: bool,
    /// `false` drops the default denied ranges and the default denied
    /// names (`localhost`, `*.local`, single labels, …), keeping only the
    /// lists above.
    ///
    /// # Security
    ///
    /// With `defaults = false` and no `denied_cidrs`, every address is
    /// reachable, loopback and cloud metadata included.
    pub defaults: bool,
}

impl Default for EgressPolicyConfig {
    fn default() -> Self {
        EgressPolicyConfig {
            allowed_domains: Vec::new(),
            blocked_domains: Vec::new(),
            allowed_methods: vec!["GET".to_owned(), "HEAD".to_owned(), "OPTIONS".to_owned()],
            allowed_cidrs: Vec::new(),
            denied_cidrs: Vec::new(),
            allowed_ports: Vec::new(),
            max_redirects: 5,
            max_response_bytes: 10 * 1024 * 1024,
            max_header_bytes: 64 * 1024,
            max_request_bytes: 10 * 1024 * 1024,
            timeout_ms: 30_000,
            dns_timeout_ms: 5_000,
            connect_timeout_ms: 10_000,
            header_timeout_ms: 30_000,
            idle_timeout_ms: 30_000,
            dns_servers: Vec::new(),
            nat64: false,
            deny_own_addresses: true,
            defaults: true,
        }
    }
}
