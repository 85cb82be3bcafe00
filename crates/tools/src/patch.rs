//! `apply_patch`: parse, plan in memory, then commit atomically beneath the
//! roots with `agentcaps-patch`.

use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps::patch::{ApplyOptions, Patcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::toolbox::Answer;
use crate::{ToolError, inputs};

const TOOL: &str = "apply_patch";

/// The patch tool.
pub(crate) struct PatchTool {
    patcher: Patcher,
    base: PathBuf,
}

/// Result of `apply_patch` (the patch crate's report, with a schema).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PatchOutput {
    /// Nothing was written.
    dry_run: bool,
    /// Per file, in patch order.
    files: Vec<PatchedFile>,
    /// Files kept aside that could not be removed afterwards (normally
    /// absent): the patch is applied; these are left to remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    left_over: Vec<String>,
    /// Dry runs: the unified diff that would be applied (each hunk where
    /// it matched, with the file's own lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

/// What happened to one file.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PatchedFile {
    /// The file's path (its new path for a move).
    path: String,
    /// The old path, for a move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    /// `created`, `modified`, `deleted` or `moved`.
    action: String,
    /// Each hunk, in order.
    hunks: Vec<PatchedHunk>,
}

/// Where one hunk applied.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PatchedHunk {
    /// 1-based index of the hunk within its file.
    index: u64,
    /// The line the hunk header stated, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stated_line: Option<u64>,
    /// The line where the hunk's first old line was found, 1-based.
    applied_line: u64,
    /// `applied_line - stated_line`.
    offset: i64,
    /// What matching conceded (empty for an exact match where stated).
    concessions: Vec<String>,
}

impl Answer for PatchOutput {
    fn text(&self) -> String {
        let mut text = if self.dry_run {
            format!(
                "Dry run: the patch applies to {} file(s); nothing written.",
                self.files.len()
            )
        } else {
            format!("Applied the patch to {} file(s).", self.files.len())
        };
        for file in &self.files {
            let from = file
                .from
                .as_deref()
                .map_or_else(String::new, |from| format!(" (from {from})"));
            text.push_str(&format!(
                "\n{} {}{from}: {} hunk(s)",
                file.action,
                file.path,
                file.hunks.len()
            ));
            for hunk in file
                .hunks
                .iter()
                .filter(|h| h.offset != 0 || !h.concessions.is_empty())
            {
                text.push_str(&format!(
                    "\n  hunk {} applied at line {}{}",
                    hunk.index,
                    hunk.applied_line,
                    if hunk.concessions.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", hunk.concessions.join(", "))
                    }
                ));
            }
        }
        for left in &self.left_over {
            text.push_str(&format!("\nleft over (remove it): {left}"));
        }
        if let Some(diff) = &self.diff {
            text.push_str("\nThe diff it would apply:\n");
            text.push_str(diff.trim_end_matches('\n'));
        }
        text
    }
}

impl PatchTool {
    pub(crate) fn new(policy: &Policy, base: &Path) -> Result<Self, ToolError> {
        let paths = policy.path_policy()?;
        Ok(Self {
            patcher: Patcher::new(paths, policy.patch.clone()),
            base: base.to_path_buf(),
        })
    }

    /// Applies the patch, judging its writes at the other names `links`
    /// (the file tools' guarded links) give them.
    pub(crate) fn apply(
        &self,
        input: &inputs::ApplyPatch,
        links: Option<std::sync::Arc<agentcaps::paths::GuardedLinks>>,
    ) -> Result<PatchOutput, ToolError> {
        let err = |source| ToolError::Patch {
            tool: TOOL,
            source: Box::new(source),
        };
        let patch = self.patcher.parse(&input.patch).map_err(err)?;
        let options = ApplyOptions {
            dry_run: input.dry_run,
            strip: None,
        };
        let report = self
            .patcher
            .apply_with_links(&patch, &self.base, options, links)
            .map_err(err)?;
        serde_json::to_value(&report)
            .and_then(serde_json::from_value)
            .map_err(|e| ToolError::Unsupported {
                tool: TOOL,
                rule: "output",
                message: format!("the patch was applied but its report could not be read: {e}"),
            })
    }
}
