//! Test support: temporary trees, the probe run as a real confined program,
//! and servers/processes outside the domain for it to attack.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use agentcaps_shell::kernel::{Enforcement, KernelRules, spawn_confined};

/// The environment variable that turns this test binary into the probe.
pub(crate) const PROBE_OPS: &str = "AGENTCAPS_ESCAPE_PROBE_OPS";
/// The test function that acts as the probe's `main`.
pub(crate) const PROBE_ENTRY: &str = "escape_probe_entry";

/// A fresh directory tree, removed on drop:
/// `write/{data.txt,sub/}`, `read/{data.txt,sub/}`,
/// `outside/{secret.txt,true}`.
pub(crate) struct Tree {
    pub(crate) base: PathBuf,
    pub(crate) write: PathBuf,
    pub(crate) read: PathBuf,
    pub(crate) outside: PathBuf,
}

impl Tree {
    pub(crate) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base =
            std::env::temp_dir().join(format!("agentcaps-kernel-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let tree = Self {
            write: base.join("write"),
            read: base.join("read"),
            outside: base.join("outside"),
            base,
        };
        for dir in [&tree.write, &tree.read, &tree.outside] {
            std::fs::create_dir_all(dir.join("sub")).expect("create tree");
        }
        std::fs::write(tree.write.join("data.txt"), "in the writable root\n").expect("write");
        std::fs::write(tree.read.join("data.txt"), "in the read-only root\n").expect("write");
        std::fs::write(tree.outside.join("secret.txt"), "SECRET outside\n").expect("write");
        std::fs::copy("/bin/true", tree.outside.join("true")).expect("copy /bin/true");
        tree
    }

    /// Rules with `write` writable and `read` read-only, for running this
    /// test binary as the probe.
    pub(crate) fn rules(&self) -> KernelRules {
        KernelRules::from_roots(Some([
            (self.write.clone(), true),
            (self.read.clone(), false),
        ]))
        .with_program(std::env::current_exe().expect("current exe"))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// One probe line: the op and its result (`Ok` or the errno).
pub(crate) type ProbeResult = (String, Result<(), i32>);

/// Runs this test binary as the escape probe, confined by `rules`, and
/// returns each operation's result and the enforcement achieved.
pub(crate) async fn run_probe(
    rules: &KernelRules,
    ops: &[String],
) -> std::io::Result<(Vec<ProbeResult>, Enforcement)> {
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.args(["--exact", PROBE_ENTRY, "--nocapture", "--test-threads=1"])
        .env_clear()
        .env(PROBE_OPS, ops.join("\n"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let (child, enforced) = spawn_confined(&mut cmd, rules)?;
    let output = child.wait_with_output().await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<ProbeResult> = stdout
        .lines()
        // The first line follows libtest's "test … ... " on the same line.
        .filter_map(|line| line.split_once("probe: ").map(|(_, rest)| rest))
        .filter_map(|line| {
            let (op, result) = line
                .rsplit_once(" ok")
                .map(|(op, _)| (op, Ok(())))
                .or_else(|| {
                    let (op, errno) = line.rsplit_once(" err ")?;
                    Some((op, Err(errno.parse().ok()?)))
                })?;
            Some((op.to_owned(), result))
        })
        .collect();
    assert_eq!(
        results.len(),
        ops.len(),
        "the probe did not report every op; stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((results, enforced))
}

/// An errno's name, for readable corpus entries.
pub(crate) fn errno_name(errno: i32) -> String {
    match errno {
        1 => "EPERM".to_owned(),
        13 => "EACCES".to_owned(),
        18 => "EXDEV".to_owned(),
        111 => "ECONNREFUSED".to_owned(),
        -1 => "failed".to_owned(),
        n => format!("errno {n}"),
    }
}

/// A process outside any domain, killed on drop.
pub(crate) struct Bystander(std::process::Child);

impl Bystander {
    pub(crate) fn start() -> Self {
        Self(
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("start sleep"),
        )
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    pub(crate) fn is_alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `path` can be read by this (unconfined) process.
pub(crate) fn readable(path: &Path) -> bool {
    std::fs::read(path).is_ok()
}
