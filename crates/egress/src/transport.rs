//! Connections: dial one judged address (never a name), TLS with the URL's
//! host as SNI and certificate name, HTTP/1.1 or HTTP/2 by ALPN, and a
//! pool keyed by the judged address *and* the host.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::error::{EgressError, Phase};

pub(crate) type ReqBody = Full<Bytes>;

/// At most this many connections are kept per pool key.
const MAX_PER_KEY: usize = 16;

/// At most this many keys (address, host, scheme) are pooled; past it,
/// keys whose connections all closed are dropped, and a new key is not
/// pooled until there is room (its connection closes after use).
const MAX_KEYS: usize = 256;

/// What a pooled connection is for: one judged address, one host, one
/// scheme. A connection is never reused for another host, even one that
/// resolves to the same address, nor for another address of the same host.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PoolKey {
    pub(crate) https: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) addr: SocketAddr,
}

/// A handle to send requests on one connection.
pub(crate) enum Sender {
    H1(http1::SendRequest<ReqBody>),
    H2(http2::SendRequest<ReqBody>),
}

impl Sender {
    fn is_closed(&self) -> bool {
        match self {
            Sender::H1(s) => s.is_closed(),
            Sender::H2(s) => s.is_closed(),
        }
    }

    pub(crate) fn is_h2(&self) -> bool {
        matches!(self, Sender::H2(_))
    }

    pub(crate) fn send(
        &mut self,
        req: http::Request<ReqBody>,
    ) -> impl Future<Output = hyper::Result<http::Response<hyper::body::Incoming>>> + use<> {
        let fut = match self {
            Sender::H1(s) => either::Left(s.send_request(req)),
            Sender::H2(s) => either::Right(s.send_request(req)),
        };
        async move {
            match fut {
                either::Left(f) => f.await,
                either::Right(f) => f.await,
            }
        }
    }
}

mod either {
    pub(crate) enum Either<L, R> {
        Left(L),
        Right(R),
    }
    pub(crate) use Either::{Left, Right};
}

/// Idle (HTTP/1.1) and shared (HTTP/2) connections.
#[derive(Default)]
pub(crate) struct Pool {
    conns: Mutex<HashMap<PoolKey, Vec<Sender>>>,
}

impl Pool {
    /// A ready connection for `key`, if one is pooled. HTTP/1.1 senders are
    /// taken out (one request at a time); HTTP/2 senders are shared.
    pub(crate) fn checkout(&self, key: &PoolKey) -> Option<Sender> {
        let mut conns = self.conns.lock().unwrap_or_else(PoisonError::into_inner);
        let list = conns.get_mut(key)?;
        list.retain(|s| !s.is_closed());
        let found = list.iter().position(|s| match s {
            Sender::H1(h) => h.is_ready(),
            Sender::H2(h) => h.is_ready(),
        })?;
        match list.get(found) {
            Some(Sender::H2(h)) => Some(Sender::H2(h.clone())),
            _ => Some(list.swap_remove(found)),
        }
    }

    /// Gives a connection back (HTTP/1.1 after its response head arrived;
    /// HTTP/2 once, when it is made).
    pub(crate) fn checkin(&self, key: PoolKey, sender: Sender) {
        let mut conns = self.conns.lock().unwrap_or_else(PoisonError::into_inner);
        if conns.len() >= MAX_KEYS && !conns.contains_key(&key) {
            conns.retain(|_, list| {
                list.retain(|s| !s.is_closed());
                !list.is_empty()
            });
            if conns.len() >= MAX_KEYS {
                return;
            }
        }
        let list = conns.entry(key).or_default();
        list.retain(|s| !s.is_closed());
        if list.len() < MAX_PER_KEY {
            list.push(sender);
        }
    }
}

/// How to make a connection.
pub(crate) struct Connector {
    pub(crate) tls: TlsConnector,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_header_bytes: usize,
}

impl Connector {
    /// Dials `key.addr` (a judged address) and completes TLS and the HTTP
    /// handshake, all within `connect_timeout`.
    pub(crate) async fn connect(&self, key: &PoolKey, url: &str) -> Result<Sender, EgressError> {
        let limit_ms = u64::try_from(self.connect_timeout.as_millis()).unwrap_or(u64::MAX);
        tokio::time::timeout(self.connect_timeout, self.connect_inner(key))
            .await
            .map_err(|_| EgressError::Timeout {
                url: url.to_owned(),
                phase: Phase::Connect,
                limit_ms,
            })?
    }

