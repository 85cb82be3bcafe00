//! Secrets are absent in the view, whatever the command does.

use std::os::unix::fs::PermissionsExt;

use agentcaps_shell::{CommandRequest, Exit, RunResult, ShellPolicy};

use crate::support::{Project, run};

#[test]
fn an_interpreter_finds_no_secret_anywhere_in_the_root() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "cat .env; cat config/.env.local; ls -a secrets; cat secrets/key.txt; grep -r SECRET= . ; echo done",
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(!result.stdout.contains("hunter2"), "{}", result.stdout);
    for secret in ["local-secret", "in-a-blocked-dir"] {
        assert!(!result.stdout.contains(secret), "{}", result.stdout);
    }
    // What grep did find is the script itself (which names the pattern).
    assert!(
        result
            .stdout
            .lines()
            .filter(|l| l.contains("SECRET="))
            .all(|l| l.starts_with("./run.sh:")),
        "{}",
        result.stdout
    );
    assert!(result.stdout.contains("done"));
    assert!(
        result.stderr.contains(".env: No such file or directory"),
        "{}",
        result.stderr
    );
    crate::support::assert_full(&result);
}

#[test]
fn credential_files_in_a_tool_installation_read_as_empty_while_the_tool_runs() {
    // A tool installed in a directory of its own (`…/opt/tool/bin/prog`,
    // bound whole and read-only in the view) next to the files package
    // managers keep tokens in, a CARGO_HOME inside it (as the Rust images'
    // `/usr/local/cargo`), a link to a credentials file, and entries the
    // path policy blocks (`.env`, `.ssh`, `*.pem`).
    let project = Project::new();
    let (_base, tool) = crate::support::tool_installation();
    let plant = |rel: &str, text: &str| {
        let path = tool.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("plant");
    };
    let secrets = [
        ".npmrc",
        ".pypirc",
        ".git-credentials",
        ".docker/config.json",
        "credentials.toml",
        "etc/npmrc",
        "cargo-home/credentials.toml",
        "cargo-home/credentials",
        "private/real-netrc",
        ".env",
        ".ssh/id_ed25519",
        "server.pem",
    ];
    let planted = |rel: &str| match rel {
        // npm's global configuration under the tool's prefix.
        "etc/npmrc" => "//registry.npmjs.org/:_authToken=TOKEN-etc/npmrc\n".to_owned(),
        _ => format!("TOKEN-{rel}\n"),
    };
    for rel in secrets {
        plant(rel, &planted(rel));
    }
    std::os::unix::fs::symlink("private/real-netrc", tool.join(".netrc")).expect("link");
    plant("lib/data.txt", "tool-data\n");
    plant("cargo-home/config.toml", "[net]\nretry = 3\n");
    let mut script = format!("#!/bin/sh\ncd {} || exit 9\n", tool.display());
    script.push_str(
        "for f in .npmrc .pypirc .netrc .git-credentials .docker/config.json \
         credentials.toml etc/npmrc cargo-home/credentials.toml cargo-home/credentials \
         private/real-netrc .env .ssh/id_ed25519 server.pem; do\n\
         printf '%s=[%s]\\n' \"$f\" \"$(cat \"$f\" 2>/dev/null)\"\n\
         done\n\
         ls -A .ssh\ncat lib/data.txt cargo-home/config.toml\n",
    );
    plant("bin/prog", &script);
    let prog = tool.join("bin/prog");
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let policy = project
        .policy()
        .allow_program(&prog)
        .env("CARGO_HOME", tool.join("cargo-home").display().to_string())
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv([prog.display().to_string()]));
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert_eq!(
        result.stdout,
        ".npmrc=[]\n.pypirc=[]\n.netrc=[]\n.git-credentials=[]\n.docker/config.json=[]\n\
         credentials.toml=[]\netc/npmrc=[]\ncargo-home/credentials.toml=[]\n\
         cargo-home/credentials=[]\nprivate/real-netrc=[]\n.env=[]\n.ssh/id_ed25519=[]\n\
         server.pem=[]\ntool-data\n[net]\nretry = 3\n",
        "{result:?}"
    );
    assert!(!result.stderr.contains("TOKEN"), "{}", result.stderr);
    crate::support::assert_full(&result);
    // The host's files are untouched.
    for rel in secrets {
        assert_eq!(
            std::fs::read_to_string(tool.join(rel)).expect("kept"),
            planted(rel)
        );
    }
}

/// Asserts that `result` ran in the full view and that no line of its
/// output holds `SECRET`.
fn no_secret_in_full_view(result: &agentcaps_shell::RunResult) {
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(!result.stdout.contains("SECRET"), "{}", result.stdout);
    assert!(!result.stderr.contains("SECRET"), "{}", result.stderr);
    crate::support::assert_full(result);
}

