//! `shell_command`: validate with `agentcaps-shell`, then run (no shell,
//! process group killed on timeout, output capped).

use std::time::Duration;

use agentcaps::Policy;
use agentcaps::shell::{CommandRequest, Exit, OutputCounter, RunResult, ShellError, ShellPolicy};
use schemars::JsonSchema;
use serde::Serialize;

use crate::approval::{Action, Asking, validate_asking};
use crate::{ToolError, inputs};

const TOOL: &str = "shell_command";

/// The shell tool: the built policy and what it allows, in words.
pub(crate) struct ShellTool {
    policy: ShellPolicy,
    allowed: String,
    described: String,
}

/// What a command produced, as the tool and `agentcaps run --json` report it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct CommandOutput {
    /// The exit code, when the program exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it, when it was killed (on timeout: 9).
    pub signal: Option<i32>,
    /// Standard output (UTF-8, invalid bytes replaced, capped).
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Standard output was cut at the policy's `max_output_bytes`.
    pub stdout_truncated: bool,
    /// Standard error was cut at the policy's `max_output_bytes`.
    pub stderr_truncated: bool,
    /// The timeout expired and the whole process group was killed.
    pub timed_out: bool,
    /// Wall time, in milliseconds.
    pub duration_ms: u64,
    /// The argv that ran.
    pub argv: Vec<String>,
    /// The program executed (found in the child's `PATH`).
    pub program: String,
    /// What the kernel enforced on the child: `full`, `partial (abi N)`, `none`.
    pub enforced: String,
    /// Why `enforced` is not `full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforced_reason: Option<String>,
    /// The command's writes: `applied` (landed) and `refused` (dropped, each
    /// with its rule and reason). Absent when the command ran without its
    /// private view (then its writes landed unjudged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<CommandChanges>,
    /// The connections the command asked the network proxy for, each with
    /// the decision (`[shell] network = "proxy"`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<Vec<CommandConnection>>,
    /// Connections the proxy did not list in `connections` because its
    /// limit was reached (refusals and failures only; every allowed one is
    /// listed); absent when the network is not the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_dropped: Option<u64>,
}

/// One request or tunnel a command asked the network proxy for.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct CommandConnection {
    /// `http` (a forwarded request) or `connect` (a tunnel).
    pub kind: String,
    /// The method (`CONNECT` for a tunnel).
    pub method: String,
    /// The host asked for.
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// The judged address dialled, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// `allow`, `deny` or `error`.
    pub decision: String,
    /// The rule of a refusal or failure (empty when allowed).
    pub rule: String,
    /// Why, for a refusal or failure.
    pub reason: String,
}

impl From<agentcaps::shell::Connection> for CommandConnection {
    fn from(c: agentcaps::shell::Connection) -> Self {
        Self {
            kind: c.kind,
            method: c.method,
            host: c.host,
            port: c.port,
            address: c.address,
            decision: c.decision,
            rule: c.rule,
            reason: c.reason,
        }
    }
}

/// What a command's writes came to: the changes that landed and those that
/// were refused (judged like file-tool writes when the command ended).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct CommandChanges {
    /// Changes committed to the real tree.
    pub applied: Vec<AppliedChange>,
    /// Changes dropped, each with the rule that refused it.
    pub refused: Vec<RefusedChange>,
}

/// A change that landed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct AppliedChange {
    /// Relative to the working directory when beneath it, else absolute.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename`, `mode` or `link`.
    pub action: String,
    /// For a rename, where the file was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// A change that was dropped.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct RefusedChange {
    /// Relative to the working directory when beneath it, else absolute
    /// (a directory stands for everything under it).
    pub path: String,
    /// `create`, `modify`, `delete`, `rename`, `mode` or `link`.
    pub action: String,
    /// For a refused rename, where the file was (and still is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The rule that refused it.
    pub rule: String,
    /// Why, in one sentence.
    pub reason: String,
}

impl From<agentcaps::shell::Changes> for CommandChanges {
    fn from(changes: agentcaps::shell::Changes) -> Self {
        Self {
            applied: changes
                .applied
                .into_iter()
                .map(|c| AppliedChange {
                    path: c.path,
                    action: c.action.to_string(),
                    from: c.from,
                })
                .collect(),
            refused: changes
                .refused
                .into_iter()
                .map(|c| RefusedChange {
                    path: c.path,
                    action: c.action.to_string(),
                    from: c.from,
                    rule: c.rule,
                    reason: c.reason,
                })
                .collect(),
        }
    }
}

impl From<RunResult> for CommandOutput {
    fn from(result: RunResult) -> Self {
        let (exit_code, signal) = match result.exit {
            Exit::Code(code) => (Some(code), None),
            Exit::Signal(signal) => (None, Some(signal)),
            _ => (None, None),
        };
        Self {
            exit_code,
            signal,
            stdout: result.stdout,
            stderr: result.stderr,
            stdout_truncated: result.truncated.stdout,
            stderr_truncated: result.truncated.stderr,
            timed_out: result.timed_out,
            duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
            argv: result.argv,
            program: result.program.display().to_string(),
            enforced: result.enforced.to_string(),
            enforced_reason: result.enforced_reason,
            changes: result.changes.map(CommandChanges::from),
            connections: result
                .connections
                .map(|list| list.into_iter().map(CommandConnection::from).collect()),
            connections_dropped: result.connections_dropped,
        }
    }
}

