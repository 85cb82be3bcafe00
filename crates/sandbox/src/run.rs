//! Running a prepared command: no shell, stdin closed, the
//! scrubbed environment, a new process group killed whole on timeout, and
//! per-stream caps while draining to the end.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::command::SandboxCommand;
use crate::confinement::Sandbox;
use crate::error::SandboxError;
use crate::kernel::{self, Enforcement, KernelRefusal, KernelRules};
use crate::output::{Capture, OutputCounter};
use crate::tree::ProcessTree;
use crate::writeback::Changes;

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
    /// It was killed by this signal (on timeout: `SIGKILL`, 9). On Windows
    /// there are no signals: a tree killed on timeout exits with code 1.
    Signal(i32),
}

/// Whether commands get their private view here ([`Sandbox::view_availability`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViewAvailability {
    /// Every run gets its view, or fails (`view-failed`): never less.
    Available,
    /// No view can be built here (or the host turned it off): runs get the
    /// fallback, whose result names what is then open.
    Unavailable {
        /// Why, as the probe (or the host's setting) says.
        reason: String,
    },
    /// Views could be built, but not safely with what the host configured
    /// (a staging directory that is not this user's private one): every
    /// run is refused.
    Refused {
        /// Why.
        reason: String,
    },
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
    /// What the kernel enforced: `full` only when the private view, the
    /// judged write-back and Landlock all held.
    pub enforced: Enforcement,
    /// Why `enforced` is not `full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforced_reason: Option<String>,
    /// What the command's writes came to: committed and refused changes
    /// (`None` when it ran without the private view, whose writes land
    /// unjudged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Changes>,
    /// The connections the command asked the network proxy for, with
    /// each decision (`None` when its network is not the proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<Vec<crate::network::Connection>>,
    /// Connections the proxy did not list in `connections` because its
    /// limit was reached: refusals and failures only, every allowed one is
    /// listed (`None` when its network is not the proxy).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_dropped: Option<u64>,
}

impl Sandbox {
    /// Run a command that [`SandboxCommand`] describes.
    ///
    /// The program is executed directly (no shell) with the validated argv,
    /// working directory and environment, stdin closed, in a new process
    /// group (on Windows, a new Job object). On Linux, with a path policy, it runs in its private view
    /// ([`kernel::view`]): when it ends, every process it left is killed and
    /// its writes are judged and committed ([`RunResult::changes`]). On
    /// timeout everything it started is killed and the result says
    /// `timed_out`. Output is read to the end so the child never blocks;
    /// what exceeds `max_output_bytes` is discarded and flagged.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Spawn`] when the program cannot be started or waited
    /// for; [`SandboxError::KernelEnforcement`] when the policy requires full
    /// kernel enforcement and it is not available here.
    pub async fn run(&self, command: SandboxCommand) -> Result<RunResult, SandboxError> {
        raise_open_files_limit();
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let reason = match self.decide_view_to_run() {
            crate::view_run::ViewDecision::View { helper, base } => {
                return self.run_in_view(command, &helper, &base).await;
            }
            crate::view_run::ViewDecision::Refuse(reason) => {
                return Err(SandboxError::ViewFailed { reason });
            }
            crate::view_run::ViewDecision::Fallback(reason) => reason,
        };
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        let reason =
            "the private view exists on Linux only (with the `landlock` feature)".to_owned();
        self.run_without_view(command, reason).await
    }

    /// Whether commands get their private view here: decided once per
    /// process by the probe (the view helper is started in its probe mode,
    /// which creates the namespaces and an overlay, then exits), and never
    /// changed by what happens in a run.
    #[must_use]
    pub fn view_availability(&self) -> ViewAvailability {
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        return match self.decide_view() {
            crate::view_run::ViewDecision::View { .. } => ViewAvailability::Available,
            crate::view_run::ViewDecision::Fallback(reason) => {
                ViewAvailability::Unavailable { reason }
            }
            crate::view_run::ViewDecision::Refuse(reason) => ViewAvailability::Refused { reason },
        };
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        ViewAvailability::Unavailable {
            reason: "the private view exists on Linux only (with the `landlock` feature)"
                .to_owned(),
        }
    }

