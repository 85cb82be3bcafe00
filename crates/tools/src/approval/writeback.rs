//! Asking about a command's write-back: the changes its run made that the
//! write-back refused only because they write a write-protected entry (a
//! workflow, `.cargo/config.toml`, a commit that records one) stay staged
//! while a person is asked, once per run, about exactly those changes of
//! that command; a "yes" lands them in the same commit as the allowed ones,
//! anything else leaves them refused and listed. Never remembered: the
//! next run's changes are other bytes.
//!
//! The sandbox asks from its runner while the run's future is polled, and
//! may block there; the person is asked by the call's own task. So the run
//! goes on a task of its own, and its decider hands each question to the
//! call over a channel and waits (on a multi-threaded runtime, moving the
//! other tasks off its thread) for the answer, at most the policy's
//! timeout. Where it cannot wait (a single-threaded runtime, the call gone),
//! the answer is no.

use std::sync::Arc;
use std::time::Duration;

use agentcaps::shell::{
    OutputCounter, RefusedChange, RunResult, ShellError, ShellPolicy, ValidatedCommand,
    WriteBackDecider,
};
use tokio::sync::mpsc;

use super::{Action, Asking};

/// The rule of the changes asked about.
pub(crate) const RULE: &str = "write-protected";

/// One question of the decider: the changes, and where the answer goes.
type Asked = (Vec<RefusedChange>, std::sync::mpsc::Sender<bool>);

/// The sandbox's decider: hands the question to the call and waits.
struct Handing {
    questions: mpsc::UnboundedSender<Asked>,
    timeout: Duration,
}

impl WriteBackDecider for Handing {
    fn decide(&self, asked: &[RefusedChange]) -> Vec<bool> {
        let multi = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let (answer, answered) = std::sync::mpsc::channel();
        if !multi || self.questions.send((asked.to_vec(), answer)).is_err() {
            return vec![false; asked.len()];
        }
        // A little longer than the question waits: its own timeout answers.
        let wait = self.timeout + Duration::from_secs(1);
        let yes = tokio::task::block_in_place(|| answered.recv_timeout(wait)).unwrap_or(false);
        vec![yes; asked.len()]
    }
}

/// A task that is aborted when the call is dropped (its command killed, as
/// when the call itself ran it).
struct Aborting<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Aborting<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `validated` under `policy`, asking the person about the run's
/// write-protected changes (the command is `command`) when the policy
/// lists `write-protected`.
pub(crate) async fn run_asking(
    policy: &ShellPolicy,
    validated: ValidatedCommand,
    command: Option<Action>,
    asking: &Asking<'_>,
    counter: Option<OutputCounter>,
) -> Result<RunResult, ShellError> {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let Some(command) = command.filter(|_| asking.asks(RULE) && multi) else {
        return match counter {
            Some(counter) => policy.run_counting_output(validated, counter).await,
            None => policy.run(validated).await,
        };
    };
    let (questions, mut asked) = mpsc::unbounded_channel();
    let decider = Arc::new(Handing {
        questions,
        timeout: asking.timeout(),
    });
    let policy = policy.clone();
    let mut run = Aborting(tokio::spawn(async move {
        policy.run_deciding(validated, decider, counter).await
    }));
    loop {
        tokio::select! {
            done = &mut run.0 => {
                return done.unwrap_or_else(|e| Err(ShellError::Spawn {
                    program: std::path::PathBuf::from("the command"),
                    source: std::io::Error::other(format!("its run failed: {e}")),
                }));
            }
            Some((changes, answer)) = asked.recv() => {
                let action = Action::write_back(&command, &changes);
                let refusal = refusal(&changes);
                let yes = asking.ask_once(RULE, refusal, action).await.is_ok();
                let _ = answer.send(yes);
            }
        }
    }
}

/// The refusal as the model would have read it: each change and why.
fn refusal(changes: &[RefusedChange]) -> String {
    let each: Vec<String> = changes
        .iter()
        .map(|c| format!("{} ({}): {}", c.path, c.rule, c.reason))
        .collect();
    format!(
        "the command's write-back refused {} change(s) to write-protected files: {}",
        changes.len(),
        each.join("; ")
    )
}
