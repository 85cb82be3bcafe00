//! The view helper: the two stages that run in a process of their own
//! (namespaces are set up by a single-threaded process, and only by the
//! process itself), started by the runner as `HELPER_ARG staging-dir`.
//!
//! 1. **Outer stage**: closes every descriptor but 0–2, creates the user,
//!    mount, PID, IPC (and network) namespaces, maps its user to root inside
//!    them (one id: its own), and starts the inner stage. In the first run
//!    of a process it is also the probe: it tries the mounts a system may
//!    refuse and says what it found before it starts anything.
//! 2. **Inner stage**: PID 1 of the new PID namespace. It builds the view
//!    (the mounts of the spec, on a fresh `tmpfs` root), enters it with
//!    `pivot_root`, restricts itself with Landlock (and `no_new_privs`),
//!    empties its capability sets, starts the command, reaps every process
//!    of the namespace until the command ends, writes the outcome, and
//!    exits — which makes the kernel kill whatever is left in the
//!    namespace, wherever it went (`setsid`, double fork).

use std::ffi::CString;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};

use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

use super::spec::{
    Applied, DONE_FILE, INNER_PID_FILE, Mount, OUTCOME_FILE, Outcome, PROBE_FILE, PROBE_PASSED,
    REPORT_FD_VAR, Report, SPEC_FILE, ViewSpec,
};
use super::{INNER_ARG, PROBE_ARG, PROBE_OK};
use crate::kernel::domain::Domain;
use crate::kernel::enforcement::Enforcement;
use crate::kernel::privileges::drop_all_capabilities;
use crate::kernel::rules::KernelRules;

/// Runs the stage `args` name (`[HELPER_ARG | INNER_ARG, staging-dir]`,
/// or `[PROBE_ARG, scratch-dir]`).
pub(super) fn main(stage: &str, staging: &Path) -> i32 {
    if stage == PROBE_ARG {
        return match probe(staging) {
            Ok(()) => {
                println!("{PROBE_OK}");
                0
            }
            Err(reason) => {
                println!("{reason}");
                1
            }
        };
    }
    if stage == INNER_ARG {
        // The first process reports only through its pipe to the outer
        // stage: it opens no file of the host's for that.
        let Ok(mut report) = Reporter::take() else {
            return 125;
        };
        let outcome = match read_spec(staging) {
            Ok(spec) => inner(&spec, &mut report),
            Err(error) => Outcome::Failed(format!("the view spec: {error}")),
        };
        report.send(&Report::Outcome(outcome));
        return 125;
    }
    let outcome_path = staging.join(OUTCOME_FILE);
    let failed = match read_spec(staging) {
        Ok(spec) => match outer(&spec, staging) {
            Ok(code) => return code,
            Err(outcome) => {
                if let (true, Outcome::Unavailable(reason)) = (spec.run.probe, &outcome) {
                    let _ =
                        std::fs::write(staging.join(PROBE_FILE), format!("unavailable\n{reason}"));
                }
                outcome
            }
        },
        Err(error) => Outcome::Failed(format!("the view spec: {error}")),
    };
    if let Ok(mut line) = serde_json::to_vec(&Report::Outcome(failed)) {
        line.push(b'\n');
        let _ = std::fs::write(&outcome_path, line);
    }
    125
}

fn read_spec(staging: &Path) -> io::Result<ViewSpec> {
    let text = std::fs::read(staging.join(SPEC_FILE))?;
    let spec: ViewSpec = serde_json::from_slice(&text).map_err(io::Error::other)?;
    if spec.run.sources != super::SOURCES_MARK {
        return Err(io::Error::other(format!(
            "this view helper ({}) was built from other sources than the runner that started it; install both from one build",
            super::SOURCES_MARK
        )));
    }
    Ok(spec)
}

/// The first process's end of the report pipe.
struct Reporter(std::fs::File);

