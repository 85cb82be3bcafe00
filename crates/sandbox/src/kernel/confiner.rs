//! Confiners: threads that restrict themselves with one Landlock domain
//! and then spawn commands for callers whose rules need that same domain.
//!
//! Landlock restricts a thread, for good, and every process it starts. So
//! that the caller keeps its rights, the spawn happens on another thread.
//! Starting a thread, restricting it and dropping its capabilities for
//! every command cost more than a tenth of spawning `/bin/true`; a confiner
//! does that once and then serves every command whose domain [`Key`] is
//! equal — the same rules, and the same roots, program directories and
//! `/etc` entries found by name, so exactly the grants a domain built for
//! that command would have. It ends after [`WAIT`] without a command.
//!
//! A confiner serves one caller at a time: a caller takes it from the idle
//! list (or starts one), hands it the command, and puts it back after. A
//! command the confiner could not spawn comes back to the caller with the
//! error; the mutex a confiner retires under makes sure no command is ever
//! left in the queue of a thread that has stopped.

use std::io;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use tokio::runtime::Handle;

use super::domain::{Domain, Key, REUSE_SLOTS};

/// How long a confiner waits for a command before it ends.
#[cfg(not(test))]
pub(super) const WAIT: Duration = Duration::from_secs(300);
/// (The unit tests wait for confiners to end: not that long.)
#[cfg(test)]
pub(super) const WAIT: Duration = Duration::from_millis(600);
use super::enforcement::{Enforcement, KernelRefusal};
use super::privileges::drop_all_capabilities;
use super::rules::KernelRules;

/// Spawns `cmd` on a confiner restricted by the domain `rules` need at ABI
/// `level`, and says how much the kernel enforced. `cmd` is the caller's
/// again afterwards, whatever the outcome.
pub(super) fn spawn(
    cmd: &mut Command,
    rules: &KernelRules,
    level: u8,
) -> io::Result<(Child, Enforcement)> {
    let runtime = Handle::try_current().map_err(io::Error::other)?;
    let Some(key) = Domain::key(rules, level) else {
        return cmd.spawn().map(|child| (child, Enforcement::None));
    };
    let mut confiner = match take_idle(&key) {
        Some(confiner) => confiner,
        None => Confiner::start(key.clone())?,
    };
    let mut job = Job {
        cmd: std::mem::replace(cmd, Command::new("")),
        runtime,
        require: rules.require,
    };
    let mut fresh_tries = 1;
    let (returned, outcome) = loop {
        match confiner.serve(job) {
            Served::Done(done) => {
                if done.reusable {
                    put_idle(confiner);
                }
                break (done.cmd, done.outcome);
            }
            Served::Lost => return Err(stopped()),
            // Retired between `take_idle` and the send: a fresh one serves.
            Served::Retired(back) if fresh_tries > 0 => {
                fresh_tries -= 1;
                match Confiner::start(key.clone()) {
                    Ok(fresh) => (confiner, job) = (fresh, back),
                    Err(error) => break (back.cmd, Err(error)),
                }
            }
            Served::Retired(back) => break (back.cmd, Err(stopped())),
        }
    };
    *cmd = returned;
    outcome
}

fn stopped() -> io::Error {
    io::Error::other("the confining thread stopped before spawning the command")
}

/// A command for a confiner to spawn.
struct Job {
    cmd: Command,
    /// The caller's runtime, which the child is registered with.
    runtime: Handle,
    /// Refuse unless the domain is fully enforced.
    require: bool,
}

/// The command back from a confiner, spawned or with the reason why not.
struct Done {
    cmd: Command,
    outcome: io::Result<(Child, Enforcement)>,
    /// Whether the confiner serves further jobs (it does unless restricting
    /// itself failed).
    reusable: bool,
}

enum Served {
    Done(Done),
    /// The confiner had retired; the job was never sent.
    Retired(Job),
    /// The confiner's thread ended without answering (it panicked).
    Lost,
}

/// A thread restricted by the domain `key` identifies, waiting for jobs.
struct Confiner {
    key: Key,
    /// When its thread ends if no job comes ([`WAIT`] after the last one).
    until: Instant,
    jobs: Sender<Job>,
    done: Receiver<Done>,
    /// Whether the thread has retired (or is about to); taken around each
    /// send and around the thread's last look at its queue.
    retired: Arc<Mutex<bool>>,
    /// The thread (dropping the handle detaches it; it ends on its own).
    thread: std::thread::JoinHandle<()>,
}

impl Confiner {
    /// Starts a thread and, while it starts, builds the domain it then
    /// restricts itself with.
    fn start(key: Key) -> io::Result<Self> {
        let (give, domain) = mpsc::sync_channel::<Domain>(1);
        let (jobs, queue) = mpsc::channel();
        let (answer, done) = mpsc::channel();
        let retired = Arc::new(Mutex::new(false));
        let flag = Arc::clone(&retired);
        let thread = std::thread::Builder::new()
            .name("agentcaps-landlock".to_owned())
            .spawn(move || {
                // Nothing comes when the build fails: the thread just ends.
                if let Ok(domain) = domain.recv() {
                    run(domain, &queue, &answer, &flag);
                }
            })?;
        let domain = Domain::build(&key)?;
        give.send(domain).map_err(|_| stopped())?;
        let until = Instant::now() + WAIT;
        Ok(Self {
            key,
            until,
            jobs,
            done,
            retired,
            thread,
        })
    }

    fn serve(&self, job: Job) -> Served {
        {
            let retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
            if *retired {
                return Served::Retired(job);
            }
            if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
                return Served::Retired(job);
            }
        }
        self.done.recv().map_or(Served::Lost, Served::Done)
    }
}

