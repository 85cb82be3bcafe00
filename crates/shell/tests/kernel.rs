//! Kernel enforcement (Landlock) tested by attacking it with real programs:
//! a probe that tries to escape by itself, `make` with misbehaving recipes,
//! and the modes where the kernel cannot enforce (`none`, `partial`,
//! `require`).
//!
//! This test binary doubles as the escape probe: run with
//! `AGENTCAPS_ESCAPE_PROBE_OPS` set, its `escape_probe_entry` test performs
//! the operations and exits (see `kernel/probe.rs`).
//!
//! Needs the `landlock` feature (on by default); the escape tests also need
//! a kernel with Landlock ABI 6+ and fail, saying so, on one without.
//! Landlock is Linux's: on other systems there is nothing here to test
//! (their runner reports `none`, tested by the `shell` suite).
#![cfg(all(target_os = "linux", feature = "landlock"))]

#[path = "kernel/exec_only.rs"]
mod exec_only;
#[path = "kernel/probe.rs"]
mod probe;
#[path = "kernel/support.rs"]
mod support;

use std::path::{Path, PathBuf};

use agentcaps_shell::kernel::{
    Enforcement, FULL_ABI, KernelRefusal, KernelRules, kernel_abi, spawn_confined, would_enforce,
};
use support::{Bystander, PROBE_OPS, Tree, errno_name, readable, run_probe};

/// The probe's `main` when this binary runs as the probe; otherwise a test
/// of the probe's own operation parser.
#[test]
fn escape_probe_entry() {
    if let Ok(ops) = std::env::var(PROBE_OPS) {
        std::process::exit(probe::main_with(ops.lines().map(str::to_owned)));
    }
    assert_eq!(
        probe::parse("rename:/a>/b"),
        Ok(probe::Op::Rename("/a".into(), "/b".into()))
    );
    assert_eq!(probe::parse("signal:42"), Ok(probe::Op::Signal(42)));
    assert_eq!(
        probe::parse("connect:127.0.0.1:80"),
        Ok(probe::Op::Connect("127.0.0.1:80".into()))
    );
    for bad in ["read", "nope:/x", "rename:/a", "signal:me"] {
        assert!(probe::parse(bad).is_err(), "{bad} should not parse");
    }
}

/// The kernel of this machine must offer full enforcement for the escape
/// tests to mean anything: say so plainly if it does not.
fn assert_landlock_here() {
    assert!(
        kernel_abi() >= FULL_ABI,
        "these tests need a kernel with Landlock ABI {FULL_ABI}+ and the `landlock` feature; this one offers ABI {}",
        kernel_abi()
    );
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    ops: Vec<String>,
    expect: String,
    why: String,
    #[serde(default)]
    network: bool,
    #[serde(default)]
    max_abi: Option<u8>,
    #[serde(default = "yes")]
    files: bool,
    /// TCP connect allowed to `{port}` alone (a judging proxy's port).
    #[serde(default)]
    connect_port: bool,
}

fn yes() -> bool {
    true
}

