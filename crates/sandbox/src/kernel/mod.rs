//! Kernel enforcement: run a command in a private view of the machine
//! (Linux namespaces), inside a Landlock domain derived from the same
//! policy that judged its arguments, and judge its writes before they land.
//!
//! The argument checks decide what a command is *asked* to touch; a program
//! can still open other files by itself (`make` running recipes, an
//! interpreter told to `cat .env`, `cp config .git/`). The runner closes
//! that gap with the kernel: the command runs in its private [`view`],
//! where secrets are absent and its writes are judged when it ends, inside
//! a Landlock domain built from [`KernelRules`]. [`spawn_confined`] is the
//! Landlock half on its own (and the fallback where there is no view): the
//! child starts inside the domain, and every process it starts inherits it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use agentcaps_sandbox::kernel::{spawn_confined, KernelRules};
//!
//! // Nothing but the runtime list is readable; `/etc/hostname` is not on it.
//! let rules = KernelRules::new().with_program("/bin/cat");
//! let mut cmd = tokio::process::Command::new("/bin/cat");
//! cmd.arg("/etc/hostname").stderr(std::process::Stdio::null());
//! let (mut child, enforced) = spawn_confined(&mut cmd, &rules)?;
//! let status = child.wait().await?;
//! // On a kernel with Landlock, `cat` is stopped by the kernel (EACCES).
//! if enforced != agentcaps_sandbox::kernel::Enforcement::None {
//!     assert!(!status.success());
//! }
//! # Ok(()) }
//! ```
//!
//! # What is enforced
//!
//! On Linux, with the `landlock` feature and a path policy, every command
//! the runner starts ([`Sandbox::run`](crate::Sandbox::run)) runs
//! in its **private view** ([`view`]) with **Landlock** inside it as a
//! second wall, and its writes are **judged before they land**
//! ([`writeback`](crate::writeback)). The result's `enforced` is `full`
//! only when all three held:
//!
//! - **Namespaces**: new user, mount, PID and IPC namespaces, and a new
//!   network namespace (only a private loopback) unless the shell allows
//!   the network. Nothing of the host exists in the view but the runtime
//!   (read-only: [`RUNTIME_DIRS`], [`RUNTIME_ETC`], `/etc/alternatives`,
//!   the program's, loader's and interpreter's directories and the
//!   installation it resolves into — `/opt/TOOL`, a `~/.pyenv` or
//!   `~/.nvm` version, `~/.rustup` with `~/.cargo/bin`, a virtual
//!   environment), a minimal `/dev` (`null zero full random urandom`, a
//!   private `pts`, `ptmx` and `shm`; it can be listed, and holds nothing
//!   else: no `tty`, so not the terminal the runner may have), a fresh
//!   `/proc` of its own PID namespace, a private empty `/tmp`, and each
//!   root as an overlay: a read-only one read-only (no upper layer), a
//!   writable one over a private staging directory. The tool
//!   installations are read-only overlays too. Through an overlay a host's
//!   UNIX socket, FIFO or device node is a file of the view's own: a
//!   `connect` finds no listener, a FIFO meets no host reader or writer,
//!   and no device opens (every mount but the few devices is `nodev`).
//!   The user's home (the command's `HOME`, and the home `/etc/passwd`
//!   gives, where programs look without `HOME`) is a private, empty,
//!   writable directory: none of the host's files there, only the cache
//!   directories, roots and tool installations the view puts beneath it —
//!   of a program installed under the home, its installation alone (a
//!   script of `~/.local/bin` alone, with `~/.local/lib/python*/
//!   site-packages` when it runs Python; the virtual environment a pipx or
//!   `uv tool` link leads to), never a whole `~/.local` or `~/.config`;
//!   what a command writes there is discarded. No `/var/run/docker.sock`,
//!   no UDP or UNIX socket of the host, no other user's files: what the
//!   view does not hold answers "no such file".
//! - **Secrets are absent**: every blocked entry inside a root (`**/.env*`,
//!   keys, the host's blocked list) is masked — a file is absent, a
//!   directory empty — so `grep -r` finds nothing, whatever the modes
//!   (`0555` directories) and the depth (paths beyond `PATH_MAX`; the
//!   roots are walked by handle). A directory the runner cannot list
//!   (`0300`) is shown empty: what the view cannot judge, it does not
//!   show. A mask that cannot be built is an error of the run, never a
//!   view without it. `.git` stays visible
//!   even where it is blocked, because git must read it; what a command
//!   writes there is judged like any other write (and refused where `.git`
//!   is blocked).
//! - **Credentials in the runtime are hidden**: what the view holds
//!   read-only outside the roots can hold registry tokens (cargo's
//!   `credentials.toml` in a `CARGO_HOME` of `/usr/local/cargo`, an
//!   `.npmrc` at the top of `/opt/node`). Each of these that exists reads as
//!   an empty file (or directory): `credentials` and `credentials.toml` of
//!   `/usr/local/cargo` and of the `CARGO_HOME` the command or the runner
//!   has; the files `NPM_CONFIG_USERCONFIG`, `NPM_CONFIG_GLOBALCONFIG`,
//!   `NETRC`, `PIP_CONFIG_FILE` and `DOCKER_CONFIG`'s `config.json` name;
//!   at the top of each tool installation and cache directory held whole,
//!   `.npmrc`, `.yarnrc`, `.yarnrc.yml`, `.pypirc`, `pip.conf`, `.netrc`,
//!   `.git-credentials`, `credentials`, `credentials.toml`,
//!   `.docker/config.json` and every entry the path policy blocks (`.env`,
//!   `.ssh`, `*.pem`); and npm's global `npmrc` (`/usr/local/etc`,
//!   `/usr/etc`, an installation's `etc/`) when it names a token or
//!   password. Only these spots are looked at (a few `stat` calls per run,
//!   never a walk of `/usr`): a credentials file elsewhere in the runtime
//!   stays readable — keep none there.
//! - **Judged write-back**: when the command ends (exit, signal or
//!   timeout), every change it made in a writable root is judged as a write
//!   through the path policy — protected persistence files (`.git/hooks`,
//!   `.git/config`, `.envrc`, …), blocked names in any letter case,
//!   non-portable names, links whose target leaves the roots, FIFOs,
//!   sockets and devices, set-id and sticky bits (the file lands without
//!   them), hard links to files the command did not create — and the
//!   allowed ones are committed all together or not at all; the result
//!   lists both (`changes.applied`, `changes.refused` with rule and reason).
//! - **Nothing outlives the command**: its first process is PID 1 of the
//!   namespace; when the command ends or times out, every process in the
//!   namespace is killed (a `setsid` and double fork cannot escape). Only
//!   stdin, stdout and stderr are inherited.
//! - **Landlock** inside the view (table below), `no_new_privs`, and every
//!   capability set emptied (bounding and ambient included).
//! - **Programs that run nothing by themselves cannot.** For a command
//!   that says so ([`SandboxCommand::runs_programs`](crate::SandboxCommand::runs_programs)
//!   `false`: the shell's `cat`, `grep`, `sed`, `awk`, `find` without
//!   `-exec`), the command's own domain holds one more, nested Landlock
//!   domain that handles execution alone and grants it on the program's
//!   file and its loader only (the ELF interpreter its `PT_INTERP` names;
//!   for a `#!` script, the interpreter and that one's loader — the kernel
//!   checks execution on each at `execve`). Whatever the program then tries
//!   to start — a `sed` `e` command, an `awk` `system()`, pipe or
//!   `getline` from a command — fails with `EACCES`; shared libraries,
//!   which are mapped rather than executed, load as before. The view
//!   confirms it put the wall up, or the run fails; it needs Landlock ABI
//!   1, so `full` covers it. Without the view it holds just the same
//!   wherever Landlock does ([`KernelRules::exec_only_program`]), and the
//!   result's `enforced_reason` says whether it held.
//! - **Nothing the command can reach speaks for the view.** The view's
//!   first process is not dumpable and holds no file of the host's: it
//!   reports (the walls it applied, how the command ended) over a pipe to
//!   the helper's outer stage, outside the command's PID namespace, which
//!   writes the report where the runner reads it — a staging directory the
//!   view never holds. The command runs in a Landlock domain nested inside
//!   the first process's, so it can neither `ptrace` nor signal it (nor take
//!   its descriptors with `pidfd_getfd`). `enforced` is what the first
//!   process confirmed, as the kernel answered it; a run whose walls do not
//!   match the plan is an error.
//! - **A run never falls back.** Whether views can be built is decided once
//!   per process by the probe, before any command runs. After a successful
//!   probe, whatever goes wrong with a run's view ends that run with
//!   [`SandboxError::ViewFailed`](crate::SandboxError::ViewFailed) (rule
//!   `view-failed`): nothing is committed, the command is not run again,
//!   and later runs are confined as before.
//! - **Private staging.** Staging directories live in a base made fresh
//!   for each process (`mkdtemp` semantics, `0700`); a name someone else
//!   made is never used. A staging directory the host names that is not a
//!   private directory of this user refuses runs rather than fall back.
//! - **Bounds** ([`Limits`](crate::Limits)): processes (`RLIMIT_NPROC` in
//!   the view's user namespace, and a `pids` cgroup when the runner is
//!   root, whose processes that limit never counts), the size of each
//!   writable `tmpfs`, the bytes a run may stage (more: nothing is
//!   committed; no one file may grow past it), and the soft limit on open
//!   files raised to the hard one.
//! - **The view ends with its runner**: the helper gets `SIGKILL` when the
//!   runner (the thread that started it) dies, and the namespace with it.
//! - **Without a path policy** a command still runs in new user, PID, IPC
//!   and network namespaces: its files are the host's (`partial`, saying
//!   so), its network, processes and IPC private.
//!
//! | Landlock ABI | what the domain enforces from that ABI on |
//! |---|---|
//! | 1 | read, list, execute only beneath the read roots, the writable roots and the runtime list; write, create (files, dirs, links, devices, fifos, sockets), remove only beneath the writable roots |
//! | 2 | renames and links across directories (below ABI 2 they are all denied, which is stricter) |
//! | 3 | truncation (`O_TRUNC`, `truncate`) only beneath the writable roots |
//! | 4 | TCP `bind` and `connect` denied unless [`KernelRules::allow_network`], except `connect` to the [`KernelRules::connect_ports`] (inside a private network namespace TCP is left to the namespace: only the command's own loopback is there) |
//! | 5 | `ioctl` on devices only beneath the writable roots |
//! | 6 | abstract UNIX sockets and signals scoped to the domain |
//!
//! The Landlock level of a run alone is [`Enforcement`]; `full` needs ABI
//! 6 or later ([`FULL_ABI`]). This machine's kernels have ABI 7.
//!
//! # macOS and Windows
//!
//! On macOS each command runs under `sandbox-exec` with a Seatbelt profile
//! made from the same rules ([`seatbelt`], which says what it holds and
//! what it does not); the result is `partial`. On Windows the kernel
//! enforces nothing here (`none`); the command's whole tree is still killed
//! at its end, through a Job object. `require_kernel_enforcement` refuses
//! on both.
//!
//! # Fallback, and what it does not enforce
//!
//! Where the probe found that no view can be had — user namespaces
//! disabled, a security module or container forbidding them, no view
//! helper known — or the host turned it off
//! ([`SandboxBuilder::private_view`](crate::SandboxBuilder::private_view))
//! — the command runs with Landlock only ([`spawn_confined`]), and the
//! result says `partial` with the reason (`enforced_reason`);
//! `require_kernel_enforcement = true` refuses to run instead. In that
//! mode:
//!
//! - blocked and write-protected entries *inside* a root are guarded only
//!   by the argument checks (Landlock grants whole trees): a program can
//!   read `.env` or write `.git/hooks` by itself, and its writes land
//!   unjudged;
//! - UDP, raw and netlink sockets and *pathname* UNIX sockets outside the
//!   roots are reachable; with `network = "proxy"` the command may connect
//!   by TCP to the proxy's loopback port, and so to that port on any host; a process that leaves the group (`setsid`)
//!   survives; `stat`, `chmod`, `chown` of the user's own files outside the
//!   roots work; descriptors the host left open are inherited.
//!
//! # Known limits of the view
//!
//! - **Renames** of a directory that existed before the command fail with
//!   `EXDEV` inside the view (an unprivileged overlay cannot redirect
//!   them); programs such as `mv` fall back to copying, and the move lands
//!   as a delete of the old directory and a create of the new one. The
//!   staging layer does not record where a moved file came from (it keeps
//!   no redirect, and the origin mark the overlay leaves carries no
//!   file handle when unprivileged), so a moved *file* is recognised by
//!   its content: a new file holding, byte for byte and with the same
//!   modification time, a file the command deleted is reported as one
//!   `rename` (`from` → `path`); a file changed after its move is a
//!   delete and a create. A move whose new place is refused keeps the old
//!   file where it was. Either way the commit writes the new file and
//!   removes the old one (all or none); it does not rename in the real
//!   tree.
//! - Files of a writable root owned by another user than the host's cannot
//!   be modified in the view (the overlay's copy-up fails).
//! - Permission changes of existing directories are refused (listed with
//!   rule `directory-mode`).
//! - A private home that holds a read-only root stays read-only for
//!   Landlock (which grants whole trees): writes to `$HOME` then fail with
//!   "permission denied" rather than make that root writable for the
//!   second wall.
//! - The roots are walked before every command to find the blocked entries
//!   (not `.git`'s contents); more than a million entries and the view is
//!   not built (the run says so). The walk holds two descriptors per level
//!   of depth: a tree deeper than the open-file limit allows is not
//!   masked, and the view is not built.
//! - A directory the runner cannot list (mode `0300`, another user's
//!   `0711`) is shown empty in the view, its files unreachable even by a
//!   name the command knows.
//! - A blocked entry *inside `.git`* that the host creates while the
//!   command runs is not hidden: `.git` is git's (the masks do not walk
//!   it either).
//! - A tool installation and every root must be nameable in overlay
//!   options (no `,` `:` `\` `=` in the path), or the view is not built.
//! - **What the host creates while the command runs** is judged by its
//!   name: between each root's masks and the real tree lies the names
//!   layer (a read-only FUSE file system the runner serves), which answers
//!   a lookup of a blocked name with a whiteout whether or not the entry
//!   existed when the view was built. It needs `/dev/fuse`, opened in the
//!   view's user namespace; where the runner's user cannot open it (many
//!   hosts let only root), the overlays go without the layer and the run
//!   says `partial`, naming what is open. Every first lookup of a name in
//!   a root costs a round trip to the runner; reads do not.
//! - Commands are short-lived here: long-running work (a dev server) is
//!   out of scope; a command's writes are judged when it ends.
//! - Hard links inside a root to a file elsewhere are read like any file.
//!
//! # Running real tools
//!
//! `git`, `cargo build`, `python3 -m unittest`, `make` work in the view
//! (tested). A program that needs per-user files outside the roots (a
//! `~/.gitconfig`) does not find them: its home is private and empty. List
//! such places as read-only roots of the path policy, or point `HOME`
//! inside a root. Variables such as `CARGO_HOME` or `XDG_CONFIG_HOME` that
//! point beneath the home find the private one; pointing elsewhere, they
//! find what the view holds there (read-only runtime, or nothing).
//!
//! # How the parent stays unrestricted
//!
//! A Landlock domain, `no_new_privs` and capabilities belong to a thread and
//! are inherited by the processes it creates. [`spawn_confined`] hands the
//! command to a *confiner*: a thread of this library that set
//! `no_new_privs`, restricted *itself* with the domain and dropped its
//! capabilities when it started, and spawns the child inside the caller's
//! Tokio runtime. A confiner serves every command whose domain would be the
//! same: the same rules, and the same roots, program directories and
//! `/etc` entries found by name (device and inode, and the modification
//! time of the directories holding the `/etc` entries) — Landlock grants
//! inodes, so it grants exactly what a domain built for that command
//! would. It ends after five minutes without a command. The calling thread and
//! every other thread of the host keep their rights (tested); no `unsafe`
//! code and no `pre_exec` hook are involved. At most eight idle confiners
//! wait at any time, each one thread. The hand-off to the confiner is most
//! of the added cost per command (see `benches/kernel.rs`).

