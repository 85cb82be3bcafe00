//! Nothing outlives the command; nothing of the host is reachable.

use std::time::Duration;

use agentcaps_shell::{Exit, ShellError};

use crate::support::{Project, processes_with};

#[test]
fn a_setsid_double_fork_grandchild_is_dead_when_the_call_returns() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "setsid sh -c '(sleep 987651 &) ; (sleep 987651 &)' ; echo started",
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(result.stdout.contains("started"));
    assert_eq!(processes_with("sleep 987651"), Vec::<String>::new());
}

#[test]
fn on_timeout_the_whole_namespace_dies_too() {
    let project = Project::new();
    let policy = project
        .policy()
        .timeout(Duration::from_millis(1500))
        .build()
        .expect("policy");
    let result = project.sh(
        &policy,
        "setsid sh -c '(sleep 987652 &)' ; echo started; sleep 100",
    );
    assert!(result.timed_out, "{result:?}");
    assert_eq!(processes_with("sleep 987652"), Vec::<String>::new());
}

#[test]
fn the_writes_are_judged_only_after_every_process_of_the_view_is_dead() {
    // A background writer that never stops: by the time the call returns
    // (and the writes were judged and committed) it must be dead, and the
    // committed file must not change afterwards.
    let project = Project::new();
    std::fs::write(
        project.root.join("writer-987653.sh"),
        "while :; do echo x >> busy.txt; done\n",
    )
    .expect("writer");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "sh writer-987653.sh & while [ ! -s busy.txt ]; do :; done; echo started",
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(crate::support::applied(&result, "busy.txt"), "{result:?}");
    assert_eq!(processes_with("writer-987653"), Vec::<String>::new());
    let committed = project.read("busy.txt").expect("busy.txt landed");
    assert!(!committed.is_empty());
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(project.read("busy.txt"), Some(committed));
}

#[test]
fn a_cancelled_call_kills_the_whole_view() {
    // The caller drops the run's future (a cancelled tool call): the
    // helper is killed, and its first process and everything below it die
    // with it.
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    std::fs::write(
        project.root.join("run.sh"),
        "setsid sh -c '(sleep 987654 &)' ; sleep 987654",
    )
    .expect("script");
    let command = policy
        .validate(&agentcaps_shell::CommandRequest::argv(["sh", "run.sh"]))
        .expect("validated");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let run = policy.run(command);
        tokio::pin!(run);
        // Until both sleeps run in the view, then the call is cancelled.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while processes_with("sleep 987654").len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the view never ran");
            let _ = tokio::time::timeout(Duration::from_millis(20), &mut run).await;
        }
    });
    drop(runtime);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !processes_with("sleep 987654").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "still running after the call was cancelled: {:?}",
            processes_with("sleep 987654")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn udp_to_the_host_loopback_and_unix_sockets_outside_the_roots_are_unreachable() {
    let project = Project::new();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let port = udp.local_addr().expect("addr").port();
    let outside = tempfile::tempdir().expect("tempdir");
    let socket_path = outside.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).expect("unix");
    listener.set_nonblocking(true).expect("nonblocking");
    std::fs::write(
        project.root.join("probe.py"),
        format!(
            "import socket\n\
             try:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {port})); print('udp sent')\n\
             except OSError as e:\n    print('udp', e)\n\
             try:\n    u = socket.socket(socket.AF_UNIX); u.connect('{}'); u.send(b'leak'); print('unix connected')\n\
             except OSError as e:\n    print('unix', e)\n",
            socket_path.display()
        ),
    )
    .expect("probe");
    let policy = project
        .policy()
        .allow_command("python3")
        .env("PATH", "/usr/bin:/bin")
        .build()
        .expect("policy");
    let result = crate::support::run(
        &policy,
        agentcaps_shell::CommandRequest::argv(["python3", "probe.py"]),
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(
        !result.stdout.contains("unix connected"),
        "{}",
        result.stdout
    );
    assert!(
        result.stdout.contains("unix ["),
        "the probe ran: {}",
        result.stdout
    );
    let mut buffer = [0u8; 16];
    assert!(
        udp.recv(&mut buffer).is_err(),
        "a datagram reached the host: {}",
        result.stdout
    );
    assert!(
        listener.accept().is_err(),
        "a connection reached the host socket"
    );
}