#[tokio::test]
async fn escape_corpus() {
    assert_landlock_here();
    let text = include_str!("kernel/escapes.toml");
    let corpus: Corpus = toml::from_str(text).expect("escapes.toml parses");
    assert!(corpus.case.len() >= 30, "the corpus lost cases");

    let server = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback server");
    let port = server.local_addr().expect("addr").port();
    let other_server = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback server");
    let other = other_server.local_addr().expect("addr").port();
    let abstract_name = format!("agentcaps-kernel-test-{}", std::process::id());
    let abstract_listener = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .expect("abstract address");
        std::os::unix::net::UnixListener::bind_addr(&addr).expect("abstract listener")
    };

    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp socket");
    let udp_port = udp.local_addr().expect("addr").port();
    let unix_dir = Tree::new();
    let unix_path = unix_dir.outside.join("agent.sock");
    let unix_listener = std::os::unix::net::UnixListener::bind(&unix_path).expect("unix listener");

    let mut failures = Vec::new();
    for case in &corpus.case {
        let tree = Tree::new();
        let mut bystander = Bystander::start();
        let vars: [(&str, String); 10] = [
            ("{other}", other.to_string()),
            ("{write}", tree.write.display().to_string()),
            ("{read}", tree.read.display().to_string()),
            ("{outside}", tree.outside.display().to_string()),
            ("{port}", port.to_string()),
            ("{pid}", bystander.pid().to_string()),
            ("{ppid}", std::process::id().to_string()),
            ("{abstract}", abstract_name.clone()),
            ("{udp}", udp_port.to_string()),
            ("{unix}", unix_path.display().to_string()),
        ];
        let ops: Vec<String> = case
            .ops
            .iter()
            .map(|op| {
                vars.iter()
                    .fold(op.clone(), |op, (key, value)| op.replace(key, value))
            })
            .collect();
        let mut rules = tree.rules().with_network(case.network);
        rules.restrict_files = case.files;
        rules.max_abi = case.max_abi;
        if case.connect_port {
            rules = rules.with_connect_port(port);
        }
        let expected_level = match case.max_abi {
            Some(abi) if !case.files && case.network && abi < FULL_ABI => Enforcement::None,
            Some(abi) => Enforcement::for_abi(abi),
            None => Enforcement::Full,
        };

        let (results, enforced) = run_probe(&rules, &ops).await.expect("run the probe");
        if enforced != expected_level {
            failures.push(format!(
                "{}: enforcement {enforced}, expected {expected_level}",
                case.name
            ));
        }
        let Some(((last_op, last), setup)) = results.split_last() else {
            failures.push(format!("{}: no results", case.name));
            continue;
        };
        for (op, result) in setup {
            if let Err(errno) = result {
                failures.push(format!(
                    "{}: setup op {op} failed with {}",
                    case.name,
                    errno_name(*errno)
                ));
            }
        }
        let got = match last {
            Ok(()) => "ok".to_owned(),
            Err(errno) => errno_name(*errno),
        };
        if got != case.expect {
            failures.push(format!(
                "{}: {last_op} gave {got}, expected {} ({})",
                case.name, case.expect, case.why
            ));
        }
        // A stopped signal really did not arrive.
        if case.ops.iter().any(|op| op.starts_with("signal:{pid}"))
            && case.expect != "ok"
            && !bystander.is_alive()
        {
            failures.push(format!("{}: the bystander was killed", case.name));
        }
        // A stopped write really left nothing outside.
        if case.expect != "ok" && tree.outside.join("pwned.txt").exists() {
            failures.push(format!("{}: a file appeared outside the roots", case.name));
        }
    }
    drop((server, other_server, abstract_listener, udp, unix_listener));
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        corpus.case.len(),
        failures.join("\n")
    );
}

