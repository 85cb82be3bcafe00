//! The log of a proxy's decisions: one entry per request or tunnel,
//! written the moment the proxy decides (before it dials anything) and
//! completed as the exchange goes on: the address dialled, the status, the
//! bytes each way and how it ended.
//!
//! The log keeps [`MAX_LOG_ENTRIES`] entries of every kind; past that it
//! keeps every allowed entry (each is a connection that reached a server)
//! and counts the others it did not keep ([`ProxyLog::dropped`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

/// Entries of every kind kept in a [`ProxyLog`]; past this, only allowed
/// entries are kept and the others are counted.
pub const MAX_LOG_ENTRIES: usize = 10_000;

/// What a proxied connection was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyKind {
    /// An absolute-form `http://` request, forwarded (or a request the
    /// proxy could not read, answered `400`/`431`).
    Http,
    /// A `CONNECT host:port` tunnel (or a cleartext request inside one,
    /// when it was refused).
    Connect,
}

/// What the proxy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ProxyDecision {
    /// Judged allowed and forwarded (or tunnelled).
    Allow,
    /// Refused by the policy (`403`), or a request the proxy could not
    /// read (`400`, `431`).
    Deny,
    /// Could not decide or failed: DNS, connect, a broken upstream, a time
    /// limit (`502`/`504`).
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

/// How a logged request or tunnel ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ProxyOutcome {
    /// Still going when the log was read.
    Open,
    /// Answered to the end: the whole response relayed, the tunnel closed
    /// by both sides, or the refusal sent.
    Done,
    /// The client left first: before the response head or the `200` of a
    /// tunnel, or in the middle of the body.
    ClientClosed,
    /// The upstream side failed (connecting, a broken connection, a time
    /// limit); the decision is then `error`.
    Failed,
    /// The proxy stopped (the command ended or was killed) while it went on.
    Stopped,
}

impl std::fmt::Display for ProxyOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProxyOutcome::Open => "open",
            ProxyOutcome::Done => "done",
            ProxyOutcome::ClientClosed => "client-closed",
            ProxyOutcome::Failed => "failed",
            ProxyOutcome::Stopped => "stopped",
        })
    }
}

/// One logged request or tunnel: what was asked, where it went, why, and
/// how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ProxyEntry {
    /// A forwarded request or a tunnel.
    pub kind: ProxyKind,
    /// The method (`CONNECT` for a tunnel; empty when the request could
    /// not be read).
    pub method: String,
    /// The host as asked (normalized when it parsed; empty when the
    /// request could not be read).
    pub host: String,
    /// The port (0 when the request could not be read).
    pub port: u16,
    /// The judged address dialled (none when refused before dialling).
    pub address: Option<SocketAddr>,
    /// The decision.
    pub decision: ProxyDecision,
    /// The rule id of a refusal or failure (empty when allowed).
    pub rule: String,
    /// The refusal or failure message (empty when allowed).
    pub reason: String,
    /// The status the upstream answered (for a tunnel, the proxy's `200`),
    /// once it did.
    pub status: Option<u16>,
    /// Bytes sent upstream: the request body, or what went into a tunnel.
    pub sent: u64,
    /// Bytes received from upstream: the response body, or what came out
    /// of a tunnel.
    pub received: u64,
    /// How it ended (or [`ProxyOutcome::Open`]).
    pub outcome: ProxyOutcome,
    /// The credential put into the request, or whose placeholder made the
    /// refusal (its name, never its value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

impl ProxyEntry {
    pub(crate) fn new(kind: ProxyKind, method: &str, host: &str, port: u16) -> ProxyEntry {
        ProxyEntry {
            kind,
            method: method.to_owned(),
            host: host.to_owned(),
            port,
            address: None,
            decision: ProxyDecision::Allow,
            rule: String::new(),
            reason: String::new(),
            status: None,
            sent: 0,
            received: 0,
            outcome: ProxyOutcome::Open,
            credential: None,
        }
    }
}

/// Bytes each way of one logged exchange, counted as they pass.
#[derive(Debug, Default)]
pub(crate) struct Bytes {
    pub(crate) sent: AtomicU64,
    pub(crate) received: AtomicU64,
}

