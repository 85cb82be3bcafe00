//! Approvals: a refusal whose rule the policy lists in `[approvals] ask`
//! becomes a question to a person, about the one exact action refused.
//!
//! The host answers through an [`Approver`]: the MCP server asks the client
//! (`elicitation/create`), `agentcaps run --ask` asks on the terminal, a
//! library host implements the trait itself. The default, [`Refuse`],
//! answers that no one can be asked. A "yes" covers exactly the action
//! asked about (its [`Action::digest`]) and the one refusal named; the
//! action is then judged again with that refusal waived, so every other
//! check still holds, and an approved command still runs in its private
//! view, its writes judged when it ends.
//!
//! What is asked about, and what a "yes" lets through:
//! - `not-allowed-program`, `unknown-option` (`shell_command`): the argv
//!   and working directory; the command is judged again with that one
//!   refusal waived.
//! - `name.not-allowed` (`http_request`): the method and URL; that request
//!   is sent with that one host allowed and no redirect followed.
//! - `write-protected` (`write_file`, `edit_file`, `create_directory`): the
//!   real location and the access; that call runs with the matched
//!   protected glob left out, after the path is judged again.
//! - `write-protected` (`shell_command`'s write-back): the run's changes
//!   refused only for writing a write-protected entry; they stay staged
//!   until the answer, then land with the rest in one commit, or not at all.

mod asking;
mod files;
mod http;
mod memory;
mod shell;
mod writeback;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub(crate) use asking::Asking;
pub(crate) use files::{Protected, RULE as WRITE_PROTECTED, asked_about as write_protected};
pub(crate) use http::request_asking;
pub(crate) use memory::Memory;
pub(crate) use shell::validate_asking;
pub use shell::validate_command;
pub(crate) use writeback::run_asking;

/// The exact action a refusal stopped, as a person is shown it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Action {
    /// What kind of action: `command`, `request`, `path` or `write-back`.
    pub kind: &'static str,
    /// The action in words, such as `sort notes.txt` in `/work/project`.
    pub summary: String,
    /// SHA-256 (hex) of the action's every part: a "yes" covers exactly the
    /// action with this digest.
    pub digest: String,
}

impl Action {
    /// A command: its argv, word for word, and its working directory.
    pub(crate) fn command(argv: &[String], cwd: &std::path::Path) -> Self {
        let canonical = serde_json::json!({
            "kind": "command",
            "argv": argv,
            "cwd": cwd.to_string_lossy(),
        });
        Self {
            kind: "command",
            summary: format!(
                "run `{}` in {}",
                agentcaps::shell::quote(argv),
                cwd.display()
            ),
            digest: digest(&canonical.to_string()),
        }
    }
}

impl Action {
    /// An HTTP request: its method and URL (as the client sends it). The
    /// policy binds credentials to hosts, so the URL's host fixes which one
    /// (if any) goes with it.
    pub(crate) fn request(method: &str, url: &str) -> Self {
        let canonical = serde_json::json!({
            "kind": "request",
            "method": method,
            "url": url,
        });
        Self {
            kind: "request",
            summary: format!("send {method} {url}"),
            digest: digest(&canonical.to_string()),
        }
    }

    /// A file-system access: the real location and the access (`write`).
    pub(crate) fn path(access: &'static str, location: &std::path::Path) -> Self {
        let canonical = serde_json::json!({
            "kind": "path",
            "access": access,
            "location": location.to_string_lossy(),
        });
        Self {
            kind: "path",
            summary: format!("{access} {}", location.display()),
            digest: digest(&canonical.to_string()),
        }
    }
}

impl Action {
    /// The refused write-back changes of one run of the command `command`:
    /// each path, what the command did there, and where a rename came from.
    pub(crate) fn write_back(
        command: &Action,
        changes: &[agentcaps::shell::RefusedChange],
    ) -> Self {
        let each: Vec<serde_json::Value> = changes
            .iter()
            .map(|c| serde_json::json!({"path": c.path, "action": c.action, "from": c.from}))
            .collect();
        let canonical = serde_json::json!({
            "kind": "write-back",
            "command": command.digest,
            "changes": each,
        });
        let listed: Vec<String> = changes
            .iter()
            .map(|c| {
                let action = serde_json::to_value(c.action)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                format!("{action} {}", c.path)
            })
            .collect();
        Self {
            kind: "write-back",
            summary: format!(
                "land these changes of this run of {}: {}",
                command.summary.trim_start_matches("run "),
                listed.join(", ")
            ),
            digest: digest(&canonical.to_string()),
        }
    }
}

/// The working directory of a command asked about: `cwd` (default `.`)
/// beneath the policy's, `.` components dropped (`./x` and `x` are one).
pub(crate) fn command_cwd(
    shell: &agentcaps::shell::ShellPolicy,
    cwd: Option<&str>,
) -> std::path::PathBuf {
    shell
        .working_directory()
        .join(cwd.unwrap_or("."))
        .components()
        .collect()
}

fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One question to a person: which tool, which rule refused, why, and the
/// exact action.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Question {
    /// The tool that was called, such as `shell_command`.
    pub tool: &'static str,
    /// The rule that refused, such as `not-allowed-program`.
    pub rule: &'static str,
    /// The refusal, as the model would have read it.
    pub refusal: String,
    /// The exact action a "yes" lets through.
    pub action: Action,
    /// Whether the person may choose to remember the answer for the session
    /// (`[approvals] remember = "session"`).
    pub may_remember: bool,
    /// How long the question waits; no answer in time is a refusal.
    pub timeout: Duration,
}

