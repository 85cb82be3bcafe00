//! Running a command in its private view, then judging and committing its
//! writes (Linux).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::command::SandboxCommand;
use crate::confinement::Sandbox;
use crate::error::SandboxError;
use crate::kernel::view::plan::{Request, plan};
use crate::kernel::view::spec::{
    DONE_FILE, INNER_PID_FILE, OUTCOME_FILE, Outcome, PROBE_FILE, PROBE_PASSED, ProxyPort,
    Reported, RunSettings, SPEC_FILE, ViewSpec,
};
use crate::kernel::view::staging::{Staging, default_base, ensure_private_dir};
use crate::kernel::view::{
    EXEC_ARG, EXEC_PROBE, EXEC_PROBE_OK, HELPER_ARG, PROBE_ARG, PROBE_OK, default_helper,
};
use crate::kernel::{self, Enforcement, FULL_ABI, KernelRules};
use crate::run::{Exit, RunResult, prepare, supervise};
use crate::writeback::{self, CommitFault};

/// How long to wait, after a timeout, for the view's processes to be gone.
const GONE_AFTER_KILL: Duration = Duration::from_secs(5);

/// Whether commands get a private view here, decided before any command
/// runs and never by what happens inside one.
pub(crate) enum ViewDecision {
    /// Views can be built: every run gets one, or fails (`view-failed`).
    View {
        /// The helper executable.
        helper: PathBuf,
        /// The private base of the staging directories.
        base: PathBuf,
    },
    /// The probe found no view (or the host turned it off): the fallback,
    /// saying why.
    Fallback(String),
    /// Views could be built, but not safely with what the host configured
    /// (a staging base that is not this user's private directory): every
    /// run fails rather than fall back.
    Refuse(String),
}

impl Sandbox {
    /// Decides, once per helper and staging base in this process (the
    /// probe), whether commands get a private view.
    pub(crate) fn decide_view(&self) -> ViewDecision {
        let (helper, base) = match self.view_setup() {
            Ok(setup) => setup,
            Err(decision) => return decision,
        };
        match probe_once(&helper, &base) {
            Ok(()) => ViewDecision::View { helper, base },
            Err(reason) => ViewDecision::Fallback(reason),
        }
    }

    /// [`Sandbox::decide_view`] for a run. Where this process has not
    /// probed the helper and base yet, and the run makes every namespace
    /// the probe makes (a private network), the run itself is the probe:
    /// its helper tries the probe's steps before it starts anything of the
    /// command ([`RunSettings::probe`]), and only what it found then may
    /// make the run fall back. One start of the helper fewer.
    pub(crate) fn decide_view_to_run(&self) -> ViewDecision {
        let (helper, base) = match self.view_setup() {
            Ok(setup) => setup,
            Err(decision) => return decision,
        };
        if !self.allow_network && probed(&helper, &base).is_none() {
            return ViewDecision::View { helper, base };
        }
        match probe_once(&helper, &base) {
            Ok(()) => ViewDecision::View { helper, base },
            Err(reason) => ViewDecision::Fallback(reason),
        }
    }

    /// The helper and the staging base views would be built with, or the
    /// decision where there are none.
    fn view_setup(&self) -> Result<(PathBuf, PathBuf), ViewDecision> {
        if !self.view.enabled {
            return Err(ViewDecision::Fallback(
                "the host turned the private view off".to_owned(),
            ));
        }
        let helper = self.view_helper().map_err(ViewDecision::Fallback)?;
        let base = match &self.view.staging {
            Some(base) => {
                if let Err(error) = ensure_private_dir(base) {
                    return Err(ViewDecision::Refuse(format!(
                        "the staging directory {} cannot be used ({error})",
                        base.display()
                    )));
                }
                base.clone()
            }
            None => default_base().map_err(ViewDecision::Fallback)?,
        };
        Ok((helper, base))
    }

    /// The helper to run the view with, or why there is none.
    pub(crate) fn view_helper(&self) -> Result<PathBuf, String> {
        self.view
            .helper
            .clone()
            .or_else(|| default_helper().map(Path::to_path_buf))
            .ok_or_else(|| {
                "no view helper is configured (the host calls `agentcaps_sandbox::kernel::view::dispatch()` in main or names one with `view_helper`)".to_owned()
            })
    }

