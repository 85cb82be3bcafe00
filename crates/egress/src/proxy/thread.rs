//! A proxy on its own thread and runtime.

use std::net::SocketAddr;

use super::Proxy;
use super::log::ProxyLog;
use super::terminate::CredentialSession;
use crate::error::EgressError;
use crate::policy::EgressPolicy;

/// A proxy on its own thread and runtime, for hosts without one (the
/// `agentcaps` command line). Dropping it stops the proxy and joins the
/// thread.
#[derive(Debug)]
pub struct ProxyThread {
    addr: Option<SocketAddr>,
    log: ProxyLog,
    credentials: Option<CredentialSession>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Where a [`ProxyThread`] listens.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Listen {
    /// A TCP address (port 0: any free port).
    Tcp(SocketAddr),
    /// A UNIX socket path (must not exist).
    Unix(std::path::PathBuf),
}

impl ProxyThread {
    /// Starts the proxy on a new thread with a single-threaded runtime.
    ///
    /// # Errors
    ///
    /// As [`Proxy::bind`], or [`EgressError::Config`] when the thread or
    /// runtime cannot be started.
    pub fn start(policy: EgressPolicy, listen: Listen) -> Result<ProxyThread, EgressError> {
        let config_error = |m: String| EgressError::Config {
            field: "proxy".to_owned(),
            message: m,
        };
        // One thread serves every connection: a request through the proxy
        // is a ping-pong of small reads and writes, and with a second
        // worker every write woke it (a futex wake-up and a context switch
        // for nothing) three times a request.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .thread_name("agentcaps-proxy")
            .enable_all()
            .build()
            .map_err(|e| config_error(format!("cannot start a runtime: {e}")))?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("agentcaps-proxy".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let proxy = match listen {
                        Listen::Tcp(addr) => Proxy::bind(policy, addr).await,
                        Listen::Unix(path) => Proxy::bind_unix(policy, &path).await,
                    };
                    match proxy {
                        Ok(proxy) => {
                            let _ = ready_tx.send(Ok((
                                proxy.local_addr(),
                                proxy.log(),
                                proxy.credentials().cloned(),
                            )));
                            let _ = stop_rx.await;
                            drop(proxy);
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .map_err(|e| config_error(format!("cannot start a thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok((addr, log, credentials))) => Ok(ProxyThread {
                addr,
                log,
                credentials,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(config_error("the proxy thread ended early".to_owned()))
            }
        }
    }

    /// The TCP address it listens on (`None` for a UNIX socket).
    #[must_use]
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The log of every decision.
    #[must_use]
    pub fn log(&self) -> ProxyLog {
        self.log.clone()
    }

    /// As [`Proxy::credentials`].
    #[must_use]
    pub fn credentials(&self) -> Option<&CredentialSession> {
        self.credentials.as_ref()
    }
}

impl Drop for ProxyThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
