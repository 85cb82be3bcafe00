//! The file tools (`read_file`, `read_many_files`, `write_file`,
//! `edit_file`, `create_directory`, `move_file`, `list_directory`,
//! `file_info`): every one acts through [`Beneath`], so the path is judged
//! and then used beneath the root's directory handle, with no
//! check-then-use gap.

use std::io::Read;
use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps::paths::{
    Access, Beneath, EntryKind, LinkJudging, PathError, PathPolicy, Version, WriteMode,
};
use schemars::JsonSchema;
use serde::Serialize;

#[cfg(unix)]
use std::rc::Rc;

#[cfg(unix)]
use rustix::fd::OwnedFd;

use crate::describe::files_allowed;
use crate::stop::Stop;
use crate::toolbox::Answer;
#[cfg(unix)]
use crate::walk;
use crate::{ToolError, inputs};

const DEFAULT_MAX_LINES: u64 = 2000;
const DEFAULT_MAX_LINES_EACH: u64 = 500;
/// The most paths `read_many_files` reads in one call.
pub(crate) const MAX_MANY_FILES: usize = 50;
pub(crate) const DEFAULT_MAX_ENTRIES: u32 = 1000;
pub(crate) const MAX_ENTRIES_CAP: u32 = 10_000;

/// The file tools' shared state: the policy, the root handles, the limits.
pub(crate) struct FileTools {
    base: PathBuf,
    policy: PathPolicy,
    beneath: Beneath,
    #[cfg(unix)]
    roots: walk::Roots,
    max_read_bytes: u64,
    allowed: String,
    seen: std::sync::Arc<Seen>,
}

/// The version of each file as these tools last read or wrote it, by real
/// location: `write_file` replaces a file it has seen only while it is
/// still that version, so a change made meanwhile by another session or
/// program is never overwritten unseen.
#[derive(Default)]
struct Seen(std::sync::Mutex<std::collections::HashMap<PathBuf, Version>>);

impl Seen {
    /// The most files remembered; past it the record starts again (a file
    /// no longer remembered is replaced as asked, as if never read).
    const MAX: usize = 4096;

    fn get(&self, location: &Path) -> Option<Version> {
        let seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.get(location).copied()
    }

    fn remember(&self, location: PathBuf, version: Version) {
        let mut seen = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.len() >= Self::MAX && !seen.contains_key(&location) {
            seen.clear();
        }
        seen.insert(location, version);
    }
}

/// Result of `read_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadFileOutput {
    /// The path as asked.
    path: String,
    /// The lines returned, joined with their original line endings.
    content: String,
    /// 1-based number of the first line returned.
    first_line: u64,
    /// How many lines were returned.
    lines_returned: u64,
    /// More lines follow (call again with a later `offset_line`).
    more_lines: bool,
    /// The file is longer than the read limit; only its start was read.
    truncated: bool,
}

impl Answer for ReadFileOutput {
    fn text(&self) -> String {
        let mut text = self.content.clone();
        let last = self.first_line + self.lines_returned.saturating_sub(1);
        if self.more_lines {
            note(
                &mut text,
                &format!(
                    "lines {}-{last} shown; more follow: call again with offset_line = {}",
                    self.first_line,
                    last + 1
                ),
            );
        }
        if self.truncated {
            note(
                &mut text,
                "the file is longer than the read limit; only its start was read",
            );
        }
        if self.lines_returned == 0 && !self.more_lines {
            note(
                &mut text,
                &format!("no lines at or after line {}", self.first_line),
            );
        }
        text
    }
}

/// One file of `read_many_files`: its content, or why it was not read.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ManyFileEntry {
    /// The path as asked.
    path: String,
    /// The file's lines (absent when it was not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// More lines follow than were returned (`max_lines_each`, or the
    /// read limit).
    more_lines: bool,
    /// The refusal or failure, as a model reads it (absent when read).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The rule of the refusal or failure (absent when read).
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<String>,
}

/// Result of `read_many_files`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadManyFilesOutput {
    /// One entry per path asked, in order.
    files: Vec<ManyFileEntry>,
}