    /// Runs `command` in its view with `helper`, staging beneath `base`.
    /// Whatever goes wrong with the view ends the run with
    /// [`SandboxError::ViewFailed`]: nothing is committed, and nothing is
    /// run again.
    ///
    /// Where this process has not probed `helper` and `base` yet, this run
    /// is the probe: it falls back (and every later run of the process
    /// with it) only when its helper said no view can be built here before
    /// it started anything of the command, or could not be started at all.
    pub(crate) async fn run_in_view(
        &self,
        command: SandboxCommand,
        helper: &Path,
        base: &Path,
    ) -> Result<RunResult, SandboxError> {
        let probing = probed(helper, base).is_none();
        match self.run_in_view_once(&command, helper, base, probing).await {
            InView::Ran(result) => result,
            InView::NoView(reason) => {
                record_probe(helper, base, Err(reason.clone()));
                self.run_without_view(command, reason).await
            }
        }
    }

    async fn run_in_view_once(
        &self,
        command: &SandboxCommand,
        helper: &Path,
        base: &Path,
        probing: bool,
    ) -> InView {
        match self
            .run_in_view_probing(command, helper, base, probing)
            .await
        {
            Ok(ran) => ran,
            // Nothing of the command started: where the probe has not said
            // yet whether views exist here, it says now.
            Err(error) if probing => match probe_once(helper, base) {
                Ok(()) => InView::Ran(Err(error)),
                Err(reason) => InView::NoView(reason),
            },
            Err(error) => InView::Ran(Err(error)),
        }
    }

    /// [`Sandbox::run_in_view`]; `Err` when it failed before the helper
    /// was started.
    async fn run_in_view_probing(
        &self,
        command: &SandboxCommand,
        helper: &Path,
        base: &Path,
        probing: bool,
    ) -> Result<InView, SandboxError> {
        let failed = |reason: String| SandboxError::ViewFailed { reason };
        let staging = Staging::create(base).map_err(|error| {
            failed(format!(
                "the command's staging directory in {} cannot be made ({error})",
                base.display()
            ))
        })?;
        let mut env = command.env.clone();
        // The network proxy, serving on a socket in the staging directory
        // before the view is entered; dropped (stopped) after the run.
        let socket = staging.path().join("proxy.sock");
        let mut bundle = None;
        let session = match &self.proxy {
            Some(proxy) => {
                let session = proxy.serve(&socket).map_err(|e| spawn_io(helper, e))?;
                crate::network::proxy_environment(&mut env, crate::network::PROXY_PORT);
                if let Some(credentials) = session.credentials() {
                    let in_view = self.paths.is_some();
                    bundle = crate::credentials::prepare(
                        &credentials,
                        &mut env,
                        staging.path(),
                        in_view,
                    )
                    .map_err(|e| {
                        failed(format!("the credentials' CA bundle cannot be staged ({e})"))
                    })?;
                }
                Some(session)
            }
            None => None,
        };
        let proxy_socket = session.as_ref().map(|_| socket.as_path());
        let mut names_roots = Vec::new();
        let (mut spec, layers) = match &self.paths {
            Some(paths) => {
                let request = Request {
                    program: &command.program,
                    argv: &command.argv,
                    cwd: &command.cwd,
                    env: &env,
                    private_network: !self.allow_network,
                    max_abi: None,
                    proxy_socket,
                    cache_dirs: &self.view.cache_dirs,
                };
                let planned = plan(paths, &request, &staging).map_err(|reason| {
                    failed(format!("the private view cannot be built: {reason}"))
                })?;
                names_roots = planned.names_roots;
                (planned.spec, planned.layers)
            }
            None => (
                host_files_spec(command, env, !self.allow_network, proxy_socket, &staging),
                Vec::new(),
            ),
        };
        if let Some(mount) = bundle {
            spec.landlock_read
                .push(std::path::PathBuf::from(crate::credentials::VIEW_BUNDLE));
            spec.mounts.push(mount);
        }
        // The names layer, served from here while the view lives; where it
        // cannot be served the view goes without it, and says so.
        let names = match (&self.paths, spec.names.as_ref()) {
            (Some(paths), Some(mount)) if !self.view.skip_names_layer => {
                crate::kernel::view::names::Server::start(paths.clone(), names_roots, &mount.socket)
                    .ok()
            }
            _ => None,
        };
        if names.is_none() {
            spec.names = None;
        }
        spec.run.runner_pid = std::process::id();
        spec.run.max_processes = self.limits.max_processes;
        spec.run.tmpfs_bytes = self.limits.max_tmp_bytes / 2;
        spec.run.max_file_bytes = self.limits.max_change_bytes;
        // Root's processes are not counted by `RLIMIT_NPROC`: a cgroup
        // holds them instead, where one can be made.
        let cgroup = crate::kernel::view::pids::PidsCgroup::for_root(self.limits.max_processes);
        spec.run.pids_cgroup = cgroup.as_ref().map(|c| c.path().to_path_buf());
        spec.run.skip_landlock = self.view.skip_landlock;
        spec.run.exec_only_program = !command.runs_programs;
        spec.run.probe = probing;
        spec.run.sources = crate::kernel::view::SOURCES_MARK.to_owned();
        let text = serde_json::to_vec(&spec).map_err(|e| spawn_io(helper, e.into()))?;
        std::fs::write(staging.path().join(SPEC_FILE), text).map_err(|e| spawn_io(helper, e))?;

        let mut cmd = tokio::process::Command::new(helper);
        cmd.arg(HELPER_ARG)
            .arg(staging.path())
            .env_clear()
            .current_dir("/");
        prepare(&mut cmd, command.stdin.is_some());
        let started = Instant::now();
        let child = match cmd.spawn() {
            Ok(child) => child,
            Err(error) if probing => {
                return Ok(InView::NoView(format!(
                    "the view helper {} cannot be started ({error})",
                    helper.display()
                )));
            }
            Err(error) => return Err(spawn_io(helper, error)),
        };
        let view = Started {
            child,
            staging,
            started,
            probing,
            layers,
            session,
            cgroup,
            _names: names,
        };
        Ok(match self.supervise_view(command, helper, view).await {
            Ok(result) => InView::Ran(Ok(result)),
            Err(Ended::Failed(error)) => InView::Ran(Err(error)),
            Err(Ended::NoView(reason)) => InView::NoView(reason),
        })
    }

