//! The reaper: how a command runs where no private view can be built.
//!
//! Without namespaces nothing holds a command's processes together but
//! their process group, which one `setsid` leaves, and nothing stops a
//! command from inheriting whatever descriptor its host left open. So the
//! runner starts the helper as `EXEC_ARG spec`, in a Landlock domain of
//! the command's rules plus reading `/proc`, and this stage:
//!
//! 1. closes every descriptor but 0–2 (the command gets only its own
//!    standard streams);
//! 2. makes itself not dumpable, and starts the command from a thread
//!    restricted once more to the command's own rules: the command, in that
//!    nested domain, can neither trace nor signal the reaper, nor read
//!    `/proc`;
//! 3. becomes a *child subreaper*: everything the command starts, however
//!    it detaches (`setsid`, double fork), is re-parented to this process
//!    when its parent dies, never to init;
//! 4. reaps what ends, and once the command's first process has ended — or
//!    the runner asks with `SIGTERM` (a timeout, a cancelled call), or the
//!    runner is gone — kills every process left beneath it (found through
//!    `/proc`), waits until none is, and exits with the command's status.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use std::os::fd::AsFd;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::kernel::domain::Domain;
use crate::kernel::enforcement::Enforcement;
use crate::kernel::rules::KernelRules;

/// What the reaper runs: the resolved program, its `argv` (with `argv[0]`),
/// the command's own Landlock rules, and the runner's pid (the reaper ends
/// with it).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ExecSpec {
    /// The resolved program.
    pub(crate) program: PathBuf,
    /// Its arguments, `argv[0]` first.
    pub(crate) argv: Vec<String>,
    /// The runner's pid: the reaper stops when its parent is not it.
    pub(crate) runner_pid: u32,
    /// The command's rules, for its nested domain.
    pub(crate) rules: ExecRules,
    /// The runner's [`SOURCES_MARK`](super::SOURCES_MARK): a reaper built
    /// from other sources refuses the spec.
    #[serde(default)]
    pub(crate) sources: String,
}

/// [`KernelRules`] as the reaper needs them.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ExecRules {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    program: Option<PathBuf>,
    restrict_files: bool,
    allow_network: bool,
    connect_ports: Vec<u16>,
    max_abi: Option<u8>,
    exec_only_program: bool,
}

impl From<&KernelRules> for ExecRules {
    fn from(rules: &KernelRules) -> Self {
        Self {
            read: rules.read.clone(),
            write: rules.write.clone(),
            program: rules.program.clone(),
            restrict_files: rules.restrict_files,
            allow_network: rules.allow_network,
            connect_ports: rules.connect_ports.clone(),
            max_abi: rules.max_abi,
            exec_only_program: rules.exec_only_program,
        }
    }
}

impl ExecRules {
    fn to_rules(&self) -> KernelRules {
        let mut rules = KernelRules::new();
        rules.read.clone_from(&self.read);
        rules.write.clone_from(&self.write);
        rules.program.clone_from(&self.program);
        rules.restrict_files = self.restrict_files;
        rules.allow_network = self.allow_network;
        rules.connect_ports.clone_from(&self.connect_ports);
        rules.max_abi = self.max_abi;
        rules.exec_only_program = self.exec_only_program;
        rules
    }
}

/// How often the reaper looks whether its runner is still there.
const RUNNER_CHECK: u16 = 200;

/// The exit code when the reaper itself could not start the command (the
/// runner reports the message it wrote to stderr).
const CANNOT_START: i32 = 126;

/// Runs the reaper for the spec `spec` (JSON, as [`ExecSpec`]); returns
/// the exit code to end with.
pub(super) fn main(spec: &str) -> i32 {
    if spec == super::EXEC_PROBE {
        println!("{}", super::EXEC_PROBE_OK);
        return 0;
    }
    super::helper::close_inherited_descriptors();
    let spec: ExecSpec = match serde_json::from_str(spec) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("agentcaps: the command's start-up spec is unreadable ({error})");
            return CANNOT_START;
        }
    };
    if spec.sources != super::SOURCES_MARK {
        eprintln!(
            "agentcaps: this view helper ({}) was built from other sources than the runner that started it; install both from one build",
            super::SOURCES_MARK
        );
        return CANNOT_START;
    }
    match start(&spec) {
        Ok(code) => code,
        Err(error) => {
            eprintln!(
                "agentcaps: {} could not be started ({error})",
                spec.program.display()
            );
            kill_all_beneath();
            CANNOT_START
        }
    }
}