impl Question {
    /// The question in a few lines, for a person (a terminal prompt, an
    /// elicitation message).
    ///
    /// Characters that would make a terminal or a client show something
    /// other than the action (control characters, bidi overrides, invisible
    /// ones) are written as `\u{..}` escapes: the agent chose those words.
    pub fn text(&self) -> String {
        format!(
            "agentcaps: `{}` was refused by rule {}: {}\nThe exact action: {}\nApprove exactly this action{}?",
            self.tool,
            self.rule,
            shown(&self.refusal),
            shown(&self.action.summary),
            if self.may_remember {
                " (once, or for this session)"
            } else {
                ", once"
            }
        )
    }
}

/// `text` with every character that changes how the rest is displayed
/// escaped: controls (ESC, CR, ...), bidi embeddings, overrides and
/// isolates, zero-width ones and the BOM.
fn shown(text: &str) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
    };
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// Yes, for this action; `remember`: also for the rest of the session
    /// (honoured only where the policy allows session memory).
    Approve {
        /// Remember the approval for the session.
        remember: bool,
    },
    /// No.
    Decline,
    /// The question was dismissed without an answer.
    Cancel,
    /// No answer came in time.
    TimedOut,
    /// No one could be asked (the reason, in a few words).
    Unavailable(String),
}

impl Answer {
    /// The word the call log writes: `approved`, `approved-session`,
    /// `declined`, `cancelled`, `timed-out` or `unavailable`.
    pub fn word(&self) -> &'static str {
        match self {
            Answer::Approve { remember: false } => "approved",
            Answer::Approve { remember: true } => "approved-session",
            Answer::Decline => "declined",
            Answer::Cancel => "cancelled",
            Answer::TimedOut => "timed-out",
            Answer::Unavailable(_) => "unavailable",
        }
    }
}

/// The future an [`Approver`] answers with.
pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// Who answers the questions: the host implements it (a dialog, a chat
/// message, a terminal prompt). [`Refuse`] is the default.
///
/// A question waits at most [`Question::timeout`]; an answer that comes
/// later counts as [`Answer::TimedOut`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # // It runs Unix `sort` and `uniq`, which a Windows host does not have.
/// # if cfg!(windows) { return Ok(()); }
/// use std::sync::Arc;
/// use agentcaps_tools::{Answer, AnswerFuture, Approver, Question, Toolbox};
/// use serde_json::json;
///
/// /// Approves running `sort`, and nothing else.
/// struct SortOnly;
///
/// impl Approver for SortOnly {
///     fn ask<'a>(&'a self, question: &'a Question) -> AnswerFuture<'a> {
///         let yes = question.rule == "not-allowed-program"
///             && question.action.summary.starts_with("run `sort");
///         Box::pin(async move {
///             if yes { Answer::Approve { remember: false } } else { Answer::Decline }
///         })
///     }
///     fn who(&self) -> String {
///         "doc example".to_owned()
///     }
/// }
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("names.txt"), "b\na\n")?;
/// let policy = agentcaps::Policy::from_toml(
///     "[files]\nallowed = [\".\"]\n[shell]\nworking_directory = \".\"\n\
///      [approvals]\nask = [\"not-allowed-program\"]\n",
///     dir.path(),
/// )?;
/// let toolbox = Toolbox::new(&policy, dir.path())?.with_approver(Arc::new(SortOnly));
///
/// // `sort` is not in the read-only preset: the approver is asked, says yes.
/// let sorted = toolbox.call("shell_command", json!({"argv": ["sort", "names.txt"]})).await?;
/// assert_eq!(sorted.structured["stdout"], "a\nb\n");
///
/// // `uniq` is asked about too, and declined: the usual refusal says so.
/// let refused = toolbox.call("shell_command", json!({"argv": ["uniq", "names.txt"]})).await;
/// let refused = refused.unwrap_err();
/// assert_eq!(refused.rule(), "not-allowed-program");
/// assert!(refused.to_model_text().contains("declined"));
/// # Ok(()) }
/// ```
pub trait Approver: Send + Sync {
    /// Asks a person `question`.
    fn ask<'a>(&'a self, question: &'a Question) -> AnswerFuture<'a>;

    /// Who answers, for the call log (an MCP client's name).
    fn who(&self) -> String {
        "host".to_owned()
    }
}

/// The default [`Approver`]: no one can be asked, so every question is
/// answered [`Answer::Unavailable`] and the refusal stands, naming
/// `approval-unavailable`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Refuse;

impl Approver for Refuse {
    fn ask<'a>(&'a self, _question: &'a Question) -> AnswerFuture<'a> {
        Box::pin(async { Answer::Unavailable("this host has no one to ask".to_owned()) })
    }

    fn who(&self) -> String {
        "none".to_owned()
    }
}

/// One question and its answer, for the call log.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ApprovalRecord {
    /// The tool that was called.
    pub tool: &'static str,
    /// The rule of the refusal asked about.
    pub rule: &'static str,
    /// The action's digest ([`Action::digest`]).
    pub action: String,
    /// [`Answer::word`], or `remembered` for an action approved earlier in
    /// the session (not asked again).
    pub answer: &'static str,
    /// Who answered ([`Approver::who`]).
    pub client: String,
}
