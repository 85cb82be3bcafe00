//! Progress notifications for a running `shell_command` whose request
//! carries a `progressToken`: at most one a second, with the time the
//! command has run so far (its output is counted only when it ends, so the
//! notifications carry no byte count).

use std::time::{Duration, Instant};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

/// How often a running command reports.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// Sends progress for `token` to `peer` every [`EVERY`] until dropped
/// (the task is aborted with the guard).
pub(crate) struct Ticker(tokio::task::JoinHandle<()>);

impl Ticker {
    pub(crate) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let started = Instant::now();
        Self(tokio::spawn(async move {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let elapsed = started.elapsed();
                let mut param = ProgressNotificationParam::new(token.clone(), seconds(elapsed));
                param.message = Some(format!("running for {} s", elapsed.as_secs()));
                if peer.notify_progress(param).await.is_err() {
                    return;
                }
            }
        }))
    }
}

/// Seconds to the millisecond: strictly more at every tick.
fn seconds(elapsed: Duration) -> f64 {
    (elapsed.as_millis() as f64) / 1000.0
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.abort();
    }
}
