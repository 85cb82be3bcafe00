//! `read_file`, `write_file`, `list_directory` and `file_info`: every one
//! acts through [`Beneath`], so the path is judged and then used beneath
//! the root's directory handle, with no check-then-use gap.

use std::io::Read;
use std::path::{Path, PathBuf};

use agentcaps::Policy;
use agentcaps::paths::{Access, Beneath, EntryKind, PathError, PathPolicy, WriteMode};
use serde::Serialize;

use crate::describe::files_allowed;
use crate::{ToolError, inputs};

const DEFAULT_MAX_LINES: u64 = 2000;
const DEFAULT_MAX_ENTRIES: u32 = 1000;
const MAX_ENTRIES_CAP: u32 = 10_000;

/// The file tools' shared state: the policy, the root handles, the limits.
pub(crate) struct FileTools {
    base: PathBuf,
    policy: PathPolicy,
    beneath: Beneath,
    max_read_bytes: u64,
    allowed: String,
}

/// Result of `read_file`.
#[derive(Debug, Serialize)]
pub(crate) struct ReadFileOutput {
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

/// Result of `write_file`.
#[derive(Debug, Serialize)]
pub(crate) struct WriteFileOutput {
    path: String,
    bytes_written: usize,
    replaced: bool,
}

/// One entry of `list_directory`.
#[derive(Debug, Serialize)]
pub(crate) struct ListEntry {
    /// Path relative to the listed directory, `/`-separated.
    path: String,
    /// `file`, `dir`, `symlink` or `other`.
    kind: &'static str,
}

/// Result of `list_directory`.
#[derive(Debug, Serialize)]
pub(crate) struct ListDirectoryOutput {
    path: String,
    entries: Vec<ListEntry>,
    /// More entries exist than `max_entries`.
    truncated: bool,
}

/// Result of `file_info`.
#[derive(Debug, Serialize)]
pub(crate) struct FileInfoOutput {
    path: String,
    kind: &'static str,
    size: u64,
    /// Seconds since the Unix epoch, when known.
    modified_unix: Option<u64>,
    readonly: bool,
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
        let beneath = path_policy
            .open_beneath()
            .map_err(|source| ToolError::Path {
                tool: "toolbox",
                source: Box::new(source),
                allowed: allowed.clone(),
            })?;
        Ok(Self {
            base: base.to_path_buf(),
            policy: path_policy,
            beneath,
            max_read_bytes: policy.max_read_bytes,
            allowed,
        })
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

    pub(crate) fn read_file(&self, input: &inputs::ReadFile) -> Result<ReadFileOutput, ToolError> {
        const TOOL: &str = "read_file";
        let file = self
            .beneath
            .open_read(&self.base, &input.path)
            .map_err(|e| self.refused(TOOL, e))?;
        let mut bytes = Vec::new();
        file.take(self.max_read_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::Unsupported {
                tool: TOOL,
                rule: "io",
                message: format!("reading `{}` failed: {e}", input.path),
            })?;
        let truncated = u64::try_from(bytes.len()).unwrap_or(u64::MAX) > self.max_read_bytes;
        if truncated {
            bytes.truncate(usize::try_from(self.max_read_bytes).unwrap_or(usize::MAX));
        }
        if bytes.contains(&0) {
            return Err(ToolError::Unsupported {
                tool: TOOL,
                rule: "binary",
                message: format!(
                    "`{}` looks binary (it contains NUL bytes); read_file returns text only. Use file_info for its size and kind.",
                    input.path
                ),
            });
        }
        let text = utf8_prefix_lossy(&bytes, truncated);
        let first_line = input.offset_line.unwrap_or(1).max(1);
        let max_lines = input.max_lines.unwrap_or(DEFAULT_MAX_LINES).max(1);
        let skip = usize::try_from(first_line - 1).unwrap_or(usize::MAX);
        let take = usize::try_from(max_lines).unwrap_or(usize::MAX);
        let mut lines = text.split_inclusive('\n').skip(skip);
        let content: String = lines.by_ref().take(take).collect();
        let lines_returned = content.split_inclusive('\n').count() as u64;
        Ok(ReadFileOutput {
            path: input.path.clone(),
            content,
            first_line,
            lines_returned,
            more_lines: lines.next().is_some(),
            truncated,
        })
    }

    pub(crate) fn write_file(
        &self,
        input: &inputs::WriteFile,
    ) -> Result<WriteFileOutput, ToolError> {
        const TOOL: &str = "write_file";
        let mode = if input.overwrite {
            WriteMode::Overwrite
        } else {
            WriteMode::CreateNew
        };
        // Judge the target first: a refused path must not create parents.
        self.policy
            .check(&self.base, &input.path, Access::Write)
            .map_err(|e| self.refused(TOOL, e))?;
        let existed = self.beneath.metadata(&self.base, &input.path).is_ok();
        if let Some(parent) = parent_spelling(&input.path)
            && self.beneath.metadata(&self.base, parent).is_err()
        {
            self.beneath
                .create_dir_all(&self.base, parent)
                .map_err(|e| self.refused(TOOL, e))?;
        }
        self.beneath
            .write(&self.base, &input.path, input.content.as_bytes(), mode)
            .map_err(|e| self.refused(TOOL, e))?;
        Ok(WriteFileOutput {
            path: input.path.clone(),
            bytes_written: input.content.len(),
            replaced: existed,
        })
    }

    pub(crate) fn list_directory(
        &self,
        input: &inputs::ListDirectory,
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
