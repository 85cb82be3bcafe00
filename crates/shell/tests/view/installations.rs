//! A program installed under the home brings its own installation into
//! the view, and nothing else of the home.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use agentcaps_shell::{CommandRequest, Exit};

use crate::support::{Project, run};

fn plant(at: &Path, text: &str) {
    std::fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
    std::fs::write(at, text).expect("plant");
}

/// `pythonX.Y` of the host's `python3`.
fn python_version() -> String {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print('python%d.%d' % sys.version_info[:2])",
        ])
        .output()
        .expect("python3");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

#[test]
fn a_tool_in_local_bin_brings_its_packages_and_nothing_else_of_local() {
    // `pip --user` installs a script in `~/.local/bin` and its package in
    // `~/.local/lib/pythonX.Y/site-packages`; beside them `~/.local` holds
    // the desktop's keyrings, shell histories and other programs' data.
    let project = Project::new();
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path().canonicalize().expect("canonical");
    let site = home.join(format!(".local/lib/{}/site-packages", python_version()));
    plant(
        &site.join("usertool/__init__.py"),
        "GREETING = 'from the user site'\n",
    );
    plant(&home.join(".local/share/keyrings/x"), "SECRET=keyring\n");
    plant(&home.join(".local/state/hist"), "SECRET=history\n");
    plant(
        &home.join(".local/bin/other"),
        "#!/bin/sh\necho SECRET=other\n",
    );
    plant(&home.join(".config/app/token"), "SECRET=config\n");
    let tool = home.join(".local/bin/usertool");
    plant(
        &tool,
        &format!(
            "#!/usr/bin/python3\n\
             import os, usertool\n\
             print(usertool.GREETING)\n\
             home = {home:?}\n\
             for rel in ['.local/share/keyrings/x', '.local/state/hist', '.local/bin/other', '.config/app/token']:\n    \
                 print(rel, os.path.exists(os.path.join(home, rel)))\n\
             print(sorted(os.listdir(os.path.join(home, '.local'))))\n",
            home = home.display().to_string()
        ),
    );
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let policy = project
        .policy()
        .allow_program(&tool)
        .env("HOME", home.display().to_string())
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv([tool.display().to_string()]));
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert_eq!(
        result.stdout,
        "from the user site\n\
         .local/share/keyrings/x False\n\
         .local/state/hist False\n\
         .local/bin/other False\n\
         .config/app/token False\n\
         ['bin', 'lib']\n",
        "{result:?}"
    );
    crate::support::assert_full(&result);
}

#[test]
fn a_tool_in_a_virtual_environment_brings_that_environment_only() {
    // pipx and `uv tool` keep each tool in a virtual environment under
    // `~/.local/share` and link its entry point into `~/.local/bin`.
    let project = Project::new();
    let home_dir = tempfile::tempdir().expect("home");
    let home = home_dir.path().canonicalize().expect("canonical");
    let venv = home.join(".local/share/pipx/venvs/vtool");
    plant(&venv.join("pyvenv.cfg"), "home = /usr/bin\n");
    plant(&venv.join("lib/data.txt"), "venv data\n");
    plant(
        &home.join(".local/share/pipx/venvs/other/secret"),
        "SECRET=other-venv\n",
    );
    plant(&home.join(".local/share/keyrings/x"), "SECRET=keyring\n");
    let entry = venv.join("bin/vtool");
    plant(
        &entry,
        &format!(
            "#!/bin/sh\ncat {venv}/lib/data.txt\n\
             ls -A {home}/.local/share/pipx/venvs {home}/.local/share 2>&1\n",
            venv = venv.display(),
            home = home.display()
        ),
    );
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let link = home.join(".local/bin/vtool");
    std::fs::create_dir_all(link.parent().expect("parent")).expect("mkdir");
    std::os::unix::fs::symlink(&entry, &link).expect("link");
    let policy = project
        .policy()
        .allow_program(&link)
        .env("HOME", home.display().to_string())
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv([link.display().to_string()]));
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert_eq!(
        result.stdout,
        format!(
            "venv data\n{home}/.local/share:\npipx\n\n{home}/.local/share/pipx/venvs:\nvtool\n",
            home = home.display()
        ),
        "{result:?}"
    );
}
