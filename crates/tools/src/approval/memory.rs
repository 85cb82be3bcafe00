//! The approvals a person chose to remember for the session
//! (`[approvals] remember = "session"`): each is one exact action and the
//! one refusal approved for it.

use std::collections::HashSet;
use std::sync::Mutex;

/// Remembered approvals: (action digest, the refusal's rule and text).
#[derive(Debug, Default)]
pub(crate) struct Memory {
    approved: Mutex<HashSet<(String, String)>>,
}

impl Memory {
    /// Whether `refusal` was approved for the action `digest` earlier.
    pub(crate) fn holds(&self, digest: &str, refusal: &str) -> bool {
        self.approved
            .lock()
            .is_ok_and(|set| set.contains(&(digest.to_owned(), refusal.to_owned())))
    }

    /// Remembers `refusal` approved for the action `digest`.
    pub(crate) fn remember(&self, digest: &str, refusal: &str) {
        if let Ok(mut set) = self.approved.lock() {
            set.insert((digest.to_owned(), refusal.to_owned()));
        }
    }
}