impl Reporter {
    /// Takes the pipe the outer stage left open at the descriptor
    /// [`REPORT_FD_VAR`] names: reopened through `/proc/self/fd`
    /// (close-on-exec), and the inherited descriptor closed, so that
    /// nothing the command starts holds it.
    fn take() -> io::Result<Self> {
        let fd: i32 = std::env::var(REPORT_FD_VAR)
            .ok()
            .and_then(|n| n.parse().ok())
            .filter(|fd| *fd > 2)
            .ok_or_else(|| io::Error::other("no report pipe"))?;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{fd}"))?;
        let _ = nix::unistd::close(fd);
        Ok(Self(file))
    }

    fn send(&mut self, report: &Report) {
        if let Ok(mut line) = serde_json::to_vec(report) {
            line.push(b'\n');
            let _ = std::io::Write::write_all(&mut self.0, &line);
        }
    }
}

/// Copies what the first process reports, one message a line, into `file`
/// (the outcome file, opened before the view's root replaced the host's)
/// as it comes, until the first process (and so the view) is gone; at most
/// 1 MiB. Each line is written whole, so a runner that kills this stage on
/// a timeout still finds what was reported; a line that does not parse is
/// dropped.
fn copy_reports(pipe: std::fs::File, mut file: std::fs::File) {
    use std::io::{BufRead, Read, Write};
    let reader = std::io::BufReader::new(pipe.take(1 << 20));
    for line in reader.split(b'\n').map_while(Result::ok) {
        if serde_json::from_slice::<Report>(&line).is_ok() {
            let mut line = line;
            line.push(b'\n');
            let _ = file.write_all(&line);
        }
    }
}

/// Ends this process with its runner: the kernel sends `SIGKILL` when the
/// thread that started it exits; if the runner is gone already, this
/// process exits at once.
fn die_with(runner: u32) -> Result<(), Outcome> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| Outcome::Failed(format!("tying the view to its runner: {e}")))?;
    let parent = rustix::process::getppid().map_or(0, |pid| pid.as_raw_nonzero().get());
    if runner != 0 && u32::try_from(parent).ok() != Some(runner) {
        return Err(Outcome::Failed(
            "the runner was gone before the view started".to_owned(),
        ));
    }
    Ok(())
}

/// Makes this process not dumpable: processes of the same user without
/// `CAP_SYS_PTRACE` (the command has no capability) cannot trace it, read
/// its memory or take its descriptors (`pidfd_getfd`).
fn not_dumpable() -> Result<(), Outcome> {
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        .map_err(|e| Outcome::Failed(format!("making the view's process not dumpable: {e}")))
}

