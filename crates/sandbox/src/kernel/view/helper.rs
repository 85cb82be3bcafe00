//! The view helper: the two stages that run in a process of their own
//! (namespaces are set up by a single-threaded process, and only by the
//! process itself), started by the runner as `HELPER_ARG staging-dir`.
//!
//! 1. **Outer stage**: closes every descriptor but 0–2, creates the user,
//!    mount, PID, IPC (and network) namespaces, maps its user to root inside
//!    them (one id: its own), and starts the inner stage.
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

use super::spec::{DONE_FILE, INNER_PID_FILE, Mount, OUTCOME_FILE, Outcome, SPEC_FILE, ViewSpec};
use super::{INNER_ARG, PROBE_ARG, PROBE_OK};
use crate::kernel::domain::Domain;
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
    let outcome_path = staging.join(OUTCOME_FILE);
    let spec = match read_spec(staging) {
        Ok(spec) => spec,
        Err(error) => {
            write_outcome(
                &outcome_path,
                &Outcome::Failed(format!("the view spec: {error}")),
            );
            return 125;
        }
    };
    let outcome = if stage == INNER_ARG {
        inner(&spec, &outcome_path)
    } else {
        match outer(&spec, staging) {
            Ok(code) => return code,
            Err(outcome) => outcome,
        }
    };
    write_outcome(&outcome_path, &outcome);
    125
}

fn read_spec(staging: &Path) -> io::Result<ViewSpec> {
    let text = std::fs::read(staging.join(SPEC_FILE))?;
    serde_json::from_slice(&text).map_err(io::Error::other)
}

fn write_outcome(path: &Path, outcome: &Outcome) {
    if let Ok(text) = serde_json::to_vec(outcome) {
        let _ = std::fs::write(path, text);
    }
}

/// The outer stage: namespaces, id maps, then the inner stage, whose exit
/// (and so the end of every process of the namespace) it waits for.
fn outer(spec: &ViewSpec, staging: &Path) -> Result<i32, Outcome> {
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
    let exe = std::env::current_exe()
        .map_err(|error| Outcome::Failed(format!("the helper's own path: {error}")))?;
    // Opened now: once the inner stage pivots (in this same mount
    // namespace) the staging directory is out of this process's sight too.
    // Empty until the view is over.
    let done = std::fs::File::create(staging.join(DONE_FILE))
        .map_err(|error| Outcome::Failed(format!("the done file: {error}")))?;
    let pid_file = std::fs::File::create(staging.join(INNER_PID_FILE))
        .map_err(|error| Outcome::Failed(format!("the pid file: {error}")))?;
    let mut inner = std::process::Command::new(exe)
        .arg(INNER_ARG)
        .arg(staging)
        .spawn()
        .map_err(|error| Outcome::Failed(format!("starting the view's first process: {error}")))?;
    // The runner waits for the inner stage to be gone after a timeout.
    let _ = std::io::Write::write_all(&mut &pid_file, inner.id().to_string().as_bytes());
    drop(pid_file);
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

/// The probe: the namespaces a view needs, its id maps, private mounts,
/// and an overlay (user extended attributes) over directories of `dir`
/// (the staging base's file system) — the steps a run takes that a
/// system can refuse. Nothing of it outlives this process.
fn probe(dir: &Path) -> Result<(), String> {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let [lower, upper, work, merged] =
        ["lower", "upper", "work", "merged"].map(|name| dir.join(name));
    for d in [&lower, &upper, &work, &merged] {
        mkdir_p(d).map_err(|e| format!("the probe's directory {}: {e}", d.display()))?;
    }
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
    Ok(())
}

/// Marks every descriptor above stderr close-on-exec by closing it: the
/// helper needs none, and the command must not inherit the host's.
fn close_inherited_descriptors() {
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

/// The inner stage, PID 1 of the view.
fn inner(spec: &ViewSpec, outcome_path: &Path) -> Outcome {
    // If the outer stage is killed, so is this process, and with it the
    // namespace. (The runner kills the helper's whole process group, this
    // process included, so the moments before this line are covered too.)
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // The outcome file is opened now: after the pivot it is out of sight.
    let outcome_file = match std::fs::File::create(outcome_path) {
        Ok(file) => file,
        Err(error) => return Outcome::Failed(format!("the outcome file: {error}")),
    };
    let outcome = match enter_view(spec) {
        Ok(()) => run_command(spec),
        Err(error) => Outcome::Failed(error),
    };
    if let Ok(text) = serde_json::to_vec(&outcome) {
        let _ = std::io::Write::write_all(&mut &outcome_file, &text);
    }
    // `main` writes it again by path, which no longer resolves: harmless.
    outcome
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

/// Builds the view and enters it; the second wall goes up after.
fn enter_view(spec: &ViewSpec) -> Result<(), String> {
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
        apply(root, mount).map_err(|e| format!("{}: {e}", describe(mount)))?;
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

fn apply(root: &Path, mount: &Mount) -> io::Result<()> {
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
            let data = CString::new(format!("mode={mode:o}")).map_err(io::Error::other)?;
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

/// Remounts the bind mount at `at` read-only, keeping the flags its source
/// mount has (a user namespace may not clear them).
fn read_only(at: &Path) -> io::Result<()> {
    use rustix::fs::StatVfsMountFlags as St;
    let current = rustix::fs::statvfs(at)?.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY | MountFlags::NOSUID;
    for (st, ms) in [
        (St::NODEV, MountFlags::NODEV),
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

/// Landlock, `no_new_privs`, no capabilities; then the command, and the
/// reaping of every process until it ends.
fn run_command(spec: &ViewSpec) -> Outcome {
    let mut rules = KernelRules::new()
        .with_program(&spec.program)
        .with_network(true);
    rules.read.clone_from(&spec.landlock_read);
    rules.write.clone_from(&spec.landlock_write);
    rules.max_abi = spec.max_abi;
    let level = crate::kernel::planned_level(&rules);
    if let Some(key) = Domain::key(&rules, level) {
        let restricted = Domain::build(&key).and_then(Domain::restrict_current_thread);
        if let Err(error) = restricted {
            return Outcome::Failed(format!("Landlock inside the view: {error}"));
        }
    }
    if let Err(error) = rustix::thread::set_no_new_privs(true) {
        return Outcome::Failed(format!("no_new_privs: {error}"));
    }
    if let Err(error) = drop_all_capabilities() {
        return Outcome::Failed(format!("dropping capabilities: {error}"));
    }
    let mut command = std::process::Command::new(&spec.program);
    if let Some(arg0) = spec.argv.first() {
        command.arg0(arg0);
    }
    command
        .args(spec.argv.iter().skip(1))
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    let child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return Outcome::SpawnFailed(format!("{:?}", error.kind()), error.to_string());
        }
    };
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