    /// Supervises the helper of a run in its view, then judges and commits
    /// what the command wrote.
    async fn supervise_view(
        &self,
        command: &SandboxCommand,
        helper: &Path,
        view: Started,
    ) -> Result<RunResult, Ended> {
        let Started {
            child,
            staging,
            started,
            probing,
            layers,
            session,
            cgroup,
            _names,
        } = view;
        let failed = |reason: String| SandboxError::ViewFailed { reason };
        // The helper writes its done file only once every process of the
        // view is gone; with it and the end of the pipes the run is over,
        // and the helper's exit (the kernel tearing the namespaces down) is
        // waited for in the background.
        let done_file = staging.path().join(DONE_FILE);
        let done = move || done_status(&done_file);
        let ran = supervise(
            child,
            command.stdin.as_deref(),
            command.timeout,
            self.max_output_bytes,
            command.output_counter.as_ref(),
            Some(&done),
        )
        .await
        .map_err(|e| spawn_io(helper, e))?;
        if ran.timed_out || done_status(&staging.path().join(DONE_FILE)).is_none() {
            // The helper did not see the view end (killed, or failed): the
            // view's first process may still be alive; nothing is judged
            // before it is gone.
            wait_until_gone(staging.path()).await;
        }
        if probing {
            let verdict = probe_verdict(staging.path(), helper, &ran.status, ran.timed_out);
            record_probe(helper, base_of(&staging), verdict.clone());
            verdict.map_err(Ended::NoView)?;
        }
        // Written by the helper's outer stage, which nothing in the view can
        // reach, from what the view's first process reported on its pipe.
        let reported = std::fs::read(staging.path().join(OUTCOME_FILE))
            .map(|text| Reported::parse(&text))
            .unwrap_or_default();
        let exit = match &reported.outcome {
            Some(Outcome::SpawnFailed(kind, message)) if !ran.timed_out => {
                return Err(SandboxError::Spawn {
                    program: command.program.clone(),
                    source: std::io::Error::new(kind_of(kind), message.clone()),
                }
                .into());
            }
            _ if ran.timed_out => Exit::Signal(9),
            Some(Outcome::Exited(code)) => Exit::Code(*code),
            Some(Outcome::Signaled(signal)) => Exit::Signal(*signal),
            Some(Outcome::Failed(reason) | Outcome::Unavailable(reason)) => {
                return Err(failed(format!("the command's private view failed: {reason}")).into());
            }
            _ => {
                return Err(failed(format!(
                    "the view helper {} ended ({}) without saying how the command ended",
                    helper.display(),
                    ran.status
                ))
                .into());
            }
        };
        // What the view applied, as the kernel answered it, against what was
        // planned: `full` is given only for what was confirmed.
        let rules = KernelRules::from_policy(self.paths.as_ref(), &command.program, true, false);
        let planned = kernel::would_enforce(&rules);
        let landlock = confirmed(&reported, planned, !command.runs_programs).map_err(failed)?;
        let staged: u64 = layers.iter().map(|layer| staged_bytes(&layer.upper)).sum();
        if staged > self.limits.max_change_bytes {
            return Err(failed(format!(
                "the command staged {staged} bytes of changes, more than the {} its run may commit (max_change_bytes)",
                self.limits.max_change_bytes
            ))
            .into());
        }
        let changes = self.paths.as_ref().map(|paths| {
            let layers: Vec<(&Path, &Path)> = layers
                .iter()
                .map(|layer| (layer.root.as_path(), layer.upper.as_path()))
                .collect();
            writeback::write_back(
                paths,
                &layers,
                &command.cwd,
                self.view
                    .commit_fault
                    .map(CommitFault::Fail)
                    .or(self.view.commit_kill.map(CommitFault::Kill)),
                self.view.decider.as_ref(),
            )
        });
        let (enforced, reason) = if self.paths.is_none() {
            (
                Enforcement::Partial {
                    abi: applied_abi(landlock),
                },
                Some(
                    "files are not confined: without a path policy the command sees the host's files and its writes land unjudged (its processes, IPC and network are private all the same)"
                        .to_owned(),
                ),
            )
        } else {
            let names = reported.applied.is_some_and(|applied| applied.names);
            with_names_layer(in_view_enforcement(landlock, self.allow_network), names)
        };
        let reason = kernel::exec_only_reason(reason, !command.runs_programs, landlock);
        let network = crate::network::recorded(session.as_deref());
        drop(session);
        drop(staging);
        drop(cgroup);
        let mut result = ran.to_result(
            started,
            command.program.clone(),
            command.argv.clone(),
            exit,
            enforced,
            reason,
            changes,
        );
        (result.connections, result.connections_dropped) = network;
        Ok(result)
    }
}

