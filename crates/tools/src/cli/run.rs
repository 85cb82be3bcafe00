//! `agentcaps run` (and the validation half, shared with `check shell`).

use agentcaps::shell::{CommandRequest, ShellError, ShellPolicy, ValidatedCommand};
use serde_json::json;

use super::{Outcome, RunArgs, ShellArgs, dir_arg, load_policy, runtime};

/// The outcome for a refusal (exit 3) or a failure (exit 1).
pub(crate) fn shell_outcome(e: &ShellError) -> Outcome {
    Outcome::from_error(e.is_refusal(), e.rule(), e)
}

/// Loads the policy and validates the command of `args`.
pub(crate) fn validate(args: &ShellArgs) -> Result<(ValidatedCommand, ShellPolicy), Outcome> {
    let (_, shell) = policies(args)?;
    let mut request = match (&args.command, args.argv.is_empty()) {
        (Some(command), true) => CommandRequest::line(command.clone()),
        (None, false) => CommandRequest::argv(args.argv.clone()),
        _ => return Err(no_command()),
    };
    if let Some(cwd) = cwd(args)? {
        request = request.with_cwd(cwd);
    }
    let validated = shell.validate(&request).map_err(|e| shell_outcome(&e))?;
    Ok((validated, shell))
}

fn policies(args: &ShellArgs) -> Result<(agentcaps::Policy, ShellPolicy), Outcome> {
    let policy = load_policy(args.common.policy.as_deref())?;
    let shell = policy
        .shell_policy()
        .map_err(|e| Outcome::usage("policy", e.to_string()))?;
    Ok((policy, shell))
}

fn no_command() -> Outcome {
    Outcome::usage(
        "usage",
        "give the command after `--` (argv) or with --command STRING",
    )
}

fn cwd(args: &ShellArgs) -> Result<Option<String>, Outcome> {
    args.cwd
        .as_ref()
        .map(|cwd| Ok(dir_arg(Some(cwd))?.to_string_lossy().into_owned()))
        .transpose()
}

/// `run --ask`: validate, asking the person at the terminal about a
/// refusal the policy asks about.
fn validate_asking(
    args: &ShellArgs,
    rt: &tokio::runtime::Runtime,
) -> Result<(ValidatedCommand, ShellPolicy), Outcome> {
    let (policy, shell) = policies(args)?;
    let argv = match (&args.command, args.argv.is_empty()) {
        (Some(command), true) => agentcaps::shell::split(command).map_err(|e| shell_outcome(&e))?,
        (None, false) => args.argv.clone(),
        _ => return Err(no_command()),
    };
    let cwd = cwd(args)?;
    let validated = rt
        .block_on(agentcaps_tools::validate_command(
            &shell,
            &policy.approvals,
            &argv,
            cwd.as_deref(),
            &super::ask::Terminal,
        ))
        .map_err(|e| Outcome::from_error(e.is_refusal(), e.rule(), &e))?;
    Ok((validated, shell))
}

/// `run`: validate, run, print the child's output; exit 0 when it ran.
pub(crate) fn run(args: &RunArgs) -> Outcome {
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(outcome) => return outcome,
    };
    let validated = if args.ask {
        validate_asking(&args.shell, &rt)
    } else {
        validate(&args.shell)
    };
    let (validated, shell) = match validated {
        Ok(ok) => ok,
        Err(outcome) => return outcome,
    };
    match rt.block_on(shell.run(validated)) {
        Ok(result) => {
            let result = agentcaps_tools::CommandOutput::from(result);
            let mut text = result.stdout.clone();
            if !result.stderr.is_empty() {
                eprint!("{}", result.stderr);
            }
            if result.timed_out {
                eprintln!("agentcaps: the command timed out and was killed");
            }
            if let Some(changes) = &result.changes {
                for refused in &changes.refused {
                    eprintln!(
                        "agentcaps: did not apply {} of {} (rule {}): {}",
                        refused.action, refused.path, refused.rule, refused.reason
                    );
                }
            }
            for c in result.connections.iter().flatten() {
                // A refusal is the policy's; anything else failed.
                let what = match c.decision.as_str() {
                    "allow" => continue,
                    "deny" => "refused",
                    _ => "could not complete",
                };
                eprintln!(
                    "agentcaps: network proxy {what} {} {}:{} (rule {}): {}",
                    c.method, c.host, c.port, c.rule, c.reason
                );
            }
            if let Some(note) = result.dropped_note() {
                eprintln!("agentcaps: {note}");
            }
            if let Some(reason) = &result.enforced_reason {
                eprintln!("agentcaps: enforcement {}: {reason}", result.enforced);
            }
            if text.ends_with('\n') {
                text.pop();
            }
            let value = serde_json::to_value(&result).unwrap_or_default();
            Outcome::allowed("the command ran; its output is in `result`")
                .text(text)
                .with("result", value)
                .with("ran", json!(true))
        }
        Err(e) => shell_outcome(&e),
    }
}