impl Answer for ReadManyFilesOutput {
    fn text(&self) -> String {
        let mut text = String::new();
        for file in &self.files {
            text.push_str(&format!("==> {} <==\n", file.path));
            match (&file.content, &file.error) {
                (Some(content), _) => {
                    text.push_str(content);
                    if !content.is_empty() && !content.ends_with('\n') {
                        text.push('\n');
                    }
                    if file.more_lines {
                        text.push_str("[more lines follow: read_file with offset_line]\n");
                    }
                }
                (None, Some(error)) => text.push_str(&format!("[not read: {error}]\n")),
                (None, None) => {}
            }
        }
        text
    }
}

/// Result of `write_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WriteFileOutput {
    /// The path as asked.
    path: String,
    /// Bytes written.
    bytes_written: u64,
    /// An existing file was replaced.
    replaced: bool,
}

impl Answer for WriteFileOutput {
    fn text(&self) -> String {
        let how = if self.replaced {
            "replaced the file"
        } else {
            "new file"
        };
        format!(
            "Wrote {} bytes to {} ({how}).",
            self.bytes_written, self.path
        )
    }
}

/// Result of `edit_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct EditFileOutput {
    /// The path as asked.
    path: String,
    /// How many occurrences were replaced.
    replacements: u64,
    /// Nothing was written (`dry_run`).
    dry_run: bool,
    /// The change as a unified diff.
    diff: String,
}

impl Answer for EditFileOutput {
    fn text(&self) -> String {
        let head = if self.dry_run {
            format!(
                "Dry run: {} replacement(s) in {} would give this diff (nothing written):",
                self.replacements, self.path
            )
        } else {
            format!(
                "Edited {}: {} replacement(s).",
                self.path, self.replacements
            )
        };
        format!("{head}\n{}", self.diff)
    }
}

/// Result of `create_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CreateDirectoryOutput {
    /// The path as asked.
    path: String,
    /// The directory existed already.
    existed: bool,
}

impl Answer for CreateDirectoryOutput {
    fn text(&self) -> String {
        if self.existed {
            format!(
                "{} already exists (a directory); nothing changed.",
                self.path
            )
        } else {
            format!("Created the directory {}.", self.path)
        }
    }
}

/// Result of `move_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct MoveFileOutput {
    /// The old path, as asked.
    from: String,
    /// The new path, as asked.
    to: String,
}

impl Answer for MoveFileOutput {
    fn text(&self) -> String {
        format!("Moved {} to {}.", self.from, self.to)
    }
}

/// One entry of `list_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListEntry {
    /// Path relative to the listed directory, `/`-separated.
    path: String,
    /// `file`, `dir`, `symlink` or `other`.
    kind: &'static str,
}

/// Result of `list_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ListDirectoryOutput {
    /// The path as asked.
    path: String,
    /// The entries, each directory's sorted by name, depth first.
    entries: Vec<ListEntry>,
    /// The listing stopped early: more entries than `max_entries`, or the
    /// call's time limit was reached.
    truncated: bool,
}

impl Answer for ListDirectoryOutput {
    fn text(&self) -> String {
        let mut text = String::new();
        for entry in &self.entries {
            text.push_str(&entry.path);
            text.push_str(match entry.kind {
                "dir" => "/",
                "symlink" => "@",
                "other" => "?",
                _ => "",
            });
            text.push('\n');
        }
        if self.entries.is_empty() {
            text.push_str("(empty directory)\n");
        }
        if self.truncated {
            text.push_str(
                "[truncated: more entries exist; list a subdirectory or raise max_entries]\n",
            );
        }
        text.push_str("[dir/ = directory, link@ = symbolic link (not followed), x? = other]");
        text
    }
}

/// Result of `file_info`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FileInfoOutput {
    /// The path as asked.
    path: String,
    /// `file`, `dir`, `symlink` or `other`.
    kind: &'static str,
    /// Size in bytes.
    size: u64,
    /// Seconds since the Unix epoch, when known.
    modified_unix: Option<u64>,
    /// The owner cannot write it.
    readonly: bool,
}

impl Answer for FileInfoOutput {
    fn text(&self) -> String {
        let modified = self
            .modified_unix
            .map_or_else(|| "unknown".to_owned(), |s| format!("{s} (Unix seconds)"));
        format!(
            "path: {}\nkind: {}\nsize: {} bytes\nmodified: {modified}\nreadonly: {}",
            self.path, self.kind, self.size, self.readonly
        )
    }
}

/// Appends `[note]` on its own line.
pub(crate) fn note(text: &mut String, note: &str) {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('[');
    text.push_str(note);
    text.push_str("]\n");
}