/// The bytes the files beneath `upper` take (a staging layer: what a
/// command wrote), walked without following links.
fn staged_bytes(upper: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0u64;
    let mut pending = vec![upper.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total = total.saturating_add(meta.blocks().saturating_mul(512).max(meta.len()));
            }
        }
    }
    total
}

/// The Landlock level the view applied, when it reported walls that match
/// `planned` (a domain nested for the command wherever there is one, with
/// the execute-only wall when `exec_only` asks for it); otherwise why the
/// run cannot be trusted.
fn confirmed(
    reported: &Reported,
    planned: Enforcement,
    exec_only: bool,
) -> Result<Enforcement, String> {
    let Some(applied) = reported.applied else {
        return Err("the private view never confirmed the walls it put up".to_owned());
    };
    let got = match (applied.landlock_abi, applied.landlock_full) {
        (0, _) => Enforcement::None,
        (abi, true) => Enforcement::for_abi(abi),
        (abi, false) => Enforcement::Partial { abi },
    };
    if got != planned {
        return Err(format!(
            "the private view applied Landlock `{got}` where `{planned}` was planned"
        ));
    }
    if got != Enforcement::None && !applied.nested {
        return Err("the command was not put in a Landlock domain of its own".to_owned());
    }
    if got != Enforcement::None && applied.exec_only != exec_only {
        return Err(if exec_only {
            "the command was not kept from executing other programs, as planned".to_owned()
        } else {
            "the command was kept from executing other programs, which was not planned".to_owned()
        });
    }
    Ok(got)
}

