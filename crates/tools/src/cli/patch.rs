//! `agentcaps patch`.

use std::io::Read;

use agentcaps::patch::{ApplyOptions, ApplyReport, PatchError, Patcher};
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
        std::fs::File::open(&args.file).and_then(|f| {
            // Room for the whole file (and the byte that ends it) at once.
            let len = f.metadata().map_or(0, |m| m.len()).min(limit);
            bytes.reserve_exact(usize::try_from(len).unwrap_or(0).saturating_add(1));
            f.take(limit).read_to_end(&mut bytes)
        })
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
    let verb = if args.dry_run {
        "would apply"
    } else {
        "applied"
    };
    let mut message = format!("{verb}:\n{}", summary(&report));
    // A dry run also shows the unified diff it would apply.
    if let Some(diff) = &report.diff {
        message.push('\n');
        message.push_str(diff.trim_end_matches('\n'));
    }
    let outcome = Outcome::allowed(message).with("dry_run", json!(args.dry_run));
    // The whole report (every hunk) is only built for `--json`.
    let outcome = if args.common.json {
        outcome.with("report", serde_json::to_value(&report).unwrap_or_default())
    } else {
        outcome
    };
    // The process ends right after this: freeing a large patch's tens of
    // thousands of parsed lines one by one would only delay the exit.
    std::mem::forget((patch, report, text));
    Ok(outcome)
}

/// One line per file: what happened, hunks, offsets and concessions; then
/// any file that was kept aside and could not be removed.
fn summary(report: &ApplyReport) -> String {
    let mut lines: Vec<String> = report
        .files
        .iter()
        .map(|file| {
            let action = file.action.as_str();
            let target = match &file.from {
                Some(from) => format!("{from} -> {}", file.path),
                None => file.path.clone(),
            };
            let hunks = &file.hunks;
            let moved = hunks.iter().filter(|h| h.offset != 0).count();
            let conceded = hunks.iter().filter(|h| !h.concessions.is_empty()).count();
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
    for left in &report.left_over {
        lines.push(format!("  warning: could not remove {left}"));
    }
    lines.join("\n")
}
