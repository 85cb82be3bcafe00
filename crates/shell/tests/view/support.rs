//! A project tree and a policy that allows an interpreter, run through the
//! view helper built with this crate.

use std::path::PathBuf;
use std::time::Duration;

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, RunResult, ShellPolicy, ShellPolicyBuilder};

/// The helper binary of this crate.
pub(crate) fn helper() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_agentcaps-view"))
}

/// A project: `src/main.rs`, `.env` with a secret, `secrets/key.txt`
/// (blocked), `.git/config` and `.git/hooks/`.
pub(crate) struct Project {
    _dir: Option<tempfile::TempDir>,
    pub(crate) root: PathBuf,
}

impl Project {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("src/main.rs", "fn main() {}\n");
        write("README.md", "hello\n");
        write(".env", "SECRET=hunter2\n");
        write("config/.env.local", "SECRET=local-secret\n");
        write("secrets/key.txt", "SECRET=in-a-blocked-dir\n");
        write(".git/config", "[core]\n\tbare = false\n");
        write(".git/HEAD", "ref: refs/heads/main\n");
        std::fs::create_dir_all(root.join(".git/hooks")).expect("hooks");
        Self {
            _dir: Some(dir),
            root,
        }
    }

    /// The project another process made at `root` (left in place when
    /// this value is dropped).
    pub(crate) fn at(root: PathBuf) -> Self {
        Self { _dir: None, root }
    }

    /// Writes `text` to `rel` in the real tree, making its parents.
    pub(crate) fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    pub(crate) fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }

    /// The path policy: the project writable, `secrets` and `**/.env*`
    /// blocked (the defaults block `.env*` too), `.git` not blocked.
    pub(crate) fn paths(&self) -> PathPolicy {
        PathPolicy::builder()
            .allow(&self.root)
            .block(&format!("{}/secrets", self.root.display()))
            .build()
            .expect("path policy")
    }

    /// A policy allowing `sh` (an interpreter) and a few tools, with the
    /// view helper of this crate.
    pub(crate) fn policy(&self) -> ShellPolicyBuilder {
        ShellPolicy::builder(&self.root)
            .allow_command("sh")
            .allow_command("cat")
            .allow_command("ls")
            .path_policy(self.paths())
            .view_helper(helper())
            .timeout(Duration::from_secs(20))
    }

    /// Runs `script` with `sh` under `policy` (from a file the test
    /// writes in the root first: `sh -c` is refused as a launcher).
    pub(crate) fn sh(&self, policy: &ShellPolicy, script: &str) -> RunResult {
        std::fs::write(self.root.join("run.sh"), script).expect("script");
        run(policy, CommandRequest::argv(["sh", "run.sh"]))
    }
}

impl Project {
    /// Runs `script` with `python3` (and `args`) under [`Self::policy`]
    /// with `python3` allowed, from a file the test writes in the root.
    pub(crate) fn python(&self, script: &str, args: &[&str]) -> RunResult {
        std::fs::write(self.root.join("run.py"), script).expect("script");
        let policy = self
            .policy()
            .allow_command("python3")
            .build()
            .expect("policy");
        let argv = ["python3", "run.py"]
            .iter()
            .chain(args)
            .map(|a| (*a).to_owned());
        run(&policy, CommandRequest::argv(argv))
    }
}

pub(crate) fn run(policy: &ShellPolicy, request: CommandRequest) -> RunResult {
    let command = policy.validate(&request).expect("validated");
    policy.run_blocking(command).expect("ran")
}

/// A directory of its own for a tool (`…/opt/tool`, which the view holds
/// whole when a program in its `bin` runs), and what holds it.
pub(crate) fn tool_installation() -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir().expect("tempdir");
    let tool = base
        .path()
        .canonicalize()
        .expect("canonical")
        .join("opt/tool");
    (base, tool)
}

/// Asserts that `result` ran with every layer of the view in place where
/// this user can open `/dev/fuse` (the names layer needs it); where it
/// cannot (a host that lets only root open it, as this test machine
/// does for other users), that the run says `partial` and names the
/// missing layer, and nothing less.
pub(crate) fn assert_full_where_fuse_opens(result: &RunResult) {
    let fuse = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse");
    if fuse.is_ok() {
        return assert_full(result);
    }
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{:?}",
        result.enforced
    );
    let reason = result.enforced_reason.as_deref().unwrap_or_default();
    assert!(
        reason.starts_with("the view has no names layer"),
        "{reason}"
    );
}

/// Asserts that `result` ran with every layer of the view in place.
pub(crate) fn assert_full(result: &RunResult) {
    assert_eq!(
        result.enforced.to_string(),
        "full",
        "{:?}",
        result.enforced_reason
    );
}

/// The refused change at `path`, with its rule.
pub(crate) fn refused_rule(result: &RunResult, path: &str) -> Option<String> {
    result
        .changes
        .as_ref()?
        .refused
        .iter()
        .find(|c| c.path == path)
        .map(|c| c.rule.clone())
}

/// Whether a change at `path` was applied.
pub(crate) fn applied(result: &RunResult, path: &str) -> bool {
    result
        .changes
        .as_ref()
        .is_some_and(|c| c.applied.iter().any(|a| a.path == path))
}

/// How the change at `path` was applied, if it was.
pub(crate) fn applied_action<'a>(
    changes: &'a agentcaps_shell::Changes,
    path: &str,
) -> Option<&'a str> {
    changes
        .applied
        .iter()
        .find(|c| c.path == path)
        .map(|c| c.action.as_str())
}

/// Host processes whose command line holds `marker`.
pub(crate) fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// The variable that hands a test's re-run as an unprivileged user the
/// directory it works in.
const AS_NOBODY: &str = "AGENTCAPS_TEST_AS_NOBODY";

/// The unprivileged user and group a root test runner re-runs a test as.
const NOBODY: u32 = 65534;

/// Runs `body` as a user that is not root: in this process when it runs
/// as one already, else in a re-run of this one test (`name`, its path in
/// this binary) under `setpriv` as `nobody`, whose success it asserts.
/// Root reads and lists whatever the modes say, so what a mode denies
/// its owner is only seen by another user.
pub(crate) fn as_non_root(name: &str, body: impl FnOnce()) {
    if std::env::var_os(AS_NOBODY).is_some() || !rustix::process::geteuid().is_root() {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("this test binary");
    let output = std::process::Command::new("setpriv")
        .args([
            format!("--reuid={NOBODY}"),
            format!("--regid={NOBODY}"),
            "--clear-groups".to_owned(),
        ])
        .arg(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(AS_NOBODY, "1")
        .env("TMPDIR", "/tmp")
        .current_dir("/")
        .output()
        .expect("setpriv (util-linux) runs the test as nobody");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "as nobody: {text}");
    assert!(text.contains("1 passed"), "the re-run ran no test: {text}");
}

/// Runs the test `name` of this binary alone in a process of its own with
/// `var=value` set (the mark of a re-run); its status and everything it
/// printed.
pub(crate) fn rerun(name: &str, var: &str, value: &str) -> (std::process::ExitStatus, String) {
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(var, value)
        .output()
        .expect("re-run");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status, text)
}