#[test]
fn a_descriptor_the_host_left_open_is_not_readable() {
    let project = Project::new();
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "HOST-FD-SECRET\n").expect("secret");
    let file = std::fs::File::open(&secret).expect("open");
    // Inheritable, as a careless host might leave it.
    rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty()).expect("setfd");
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        // (`sh` redirects only one-digit descriptors; other tests running
        // beside this one may have pushed it higher.)
        &if fd < 10 {
            format!("cat <&{fd}; cat /proc/self/fd/{fd}; ls /proc/self/fd; echo done")
        } else {
            format!("cat /proc/self/fd/{fd}; ls /proc/self/fd; echo done")
        },
    );
    drop(file);
    assert!(result.stdout.contains("done"), "{result:?}");
    assert!(
        !result.stdout.contains("HOST-FD-SECRET"),
        "{}",
        result.stdout
    );
}

#[test]
fn without_the_view_the_result_says_partial_and_why() {
    let project = Project::new();
    let policy = project
        .policy()
        .private_view(false)
        .build()
        .expect("policy");
    let result = project.sh(&policy, "echo hi > note.txt");
    assert_eq!(result.exit, Exit::Code(0));
    assert!(
        result.enforced.to_string().starts_with("partial"),
        "{}",
        result.enforced
    );
    let reason = result.enforced_reason.expect("a reason");
    assert!(reason.contains("turned the private view off"), "{reason}");
    assert!(result.changes.is_none());

    let strict = project
        .policy()
        .private_view(false)
        .require_kernel_enforcement(true)
        .build()
        .expect("policy");
    let command = strict
        .validate(&agentcaps_shell::CommandRequest::argv(["cat", "README.md"]))
        .expect("valid");
    match strict.run_blocking(command) {
        Err(error @ ShellError::KernelEnforcement { .. }) => {
            assert_eq!(error.rule(), "require-kernel-enforcement");
            assert!(error.to_string().contains("nothing ran"), "{error}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn the_view_holds_no_home_and_a_private_tmp() {
    let project = Project::new();
    let marker = std::env::temp_dir().join(format!("h13-host-tmp-{}", std::process::id()));
    std::fs::write(&marker, "host tmp").expect("marker");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        &format!(
            "cat {}; ls /root /home /var/run/docker.sock /etc/shadow; echo x > /tmp/mine; cat /tmp/mine; echo done",
            marker.display()
        ),
    );
    let _ = std::fs::remove_file(&marker);
    assert!(result.stdout.contains("x\ndone"), "{result:?}");
    assert!(!result.stdout.contains("host tmp"));
    assert!(
        result.stderr.contains("No such file or directory"),
        "{}",
        result.stderr
    );
    assert!(
        !result.stderr.contains("Permission denied"),
        "absent means ENOENT: {}",
        result.stderr
    );
}

#[test]
fn the_private_loopback_works_for_the_command_itself() {
    let project = Project::new();
    std::fs::write(
        project.root.join("echo.py"),
        "import socket\n\
         a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind(('127.0.0.1', 0))\n\
         b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.sendto(b'ping', a.getsockname())\n\
         print(a.recv(16).decode())\n\
         t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen(1)\n\
         c = socket.create_connection(t.getsockname()); s, _ = t.accept(); c.send(b'tcp ok'); print(s.recv(16).decode())\n",
    )
    .expect("script");
    let policy = project
        .policy()
        .allow_command("python3")
        .env("PATH", "/usr/bin:/bin")
        .build()
        .expect("policy");
    let result = crate::support::run(
        &policy,
        agentcaps_shell::CommandRequest::argv(["python3", "echo.py"]),
    );
    assert_eq!(result.stdout, "ping\ntcp ok\n", "{result:?}");
}

#[test]
fn the_network_key_gives_the_host_network_only_to_the_development_preset() {
    let parse = |text: &str| -> agentcaps_shell::ShellPolicyConfig {
        toml::from_str(text).expect("config")
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let with_dir = |text: &str| {
        format!(
            "working_directory = \"{}\"\npath_policy = false\n{text}",
            dir.path().display()
        )
    };
    let host = parse(&with_dir("network = \"host\""));
    let error = host.build(None).expect_err("host needs development");
    assert!(
        error
            .to_string()
            .contains("only with preset = \"development\""),
        "{error}"
    );
    let host_dev = parse(&with_dir("preset = \"development\"\nnetwork = \"host\""));
    assert!(host_dev.build(None).expect("allowed").allows_network());
    // The proxy: a private network; without a proxy plugged in (the
    // facade plugs in the egress judge), no way out at all.
    let proxy = parse(&with_dir("network = \"proxy\""));
    let built = proxy.build(None).expect("proxy");
    assert!(!built.allows_network());
    assert!(built.network_proxy().is_none());
    let none = parse(&with_dir("network = \"none\""));
    assert!(!none.build(None).expect("none").allows_network());
    let clash = parse(&with_dir("network = \"none\"\nallow_network = true"));
    assert!(clash.build(None).is_err());
}

#[test]
fn writes_to_a_cache_directory_are_seen_by_the_command_and_then_discarded() {
    let project = Project::new();
    let cache = tempfile::tempdir().expect("cache");
    let cache_path = cache.path().canonicalize().expect("canonical");
    std::fs::write(cache_path.join("pkg.tar"), "cached bytes\n").expect("cached");
    let policy = project
        .policy()
        .cache_dirs([cache_path.clone()])
        .build()
        .expect("policy");
    let dir = cache_path.display();
    let result = project.sh(
        &policy,
        &format!("cat {dir}/pkg.tar; echo planted > {dir}/hook.py; echo more >> {dir}/pkg.tar; cat {dir}/hook.py"),
    );
    assert_eq!(result.stdout, "cached bytes\nplanted\n", "{result:?}");
    assert!(
        !cache_path.join("hook.py").exists(),
        "a write to a cache must not land"
    );
    assert_eq!(
        std::fs::read_to_string(cache_path.join("pkg.tar")).expect("pkg"),
        "cached bytes\n"
    );
    assert!(result.changes.expect("changes").is_empty());
}

#[test]
fn a_call_cancelled_at_any_moment_after_start_leaves_nothing_running() {
    // The call is dropped at many moments right after it starts: before
    // the helper entered its namespaces, while the view is being built,
    // as the command starts, while it runs. Whatever the moment, nothing
    // of the run survives: no helper stage, no command, no `setsid`
    // grandchild. The staging directory's name (in every helper's command
    // line) and the command's own arguments carry the marker.
    let project = Project::new();
    let marker = format!("h13cancel{}", std::process::id());
    let base = tempfile::Builder::new()
        .prefix(&marker)
        .tempdir()
        .expect("staging base");
    let policy = project
        .policy()
        .staging_dir(base.path())
        .build()
        .expect("policy");
    std::fs::write(
        project.root.join("run.sh"),
        format!("setsid sh -c 'sleep 987656; :' {marker} & sh -c 'sleep 987656; :' {marker}"),
    )
    .expect("script");
    // Every half millisecond through the first 30 ms (start-up), then a
    // few later moments.
    let delays = (0..60u64)
        .map(|n| n * 500)
        .chain([40_000, 60_000, 100_000, 200_000]);
    for delay_us in delays {
        let command = policy
            .validate(&agentcaps_shell::CommandRequest::argv(["sh", "run.sh"]))
            .expect("validated");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let ended = runtime.block_on(async {
            tokio::time::timeout(Duration::from_micros(delay_us), policy.run(command))
                .await
                .is_ok()
        });
        drop(runtime);
        assert!(!ended, "the run ended by itself after {delay_us} µs");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let mut left = processes_with(&marker);
            left.extend(processes_with("sleep 987656"));
            if left.is_empty() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "cancelled after {delay_us} µs, still running: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let staged: Vec<_> = std::fs::read_dir(base.path())
            .expect("base")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(
            staged.is_empty(),
            "left behind after {delay_us} µs: {staged:?}"
        );
    }
}

#[test]
fn a_command_gets_a_private_empty_home_and_never_the_hosts() {
    // The host's home holds a key, notes, and cargo's configuration next
    // to its download cache. The command's `HOME` is that directory's
    // path; what it finds there is a private, empty, writable directory
    // holding only the cache (overlaid, its writes discarded).
    let project = Project::new();
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path().canonicalize().expect("canonical");
    let plant = |rel: &str, text: &str| {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("plant");
    };
    plant(".ssh/id_ed25519", "HOST-KEY\n");
    plant("notes.txt", "HOST-HOME\n");
    plant(
        ".cargo/config.toml",
        "[build]\nrustc-wrapper = \"/tmp/evil\"\n",
    );
    plant(".cargo/registry/cache/pkg.crate", "crate bytes\n");
    let before = std::fs::read_dir(&home).expect("home").count();
    let policy = project
        .policy()
        .env("HOME", home.display().to_string())
        .cache_dirs([home.join(".cargo/registry")])
        .build()
        .expect("policy");
    let result = project.sh(
        &policy,
        "echo \"home=$HOME\"; ls -A \"$HOME\"; ls -A \"$HOME/.cargo\"; \
         cat \"$HOME/notes.txt\" \"$HOME/.ssh/id_ed25519\" \"$HOME/.cargo/config.toml\"; \
         cat \"$HOME/.cargo/registry/cache/pkg.crate\"; \
         echo mine > \"$HOME/x\" && cat \"$HOME/x\"; \
         mkdir -p \"$HOME/.config/tool\" && echo cfg > \"$HOME/.config/tool/rc\"; \
         echo planted > \"$HOME/.cargo/registry/hook.rs\"; \
         echo 'rustc-wrapper = \"/x\"' > \"$HOME/.cargo/config.toml\"; echo done",
    );
    assert_eq!(
        result.stdout,
        format!(
            "home={}\n.cargo\nregistry\ncrate bytes\nmine\ndone\n",
            home.display()
        ),
        "{result:?}"
    );
    assert!(
        result.stderr.matches("No such file or directory").count() == 3,
        "absent, not denied: {}",
        result.stderr
    );
    // Nothing the command wrote reached the host's home.
    assert_eq!(std::fs::read_dir(&home).expect("home").count(), before);
    for rel in ["x", ".config", ".cargo/registry/hook.rs"] {
        assert!(
            std::fs::symlink_metadata(home.join(rel)).is_err(),
            "{rel} landed in the host's home"
        );
    }
    assert_eq!(
        std::fs::read_to_string(home.join(".cargo/config.toml")).expect("config"),
        "[build]\nrustc-wrapper = \"/tmp/evil\"\n"
    );
    assert!(result.changes.expect("changes").is_empty());
}

#[test]
fn without_home_set_the_users_home_from_passwd_is_private_too() {
    // The default preset passes no `HOME`; programs then look up the
    // user's home in /etc/passwd. That directory too is private and empty
    // in the view: none of the host's entries there is visible.
    let project = Project::new();
    std::fs::write(
        project.root.join("home.py"),
        "import os, pwd\n\
         home = pwd.getpwuid(os.geteuid()).pw_dir\n\
         print('HOME' in os.environ)\n\
         print(sorted(os.listdir(home)))\n\
         open(os.path.join(home, 'written-987657'), 'w').write('x')\n\
         print('wrote')\n",
    )
    .expect("script");
    let policy = project
        .policy()
        .allow_command("python3")
        .env("PATH", "/usr/bin:/bin")
        .build()
        .expect("policy");
    let result = crate::support::run(
        &policy,
        agentcaps_shell::CommandRequest::argv(["python3", "home.py"]),
    );
    let host_home = {
        let text = std::fs::read_to_string("/etc/passwd").expect("passwd");
        let uid = rustix::process::geteuid().as_raw().to_string();
        text.lines()
            .map(|l| l.split(':').collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&uid.as_str()))
            .and_then(|f| f.get(5).map(std::path::PathBuf::from))
            .expect("this user's home")
    };
    let mut lines = result.stdout.lines();
    assert_eq!(lines.next(), Some("False"), "{result:?}");
    let listed = lines.next().expect("the listing");
    // Only what the view itself puts there (the roots, when a root lies
    // beneath the home) may appear.
    if let Ok(entries) = std::fs::read_dir(&host_home) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if project.root.starts_with(host_home.join(&name)) {
                continue;
            }
            assert!(
                !listed.contains(&format!("'{name}'")),
                "the host's {name} is visible: {listed}"
            );
        }
    }
    assert_eq!(lines.next(), Some("wrote"), "{result:?}");
    assert!(!host_home.join("written-987657").exists());
}