    /// What a run of `program` would get here, without running it (for
    /// `check shell`): the enforcement level, and why it is not `full`.
    /// Whether the private view can be built is found by trying: the view
    /// helper is started once in this process in its probe mode, which
    /// creates the namespaces and an overlay, then exits.
    #[must_use]
    pub fn planned_enforcement(&self, program: &Path) -> (Enforcement, Option<String>) {
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let reason = match self.decide_view() {
            crate::view_run::ViewDecision::View { .. } => {
                let rules = self.kernel_rules(program);
                let landlock = kernel::would_enforce(&rules);
                if self.paths.is_none() {
                    return (
                        Enforcement::Partial { abi: kernel::kernel_abi().min(kernel::FULL_ABI) },
                        Some("files are not confined: without a path policy the command sees the host's files and its writes land unjudged (its processes, IPC and network are private all the same)".to_owned()),
                    );
                }
                // The names layer needs `/dev/fuse`: a run where this
                // process cannot open it goes without, and says so.
                let names = !self.view.skip_names_layer && kernel::view::names::available();
                return crate::view_run::with_names_layer(
                    crate::view_run::in_view_enforcement(landlock, self.allow_network),
                    names,
                );
            }
            crate::view_run::ViewDecision::Refuse(reason) => {
                return (
                    Enforcement::None,
                    Some(format!(
                        "commands will not run: {reason} (rule view-failed)"
                    )),
                );
            }
            crate::view_run::ViewDecision::Fallback(reason) => reason,
        };
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        let reason =
            "the private view exists on Linux only (with the `landlock` feature)".to_owned();
        #[cfg(target_os = "macos")]
        if self.view.enabled {
            return (
                Enforcement::Partial { abi: 0 },
                Some(kernel::seatbelt::PARTIAL_REASON.to_owned()),
            );
        }
        let rules = self.kernel_rules(program);
        let planned = kernel::would_enforce(&rules);
        let reason = if self.proxy.is_some() && !self.allow_network {
            format!("{reason}; {}", proxy_caveat(None, planned))
        } else {
            reason
        };
        match planned {
            Enforcement::None => (
                Enforcement::None,
                Some(format!("no kernel confinement: {reason}")),
            ),
            Enforcement::Full => (
                Enforcement::Partial {
                    abi: kernel::kernel_abi(),
                },
                Some(format!(
                    "Landlock only: {reason}; {}",
                    self.open_without_view()
                )),
            ),
            Enforcement::Partial { abi } => (
                Enforcement::Partial { abi },
                Some(format!(
                    "Landlock ABI {abi} only: {reason}; {}",
                    self.open_without_view()
                )),
            ),
        }
    }

    /// [`Sandbox::planned_enforcement`] for `command` as a whole: also
    /// whether the execute-only wall would hold for a program that runs
    /// nothing by itself ([`SandboxCommand::runs_programs`]), said as a run
    /// of it would say it.
    #[must_use]
    pub fn planned_command_enforcement(
        &self,
        command: &SandboxCommand,
    ) -> (Enforcement, Option<String>) {
        let (enforced, reason) = self.planned_enforcement(&command.program);
        if command.runs_programs || cfg!(target_os = "macos") {
            return (enforced, reason);
        }
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let rules = match self.decide_view() {
            crate::view_run::ViewDecision::View { .. } => {
                KernelRules::from_policy(self.paths.as_ref(), &command.program, true, false)
            }
            crate::view_run::ViewDecision::Refuse(_) => return (enforced, reason),
            crate::view_run::ViewDecision::Fallback(_) => self.kernel_rules(&command.program),
        };
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        let rules = self.kernel_rules(&command.program);
        let landlock = kernel::would_enforce(&rules);
        (enforced, kernel::exec_only_reason(reason, true, landlock))
    }