/// The outer stage: namespaces, id maps, then the inner stage, whose exit
/// (and so the end of every process of the namespace) it waits for, and
/// whose report it writes into the staging directory.
fn outer(spec: &ViewSpec, staging: &Path) -> Result<i32, Outcome> {
    die_with(spec.run.runner_pid)?;
    if let Some(cgroup) = &spec.run.pids_cgroup {
        join_pids_cgroup(cgroup)
            .map_err(|e| Outcome::Failed(format!("joining the view's pids cgroup: {e}")))?;
    }
    close_inherited_descriptors();
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let mut flags = nix::sched::CloneFlags::CLONE_NEWUSER
        | nix::sched::CloneFlags::CLONE_NEWNS
        | nix::sched::CloneFlags::CLONE_NEWPID
        | nix::sched::CloneFlags::CLONE_NEWIPC;
    if spec.private_network {
        flags |= nix::sched::CloneFlags::CLONE_NEWNET;
    }
    nix::sched::unshare(flags).map_err(|errno| {
        Outcome::Unavailable(format!(
            "user namespaces are not available here (unshare: {})",
            errno.desc()
        ))
    })?;
    let maps = std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("0 {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("0 {gid} 1")));
    maps.map_err(|error| {
        Outcome::Unavailable(format!(
            "the user namespace's id maps cannot be written here ({error})"
        ))
    })?;
    if spec.run.probe {
        // This run is the first of its process: what a system may refuse
        // is tried before anything of the command exists, and said in the
        // probe file (the runner falls back only on what it says here).
        probe_mounts(&staging.join("probe-mounts")).map_err(Outcome::Unavailable)?;
        std::fs::write(staging.join(PROBE_FILE), PROBE_PASSED)
            .map_err(|e| Outcome::Failed(format!("the probe file: {e}")))?;
    }
    not_dumpable()?;
    let exe = std::env::current_exe()
        .map_err(|error| Outcome::Failed(format!("the helper's own path: {error}")))?;
    // Opened now: once the inner stage pivots (in this same mount
    // namespace) the staging directory is out of this process's sight too.
    // Empty until the view is over.
    let done = std::fs::File::create(staging.join(DONE_FILE))
        .map_err(|error| Outcome::Failed(format!("the done file: {error}")))?;
    let pid_file = std::fs::File::create(staging.join(INNER_PID_FILE))
        .map_err(|error| Outcome::Failed(format!("the pid file: {error}")))?;
    let outcome_file = std::fs::File::create(staging.join(OUTCOME_FILE))
        .map_err(|error| Outcome::Failed(format!("the outcome file: {error}")))?;
    // The report pipe: its write end (inherited, not close-on-exec) goes to
    // the first process alone; this stage keeps the read end.
    let (read_end, write_end) = nix::unistd::pipe()
        .map_err(|errno| Outcome::Failed(format!("the report pipe: {}", errno.desc())))?;
    rustix::io::fcntl_setfd(&read_end, rustix::io::FdFlags::CLOEXEC)
        .map_err(|e| Outcome::Failed(format!("the report pipe: {e}")))?;
    let write_fd = std::os::fd::AsRawFd::as_raw_fd(&write_end);
    let spawned = std::process::Command::new(exe)
        .arg(INNER_ARG)
        .arg(staging)
        .env(REPORT_FD_VAR, write_fd.to_string())
        .spawn();
    drop(write_end);
    let mut inner = spawned
        .map_err(|error| Outcome::Failed(format!("starting the view's first process: {error}")))?;
    // The runner waits for the inner stage to be gone after a timeout.
    let _ = std::io::Write::write_all(&mut &pid_file, inner.id().to_string().as_bytes());
    drop(pid_file);
    copy_reports(std::fs::File::from(read_end), outcome_file);
    let status = inner
        .wait()
        .map_err(|error| Outcome::Failed(format!("waiting for the view: {error}")))?;
    // The first process of the namespace has been reaped, so every process
    // of the view is dead: nothing can write to the staging layers now.
    // Only then does the runner learn it is finished (this file, then the
    // end of the output pipes), so it can judge the writes without waiting
    // for the kernel to tear the namespaces down as this process exits.
    let code = status.code().unwrap_or(125);
    let _ = std::io::Write::write_all(&mut &done, code.to_string().as_bytes());
    drop(done);
    for fd in 0..=2 {
        let _ = nix::unistd::close(fd);
    }
    Ok(code)
}

/// Moves this process into the `pids` cgroup `dir`, before it starts
/// any other: every process of the view descends from it, so all are
/// counted there.
///
/// Moving a whole process (`cgroup.procs`) waits for the kernel's
/// process-group lock, which costs milliseconds; moving the calling thread
/// (`0` written to a v1 hierarchy's `tasks`) does not take it. The two are
/// the same for a process of one thread, which this one is until it starts
/// the view (checked: otherwise the whole process is moved).
fn join_pids_cgroup(dir: &Path) -> io::Result<()> {
    let tasks = dir.join("tasks");
    let one_thread = std::fs::read_dir("/proc/self/task").map(Iterator::count)? == 1;
    if one_thread && tasks.exists() {
        return std::fs::write(tasks, "0");
    }
    std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string())
}

