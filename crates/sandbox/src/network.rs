//! The network of commands: none (the default), the web only through a
//! judging proxy, or the host's network.
//!
//! With a [`NetworkProxy`] (`network = "proxy"` in a policy file) a command runs in its private view with only
//! loopback; a host-provided [`NetworkProxy`] (the `agentcaps` facade
//! plugs in the egress crate's proxy) serves on a UNIX socket created
//! before the view is entered. The view's first process listens on
//! `127.0.0.1:3128` of the view's network and hands that listening socket
//! to the proxy over its UNIX socket (before the view's root replaces the
//! host's, so the command never sees the socket); the proxy accepts the
//! command's connections itself, with no relay between them.
//! `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and their lower-case forms)
//! point the command there. A program that ignores them has no route out:
//! the view's network has only loopback, and no DNS.
//!
//! Where no private view can be had, the command runs with Landlock only
//! (the fallback): the proxy then listens on a free TCP port of
//! `127.0.0.1` ([`NetworkProxy::serve_tcp`]), the variables point there,
//! and Landlock lets the command `connect` over TCP to that port alone. The
//! result says `partial`: Landlock judges the port, not the address (any
//! host on that port is reachable), and does not restrict UDP.

use std::path::Path;

/// The port of the proxy inside a command's view.
pub const PROXY_PORT: u16 = 3128;

/// A judging proxy the host provides, started once per command.
pub trait NetworkProxy: Send + Sync + std::fmt::Debug {
    /// Serves HTTP proxying on a new UNIX socket at `socket` (it does not
    /// exist yet) until the session is dropped.
    ///
    /// The socket must take a listener's hand-over: a connection whose
    /// first byte is `0`, carrying one descriptor (`SCM_RIGHTS`), a TCP
    /// socket listening on the view's `127.0.0.1:`[`PROXY_PORT`]. The proxy
    /// answers `+` on that connection when it took it (anything else, or
    /// nothing within five seconds, and the command does not run), then
    /// serves each connection the listener accepts, until that connection
    /// closes (the view has ended). The egress crate's proxy does this
    /// (`agentcaps_egress::proxy::handoff`).
    ///
    /// # Errors
    ///
    /// Why the proxy could not start; the command then does not run.
    fn serve(&self, socket: &Path) -> std::io::Result<Box<dyn ProxySession>>;

    /// Serves HTTP proxying on a free TCP port of `127.0.0.1` until the
    /// session is dropped; that port (for the fallback without a private
    /// view). The default says it is not supported, and the command then
    /// does not run.
    ///
    /// # Errors
    ///
    /// Why the proxy could not start.
    fn serve_tcp(&self) -> std::io::Result<(u16, Box<dyn ProxySession>)> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "this network proxy serves on a UNIX socket only",
        ))
    }
}

/// One command's proxy: dropping it stops the proxy.
pub trait ProxySession: Send {
    /// The connections the command asked for so far, oldest first.
    fn connections(&self) -> Vec<Connection>;

    /// Connections not in [`ProxySession::connections`] because its limit
    /// was reached (refusals and failures only: every allowed one is
    /// listed). The default: none.
    fn dropped(&self) -> u64 {
        0
    }

    /// For a proxy that puts credentials into requests: what the command
    /// gets instead (placeholders, never values, and the CA to trust).
    fn credentials(&self) -> Option<ProxyCredentials> {
        None
    }
}

/// What a command's proxy recorded: the connections so far and how many
/// were left out (`None`, `None` without a proxy).
pub(crate) fn recorded(
    session: Option<&dyn ProxySession>,
) -> (Option<Vec<Connection>>, Option<u64>) {
    match session {
        Some(session) => (Some(session.connections()), Some(session.dropped())),
        None => (None, None),
    }
}

/// What a command gets from a proxy that puts credentials into requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyCredentials {
    /// Variables to set: each credential's placeholder (never its value),
    /// git's `GIT_CONFIG_*` for the bound hosts.
    pub env: Vec<(String, String)>,
    /// Variables set to the CA bundle's path (`SSL_CERT_FILE`, ...).
    pub ca_variables: Vec<String>,
    /// PEM certificates trusted besides the system's roots: the proxy's
    /// per-run CA (never its key) and the policy's extra roots.
    pub extra_roots_pem: String,
}

impl ProxyCredentials {
    /// The credentials of a proxy session.
    #[must_use]
    pub fn new(
        env: Vec<(String, String)>,
        ca_variables: Vec<String>,
        extra_roots_pem: String,
    ) -> Self {
        ProxyCredentials {
            env,
            ca_variables,
            extra_roots_pem,
        }
    }
}

/// One request or tunnel a command asked the proxy for, and the decision.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Connection {
    /// `http` (a forwarded request) or `connect` (a tunnel).
    pub kind: String,
    /// The method (`CONNECT` for a tunnel).
    pub method: String,
    /// The host asked for.
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The judged address dialled, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// `allow`, `deny` or `error`.
    pub decision: String,
    /// The rule of a refusal or failure (empty when allowed).
    pub rule: String,
    /// Why, for a refusal or failure (empty when allowed).
    pub reason: String,
}

/// The proxy variables of a command whose network is the proxy: the six
/// variables set to `http://127.0.0.1:PORT` (in a view, [`PROXY_PORT`]),
/// `NO_PROXY` removed.
pub(crate) fn proxy_environment(
    env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>,
    port: u16,
) {
    use std::ffi::OsString;
    const NAMES: &[&str] = &[
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ];
    env.retain(|(name, _)| !NAMES.iter().any(|n| name == n));
    let url = OsString::from(format!("http://127.0.0.1:{port}"));
    for name in NAMES.iter().take(6) {
        env.push((OsString::from(name), url.clone()));
    }
}