mod enforcement;
mod rules;
pub mod seatbelt;
pub mod view;

#[cfg(all(feature = "landlock", target_os = "linux"))]
mod confiner;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod domain;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod privileges;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod program;

pub use enforcement::{Enforcement, FULL_ABI, KernelRefusal, ParseEnforcementError};
pub use rules::{KernelRules, RUNTIME_DEVICES_READ, RUNTIME_DEVICES_RW, RUNTIME_DIRS, RUNTIME_ETC};

/// The Landlock ABI the running kernel offers: `0` without Landlock (or
/// without the `landlock` feature, or off Linux).
#[must_use]
pub fn kernel_abi() -> u8 {
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    {
        domain::kernel_abi()
    }
    #[cfg(not(all(feature = "landlock", target_os = "linux")))]
    {
        0
    }
}

/// The ABI level `rules` would be enforced with here: the kernel's, capped
/// by [`KernelRules::max_abi`] and by [`FULL_ABI`] (later features are not
/// requested).
pub(crate) fn planned_level(rules: &KernelRules) -> u8 {
    let cap = rules.max_abi.unwrap_or(FULL_ABI);
    kernel_abi().min(cap).min(FULL_ABI)
}

fn restricts_anything(rules: &KernelRules, level: u8) -> bool {
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    {
        domain::restricts_anything(rules, level)
    }
    #[cfg(not(all(feature = "landlock", target_os = "linux")))]
    {
        let _ = (rules, level);
        false
    }
}