/// The probe: the namespaces a view needs, its id maps, private mounts,
/// and an overlay (user extended attributes) over directories of `dir`
/// (the staging base's file system) — the steps a run takes that a
/// system can refuse. Nothing of it outlives this process.
fn probe(dir: &Path) -> Result<(), String> {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    nix::sched::unshare(
        nix::sched::CloneFlags::CLONE_NEWUSER
            | nix::sched::CloneFlags::CLONE_NEWNS
            | nix::sched::CloneFlags::CLONE_NEWPID
            | nix::sched::CloneFlags::CLONE_NEWIPC
            | nix::sched::CloneFlags::CLONE_NEWNET,
    )
    .map_err(|errno| {
        format!(
            "user namespaces are not available here (unshare: {})",
            errno.desc()
        )
    })?;
    std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("0 {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("0 {gid} 1")))
        .map_err(|e| format!("the user namespace's id maps cannot be written here ({e})"))?;
    probe_mounts(dir)
}

/// The probe's mounts, in the mount namespace of a user namespace made
/// already: mounts made private, and an overlay (user extended attributes)
/// over directories made in `dir`, unmounted again.
fn probe_mounts(dir: &Path) -> Result<(), String> {
    let [lower, upper, work, merged] =
        ["lower", "upper", "work", "merged"].map(|name| dir.join(name));
    for d in [&lower, &upper, &work, &merged] {
        mkdir_p(d).map_err(|e| format!("the probe's directory {}: {e}", d.display()))?;
    }
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| format!("mounts cannot be made private here ({e})"))?;
    let data = format!(
        "lowerdir={},upperdir={},workdir={},userxattr",
        option_path(&lower).map_err(|e| e.to_string())?,
        option_path(&upper).map_err(|e| e.to_string())?,
        option_path(&work).map_err(|e| e.to_string())?
    );
    let data = CString::new(data).map_err(|e| e.to_string())?;
    rustix::mount::mount(
        "overlay",
        &merged,
        "overlay",
        MountFlags::NOSUID | MountFlags::NODEV,
        data.as_c_str(),
    )
    .map_err(|e| {
        format!(
            "an unprivileged overlay cannot be mounted here over {} ({e})",
            dir.display()
        )
    })?;
    let _ = rustix::mount::unmount(&merged, UnmountFlags::DETACH);
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec by closing it: the
/// helper needs none, and the command must not inherit the host's.
pub(super) fn close_inherited_descriptors() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // The directory's own descriptor is among them, closed already.
        let _ = nix::unistd::close(fd);
    }
}

/// The inner stage, PID 1 of the view: not dumpable, holding no file of
/// the host's, reporting only through its pipe.
fn inner(spec: &ViewSpec, report: &mut Reporter) -> Outcome {
    // If the outer stage is killed, so is this process, and with it the
    // namespace. (The runner kills the helper's whole process group, this
    // process included, so the moments before this line are covered too.)
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if let Err(outcome) = not_dumpable() {
        return outcome;
    }
    let entered = if spec.host_files {
        enter_host_files(spec).map(|()| false)
    } else {
        enter_view(spec)
    };
    match entered {
        Ok(names) => run_command(spec, report, names),
        Err(error) => Outcome::Failed(error),
    }
}

/// For a command without a path policy: the host's files, in the new
/// namespaces (private mounts, the view's own `/proc`, its loopback).
fn enter_host_files(spec: &ViewSpec) -> Result<(), String> {
    let step = |what: &str, error: io::Error| format!("{what}: {error}");
    private_mounts_and_network(spec)?;
    rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| step("the view's own /proc", e.into()))?;
    std::env::set_current_dir(&spec.cwd)
        .map_err(|e| step(&format!("the working directory {}", spec.cwd.display()), e))?;
    Ok(())
}

