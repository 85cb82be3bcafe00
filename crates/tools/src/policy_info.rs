//! `policy_info`: the effective policy the tools are held to, as the model
//! and a program read it (what the descriptions summarise).

use agentcaps::Policy;
use agentcaps::paths::PathPolicy;
use agentcaps::shell::ShellPolicy;
use schemars::JsonSchema;
use serde::Serialize;

use crate::toolbox::Answer;

/// Result of `policy_info`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct PolicyInfoOutput {
    /// Where the policy came from (a file, or the built-in default).
    origin: String,
    /// `[files]`.
    files: FilesInfo,
    /// `[shell]`.
    shell: ShellInfo,
    /// `[egress]`.
    egress: EgressInfo,
    /// `[patch]`.
    patch: PatchInfo,
}

/// The file rules.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct FilesInfo {
    /// Directories readable and writable.
    read_write: Vec<String>,
    /// Directories readable only.
    read_only: Vec<String>,
    /// Blocked paths and globs, built-in ones included.
    blocked: Vec<String>,
    /// Globs and files never writable (the policy file in use among them),
    /// built-in ones included.
    write_protected: Vec<String>,
    /// The most bytes read from one file.
    max_read_bytes: u64,
}

/// The shell rules.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct ShellInfo {
    /// Programs allowed by name (found in `PATH`).
    allowed_commands: Vec<String>,
    /// Programs allowed by absolute path.
    allowed_programs: Vec<String>,
    /// The default working directory.
    working_directory: String,
    /// File arguments are held to the file rules.
    path_policy: bool,
    /// The longest a command may run, in milliseconds.
    timeout_ms: u64,
    /// The most bytes kept of each output stream.
    max_output_bytes: u64,
}

/// The web rules.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct EgressInfo {
    /// Hosts reachable (empty: any public host).
    allowed_domains: Vec<String>,
    /// Hosts never reachable.
    blocked_domains: Vec<String>,
    /// Methods allowed (empty: GET, HEAD, OPTIONS).
    allowed_methods: Vec<String>,
    /// Address ranges opened on top of the public addresses.
    allowed_cidrs: Vec<String>,
    /// Address ranges closed on top of the built-in ones.
    denied_cidrs: Vec<String>,
    /// Ports allowed (empty: 80 and 443).
    allowed_ports: Vec<u16>,
    /// Redirects followed at most.
    max_redirects: u32,
    /// Response body bytes read at most.
    max_response_bytes: u64,
    /// Deadline of one request, in milliseconds.
    timeout_ms: u64,
}

/// The patch limits.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct PatchInfo {
    /// Largest patch, in bytes.
    max_patch_bytes: u64,
    /// Most files in one patch.
    max_files: u64,
    /// Most hunks in one patch.
    max_hunks: u64,
    /// Largest file a patch reads or writes, in bytes.
    max_target_bytes: u64,
}

impl PolicyInfoOutput {
    pub(crate) fn new(policy: &Policy, paths: &PathPolicy, shell: &ShellPolicy) -> Self {
        let (read_write, read_only) = crate::describe::roots_by_access(paths);
        let egress = &policy.egress;
        let patch = &policy.patch;
        Self {
            origin: policy.origin().to_string(),
            files: FilesInfo {
                read_write,
                read_only,
                blocked: paths.blocked().map(str::to_owned).collect(),
                write_protected: paths
                    .write_protected()
                    .map(str::to_owned)
                    .chain(paths.protected_files().map(|f| f.display().to_string()))
                    .collect(),
                max_read_bytes: policy.max_read_bytes,
            },
            shell: ShellInfo {
                allowed_commands: shell.allowed_commands().to_vec(),
                allowed_programs: shell
                    .allowed_programs()
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                working_directory: shell.working_directory().display().to_string(),
                path_policy: shell.path_policy().is_some(),
                timeout_ms: u64::try_from(shell.timeout().as_millis()).unwrap_or(u64::MAX),
                max_output_bytes: shell.max_output_bytes(),
            },
            egress: EgressInfo {
                allowed_domains: egress.allowed_domains.clone(),
                blocked_domains: egress.blocked_domains.clone(),
                allowed_methods: egress.allowed_methods.clone(),
                allowed_cidrs: egress.allowed_cidrs.clone(),
                denied_cidrs: egress.denied_cidrs.clone(),
                allowed_ports: egress.allowed_ports.clone(),
                max_redirects: egress.max_redirects,
                max_response_bytes: egress.max_response_bytes,
                timeout_ms: egress.timeout_ms,
            },
            patch: PatchInfo {
                max_patch_bytes: patch.max_patch_bytes,
                max_files: patch.max_files as u64,
                max_hunks: patch.max_hunks as u64,
                max_target_bytes: patch.max_target_bytes,
            },
        }
    }
}

fn line<T: std::fmt::Debug>(text: &mut String, key: &str, value: T) {
    text.push_str(&format!("{key} = {value:?}\n"));
}

impl Answer for PolicyInfoOutput {
    fn text(&self) -> String {
        let mut text = format!("# {}\n[files]\n", self.origin);
        let f = &self.files;
        line(&mut text, "read_write", &f.read_write);
        line(&mut text, "read_only", &f.read_only);
        line(&mut text, "blocked", &f.blocked);
        line(&mut text, "write_protected", &f.write_protected);
        line(&mut text, "max_read_bytes", f.max_read_bytes);
        text.push_str("\n[shell]\n");
        let s = &self.shell;
        line(&mut text, "allowed_commands", &s.allowed_commands);
        line(&mut text, "allowed_programs", &s.allowed_programs);
        line(&mut text, "working_directory", &s.working_directory);
        line(&mut text, "path_policy", s.path_policy);
        line(&mut text, "timeout_ms", s.timeout_ms);
        line(&mut text, "max_output_bytes", s.max_output_bytes);
        text.push_str("\n[egress]\n");
        let e = &self.egress;
        line(&mut text, "allowed_domains", &e.allowed_domains);
        line(&mut text, "blocked_domains", &e.blocked_domains);
        line(&mut text, "allowed_methods", &e.allowed_methods);
        line(&mut text, "allowed_cidrs", &e.allowed_cidrs);
        line(&mut text, "denied_cidrs", &e.denied_cidrs);
        line(&mut text, "allowed_ports", &e.allowed_ports);
        line(&mut text, "max_redirects", e.max_redirects);
        line(&mut text, "max_response_bytes", e.max_response_bytes);
        line(&mut text, "timeout_ms", e.timeout_ms);
        text.push_str("\n[patch]\n");
        let p = &self.patch;
        line(&mut text, "max_patch_bytes", p.max_patch_bytes);
        line(&mut text, "max_files", p.max_files);
        line(&mut text, "max_hunks", p.max_hunks);
        line(&mut text, "max_target_bytes", p.max_target_bytes);
        text
    }
}