fn start(spec: &ExecSpec) -> io::Result<i32> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)?;
    rustix::process::set_child_subreaper(rustix::process::Pid::from_raw(
        rustix::process::getpid().as_raw_nonzero().get(),
    ))?;
    // A timeout and a cancelled call arrive as SIGTERM; it and SIGCHLD are
    // read from a descriptor, never handled. (The runner's death is seen
    // by looking: a parent-death signal would follow the thread that
    // started this process, not the runner.)
    let mut signals = SigSet::empty();
    for signal in [
        Signal::SIGTERM,
        Signal::SIGCHLD,
        Signal::SIGHUP,
        Signal::SIGINT,
    ] {
        signals.add(signal);
    }
    signals.thread_block().map_err(io::Error::from)?;
    if !runner_is_there(spec.runner_pid) {
        return Err(io::Error::other(
            "the runner was gone before the command started",
        ));
    }
    let events = SignalFd::with_flags(&signals, SfdFlags::SFD_CLOEXEC).map_err(io::Error::from)?;
    let (program, argv) = (&spec.program, &spec.argv);
    let mut command = std::process::Command::new(program);
    if let Some(arg0) = argv.first() {
        command.arg0(arg0);
    }
    // The environment, working directory and standard streams are the
    // reaper's own, which the runner set for the command; the child's
    // signal mask is reset by `Command`.
    command.args(argv.iter().skip(1));
    let child = spawn_nested(&mut command, &spec.rules.to_rules())?;
    let leader = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);
    drop(child);
    let status = loop {
        let mut ready = [PollFd::new(events.as_fd(), PollFlags::POLLIN)];
        match poll(&mut ready, PollTimeout::from(RUNNER_CHECK)) {
            Ok(0) => {
                if !runner_is_there(spec.runner_pid) {
                    kill_all_beneath();
                    return Ok(128 + Signal::SIGKILL as i32);
                }
                continue;
            }
            // Only a ready descriptor is read: a blocking read would stop
            // the look for the runner.
            Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(error) => {
                kill_all_beneath();
                return Err(error.into());
            }
        }
        match events.read_signal() {
            Ok(Some(info)) if info.ssi_signo == Signal::SIGCHLD as u32 => {
                if let Some(status) = reap_ready(leader) {
                    break status;
                }
            }
            Ok(Some(_stop)) => {
                // A timeout or a cancelled call (SIGTERM), or a hang-up or
                // interrupt meant for the command's tree.
                kill_all_beneath();
                return Ok(128 + Signal::SIGKILL as i32);
            }
            Ok(None) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(error) => {
                kill_all_beneath();
                return Err(error.into());
            }
        }
    };
    kill_all_beneath();
    Ok(exit_code(status))
}

/// Whether this process's parent is still the runner.
fn runner_is_there(runner: u32) -> bool {
    let parent = rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get());
    runner == 0 || u32::try_from(parent).ok() == Some(runner)
}

/// Starts `command` from a thread restricted to `rules` (a Landlock domain
/// nested in the reaper's), so the command and everything it starts stay
/// in it. Where that domain cannot be made, nothing starts.
fn spawn_nested(
    command: &mut std::process::Command,
    rules: &KernelRules,
) -> io::Result<std::process::Child> {
    let level = crate::kernel::planned_level(rules);
    let key = Domain::key(rules, level);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if let Some(key) = &key {
                    let enforced = Domain::build(key).and_then(Domain::restrict_current_thread)?;
                    if !(enforced.is_full() || enforced == Enforcement::for_abi(level)) {
                        return Err(io::Error::other(format!(
                            "the kernel enforced {enforced} of the command's Landlock rules, where ABI {level} was planned"
                        )));
                    }
                }
                command.spawn()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the thread starting the command panicked")))
    })
}

/// Reaps every child that has ended; the leader's status once it has.
fn reap_ready(leader: Pid) -> Option<WaitStatus> {
    let mut ended = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return ended,
            Ok(status) => {
                if status.pid() == Some(leader)
                    && matches!(status, WaitStatus::Exited(..) | WaitStatus::Signaled(..))
                {
                    ended = Some(status);
                }
            }
        }
    }
}

/// Kills every process beneath this one, however detached, and reaps them
/// all: killing a child re-parents its children here (the subreaper), so
/// this repeats until the reaper has no child left.
fn kill_all_beneath() {
    loop {
        let children = children();
        for child in &children {
            let _ = nix::sys::signal::kill(*child, Signal::SIGKILL);
        }
        // Reap what ended; when nothing has yet, give the killed a moment
        // and look again (one may have been re-parented here meanwhile).
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Err(nix::errno::Errno::ECHILD) => return,
            Ok(WaitStatus::StillAlive) => std::thread::sleep(std::time::Duration::from_millis(1)),
            Ok(_) | Err(_) => {}
        }
    }
}

/// This process's children, from `/proc` (`/proc/PID/stat`'s parent
/// field), since the re-parented ones are nowhere else to be found.
fn children() -> Vec<Pid> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid …`: the name may hold spaces and
            // parentheses, so read after the last `)`.
            let rest = &stat[stat.rfind(')')? + 1..];
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == me).then(|| Pid::from_raw(pid))
        })
        .collect()
}

/// The code the reaper exits with for the command's status: its exit code,
/// or `128 + N` for signal `N`, re-raised first so the runner sees the
/// signal itself where it can (a core dump is not written for it).
fn exit_code(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => {
            let core = rustix::process::getrlimit(rustix::process::Resource::Core);
            let _ = rustix::process::setrlimit(
                rustix::process::Resource::Core,
                rustix::process::Rlimit {
                    current: Some(0),
                    maximum: core.maximum,
                },
            );
            let mut set = SigSet::empty();
            set.add(signal);
            let _ = set.thread_unblock();
            let _ = nix::sys::signal::raise(signal);
            128 + signal as i32
        }
        _ => CANNOT_START,
    }
}