fn applied_abi(landlock: Enforcement) -> u8 {
    match landlock {
        Enforcement::Full => FULL_ABI,
        Enforcement::Partial { abi } => abi,
        Enforcement::None => 0,
    }
}

/// What a run in its view got, with Landlock at `landlock` inside.
pub(crate) fn in_view_enforcement(
    landlock: Enforcement,
    host_network: bool,
) -> (Enforcement, Option<String>) {
    match landlock {
        Enforcement::Full if host_network => (
            Enforcement::Partial { abi: FULL_ABI },
            Some(
                "the command shares the host's network (network = \"host\"): that part is not a sandbox"
                    .to_owned(),
            ),
        ),
        Enforcement::Full => (Enforcement::Full, None),
        Enforcement::Partial { abi } => (
            Enforcement::Partial { abi },
            Some(format!(
                "the kernel offers Landlock ABI {abi}; the second wall needs ABI {FULL_ABI}"
            )),
        ),
        Enforcement::None => (
            Enforcement::Partial { abi: 0 },
            Some("the kernel has no Landlock: the private view holds alone".to_owned()),
        ),
    }
}

/// What a run in its view got, `names` saying whether the names layer
/// was beneath its roots' masks: without it, a blocked entry the host
/// creates while the command runs is not hidden, and `full` is not given.
pub(crate) fn with_names_layer(
    (enforced, reason): (Enforcement, Option<String>),
    names: bool,
) -> (Enforcement, Option<String>) {
    if names {
        return (enforced, reason);
    }
    const OPEN: &str = "the view has no names layer (FUSE: /dev/fuse cannot be opened or mounted here), so a blocked entry the host creates while the command runs is not hidden from it";
    let abi = applied_abi(enforced);
    let reason = match reason {
        Some(reason) => format!("{reason}; {OPEN}"),
        None => OPEN.to_owned(),
    };
    (Enforcement::Partial { abi }, Some(reason))
}

/// The view of a command without a path policy: the host's files, in new
/// user, PID, IPC and network namespaces.
fn host_files_spec(
    command: &SandboxCommand,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    private_network: bool,
    proxy_socket: Option<&Path>,
    staging: &Staging,
) -> ViewSpec {
    ViewSpec {
        new_root: staging.path().join("root"),
        mounts: Vec::new(),
        private_network,
        program: command.program.clone(),
        argv: command.argv.clone(),
        cwd: command.cwd.clone(),
        env,
        landlock_read: Vec::new(),
        landlock_write: Vec::new(),
        max_abi: None,
        proxy: proxy_socket.map(|socket| ProxyPort {
            port: crate::network::PROXY_PORT,
            socket: socket.to_path_buf(),
        }),
        host_files: true,
        names: None,
        run: RunSettings::default(),
    }
}

/// How a run in its view went: it ran (or failed, and nothing is run
/// again), or its helper found before anything of the command started
/// that no view can be built here. (Returned once per run: its size does
/// not matter.)
#[allow(clippy::large_enum_variant)]
enum InView {
    Ran(Result<RunResult, SandboxError>),
    NoView(String),
}

/// Why a supervised run in its view ended without a result.
enum Ended {
    Failed(SandboxError),
    NoView(String),
}

impl From<SandboxError> for Ended {
    fn from(error: SandboxError) -> Self {
        Ended::Failed(error)
    }
}

/// A helper started for a run, and what the run holds until it is over.
struct Started {
    child: tokio::process::Child,
    staging: Staging,
    started: Instant,
    probing: bool,
    layers: Vec<crate::kernel::view::plan::Layer>,
    session: Option<Box<dyn crate::network::ProxySession>>,
    cgroup: Option<crate::kernel::view::pids::PidsCgroup>,
    /// The names layer's server, while the view may still hand it over.
    _names: Option<crate::kernel::view::names::Server>,
}

/// What the probe found, per helper and staging base, in this process.
type Probes = BTreeMap<(PathBuf, PathBuf), Result<(), String>>;
static PROBES: Mutex<Probes> = Mutex::new(BTreeMap::new());