    /// The fallback: Landlock only (where the kernel has it), reported as
    /// `partial` with `reason`; refused when the policy requires full
    /// enforcement.
    pub(crate) async fn run_without_view(
        &self,
        command: SandboxCommand,
        reason: String,
    ) -> Result<RunResult, SandboxError> {
        if self.require_kernel_enforcement {
            return Err(SandboxError::KernelEnforcement {
                message: format!(
                    "refused to run: the policy sets `require_kernel_enforcement`, and commands cannot get their private view here ({reason}); nothing ran. Run where user namespaces are available, or lift the requirement"
                ),
            });
        }
        let spawn_error = |source: std::io::Error| match KernelRefusal::from_io_error(&source) {
            Some(refusal) => SandboxError::KernelEnforcement {
                message: refusal.to_string(),
            },
            None => SandboxError::Spawn {
                program: command.program.clone(),
                source,
            },
        };
        // The judging proxy, on a TCP port of loopback that Landlock lets
        // the command reach (and no other port).
        let mut env = command.env.clone();
        let mut rules = self
            .kernel_rules(&command.program)
            .with_exec_only_program(!command.runs_programs);
        let proxy = match &self.proxy {
            Some(proxy) if !self.allow_network => {
                let (port, session) = proxy.serve_tcp().map_err(|source| SandboxError::Spawn {
                    program: command.program.clone(),
                    source,
                })?;
                crate::network::proxy_environment(&mut env, port);
                rules = rules.with_connect_port(port);
                Some((port, session))
            }
            _ => None,
        };
        // A proxy that puts credentials in: placeholders and the CA bundle
        // where Landlock keeps the real values out of reach, else why not.
        let mut reason = reason;
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let _bundle = match proxy.as_ref().and_then(|(_, s)| s.credentials()) {
            Some(credentials) => match crate::credentials::for_fallback(
                &credentials,
                &mut env,
                self.view.staging.as_deref(),
                &rules,
                self.paths.is_some(),
            ) {
                Ok(bundle) => {
                    rules = rules.with_read(bundle.path());
                    Some(bundle)
                }
                Err(why) => {
                    reason = format!("{reason}; {why}");
                    None
                }
            },
            None => None,
        };
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        if proxy
            .as_ref()
            .is_some_and(|(_, s)| s.credentials().is_some())
        {
            reason = format!(
                "{reason}; credentials are not offered without the private view on this platform: HTTPS to a bound host fails (the proxy's CA is not trusted) and no placeholder is set"
            );
        }
        // On macOS the command runs under `sandbox-exec` with the Seatbelt
        // profile of this policy (unless the host turned it off).
        // There it also gets a private temporary directory, named in
        // `TMPDIR` and removed (with what the command left there) when
        // this run ends.
        #[cfg(target_os = "macos")]
        let private_tmp = if self.view.enabled {
            let tmp =
                kernel::seatbelt::PrivateTmp::create().map_err(|source| SandboxError::Spawn {
                    program: command.program.clone(),
                    source,
                })?;
            let (key, value) = tmp.env();
            env.retain(|(k, _)| *k != key);
            env.push((key, value));
            Some(tmp)
        } else {
            None
        };
        #[cfg(target_os = "macos")]
        let seatbelt = private_tmp
            .as_ref()
            .map(|tmp| self.seatbelt_profile(&rules, Some(tmp.path())));
        #[cfg(not(target_os = "macos"))]
        let seatbelt: Option<String> = None;
        // On Linux the command starts under the reaper where a helper is
        // known: it keeps only descriptors 0–2 and kills everything the
        // command started, however detached (the helper's file becomes
        // readable and executable for that).
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let reaper = self.reaper();
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        let reaper: Option<PathBuf> = None;
        // The reaper's own domain adds its file and `/proc` (where it finds
        // what the command left), and executing (it starts the command);
        // the command runs in a nested one, of its rules alone (with the
        // execute-only wall where asked).
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        let command_rules = kernel::view::exec::ExecRules::from(&rules);
        if let Some(helper) = &reaper {
            rules = rules
                .with_read(helper)
                .with_read("/proc")
                .with_exec_only_program(false);
        }
        let mut cmd = match (&seatbelt, &reaper) {
            (Some(profile), _) => {
                let mut cmd = tokio::process::Command::new(kernel::seatbelt::SANDBOX_EXEC);
                cmd.arg("-p").arg(profile).arg("--").arg(&command.program);
                cmd.args(command.argv.iter().skip(1));
                cmd
            }
            #[cfg(all(feature = "landlock", target_os = "linux"))]
            (None, Some(helper)) => {
                let spec = kernel::view::exec::ExecSpec {
                    program: command.program.clone(),
                    argv: command.argv.clone(),
                    runner_pid: std::process::id(),
                    rules: command_rules,
                    sources: kernel::view::SOURCES_MARK.to_owned(),
                };
                let spec = serde_json::to_string(&spec).map_err(|e| SandboxError::Spawn {
                    program: command.program.clone(),
                    source: std::io::Error::other(e),
                })?;
                let mut cmd = tokio::process::Command::new(helper);
                cmd.arg(kernel::view::EXEC_ARG).arg(spec);
                cmd
            }
            _ => {
                #[cfg_attr(not(unix), allow(unused_mut))]
                let mut cmd = tokio::process::Command::new(&command.program);
                if let Some(arg0) = command.argv.first() {
                    #[cfg(unix)]
                    cmd.arg0(arg0);
                    #[cfg(not(unix))]
                    let _ = arg0;
                }
                cmd.args(command.argv.iter().skip(1));
                cmd
            }
        };
        cmd.current_dir(&command.cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)));
        prepare(&mut cmd, command.stdin.is_some());
        // A dropped run asks the reaper to end its tree (`ProcessTree`'s
        // drop); a `SIGKILL` of the reaper would leave the detached alive.
        if reaper.is_some() {
            cmd.kill_on_drop(false);
        }
        let started = Instant::now();
        #[cfg(not(windows))]
        let (child, landlock) = kernel::spawn_confined(&mut cmd, &rules).map_err(spawn_error)?;
        // No kernel confinement on Windows (`require_kernel_enforcement`
        // refused above); the Job object holds the tree together.
        #[cfg(windows)]
        let (child, landlock) = (
            ProcessTree::spawn(cmd).map_err(spawn_error)?,
            kernel::would_enforce(&rules),
        );
        #[cfg(not(windows))]
        let child = ProcessTree::new(child, reaper.is_some());
        let ran = supervise(
            child,
            command.stdin.as_deref(),
            command.timeout,
            self.max_output_bytes,
            command.output_counter.as_ref(),
            None,
        )
        .await
        .map_err(spawn_error)?;
        let reason = match &proxy {
            Some((port, _)) => format!("{reason}; {}", proxy_caveat(Some(*port), landlock)),
            None => reason,
        };
        if seatbelt.is_some() {
            let mut result = seatbelt_result(ran, started, command)?;
            (result.connections, result.connections_dropped) =
                crate::network::recorded(proxy.as_ref().map(|(_, s)| s.as_ref()));
            return Ok(result);
        }
        let (enforced, enforced_reason) = match landlock {
            Enforcement::Full => (
                Enforcement::Partial {
                    abi: kernel::kernel_abi(),
                },
                format!("Landlock only: {reason}; {}", self.open_without_view()),
            ),
            Enforcement::Partial { abi } => (
                Enforcement::Partial { abi },
                format!(
                    "Landlock ABI {abi} only: {reason}; {}",
                    self.open_without_view()
                ),
            ),
            Enforcement::None => (
                Enforcement::None,
                format!("no kernel confinement: {reason}"),
            ),
        };
        let enforced_reason =
            kernel::exec_only_reason(Some(enforced_reason), !command.runs_programs, landlock);
        let mut result = ran.to_result(
            started,
            command.program,
            command.argv,
            exit_of(ran.status),
            enforced,
            enforced_reason,
            None,
        );
        (result.connections, result.connections_dropped) =
            crate::network::recorded(proxy.as_ref().map(|(_, s)| s.as_ref()));
        Ok(result)
    }

    /// [`Sandbox::run`] on a private single-threaded runtime, for hosts
    /// without one.
    ///
    /// # Errors
    ///
    /// As [`Sandbox::run`]; [`SandboxError::Config`] when called from
    /// inside a tokio runtime (use `run` there).
    pub fn run_blocking(&self, command: SandboxCommand) -> Result<RunResult, SandboxError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(SandboxError::Config {
                message: "run_blocking was called inside a tokio runtime; await run instead"
                    .to_owned(),
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| SandboxError::Spawn {
                program: command.program.clone(),
                source,
            })?;
        runtime.block_on(self.run(command))
    }

    /// What the kernel is asked to enforce for a run of `program`
    /// ([`KernelRules::from_policy`]): the path policy's roots (read-write
    /// ones writable) plus what running the program needs, or no file
    /// restriction when there is no path policy; network and the `require`
    /// switch as the sandbox says. Pass it to [`kernel::would_enforce`] to
    /// say what a run would get.
    pub fn kernel_rules(&self, program: &Path) -> KernelRules {
        KernelRules::from_policy(
            self.paths.as_ref(),
            program,
            self.allow_network,
            self.require_kernel_enforcement,
        )
    }
}

