//! One client's session: the tools it is served, narrowed to the client's
//! roots when it declares them.
//!
//! A client that declares `roots` is asked for them after `initialized`
//! and again on every `notifications/roots/list_changed`. Until its first
//! answer, its calls wait (at most [`ROOTS_WAIT`]); if it never answers,
//! or answers with an error, its calls are refused (`roots-unavailable`)
//! rather than served with the wider policy roots.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::Tool;
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::calllog::CallLog;
use crate::{ToolError, Toolbox};

/// How long a call waits for a client's first list of roots.
pub(crate) const ROOTS_WAIT: Duration = Duration::from_secs(10);

/// The tools one session is served, with their MCP descriptions.
pub(crate) struct Served {
    pub(crate) toolbox: Toolbox,
    pub(crate) tools: Vec<Tool>,
}

#[derive(Clone)]
enum Roots {
    /// The client's roots are not known yet (or it declares none).
    Unasked,
    /// Narrowed to the client's roots.
    Narrowed(Arc<Served>),
    /// The client declared roots but its list could not be had.
    Failed(String),
}

/// The per-session state: the policy's tools, and what the client's roots
/// made of them.
pub(crate) struct Session {
    policy: Arc<Served>,
    roots: watch::Sender<Roots>,
}

impl Session {
    pub(crate) fn new(policy: Arc<Served>) -> Self {
        Self {
            policy,
            roots: watch::Sender::new(Roots::Unasked),
        }
    }

    /// A session for another client over the same policy: the same tools,
    /// its own roots and its own approval memory (a "yes" remembered for
    /// one client's session is never another's).
    pub(crate) fn fresh(&self, describe: impl Fn(Toolbox) -> Served) -> Self {
        Self::new(Arc::new(describe(self.policy.toolbox.new_session())))
    }

    /// The tools `peer`'s calls get: the policy's, or once the client's
    /// roots are known, the narrowed ones.
    ///
    /// # Errors
    ///
    /// `roots-unavailable` when the client declares roots and does not
    /// list them.
    pub(crate) async fn served(&self, peer: &Peer<RoleServer>) -> Result<Arc<Served>, ToolError> {
        if !declares_roots(peer) {
            return Ok(Arc::clone(&self.policy));
        }
        let mut roots = self.roots.subscribe();
        let known =
            tokio::time::timeout(ROOTS_WAIT, roots.wait_for(|r| !matches!(r, Roots::Unasked)))
                .await;
        let state = match known {
            Ok(Ok(state)) => state.clone(),
            _ => Roots::Failed("the client did not list its roots".to_owned()),
        };
        match state {
            Roots::Narrowed(served) => Ok(served),
            Roots::Failed(why) => Err(unavailable(&why)),
            Roots::Unasked => Err(unavailable("not listed yet")),
        }
    }

    /// The tools for listing: narrowed when known, else the policy's.
    pub(crate) fn current(&self) -> Arc<Served> {
        match &*self.roots.borrow() {
            Roots::Narrowed(served) => Arc::clone(served),
            _ => Arc::clone(&self.policy),
        }
    }

    /// Asks `peer` for its roots (when it declares them) and narrows the
    /// session's tools to them; ignored roots are logged.
    // Roots are deprecated from protocol 2026-07-28 on; the versions before
    // it, which clients speak today, have them.
    #[allow(deprecated)]
    pub(crate) async fn refresh(
        &self,
        peer: &Peer<RoleServer>,
        log: &CallLog,
        describe: impl Fn(Toolbox) -> Served,
    ) {
        if !declares_roots(peer) {
            return;
        }
        let state = match peer.list_roots().await {
            Ok(list) => {
                let uris: Vec<String> = list.roots.into_iter().map(|r| r.uri).collect();
                match self.policy.toolbox.narrowed_to(&uris) {
                    Ok((toolbox, ignored)) => {
                        for root in ignored {
                            let uri: String = root.uri.chars().take(300).collect();
                            log.event("root-ignored", &format!("{uri}: {}", root.reason));
                        }
                        Roots::Narrowed(Arc::new(describe(toolbox)))
                    }
                    Err(e) => Roots::Failed(e.to_string()),
                }
            }
            Err(e) => Roots::Failed(format!("roots/list failed: {e}")),
        };
        if let Roots::Failed(why) = &state {
            log.event("roots-unavailable", why);
        }
        self.roots.send_replace(state);
    }
}

fn declares_roots(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some())
}

fn unavailable(why: &str) -> ToolError {
    ToolError::Unsupported {
        tool: "tools/call",
        rule: "roots-unavailable",
        message: format!(
            "the client declares roots but they could not be had ({why}); no call runs until it answers roots/list"
        ),
    }
}
