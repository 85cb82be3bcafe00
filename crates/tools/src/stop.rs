//! When a call must stop: the client cancelled it, or its time ran out.
//! Long walks (listing, searching, reading many files) look at their
//! [`Stop`] between steps. A stop may also carry a counter that a command
//! the call runs counts its output into, for the caller's progress
//! reports.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentcaps::shell::OutputCounter;

use crate::ToolError;

/// How long one call may walk a tree before it answers with what it has
/// (`truncated`).
pub const DEFAULT_CALL_TIME: Duration = Duration::from_secs(10);

/// A call's cancellation flag and deadline (and, when given, the counter
/// of a command's output). Clones share the flag and the counter.
#[derive(Debug, Clone)]
pub struct Stop {
    cancelled: Arc<AtomicBool>,
    deadline: Instant,
    output: Option<OutputCounter>,
}

impl Stop {
    /// A stop that is reached after `limit`, or when [`Stop::cancel`] is
    /// called.
    pub fn after(limit: Duration) -> Self {
        let now = Instant::now();
        Self {
            cancelled: Arc::new(AtomicBool::new(false)),
            deadline: now.checked_add(limit).unwrap_or(now + DEFAULT_CALL_TIME),
            output: None,
        }
    }

    /// This stop, with `counter` counting the bytes of output of a command
    /// the call runs (`shell_command`) as they come, so that the caller
    /// can report progress while it runs.
    #[must_use]
    pub fn counting_output(mut self, counter: OutputCounter) -> Self {
        self.output = Some(counter);
        self
    }

    /// The counter of a command's output, when one was given.
    pub(crate) fn output_counter(&self) -> Option<&OutputCounter> {
        self.output.as_ref()
    }

    /// Cancels the call (every clone sees it).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`Stop::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Cancelled, or past the deadline.
    pub(crate) fn reached(&self) -> bool {
        self.is_cancelled() || Instant::now() >= self.deadline
    }

    /// The error of a call that was cancelled (or ran out of time before it
    /// had anything to show).
    pub(crate) fn error(&self, tool: &'static str) -> ToolError {
        if self.is_cancelled() {
            ToolError::Unsupported {
                tool,
                rule: "cancelled",
                message: "the call was cancelled".to_owned(),
            }
        } else {
            ToolError::Unsupported {
                tool,
                rule: "time-limit",
                message:
                    "the call reached its time limit; ask for less (a subdirectory, fewer files)"
                        .to_owned(),
            }
        }
    }
}

impl Default for Stop {
    fn default() -> Self {
        Self::after(DEFAULT_CALL_TIME)
    }
}
