//! The private view a command runs in (Linux): its own user, mount, PID,
//! IPC and network namespaces, a fresh root holding only the runtime
//! (read-only), a minimal `/dev`, a fresh `/proc`, a private `/tmp`, a
//! private empty home in place of the user's (holding only the
//! installation of a program that lives there), and every root and tool
//! installation as an overlay — read-only without an upper layer, a
//! writable root over a private staging directory — so that no host
//! socket, FIFO or device in them is reached; blocked entries masked by a
//! layer of their own, walked by handle whatever the modes and depth, and
//! beneath it a names layer (a read-only FUSE file system the runner
//! serves), which judges every name at lookup and so hides what the host
//! creates while the command runs (see the [kernel module's](crate::kernel)
//! "Known limits").
//!
//! Namespaces are set up by a process of their own (a process with threads
//! cannot enter a new user namespace, and this crate uses no `unsafe` and
//! no `pre_exec` hook): the **view helper**. Any binary can be it — it
//! only has to call [`dispatch`] first thing in `main`:
//!
//! ```no_run
//! // First thing in `main`: runs the helper and exits when started as
//! // one; otherwise remembers this executable as the helper.
//! agentcaps_sandbox::kernel::view::dispatch();
//! ```
//!
//! The `agentcaps` binary does; the shell crate also builds a tiny one,
//! `agentcaps-view`. A host can name the helper explicitly with
//! [`SandboxBuilder::view_helper`](crate::SandboxBuilder::view_helper)
//! or [`set_default_helper`]. With no helper known, commands run with the
//! fallback confinement, and the result says `partial` and why.
//!
//! # Seams for what runs beside the command
//!
//! A service a command should reach plugs in as a UNIX socket on the host,
//! prepared by the runner before the helper starts. `network = "proxy"`
//! does so: the view's first process listens on `127.0.0.1:3128` of the
//! view's network and hands that listener to the proxy over its socket,
//! before the view's root replaces the host's; the proxy then accepts the
//! command's connections itself.

#[cfg(all(feature = "landlock", target_os = "linux"))]
mod credentials;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod exec;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod helper;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod kept;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod masks;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod names;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod pids;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod plan;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod proxy_port;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod spec;
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) mod staging;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The first argument that starts a process as the view helper (its outer
/// stage): `HELPER_ARG staging-dir`.
pub const HELPER_ARG: &str = "__agentcaps-view";
/// The first argument of the helper's inner stage.
pub(crate) const INNER_ARG: &str = "__agentcaps-view-init";
/// The first argument of the helper's probe: can a view be built here?
/// (`PROBE_ARG scratch-dir`; prints [`PROBE_OK`] when it can.)
pub(crate) const PROBE_ARG: &str = "__agentcaps-view-probe";
/// The first argument of the reaper, which runs a command where no view
/// can be built (`EXEC_ARG spec-json`): it keeps only descriptors 0–2 and
/// kills everything the command started, however detached.
pub(crate) const EXEC_ARG: &str = "__agentcaps-exec";
/// The spec that asks the reaper only whether it is one.
#[cfg_attr(not(all(feature = "landlock", target_os = "linux")), allow(dead_code))]
pub(crate) const EXEC_PROBE: &str = "probe";
/// What the reaper answers [`EXEC_PROBE`] with.
#[cfg_attr(not(all(feature = "landlock", target_os = "linux")), allow(dead_code))]
pub(crate) const EXEC_PROBE_OK: &str = "agentcaps-exec: ok";
/// What the probe prints when the namespaces and an overlay could be made.
#[cfg(all(feature = "landlock", target_os = "linux"))]
pub(crate) const PROBE_OK: &str = "agentcaps-view-probe: ok";

static DEFAULT_HELPER: OnceLock<PathBuf> = OnceLock::new();

static KEPT_VERDICTS: OnceLock<PathBuf> = OnceLock::new();

/// Keep a positive probe verdict across processes in `dir` (made `0700`,
/// this user's; the first call of a process decides): a process that
/// finds one for the same boot, user, helper binary, staging file system
/// and user-namespace settings builds its views without probing first
/// (one overlay mount and its directories fewer at the first run, which
/// for a command-line tool is every run). Only "a view was built here" is
/// kept, never "no view here": a record, forged or stale, can at worst
/// make a run whose view cannot be built fail (`view-failed`), never make
/// it fall back to less. A record not this user's, or in a directory
/// others may write in or read, is ignored. Off unless a host calls this;
/// the `agentcaps` binary keeps its verdicts with
/// [`keep_probe_verdicts_in_temp_dir`].
pub fn keep_probe_verdicts(dir: impl Into<PathBuf>) {
    let _ = KEPT_VERDICTS.set(dir.into());
}

/// [`keep_probe_verdicts`] in the temporary directory's
/// `agentcaps-verdicts-UID` (what the `agentcaps` binary does). Elsewhere
/// than Unix, nothing.
pub fn keep_probe_verdicts_in_temp_dir() {
    #[cfg(unix)]
    keep_probe_verdicts(std::env::temp_dir().join(format!(
        "agentcaps-verdicts-{}",
        rustix::process::geteuid().as_raw()
    )));
}

/// Where positive probe verdicts are kept, if a host asked for it.
#[cfg_attr(not(all(feature = "landlock", target_os = "linux")), allow(dead_code))]
pub(crate) fn kept_verdicts() -> Option<&'static Path> {
    KEPT_VERDICTS.get().map(PathBuf::as_path)
}

