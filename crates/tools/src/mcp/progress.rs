//! Progress notifications for a running `shell_command` whose request
//! carries a `progressToken`: at most one a second, with the time the
//! command has run so far (the progress value, in seconds) and the bytes
//! of output it has written so far (in the message; its standard output
//! and error together, counted as they come).

use std::time::{Duration, Instant};

use agentcaps::shell::OutputCounter;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};

/// How often a running command reports.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// Sends progress for `token` to `peer` every [`EVERY`] until dropped
/// (the task is aborted with the guard), reading `output` each time.
pub(crate) struct Ticker(tokio::task::JoinHandle<()>);

impl Ticker {
    pub(crate) fn start(
        peer: Peer<RoleServer>,
        token: ProgressToken,
        output: OutputCounter,
    ) -> Self {
        let started = Instant::now();
        Self(tokio::spawn(async move {
            let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let elapsed = started.elapsed();
                let mut param = ProgressNotificationParam::new(token.clone(), seconds(elapsed));
                param.message = Some(message(elapsed, output.bytes()));
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

/// What a notification says: how long the command has run, and how much
/// output it has written.
fn message(elapsed: Duration, bytes: u64) -> String {
    format!(
        "running for {} s, {bytes} bytes of output so far",
        elapsed.as_secs()
    )
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn the_message_says_the_time_and_the_bytes() {
        assert_eq!(
            super::message(Duration::from_millis(2500), 1234),
            "running for 2 s, 1234 bytes of output so far"
        );
    }
}
