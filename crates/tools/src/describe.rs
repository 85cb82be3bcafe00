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
    let (read_write, read_only) = roots_by_access(paths);
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

/// The roots: (read+write, read-only), as text.
pub(crate) fn roots_by_access(paths: &PathPolicy) -> (Vec<String>, Vec<String>) {
    let mut read_write = Vec::new();
    let mut read_only = Vec::new();
    for (root, access) in paths.roots() {
        match access {
            RootAccess::ReadWrite => read_write.push(root.display().to_string()),
            _ => read_only.push(root.display().to_string()),
        }
    }
    (read_write, read_only)
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
    list_at_most(items, MAX_LISTED, items.len())
}

/// Comma-separated, at most `max` of `items`, then "and N more" where N
/// counts up to `total`.
pub(crate) fn list_at_most<S: AsRef<str>>(items: &[S], max: usize, total: usize) -> String {
    let mut shown: Vec<&str> = items.iter().take(max).map(AsRef::as_ref).collect();
    let more = total.saturating_sub(shown.len());
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    shown.join(", ")
}

/// The descriptions of the tools for one policy.
pub(crate) struct Descriptions {
    base: String,
    files: String,
    max_read_bytes: u64,
    shell: String,
    shell_cwd: String,
    http: String,
    patch: agentcaps::patch::PatchPolicyConfig,
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
            patch: policy.patch.clone(),
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
            "Create a text file (or replace it with overwrite=true), creating missing parent directories. The write is atomic. A file you read or wrote with these tools is replaced only while it is unchanged since; if something else changed it, the write is refused (conflict): read it again. To change part of a file, use edit_file. {}",
            self.paths_note()
        )
    }

    pub(crate) fn read_many_files(&self) -> String {
        format!(
            "Read up to {} text files in one call, each judged on its own: a refused or unreadable file is reported in its place and the others are read. At most {} bytes are returned in all. {}",
            crate::files::MAX_MANY_FILES,
            self.max_read_bytes,
            self.paths_note()
        )
    }

    pub(crate) fn edit_file(&self) -> String {
        format!(
            "Replace an exact piece of text in a file (whitespace and line endings included) and show the unified diff. old_text must occur exactly once (a missing or repeated match is refused, naming the lines where it occurs) unless replace_all is set; dry_run shows the diff without writing. The write is atomic, and refused (conflict) if the file changed while it was edited. Only UTF-8 text is edited; files larger than {} bytes cannot be (use apply_patch). {}",
            self.max_read_bytes,
            self.paths_note()
        )
    }

    pub(crate) fn create_directory(&self) -> String {
        format!(
            "Create a directory and its missing parents; an existing directory is not an error. {}",
            self.paths_note()
        )
    }

    pub(crate) fn move_file(&self) -> String {
        format!(
            "Move or rename a file or directory. Both paths are judged for writing (a directory's contents too, at most {} entries); the target must not exist, nothing is ever replaced; a link is moved itself, not followed, and a relative link must still lead inside the allowed directories from its new place. {}",
            agentcaps::paths::Beneath::MAX_MOVED,
            self.paths_note()
        )
    }

    pub(crate) fn policy_info(&self) -> String {
        "Show the effective policy these tools are held to: the allowed and blocked paths, the shell programs, the web rules and every limit (the descriptions summarise it).".to_owned()
    }

    pub(crate) fn list_directory(&self) -> String {
        format!(
            "List a directory's entries, one a line (dir/ for a directory, link@ for a link: links are shown, never followed), optionally recursive. At most {} entries (default {}); a listing that reaches that or {} seconds stops with `truncated`. {}",
            crate::files::MAX_ENTRIES_CAP,
            crate::files::DEFAULT_MAX_ENTRIES,
            crate::stop::DEFAULT_CALL_TIME.as_secs(),
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
            "Search file contents for a regex, line by line, under a directory (like ripgrep: .gitignore and .ignore honoured, hidden files skipped unless the glob names them, links not followed); answers `path:line: text`. At most {} matches (default {}), {} files and {} seconds per call, then `truncated`. Files larger than {} bytes, binary files (a NUL byte) and refused files are skipped. {}",
            crate::search::MAX_MATCHES_CAP,
            crate::search::DEFAULT_MAX_MATCHES,
            crate::search::MAX_FILES,
            crate::stop::DEFAULT_CALL_TIME.as_secs(),
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
            "Apply a unified diff or a `*** Begin Patch` envelope atomically: every file applies or none changes. Hunks are located by their context; ambiguous contexts are refused. Use dry_run to preview. Limits: the patch at most {} bytes, {} files and {} hunks; each file at most {} bytes; locating the hunks at most {} units of comparison work (one per line compared, one more per 64 bytes: context that matches almost everywhere is refused, so give distinctive context). Relative paths are relative to {}. {}",
            self.patch.max_patch_bytes,
            self.patch.max_files,
            self.patch.max_hunks,
            self.patch.max_target_bytes,
            agentcaps::patch::MAX_MATCH_WORK,
            self.base,
            self.files
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
