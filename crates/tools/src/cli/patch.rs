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
    // Read one byte past the bound, so an oversized patch is refused by the
    // patcher's bound without first being read whole into memory.
    let limit = policy.patch.max_patch_bytes.saturating_add(1);
    let mut bytes = Vec::new();
    let read = if args.file == "-" {
        std::io::stdin().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(&args.file).and_then(|f| f.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|e| Outcome::failed("io", format!("cannot read the patch {}: {e}", args.file)))?;
    let text = if bytes.len() as u64 >= limit {
        // Over the bound: the patcher refuses it by its size, whatever the
        // cut did to the last character.
        String::from_utf8_lossy(&bytes).into_owned()
    } else {
        String::from_utf8(bytes).map_err(|_| {
            Outcome::failed("io", format!("the patch {} is not UTF-8 text", args.file))
        })?
    };
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
    Ok(Outcome::allowed(format!("{verb}:\n{}", summary(&value)))
        .with("dry_run", json!(args.dry_run))
        .with("report", value))
}

/// One line per file: what happened, hunks, offsets and concessions.
fn summary(report: &serde_json::Value) -> String {
    let files = report["files"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let lines: Vec<String> = files
        .iter()
        .map(|file| {
            let action = file["action"].as_str().unwrap_or("?");
            let path = file["path"].as_str().unwrap_or("?");
            let target = match file["from"].as_str() {
                Some(from) => format!("{from} -> {path}"),
                None => path.to_owned(),
            };
            let hunks = file["hunks"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let moved = hunks
                .iter()
                .filter(|h| h["offset"].as_i64().is_some_and(|o| o != 0))
                .count();
            let conceded = hunks
                .iter()
                .filter(|h| h["concessions"].as_array().is_some_and(|c| !c.is_empty()))
                .count();
            let mut line = format!("  {action:<8} {target}");
            if !hunks.is_empty() {
                line.push_str(&format!(
                    " ({} hunk{}",
                    hunks.len(),
                    if hunks.len() == 1 { "" } else { "s" }
                ));
                if moved > 0 {
                    line.push_str(&format!(", {moved} at an offset"));
                }
                if conceded > 0 {
                    line.push_str(&format!(", {conceded} with concessions (see --json)"));
                }
                line.push(')');
            }
            line
        })
        .collect();
    lines.join("\n")
}
