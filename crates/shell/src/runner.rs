//! Running a validated command (SPEC §2.7): no shell, stdin closed, the
//! §2.2 environment, a new process group killed whole on timeout, and
//! per-stream caps while draining to the end.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::error::ShellError;
use crate::kernel::{self, Enforcement, KernelRefusal, KernelRules};
use crate::output::Capture;
use crate::policy::ShellPolicy;
use crate::request::ValidatedCommand;

/// How long to keep reading output after the process group was killed on
/// timeout (a process that left the group may still hold a pipe).
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);

/// How a command ended. Serializes as `{"code": N}` or `{"signal": N}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal (on timeout: `SIGKILL`, 9).
    Signal(i32),
}

/// Whether each stream was cut at `max_output_bytes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Truncated {
    /// Standard output was cut.
    pub stdout: bool,
    /// Standard error was cut.
    pub stderr: bool,
}

/// What a run produced. Serializes with `duration` in milliseconds.
#[derive(Debug, Clone, serde::Serialize)]
#[non_exhaustive]
pub struct RunResult {
    /// Exit code or signal.
    pub exit: Exit,
    /// Standard output (UTF-8, invalid bytes replaced, at most
    /// `max_output_bytes`, never cut inside a character).
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Which streams were cut.
    pub truncated: Truncated,
    /// Whether the timeout expired (the whole process group was killed).
    pub timed_out: bool,
    /// Wall time from spawn to the end of the output.
    #[serde(rename = "duration_ms", serialize_with = "millis")]
    pub duration: Duration,
    /// The program executed.
    pub program: PathBuf,
    /// The argv that ran.
    pub argv: Vec<String>,
    /// What the kernel enforced.
    pub enforced: Enforcement,
}

impl ShellPolicy {
    /// Run a command that [`ShellPolicy::validate`] accepted.
    ///
    /// The program is executed directly (no shell) with the validated argv,
    /// working directory and environment, stdin closed, in a new process
    /// group. When the program exits, what is left of its process group is
    /// killed; on timeout the whole group is killed and the result says
    /// `timed_out`. Output is read to the end so the child never blocks; what
    /// exceeds `max_output_bytes` is discarded and flagged.
    ///
    /// # Errors
    ///
    /// [`ShellError::Spawn`] when the program cannot be started or waited
    /// for (or the kernel cannot enforce a required policy).
    pub async fn run(&self, command: ValidatedCommand) -> Result<RunResult, ShellError> {
        let spawn_error = |source: std::io::Error| match KernelRefusal::from_io_error(&source) {
            Some(refusal) => ShellError::KernelEnforcement {
                message: refusal.to_string(),
            },
            None => ShellError::Spawn {
                program: command.program.clone(),
                source,
            },
        };
        let mut cmd = tokio::process::Command::new(&command.program);
        if let Some(arg0) = command.argv.first() {
            #[cfg(unix)]
            cmd.arg0(arg0);
            #[cfg(not(unix))]
            let _ = arg0;
        }
        cmd.args(command.argv.iter().skip(1))
            .current_dir(&command.cwd)
            .env_clear()
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(if command.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);

        let rules = self.kernel_rules(&command);
        let started = Instant::now();
        let (mut child, enforced) =
            kernel::spawn_confined(&mut cmd, &rules).map_err(spawn_error)?;
        let group = child.id();
        let mut stdin = child.stdin.take();
        let input = command.stdin.clone().unwrap_or_default();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let mut out = Capture::new(self.max_output_bytes);
        let mut err = Capture::new(self.max_output_bytes);

        let finished = {
            let waited = async {
                let status = child.wait().await;
                // Whatever the program left running in its group goes too, so
                // the pipes close and nothing outlives the command.
                kill_group(group);
                status
            };
            let work = async {
                let (status, (), (), ()) = tokio::join!(
                    waited,
                    feed(&mut stdin, &input),
                    drain(&mut stdout, &mut out),
                    drain(&mut stderr, &mut err)
                );
                status
            };
            tokio::time::timeout(command.timeout, work).await
        };
        let (status, timed_out) = match finished {
            Ok(status) => (status.map_err(spawn_error)?, false),
            Err(_elapsed) => {
                // The leader is not reaped yet, so the group id is still ours.
                kill_group(group);
                let status = child.wait().await.map_err(spawn_error)?;
                let _ = tokio::time::timeout(DRAIN_AFTER_KILL, async {
                    tokio::join!(drain(&mut stdout, &mut out), drain(&mut stderr, &mut err))
                })
                .await;
                (status, true)
            }
        };
        Ok(RunResult {
            exit: exit_of(status),
            stdout: out.text(),
            stderr: err.text(),
            truncated: Truncated {
                stdout: out.truncated,
                stderr: err.truncated,
            },
            timed_out,
            duration: started.elapsed(),
            program: command.program,
            argv: command.argv,
            enforced,
        })
    }

    /// [`ShellPolicy::run`] on a private single-threaded runtime, for hosts
    /// without one.
    ///
    /// # Errors
    ///
    /// As [`ShellPolicy::run`]; [`ShellError::Config`] when called from
    /// inside a tokio runtime (use `run` there).
    pub fn run_blocking(&self, command: ValidatedCommand) -> Result<RunResult, ShellError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ShellError::Config {
                message: "run_blocking was called inside a tokio runtime; await run instead"
                    .to_owned(),
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| ShellError::Spawn {
                program: command.program.clone(),
                source,
            })?;
        runtime.block_on(self.run(command))
    }

    /// What the kernel is asked to enforce for `command`
    /// ([`KernelRules::from_policy`]): the path policy's roots (read-write
    /// ones writable) plus what running the resolved program needs, or no
    /// file restriction when there is no path policy; network and the
    /// `require` switch as the policy says. Pass it to
    /// [`kernel::would_enforce`] to say what a run would get.
    pub fn kernel_rules(&self, command: &ValidatedCommand) -> KernelRules {
        KernelRules::from_policy(
            self.paths.as_ref(),
            &command.program,
            self.allow_network,
            self.require_kernel_enforcement,
        )
    }
}

fn millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// Write `input` to the child's stdin, then close it (a child that stops
/// reading early is not an error).
async fn feed(stdin: &mut Option<tokio::process::ChildStdin>, input: &[u8]) {
    if let Some(mut pipe) = stdin.take() {
        let _ = tokio::io::AsyncWriteExt::write_all(&mut pipe, input).await;
    }
}

/// Read `stream` to its end, keeping what fits in `capture`.
async fn drain<R>(stream: &mut Option<R>, capture: &mut Capture)
where
    R: tokio::io::AsyncRead + Unpin,
{
    let Some(reader) = stream.as_mut() else {
        return;
    };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(chunk.get(..n).unwrap_or_default()),
        }
    }
    *stream = None;
}

/// Kill the process group led by `leader` (ignoring a group already gone).
fn kill_group(leader: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = leader
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = leader;
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Exit::Signal(signal);
        }
    }
    Exit::Code(status.code().unwrap_or(-1))
}