/// `/proc/thread-self/status` says whether the calling thread has
/// `no_new_privs` set.
fn no_new_privs_on_this_thread() -> bool {
    std::fs::read_to_string("/proc/thread-self/status")
        .expect("read /proc/thread-self/status")
        .lines()
        .any(|line| line.split_whitespace().collect::<Vec<_>>() == ["NoNewPrivs:", "1"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parent_and_its_other_threads_stay_unrestricted() {
    assert_landlock_here();
    let tree = Tree::new();
    let secret = tree.outside.join("secret.txt");
    let other = std::thread::spawn({
        let secret = secret.clone();
        move || {
            // Waits until the confined child exists, then reads outside.
            std::thread::sleep(std::time::Duration::from_millis(50));
            readable(&secret)
        }
    });
    let (results, enforced) = run_probe(&tree.rules(), &[format!("read:{}", secret.display())])
        .await
        .expect("run the probe");
    assert_eq!(enforced, Enforcement::Full);
    assert_eq!(results[0].1, Err(13), "the child is confined");

    // This thread, another thread, and a plain child are not.
    assert!(readable(&secret), "the calling thread lost access");
    assert!(other.join().expect("thread"), "another thread lost access");
    assert!(
        !no_new_privs_on_this_thread(),
        "no_new_privs leaked to the caller"
    );
    let plain = tokio::process::Command::new("cat")
        .arg(&secret)
        .output()
        .await
        .expect("plain cat");
    assert_eq!(String::from_utf8_lossy(&plain.stdout), "SECRET outside\n");
    std::fs::write(tree.outside.join("after.txt"), "still writable").expect("parent writes");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("parent binds TCP");
    drop(listener);
}

#[tokio::test]
async fn full_enforcement_is_reported_and_predicted() {
    assert_landlock_here();
    let tree = Tree::new();
    let rules = tree.rules();
    assert_eq!(would_enforce(&rules), Enforcement::Full);
    let (_, enforced) = run_probe(&rules, &["exec:/bin/true".to_owned()])
        .await
        .expect("run");
    assert_eq!(enforced, Enforcement::Full);
    assert_eq!(enforced.to_string(), "full");
}

#[tokio::test]
async fn without_landlock_nothing_is_enforced_and_none_is_reported() {
    let tree = Tree::new();
    let rules = tree.rules().with_max_abi(0);
    assert_eq!(would_enforce(&rules), Enforcement::None);
    let secret = tree.outside.join("secret.txt").display().to_string();
    let pwned = tree.outside.join("pwned.txt");
    let (results, enforced) = run_probe(
        &rules,
        &[
            format!("read:{secret}"),
            format!("write:{}", pwned.display()),
        ],
    )
    .await
    .expect("run");
    assert_eq!(enforced, Enforcement::None);
    assert_eq!(enforced.to_string(), "none");
    // Honest: with no kernel enforcement the probe really does escape.
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    assert!(pwned.exists());
}

/// Snapshots a refusal message in `tests/kernel/snapshots/`.
fn snapshot(name: &str, message: &str) {
    insta::with_settings!({ snapshot_path => "kernel/snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, message);
    });
}

/// Runs `touch MARKER` under `rules` and returns the error; asserts the
/// marker was never created, i.e. nothing ran.
async fn refused_before_running(rules: &KernelRules, tree: &Tree) -> std::io::Error {
    let marker = tree.write.join("marker");
    let mut cmd = tokio::process::Command::new("/usr/bin/touch");
    cmd.arg(&marker);
    let error = match spawn_confined(&mut cmd, rules) {
        Ok((child, enforced)) => {
            let _ = child.wait_with_output().await;
            panic!("ran with enforcement {enforced} despite `require`");
        }
        Err(error) => error,
    };
    assert!(!marker.exists(), "the command ran before the refusal");
    error
}

#[tokio::test]
async fn require_refuses_before_anything_runs_without_landlock() {
    let tree = Tree::new();
    let rules = tree.rules().with_max_abi(0).with_require(true);
    let error = refused_before_running(&rules, &tree).await;
    assert_eq!(error.kind(), std::io::ErrorKind::Unsupported);
    let refusal = KernelRefusal::from_io_error(&error).expect("a KernelRefusal");
    assert_eq!(refusal.achieved, Enforcement::None);
    assert_eq!(refusal.needed_abi, FULL_ABI);
    snapshot("require_without_landlock", &refusal.to_string());
}

#[tokio::test]
async fn require_refuses_partial_enforcement() {
    let tree = Tree::new();
    for abi in 1..FULL_ABI {
        let rules = tree.rules().with_max_abi(abi).with_require(true);
        assert_eq!(would_enforce(&rules), Enforcement::Partial { abi });
        let error = refused_before_running(&rules, &tree).await;
        let refusal = KernelRefusal::from_io_error(&error).expect("a KernelRefusal");
        assert_eq!(refusal.achieved, Enforcement::Partial { abi });
        if abi == 4 {
            snapshot("require_with_partial_abi_4", &refusal.to_string());
        }
    }
}

#[tokio::test]
async fn require_runs_when_enforcement_is_full() {
    assert_landlock_here();
    let tree = Tree::new();
    let marker = tree.write.join("marker");
    let rules = tree
        .rules()
        .with_program("/usr/bin/touch")
        .with_require(true);
    let mut cmd = tokio::process::Command::new("/usr/bin/touch");
    cmd.arg(&marker);
    let (child, enforced) = spawn_confined(&mut cmd, &rules).expect("runs");
    let output = child.wait_with_output().await.expect("wait");
    assert!(output.status.success());
    assert_eq!(enforced, Enforcement::Full);
    assert!(marker.exists());
}

#[test]
fn spawning_outside_a_runtime_is_an_error_not_a_panic() {
    assert_landlock_here();
    let tree = Tree::new();
    let mut cmd = tokio::process::Command::new("/bin/true");
    let error = spawn_confined(&mut cmd, &tree.rules()).expect_err("no runtime");
    assert!(KernelRefusal::from_io_error(&error).is_none());
}

#[tokio::test]
async fn a_missing_program_is_the_spawn_error_not_a_refusal() {
    assert_landlock_here();
    let tree = Tree::new();
    let missing = tree.write.join("no-such-program");
    let mut cmd = tokio::process::Command::new(&missing);
    let error = spawn_confined(
        &mut cmd,
        &tree.rules().with_program(&missing).with_require(true),
    )
    .expect_err("nothing to run");
    assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    assert!(KernelRefusal::from_io_error(&error).is_none());
}

#[test]
fn enforcement_serialises_as_the_words_of_the_run_result() {
    for (level, text) in [
        (Enforcement::Full, "full"),
        (Enforcement::Partial { abi: 4 }, "partial (abi 4)"),
        // A run without its private view is partial whatever the ABI.
        (Enforcement::Partial { abi: 7 }, "partial (abi 7)"),
        (Enforcement::Partial { abi: 0 }, "partial (abi 0)"),
        (Enforcement::None, "none"),
    ] {
        assert_eq!(level.to_string(), text);
        let json = serde_json::to_string(&level).expect("serialise");
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(
            serde_json::from_str::<Enforcement>(&json).expect("back"),
            level
        );
    }
    for bad in [
        "\"Full\"",
        "\"partial (abi 256)\"",
        "\"partial (abi -1)\"",
        "\"partial (abi x)\"",
        "\"partial\"",
        "4",
    ] {
        assert!(serde_json::from_str::<Enforcement>(bad).is_err(), "{bad}");
    }
    assert_eq!(Enforcement::for_abi(0), Enforcement::None);
    assert_eq!(Enforcement::for_abi(5), Enforcement::Partial { abi: 5 });
    assert_eq!(Enforcement::for_abi(FULL_ABI), Enforcement::Full);
    assert_eq!(Enforcement::for_abi(9), Enforcement::Full);
}

// ---- a real build tool misbehaving on its own ----

fn which(program: &str) -> PathBuf {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{program} is not installed"))
}

async fn make(tree: &Tree, target: &str) -> (bool, String, Enforcement) {
    let program = which("make");
    let rules = tree.rules().with_program(&program);
    let mut cmd = tokio::process::Command::new(&program);
    cmd.arg(target)
        .current_dir(&tree.write)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (child, enforced) = spawn_confined(&mut cmd, &rules).expect("spawn make");
    let output = child.wait_with_output().await.expect("wait make");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text, enforced)
}

#[tokio::test]
async fn make_recipes_that_escape_are_stopped_while_in_root_work_succeeds() {
    assert_landlock_here();
    let tree = Tree::new();
    let outside = tree.outside.display();
    let read_root = tree.read.display();
    let makefile = format!(
        "build:\n\
         \tmkdir -p out\n\
         \tcat {read_root}/data.txt > out/copied.txt\n\
         \techo built > out/result.txt\n\
         escape-write:\n\
         \techo pwned > {outside}/pwned.txt\n\
         escape-read:\n\
         \tcat {outside}/secret.txt > stolen.txt\n\
         escape-readonly:\n\
         \techo pwned > {read_root}/data.txt\n"
    );
    std::fs::write(tree.write.join("Makefile"), makefile).expect("Makefile");

    let (ok, log, enforced) = make(&tree, "build").await;
    assert_eq!(enforced, Enforcement::Full);
    assert!(ok, "in-root work failed:\n{log}");
    assert_eq!(
        std::fs::read_to_string(tree.write.join("out/result.txt")).expect("result"),
        "built\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.write.join("out/copied.txt")).expect("copied"),
        "in the read-only root\n"
    );

    let (ok, log, _) = make(&tree, "escape-write").await;
    assert!(!ok, "make wrote outside the roots:\n{log}");
    assert!(log.contains("Permission denied"), "{log}");
    assert!(!tree.outside.join("pwned.txt").exists());

    let (ok, log, _) = make(&tree, "escape-read").await;
    assert!(!ok, "make read outside the roots:\n{log}");
    assert!(log.contains("Permission denied"), "{log}");
    let stolen = std::fs::read_to_string(tree.write.join("stolen.txt")).unwrap_or_default();
    assert!(!stolen.contains("SECRET"), "the secret leaked: {stolen}");

    let (ok, log, _) = make(&tree, "escape-readonly").await;
    assert!(!ok, "make wrote into the read-only root:\n{log}");
    assert_eq!(
        std::fs::read_to_string(tree.read.join("data.txt")).expect("read root file"),
        "in the read-only root\n"
    );
}

#[tokio::test]
async fn rules_from_a_path_policy_confine_like_the_policy() {
    assert_landlock_here();
    let tree = Tree::new();
    let policy = agentcaps_paths::PathPolicy::builder()
        .allow(&tree.write)
        .allow_read_only(&tree.read)
        .build()
        .expect("policy");
    let probe = std::env::current_exe().expect("exe");
    let rules = KernelRules::from_policy(Some(&policy), &probe, false, true);
    assert!(rules.require && !rules.allow_network && rules.restrict_files);
    let ops = [
        format!("write:{}/new.txt", tree.write.display()),
        format!("read:{}/data.txt", tree.read.display()),
        format!("write:{}/new.txt", tree.read.display()),
        format!("read:{}/secret.txt", tree.outside.display()),
    ];
    let (results, enforced) = run_probe(&rules, &ops).await.expect("run");
    assert_eq!(enforced, Enforcement::Full);
    let got: Vec<_> = results.iter().map(|(_, r)| *r).collect();
    assert_eq!(got, [Ok(()), Ok(()), Err(13), Err(13)], "{results:?}");

    let unrestricted = KernelRules::from_policy(None, &probe, true, false);
    assert!(!unrestricted.restrict_files && unrestricted.allow_network);
    // Nothing but scopes to enforce: still a domain, still `full`.
    assert_eq!(would_enforce(&unrestricted), Enforcement::Full);
}

/// `git` run by itself inside the domain: works on a repository in the
/// writable root, and its hooks directory stays writable by programs (the
/// documented gap) — while a HOME whose config it cannot read is fatal to it
/// (the documented reason to list such files as read-only roots).
#[tokio::test]
async fn git_works_in_a_confined_repository() {
    assert_landlock_here();
    let tree = Tree::new();
    let git = which("git");
    let run = |args: &[&str], home: &Path| {
        let mut cmd = tokio::process::Command::new(&git);
        cmd.args(args)
            .current_dir(&tree.write)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let rules = tree.rules().with_program(&git);
        async move {
            let (child, enforced) = spawn_confined(&mut cmd, &rules).expect("spawn git");
            assert_eq!(enforced, Enforcement::Full);
            let output = child.wait_with_output().await.expect("wait git");
            (
                output.status.success(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        }
    };
    let home = tree.write.join("home");
    std::fs::create_dir_all(&home).expect("home");
    for args in [
        &["init", "-q"][..],
        &["add", "data.txt"],
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@example.com",
            "commit",
            "-qm",
            "first",
        ],
        &["log", "--oneline"],
    ] {
        let (ok, stderr) = run(args, &home).await;
        assert!(ok, "git {args:?} failed under the domain: {stderr}");
    }
    // A HOME outside the roots whose config exists: git cannot read it.
    std::fs::write(tree.outside.join(".gitconfig"), "[user]\n\tname = host\n").expect("cfg");
    let (ok, stderr) = run(&["status"], &tree.outside).await;
    assert!(!ok && stderr.contains("Permission denied"), "{stderr}");
}

/// The value of `field` in `/proc/.../status` text.
fn status_field<'a>(status: &'a str, field: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .map(str::trim)
}

/// The domain comes with `no_new_privs` and no capabilities: the child (seen
/// from outside, in `/proc/PID/status`) cannot gain privileges through
/// set-user-ID programs, and even as root holds no capability — while the
/// caller keeps its own.
#[tokio::test]
async fn the_child_runs_with_no_new_privs_and_no_capabilities() {
    assert_landlock_here();
    let tree = Tree::new();
    let sleep = which("sleep");
    let mut cmd = tokio::process::Command::new(&sleep);
    cmd.arg("5").kill_on_drop(true);
    let (mut child, enforced) =
        spawn_confined(&mut cmd, &tree.rules().with_program(&sleep)).expect("spawn sleep");
    assert_eq!(enforced, Enforcement::Full);
    let pid = child.id().expect("running");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let _ = child.kill().await;
    assert_eq!(status_field(&status, "NoNewPrivs"), Some("1"), "{status}");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(
            status_field(&status, set),
            Some("0000000000000000"),
            "{set}: {status}"
        );
    }
    let bounding = status_field(&status, "CapBnd").expect("CapBnd");
    let ours = std::fs::read_to_string("/proc/thread-self/status").expect("own status");
    if status_field(&ours, "CapEff") != Some("0000000000000000") {
        // Privileged here (root): the child lost what the caller keeps.
        assert_eq!(bounding, "0000000000000000", "{status}");
        assert_ne!(status_field(&ours, "CapBnd"), Some("0000000000000000"));
    }
}

/// Domains are reused for a moment for the same rules; a writable root that
/// is moved away and recreated between two commands must not stay writable
/// under its new name (the reused domain would hold the old directory).
#[tokio::test]
async fn a_root_replaced_between_commands_is_not_granted_under_its_new_name() {
    assert_landlock_here();
    let tree = Tree::new();
    let rules = tree.rules();
    let first = format!("write:{}/first.txt", tree.write.display());
    let (results, _) = run_probe(&rules, &[first]).await.expect("run");
    assert_eq!(results[0].1, Ok(()));

    let moved = tree.outside.join("old-write-root");
    std::fs::rename(&tree.write, &moved).expect("move the root away");
    std::fs::create_dir(&tree.write).expect("recreate the root");
    let ops = [
        format!("write:{}/second.txt", moved.display()),
        format!("write:{}/second.txt", tree.write.display()),
    ];
    let (results, _) = run_probe(&rules, &ops).await.expect("run");
    let got: Vec<_> = results.iter().map(|(_, r)| *r).collect();
    assert_eq!(got, [Err(13), Ok(())], "{results:?}");
}

/// Commands confined concurrently under rules that differ only in network
/// each get their own domain (domains are reused per rules, never across).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commands_with_different_rules_get_their_own_domains() {
    assert_landlock_here();
    let tree = Tree::new();
    let server = std::net::TcpListener::bind("127.0.0.1:0").expect("server");
    let connect = format!("connect:{}", server.local_addr().expect("addr"));
    let runs = (0..8).map(|i| {
        let rules = tree.rules().with_network(i % 2 == 0);
        let ops = [connect.clone()];
        async move {
            let (results, enforced) = run_probe(&rules, &ops).await.expect("run");
            (rules.allow_network, results[0].1, enforced)
        }
    });
    let mut handles = Vec::new();
    for run in runs {
        handles.push(tokio::spawn(run));
    }
    for handle in handles {
        let (network, result, enforced) = handle.await.expect("task");
        assert_eq!(enforced, Enforcement::Full);
        assert_eq!(
            result,
            if network { Ok(()) } else { Err(13) },
            "network {network}"
        );
    }
}