#[test]
fn masks_hold_in_directories_their_owner_cannot_list_or_write() {
    // Run as a user other than root (root lists and writes whatever the
    // modes say): a `.env` in a directory its owner can enter but not
    // list (`0300`), and a key in a read-only directory (`0555`, a
    // vendored package with a test certificate) next to files the command
    // needs.
    crate::support::as_non_root(
        "masking::masks_hold_in_directories_their_owner_cannot_list_or_write",
        || {
            let project = Project::new();
            let plant = |rel: &str, text: &str| {
                let path = project.root.join(rel);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(path, text).expect("plant");
            };
            plant("dropbox/.env", "SECRET=in-a-0300-dir\n");
            plant("vendor/pkg/test.pem", "SECRET=in-a-0555-dir\n");
            plant("vendor/pkg/.env.test", "SECRET=beside-it\n");
            plant("vendor/pkg/lib.py", "VALUE = 'vendored'\n");
            let mode = |rel: &str, bits: u32| {
                std::fs::set_permissions(
                    project.root.join(rel),
                    std::fs::Permissions::from_mode(bits),
                )
                .expect("chmod");
            };
            mode("dropbox", 0o300);
            mode("vendor/pkg", 0o555);
            mode("vendor", 0o555);
            let policy = project.policy().build().expect("policy");
            let result = project.sh(
                &policy,
                "cat dropbox/.env; cat vendor/pkg/test.pem vendor/pkg/.env.test; \
                 cat vendor/pkg/lib.py; ls -A vendor/pkg; echo done",
            );
            assert_eq!(result.exit, Exit::Code(0), "{result:?}");
            assert!(!result.stdout.contains("SECRET"), "{}", result.stdout);
            assert!(!result.stderr.contains("SECRET"), "{}", result.stderr);
            crate::support::assert_full_where_fuse_opens(&result);
            assert!(
                result
                    .stdout
                    .ends_with("VALUE = 'vendored'\nlib.py\ndone\n"),
                "{result:?}"
            );
            // The host's tree is as it was (so the temporary directory can
            // go).
            mode("dropbox", 0o700);
            mode("vendor", 0o755);
            mode("vendor/pkg", 0o755);
            assert_eq!(
                project.read("dropbox/.env").as_deref(),
                Some("SECRET=in-a-0300-dir\n")
            );
        },
    );
}

/// Makes `depth` nested directories named `name` under `top`, by handle
/// (their path is longer than a path may be), and writes `files` in the
/// deepest.
fn deep_tree(top: &std::path::Path, name: &str, depth: usize, files: &[(&str, &str)]) {
    use rustix::fs::{Mode, OFlags};
    let mut dir =
        rustix::fs::open(top, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).expect("the top");
    for _ in 0..depth {
        rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o755)).expect("mkdirat");
        dir = rustix::fs::openat(
            &dir,
            name,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .expect("openat");
    }
    for (file, text) in files {
        let fd = rustix::fs::openat(
            &dir,
            *file,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(0o644),
        )
        .expect("create");
        rustix::io::write(&fd, text.as_bytes()).expect("write");
    }
}

#[test]
fn a_secret_beyond_path_max_is_masked_too() {
    // 24 directories of 200 characters: the `.env` at the bottom has a
    // path of more than 4 800 bytes, beyond what a path may name.
    let project = Project::new();
    let name = "d".repeat(200);
    deep_tree(
        &project.root,
        &name,
        24,
        &[
            (".env", "SECRET=beyond-path-max\n"),
            ("ok.txt", "reachable\n"),
        ],
    );
    let result = project.python(
        &format!(
            "import os\n\
             for _ in range(24):\n    os.chdir('{name}')\n\
             print(open('ok.txt').read(), end='')\n\
             try:\n    print(open('.env').read())\n\
             except FileNotFoundError:\n    print('absent')\n"
        ),
        &[],
    );
    no_secret_in_full_view(&result);
    assert_eq!(result.stdout, "reachable\nabsent\n", "{result:?}");
}