/// What is open to a command that runs without its private view (said in
/// every such result's `enforced_reason`).
const OPEN_WITHOUT_VIEW: &str = "without the view, blocked entries inside the roots are readable by the program itself and its writes land unjudged; UDP, host UNIX sockets and abstract sockets below Landlock ABI 6 are reachable";

/// What is open besides, where no helper is known to run the command under
/// the reaper.
const OPEN_WITHOUT_REAPER: &str = "; and, with no helper to start it, a process that leaves the command's process group outlives it and the command inherits every descriptor the host left open";

/// Raises this process's soft limit on open files to its hard limit, once:
/// the write-back of a large run needs many, and the usual soft limit (1024)
/// is far below what the system allows.
fn raise_open_files_limit() {
    #[cfg(unix)]
    {
        static RAISED: std::sync::Once = std::sync::Once::new();
        RAISED.call_once(|| {
            use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
            let limit = getrlimit(Resource::Nofile);
            if limit.maximum != limit.current {
                let _ = setrlimit(
                    Resource::Nofile,
                    Rlimit {
                        current: limit.maximum,
                        maximum: limit.maximum,
                    },
                );
            }
        });
    }
}

/// What Landlock alone does for a command whose network is the proxy on
/// `127.0.0.1:port` (`None`: a port not chosen yet), at the level it
/// reached.
fn proxy_caveat(port: Option<u16>, landlock: Enforcement) -> String {
    let abi = match landlock {
        Enforcement::Full => kernel::kernel_abi(),
        Enforcement::Partial { abi } => abi,
        Enforcement::None => 0,
    };
    let (at, that) = match port {
        Some(port) => (format!("127.0.0.1:{port}"), format!("port {port}")),
        None => (
            "a free port of 127.0.0.1".to_owned(),
            "that port".to_owned(),
        ),
    };
    if abi >= 4 {
        format!(
            "the network is the proxy on {at}, held by Landlock alone: TCP connects only to {that}, but to any host on that port, and UDP is not restricted"
        )
    } else if !cfg!(target_os = "linux") {
        format!(
            "the network should be the proxy on {at}, but nothing on this platform holds it there: the command can reach the host's network directly"
        )
    } else {
        format!(
            "the network should be the proxy on {at}, but this kernel's Landlock (ABI {abi}) cannot restrict TCP: the command can reach the host's network directly"
        )
    }
}