/// If this process was started as the view helper, runs it and exits;
/// otherwise remembers this executable as the helper (unless one was set
/// already) and returns. Call it first thing in `main`, before any thread
/// starts.
pub fn dispatch() {
    let mut args = std::env::args_os().skip(1);
    if let Some(stage) = args.next()
        && let Some(code) = run_if_helper(&stage, args.next())
    {
        std::process::exit(code);
    }
    if let Ok(exe) = std::env::current_exe() {
        let _ = DEFAULT_HELPER.set(exe);
    }
}

/// Runs the helper stage `stage` names for `staging`, if `stage` is one of
/// the helper's arguments; returns its exit code. For binaries that parse
/// their arguments themselves.
pub fn run_if_helper(stage: &OsString, staging: Option<OsString>) -> Option<i32> {
    let stage = stage.to_str()?;
    if stage != HELPER_ARG && stage != INNER_ARG && stage != PROBE_ARG && stage != EXEC_ARG {
        return None;
    }
    let Some(staging) = staging else {
        eprintln!("{stage}: the staging directory is missing");
        return Some(125);
    };
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    {
        if stage == EXEC_ARG {
            let Some(spec) = staging.to_str() else {
                eprintln!("{stage}: the spec is not UTF-8");
                return Some(125);
            };
            return Some(exec::main(spec));
        }
        Some(helper::main(stage, Path::new(&staging)))
    }
    #[cfg(not(all(feature = "landlock", target_os = "linux")))]
    {
        let _ = staging;
        eprintln!("{stage}: the private view exists on Linux only, with the `landlock` feature");
        Some(125)
    }
}

/// Removes the private directory this process made for its runs' staging,
/// if it made one and no run is in progress; returns whether none is left.
/// A process that runs commands and then exits (a command line) calls it
/// last, so that it leaves nothing in the temporary directory; a base left
/// behind (a crash, or a run still going) is removed by the next process
/// that stages a run, once this one is gone.
pub fn remove_staging_base() -> bool {
    #[cfg(all(feature = "landlock", target_os = "linux"))]
    {
        staging::remove_default_base()
    }
    #[cfg(not(all(feature = "landlock", target_os = "linux")))]
    {
        true
    }
}

/// What a view helper carries that says which sources it was built from:
/// the runner writes it into every view's spec, and a helper built from
/// other sources refuses the spec (the view fails; it is never built with
/// other code than its runner's). A helper file that does not hold this
/// mark is never picked by [`helper_beside_this_executable`].
#[must_use]
pub fn sources_mark() -> &'static str {
    SOURCES_MARK
}

pub(crate) const SOURCES_MARK: &str = concat!(
    "agentcaps-sandbox-sources:",
    env!("AGENTCAPS_SANDBOX_SOURCES"),
    ";"
);

/// The helper `name` beside this process's executable, when it may stand
/// in for it: a regular file (not a link) that this executable's owner (or
/// root) owns, that may be executed and that no one else may write, in a
/// directory no one else may write either, built from the same sources as
/// this process (its file holds [`sources_mark`]; a helper left from
/// another build is passed over). A binary installed with a small helper
/// of its own (the `agentcaps` command line and `agentcaps-helper`) names
/// it with [`set_default_helper`] before [`dispatch`]: each view then
/// starts that helper, twice, instead of the whole binary. Otherwise
/// `None`, and the executable stays its own helper.
#[must_use]
pub fn helper_beside_this_executable(name: &str) -> Option<PathBuf> {
    // Only Linux starts a view helper.
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let exe = std::env::current_exe().ok()?;
        let dir = exe.parent()?;
        let helper = dir.join(name);
        let (exe_meta, dir_meta, meta) = (
            std::fs::metadata(&exe).ok()?,
            std::fs::metadata(dir).ok()?,
            std::fs::symlink_metadata(&helper).ok()?,
        );
        let owner_ok = |uid: u32| uid == exe_meta.uid() || uid == 0;
        let closed = |mode: u32| mode & 0o022 == 0;
        // A helper is about a megabyte; it is read whole to find the mark.
        let trusted = meta.file_type().is_file()
            && meta.len() <= 64 << 20
            && owner_ok(meta.uid())
            && closed(meta.mode())
            && meta.mode() & 0o111 != 0
            && owner_ok(dir_meta.uid())
            && closed(dir_meta.mode());
        if !trusted {
            return None;
        }
        let bytes = std::fs::read(&helper).ok()?;
        memchr::memmem::find(&bytes, SOURCES_MARK.as_bytes()).map(|_| helper)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = name;
        None
    }
}

/// Sets the helper executable used when a policy names none (the first
/// call wins, and [`dispatch`] counts as one).
pub fn set_default_helper(path: impl Into<PathBuf>) {
    let _ = DEFAULT_HELPER.set(path.into());
}

/// The helper used when a policy names none, if any is known.
#[must_use]
pub fn default_helper() -> Option<&'static Path> {
    DEFAULT_HELPER.get().map(PathBuf::as_path)
}