/// A confiner's thread: restrict, drop capabilities, then spawn what it is
/// given until none comes for [`WAIT`].
fn run(domain: Domain, queue: &Receiver<Job>, answer: &Sender<Done>, retired: &Mutex<bool>) {
    let confined = domain.restrict_current_thread().and_then(|achieved| {
        if achieved != Enforcement::None {
            drop_all_capabilities()?;
        }
        Ok(achieved)
    });
    loop {
        let job = match queue.recv_timeout(WAIT) {
            Ok(job) => job,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                let mut retired = retired.lock().unwrap_or_else(PoisonError::into_inner);
                match queue.try_recv() {
                    Ok(job) => job,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => {
                        *retired = true;
                        return;
                    }
                }
            }
        };
        let Job {
            mut cmd,
            runtime,
            require,
        } = job;
        let outcome = match &confined {
            Err(error) => Err(io::Error::new(error.kind(), error.to_string())),
            Ok(achieved) if require && !achieved.is_full() => {
                Err(KernelRefusal::new(*achieved).into_io_error())
            }
            Ok(achieved) => {
                let _entered = runtime.enter();
                cmd.spawn().map(|child| (child, *achieved))
            }
        };
        let reusable = confined.is_ok();
        let done = Done {
            cmd,
            outcome,
            reusable,
        };
        if answer.send(done).is_err() || !reusable {
            return;
        }
    }
}

/// Idle confiners, at most [`REUSE_SLOTS`].
static WAITING: Mutex<Vec<Confiner>> = Mutex::new(Vec::new());

/// An idle confiner for `key`, after dropping those about to end or ended
/// (their threads end on their own).
fn take_idle(key: &Key) -> Option<Confiner> {
    let mut idle = WAITING.lock().unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    idle.retain(|confiner| confiner.until > now && !confiner.thread.is_finished());
    let at = idle.iter().rposition(|confiner| confiner.key == *key)?;
    Some(idle.swap_remove(at))
}

fn put_idle(mut confiner: Confiner) {
    // The thread's wait for the next job starts about now; a little early
    // here, so that the list lets go of it first.
    confiner.until = Instant::now() + WAIT - WAIT / 10;
    let mut idle = WAITING.lock().unwrap_or_else(PoisonError::into_inner);
    if idle.len() >= REUSE_SLOTS {
        idle.remove(0);
    }
    idle.push(confiner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{FULL_ABI, kernel_abi};

    fn rules(root: &std::path::Path) -> KernelRules {
        assert!(
            kernel_abi() >= FULL_ABI,
            "these tests need Landlock ABI {FULL_ABI}+; this kernel offers {}",
            kernel_abi()
        );
        KernelRules::from_roots(Some([(root.to_path_buf(), true)])).with_program("/bin/true")
    }

    fn job(program: &str) -> Job {
        Job {
            cmd: Command::new(program),
            runtime: Handle::current(),
            require: true,
        }
    }

    #[tokio::test]
    async fn one_confiner_serves_many_commands_then_retires_and_hands_back_what_it_is_given() {
        let root = tempfile::tempdir().expect("tempdir");
        let rules = rules(root.path());
        let key = Domain::key(&rules, FULL_ABI).expect("something to restrict");
        let confiner = Confiner::start(key).expect("a confiner");
        for _ in 0..3 {
            let Served::Done(done) = confiner.serve(job("/bin/true")) else {
                panic!("the confiner should serve while its domain lives");
            };
            assert!(done.reusable);
            assert_eq!(done.cmd.as_std().get_program(), "/bin/true");
            let (mut child, enforced) = done.outcome.expect("spawned");
            assert_eq!(enforced, Enforcement::Full);
            assert!(child.wait().await.expect("wait").success());
        }
        // A spawn error is the command's, not the confiner's: it goes on.
        let Served::Done(done) = confiner.serve(job("/nonexistent/program")) else {
            panic!("the confiner should answer");
        };
        assert_eq!(
            done.outcome.expect_err("no such program").kind(),
            io::ErrorKind::NotFound
        );
        assert!(done.reusable);

        // After its domain's life the thread ends, and a job offered then
        // comes back untouched instead of vanishing in a dead queue.
        tokio::time::sleep(confiner.until.saturating_duration_since(Instant::now())).await;
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while !confiner.thread.is_finished() {
            assert!(Instant::now() < deadline, "the confiner did not retire");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        match confiner.serve(job("/bin/echo")) {
            Served::Retired(back) => assert_eq!(back.cmd.as_std().get_program(), "/bin/echo"),
            Served::Done(_) | Served::Lost => panic!("a retired confiner must hand the job back"),
        }
    }

    #[tokio::test]
    async fn spawn_leaves_the_command_as_it_was_and_reuses_the_confiner() {
        let root = tempfile::tempdir().expect("tempdir");
        let rules = rules(root.path());
        let mut cmd = Command::new("/bin/true");
        cmd.arg("--an-argument");
        for _ in 0..2 {
            let (mut child, enforced) = spawn(&mut cmd, &rules, FULL_ABI).expect("spawned");
            assert_eq!(enforced, Enforcement::Full);
            assert!(child.wait().await.expect("wait").success());
            assert_eq!(cmd.as_std().get_program(), "/bin/true");
            let args: Vec<_> = cmd.as_std().get_args().collect();
            assert_eq!(args, ["--an-argument"]);
        }
        let key = Domain::key(&rules, FULL_ABI).expect("something to restrict");
        assert!(
            take_idle(&key).is_some(),
            "the confiner should wait for the next command with these rules"
        );
        // A failed spawn gives the command back too.
        let mut missing = Command::new("/nonexistent/program");
        let error = spawn(&mut missing, &rules, FULL_ABI).expect_err("no such program");
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert_eq!(missing.as_std().get_program(), "/nonexistent/program");
    }
}