/// What this process's probe found for `helper` and `base`, if it ran;
/// or a positive verdict an earlier process kept for them (see
/// [`kernel::view::keep_probe_verdicts`]).
fn probed(helper: &Path, base: &Path) -> Option<Result<(), String>> {
    let key = (helper.to_path_buf(), base.to_path_buf());
    let mut probes = PROBES.lock().ok()?;
    if let Some(found) = probes.get(&key) {
        return Some(found.clone());
    }
    let dir = kernel::view::kept_verdicts()?;
    let kept = kernel::view::kept::key(helper, base)?;
    if !kernel::view::kept::holds(dir, &kept) {
        return None;
    }
    probes.insert(key, Ok(()));
    Some(Ok(()))
}

/// Remembers what the probe found (the first answer stays); a positive
/// verdict is also kept for later processes where the host asked for it.
fn record_probe(helper: &Path, base: &Path, found: Result<(), String>) {
    let Ok(mut probes) = PROBES.lock() else {
        return;
    };
    let std::collections::btree_map::Entry::Vacant(entry) =
        probes.entry((helper.to_path_buf(), base.to_path_buf()))
    else {
        return;
    };
    let ok = found.is_ok();
    entry.insert(found);
    drop(probes);
    if ok
        && let Some(dir) = kernel::view::kept_verdicts()
        && let Some(kept) = kernel::view::kept::key(helper, base)
    {
        kernel::view::kept::keep(dir, &kept);
    }
}

/// The staging base a run's staging directory is in.
fn base_of(staging: &Staging) -> &Path {
    staging.path().parent().unwrap_or(staging.path())
}

/// What the helper of a probing run found, from its probe file: a view
/// can be built (it said so before it started the view's first process,
/// or it got as far as saying anything else: a failure of the run, never
/// a fallback), or why not (it said so instead of starting anything, or
/// it said nothing at all, as a program that is no helper does).
fn probe_verdict(
    staging: &Path,
    helper: &Path,
    status: &std::process::ExitStatus,
    timed_out: bool,
) -> Result<(), String> {
    let said = std::fs::read_to_string(staging.join(PROBE_FILE)).ok();
    match said
        .as_deref()
        .map(|text| text.split_once('\n').unwrap_or((text, "")))
    {
        Some((PROBE_PASSED, "")) => Ok(()),
        Some(("unavailable", reason)) if !reason.is_empty() => {
            Err(format!("the private view cannot be built here: {reason}"))
        }
        Some(_) => Ok(()),
        None if timed_out || staging.join(OUTCOME_FILE).exists() => Ok(()),
        None => Err(format!(
            "the view helper {} did not answer its probe ({status})",
            helper.display()
        )),
    }
}

/// Whether a view can be built with `helper` on `base`'s file system,
/// found by trying once in this process: the helper is started in its probe
/// mode, which creates the namespaces, writes the id maps and mounts an
/// overlay, then exits.
impl Sandbox {
    /// The helper to start a command under the reaper with, where there is
    /// no view: the known helper, once it has answered the reaper's probe
    /// in this process (a helper that is not one would run nothing and
    /// say it succeeded).
    pub(crate) fn reaper(&self) -> Option<PathBuf> {
        let helper = self.view_helper().ok()?;
        static ANSWERED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());
        if let Some(found) = ANSWERED.lock().ok().and_then(|answered| {
            answered
                .iter()
                .find(|(path, _)| *path == helper)
                .map(|(_, ok)| *ok)
        }) {
            return found.then_some(helper);
        }
        let ok = std::process::Command::new(&helper)
            .arg(EXEC_ARG)
            .arg(EXEC_PROBE)
            .env_clear()
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .is_ok_and(|output| {
                output.status.success()
                    && String::from_utf8_lossy(&output.stdout).trim() == EXEC_PROBE_OK
            });
        if let Ok(mut answered) = ANSWERED.lock() {
            answered.push((helper.clone(), ok));
        }
        ok.then_some(helper)
    }
}

fn probe_once(helper: &Path, base: &Path) -> Result<(), String> {
    if let Some(found) = probed(helper, base) {
        return found;
    }
    let found = probe(helper, base);
    record_probe(helper, base, found.clone());
    probed(helper, base).unwrap_or(found)
}

