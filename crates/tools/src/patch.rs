//! `apply_patch`: parse, plan in memory, then commit atomically beneath the
//! roots with `agentcaps-patch`.

use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps::patch::{ApplyOptions, ApplyReport, Patcher};

use crate::{ToolError, inputs};

const TOOL: &str = "apply_patch";

/// The patch tool.
pub(crate) struct PatchTool {
    patcher: Patcher,
    base: PathBuf,
}

impl PatchTool {
    pub(crate) fn new(policy: &Policy, base: &Path) -> Result<Self, ToolError> {
        let paths = policy.path_policy()?;
        Ok(Self {
            patcher: Patcher::new(paths, policy.patch.clone()),
            base: base.to_path_buf(),
        })
    }

    pub(crate) fn apply(&self, input: &inputs::ApplyPatch) -> Result<ApplyReport, ToolError> {
        let err = |source| ToolError::Patch {
            tool: TOOL,
            source: Box::new(source),
        };
        let patch = self.patcher.parse(&input.patch).map_err(err)?;
        let options = ApplyOptions {
            dry_run: input.dry_run,
            strip: None,
        };
        self.patcher.apply(&patch, &self.base, options).map_err(err)
    }
}
