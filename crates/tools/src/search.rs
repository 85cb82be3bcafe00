//! `search_files`: a regex over the files under a directory.
//!
//! The start directory is judged for `List` first, and the walk starts at
//! its real location. The walker (the `ignore` crate, as ripgrep uses it:
//! `.gitignore` honoured, hidden files skipped, one thread per core) never
//! follows links. Each file is judged as a plain name inside its (real)
//! directory — no path is resolved again from the root — and is then opened
//! beneath its root's directory handle with links refused on the way (Linux:
//! `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`; elsewhere through
//! [`Beneath`](agentcaps::paths::Beneath), judged again). A blocked file
//! (say `.env`), or one that a link swapped in mid-walk would lead outside,
//! is skipped, never read. Matches are reported sorted by path and line;
//! when the search stops early (`truncated`), which matches were found
//! first depends on the threads.

use std::io::Read;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use agentcaps::paths::{Access, EntryKind};
use ignore::WalkState;
use regex::bytes::{Regex, RegexBuilder};
use schemars::JsonSchema;
use serde::Serialize;

use crate::files::FileTools;
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
    let invalid = |e: regex::Error| {
        bad(
            "invalid-pattern",
            format!("the pattern is not a valid regex: {e}"),
        )
    };
    let line_regex = RegexBuilder::new(&input.pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(invalid)?;
    // Whole-file prefilter: in multi-line mode every match of a line is a
    // match of the file, so a file without one is skipped at once. `\A`
    // and `\z` mean each line's ends to the line regex, so with them every
    // file is searched line by line.
    let prefilter = if input.pattern.contains("\\A") || input.pattern.contains("\\z") {
        None
    } else {
        Some(
            RegexBuilder::new(&input.pattern)
                .multi_line(true)
                .size_limit(1 << 20)
                .build()
                .map_err(invalid)?,
        )
    };
    let start = input.path.as_deref().unwrap_or(".");
    let checked = files
        .policy()
        .check(files.base(), start, Access::List)
        .map_err(|e| files.refused(TOOL, e))?;
    let root = checked.location().to_path_buf();

    let mut walk = ignore::WalkBuilder::new(&root);
    walk.follow_links(false)
        .max_filesize(Some(files.max_read_bytes()))
        .threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(8)));
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
    let shared = Shared {
        matches: Mutex::new(Vec::new()),
        found: AtomicUsize::new(0),
        seen: AtomicUsize::new(0),
        searched: AtomicU64::new(0),
        skipped: AtomicU64::new(0),
        truncated: AtomicBool::new(false),
    };
    let search = Search {
        files,
        checked: &checked,
        root: &root,
        line_regex: &line_regex,
        prefilter: prefilter.as_ref(),
        max,
        stop,
        shared: &shared,
    };
    walk.build_parallel().run(|| {
        let search = &search;
        let mut buffer = Vec::new();
        Box::new(move |entry| search.visit(entry, &mut buffer))
    });
    if stop.is_cancelled() {
        return Err(stop.error(TOOL));
    }
    let mut matches = shared
        .matches
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    matches.sort_by(|a, b| (&a.path, a.line_number).cmp(&(&b.path, b.line_number)));
    matches.truncate(max);
    Ok(SearchFilesOutput {
        matches,
        files_searched: shared.searched.into_inner(),
        files_skipped: shared.skipped.into_inner(),
        truncated: shared.truncated.into_inner(),
    })
}

/// What the search threads share.
struct Shared {
    matches: Mutex<Vec<Match>>,
    found: AtomicUsize,
    seen: AtomicUsize,
    searched: AtomicU64,
    skipped: AtomicU64,
    truncated: AtomicBool,
}

/// One search, as each walker thread sees it.
struct Search<'a> {
    files: &'a FileTools,
    checked: &'a agentcaps::paths::Checked,
    root: &'a std::path::Path,
    line_regex: &'a Regex,
    prefilter: Option<&'a Regex>,
    max: usize,
    stop: &'a Stop,
    shared: &'a Shared,
}

