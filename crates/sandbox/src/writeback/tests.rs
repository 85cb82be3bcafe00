//! The write-back over a staging directory laid by the test as an
//! overlay's upper layer would hold it, committed to a real tree.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentcaps_paths::PathPolicy;

use super::{Changes, Decider, WriteBackDecider, write_back};

/// A real tree and a staging layer over it.
struct Layers {
    _dir: tempfile::TempDir,
    root: PathBuf,
    upper: PathBuf,
}

impl Layers {
    fn new(real: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let root = base.join("root");
        for (rel, text) in real {
            write(&root.join(rel), text);
        }
        std::fs::create_dir_all(&root).expect("root");
        // Made after the real tree: its birth is when the view was built.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let upper = base.join("upper");
        std::fs::create_dir(&upper).expect("upper");
        Self {
            _dir: dir,
            root,
            upper,
        }
    }

    /// What the command wrote.
    fn stage(&self, rel: &str, text: &str) {
        write(&self.upper.join(rel), text);
    }

    fn write_back(&self, decider: Option<&Decider>) -> Changes {
        let policy = PathPolicy::builder()
            .allow(&self.root)
            .build()
            .expect("policy");
        write_back(
            &policy,
            &[(self.root.as_path(), self.upper.as_path())],
            &self.root,
            None,
            decider,
        )
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(rel)).ok()
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// Answers every question with `yes`, and keeps what it was asked.
struct Answer {
    yes: bool,
    asked: Mutex<Vec<(String, String)>>,
}

impl WriteBackDecider for Answer {
    fn decide(&self, asked: &[crate::RefusedChange]) -> Vec<bool> {
        let mut seen = self.asked.lock().expect("lock");
        seen.extend(asked.iter().map(|c| (c.path.clone(), c.rule.clone())));
        vec![self.yes; asked.len()]
    }
}

fn answering(yes: bool) -> (Arc<Answer>, Decider) {
    let answer = Arc::new(Answer {
        yes,
        asked: Mutex::new(Vec::new()),
    });
    (answer.clone(), Decider(answer))
}

/// A command's run: a workflow, a cargo config over an existing file, a
/// source file, a blocked `.env` and a git hook.
fn run() -> Layers {
    let layers = Layers::new(&[
        ("src/main.rs", "fn main() {}\n"),
        (".cargo/config.toml", "[build]\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
    ]);
    layers.stage(".github/workflows/ci.yml", "on: push\n");
    layers.stage(".cargo/config.toml", "[build]\njobs = 2\n");
    layers.stage("src/lib.rs", "pub fn f() {}\n");
    layers.stage(".env", "SECRET=x\n");
    layers.stage(".git/hooks/pre-commit", "touch pwned\n");
    layers
}

#[test]
fn approved_write_protected_changes_land_with_the_rest_in_one_commit() {
    let layers = run();
    let (answer, decider) = answering(true);
    let changes = layers.write_back(Some(&decider));
    let asked = answer.asked.lock().expect("lock").clone();
    assert!(
        asked.iter().all(|(_, rule)| rule == "write-protected"),
        "{asked:?}"
    );
    assert!(
        asked.iter().any(|(path, _)| path.starts_with(".github")),
        "{asked:?}"
    );
    assert!(asked.iter().any(|(path, _)| path == ".cargo/config.toml"));
    assert_eq!(
        layers.read(".github/workflows/ci.yml").as_deref(),
        Some("on: push\n")
    );
    assert_eq!(
        layers.read(".cargo/config.toml").as_deref(),
        Some("[build]\njobs = 2\n")
    );
    assert_eq!(
        layers.read("src/lib.rs").as_deref(),
        Some("pub fn f() {}\n")
    );
    // Never asked, never landed: a blocked name, git's own code.
    for never in [".env", ".git/hooks/pre-commit"] {
        assert!(asked.iter().all(|(path, _)| path != never), "{asked:?}");
        assert!(layers.read(never).is_none(), "{never} landed: {changes:#?}");
        assert!(
            changes.refused.iter().any(|c| c.path == never),
            "{never}: {changes:#?}"
        );
    }
    assert!(
        changes
            .refused
            .iter()
            .all(|c| c.rule != "write-protected" || c.path.starts_with(".git/")),
        "the approved ones are no longer refused: {changes:#?}"
    );
}

#[test]
fn declined_write_protected_changes_never_land_and_stay_listed() {
    let layers = run();
    let (answer, decider) = answering(false);
    let changes = layers.write_back(Some(&decider));
    assert!(!answer.asked.lock().expect("lock").is_empty());
    assert!(layers.read(".github/workflows/ci.yml").is_none());
    assert_eq!(
        layers.read(".cargo/config.toml").as_deref(),
        Some("[build]\n")
    );
    assert_eq!(
        layers.read("src/lib.rs").as_deref(),
        Some("pub fn f() {}\n")
    );
    assert!(
        changes
            .refused
            .iter()
            .any(|c| c.path == ".cargo/config.toml" && c.rule == "write-protected"),
        "{changes:#?}"
    );
    // Without a decider the verdicts are the same.
    let without = run().write_back(None);
    let rules = |c: &Changes| {
        let mut r: Vec<(String, String)> = c
            .refused
            .iter()
            .map(|c| (c.path.clone(), c.rule.clone()))
            .collect();
        r.sort();
        r
    };
    assert_eq!(rules(&without), rules(&changes));
}

#[test]
fn a_decider_that_answers_nothing_declines() {
    struct Silent;
    impl WriteBackDecider for Silent {
        fn decide(&self, _: &[crate::RefusedChange]) -> Vec<bool> {
            Vec::new()
        }
    }
    let layers = run();
    layers.write_back(Some(&Decider(Arc::new(Silent))));
    assert!(layers.read(".github/workflows/ci.yml").is_none());
    assert_eq!(
        layers.read(".cargo/config.toml").as_deref(),
        Some("[build]\n")
    );
}
