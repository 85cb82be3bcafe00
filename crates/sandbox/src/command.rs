//! A prepared command: what the sandbox runs, exactly as given.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::output::OutputCounter;

/// A command ready to run: the program's absolute path, the argv, the
/// working directory, the whole environment, optional standard input, a
/// timeout, and whether the program may start others. The sandbox runs it as given — no shell, no `PATH` search, no
/// inherited variable — so whoever builds it owns what it asks for (the
/// shell crate builds one only from a command its policy accepted).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SandboxCommand {
    /// The program executed (absolute).
    pub program: PathBuf,
    /// The argv; `argv[0]` is what the program sees as its name.
    pub argv: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The complete environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// Bytes for standard input (closed when `None`).
    pub stdin: Option<Vec<u8>>,
    /// When the whole tree is killed.
    pub timeout: Duration,
    /// Whether the program may start other programs. `false` for a program
    /// that runs nothing by itself (`sed`, `awk`, `grep`): where Landlock
    /// is available it then executes nothing but its own file and the
    /// loader, so that a command hidden in its arguments (a `sed` `e`, an
    /// `awk` `system()`) fails with `EACCES`
    /// ([`KernelRules::exec_only_program`](crate::kernel::KernelRules::exec_only_program)).
    /// `true` by default.
    pub runs_programs: bool,
    /// Counts the output as it comes, for a host reporting progress
    /// (`None`: not counted).
    pub output_counter: Option<OutputCounter>,
}

impl SandboxCommand {
    /// `program` (absolute) with `argv`, run in `cwd` with an empty
    /// environment, no standard input and a 30 s timeout, free to start
    /// other programs.
    pub fn new(
        program: impl Into<PathBuf>,
        argv: impl IntoIterator<Item = impl Into<String>>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        SandboxCommand {
            program: program.into(),
            argv: argv.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env: Vec::new(),
            stdin: None,
            timeout: Duration::from_secs(30),
            runs_programs: true,
            output_counter: None,
        }
    }

    /// Adds the variable `name=value` to the environment.
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Gives `bytes` on standard input.
    #[must_use]
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Says whether the program may start other programs (see
    /// [`runs_programs`](Self::runs_programs)).
    #[must_use]
    pub fn runs_programs(mut self, on: bool) -> Self {
        self.runs_programs = on;
        self
    }

    /// Counts the bytes of output into `counter` as they come.
    #[must_use]
    pub fn count_output(mut self, counter: OutputCounter) -> Self {
        self.output_counter = Some(counter);
        self
    }

    /// Kills the whole tree after `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}
