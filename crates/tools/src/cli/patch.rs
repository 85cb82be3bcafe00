//! `agentcaps patch`.

use std::io::Read;

use agentcaps::patch::{ApplyOptions, PatchError, Patcher};
use serde_json::json;

use super::{Outcome, PatchArgs, dir_arg, load_policy};

/// The outcome for a refusal (exit 3) or a failure (exit 1).
fn patch_outcome(e: &PatchError) -> Outcome {
    Outcome::from_error(e.is_refusal(), e.rule(), e)
}

/// `patch`: exit 0 applied (or would apply, with --dry-run), 3 refused by
/// the policy, 1 does not apply, 2 usage.
pub(crate) fn patch(args: &PatchArgs) -> Outcome {
    match patch_inner(args) {
        Ok(outcome) | Err(outcome) => outcome,
    }
}

fn patch_inner(args: &PatchArgs) -> Result<Outcome, Outcome> {
    let policy = load_policy(args.common.policy.as_deref())?;
    let cwd = dir_arg(args.cwd.as_deref())?;
    let mut text = String::new();
    let read = if args.file == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(&args.file).and_then(|mut f| f.read_to_string(&mut text))
    };
    read.map_err(|e| Outcome::failed("io", format!("cannot read the patch {}: {e}", args.file)))?;
    let paths = policy
        .path_policy()
        .map_err(|e| Outcome::usage("policy", e.to_string()))?;
    let patcher = Patcher::new(paths, policy.patch.clone());
    let patch = patcher.parse(&text).map_err(|e| patch_outcome(&e))?;
    let options = ApplyOptions {
        dry_run: args.dry_run,
        strip: args.strip,
    };
    let report = patcher
        .apply(&patch, &cwd, options)
        .map_err(|e| patch_outcome(&e))?;
    let value = serde_json::to_value(&report).unwrap_or_default();
    let verb = if args.dry_run {
        "would apply"
    } else {
        "applied"
    };
    Ok(Outcome::allowed(format!(
        "{verb}: {}",
        serde_json::to_string_pretty(&value).unwrap_or_default()
    ))
    .with("dry_run", json!(args.dry_run))
    .with("report", value))
}