    async fn connect_inner(&self, key: &PoolKey) -> Result<Sender, EgressError> {
        let tcp = TcpStream::connect(crate::address::dial_address(key.addr))
            .await
            .map_err(|e| EgressError::Connect {
                host: key.host.clone(),
                address: key.addr,
                message: e.to_string(),
            })?;
        // Best effort: a request is small, latency matters more.
        let _ = tcp.set_nodelay(true);
        if !key.https {
            return self.handshake(tcp, false, key).await;
        }
        let name = ServerName::try_from(key.host.clone()).map_err(|e| EgressError::Tls {
            host: key.host.clone(),
            message: format!("not a valid TLS server name: {e}"),
        })?;
        let tls = self
            .tls
            .connect(name, tcp)
            .await
            .map_err(|e| EgressError::Tls {
                host: key.host.clone(),
                message: e.to_string(),
            })?;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        self.handshake(tls, h2, key).await
    }

    async fn handshake<T>(&self, io: T, h2: bool, key: &PoolKey) -> Result<Sender, EgressError>
    where
        T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let io = TokioIo::new(io);
        let http_err = |e: hyper::Error| EgressError::Http {
            url: format!(
                "{}://{}:{}",
                if key.https { "https" } else { "http" },
                key.host,
                key.port
            ),
            message: e.to_string(),
        };
        if h2 {
            let mut builder = http2::Builder::new(TokioExecutor::new());
            // h2 fails a larger head with a bare compression error, so
            // let it decode up to 4× the policy's limit and refuse by the
            // policy's own count (see `head_size`) with a clear refusal.
            let decode_limit = self.max_header_bytes.saturating_mul(4);
            builder.max_header_list_size(u32::try_from(decode_limit).unwrap_or(u32::MAX));
            let (sender, conn) = builder.handshake(io).await.map_err(http_err)?;
            tokio::spawn(conn);
            Ok(Sender::H2(sender))
        } else {
            let (sender, conn) = http1::Builder::new()
                .max_header_size(self.max_header_bytes)
                .handshake(io)
                .await
                .map_err(http_err)?;
            tokio::spawn(conn);
            Ok(Sender::H1(sender))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn idle_sender() -> (Sender, impl Sized) {
        let (client, server) = tokio::io::duplex(64);
        let (mut sender, conn) = http1::Builder::new()
            .handshake::<_, ReqBody>(TokioIo::new(client))
            .await
            .unwrap();
        let task = tokio::spawn(conn);
        sender.ready().await.unwrap();
        (Sender::H1(sender), (task, server))
    }

    fn key(i: usize) -> PoolKey {
        PoolKey {
            https: false,
            host: format!("h{i}.example.com"),
            port: 80,
            addr: SocketAddr::from(([127, 0, 0, 1], 80)),
        }
    }

    #[tokio::test]
    async fn the_pool_keeps_a_bounded_number_of_keys_and_connections() {
        let pool = Pool::default();
        let mut alive = Vec::new();
        for i in 0..MAX_KEYS + 10 {
            let (sender, conn) = idle_sender().await;
            alive.push(conn);
            pool.checkin(key(i), sender);
        }
        assert_eq!(pool.conns.lock().unwrap().len(), MAX_KEYS);
        for _ in 0..MAX_PER_KEY + 3 {
            let (sender, conn) = idle_sender().await;
            alive.push(conn);
            pool.checkin(key(0), sender);
        }
        assert_eq!(
            pool.conns.lock().unwrap().get(&key(0)).map(Vec::len),
            Some(MAX_PER_KEY)
        );
    }

    #[tokio::test]
    async fn a_connection_is_only_found_under_its_own_key() {
        let pool = Pool::default();
        let (sender, _conn) = idle_sender().await;
        pool.checkin(key(1), sender);
        assert!(pool.checkout(&key(2)).is_none());
        let mut other_addr = key(1);
        other_addr.addr = SocketAddr::from(([127, 0, 0, 2], 80));
        assert!(pool.checkout(&other_addr).is_none());
        assert!(pool.checkout(&key(1)).is_some());
        assert!(
            pool.checkout(&key(1)).is_none(),
            "an HTTP/1.1 sender is taken out"
        );
    }
}