fn probe(helper: &Path, base: &Path) -> Result<(), String> {
    let staging = Staging::create(base).map_err(|error| {
        format!(
            "the staging directory {} cannot be made ({error})",
            base.display()
        )
    })?;
    let output = std::process::Command::new(helper)
        .arg(PROBE_ARG)
        .arg(staging.path())
        .env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|error| {
            format!(
                "the view helper {} cannot be started ({error})",
                helper.display()
            )
        })?;
    let said = String::from_utf8_lossy(&output.stdout);
    let said = said.trim();
    if output.status.success() && said == PROBE_OK {
        return Ok(());
    }
    if said.is_empty() || said == PROBE_OK {
        return Err(format!(
            "the view helper {} did not answer its probe ({})",
            helper.display(),
            output.status
        ));
    }
    Err(format!("the private view cannot be built here: {said}"))
}

fn spawn_io(helper: &Path, source: std::io::Error) -> SandboxError {
    SandboxError::Spawn {
        program: helper.to_path_buf(),
        source,
    }
}

fn kind_of(text: &str) -> std::io::ErrorKind {
    use std::io::ErrorKind as K;
    match text {
        "NotFound" => K::NotFound,
        "PermissionDenied" => K::PermissionDenied,
        "InvalidInput" => K::InvalidInput,
        _ => K::Other,
    }
}

/// The helper's exit status, from its done file, once it wrote one.
fn done_status(done_file: &Path) -> Option<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let code: i32 = std::fs::read_to_string(done_file)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(std::process::ExitStatus::from_raw((code & 0xff) << 8))
}

/// After a timeout: waits until the view's first process (and so every
/// process of its namespace) is gone or a zombie.
async fn wait_until_gone(staging: &Path) {
    let Some(pid) = std::fs::read_to_string(staging.join(INNER_PID_FILE))
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
    else {
        return;
    };
    let deadline = Instant::now() + GONE_AFTER_KILL;
    while Instant::now() < deadline {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name in parentheses.
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        if matches!(state, None | Some("Z" | "X")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::view::spec::Applied;

    fn reported(exec_only: bool) -> Reported {
        Reported {
            applied: Some(Applied {
                landlock_abi: FULL_ABI,
                landlock_full: true,
                nested: true,
                exec_only,
                names: true,
            }),
            outcome: Some(Outcome::Exited(0)),
        }
    }

    #[test]
    fn a_view_without_its_names_layer_is_partial_and_says_why() {
        let full = (Enforcement::Full, None);
        assert_eq!(with_names_layer(full.clone(), true), full);
        let (enforced, reason) = with_names_layer(full, false);
        assert_eq!(enforced, Enforcement::Partial { abi: FULL_ABI });
        assert!(
            reason
                .unwrap()
                .contains("the host creates while the command runs")
        );
        let (enforced, reason) = with_names_layer(
            (Enforcement::Partial { abi: 3 }, Some("ABI 3".to_owned())),
            false,
        );
        assert_eq!(enforced, Enforcement::Partial { abi: 3 });
        let reason = reason.unwrap();
        assert!(
            reason.starts_with("ABI 3; ") && reason.contains("FUSE"),
            "{reason}"
        );
    }

    #[test]
    fn a_run_whose_execute_only_wall_is_not_as_planned_is_not_trusted() {
        let planned = Enforcement::Full;
        assert_eq!(confirmed(&reported(true), planned, true), Ok(planned));
        assert_eq!(confirmed(&reported(false), planned, false), Ok(planned));
        let missing = confirmed(&reported(false), planned, true).expect_err("no wall");
        assert!(missing.contains("not kept from executing"), "{missing}");
        let extra = confirmed(&reported(true), planned, false).expect_err("a wall not planned");
        assert!(extra.contains("which was not planned"), "{extra}");
    }

    #[test]
    fn the_reason_says_whether_the_wall_held() {
        assert_eq!(
            kernel::exec_only_reason(None, true, Enforcement::Full),
            None,
            "full covers it"
        );
        let held =
            kernel::exec_only_reason(Some("a".into()), true, Enforcement::Partial { abi: 3 });
        assert_eq!(
            held.as_deref(),
            Some("a; the program could execute only its own file and the loader")
        );
        let open = kernel::exec_only_reason(Some("a".into()), true, Enforcement::None);
        assert!(open.is_some_and(|r| r.contains("nothing kept the program")));
        assert_eq!(
            kernel::exec_only_reason(Some("a".into()), false, Enforcement::None).as_deref(),
            Some("a")
        );
    }
}