/// Runs a Python command under `policy` that reads `plain.txt`, waits
/// for the host to plant secrets (and an ordinary file) in the root while
/// it runs, and then tries every one of them and lists what it sees.
fn host_plants_secrets_mid_run(project: &Project, policy: &ShellPolicy) -> RunResult {
    project.write("plain.txt", "plain\n");
    // The command waits for `go` to say so: a name it looked up before
    // the host made it would stay absent in the overlay, but the content
    // of a file of the real tree is read live.
    project.write("go", "wait");
    // One of its own for each run (tests run side by side in this process).
    let marker = format!(
        "late-{}",
        project.root.file_name().expect("a name").to_string_lossy()
    );
    // Once it has read `plain.txt`, the command says so to the host by a
    // process of its own whose command line holds the marker.
    let script = "import os, subprocess, sys, time\n\
         print('before', open('plain.txt').read(), end='')\n\
         subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', sys.argv[1]])\n\
         for _ in range(400):\n    \
             if open('go').read() == 'go':\n        break\n    \
             time.sleep(0.05)\n\
         else:\n    print('never went'); sys.exit(7)\n\
         for rel in ['.env.late', 'late/.env', 'late/key.pem', '.ssh/id_ed25519', 'moved.pem']:\n    \
             try:\n        print(rel, open(rel).read(), end='')\n    \
             except OSError as e:\n        print(rel, type(e).__name__)\n\
         print('late.txt', open('late/late.txt').read(), end='')\n\
         print('listed', sorted(os.listdir('.')), sorted(os.listdir('late')))\n";
    std::fs::write(project.root.join("run.py"), script).expect("script");
    let root = project.root.clone();
    let host = std::thread::spawn({
        let marker = marker.clone();
        move || {
            // Once the command has read `plain.txt`, the host writes.
            let start = std::time::Instant::now();
            while crate::support::processes_with(&format!("time.sleep(60) {marker}")).is_empty() {
                assert!(start.elapsed().as_secs() < 20, "the command never ran");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let plant = |rel: &str, text: &str| {
                let path = root.join(rel);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                std::fs::write(path, text).expect("plant");
            };
            plant(".env.late", "SECRET=beside-the-project\n");
            plant("late/.env", "SECRET=in-a-new-directory\n");
            plant("late/key.pem", "SECRET=a-new-key\n");
            plant("late/late.txt", "visible\n");
            plant(".ssh/id_ed25519", "SECRET=a-new-ssh-directory\n");
            // A file the command already read, renamed to a blocked name.
            std::fs::write(root.join("plain.txt"), "SECRET=renamed-in\n").expect("rewrite");
            std::fs::rename(root.join("plain.txt"), root.join("moved.pem")).expect("rename");
            std::fs::write(root.join("go"), "go").expect("go");
        }
    });
    let result = run(
        policy,
        CommandRequest::argv(["python3", "run.py", marker.as_str()]),
    );
    host.join().expect("the host's writer");
    result
}

#[test]
fn what_the_host_creates_while_the_command_runs_is_judged_by_its_name() {
    // The masks are planned when the command starts; the names layer
    // beneath them judges every name when it is looked up.
    let project = Project::new();
    let policy = project
        .policy()
        .allow_command("python3")
        .build()
        .expect("policy");
    let result = host_plants_secrets_mid_run(&project, &policy);
    no_secret_in_full_view(&result);
    let expected = "before plain\n\
        .env.late FileNotFoundError\n\
        late/.env FileNotFoundError\n\
        late/key.pem FileNotFoundError\n\
        .ssh/id_ed25519 FileNotFoundError\n\
        moved.pem FileNotFoundError\n\
        late.txt visible\n";
    assert!(result.stdout.starts_with(expected), "{result:?}");
    let listed = result.stdout.lines().last().expect("the listing");
    for hidden in [".env.late", "moved.pem", "'.env'", "key.pem"] {
        assert!(!listed.contains(hidden), "{hidden}: {listed}");
    }
    assert!(listed.ends_with(" ['late.txt']"), "{listed}");
    // The host's files are untouched.
    assert_eq!(
        project.read("late/.env").as_deref(),
        Some("SECRET=in-a-new-directory\n")
    );
}

#[test]
fn without_the_names_layer_a_secret_created_mid_run_shows_and_the_run_says_partial() {
    // The seam that leaves the names layer out, as on a host where FUSE
    // cannot be had: the masks alone do not hold what appears later, and
    // the run does not claim `full`.
    let project = Project::new();
    let policy = project
        .policy()
        .allow_command("python3")
        .skip_names_layer_in_view(true)
        .build()
        .expect("policy");
    let result = host_plants_secrets_mid_run(&project, &policy);
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(
        result
            .stdout
            .contains("late/.env SECRET=in-a-new-directory\n"),
        "{result:?}"
    );
    assert_ne!(result.enforced.to_string(), "full", "{result:?}");
    let reason = result.enforced_reason.as_deref().unwrap_or_default();
    assert!(reason.contains("names layer"), "{reason}");
    assert!(
        reason.contains("the host creates while the command runs"),
        "{reason}"
    );
}

#[test]
fn a_root_beneath_a_tool_installation_keeps_its_masks() {
    // The view holds the installation `…/opt/tool` whole; the project is
    // a root inside it. The root's masks hold there too.
    let (_base, tool) = crate::support::tool_installation();
    let root = tool.join("projects/app");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join(".env"), "SECRET=under-an-installation\n").expect("plant");
    std::fs::write(root.join("README.md"), "app\n").expect("readme");
    let prog = tool.join("bin/prog");
    std::fs::create_dir_all(prog.parent().expect("bin")).expect("mkdir");
    std::fs::write(
        &prog,
        format!(
            "#!/bin/sh\ncat {root}/README.md; cat {root}/.env; echo done\n",
            root = root.display()
        ),
    )
    .expect("prog");
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let paths = agentcaps_paths::PathPolicy::builder()
        .allow(&root)
        .build()
        .expect("paths");
    let policy = agentcaps_shell::ShellPolicy::builder(&root)
        .allow_program(&prog)
        .path_policy(paths)
        .view_helper(crate::support::helper())
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv([prog.display().to_string()]));
    no_secret_in_full_view(&result);
    assert_eq!(result.stdout, "app\ndone\n", "{result:?}");
}
