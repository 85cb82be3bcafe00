//! `search_files`: a regex over the files under a directory.
//!
//! The start directory is judged for `List` first, and the walk starts at
//! its real location. The walker (the `ignore` crate, as ripgrep uses it:
//! `.gitignore` honoured, hidden files skipped) never follows links, and
//! every file is read through [`Beneath`](agentcaps::paths::Beneath), which
//! judges it again: a blocked file (say `.env`) or one that a link swapped
//! in mid-walk would lead outside is skipped, never read.

use std::io::Read;

use agentcaps::paths::Access;
use regex::RegexBuilder;
use schemars::JsonSchema;
use serde::Serialize;

use crate::files::{FileTools, utf8_prefix_lossy};
use crate::stop::Stop;
use crate::toolbox::Answer;
use crate::{ToolError, inputs};

const TOOL: &str = "search_files";
pub(crate) const DEFAULT_MAX_MATCHES: u32 = 100;
pub(crate) const MAX_MATCHES_CAP: u32 = 1000;
const MAX_LINE_CHARS: usize = 300;
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
    let regex = RegexBuilder::new(&input.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
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

    let mut walk = ignore::WalkBuilder::new(&root);
    walk.follow_links(false)
        .max_filesize(Some(files.max_read_bytes()));
    if let Some(glob) = &input.glob {
        let mut overrides = ignore::overrides::OverrideBuilder::new(&root);
        overrides
            .add(glob)
            .map_err(|e| bad("invalid-glob", format!("the glob `{glob}` is invalid: {e}")))?;
        let overrides = overrides
            .build()
            .map_err(|e| bad("invalid-glob", format!("the glob `{glob}` is invalid: {e}")))?;
        walk.overrides(overrides);
    }

    let max = input
        .max_matches
        .unwrap_or(DEFAULT_MAX_MATCHES)
        .clamp(1, MAX_MATCHES_CAP) as usize;
    let mut out = SearchFilesOutput {
        matches: Vec::new(),
        files_searched: 0,
        files_skipped: 0,
        truncated: false,
    };
    let mut seen = 0usize;
    for entry in walk.build() {
        let Ok(entry) = entry else {
            out.files_skipped += 1;
            continue;
        };
        if stop.reached() {
            if stop.is_cancelled() {
                return Err(stop.error(TOOL));
            }
            out.truncated = true;
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        seen += 1;
        if seen > MAX_FILES {
            out.truncated = true;
            break;
        }
        let Some(spelling) = entry.path().to_str() else {
            out.files_skipped += 1;
            continue;
        };
        let Some(text) = read_text(files, spelling) else {
            out.files_skipped += 1;
            continue;
        };
        out.files_searched += 1;
        let rel = entry
            .path()
            .strip_prefix(&root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        for (index, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                if out.matches.len() >= max {
                    out.truncated = true;
                    return Ok(out);
                }
                out.matches.push(Match {
                    path: rel.clone(),
                    line_number: index as u64 + 1,
                    line: crate::error::clip(line, MAX_LINE_CHARS),
                });
            }
        }
    }
    Ok(out)
}

/// Reads a file through `Beneath` (judged again), as text; `None` when the
/// policy refuses it, it is binary, too large, or unreadable.
fn read_text(files: &FileTools, spelling: &str) -> Option<String> {
    let file = files.beneath().open_read(files.base(), spelling).ok()?;
    let mut bytes = Vec::new();
    let limit = files.max_read_bytes();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > limit || bytes.contains(&0) {
        return None;
    }
    Some(utf8_prefix_lossy(&bytes, false))
}
