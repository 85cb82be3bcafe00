//! The log of a proxy's decisions: one entry per request or tunnel.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

/// Entries kept in a [`ProxyLog`]; past this, entries are counted, not kept.
const MAX_LOG_ENTRIES: usize = 10_000;

/// What a proxied connection was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyKind {
    /// An absolute-form `http://` request, forwarded.
    Http,
    /// A `CONNECT host:port` tunnel.
    Connect,
}

/// What the proxy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyDecision {
    /// Judged allowed and forwarded (or tunnelled).
    Allow,
    /// Refused by the policy (`403`).
    Deny,
    /// Could not decide or failed: DNS, connect, a time limit (`502`/`504`).
    Error,
}

impl std::fmt::Display for ProxyDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProxyDecision::Allow => "allow",
            ProxyDecision::Deny => "deny",
            ProxyDecision::Error => "error",
        })
    }
}

/// One logged request or tunnel: what was asked, where it went, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ProxyEntry {
    /// A forwarded request or a tunnel.
    pub kind: ProxyKind,
    /// The method (`CONNECT` for a tunnel).
    pub method: String,
    /// The host as asked (normalized when it parsed).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The judged address dialled (none when refused before dialling).
    pub address: Option<SocketAddr>,
    /// The decision.
    pub decision: ProxyDecision,
    /// The rule id of a refusal or failure (empty when allowed).
    pub rule: String,
    /// The refusal or failure message (empty when allowed).
    pub reason: String,
}

/// The shared log of a proxy's decisions, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ProxyLog {
    inner: Arc<Mutex<LogInner>>,
}

#[derive(Debug, Default)]
struct LogInner {
    entries: Vec<ProxyEntry>,
    dropped: u64,
}

impl ProxyLog {
    pub(crate) fn push(&self, entry: ProxyEntry) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.entries.len() < MAX_LOG_ENTRIES {
            inner.entries.push(entry);
        } else {
            inner.dropped += 1;
        }
    }

    /// A copy of the entries so far.
    #[must_use]
    pub fn entries(&self) -> Vec<ProxyEntry> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.entries.clone()
    }

    /// The entries so far, removed from the log.
    #[must_use]
    pub fn take(&self) -> Vec<ProxyEntry> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut inner.entries)
    }

    /// Entries not kept because the log was full (10 000 entries).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }
}