impl CommandOutput {
    /// What the result says of the connections its proxy left out of
    /// `connections` (none when it left none out).
    #[must_use]
    pub fn dropped_note(&self) -> Option<String> {
        let dropped = self.connections_dropped.filter(|n| *n > 0)?;
        Some(format!(
            "{dropped} more network proxy refusals and failures are not listed (the list is full; every allowed connection is in it)"
        ))
    }
}

impl crate::toolbox::Answer for CommandOutput {
    fn text(&self) -> String {
        let status = match (self.exit_code, self.signal) {
            (Some(code), _) => format!("exit code: {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "exit status unknown".to_owned(),
        };
        let mut text = status;
        if self.timed_out {
            text.push_str(&format!(
                " (timed out after {} ms; the process group was killed)",
                self.duration_ms
            ));
        }
        for (name, output, cut) in [
            ("stdout", &self.stdout, self.stdout_truncated),
            ("stderr", &self.stderr, self.stderr_truncated),
        ] {
            text.push_str(&format!("\n{name}:"));
            if output.is_empty() {
                text.push_str(" (empty)");
                continue;
            }
            text.push('\n');
            text.push_str(output);
            if cut {
                crate::files::note(&mut text, &format!("{name} cut at the output limit"));
            }
        }
        if let Some(note) = self.dropped_note() {
            crate::files::note(&mut text, &note);
        }
        text
    }
}

impl ShellTool {
    pub(crate) fn new(policy: &Policy) -> Result<Self, ToolError> {
        let shell = policy.shell_policy()?;
        let (described, allowed) = describe_shell(&shell);
        Ok(Self {
            policy: shell,
            allowed,
            described,
        })
    }

    /// "Allowed programs: …" for the description.
    pub(crate) fn described(&self) -> &str {
        &self.described
    }

    fn request(input: &inputs::ShellCommand) -> Result<CommandRequest, ToolError> {
        let invalid = |message: &str| ToolError::InvalidArguments {
            tool: TOOL,
            message: message.to_owned(),
        };
        let mut request = match (&input.argv, &input.command) {
            (Some(argv), None) => CommandRequest::argv(argv.iter().cloned()),
            (None, Some(command)) => CommandRequest::line(command.clone()),
            (Some(_), Some(_)) => {
                return Err(invalid("give either `argv` or `command`, not both"));
            }
            (None, None) => {
                return Err(invalid(
                    "missing `argv` (an array of strings) or `command` (a string)",
                ));
            }
        };
        if let Some(cwd) = &input.cwd {
            request = request.with_cwd(cwd.clone());
        }
        if let Some(ms) = input.timeout_ms {
            request = request.with_timeout(Duration::from_millis(ms));
        }
        Ok(request)
    }

    fn refused(&self, source: ShellError) -> ToolError {
        // That refusal lists the allowed programs itself.
        let allowed = if source.rule() == "not-allowed-program" {
            String::new()
        } else {
            self.allowed.clone()
        };
        ToolError::Shell {
            tool: TOOL,
            source: Box::new(source),
            allowed,
        }
    }

    /// The built policy.
    pub(crate) fn policy(&self) -> &ShellPolicy {
        &self.policy
    }

    /// The default working directory of commands.
    pub(crate) fn working_directory(&self) -> &std::path::Path {
        self.policy.working_directory()
    }

    pub(crate) async fn run(
        &self,
        input: inputs::ShellCommand,
        asking: &Asking<'_>,
        counter: Option<&OutputCounter>,
    ) -> Result<CommandOutput, ToolError> {
        let action = || {
            let argv = match (&input.argv, &input.command) {
                (Some(argv), _) => argv.clone(),
                (None, Some(line)) => agentcaps::shell::split(line).ok()?,
                (None, None) => return None,
            };
            let cwd = crate::approval::command_cwd(&self.policy, input.cwd.as_deref());
            Some(Action::command(&argv, &cwd))
        };
        let request = Self::request(&input)?;
        let validated = validate_asking(&self.policy, &request, &action, asking)
            .await
            .map_err(|stopped| stopped.into_error(|e| self.refused(e)))?;
        let result = crate::approval::run_asking(
            &self.policy,
            validated,
            action(),
            asking,
            counter.cloned(),
        )
        .await
        .map_err(|e| self.refused(e))?;
        Ok(result.into())
    }
}

/// (the description, the short form for refusals)
fn describe_shell(policy: &ShellPolicy) -> (String, String) {
    let mut programs: Vec<String> = policy.allowed_commands().to_vec();
    programs.extend(
        policy
            .allowed_programs()
            .iter()
            .map(|p| p.display().to_string()),
    );
    let files = if policy.path_policy().is_some() {
        "file arguments are held to the file policy"
    } else {
        "file arguments are NOT checked"
    };
    let short = format!("Allowed programs: {}.", crate::describe::list(&programs));
    let long = format!(
        "Allowed programs: {}; {files}. Timeout at most {} ms; output capped at {} bytes per stream.",
        crate::describe::list(&programs),
        policy.timeout().as_millis(),
        policy.max_output_bytes(),
    );
    (long, short)
}
