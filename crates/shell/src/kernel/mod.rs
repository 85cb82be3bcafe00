//! Kernel enforcement: run a command inside a Linux Landlock domain derived
//! from the same policy that judged its arguments.
//!
//! The argument checks decide what a command is *asked* to touch; a program
//! can still open other files by itself (`make` running recipes, `git`
//! reading hooks). [`spawn_confined`] closes that gap where the kernel can:
//! the child starts inside a Landlock domain built from [`KernelRules`], and
//! every process it starts inherits the domain.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use agentcaps_shell::kernel::{spawn_confined, KernelRules};
//!
//! // Nothing but the runtime list is readable; `/etc/hostname` is not on it.
//! let rules = KernelRules::new().with_program("/bin/cat");
//! let mut cmd = tokio::process::Command::new("/bin/cat");
//! cmd.arg("/etc/hostname").stderr(std::process::Stdio::null());
//! let (mut child, enforced) = spawn_confined(&mut cmd, &rules)?;
//! let status = child.wait().await?;
//! // On a kernel with Landlock, `cat` is stopped by the kernel (EACCES).
//! if enforced != agentcaps_shell::kernel::Enforcement::None {
//!     assert!(!status.success());
//! }
//! # Ok(()) }
//! ```
//!
//! # What is enforced
//!
//! With the `landlock` feature, on Linux, best effort by default; the level
//! achieved is returned with every child as [`Enforcement`]
//! (`full | partial (abi N) | none`), and [`KernelRules::require`] refuses to
//! run ([`KernelRefusal`]) unless it is `full`.
//!
//! | Landlock ABI | what the domain enforces from that ABI on |
//! |---|---|
//! | 1 | read, list, execute only beneath the read roots, the writable roots and the runtime list; write, create (files, dirs, links, devices, fifos, sockets), remove only beneath the writable roots |
//! | 2 | renames and links across directories (below ABI 2 they are all denied, which is stricter) |
//! | 3 | truncation (`O_TRUNC`, `truncate`) only beneath the writable roots |
//! | 4 | TCP `bind` and `connect` denied unless [`KernelRules::allow_network`] |
//! | 5 | `ioctl` on devices only beneath the writable roots |
//! | 6 | abstract UNIX sockets and signals scoped to the domain: the command cannot connect to an abstract socket or signal a process started outside it |
//!
//! `full` means ABI 6 or later ([`FULL_ABI`]). This machine's kernels have
//! ABI 7. Landlock also keeps the command from `ptrace`-ing (and so from
//! reading `/proc/PID/environ` or memory of) any process outside its domain,
//! and the domain comes with `no_new_privs`: set-user-ID and file-capability
//! programs (`sudo`, `su`) run without their privileges. Landlock leaves
//! capabilities alone, so when the host itself is privileged (root) the
//! command is started with every capability set emptied (bounding and
//! ambient included): no module loading, raw sockets, `chown` of others'
//! files or BPF, even as uid 0.
//!
//! The runtime list (never writable) is [`RUNTIME_DIRS`] (`/usr` and the
//! top-level `bin`/`lib` links into it; read and execute), [`RUNTIME_ETC`]
//! (a short list of `/etc` files: loader cache, users, resolver, time zone,
//! locale aliases, magic, git's system config, CA certificates; read only),
//! [`RUNTIME_DEVICES_READ`] (`/dev/zero`, `/dev/random`, `/dev/urandom`),
//! [`RUNTIME_DEVICES_RW`] (`/dev/null`, `/dev/full`), and for the resolved
//! program ([`KernelRules::program`]) its real directory, its ELF
//! interpreter's (the loader) and a `#!` interpreter's (read and execute).
//! It is granted even where the path policy blocks it (`/dev` is blocked for
//! arguments by default): programs cannot start without it.
//!
//! # Running real tools inside the domain
//!
//! Programs that read per-user files outside the roots fail inside the
//! domain: `git` treats an unreadable `~/.gitconfig` as fatal, `cargo` needs
//! `~/.cargo` and `~/.rustup`, compilers and `sort` want `/tmp`. List such
//! places as read-only roots of the path policy (then the argument checks
//! allow them too), point `HOME` and `TMPDIR` inside a writable root, or
//! leave kernel enforcement best effort and accept the failure. Nothing
//! outside the policy is granted behind its back.
//!
//! # What is not enforced
//!
//! - **Blocked entries inside a root.** Landlock only *adds* rights beneath a
//!   directory, so everything beneath a read root is readable and everything
//!   beneath a writable root writable — `.git/hooks`, `.git/config`,
//!   `**/.env` and the rest of the blocked and write-protected lists inside
//!   a root are guarded **only by the argument checks**, and a program
//!   (`make`, `git`) can still write them by itself. Granting write per
//!   subdirectory and leaving the protected ones out is not sound: a right
//!   to create anywhere is inherited by every directory below, so the root
//!   itself could not accept a new file, and patterns such as `**/.bashrc`
//!   name a place in *every* directory.
//! - Metadata: Landlock does not control `stat`, `readlink`, `chdir` or
//!   path walks, so a command can learn whether a path outside the roots
//!   exists and its size and times (not its content or listing); nor
//!   `chmod`, `chown`, `utimes` and extended attributes, so it can change
//!   the mode, times and attributes of files *its user owns* outside the
//!   roots (`chmod 644 ~/.ssh/id_rsa`; pinned by a test). Without
//!   capabilities it cannot touch others' files.
//! - Network other than TCP: UDP (so data can still leave through DNS
//!   queries or any UDP service), raw and netlink sockets, and connecting
//!   to *pathname* UNIX sockets outside the roots, such as an SSH agent or a
//!   container daemon socket (ABI 9 adds that; it is not requested here).
//!   Both gaps are pinned by tests.
//! - Executing: anything beneath a read root, a writable root or a runtime
//!   directory may be executed (a program written into a writable root
//!   included); the argument checks choose `argv[0]`, the kernel does not.
//! - Files already open when the command starts (the runner passes only
//!   pipes), CPU, memory and time (the runner's timeout bounds time).
//! - `/proc`, `/sys`, `/tmp` and the rest of `/dev` are not granted: a
//!   program that needs scratch space must be given a `TMPDIR` inside a
//!   writable root.
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
    let level = planned_level(rules);
    let expected = would_enforce(rules);
    if rules.require && !expected.is_full() {
        return Err(KernelRefusal::new(expected).into_io_error());
    }
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    if expected != Enforcement::None {
        return confiner::spawn(cmd, rules, level);
    }
    cmd.spawn().map(|child| (child, Enforcement::None))
}