/// What every view starts with: its mounts made private, its loopback up
/// (a private network), and the proxy's port handed over.
fn private_mounts_and_network(spec: &ViewSpec) -> Result<(), String> {
    let step = |what: &str, error: io::Error| format!("{what}: {error}");
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| step("making mounts private", e.into()))?;
    if spec.private_network {
        loopback_up().map_err(|e| step("bringing up the private loopback", e))?;
    }
    hand_over_proxy_port(spec)?;
    Ok(())
}

/// The network proxy's port, when the command's network is the proxy:
/// listened on in the view's network, the listener handed to the proxy
/// (whose socket is reached on the host, before the pivot).
fn hand_over_proxy_port(spec: &ViewSpec) -> Result<(), String> {
    match &spec.proxy {
        Some(proxy) => super::proxy_port::hand_over(proxy.port, &proxy.socket).map_err(|e| {
            format!(
                "handing the view's port {} to the network proxy: {e}",
                proxy.port
            )
        }),
        None => Ok(()),
    }
}

/// Builds the view and enters it; the second wall goes up after. Says
/// whether the names layer is beneath the roots' masks.
fn enter_view(spec: &ViewSpec) -> Result<bool, String> {
    let step = |what: &str, error: io::Error| format!("{what}: {error}");
    private_mounts_and_network(spec)?;
    // Where FUSE cannot be had, the overlays go without the layer, and the
    // runner says what that leaves open.
    let names = spec
        .names
        .as_ref()
        .filter(|names| mount_names(names).is_ok())
        .map(|names| names.mount_point.as_path());
    let root = &spec.new_root;
    rustix::mount::mount(
        "tmpfs",
        root,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        c"mode=0755",
    )
    .map_err(|e| step("the view's root", e.into()))?;
    for mount in &spec.mounts {
        apply(root, mount, spec.run.tmpfs_bytes, names)
            .map_err(|e| format!("{}: {e}", describe(mount)))?;
    }
    // The root itself becomes read-only: nothing but the mounts is writable.
    rustix::mount::mount_remount(
        root,
        MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV,
        "",
    )
    .map_err(|e| step("the view's root read-only", e.into()))?;
    std::env::set_current_dir(root).map_err(|e| step("entering the view", e))?;
    rustix::process::pivot_root(".", ".").map_err(|e| step("pivot_root", e.into()))?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)
        .map_err(|e| step("leaving the host's root", e.into()))?;
    std::env::set_current_dir("/").map_err(|e| step("the view's root", e))?;
    std::env::set_current_dir(&spec.cwd)
        .map_err(|e| step(&format!("the working directory {}", spec.cwd.display()), e))?;
    Ok(names.is_some())
}

/// Opens `/dev/fuse` (in the view's user namespace, as the kernel asks of
/// a FUSE mount there), mounts the names layer read-only, and hands the
/// descriptor to the runner, which serves it; this process keeps no copy.
/// On failure nothing stays mounted.
fn mount_names(names: &super::spec::NamesMount) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let fuse = rustix::fs::open("/dev/fuse", OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())?;
    let data = CString::new(super::names::mount_options(
        std::os::fd::AsRawFd::as_raw_fd(&fuse),
    ))
    .map_err(io::Error::other)?;
    rustix::mount::mount(
        "agentcaps-names",
        &names.mount_point,
        "fuse",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC | MountFlags::RDONLY,
        data.as_c_str(),
    )?;
    if let Err(error) = super::names::hand_over(&fuse, &names.socket) {
        drop(fuse);
        let _ = rustix::mount::unmount(&names.mount_point, UnmountFlags::DETACH);
        return Err(error);
    }
    Ok(())
}

