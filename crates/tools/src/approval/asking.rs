//! One question about one refusal of one exact action: a "yes" remembered
//! for the session is used without asking; otherwise the person is asked,
//! at most the policy's timeout, and a "yes" to remember is remembered.
//! Every question and every remembered use is one record for the call log.

use std::sync::Mutex;

use agentcaps::{ApprovalsConfig, Remember};

use super::{Action, Answer, ApprovalRecord, Approver, Memory, Question};
use crate::ToolError;

/// Everything one call needs to ask a person.
pub(crate) struct Asking<'a> {
    /// `[approvals]`.
    pub(crate) config: &'a ApprovalsConfig,
    /// Who answers.
    pub(crate) approver: &'a dyn Approver,
    /// The session's remembered approvals.
    pub(crate) memory: &'a Memory,
    /// The questions asked and their answers, for the call log.
    pub(crate) records: &'a Mutex<Vec<ApprovalRecord>>,
    /// The tool asking.
    pub(crate) tool: &'static str,
}

impl Asking<'_> {
    /// Whether the policy asks about refusals under `rule`.
    pub(crate) fn asks(&self, rule: &str) -> bool {
        self.config.asks(rule)
    }

    fn session(&self) -> bool {
        self.config.remember == Remember::Session
    }

    fn record(&self, rule: &'static str, action: &Action, answer: &'static str) {
        if let Ok(mut records) = self.records.lock() {
            records.push(ApprovalRecord {
                tool: self.tool,
                rule,
                action: action.digest.clone(),
                answer,
                client: self.approver.who(),
            });
        }
    }

    /// Whether the refusal `refusal` (under `rule`) of `action` was
    /// approved earlier in the session and remembered; a use is recorded.
    pub(crate) fn remembered(&self, rule: &'static str, refusal: &str, action: &Action) -> bool {
        let held = self.session() && self.memory.holds(&action.digest, refusal);
        if held {
            self.record(rule, action, "remembered");
        }
        held
    }

    /// Asks the person about `refusal` (under `rule`) of `action`, at most
    /// the policy's timeout. `Ok` when approved (remembered for the session,
    /// under the refusal's text, when the person chose so and the policy
    /// allows it); otherwise the answer.
    pub(crate) async fn ask(
        &self,
        rule: &'static str,
        refusal: String,
        action: Action,
    ) -> Result<(), Answer> {
        let question = self.question(rule, refusal, action, self.session());
        if self.answer(&question).await? {
            self.memory
                .remember(&question.action.digest, &question.refusal);
        }
        Ok(())
    }

    /// Asks about `refusal` of `action` for this once: a "yes" is never
    /// remembered (the next run of a command writes other bytes).
    pub(crate) async fn ask_once(
        &self,
        rule: &'static str,
        refusal: String,
        action: Action,
    ) -> Result<(), Answer> {
        let question = self.question(rule, refusal, action, false);
        self.answer(&question).await.map(|_| ())
    }

    fn question(
        &self,
        rule: &'static str,
        refusal: String,
        action: Action,
        may_remember: bool,
    ) -> Question {
        Question {
            tool: self.tool,
            rule,
            refusal,
            action,
            may_remember,
            timeout: self.timeout(),
        }
    }

    /// How long a question waits.
    pub(crate) fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.config.timeout_ms)
    }

    /// Puts `question` to the person: `Ok(remember)` when approved
    /// (`remember` only where the policy allows session memory), otherwise
    /// the answer. Recorded either way.
    async fn answer(&self, question: &Question) -> Result<bool, Answer> {
        let answer = tokio::time::timeout(question.timeout, self.approver.ask(question))
            .await
            .unwrap_or(Answer::TimedOut);
        let answer = match answer {
            Answer::Approve { remember } => Answer::Approve {
                remember: remember && self.session(),
            },
            answer => answer,
        };
        self.record(question.rule, &question.action, answer.word());
        match answer {
            Answer::Approve { remember } => Ok(remember),
            answer => Err(answer),
        }
    }

    /// A refusal `refused` that the policy asks about, put to the person
    /// (or approved earlier in the session): `Ok` to go on with exactly
    /// `action`, or the error the model reads (the refusal and the answer).
    ///
    /// A "yes" is remembered under `key` (with the action's digest): what
    /// of the refusal the approval covers, without how the agent spelled
    /// the action (the rule and the protected glob for a path).
    pub(crate) async fn approve(
        &self,
        refused: ToolError,
        key: &str,
        action: Action,
    ) -> Result<(), ToolError> {
        let rule = refused.rule();
        if self.remembered(rule, key, &action) {
            return Ok(());
        }
        let question = self.question(rule, refused.to_string(), action, self.session());
        match self.answer(&question).await {
            Ok(true) => {
                self.memory.remember(&question.action.digest, key);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(answer) => Err(not_approved(refused, answer)),
        }
    }
}

/// The error for a refusal the person did not approve: it names
/// `approval-unavailable` when no one could be asked.
pub(crate) fn not_approved(refused: ToolError, answer: Answer) -> ToolError {
    match answer {
        Answer::Unavailable(why) => ToolError::ApprovalUnavailable {
            source: Box::new(refused),
            why,
        },
        answer => ToolError::NotApproved {
            source: Box::new(refused),
            answer,
        },
    }
}
