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
use crate::kernel::view::spec::{DONE_FILE, INNER_PID_FILE, OUTCOME_FILE, Outcome, SPEC_FILE};
use crate::kernel::view::staging::{Staging, default_base};
use crate::kernel::view::{HELPER_ARG, PROBE_ARG, PROBE_OK, default_helper};
use crate::kernel::{self, Enforcement, FULL_ABI, KernelRules};
use crate::run::{Exit, RunResult, exit_of, prepare, supervise};
use crate::writeback::{self, CommitFault};

/// How long to wait, after a timeout, for the view's processes to be gone.
const GONE_AFTER_KILL: Duration = Duration::from_secs(5);

/// A run in the view, or why there was none.
pub(crate) enum InView {
    /// The command ran in its view.
    Ran(Box<RunResult>),
    /// No view here; nothing ran.
    Unavailable(String),
}

/// Set once the helper found that namespaces cannot be created here: later
/// runs go straight to the fallback.
static UNAVAILABLE: Mutex<Option<String>> = Mutex::new(None);

impl Sandbox {
    /// The helper to run the view with, or why there is no view.
    pub(crate) fn view_helper(&self) -> Result<PathBuf, String> {
        if !self.view.enabled {
            return Err("the host turned the private view off".to_owned());
        }
        if self.paths.is_none() {
            return Err("the shell has no path policy, so files are not confined".to_owned());
        }
        if let Some(reason) = UNAVAILABLE.lock().ok().and_then(|u| u.clone()) {
            return Err(reason);
        }
        self.view
            .helper
            .clone()
            .or_else(|| default_helper().map(Path::to_path_buf))
            .ok_or_else(|| {
                "no view helper is configured (the host calls `agentcaps_sandbox::kernel::view::dispatch()` in main or names one with `view_helper`)".to_owned()
            })
    }

    /// Runs `command` in its view with `helper`.
    pub(crate) async fn run_in_view(
        &self,
        command: &SandboxCommand,
        helper: &Path,
    ) -> Result<InView, SandboxError> {
        let Some(paths) = self.paths.as_ref() else {
            return Ok(InView::Unavailable("no path policy".to_owned()));
        };
        let base = self.view.staging.clone().unwrap_or_else(default_base);
        let staging = match Staging::create(&base) {
            Ok(staging) => staging,
            Err(error) => {
                return Ok(InView::Unavailable(format!(
                    "the staging directory {} cannot be made ({error})",
                    base.display()
                )));
            }
        };
        let mut env = command.env.clone();
        let max_abi = None;
        // The network proxy, serving on a socket in the staging directory
        // before the view is entered; dropped (stopped) after the run.
        let socket = staging.path().join("proxy.sock");
        let session = match &self.proxy {
            Some(proxy) => {
                let session = proxy.serve(&socket).map_err(|e| spawn_io(helper, e))?;
                crate::network::proxy_environment(&mut env, crate::network::PROXY_PORT);
                Some(session)
            }
            None => None,
        };
        let request = Request {
            program: &command.program,
            argv: &command.argv,
            cwd: &command.cwd,
            env: &env,
            private_network: !self.allow_network,
            max_abi,
            proxy_socket: session.as_ref().map(|_| socket.as_path()),
            cache_dirs: &self.view.cache_dirs,
        };
        let planned = match plan(paths, &request, &staging) {
            Ok(planned) => planned,
            Err(reason) => return Ok(InView::Unavailable(reason)),
        };
        let spec = serde_json::to_vec(&planned.spec).map_err(|e| spawn_io(helper, e.into()))?;
        std::fs::write(staging.path().join(SPEC_FILE), spec).map_err(|e| spawn_io(helper, e))?;

        let mut cmd = tokio::process::Command::new(helper);
        cmd.arg(HELPER_ARG)
            .arg(staging.path())
            .env_clear()
            .current_dir("/");
        prepare(&mut cmd, command.stdin.is_some());
        let started = Instant::now();
        let child = cmd.spawn().map_err(|e| spawn_io(helper, e))?;
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
        let outcome = std::fs::read(staging.path().join(OUTCOME_FILE))
            .ok()
            .and_then(|text| serde_json::from_slice::<Outcome>(&text).ok());
        let exit = match outcome {
            Some(Outcome::Exited(code)) => Exit::Code(code),
            Some(Outcome::Signaled(signal)) => Exit::Signal(signal),
            Some(Outcome::Unavailable(reason)) => {
                if let Ok(mut unavailable) = UNAVAILABLE.lock() {
                    *unavailable = Some(reason.clone());
                }
                return Ok(InView::Unavailable(reason));
            }
            Some(Outcome::Failed(reason)) if !ran.timed_out => {
                return Ok(InView::Unavailable(format!(
                    "the private view could not be built here: {reason}"
                )));
            }
            // The helper said nothing and never started the view (not a
            // helper, or it died first): nothing ran.
            None if !ran.timed_out && !view_started(staging.path()) => {
                return Ok(InView::Unavailable(format!(
                    "the view helper {} ended ({}) without starting the view",
                    helper.display(),
                    ran.status
                )));
            }
            Some(Outcome::SpawnFailed(kind, message)) => {
                return Err(SandboxError::Spawn {
                    program: command.program.clone(),
                    source: std::io::Error::new(kind_of(&kind), message),
                });
            }
            _ if ran.timed_out => Exit::Signal(9),
            _ => exit_of(ran.status),
        };
        let layers: Vec<(&Path, &Path)> = planned
            .layers
            .iter()
            .map(|layer| (layer.root.as_path(), layer.upper.as_path()))
            .collect();
        let changes = writeback::write_back(
            paths,
            &layers,
            &command.cwd,
            self.view.commit_fault.map(CommitFault),
        );
        let rules = KernelRules::from_policy(Some(paths), &command.program, true, false);
        let landlock = kernel::would_enforce(&rules);
        let (enforced, reason) = match landlock {
            Enforcement::Full if self.allow_network => (
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
        };
        let connections = session.map(|s| s.connections());
        drop(staging);
        let mut result = ran.to_result(
            started,
            command.program.clone(),
            command.argv.clone(),
            exit,
            enforced,
            reason,
            Some(changes),
        );
        result.connections = connections;
        Ok(InView::Ran(Box::new(result)))
    }
}

/// What the probe found, per helper and staging base, in this process.
type Probes = BTreeMap<(PathBuf, PathBuf), Result<(), String>>;
static PROBES: Mutex<Probes> = Mutex::new(BTreeMap::new());

impl Sandbox {
    /// Whether a command's view can be built here, found by trying: the
    /// helper is started in its probe mode, which creates the namespaces,
    /// writes the id maps and mounts an overlay on the staging base's file
    /// system, then exits. Asked once per helper and base in a process.
    pub(crate) fn probe_view(&self) -> Result<(), String> {
        let helper = self.view_helper()?;
        let base = self.view.staging.clone().unwrap_or_else(default_base);
        let key = (helper.clone(), base.clone());
        if let Some(found) = PROBES.lock().ok().and_then(|p| p.get(&key).cloned()) {
            return found;
        }
        let found = probe(&helper, &base);
        if let Ok(mut probes) = PROBES.lock() {
            probes.insert(key, found.clone());
        }
        found
    }
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

/// Whether the helper started the view's first process (it records its
/// process id as soon as it has).
fn view_started(staging: &Path) -> bool {
    std::fs::read_to_string(staging.join(INNER_PID_FILE)).is_ok_and(|pid| !pid.trim().is_empty())
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