/// Brings up `lo` (interface 1) of the new network namespace, so that the
/// command's own servers on 127.0.0.1 work: one `RTM_NEWLINK` request over
/// route netlink, and its acknowledgement.
fn loopback_up() -> io::Result<()> {
    use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 1 | 4;
    const NLMSG_ERROR: u16 = 2;
    const IFF_UP: u32 = 1;
    const LOOPBACK_INDEX: i32 = 1;
    let socket = rustix::net::socket_with(
        AddressFamily::NETLINK,
        SocketType::RAW,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let mut message = Vec::with_capacity(32);
    message.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes()); // seq
    message.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel
    message.extend_from_slice(&[0, 0]); // ifi_family, padding
    message.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
    message.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
    rustix::net::send(&socket, &message, SendFlags::empty())?;
    let mut answer = [0u8; 256];
    let (len, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())?;
    let field = |at: usize, size: usize| answer.get(at..at + size).filter(|_| at + size <= len);
    let kind = field(4, 2).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    let error = field(16, 4).map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    match (kind, error) {
        (Some(NLMSG_ERROR), Some(0)) => Ok(()),
        (Some(NLMSG_ERROR), Some(code)) => Err(io::Error::from_raw_os_error(-code)),
        _ => Err(io::Error::other("an unexpected answer from route netlink")),
    }
}

fn describe(mount: &Mount) -> String {
    match mount {
        Mount::Bind { target, .. } => format!("binding {}", target.display()),
        Mount::Tmpfs { target, .. } => format!("a tmpfs at {}", target.display()),
        Mount::Symlink { target, .. } => format!("the link {}", target.display()),
        Mount::Devpts { target } => format!("devpts at {}", target.display()),
        Mount::Proc { target } => format!("proc at {}", target.display()),
        Mount::Overlay { target, .. } => format!("the overlay of {}", target.display()),
    }
}

/// `target` beneath the new root.
fn under(root: &Path, target: &Path) -> PathBuf {
    root.join(target.strip_prefix("/").unwrap_or(target))
}

fn mkdir_p(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(path)
}

