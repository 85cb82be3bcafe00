//! `agentcaps check path|shell|url|policy`: ask the policy, act on nothing.

use agentcaps::paths::Access;
use agentcaps::shell::kernel;
use serde_json::json;

use super::{
    CheckPathArgs, CommonArgs, Outcome, ShellArgs, UrlArgs, dir_arg, load_policy, runtime,
};

/// `check path`: every path is judged; the answer is `deny` if any is.
pub(crate) fn path(args: &CheckPathArgs) -> Outcome {
    match path_inner(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn path_inner(args: &CheckPathArgs) -> Result<Outcome, Outcome> {
    let policy = load_policy(args.common.policy.as_deref())?;
    let cwd = dir_arg(args.cwd.as_deref())?;
    let paths = policy
        .path_policy()
        .map_err(|e| Outcome::usage("policy", e.to_string()))?;
    let access = if args.write {
        Access::Write
    } else {
        Access::Read
    };
    let mut results = Vec::new();
    let mut lines = Vec::new();
    let mut first_refusal: Option<(&'static str, String)> = None;
    let mut failure: Option<String> = None;
    for spelling in &args.paths {
        match paths.check(&cwd, spelling, access) {
            Ok(checked) => {
                let location = checked.location().display().to_string();
                lines.push(format!("allow  {spelling}  ->  {location}"));
                results.push(json!({"path": spelling, "decision": "allow", "location": location}));
            }
            Err(e) => {
                let decision = if e.is_refusal() { "deny" } else { "error" };
                lines.push(format!("{decision:<5}  {spelling}  ({}) {e}", e.rule()));
                results.push(json!({"path": spelling, "decision": decision, "rule": e.rule(), "reason": e.to_string()}));
                if e.is_refusal() {
                    first_refusal.get_or_insert((e.rule(), e.to_string()));
                } else {
                    failure.get_or_insert(e.to_string());
                }
            }
        }
    }
    let outcome = match (first_refusal, failure) {
        (Some((rule, reason)), _) => Outcome::refused(rule, reason),
        (None, Some(reason)) => Outcome::failed("io", reason),
        (None, None) => Outcome::allowed("allowed"),
    };
    let access_name = if args.write { "write" } else { "read" };
    Ok(outcome
        .with("access", json!(access_name))
        .with("paths", json!(results))
        .text(lines.join("\n"))
        .report())
}

/// `check shell`: validate, never run; say what the kernel would enforce.
pub(crate) fn shell(args: &ShellArgs) -> Outcome {
    let (validated, policy) = match super::run::validate(args) {
        Ok(ok) => ok,
        Err(outcome) => return outcome,
    };
    let rules = policy.kernel_rules(&validated);
    let (enforced, reason) = policy.planned_enforcement(&validated);
    let argv = serde_json::to_string(&validated.argv()).unwrap_or_default();
    let why = reason
        .as_deref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    let outcome = if rules.require && !enforced.is_full() {
        Outcome::refused(
            kernel::KernelRefusal::RULE,
            format!(
                "{argv} would not run: require_kernel_enforcement is set and enforcement here would be only `{enforced}`{why}.",
            ),
        )
    } else {
        let mode = if reason.is_none() || enforced.is_full() {
            "private view, judged write-back, Landlock"
        } else {
            "fallback"
        };
        Outcome::allowed(format!(
            "allow  {argv}\nkernel enforcement: {enforced}{why}\nmode: {mode}"
        ))
    };
    outcome
        .with("argv", json!(validated.argv()))
        .with("enforced", json!(enforced.to_string()))
        .with("enforced_reason", json!(reason))
}

/// `check url`: resolve and judge every address, without connecting.
pub(crate) fn url(args: &UrlArgs) -> Outcome {
    match url_inner(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn url_inner(args: &UrlArgs) -> Result<Outcome, Outcome> {
    let policy = load_policy(args.common.policy.as_deref())?;
    let egress = policy
        .egress_policy()
        .map_err(|e| Outcome::usage("policy", e.to_string()))?;
    let method = super::fetch::method(&args.method)?;
    let client =
        agentcaps::egress::Client::new(egress).map_err(|e| super::fetch::egress_outcome(&e))?;
    let rt = runtime()?;
    let checked = rt.block_on(client.resolve_and_check(&args.url, &method));
    match checked {
        Ok(resolved) => {
            let addresses: Vec<String> =
                resolved.addresses.iter().map(ToString::to_string).collect();
            Ok(
                Outcome::allowed(format!("allow  {}  ->  {}", args.url, addresses.join(", ")))
                    .with("url", json!(args.url))
                    .with("addresses", json!(addresses)),
            )
        }
        Err(e) => Err(super::fetch::egress_outcome(&e).with("url", json!(args.url))),
    }
}

/// `check policy`: print the effective policy (every default expanded,
/// each entry with its origin) and its warnings.
pub(crate) fn policy(args: &CommonArgs) -> Outcome {
    let policy = match load_policy(args.policy.as_deref()) {
        Ok(policy) => policy,
        Err(outcome) => return outcome,
    };
    let mut warnings: Vec<String> = policy.notices().iter().map(ToString::to_string).collect();
    if let Some(warning) = policy.placement_warning() {
        eprintln!("{warning}");
        warnings.push(warning);
    }
    let origin = policy.origin().to_string();
    let text = policy.effective_toml();
    // Name, source and hosts: never a value.
    let credentials: Vec<_> = policy
        .credentials()
        .iter()
        .map(|c| json!({"name": c.name, "source": c.source.to_string(), "hosts": c.credential.hosts()}))
        .collect();
    Outcome::allowed(text.trim_end().to_owned())
        .with("credentials", json!(credentials))
        .with("origin", json!(origin))
        .with("warnings", json!(warnings))
        .with("effective", json!(text))
}