impl Sandbox {
    /// What is open when a command runs without its view: more where no
    /// helper is known to start it under the reaper.
    fn open_without_view(&self) -> String {
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        if self.reaper().is_some() {
            return OPEN_WITHOUT_VIEW.to_owned();
        }
        format!("{OPEN_WITHOUT_VIEW}{OPEN_WITHOUT_REAPER}")
    }

    /// The Seatbelt profile a command with `rules` runs under on macOS.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    fn seatbelt_profile(&self, rules: &KernelRules, tmp: Option<&Path>) -> String {
        match self.paths.as_ref() {
            Some(paths) => kernel::seatbelt::profile_with_tmp(
                rules,
                tmp,
                paths.blocked(),
                paths.write_protected(),
            ),
            None => kernel::seatbelt::profile_with_tmp(rules, tmp, [], []),
        }
    }
}

/// The result of a run under `sandbox-exec`: `partial`, saying why; a
/// refusal when `sandbox-exec` rejected the profile (it then ran nothing).
fn seatbelt_result(
    ran: Ran,
    started: Instant,
    command: SandboxCommand,
) -> Result<RunResult, SandboxError> {
    let exit = exit_of(ran.status);
    if let Some(why) = kernel::seatbelt::rejection(exit, &ran.err.text()) {
        return Err(SandboxError::KernelEnforcement {
            message: format!(
                "refused to run: macOS rejected the Seatbelt profile made for this command ({why}); nothing ran. Report it, or turn the profile off for this host (`private_view = false`) to run without it"
            ),
        });
    }
    Ok(ran.to_result(
        started,
        command.program,
        command.argv,
        exit,
        Enforcement::Partial { abi: 0 },
        Some(kernel::seatbelt::PARTIAL_REASON.to_owned()),
        None,
    ))
}