impl Search<'_> {
    fn visit(
        &self,
        entry: Result<ignore::DirEntry, ignore::Error>,
        buffer: &mut Vec<u8>,
    ) -> WalkState {
        let shared = self.shared;
        if self.stop.reached() {
            shared.truncated.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            shared.skipped.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        if shared.seen.fetch_add(1, Ordering::Relaxed) >= MAX_FILES {
            shared.truncated.store(true, Ordering::Relaxed);
            return WalkState::Quit;
        }
        if !self.read(entry.path(), buffer) {
            shared.skipped.fetch_add(1, Ordering::Relaxed);
            return WalkState::Continue;
        }
        shared.searched.fetch_add(1, Ordering::Relaxed);
        if self.prefilter.is_some_and(|p| !p.is_match(buffer)) {
            return WalkState::Continue;
        }
        let rel = entry
            .path()
            .strip_prefix(self.root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        let mut found = Vec::new();
        // Lines as `str::lines` cuts them: no empty line after the last `\n`.
        let text = buffer.strip_suffix(b"\n").unwrap_or(buffer);
        let lines = text
            .split(|b| *b == b'\n')
            .take(usize::from(!buffer.is_empty()) * usize::MAX);
        for (index, line) in lines.enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if self.line_regex.is_match(line) {
                found.push(Match {
                    path: rel.clone(),
                    line_number: index as u64 + 1,
                    line: crate::error::clip(&String::from_utf8_lossy(line), MAX_LINE_CHARS),
                });
            }
        }
        if found.is_empty() {
            return WalkState::Continue;
        }
        let before = shared.found.fetch_add(found.len(), Ordering::Relaxed);
        let room = self.max.saturating_sub(before);
        if found.len() > room {
            shared.truncated.store(true, Ordering::Relaxed);
            found.truncate(room);
        }
        if let Ok(mut matches) = shared.matches.lock() {
            matches.extend(found);
        }
        if before + room >= self.max && shared.truncated.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        WalkState::Continue
    }

    /// Reads the file at `path` (found by the walk) into `buffer`, when the
    /// policy allows it and it is text within the read limit.
    fn read(&self, path: &std::path::Path, buffer: &mut Vec<u8>) -> bool {
        buffer.clear();
        let limit = self.files.max_read_bytes();
        let Some(file) = self.open(path) else {
            return false;
        };
        if file
            .take(limit.saturating_add(1))
            .read_to_end(buffer)
            .is_err()
        {
            return false;
        }
        u64::try_from(buffer.len()).unwrap_or(u64::MAX) <= limit
            && memchr::memchr(0, buffer).is_none()
    }

    /// Judges the file as a plain name in its real directory, then opens it
    /// beneath the root's handle with links refused.
    #[cfg(target_os = "linux")]
    fn open(&self, path: &std::path::Path) -> Option<std::fs::File> {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return None;
        };
        if !crate::walk::allowed(
            self.files.policy(),
            dir,
            name,
            EntryKind::File,
            Access::Read,
        ) {
            return None;
        }
        match self
            .files
            .roots()
            .open_file_beneath(self.checked.root(), path)
        {
            Ok(file) => Some(file),
            // No openat2 (old kernel): through Beneath, judged again.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOSYS.raw_os_error()) => {
                self.open_judged(path)
            }
            Err(_) => None,
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn open(&self, path: &std::path::Path) -> Option<std::fs::File> {
        let _ = EntryKind::File;
        self.open_judged(path)
    }

    /// Opens through `Beneath`, which judges the path again.
    fn open_judged(&self, path: &std::path::Path) -> Option<std::fs::File> {
        let spelling = path.to_str()?;
        self.files
            .beneath()
            .open_read(self.files.base(), spelling)
            .ok()
    }
}