impl Bytes {
    pub(crate) fn add_sent(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
    }
    pub(crate) fn add_received(&self, n: usize) {
        self.received.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The shared log of a proxy's decisions, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ProxyLog {
    inner: Arc<Mutex<LogInner>>,
    stopped: Arc<AtomicBool>,
}

#[derive(Debug)]
struct Slot {
    entry: ProxyEntry,
    bytes: Arc<Bytes>,
}

#[derive(Debug, Default)]
struct LogInner {
    slots: Vec<Slot>,
    /// The id of `slots[0]` (ids count every entry kept since the start;
    /// [`ProxyLog::take`] moves it on).
    first: u64,
    dropped: u64,
}

impl LogInner {
    fn slot(&mut self, id: u64) -> Option<&mut Slot> {
        let index = usize::try_from(id.checked_sub(self.first)?).ok()?;
        self.slots.get_mut(index)
    }
}

impl ProxyLog {
    /// Logs `entry` now; the handle completes it. An entry that is not
    /// allowed is counted instead of kept when the log is full.
    pub(crate) fn open(&self, entry: ProxyEntry) -> Logged {
        let bytes = Arc::new(Bytes::default());
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let id = if inner.slots.len() < MAX_LOG_ENTRIES || entry.decision == ProxyDecision::Allow {
            let id = inner.first + inner.slots.len() as u64;
            inner.slots.push(Slot {
                entry,
                bytes: bytes.clone(),
            });
            Some(id)
        } else {
            inner.dropped += 1;
            None
        };
        Logged {
            log: self.clone(),
            id,
            bytes,
            closed: false,
        }
    }

    /// Logs a finished entry (a refusal, a request that could not be read).
    pub(crate) fn push(&self, mut entry: ProxyEntry) {
        if entry.outcome == ProxyOutcome::Open {
            entry.outcome = ProxyOutcome::Done;
        }
        self.open(entry).closed = true;
    }

    /// From now on, what is still going ends as [`ProxyOutcome::Stopped`].
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Whether [`ProxyLog::stop`] was called.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    fn snapshot(slot: &Slot) -> ProxyEntry {
        let mut entry = slot.entry.clone();
        entry.sent = slot.bytes.sent.load(Ordering::Relaxed);
        entry.received = slot.bytes.received.load(Ordering::Relaxed);
        entry
    }

    /// A copy of the entries so far (those still going with their bytes so
    /// far and outcome [`ProxyOutcome::Open`]).
    #[must_use]
    pub fn entries(&self) -> Vec<ProxyEntry> {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.slots.iter().map(Self::snapshot).collect()
    }

    /// The entries so far, removed from the log (one still going is not
    /// completed afterwards).
    #[must_use]
    pub fn take(&self) -> Vec<ProxyEntry> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let slots = std::mem::take(&mut inner.slots);
        inner.first += slots.len() as u64;
        slots.iter().map(Self::snapshot).collect()
    }

    /// Entries not kept because the log was full: refusals and failures
    /// past [`MAX_LOG_ENTRIES`] entries (allowed entries are always kept).
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dropped
    }
}

/// A logged entry still going: completed through this handle. Dropped
/// before [`Logged::close`], the entry ends as
/// [`ProxyOutcome::ClientClosed`] (the client's connection went away and
/// took the exchange with it) or, once the proxy stops,
/// [`ProxyOutcome::Stopped`].
#[derive(Debug)]
pub(crate) struct Logged {
    log: ProxyLog,
    id: Option<u64>,
    bytes: Arc<Bytes>,
    closed: bool,
}

impl Logged {
    /// Changes the entry (when it was kept).
    pub(crate) fn update(&self, change: impl FnOnce(&mut ProxyEntry)) {
        let Some(id) = self.id else { return };
        let mut inner = self
            .log
            .inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = inner.slot(id) {
            change(&mut slot.entry);
        }
    }

    /// The byte counters of this entry.
    pub(crate) fn bytes(&self) -> &Arc<Bytes> {
        &self.bytes
    }

    /// Ends the entry with `outcome`.
    pub(crate) fn close(mut self, outcome: ProxyOutcome) {
        self.update(|e| e.outcome = outcome);
        self.closed = true;
    }
}

impl Drop for Logged {
    fn drop(&mut self) {
        if !self.closed {
            let outcome = if self.log.is_stopped() {
                ProxyOutcome::Stopped
            } else {
                ProxyOutcome::ClientClosed
            };
            self.update(|e| e.outcome = outcome);
        }
    }
}