pub(crate) fn kind_name(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Dir => "dir",
        EntryKind::Symlink => "symlink",
        _ => "other",
    }
}

impl FileTools {
    pub(crate) fn new(policy: &Policy, base: &Path) -> Result<Self, ToolError> {
        let path_policy = policy.path_policy()?;
        let allowed = files_allowed(&path_policy);
        let mut beneath = path_policy
            .open_beneath()
            .map_err(|source| ToolError::Path {
                tool: "toolbox",
                source: Box::new(source),
                allowed: allowed.clone(),
            })?;
        // The tree's guarded links are looked for once and kept until a
        // command has run (see `refresh_guarded_links`).
        beneath.set_link_judging(LinkJudging::UntilRefreshed);
        Ok(Self {
            base: base.to_path_buf(),
            #[cfg(unix)]
            roots: walk::Roots::open(&path_policy),
            policy: path_policy,
            beneath,
            max_read_bytes: policy.max_read_bytes,
            allowed,
            seen: std::sync::Arc::default(),
        })
    }

    /// The same tools with the write-protected glob `entry` left out, for
    /// one write a person approved (the versions seen are shared).
    pub(crate) fn unprotected(&self, entry: &str) -> Result<Self, ToolError> {
        let policy = self
            .policy
            .without_write_protected(entry)
            .map_err(|e| self.refused("toolbox", e))?;
        let mut beneath = policy
            .open_beneath()
            .map_err(|e| self.refused("toolbox", e))?;
        match self.guarded_links() {
            Some(links) => beneath.use_guarded_links(links),
            None => beneath.set_link_judging(LinkJudging::UntilRefreshed),
        }
        Ok(Self {
            base: self.base.clone(),
            #[cfg(unix)]
            roots: walk::Roots::open(&policy),
            policy,
            beneath,
            max_read_bytes: self.max_read_bytes,
            allowed: self.allowed.clone(),
            seen: std::sync::Arc::clone(&self.seen),
        })
    }

    /// Forget the tree's guarded links found so far (`.cargo -> cfg`),
    /// so the next write looks for them again: called after every command
    /// the toolbox runs (where there is no view, a command makes links in
    /// the real tree itself; `move_file` refreshes them as it moves).
    pub(crate) fn refresh_guarded_links(&self) {
        self.beneath.refresh_guarded_links();
    }

    /// The tree's guarded links as these tools judge writes with them, for
    /// `apply_patch` to judge with the same.
    pub(crate) fn guarded_links(&self) -> Option<std::sync::Arc<agentcaps::paths::GuardedLinks>> {
        self.beneath.guarded_links()
    }

    /// The real location `spelling` writes to, when the policy allows it.
    fn location(&self, spelling: &str) -> Option<PathBuf> {
        self.policy
            .check(&self.base, spelling, Access::Write)
            .ok()
            .map(|checked| checked.location().to_path_buf())
    }

    /// Remembers the version of the file at `spelling` (read or written).
    fn remember(&self, spelling: &str, version: Version) {
        if let Some(location) = self.location(spelling) {
            self.seen.remember(location, version);
        }
    }

    pub(crate) fn base(&self) -> &Path {
        &self.base
    }

    pub(crate) fn policy(&self) -> &PathPolicy {
        &self.policy
    }

    pub(crate) fn beneath(&self) -> &Beneath {
        &self.beneath
    }

    #[cfg(unix)]
    pub(crate) fn roots(&self) -> &walk::Roots {
        &self.roots
    }

    pub(crate) fn max_read_bytes(&self) -> u64 {
        self.max_read_bytes
    }

    pub(crate) fn refused(&self, tool: &'static str, source: PathError) -> ToolError {
        ToolError::Path {
            tool,
            source: Box::new(source),
            allowed: self.allowed.clone(),
        }
    }

    /// Reads a file's text through `Beneath`, at most the read limit.
    /// Returns the text and whether it was cut at the limit.
    fn read_text(&self, tool: &'static str, spelling: &str) -> Result<(String, bool), ToolError> {
        let (bytes, truncated, _) = self.read_bytes(tool, spelling)?;
        Ok((utf8_prefix_lossy(&bytes, truncated), truncated))
    }

