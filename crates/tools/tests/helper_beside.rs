//! The `agentcaps` binary starts `agentcaps-helper`, the small view helper
//! installed beside it, for each view — but only one built from the same
//! sources that no one else may change: a helper from another build, one
//! others may write, a link, or one in a directory others may write is
//! passed over, and `agentcaps` is its own helper.
#![cfg(target_os = "linux")]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// An installation in a fresh directory: a copy of `agentcaps` and, beside
/// it (as `helper.sh`, for the test to put in place), a helper that notes
/// each start in `marker` and then becomes the real helper; it carries the
/// mark of this build's sources, as the real helper does.
struct Install {
    dir: tempfile::TempDir,
    marker: PathBuf,
}

impl Install {
    fn new() -> Self {
        Self::with_mark(agentcaps::shell::kernel::view::sources_mark())
    }

    /// An installation whose helper carries `mark`.
    fn with_mark(mark: &str) -> Self {
        let dir = tempfile::tempdir().expect("install dir");
        std::fs::copy(
            env!("CARGO_BIN_EXE_agentcaps"),
            dir.path().join("agentcaps"),
        )
        .expect("copy agentcaps");
        let marker = dir.path().join("helper-started");
        let script = format!(
            "#!/bin/sh\n# {mark}\necho \"$1\" >> '{}'\nexec '{}' \"$@\"\n",
            marker.display(),
            env!("CARGO_BIN_EXE_agentcaps-helper")
        );
        std::fs::write(dir.path().join("helper.sh"), script).expect("script");
        mode(&dir.path().join("helper.sh"), 0o755);
        Self { dir, marker }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `agentcaps run --json` of `cat a.txt` in `tree`: its result, and
    /// the stages the helper beside it was started for.
    fn run(&self, tree: &common::Tree) -> (serde_json::Value, String) {
        let policy = tree.policy("allowed_commands = [\"cat\"]\n");
        std::fs::write(tree.root.join("a.txt"), "hi\n").expect("a.txt");
        let tmp = tempfile::tempdir().expect("tmp");
        let out = std::process::Command::new(self.path("agentcaps"))
            .args(["run", "--json", "--policy"])
            .arg(&policy)
            .args(["--", "cat", "a.txt"])
            .current_dir(&tree.root)
            .env("TMPDIR", tmp.path())
            .output()
            .expect("agentcaps runs");
        let json = common::json_of(&out);
        let started = std::fs::read_to_string(&self.marker).unwrap_or_default();
        let _ = std::fs::remove_file(&self.marker);
        (json["result"].clone(), started)
    }
}

fn mode(path: &Path, bits: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).expect("chmod");
}

#[test]
fn the_helper_beside_it_builds_each_view() {
    let tree = common::Tree::new();
    let install = Install::new();
    std::fs::rename(install.path("helper.sh"), install.path("agentcaps-helper")).expect("install");
    let (result, started) = install.run(&tree);
    assert_eq!(result["stdout"], "hi\n", "{result}");
    assert_eq!(result["enforced"], "full", "{result}");
    assert_eq!(
        started, "__agentcaps-view\n",
        "the view's helper is the one beside it"
    );
    // The real helper carries the mark the runner looks for.
    let real = std::fs::read(env!("CARGO_BIN_EXE_agentcaps-helper")).expect("the helper");
    let mark = agentcaps::shell::kernel::view::sources_mark().as_bytes();
    assert!(
        memchr::memmem::find(&real, mark).is_some(),
        "agentcaps-helper lacks its mark"
    );
}

/// What an installation is passed over for: its name, how it is made, and
/// what is done to it.
type Case = (&'static str, fn() -> Install, fn(&Install));

#[test]
fn a_helper_from_another_build_or_that_others_may_change_is_passed_over() {
    let tree = common::Tree::new();
    let cases: [Case; 4] = [
        (
            "a helper from another build",
            || Install::with_mark("agentcaps-sandbox-sources:0123456789abcdef;"),
            |install| {
                std::fs::rename(install.path("helper.sh"), install.path("agentcaps-helper"))
                    .expect("install");
            },
        ),
        ("a helper others may write", Install::new, |install| {
            std::fs::rename(install.path("helper.sh"), install.path("agentcaps-helper"))
                .expect("install");
            mode(&install.path("agentcaps-helper"), 0o757);
        }),
        ("a link to a helper", Install::new, |install| {
            common::symlink(
                &install.path("helper.sh"),
                &install.path("agentcaps-helper"),
            );
        }),
        ("a directory others may write", Install::new, |install| {
            std::fs::rename(install.path("helper.sh"), install.path("agentcaps-helper"))
                .expect("install");
            mode(install.dir.path(), 0o777);
        }),
    ];
    for (case, make, arrange) in cases {
        let install = make();
        arrange(&install);
        let (result, started) = install.run(&tree);
        mode(install.dir.path(), 0o700);
        assert_eq!(result["stdout"], "hi\n", "{case}: {result}");
        assert_eq!(result["enforced"], "full", "{case}: {result}");
        assert_eq!(started, "", "{case}: the helper beside it was started");
    }
}
