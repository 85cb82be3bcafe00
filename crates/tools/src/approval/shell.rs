//! Asking about a command: validate; when the refusal's rule is asked
//! about and a waiver can let exactly it through, ask (or use a remembered
//! "yes"), then validate the same command again with that one refusal
//! waived. Each round waives one more refusal, each asked about by name.

use std::sync::Mutex;

use agentcaps::ApprovalsConfig;
use agentcaps::shell::{CommandRequest, ShellError, ShellPolicy, ValidatedCommand, Waivers};

use super::asking::not_approved;
use super::{Action, Answer, Approver, Asking, Memory};
use crate::ToolError;

/// The most questions one call asks: past that, the refusal stands.
const MAX_QUESTIONS: usize = 4;

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
            Stopped::NotApproved { refusal, answer } => not_approved(refused(refusal), answer),
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
    let mut waived: Vec<String> = Vec::new();
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
        // A "yes" that could not let this refusal through (the waiver does
        // not reach where it is raised) is not asked for.
        let mut trial = waivers.clone();
        trial.waive(&refusal);
        if matches!(policy.validate_waiving(request, &trial), Err(e) if e.to_string() == text) {
            return Err(Stopped::Refused(refusal));
        }
        // The same refusal again after its waiver: the waiver cannot let it
        // through, so the refusal stands (never asked twice in one call).
        if waived.contains(&text) {
            return Err(Stopped::Refused(refusal));
        }
        if !asking.remembered(refusal.rule(), &text, &action) {
            asked += 1;
            if asked > MAX_QUESTIONS {
                return Err(Stopped::Refused(refusal));
            }
            if let Err(answer) = asking.ask(refusal.rule(), text.clone(), action).await {
                return Err(Stopped::NotApproved { refusal, answer });
            }
        }
        waivers.waive(&refusal);
        waived.push(text);
    }
}
