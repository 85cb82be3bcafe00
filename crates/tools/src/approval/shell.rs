//! Asking about a command: validate; when the refusal's rule is asked
//! about and a waiver can let exactly it through, ask (or use a remembered
//! "yes"), then validate the same command again with that one refusal
//! waived. Each round waives one more refusal, each asked about by name.

use std::sync::Mutex;

use agentcaps::shell::{CommandRequest, ShellError, ShellPolicy, ValidatedCommand, Waivers};
use agentcaps::{ApprovalsConfig, Remember};

use super::{Action, Answer, ApprovalRecord, Approver, Memory, Question};
use crate::ToolError;

/// The most questions one call asks: past that, the refusal stands.
const MAX_QUESTIONS: usize = 4;

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

/// Why a command does not run.
#[derive(Debug)]
pub(crate) enum Stopped {
    /// Refused, and not asked about.
    Refused(ShellError),
    /// Refused, asked about, and not approved.
    NotApproved {
        /// The refusal asked about.
        refusal: ShellError,
        /// What came back.
        answer: Answer,
    },
}

impl Stopped {
    /// The error a model (or the command line) reads: the refusal as
    /// `refused` words it, and what the person answered.
    pub(crate) fn into_error(self, refused: impl Fn(ShellError) -> ToolError) -> ToolError {
        match self {
            Stopped::Refused(e) => refused(e),
            Stopped::NotApproved {
                refusal,
                answer: Answer::Unavailable(why),
            } => ToolError::ApprovalUnavailable {
                source: Box::new(refused(refusal)),
                why,
            },
            Stopped::NotApproved { refusal, answer } => ToolError::NotApproved {
                source: Box::new(refused(refusal)),
                answer,
            },
        }
    }
}

/// Judges the command `argv` in `cwd` (relative to the policy's working
/// directory; default: it) under `shell`, asking `approver` about a
/// refusal whose rule `approvals` lists, as `shell_command` does: for a
/// host that runs the command itself (`agentcaps run --ask`). Nothing is
/// remembered between calls.
///
/// # Errors
///
/// [`ToolError::Shell`] for a refusal not asked about (or a failure),
/// [`ToolError::NotApproved`] when the person did not approve, and
/// [`ToolError::ApprovalUnavailable`] when no one could be asked.
pub async fn validate_command(
    shell: &ShellPolicy,
    approvals: &ApprovalsConfig,
    argv: &[String],
    cwd: Option<&str>,
    approver: &dyn Approver,
) -> Result<ValidatedCommand, ToolError> {
    let mut request = CommandRequest::argv(argv.iter().cloned());
    if let Some(cwd) = cwd {
        request = request.with_cwd(cwd);
    }
    let action = || Some(Action::command(argv, &super::command_cwd(shell, cwd)));
    let records = Mutex::new(Vec::new());
    let memory = Memory::default();
    let asking = Asking {
        config: approvals,
        approver,
        memory: &memory,
        records: &records,
        tool: "run",
    };
    validate_asking(shell, &request, &action, &asking)
        .await
        .map_err(|stopped| {
            stopped.into_error(|e| ToolError::Shell {
                tool: "run",
                source: Box::new(e),
                allowed: String::new(),
            })
        })
}

impl Asking<'_> {
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

    /// Asks `question`, waiting at most its timeout.
    async fn ask(&self, question: &Question) -> Answer {
        tokio::time::timeout(question.timeout, self.approver.ask(question))
            .await
            .unwrap_or(Answer::TimedOut)
    }
}

/// Validates `request`; a refusal the policy asks about is put to a person
/// as a question about `action()` (the exact argv and working directory).
pub(crate) async fn validate_asking(
    policy: &ShellPolicy,
    request: &CommandRequest,
    action: &(dyn Fn() -> Option<Action> + Sync),
    asking: &Asking<'_>,
) -> Result<ValidatedCommand, Stopped> {
    let mut waivers = Waivers::none();
    let mut asked = 0;
    loop {
        let refusal = match policy.validate_waiving(request, &waivers) {
            Ok(validated) => return Ok(validated),
            Err(refusal) => refusal,
        };
        if !asking.config.asks(refusal.rule()) || !Waivers::can_waive(&refusal) {
            return Err(Stopped::Refused(refusal));
        }
        let Some(action) = action() else {
            return Err(Stopped::Refused(refusal));
        };
        let text = refusal.to_string();
        let session = asking.config.remember == Remember::Session;
        if session && asking.memory.holds(&action.digest, &text) {
            asking.record(refusal.rule(), &action, "remembered");
            waivers.waive(&refusal);
            continue;
        }
        asked += 1;
        if asked > MAX_QUESTIONS {
            return Err(Stopped::Refused(refusal));
        }
        let question = Question {
            tool: asking.tool,
            rule: refusal.rule(),
            refusal: text,
            action,
            may_remember: session,
            timeout: std::time::Duration::from_millis(asking.config.timeout_ms),
        };
        let answer = match asking.ask(&question).await {
            // Remembered only where the policy allows session memory.
            Answer::Approve { remember } => Answer::Approve {
                remember: remember && session,
            },
            answer => answer,
        };
        asking.record(question.rule, &question.action, answer.word());
        match answer {
            Answer::Approve { remember } => {
                if remember && session {
                    asking
                        .memory
                        .remember(&question.action.digest, &question.refusal);
                }
                waivers.waive(&refusal);
            }
            answer => return Err(Stopped::NotApproved { refusal, answer }),
        }
    }
}
