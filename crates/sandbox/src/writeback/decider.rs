//! Asking about what the write-back refused but a person may allow.
//!
//! Some refusals are a policy's caution, not a danger the write-back
//! cannot judge: a command's change of a write-protected file (a
//! workflow, `.cargo/config.toml`, an index or commit that records one).
//! A [`WriteBackDecider`] is asked about those changes of a run, once,
//! after the command ended and everything was judged; meanwhile they stay
//! staged. The approved ones land in the same commit as the allowed ones
//! (one commit: all of it, or each failing change alone); the declined
//! ones, and any the decider does not answer, never do and stay listed as
//! refused. Nothing else is ever asked: blocked names, links leaving the
//! roots, git's own code (`hooks/`, a config key that runs a program),
//! conflicts and special files are refused whatever a decider would say.

use std::fmt;
use std::sync::Arc;

use super::changes::RefusedChange;

/// Decides which of a run's askable refused changes land.
pub trait WriteBackDecider: Send + Sync {
    /// Called once per run that has askable changes (rule
    /// `write-protected`), with them as they would be listed; returns,
    /// for each in order, whether it may land. A missing answer is a
    /// no. It runs on the runner's thread once the command has ended, and
    /// may block (asking a person): the run waits for it.
    fn decide(&self, asked: &[RefusedChange]) -> Vec<bool>;
}

/// A decider as a sandbox holds it.
#[derive(Clone)]
pub(crate) struct Decider(pub(crate) Arc<dyn WriteBackDecider>);

impl fmt::Debug for Decider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Decider")
    }
}

impl Decider {
    /// The answers for `asked`, one per change (a missing one is a no).
    pub(crate) fn answers(&self, asked: &[RefusedChange]) -> Vec<bool> {
        let mut answers = self.0.decide(asked);
        answers.resize(asked.len(), false);
        answers
    }
}