/// What a run's `enforced_reason` says of the execute-only wall
/// ([`KernelRules::exec_only_program`]), added to `reason`: when the
/// command asked for it (`requested`) and Landlock held at `landlock`, it
/// held too (it needs no more than ABI 1, and a run whose wall did not go
/// up is an error); without Landlock, nothing kept the program from
/// starting others. Nothing is added where it was not asked for, or where
/// it held and nothing else is said (`enforced` is then `full`, which
/// covers it).
pub(crate) fn exec_only_reason(
    reason: Option<String>,
    requested: bool,
    landlock: Enforcement,
) -> Option<String> {
    if !requested {
        return reason;
    }
    let clause = if landlock == Enforcement::None {
        "nothing kept the program from starting other programs (that needs Landlock)"
    } else {
        "the program could execute only its own file and the loader"
    };
    reason.map(|reason| format!("{reason}; {clause}"))
}

/// What [`spawn_confined`] would achieve for `rules` on this machine,
/// without running anything (for `check shell` and tool descriptions).
#[must_use]
pub fn would_enforce(rules: &KernelRules) -> Enforcement {
    let level = planned_level(rules);
    if restricts_anything(rules, level) {
        Enforcement::for_abi(level)
    } else {
        Enforcement::None
    }
}

/// Spawn `cmd` confined by `rules`, and say how much the kernel enforced.
///
/// Must be called inside a Tokio runtime (the child is registered with it,
/// as [`tokio::process::Command::spawn`] does).
///
/// # Errors
///
/// - [`KernelRefusal`] (inside an [`std::io::Error`] of kind
///   [`Unsupported`](std::io::ErrorKind::Unsupported); see
///   [`KernelRefusal::from_io_error`]) when `rules.require` is set and the
///   kernel cannot enforce everything — checked before anything runs;
/// - the spawn's own I/O error, an error building the Landlock domain, or
///   an error when called outside a Tokio runtime.
///
/// With [`KernelRules::exec_only_program`], an enforcement other than
/// [`Enforcement::None`] means the execute-only wall held as well: the
/// spawn fails rather than run the command without it.
///
/// `cmd` is left as it was, whether the spawn succeeds or not — unless the
/// confining thread panics, which would be a bug (then `cmd` is lost and an
/// error says so).
///
/// # Security
///
/// Only the child and its descendants are confined; see the module docs for
/// what the kernel enforces and what it does not.
pub fn spawn_confined(
    cmd: &mut tokio::process::Command,
    rules: &KernelRules,
) -> std::io::Result<(tokio::process::Child, Enforcement)> {
    let expected = would_enforce(rules);
    if rules.require && !expected.is_full() {
        return Err(KernelRefusal::new(expected).into_io_error());
    }
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    if expected != Enforcement::None {
        return confiner::spawn(cmd, rules, planned_level(rules));
    }
    cmd.spawn().map(|child| (child, Enforcement::None))
}
