//! `[shell] network = "proxy"`: the egress crate's judging proxy, started
//! for each command on a UNIX socket, where the command's private view
//! hands it the listener of the view's `127.0.0.1:3128` (or, without a
//! view, on a free TCP port of loopback).

use std::path::Path;

use crate::egress::EgressPolicy;
use crate::egress::proxy::{CA_VARIABLES, Listen, ProxyDecision, ProxyKind, ProxyLog, ProxyThread};
use crate::shell::{Connection, NetworkProxy, ProxyCredentials, ProxySession};

/// The `[egress]` policy as a command's network proxy.
#[derive(Debug)]
pub(crate) struct EgressProxy {
    pub(crate) policy: EgressPolicy,
}

struct Session {
    log: ProxyLog,
    credentials: Option<ProxyCredentials>,
    _proxy: ProxyThread,
}

/// The command's side of the proxy's credentials: placeholders, the CA
/// variables and what to trust.
fn credentials_of(proxy: &ProxyThread) -> Option<ProxyCredentials> {
    let session = proxy.credentials()?;
    Some(ProxyCredentials::new(
        session.credentials().environment(),
        CA_VARIABLES.iter().map(|v| (*v).to_owned()).collect(),
        session.extra_roots_pem(),
    ))
}

impl NetworkProxy for EgressProxy {
    fn serve(&self, socket: &Path) -> std::io::Result<Box<dyn ProxySession>> {
        let proxy = ProxyThread::start(self.policy.clone(), Listen::Unix(socket.to_path_buf()))
            .map_err(std::io::Error::other)?;
        Ok(Box::new(Session {
            log: proxy.log(),
            credentials: credentials_of(&proxy),
            _proxy: proxy,
        }))
    }

    fn serve_tcp(&self) -> std::io::Result<(u16, Box<dyn ProxySession>)> {
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let proxy = ProxyThread::start(self.policy.clone(), Listen::Tcp(loopback))
            .map_err(std::io::Error::other)?;
        let port = proxy
            .local_addr()
            .map(|a| a.port())
            .ok_or_else(|| std::io::Error::other("the proxy has no TCP address"))?;
        Ok((
            port,
            Box::new(Session {
                log: proxy.log(),
                credentials: credentials_of(&proxy),
                _proxy: proxy,
            }),
        ))
    }
}

impl ProxySession for Session {
    fn credentials(&self) -> Option<ProxyCredentials> {
        self.credentials.clone()
    }

    fn connections(&self) -> Vec<Connection> {
        self.log
            .entries()
            .into_iter()
            .map(|e| Connection {
                kind: match e.kind {
                    ProxyKind::Connect => "connect".to_owned(),
                    _ => "http".to_owned(),
                },
                method: e.method,
                host: e.host,
                port: e.port,
                address: e.address.map(|a| a.to_string()),
                decision: match e.decision {
                    ProxyDecision::Allow => "allow".to_owned(),
                    ProxyDecision::Deny => "deny".to_owned(),
                    _ => "error".to_owned(),
                },
                rule: e.rule,
                reason: e.reason,
            })
            .collect()
    }

    fn dropped(&self) -> u64 {
        self.log.dropped()
    }
}