#[test]
fn check_shell_says_which_mode_applies_from_a_real_probe_and_runs_agree() {
    use agentcaps_shell::{CommandRequest, ShellPolicy};
    let project = Project::new();
    let planned_and_ran = |policy: &ShellPolicy| {
        let request = CommandRequest::argv(["cat", "README.md"]);
        let planned = policy.planned_enforcement(&policy.validate(&request).expect("valid"));
        let ran = crate::support::run(policy, request);
        assert_eq!(ran.stdout, "hello\n", "{ran:?}");
        (planned, (ran.enforced, ran.enforced_reason))
    };
    // Here the view can be built: the probe finds so, and a run agrees.
    let policy = project.policy().build().expect("policy");
    let (planned, ran) = planned_and_ran(&policy);
    assert_eq!(planned, ran);
    assert!(
        planned
            .1
            .as_deref()
            .is_none_or(|reason| !reason.contains("view")),
        "{planned:?}"
    );
    // Without its names layer (as where FUSE cannot be had), both say
    // `partial`, and why, alike.
    let no_names = project
        .policy()
        .skip_names_layer_in_view(true)
        .build()
        .expect("policy");
    let (planned, ran) = planned_and_ran(&no_names);
    assert_eq!(planned, ran);
    assert_ne!(planned.0.to_string(), "full");
    assert!(
        planned
            .1
            .as_deref()
            .is_some_and(|reason| reason.starts_with("the view has no names layer")),
        "{planned:?}"
    );
    // A helper that cannot build a view (a program that is no helper):
    // the probe finds out, says why, and the run falls back as it said.
    let broken = project
        .policy()
        .view_helper("/bin/true")
        .build()
        .expect("policy");
    let (planned, ran) = planned_and_ran(&broken);
    assert!(planned.0.to_string().starts_with("partial"), "{planned:?}");
    let reason = planned.1.clone().expect("a reason");
    assert!(reason.contains("did not answer its probe"), "{reason}");
    // Only the probe decides: the run falls back exactly as planned, and
    // says the same.
    assert_eq!(planned, ran);
    // A staging base the host named that cannot be a private directory
    // of this user (here: one that cannot be made, in /proc): views exist
    // on this machine, so commands fail rather than run without one.
    let nowhere = project
        .policy()
        .staging_dir("/proc/agentcaps-probe")
        .build()
        .expect("policy");
    let request = CommandRequest::argv(["cat", "README.md"]);
    let validated = nowhere.validate(&request).expect("valid");
    let planned = nowhere.planned_enforcement(&validated);
    assert_eq!(planned.0.to_string(), "none", "{planned:?}");
    assert!(
        planned
            .1
            .as_deref()
            .is_some_and(|r| r.contains("commands will not run") && r.contains("staging directory")),
        "{planned:?}"
    );
    let error = nowhere.run_blocking(validated).expect_err("refused");
    assert_eq!(error.rule(), "view-failed", "{error}");
    // The view turned off.
    let off = project
        .policy()
        .private_view(false)
        .build()
        .expect("policy");
    let (planned, ran) = planned_and_ran(&off);
    assert_eq!(planned, ran);
    assert!(
        planned
            .1
            .as_deref()
            .is_some_and(|r| r.contains("turned the private view off")),
        "{planned:?}"
    );
}

#[test]
fn the_views_dev_can_be_listed_and_holds_only_the_minimal_devices() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(&policy, "ls -A /dev; ls -A /dev/shm; echo done");
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    let listed: Vec<&str> = result.stdout.lines().collect();
    assert_eq!(
        listed,
        [
            "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
            "urandom", "zero", "done"
        ],
        "{result:?}"
    );
}