/// Pipes for the output, stdin piped (when given) or closed, killed when
/// dropped, in a new process group on Unix (on Windows the Job object of
/// `ProcessTree::spawn` plays that part).
pub(crate) fn prepare(cmd: &mut tokio::process::Command, stdin: bool) {
    cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
}

/// How a supervised process ended, and what it wrote.
pub(crate) struct Ran {
    pub(crate) status: std::process::ExitStatus,
    pub(crate) out: Capture,
    pub(crate) err: Capture,
    pub(crate) timed_out: bool,
}

impl Ran {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn to_result(
        &self,
        started: Instant,
        program: PathBuf,
        argv: Vec<String>,
        exit: Exit,
        enforced: Enforcement,
        enforced_reason: Option<String>,
        changes: Option<Changes>,
    ) -> RunResult {
        RunResult {
            exit,
            stdout: self.out.text(),
            stderr: self.err.text(),
            truncated: Truncated {
                stdout: self.out.truncated,
                stderr: self.err.truncated,
            },
            timed_out: self.timed_out,
            duration: started.elapsed(),
            program,
            argv,
            enforced,
            enforced_reason,
            changes,
            connections: None,
            connections_dropped: None,
        }
    }
}

/// Supervises `tree`: feeds its input, captures its output, waits for its
/// first process, then kills what that process left running; at `timeout`
/// kills the whole tree. The output's bytes are counted into `counter` as
/// they come.
///
/// With `finished`, the end is known sooner: once the output pipes are at
/// their end, `finished` may say the child's work is done and give its
/// status; the child is then reaped in the background (it may still be
/// tearing down what it made), never left a zombie.
pub(crate) async fn supervise(
    tree: impl Into<ProcessTree>,
    input: Option<&[u8]>,
    timeout: Duration,
    max_output_bytes: u64,
    counter: Option<&OutputCounter>,
    finished: Option<&Finished>,
) -> std::io::Result<Ran> {
    let mut tree = tree.into();
    let mut stdin = tree.take_stdin();
    let input = input.unwrap_or_default();
    let mut stdout = tree.take_stdout();
    let mut stderr = tree.take_stderr();
    let mut out = Capture::new(max_output_bytes, counter);
    let mut err = Capture::new(max_output_bytes, counter);

    let finished = {
        let work = async {
            if let Some(done) = finished {
                // The pipes end when the child's work is done (or it died).
                let ((), (), ()) = tokio::join!(
                    feed(&mut stdin, input),
                    drain(&mut stdout, &mut out),
                    drain(&mut stderr, &mut err)
                );
                if let Some(status) = done() {
                    return (Ok(status), true);
                }
            }
            let waited = async {
                let status = tree.wait_leader().await;
                // Whatever the program left running in its tree goes too,
                // so the pipes close and nothing outlives the command.
                tree.kill();
                tree.disarm();
                status
            };
            let (status, (), (), ()) = tokio::join!(
                waited,
                feed(&mut stdin, input),
                drain(&mut stdout, &mut out),
                drain(&mut stderr, &mut err)
            );
            (status, false)
        };
        tokio::time::timeout(timeout, work).await
    };
    let (status, timed_out) = match finished {
        Ok((status, false)) => (status?, false),
        Ok((status, true)) => {
            // Not reaped yet, so the group id is still ours.
            tree.kill();
            tree.disarm();
            tree.reap_in_background();
            (status?, false)
        }
        Err(_elapsed) => {
            // The leader is not reaped yet, so the group id is still ours.
            let status = tree.stop().await;
            tree.disarm();
            let status = status?;
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, async {
                tokio::join!(drain(&mut stdout, &mut out), drain(&mut stderr, &mut err))
            })
            .await;
            (status, true)
        }
    };
    Ok(Ran {
        status,
        out,
        err,
        timed_out,
    })
}

