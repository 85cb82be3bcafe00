//! Real programs under the development preset keep working in the view,
//! while secrets stay masked.

use std::time::Duration;

use agentcaps_shell::{CommandRequest, Exit, RunResult, ShellPolicy, danger};

use crate::support::{Project, applied, helper, run};

fn development(project: &Project) -> ShellPolicy {
    danger::development(&project.root)
        .allow_command("python3")
        .allow_command("sh")
        .path_policy(project.paths())
        .view_helper(helper())
        .timeout(Duration::from_secs(120))
        .build()
        .expect("policy")
}

fn ok(result: &RunResult) {
    assert_eq!(result.exit, Exit::Code(0), "{result:#?}");
    crate::support::assert_full(result);
}

fn git(project: &Project, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.email=t@example.invalid", "-c", "user.name=t"])
        .args(args)
        .current_dir(&project.root)
        .output()
        .expect("git");
    assert!(status.status.success(), "{status:?}");
}

#[test]
fn git_status_log_and_diff_read_the_repository() {
    let project = Project::new();
    std::fs::remove_dir_all(project.root.join(".git")).expect("fresh repo");
    git(&project, &["init", "-q", "."]);
    git(&project, &["add", "README.md", "src"]);
    git(&project, &["commit", "-qm", "first commit"]);
    std::fs::write(project.root.join("README.md"), "hello\nchanged\n").expect("edit");
    let policy = development(&project);

    let status = run(&policy, CommandRequest::argv(["git", "status", "--short"]));
    ok(&status);
    assert!(status.stdout.contains(" M README.md"), "{}", status.stdout);
    assert!(
        !status.stdout.contains(".env"),
        "a masked file is not even untracked: {}",
        status.stdout
    );
    let log = run(&policy, CommandRequest::argv(["git", "log", "--oneline"]));
    ok(&log);
    assert!(log.stdout.contains("first commit"));
    let diff = run(&policy, CommandRequest::argv(["git", "diff"]));
    ok(&diff);
    assert!(diff.stdout.contains("+changed"), "{}", diff.stdout);
    // Secrets stay masked for the same programs.
    let grep = run(
        &policy,
        CommandRequest::argv(["grep", "-r", "hunter2", "."]),
    );
    assert!(!grep.stdout.contains("hunter2"), "{}", grep.stdout);
}

#[test]
fn cargo_builds_a_small_crate_offline_and_its_target_lands() {
    let project = Project::new();
    std::fs::write(
        project.root.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .expect("manifest");
    let policy = development(&project);
    let result = run(
        &policy,
        CommandRequest::argv(["cargo", "build", "--offline"]),
    );
    ok(&result);
    assert!(applied(&result, "target"), "{:?}", result.changes);
    let binary = project.root.join("target/debug/tiny");
    let output = std::process::Command::new(&binary)
        .output()
        .expect("the built program runs");
    assert!(output.status.success());
}

#[test]
fn python_unittest_runs_a_small_package() {
    let project = Project::new();
    std::fs::create_dir(project.root.join("pkg")).expect("pkg");
    std::fs::write(
        project.root.join("pkg/__init__.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .expect("pkg");
    std::fs::write(
        project.root.join("test_pkg.py"),
        "import unittest\nimport pkg\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(pkg.add(2, 3), 5)\n\n    def test_secret_is_absent(self):\n        with self.assertRaises(FileNotFoundError):\n            open('.env')\n",
    )
    .expect("test");
    let policy = development(&project);
    let result = run(
        &policy,
        CommandRequest::argv(["python3", "-m", "unittest", "-v"]),
    );
    ok(&result);
    assert!(result.stderr.contains("Ran 2 tests"), "{}", result.stderr);
    assert!(result.stderr.contains("OK"), "{}", result.stderr);
}

#[test]
fn make_runs_a_two_rule_makefile() {
    let project = Project::new();
    std::fs::write(
        project.root.join("Makefile"),
        "all: out.txt\n\nout.txt: README.md\n\tcat README.md > out.txt\n\tcat .env >> out.txt || true\n",
    )
    .expect("makefile");
    let policy = development(&project);
    let result = run(&policy, CommandRequest::argv(["make"]));
    ok(&result);
    assert_eq!(project.read("out.txt").as_deref(), Some("hello\n"));
}

#[test]
fn the_development_presets_default_caches_are_overlaid_and_their_writes_discarded() {
    // Built from a policy file, as the CLI does: `development` overlays
    // ~/.cargo/registry, ~/.cargo/git, ~/.cache/pip and ~/.npm/_cacache of
    // this process's home. The command's home (inherited `HOME`) is
    // private: beneath it only the caches that exist here, writable, whose
    // writes are discarded; nothing else of ~/.cargo (its configuration,
    // its credentials) is there.
    let project = Project::new();
    let home = std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    agentcaps_shell::kernel::view::set_default_helper(helper());
    let config: agentcaps_shell::ShellPolicyConfig = toml::from_str(&format!(
        "working_directory = \"{}\"\npreset = \"development\"\nallowed_commands = [\"sh\"]\n",
        project.root.display()
    ))
    .expect("config");
    let policy = config.build(Some(project.paths())).expect("policy");
    let result = project.sh(
        &policy,
        "ls -A \"$HOME/.cargo\"; echo ---; \
         echo planted > \"$HOME/.cargo/registry/planted-987658\" && echo wrote; echo ---; \
         echo cfg > \"$HOME/.cargo/config.toml\" && echo config; echo ---; \
         cat \"$HOME/.cargo/registry/planted-987658\"",
    );
    ok(&result);
    let expected: Vec<&str> = ["git", "registry"]
        .into_iter()
        .filter(|d| home.join(".cargo").join(d).is_dir())
        .collect();
    let sections: Vec<&str> = result.stdout.split("---\n").collect();
    let listed: Vec<&str> = sections.first().expect("listing").lines().collect();
    assert_eq!(listed, expected, "{result:#?}");
    let registry = home.join(".cargo/registry");
    if registry.is_dir() {
        assert_eq!(sections.get(1).copied(), Some("wrote\n"), "{result:#?}");
        assert_eq!(sections.get(3).copied(), Some("planted\n"));
    }
    // The home itself is writable (and private).
    assert_eq!(sections.get(2).copied(), Some("config\n"), "{result:#?}");
    assert!(
        !registry.join("planted-987658").exists(),
        "a cache write landed"
    );
    // The host's cargo configuration, if it has one, is untouched.
    assert_ne!(
        std::fs::read_to_string(home.join(".cargo/config.toml"))
            .ok()
            .as_deref(),
        Some("cfg\n")
    );
    assert!(result.changes.expect("changes").is_empty());
}

#[test]
fn a_virtual_environment_made_in_the_view_runs_on_the_host() {
    // The system's interpreter (its link lands: /usr is the runtime every
    // view holds read-only); one installed under the home (pyenv) is not.
    let project = Project::new();
    let policy = development(&project);
    let result = project.sh(&policy, "/usr/bin/python3 -m venv --without-pip .venv");
    ok(&result);
    let changes = result.changes.as_ref().expect("changes");
    assert!(
        !changes.refused.iter().any(|c| c.path.starts_with(".venv")),
        "{changes:#?}"
    );
    let output = std::process::Command::new(project.root.join(".venv/bin/python3"))
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .expect("the venv's python runs");
    assert!(output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .ends_with(".venv"),
        "{output:?}"
    );
}
