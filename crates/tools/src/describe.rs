//! Tool descriptions generated from the live policy: what each tool does,
//! what is allowed, and the limits — so the model knows before it asks.

use std::path::Path;

use agentcaps::Policy;
use agentcaps::paths::{PathPolicy, RootAccess};

use crate::files::FileTools;
use crate::http::HttpTool;
use crate::shell::ShellTool;

/// The most entries of a list spelled out in a description.
const MAX_LISTED: usize = 12;

/// "Allowed: read+write under …; read-only under …." — the short form
/// appended to file refusals.
pub(crate) fn files_allowed(paths: &PathPolicy) -> String {
    let mut read_write = Vec::new();
    let mut read_only = Vec::new();
    for (root, access) in paths.roots() {
        match access {
            RootAccess::ReadWrite => read_write.push(root.display().to_string()),
            _ => read_only.push(root.display().to_string()),
        }
    }
    let mut parts = Vec::new();
    if !read_write.is_empty() {
        parts.push(format!("read+write under {}", list(&read_write)));
    }
    if !read_only.is_empty() {
        parts.push(format!("read-only under {}", list(&read_only)));
    }
    if parts.is_empty() {
        parts.push("nothing (no directory is allowed)".to_owned());
    }
    format!("Allowed: {}.", parts.join("; "))
}

/// The short form plus what is blocked, for the file tools' descriptions.
pub(crate) fn files_described(policy: &Policy, paths: &PathPolicy) -> String {
    let mut text = files_allowed(paths);
    let mut blocked: Vec<String> = policy.files.blocked.clone();
    if policy.files.defaults {
        blocked.push("secrets (.env*, *.pem, id_rsa*, .ssh, .aws), /proc, /sys, /dev".into());
    }
    if !blocked.is_empty() {
        text.push_str(&format!(" Blocked: {}.", list(&blocked)));
    }
    if policy.files.defaults {
        text.push_str(
            " Never writable: .git/config, .git/hooks, shell rc files, editor and tool configs.",
        );
    }
    text
}

/// Comma-separated, at most [`MAX_LISTED`] entries then "and N more".
pub(crate) fn list<S: AsRef<str>>(items: &[S]) -> String {
    let mut shown: Vec<&str> = items.iter().take(MAX_LISTED).map(AsRef::as_ref).collect();
    let more = items.len().saturating_sub(MAX_LISTED);
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    shown.join(", ")
}

/// The descriptions of the eight tools for one policy.
pub(crate) struct Descriptions {
    base: String,
    files: String,
    max_read_bytes: u64,
    shell: String,
    shell_cwd: String,
    http: String,
}

impl Descriptions {
    pub(crate) fn new(
        policy: &Policy,
        base: &Path,
        files: &FileTools,
        shell: &ShellTool,
        http: &HttpTool,
    ) -> Self {
        Self {
            base: base.display().to_string(),
            files: files_described(policy, files.policy()),
            max_read_bytes: policy.max_read_bytes,
            shell: shell.described().to_owned(),
            shell_cwd: shell.working_directory().display().to_string(),
            http: http.described().to_owned(),
        }
    }

    fn paths_note(&self) -> String {
        format!(
            "Relative paths are relative to {}. {} Paths are judged where they really lead (links and `..` included).",
            self.base, self.files
        )
    }

    pub(crate) fn read_file(&self) -> String {
        format!(
            "Read a text file, optionally a range of lines. At most {} bytes are read per file. {}",
            self.max_read_bytes,
            self.paths_note()
        )
    }

    pub(crate) fn write_file(&self) -> String {
        format!(
            "Create a text file (or replace it with overwrite=true), creating missing parent directories. The write is atomic. {}",
            self.paths_note()
        )
    }

    pub(crate) fn list_directory(&self) -> String {
        format!(
            "List a directory's entries (optionally recursive); links are shown as links, never followed. {}",
            self.paths_note()
        )
    }

    pub(crate) fn file_info(&self) -> String {
        format!(
            "Describe a file or directory: kind, size, modification time, read-only flag. {}",
            self.paths_note()
        )
    }

    pub(crate) fn search_files(&self) -> String {
        format!(
            "Search file contents for a regex, line by line, under a directory (like ripgrep: .gitignore honoured, hidden files skipped, links not followed). Files larger than {} bytes and refused files are skipped. {}",
            self.max_read_bytes,
            self.paths_note()
        )
    }

    pub(crate) fn shell_command(&self) -> String {
        format!(
            "Run one program, without a shell: give argv (preferred) or a command string (quotes only; no pipes, redirection, `;`, `&&`, variables or globs). {} The default working directory is {}.",
            self.shell, self.shell_cwd
        )
    }

    pub(crate) fn http_request(&self) -> String {
        format!(
            "Make an HTTP(S) request and return status, headers and body (text). {}",
            self.http
        )
    }

    pub(crate) fn apply_patch(&self) -> String {
        format!(
            "Apply a unified diff or a `*** Begin Patch` envelope atomically: every file applies or none changes. Hunks are located by their context; ambiguous contexts are refused. Use dry_run to preview. Relative paths are relative to {}. {}",
            self.base, self.files
        )
    }
}

#[cfg(test)]
mod tests {
    use super::list;

    #[test]
    fn list_spells_out_a_short_list_and_counts_the_rest() {
        assert_eq!(list(&["a", "b"]), "a, b");
        let many: Vec<String> = (0..15).map(|i| i.to_string()).collect();
        assert!(list(&many).ends_with("11, and 3 more"), "{}", list(&many));
    }
}
