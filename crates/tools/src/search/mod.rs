//! `search_files`: a regex over the files under a directory.
//!
//! The start directory is judged for `List`, then the tree below it is
//! walked by directory handle on one thread per core ([`walker`]): every
//! directory and file is opened from its parent's handle with links refused
//! ([`dirs`]), and judged by the policy as a plain name inside its real
//! directory before it is opened — a refused directory is not entered, a
//! refused file (say `.env`, in any case the policy folds) is never opened.
//! Hidden names, the `glob` argument and the tree's ignore files decide what
//! is looked at first ([`skip`]). Files larger than the read limit or
//! holding a NUL byte (binary) are skipped. Matching lines are found on the
//! whole text at once ([`matcher`]). Matches are reported sorted by path and
//! line; when the search stops early (`truncated`: more than `max_matches`,
//! the file bound, or the call's time limit), which matches were found first
//! depends on the threads.

mod dirs;
mod matcher;
mod skip;
mod walker;

use std::io::Read;
use std::sync::Arc;

use agentcaps::paths::Access;
use schemars::JsonSchema;
use serde::Serialize;

use crate::files::FileTools;
use crate::stop::Stop;
use crate::toolbox::Answer;
use crate::{ToolError, inputs};
use skip::IgnoreFiles;
use walker::{Job, Pending, Walk};

const TOOL: &str = "search_files";
pub(crate) const DEFAULT_MAX_MATCHES: u32 = 100;
pub(crate) const MAX_MATCHES_CAP: u32 = 1000;
pub(crate) const MAX_LINE_CHARS: usize = 300;
/// The most threads one search uses.
const MAX_THREADS: usize = 8;
const MAX_PATTERN_BYTES: usize = 1000;
/// Bound on the number of files looked at in one call.
pub(crate) const MAX_FILES: usize = 20_000;

/// One matching line.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Match {
    /// Path relative to the searched directory, `/`-separated.
    path: String,
    /// 1-based line number.
    line_number: u64,
    /// The line, cut to 300 characters.
    line: String,
}

/// Result of `search_files`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchFilesOutput {
    /// The matching lines, in walk order.
    matches: Vec<Match>,
    /// Files read and searched.
    files_searched: u64,
    /// Files not searched: refused by the policy, too large, binary, or
    /// unreadable.
    files_skipped: u64,
    /// The search stopped early: `max_matches`, the file bound or the
    /// call's time limit.
    truncated: bool,
}

impl Answer for SearchFilesOutput {
    fn text(&self) -> String {
        let mut text = String::new();
        for found in &self.matches {
            text.push_str(&format!(
                "{}:{}: {}\n",
                found.path, found.line_number, found.line
            ));
        }
        if self.matches.is_empty() {
            text.push_str("No matches.\n");
        }
        text.push_str(&format!(
            "[{} files searched, {} skipped (refused, too large, binary or unreadable){}]",
            self.files_searched,
            self.files_skipped,
            if self.truncated {
                "; truncated: more matches may exist, narrow the path or glob"
            } else {
                ""
            }
        ));
        text
    }
}

pub(crate) fn search_files(
    files: &FileTools,
    input: &inputs::SearchFiles,
    stop: &Stop,
) -> Result<SearchFilesOutput, ToolError> {
    let bad = |rule, message: String| ToolError::Unsupported {
        tool: TOOL,
        rule,
        message,
    };
    if input.pattern.len() > MAX_PATTERN_BYTES {
        return Err(bad(
            "pattern-too-long",
            format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes; use a shorter one"),
        ));
    }
    let matcher = matcher::Matcher::new(&input.pattern).map_err(|e| {
        bad(
            "invalid-pattern",
            format!("the pattern is not a valid regex: {e}"),
        )
    })?;
    let start = input.path.as_deref().unwrap_or(".");
    let checked = files
        .policy()
        .check(files.base(), start, Access::List)
        .map_err(|e| files.refused(TOOL, e))?;
    let root = checked.location().to_path_buf();
    let glob = match &input.glob {
        Some(glob) => Some(
            skip::Glob::new(&root, glob)
                .map_err(|e| bad("invalid-glob", format!("the glob `{glob}` is invalid: {e}")))?,
        ),
        None => None,
    };
    let dir = dirs::open_start(files, &checked).map_err(|e| ToolError::Unsupported {
        tool: TOOL,
        rule: "io",
        message: format!("cannot search `{start}`: {e}"),
    })?;
    let max = input
        .max_matches
        .unwrap_or(DEFAULT_MAX_MATCHES)
        .clamp(1, MAX_MATCHES_CAP) as usize;
    let first = Job {
        dir: Pending::Open(dir),
        location: root.clone(),
        prefix: String::new(),
        ignores: ignore_files_above(files, &checked),
    };
    let walk = Walk::new(files, &matcher, glob.as_ref(), max, stop, first);
    walk.run(std::thread::available_parallelism().map_or(2, |n| n.get().min(MAX_THREADS)));
    if stop.is_cancelled() {
        return Err(stop.error(TOOL));
    }
    let found = walk.found;
    let mut matches = found
        .matches
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    matches.sort_by(|a, b| (&a.path, a.line_number).cmp(&(&b.path, b.line_number)));
    matches.truncate(max);
    Ok(SearchFilesOutput {
        matches,
        files_searched: found.searched.into_inner(),
        files_skipped: found.skipped.into_inner(),
        truncated: found.truncated.into_inner(),
    })
}

/// The ignore files of the directories between the searched directory and
/// its root (the root included, the searched directory not: the walk reads
/// that one), each read through `Beneath` (judged); and whether one of
/// them holds `.git`.
fn ignore_files_above(files: &FileTools, checked: &agentcaps::paths::Checked) -> Arc<IgnoreFiles> {
    let mut ignores = Arc::new(IgnoreFiles::default());
    let Ok(below) = checked.location().strip_prefix(checked.root()) else {
        return ignores;
    };
    let mut dir = checked.root().to_path_buf();
    for component in below.components() {
        let read = |name: &str| -> Option<Vec<u8>> {
            // The directory is the base and the plain name the spelling
            // (an absolute spelling is refused on Windows).
            let mut file = files.beneath().open_read(&dir, name).ok()?;
            let mut text = Vec::new();
            (&mut file)
                .take(skip::MAX_IGNORE_FILE_BYTES + 1)
                .read_to_end(&mut text)
                .ok()?;
            (text.len() as u64 <= skip::MAX_IGNORE_FILE_BYTES).then_some(text)
        };
        let has_git = std::fs::symlink_metadata(dir.join(".git")).is_ok();
        ignores = IgnoreFiles::child(
            &ignores,
            &dir,
            read(".ignore").as_deref(),
            read(".gitignore").as_deref(),
            has_git,
        );
        dir.push(component);
    }
    ignores
}