    /// Reads a file's bytes through `Beneath`, at most the read limit,
    /// refusing binary content (a NUL byte). Returns the bytes, whether
    /// they were cut at the limit, and the version read.
    fn read_bytes(
        &self,
        tool: &'static str,
        spelling: &str,
    ) -> Result<(Vec<u8>, bool, Version), ToolError> {
        let (file, version) = self
            .beneath
            .open_read_versioned(&self.base, spelling)
            .map_err(|e| self.refused(tool, e))?;
        let mut bytes = Vec::new();
        file.take(self.max_read_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::Unsupported {
                tool,
                rule: "io",
                message: format!("reading `{spelling}` failed: {e}"),
            })?;
        let truncated = u64::try_from(bytes.len()).unwrap_or(u64::MAX) > self.max_read_bytes;
        if truncated {
            bytes.truncate(usize::try_from(self.max_read_bytes).unwrap_or(usize::MAX));
        }
        if bytes.contains(&0) {
            return Err(ToolError::Unsupported {
                tool,
                rule: "binary",
                message: format!(
                    "`{spelling}` looks binary (it contains NUL bytes); only text is returned. Use file_info for its size and kind."
                ),
            });
        }
        Ok((bytes, truncated, version))
    }

    pub(crate) fn read_file(&self, input: &inputs::ReadFile) -> Result<ReadFileOutput, ToolError> {
        let (bytes, truncated, version) = self.read_bytes("read_file", &input.path)?;
        self.remember(&input.path, version);
        let text = utf8_prefix_lossy(&bytes, truncated);
        let first_line = input.offset_line.unwrap_or(1).max(1);
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES).max(1);
        let (content, lines_returned, more_lines) = lines(&text, first_line, max_lines);
        Ok(ReadFileOutput {
            path: input.path.clone(),
            content,
            first_line,
            lines_returned,
            more_lines,
            truncated,
        })
    }

    pub(crate) fn read_many_files(
        &self,
        input: &inputs::ReadManyFiles,
        stop: &Stop,
    ) -> Result<ReadManyFilesOutput, ToolError> {
        const TOOL: &str = "read_many_files";
        if input.paths.len() > MAX_MANY_FILES {
            return Err(ToolError::InvalidArguments {
                tool: TOOL,
                message: format!(
                    "{} paths given; at most {MAX_MANY_FILES} are read in one call",
                    input.paths.len()
                ),
            });
        }
        let max_lines = input
            .max_lines_each
            .unwrap_or(DEFAULT_MAX_LINES_EACH)
            .max(1);
        // The whole answer is bounded by the read limit, like one read_file.
        let mut budget = usize::try_from(self.max_read_bytes).unwrap_or(usize::MAX);
        let mut files = Vec::new();
        for path in &input.paths {
            let mut entry = ManyFileEntry {
                path: path.clone(),
                content: None,
                more_lines: false,
                error: None,
                rule: None,
            };
            let result = if stop.reached() {
                Err(stop.error(TOOL))
            } else if budget == 0 {
                Err(ToolError::Unsupported {
                    tool: TOOL,
                    rule: "read-limit",
                    message: format!(
                        "the call already returned {} bytes, its limit; read this file on its own",
                        self.max_read_bytes
                    ),
                })
            } else {
                self.read_text(TOOL, path)
            };
            match result {
                Ok((text, truncated)) => {
                    let (mut content, _, more) = lines(&text, 1, max_lines);
                    let cut = content.len() > budget;
                    if cut {
                        let mut end = budget;
                        while !content.is_char_boundary(end) {
                            end -= 1;
                        }
                        content.truncate(end);
                    }
                    budget -= content.len();
                    entry.more_lines = more || truncated || cut;
                    entry.content = Some(content);
                }
                Err(error) => {
                    entry.rule = Some(error.rule().to_owned());
                    entry.error = Some(error.to_model_text());
                }
            }
            files.push(entry);
        }
        Ok(ReadManyFilesOutput { files })
    }

    /// Writes the file unless the call is cancelled before the final rename
    /// (then nothing lands and no temporary file stays).
    pub(crate) fn write_file(
        &self,
        input: &inputs::WriteFile,
        stop: &Stop,
    ) -> Result<WriteFileOutput, ToolError> {
        const TOOL: &str = "write_file";
        // Judged first (a refused path must not create parents); other
        // writers of the file in this process wait until this one is done.
        let _writers = self
            .beneath
            .hold_writers(&self.base, &[&input.path])
            .map_err(|e| self.refused(TOOL, e))?;
        let existed = self.beneath.metadata(&self.base, &input.path).is_ok();
        if let Some(parent) = parent_spelling(&input.path)
            && self.beneath.metadata(&self.base, parent).is_err()
        {
            self.beneath
                .create_dir_all(&self.base, parent)
                .map_err(|e| self.refused(TOOL, e))?;
        }
        // A file these tools have seen is replaced only while it is still
        // the version they saw.
        let seen = self.location(&input.path).and_then(|l| self.seen.get(&l));
        let mode = match (input.overwrite, seen) {
            (false, _) => WriteMode::CreateNew,
            (true, Some(version)) => WriteMode::Unchanged(version),
            (true, None) => WriteMode::Overwrite,
        };
        let written = self
            .beneath
            .write_unless(
                &self.base,
                &input.path,
                input.content.as_bytes(),
                mode,
                || stop.is_cancelled(),
            )
            .map_err(|e| self.refused(TOOL, e))?;
        let Some(written) = written else {
            return Err(stop.error(TOOL));
        };
        self.remember(&input.path, written);
        Ok(WriteFileOutput {
            path: input.path.clone(),
            bytes_written: input.content.len() as u64,
            replaced: existed,
        })
    }

    pub(crate) fn edit_file(&self, input: &inputs::EditFile) -> Result<EditFileOutput, ToolError> {
        const TOOL: &str = "edit_file";
        // Judged for writing before anything is read, so a read-only file
        // is refused as such rather than after a diff is shown; other
        // writers of the file in this process wait from the read to the
        // write, and one elsewhere makes the write a conflict.
        let _writers = self
            .beneath
            .hold_writers(&self.base, &[&input.path])
            .map_err(|e| self.refused(TOOL, e))?;
        let (bytes, truncated, version) = self.read_bytes(TOOL, &input.path)?;
        if truncated {
            return Err(ToolError::Unsupported {
                tool: TOOL,
                rule: "too-large",
                message: format!(
                    "`{}` is larger than the read limit ({} bytes), so it cannot be edited whole; use apply_patch",
                    input.path, self.max_read_bytes
                ),
            });
        }
        let old = String::from_utf8(bytes).map_err(|e| ToolError::Unsupported {
            tool: TOOL,
            rule: "not-text",
            message: format!(
                "`{}` is not UTF-8 text (byte {} is not), so editing it as text would corrupt it; use write_file with the whole content, or a command that handles its encoding",
                input.path,
                e.utf8_error().valid_up_to()
            ),
        })?;
        let new = crate::edit::replace(&input.path, &old, input)?;
        let diff = crate::edit::unified_diff(&input.path, &old, &new.text);
        if !input.dry_run {
            let written = self
                .beneath
                .write_versioned(
                    &self.base,
                    &input.path,
                    new.text.as_bytes(),
                    WriteMode::Unchanged(version),
                )
                .map_err(|e| self.refused(TOOL, e))?;
            self.remember(&input.path, written);
        }
        Ok(EditFileOutput {
            path: input.path.clone(),
            replacements: new.count,
            dry_run: input.dry_run,
            diff,
        })
    }

    pub(crate) fn create_directory(
        &self,
        input: &inputs::CreateDirectory,
    ) -> Result<CreateDirectoryOutput, ToolError> {
        const TOOL: &str = "create_directory";
        self.policy
            .check(&self.base, &input.path, Access::Write)
            .map_err(|e| self.refused(TOOL, e))?;
        let existed = match self.beneath.metadata(&self.base, &input.path) {
            Ok(info) if info.kind == EntryKind::Dir => true,
            Ok(info) => {
                return Err(ToolError::Unsupported {
                    tool: TOOL,
                    rule: "exists",
                    message: format!(
                        "`{}` exists and is a {}, not a directory; choose another name",
                        input.path,
                        kind_name(info.kind)
                    ),
                });
            }
            Err(_) => false,
        };
        if !existed {
            self.beneath
                .create_dir_all(&self.base, &input.path)
                .map_err(|e| self.refused(TOOL, e))?;
        }
        Ok(CreateDirectoryOutput {
            path: input.path.clone(),
            existed,
        })
    }

    pub(crate) fn move_file(&self, input: &inputs::MoveFile) -> Result<MoveFileOutput, ToolError> {
        const TOOL: &str = "move_file";
        self.beneath
            .rename(&self.base, &input.from, &input.to)
            .map_err(|e| self.refused(TOOL, e))?;
        Ok(MoveFileOutput {
            from: input.from.clone(),
            to: input.to.clone(),
        })
    }

    #[cfg(unix)]
    /// Lists a directory, recursively by directory handle: each directory
    /// is opened from its parent's handle and each subdirectory judged as a
    /// plain name inside it, so the cost is linear in the entries returned.
    pub(crate) fn list_directory(
        &self,
        input: &inputs::ListDirectory,
        stop: &Stop,
    ) -> Result<ListDirectoryOutput, ToolError> {
        const TOOL: &str = "list_directory";
        let max = input
            .max_entries
            .unwrap_or(DEFAULT_MAX_ENTRIES)
            .clamp(1, MAX_ENTRIES_CAP) as usize;
        let checked = self
            .policy
            .check(&self.base, &input.path, Access::List)
            .map_err(|e| self.refused(TOOL, e))?;
        let io_error = |e: std::io::Error| ToolError::Unsupported {
            tool: TOOL,
            rule: "io",
            message: format!("cannot list `{}`: {e}", input.path),
        };
        let start = self.roots.open_dir(&checked).map_err(io_error)?;
        let start = walk::read_dir(&start)
            .map(|children| (Rc::new(start), children))
            .map_err(io_error)?;
        let mut entries = Vec::new();
        let mut truncated = false;
        // Depth first: (the directory's handle and entries, its real
        // location, the prefix of its entries in the output).
        type Pending = (
            Option<(Rc<OwnedFd>, Vec<walk::Child>)>,
            Option<(Rc<OwnedFd>, std::ffi::OsString)>,
            PathBuf,
            String,
        );
        let mut pending: Vec<Pending> = vec![(
            Some(start),
            None,
            checked.location().to_path_buf(),
            String::new(),
        )];
        while let Some((opened, to_open, location, prefix)) = pending.pop() {
            if stop.reached() {
                if stop.is_cancelled() {
                    return Err(stop.error(TOOL));
                }
                truncated = true;
                break;
            }
            let (dir, children) = match (opened, to_open) {
                (Some(opened), _) => opened,
                (None, Some((parent, name))) => {
                    match walk::open_child_dir(&parent, &name)
                        .and_then(|fd| walk::read_dir(&fd).map(|children| (fd, children)))
                    {
                        Ok((fd, children)) => (Rc::new(fd), children),
                        // Replaced meanwhile (say by a link): listed, not entered.
                        Err(e)
                            if e.raw_os_error()
                                == Some(rustix::io::Errno::MFILE.raw_os_error()) =>
                        {
                            truncated = true;
                            break;
                        }
                        Err(_) => continue,
                    }
                }
                (None, None) => continue,
            };
            let mut subdirs = Vec::new();
            for child in children {
                if entries.len() >= max {
                    truncated = true;
                    break;
                }
                let name = child.name.to_string_lossy();
                let rel = format!("{prefix}{name}");
                // A name that is not UTF-8 cannot be judged as spelled, so it
                // is listed but not entered; so is a refused subdirectory
                // (say a blocked `.git`).
                if let (true, EntryKind::Dir, Some(exact)) =
                    (input.recursive, child.kind, child.name.to_str())
                    && walk::allowed(&self.policy, &location, exact, EntryKind::Dir, Access::List)
                {
                    subdirs.push((
                        None,
                        Some((Rc::clone(&dir), child.name.clone())),
                        location.join(exact),
                        format!("{rel}/"),
                    ));
                }
                entries.push(ListEntry {
                    path: rel,
                    kind: kind_name(child.kind),
                });
            }
            // Stack: push in reverse so subdirectories are entered in order.
            pending.extend(subdirs.into_iter().rev());
            if truncated {
                break;
            }
        }
        Ok(ListDirectoryOutput {
            path: input.path.clone(),
            entries,
            truncated,
        })
    }

    /// Lists a directory by path (platforms without handle-relative
    /// opens): each subdirectory is listed through `Beneath`, judged again.
    #[cfg(not(unix))]
    pub(crate) fn list_directory(
        &self,
        input: &inputs::ListDirectory,
        stop: &Stop,
    ) -> Result<ListDirectoryOutput, ToolError> {
        const TOOL: &str = "list_directory";
        let max = input
            .max_entries
            .unwrap_or(DEFAULT_MAX_ENTRIES)
            .clamp(1, MAX_ENTRIES_CAP) as usize;
        let mut entries = Vec::new();
        let mut truncated = false;
        // Depth-first over (spelling to list, prefix for the output).
        let mut pending = vec![(input.path.clone(), String::new())];
        while let Some((dir, prefix)) = pending.pop() {
            if stop.reached() {
                if stop.is_cancelled() {
                    return Err(stop.error(TOOL));
                }
                truncated = true;
                break;
            }
            let listed = match self.beneath.list(&self.base, &dir) {
                Ok(listed) => listed,
                // The first directory's refusal is the answer; a refused
                // subdirectory (say a blocked `.git`) is listed, not entered.
                Err(e) if prefix.is_empty() => return Err(self.refused(TOOL, e)),
                Err(_) => continue,
            };
            let mut listed = listed;
            listed.sort_by(|a, b| a.name.cmp(&b.name));
            let mut subdirs = Vec::new();
            for entry in listed {
                if entries.len() >= max {
                    truncated = true;
                    break;
                }
                let name = entry.name.to_string_lossy();
                let rel = format!("{prefix}{name}");
                // A name that is not UTF-8 cannot be spelled back exactly,
                // so it is listed but not entered.
                if let (true, EntryKind::Dir, Some(exact)) =
                    (input.recursive, entry.kind, entry.name.to_str())
                {
                    subdirs.push((format!("{dir}/{exact}"), format!("{rel}/")));
                }
                entries.push(ListEntry {
                    path: rel,
                    kind: kind_name(entry.kind),
                });
            }
            // Stack: push in reverse so subdirectories are entered in order.
            pending.extend(subdirs.into_iter().rev());
            if truncated {
                break;
            }
        }
        Ok(ListDirectoryOutput {
            path: input.path.clone(),
            entries,
            truncated,
        })
    }

    pub(crate) fn file_info(&self, input: &inputs::FileInfo) -> Result<FileInfoOutput, ToolError> {
        let info = self
            .beneath
            .metadata(&self.base, &input.path)
            .map_err(|e| self.refused("file_info", e))?;
        Ok(FileInfoOutput {
            path: input.path.clone(),
            kind: kind_name(info.kind),
            size: info.len,
            modified_unix: info
                .modified
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs()),
            readonly: info.readonly,
        })
    }
}