/// A mount point for `source`'s kind at `at`: a directory, or an empty file.
fn mount_point(at: &Path, directory: bool) -> io::Result<()> {
    if directory {
        return mkdir_p(at);
    }
    if let Some(parent) = at.parent() {
        mkdir_p(parent)?;
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(at)
    {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

fn apply(root: &Path, mount: &Mount, tmpfs_bytes: u64, names: Option<&Path>) -> io::Result<()> {
    match mount {
        Mount::Bind {
            source,
            target,
            writable,
        } => {
            let at = under(root, target);
            mount_point(&at, std::fs::metadata(source)?.is_dir())?;
            rustix::mount::mount_bind(source, &at)?;
            if !writable {
                read_only(&at)?;
            }
            Ok(())
        }
        Mount::Tmpfs { target, mode } => {
            let at = under(root, target);
            mkdir_p(&at)?;
            // `/dev` only holds mount points; every other tmpfs of the view
            // takes writes, each bounded.
            let size = if target == Path::new("/dev") {
                ",size=1m".to_owned()
            } else if tmpfs_bytes > 0 {
                format!(",size={tmpfs_bytes}")
            } else {
                String::new()
            };
            let data = CString::new(format!("mode={mode:o}{size}")).map_err(io::Error::other)?;
            rustix::mount::mount(
                "tmpfs",
                &at,
                "tmpfs",
                MountFlags::NOSUID | MountFlags::NODEV,
                data.as_c_str(),
            )?;
            Ok(())
        }
        Mount::Symlink { target, points_to } => {
            let at = under(root, target);
            if let Some(parent) = at.parent() {
                mkdir_p(parent)?;
            }
            std::os::unix::fs::symlink(points_to, at)
        }
        Mount::Devpts { target } => {
            let at = under(root, target);
            mkdir_p(&at)?;
            rustix::mount::mount(
                "devpts",
                &at,
                "devpts",
                MountFlags::NOSUID | MountFlags::NOEXEC,
                c"newinstance,ptmxmode=0666,mode=0620",
            )?;
            let ptmx = at.parent().map(|dev| dev.join("ptmx"));
            if let Some(ptmx) = ptmx {
                std::os::unix::fs::symlink("pts/ptmx", ptmx)?;
            }
            Ok(())
        }
        Mount::Proc { target } => {
            let at = under(root, target);
            mkdir_p(&at)?;
            rustix::mount::mount(
                "proc",
                &at,
                "proc",
                MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
                None,
            )?;
            Ok(())
        }
        Mount::Overlay {
            target,
            masks,
            upper,
            names: names_index,
        } => {
            let at = under(root, target);
            mkdir_p(&at)?;
            match (masks, upper) {
                (None, None) => {
                    rustix::mount::mount_bind(target, &at)?;
                    read_only(&at)
                }
                (masks, upper) => {
                    let mut lower = String::new();
                    if let Some(masks) = masks {
                        lower.push_str(&option_path(masks)?);
                        lower.push(':');
                    }
                    if let (Some(names), Some(index)) = (names, names_index) {
                        lower.push_str(&option_path(&names.join(index.to_string()))?);
                        lower.push(':');
                    }
                    lower.push_str(&option_path(target)?);
                    let mut data = format!("lowerdir={lower},userxattr");
                    if let Some((upper, work)) = upper {
                        data.push_str(&format!(
                            ",upperdir={},workdir={}",
                            option_path(upper)?,
                            option_path(work)?
                        ));
                    }
                    let data = CString::new(data).map_err(io::Error::other)?;
                    let flags = if upper.is_some() {
                        MountFlags::NOSUID | MountFlags::NODEV
                    } else {
                        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::RDONLY
                    };
                    rustix::mount::mount("overlay", &at, "overlay", flags, data.as_c_str())?;
                    Ok(())
                }
            }
        }
    }
}

/// A path as an overlay option: the characters the option syntax gives a
/// meaning to are refused (the planner never gives such paths).
fn option_path(path: &Path) -> io::Result<String> {
    let text = path
        .to_str()
        .ok_or_else(|| io::Error::other("a path that is not UTF-8"))?;
    if text.contains([',', ':', '\\', '=', '\n']) {
        return Err(io::Error::other(format!(
            "{text} holds a character overlay options cannot carry"
        )));
    }
    Ok(text.to_owned())
}

/// Remounts the bind mount at `at` read-only and without devices, keeping
/// the flags its source mount has (a user namespace may not clear them).
fn read_only(at: &Path) -> io::Result<()> {
    use rustix::fs::StatVfsMountFlags as St;
    let current = rustix::fs::statvfs(at)?.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV;
    for (st, ms) in [
        (St::NOEXEC, MountFlags::NOEXEC),
        (St::NOATIME, MountFlags::NOATIME),
        (St::NODIRATIME, MountFlags::NODIRATIME),
        (St::RELATIME, MountFlags::RELATIME),
    ] {
        if current.contains(st) {
            flags |= ms;
        }
    }
    rustix::mount::mount_remount(at, flags, "")?;
    Ok(())
}

/// Landlock, `no_new_privs`, no capabilities; then the command, started
/// from a thread restricted once more (a domain nested inside this
/// process's, so the command can neither trace nor signal it; for a
/// program that runs nothing by itself, with the execute-only wall too),
/// and the reaping of every process until it ends.
fn run_command(spec: &ViewSpec, report: &mut Reporter, names: bool) -> Outcome {
    let mut rules = KernelRules::new()
        .with_program(&spec.program)
        .with_network(true);
    rules.read.clone_from(&spec.landlock_read);
    rules.write.clone_from(&spec.landlock_write);
    rules.restrict_files = !spec.host_files;
    rules.max_abi = spec.max_abi;
    let level = crate::kernel::planned_level(&rules);
    let key = if spec.run.skip_landlock {
        None
    } else {
        Domain::key(&rules, level)
    };
    let mut applied = Applied {
        landlock_abi: 0,
        landlock_full: false,
        nested: false,
        exec_only: false,
        names,
    };
    // The command's own domain: the same again, nested, and with the
    // execute-only wall for a program that runs nothing by itself.
    let nested_key = key.as_ref().and_then(|_| {
        let rules = rules
            .clone()
            .with_exec_only_program(spec.run.exec_only_program);
        Domain::key(&rules, level)
    });
    if let Some(key) = &key {
        match Domain::build(key).and_then(Domain::restrict_current_thread) {
            Ok(enforced) => {
                applied.landlock_abi = level;
                applied.landlock_full =
                    enforced.is_full() || enforced == Enforcement::for_abi(level);
            }
            Err(error) => return Outcome::Failed(format!("Landlock inside the view: {error}")),
        }
    }
    if let Err(error) = rustix::thread::set_no_new_privs(true) {
        return Outcome::Failed(format!("no_new_privs: {error}"));
    }
    if let Err(error) = drop_all_capabilities() {
        return Outcome::Failed(format!("dropping capabilities: {error}"));
    }
    if spec.run.max_file_bytes > 0 {
        // No one file may outgrow what a run may stage at all.
        let limit = rustix::process::Rlimit {
            current: Some(spec.run.max_file_bytes),
            maximum: Some(spec.run.max_file_bytes),
        };
        if let Err(error) = rustix::process::setrlimit(rustix::process::Resource::Fsize, limit) {
            return Outcome::Failed(format!("the file size limit: {error}"));
        }
    }
    if spec.run.max_processes > 0 {
        let limit = rustix::process::Rlimit {
            current: Some(spec.run.max_processes),
            maximum: Some(spec.run.max_processes),
        };
        if let Err(error) = rustix::process::setrlimit(rustix::process::Resource::Nproc, limit) {
            return Outcome::Failed(format!("the process limit: {error}"));
        }
    }
    let mut command = std::process::Command::new(&spec.program);
    if let Some(arg0) = spec.argv.first() {
        command.arg0(arg0);
    }
    command
        .args(spec.argv.iter().skip(1))
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    // Credentials (the Landlock domain among them) belong to a thread, and
    // a process inherits those of the thread that starts it.
    let started = std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<(std::process::Child, bool, bool), Outcome> {
                let (nested, exec_only) = match &nested_key {
                    Some(key) => {
                        let domain = Domain::build(key).map_err(|e| {
                            Outcome::Failed(format!("the nested Landlock domain: {e}"))
                        })?;
                        let exec_only = domain.is_exec_only();
                        let enforced = domain.restrict_current_thread().map_err(|e| {
                            Outcome::Failed(format!("the nested Landlock domain: {e}"))
                        })?;
                        let nested = enforced == Enforcement::for_abi(level) || enforced.is_full();
                        (nested, exec_only)
                    }
                    None => (false, false),
                };
                command
                    .spawn()
                    .map(|child| (child, nested, exec_only))
                    .map_err(|error| {
                        Outcome::SpawnFailed(format!("{:?}", error.kind()), error.to_string())
                    })
            })
            .join()
    });
    let (child, nested, exec_only) = match started {
        Ok(Ok(started)) => started,
        Ok(Err(outcome)) => return outcome,
        Err(_) => return Outcome::Failed("the thread starting the command panicked".to_owned()),
    };
    applied.nested = nested;
    applied.exec_only = exec_only;
    report.send(&Report::Applied(applied));
    let main = i32::try_from(child.id()).unwrap_or(0);
    // Reap whatever ends, orphans included, until the command itself does.
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == main => {
                let status = std::process::ExitStatus::from_raw(status.as_raw());
                return match status.signal() {
                    Some(signal) => Outcome::Signaled(signal),
                    None => Outcome::Exited(status.code().unwrap_or(-1)),
                };
            }
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Outcome::Failed(format!("waiting for the command: {error}")),
        }
    }
}
