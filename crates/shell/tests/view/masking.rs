//! Secrets are absent in the view, whatever the command does.

use std::os::unix::fs::PermissionsExt;

use agentcaps_shell::{CommandRequest, Exit};

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
    assert_eq!(
        result.enforced.to_string(),
        "full",
        "{:?}",
        result.enforced_reason
    );
}

#[test]
fn credential_files_in_a_tool_installation_read_as_empty_while_the_tool_runs() {
    // A tool installed in a directory of its own (`…/opt/tool/bin/prog`,
    // bound whole and read-only in the view) next to the files package
    // managers keep tokens in, a CARGO_HOME inside it (as the Rust images'
    // `/usr/local/cargo`), a link to a credentials file, and entries the
    // path policy blocks (`.env`, `.ssh`, `*.pem`).
    let project = Project::new();
    let base = tempfile::tempdir().expect("tempdir");
    let tool = base
        .path()
        .canonicalize()
        .expect("canonical")
        .join("opt/tool");
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
    assert_eq!(
        result.enforced.to_string(),
        "full",
        "{:?}",
        result.enforced_reason
    );
    // The host's files are untouched.
    for rel in secrets {
        assert_eq!(
            std::fs::read_to_string(tool.join(rel)).expect("kept"),
            planted(rel)
        );
    }
}