/// Lines `first_line ..` of `text` (1-based), at most `max_lines` of them,
/// with their endings: (content, lines returned, more follow).
fn lines(text: &str, first_line: u64, max_lines: u64) -> (String, u64, bool) {
    let skip = usize::try_from(first_line.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = usize::try_from(max_lines).unwrap_or(usize::MAX);
    let mut lines = text.split_inclusive('\n').skip(skip);
    let content: String = lines.by_ref().take(take).collect();
    let returned = content.split_inclusive('\n').count() as u64;
    (content, returned, lines.next().is_some())
}

/// The parent of a spelling, if it has one worth creating.
fn parent_spelling(spelling: &str) -> Option<&str> {
    let cut = spelling.trim_end_matches('/').rfind('/')?;
    let parent = spelling.get(..cut)?;
    (!parent.is_empty()).then_some(parent)
}

/// Decodes `bytes` as UTF-8, replacing invalid sequences; when the bytes
/// were cut at a limit, an incomplete character at the end is dropped
/// rather than replaced.
pub(crate) fn utf8_prefix_lossy(bytes: &[u8], cut: bool) -> String {
    if cut
        && let Err(e) = std::str::from_utf8(bytes)
        && e.error_len().is_none()
        && let Some(valid) = bytes.get(..e.valid_up_to())
    {
        return String::from_utf8_lossy(valid).into_owned();
    }
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_spelling_of_nested_and_plain_names() {
        assert_eq!(parent_spelling("a/b/c.txt"), Some("a/b"));
        assert_eq!(parent_spelling("c.txt"), None);
        assert_eq!(parent_spelling("/c.txt"), None);
        assert_eq!(parent_spelling("a/"), None);
    }

    #[test]
    fn a_character_cut_by_the_limit_is_dropped_not_replaced() {
        let bytes = "aé".as_bytes();
        assert_eq!(utf8_prefix_lossy(&bytes[..2], true), "a");
        assert_eq!(utf8_prefix_lossy(&bytes[..2], false), "a\u{FFFD}");
        assert_eq!(utf8_prefix_lossy(b"a\xffb", true), "a\u{FFFD}b");
    }
}
