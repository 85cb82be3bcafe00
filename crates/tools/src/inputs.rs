//! The tools' typed inputs. Each is a JSON object; unknown fields are
//! refused so a misspelt argument is reported, not ignored. The doc comments
//! become the schema descriptions a model reads.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `read_file`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFile {
    /// The file to read, relative to the working directory or absolute.
    pub path: String,
    /// First line to return, 1-based (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub offset_line: Option<u64>,
    /// Most lines to return (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_lines: Option<u64>,
}

/// Arguments of `write_file`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFile {
    /// The file to write, relative to the working directory or absolute.
    /// Missing parent directories are created.
    pub path: String,
    /// The complete new content of the file (UTF-8 text).
    pub content: String,
    /// Replace the file if it exists (default false: refuse to replace).
    #[serde(default)]
    pub overwrite: bool,
}

/// Arguments of `list_directory`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectory {
    /// The directory to list, relative to the working directory or absolute.
    pub path: String,
    /// Also list subdirectories, depth first (default false). Links are
    /// reported, never followed.
    #[serde(default)]
    pub recursive: bool,
    /// Most entries to return (default 1000, at most 10000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_entries: Option<u32>,
}

/// Arguments of `file_info`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileInfo {
    /// The file or directory, relative to the working directory or absolute.
    /// A link is described, not followed.
    pub path: String,
}

/// Arguments of `search_files`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchFiles {
    /// A regular expression (Rust `regex` syntax), matched line by line.
    pub pattern: String,
    /// The directory to search (default: the working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Only search files whose path matches this glob, such as `*.rs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glob: Option<String>,
    /// Most matching lines to return (default 100, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_matches: Option<u32>,
}

/// Arguments of `shell_command`: give exactly one of `argv` or `command`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellCommand {
    /// The program and its arguments, one string each (preferred), such as
    /// `["ls", "-la", "src"]`. No shell is involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    /// The command as one string, split with POSIX quoting and NO expansion:
    /// no pipes, redirection, `;`, `&&`, variables or globs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Working directory (default: the server's working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Timeout in milliseconds, capped by the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// Arguments of `http_request`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpRequest {
    /// An absolute `http://` or `https://` URL.
    pub url: String,
    /// The HTTP method (default `GET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request headers, name to value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Request body (UTF-8 text), for methods the policy allows a body with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The name of a credential of the policy (`[credentials.NAME]`) to
    /// authenticate with: added by agentcaps for an https:// URL of a host
    /// it is bound to; the secret is never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyPatch {
    /// A unified diff (plain or git-style; `a/` and `b/` prefixes are
    /// stripped) or a `*** Begin Patch` ... `*** End Patch` envelope.
    pub patch: String,
    /// Report what would change without writing anything (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// Arguments of `read_many_files`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadManyFiles {
    /// The files to read (at most 50), each judged on its own: a refused or
    /// unreadable one is reported in its place, the others are read.
    pub paths: Vec<String>,
    /// Most lines to return from each file (default 500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_lines_each: Option<u64>,
}

/// Arguments of `edit_file`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFile {
    /// The file to edit, relative to the working directory or absolute.
    pub path: String,
    /// The exact text to replace (whitespace and line endings included). It
    /// must occur exactly once unless `replace_all` is true.
    pub old_text: String,
    /// The text to put in its place.
    pub new_text: String,
    /// Replace every occurrence instead of requiring exactly one (default
    /// false).
    #[serde(default)]
    pub replace_all: bool,
    /// Show the diff without writing (default false).
    #[serde(default)]
    pub dry_run: bool,
}

/// Arguments of `create_directory`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDirectory {
    /// The directory to create with its missing parents, relative to the
    /// working directory or absolute. An existing directory is not an error.
    pub path: String,
}

/// Arguments of `move_file`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveFile {
    /// The file or directory to move (a link is moved itself, not followed).
    pub from: String,
    /// Where it goes; must not exist (nothing is ever replaced).
    pub to: String,
}

/// Arguments of `policy_info`: none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyInfo {}