/// Says, once a child's output pipes are at their end, whether its work is
/// done, and with which status.
pub(crate) type Finished = dyn Fn() -> Option<std::process::ExitStatus> + Send + Sync;

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

pub(crate) fn exit_of(status: std::process::ExitStatus) -> Exit {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return Exit::Signal(signal);
        }
    }
    Exit::Code(status.code().unwrap_or(-1))
}

#[cfg(test)]
mod tests {
    use super::{ViewAvailability, proxy_caveat};
    use crate::Sandbox;
    use crate::kernel::Enforcement;

    #[test]
    fn the_view_is_unavailable_when_turned_off_or_without_a_helper_and_refused_on_a_foreign_staging_dir()
     {
        let off = Sandbox::builder().private_view(false).build();
        #[cfg(not(all(feature = "landlock", target_os = "linux")))]
        assert!(
            matches!(off.view_availability(), ViewAvailability::Unavailable { ref reason } if reason.contains("Linux only")),
            "{:?}",
            off.view_availability()
        );
        #[cfg(all(feature = "landlock", target_os = "linux"))]
        {
            assert_eq!(
                off.view_availability(),
                ViewAvailability::Unavailable {
                    reason: "the host turned the private view off".to_owned()
                }
            );
            // A directory others may enter (here a sticky, world-writable
            // one, as /tmp is) is no private staging directory: runs are
            // refused, never downgraded, and its mode is left as it was.
            use std::os::unix::fs::PermissionsExt;
            let shared = tempfile::tempdir().expect("tempdir");
            std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777))
                .expect("chmod");
            let foreign = Sandbox::builder()
                .view_helper(Some("/bin/true".into()))
                .staging_dir(Some(shared.path().to_path_buf()))
                .build();
            let refused = foreign.view_availability();
            assert!(
                matches!(refused, ViewAvailability::Refused { ref reason } if reason.contains("open to other users")),
                "{refused:?}"
            );
            let mode = std::fs::metadata(shared.path())
                .expect("stat")
                .permissions()
                .mode();
            assert_eq!(mode & 0o7777, 0o1777, "the shared directory was re-moded");
            let not_a_helper = Sandbox::builder()
                .view_helper(Some("/bin/true".into()))
                .build();
            assert!(
                matches!(
                    not_a_helper.view_availability(),
                    ViewAvailability::Unavailable { ref reason } if reason.contains("did not answer its probe")
                ),
                "{:?}",
                not_a_helper.view_availability()
            );
        }
    }

    #[test]
    fn the_proxy_caveat_names_what_holds_the_network_here() {
        let held = proxy_caveat(Some(3128), Enforcement::Partial { abi: 4 });
        assert!(held.contains("held by Landlock alone"), "{held}");
        let open = proxy_caveat(Some(3128), Enforcement::None);
        assert!(
            open.contains("the command can reach the host's network directly"),
            "{open}"
        );
        if cfg!(target_os = "linux") {
            assert!(open.contains("Landlock (ABI 0)"), "{open}");
        } else {
            // No Landlock here to speak of.
            assert!(!open.contains("Landlock"), "{open}");
        }
    }
}
