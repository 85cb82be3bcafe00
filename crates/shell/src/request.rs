//! What the agent asks for, and what validation hands to the runner.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A command as the agent gives it: an argv array (preferred) or a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Command {
    /// `["grep", "-n", "fn main", "src/main.rs"]`.
    Argv(Vec<String>),
    /// `grep -n 'fn main' src/main.rs`, split with POSIX quoting and no
    /// expansion of any kind.
    Line(String),
}

/// One command the agent asks to run.
///
/// ```
/// use agentcaps_shell::CommandRequest;
/// use std::time::Duration;
/// let req = CommandRequest::argv(["ls", "-la"]).with_cwd("src").with_timeout(Duration::from_secs(5));
/// let same = CommandRequest::line("ls -la");
/// # let _ = (req, same);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CommandRequest {
    /// The command.
    pub command: Command,
    /// The working directory, relative to the policy's working directory
    /// (or absolute). Judged by the path policy when there is one.
    #[serde(default)]
    pub cwd: Option<String>,
    /// A timeout, capped by the policy's.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Variables the agent asks to set; refused unless the policy lets the
    /// agent set variables, and then checked by name.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Bytes for the command's standard input; refused unless the policy
    /// allows it (stdin is closed otherwise).
    #[serde(default)]
    pub stdin: Option<String>,
}

impl CommandRequest {
    /// A request from an argv array.
    pub fn argv<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(Command::Argv(argv.into_iter().map(Into::into).collect()))
    }

    /// A request from a command string.
    pub fn line(line: impl Into<String>) -> Self {
        Self::new(Command::Line(line.into()))
    }

    fn new(command: Command) -> Self {
        Self {
            command,
            cwd: None,
            timeout_ms: None,
            env: BTreeMap::new(),
            stdin: None,
        }
    }

    /// Run in `cwd` (relative to the policy's working directory).
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Ask for a shorter timeout than the policy's.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Give the command these bytes on its standard input (see
    /// [`CommandRequest::stdin`]).
    pub fn with_stdin(mut self, input: impl Into<String>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Ask to set a variable (see [`CommandRequest::env`]).
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

/// A command that passed every check, ready to run.
///
/// Only [`ShellPolicy::validate`](crate::ShellPolicy::validate) makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedCommand {
    pub(crate) program: PathBuf,
    pub(crate) argv: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) lookups: u64,
    pub(crate) timeout: Duration,
    pub(crate) stdin: Option<Vec<u8>>,
    pub(crate) runs_programs: bool,
}

impl ValidatedCommand {
    /// The program that will be executed: an absolute path, found in the
    /// command's `PATH` (empty and relative entries skipped) or listed by
    /// the host.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The argv that will run. `argv[0]` is the allowed name; a launcher's
    /// inner program is replaced by its absolute path so that the launcher
    /// does not search for it again.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The working directory it will run in (the real location that was
    /// judged, when there is a path policy).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The names of the variables it will get (values are not shown: they
    /// may be secrets the host chose to pass).
    pub fn env_names(&self) -> impl Iterator<Item = &OsStr> {
        self.env.iter().map(|(name, _)| name.as_os_str())
    }

    /// The file-system lookups the checks spent.
    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    /// The bytes it will get on standard input (`None`: stdin is closed).
    pub fn stdin(&self) -> Option<&[u8]> {
        self.stdin.as_deref()
    }

    /// The timeout it will run under.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Whether the command may start other programs. `false` only when
    /// one program runs (no launcher around it), its rule table says it
    /// runs nothing by itself (`runs_programs = false`: `cat`, `grep`,
    /// `sed`, `find`, …) and none of the options that make it start
    /// programs (the table's `starts_programs`: `find -exec`, `rg -z`) was
    /// given. [`ShellPolicy::run`](crate::ShellPolicy::run) then lets it
    /// execute nothing but its own file and the loader (where Landlock is
    /// available, in the view and without it), so that a command its
    /// script scan missed (a `sed` `e`, an `awk` `system()`) fails inside
    /// with `EACCES`; the result's `enforced` covers it.
    pub fn runs_programs(&self) -> bool {
        self.runs_programs
    }
}
