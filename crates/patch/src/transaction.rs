//! Committing a plan atomically: stage everything, rename into place, and
//! undo what was done if anything fails.
//!
//! 1. Create the directories new files need (parents first).
//! 2. Stage every new content as a temporary file beside its target. A
//!    failure here discards every staged file: the tree is untouched.
//! 3. Rename each staged file over its target, rename moved files (a move's
//!    new content is first written at its old name, so the file keeps its
//!    mode; the rename refuses to replace a file that appeared meanwhile),
//!    and remove deleted files, in patch order. A failure here discards what is still staged and undoes
//!    what was done, newest first: a replaced file gets its old content back
//!    (staged and renamed again), a moved file is renamed back, a created
//!    file is removed, a removed file is written back (with the default
//!    mode: a deleted executable restored by a rollback loses its `x` bit). Directories created in step 1 are removed.
//!
//! No `.orig` or `.rej` file is ever written. The file operations go through
//! the [`Store`] seam, so tests can make the k-th of them fail.

use std::path::Path;

use agentcaps_paths::{Beneath, PathError, Staged};

use crate::error::PatchError;
use crate::model::Operation;
use crate::plan::Plan;

type Result<T> = std::result::Result<T, PatchError>;

/// The file operations a transaction needs, on relative spellings.
pub(crate) trait Store {
    /// A staged file.
    type Staged;
    fn stage(&mut self, path: &str, bytes: &[u8]) -> Result<Self::Staged>;
    fn commit(&mut self, path: &str, staged: Self::Staged) -> Result<()>;
    fn discard(&mut self, path: &str, staged: Self::Staged) -> Result<()>;
    fn remove_file(&mut self, path: &str) -> Result<()>;
    fn rename(&mut self, from: &str, to: &str) -> Result<()>;
    fn create_dir(&mut self, path: &str) -> Result<()>;
    fn remove_dir(&mut self, path: &str) -> Result<()>;
}

/// The real store: [`Beneath`] operations relative to a base directory.
pub(crate) struct BeneathStore<'a> {
    pub(crate) beneath: &'a Beneath,
    pub(crate) base: &'a Path,
}

fn wrap(op: &'static str, path: &str) -> impl FnOnce(PathError) -> PatchError {
    let path = path.to_owned();
    move |source| {
        if source.is_refusal() {
            PatchError::PathPolicy { path, source }
        } else {
            PatchError::Io { op, path, source }
        }
    }
}

impl Store for BeneathStore<'_> {
    type Staged = Staged;
    fn stage(&mut self, path: &str, bytes: &[u8]) -> Result<Staged> {
        self.beneath
            .stage(self.base, path, bytes)
            .map_err(wrap("stage", path))
    }
    fn commit(&mut self, path: &str, staged: Staged) -> Result<()> {
        self.beneath.commit(staged).map_err(wrap("rename", path))
    }
    fn discard(&mut self, path: &str, staged: Staged) -> Result<()> {
        self.beneath.discard(staged).map_err(wrap("discard", path))
    }
    fn remove_file(&mut self, path: &str) -> Result<()> {
        self.beneath
            .remove_file(self.base, path)
            .map_err(wrap("remove", path))
    }
    fn rename(&mut self, from: &str, to: &str) -> Result<()> {
        self.beneath
            .rename(self.base, from, to)
            .map_err(wrap("rename", to))
    }
    fn create_dir(&mut self, path: &str) -> Result<()> {
        self.beneath
            .create_dir_all(self.base, path)
            .map_err(wrap("create directory", path))
    }
    fn remove_dir(&mut self, path: &str) -> Result<()> {
        self.beneath
            .remove_dir(self.base, path)
            .map_err(wrap("remove directory", path))
    }
}

/// One step of the commit phase.
enum Step<'p> {
    /// Rename the staged content (index into the staged list) over `path`;
    /// `original` is what to put back (`None`: the file did not exist).
    Write {
        path: &'p str,
        staged: usize,
        original: Option<&'p [u8]>,
    },
    /// Remove `path`, whose content was `original`.
    Remove { path: &'p str, original: &'p [u8] },
    /// Rename `from` to `to` (refused if `to` exists by then).
    Rename { from: &'p str, to: &'p str },
}

/// Writes `bytes` at `path` through stage + commit (used to undo).
fn put<S: Store>(store: &mut S, path: &str, bytes: &[u8]) -> Result<()> {
    let staged = store.stage(path, bytes)?;
    store.commit(path, staged)
}

/// Applies `plan` through `store`, all or nothing.
///
/// # Errors
///
/// The first failure, after everything done was undone; or
/// [`PatchError::RollbackFailed`] when undoing failed too.
pub(crate) fn execute<S: Store>(store: &mut S, plan: &Plan) -> Result<()> {
    // 1. Directories.
    let mut made_dirs: Vec<&str> = Vec::new();
    for dir in &plan.new_dirs {
        if let Err(e) = store.create_dir(dir) {
            let failed = remove_dirs(store, &made_dirs);
            return Err(outcome(e, failed));
        }
        made_dirs.push(dir);
    }

    // 2. Stage.
    let mut steps = Vec::new();
    let mut staged: Vec<Option<(&str, S::Staged)>> = Vec::new();
    for planned in &plan.files {
        // A move's new content is written at its old name first (so the file
        // keeps its mode), then the file is renamed.
        let writes: Option<(&str, Option<&[u8]>)> = match &planned.op {
            Operation::Create(p) => Some((p, None)),
            Operation::Update(p) => Some((p, planned.original.as_deref())),
            Operation::Move(from, _) if planned.content != planned.original => {
                Some((from, planned.original.as_deref()))
            }
            Operation::Move(..) | Operation::Delete(_) => None,
        };
        if let (Some((path, original)), Some(content)) = (writes, planned.content.as_deref()) {
            match store.stage(path, content) {
                Ok(s) => staged.push(Some((path, s))),
                Err(e) => {
                    let mut failed = discard_all(store, &mut staged);
                    failed.extend(remove_dirs(store, &made_dirs));
                    return Err(outcome(e, failed));
                }
            }
            steps.push(Step::Write {
                path,
                staged: staged.len() - 1,
                original,
            });
        }
        match (&planned.op, planned.original.as_deref()) {
            (Operation::Delete(p), Some(original)) => {
                steps.push(Step::Remove { path: p, original })
            }
            (Operation::Move(from, to), _) => steps.push(Step::Rename { from, to }),
            _ => {}
        }
    }

    // 3. Commit, undoing on failure.
    let mut done: Vec<&Step<'_>> = Vec::new();
    for step in &steps {
        let result = match step {
            Step::Write {
                path, staged: i, ..
            } => match staged.get_mut(*i).and_then(Option::take) {
                Some((_, s)) => store.commit(path, s),
                None => Ok(()),
            },
            Step::Remove { path, .. } => store.remove_file(path),
            Step::Rename { from, to } => store.rename(from, to),
        };
        if let Err(e) = result {
            let mut failed = discard_all(store, &mut staged);
            for step in done.iter().rev() {
                let undone = match step {
                    Step::Write {
                        path,
                        original: Some(original),
                        ..
                    } => put(store, path, original).err().map(|_| *path),
                    Step::Write {
                        path,
                        original: None,
                        ..
                    } => store.remove_file(path).err().map(|_| *path),
                    Step::Rename { from, to } => store.rename(to, from).err().map(|_| *to),
                    Step::Remove { path, original } => {
                        put(store, path, original).err().map(|_| *path)
                    }
                };
                failed.extend(undone.map(str::to_owned));
            }
            failed.extend(remove_dirs(store, &made_dirs));
            return Err(outcome(e, failed));
        }
        done.push(step);
    }
    Ok(())
}

fn discard_all<S: Store>(store: &mut S, staged: &mut [Option<(&str, S::Staged)>]) -> Vec<String> {
    let mut failed = Vec::new();
    for (path, s) in staged.iter_mut().filter_map(Option::take) {
        if store.discard(path, s).is_err() {
            failed.push(format!("{path} (temporary file)"));
        }
    }
    failed
}

fn remove_dirs<S: Store>(store: &mut S, dirs: &[&str]) -> Vec<String> {
    dirs.iter()
        .rev()
        .filter(|d| store.remove_dir(d).is_err())
        .map(|d| format!("{d}/"))
        .collect()
}

fn outcome(cause: PatchError, failed: Vec<String>) -> PatchError {
    if failed.is_empty() {
        cause
    } else {
        PatchError::RollbackFailed {
            cause: Box::new(cause),
            failed,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    //! Fault injection: the k-th staging write, or the k-th rename/removal,
    //! fails — for every k — and the tree must be byte-identical afterwards,
    //! with no temporary file left.

    use std::collections::BTreeMap;
    use std::path::Path;

    use agentcaps_paths::{PathPolicy, RealFs};

    use super::*;
    use crate::{Patch, PatchPolicyConfig, plan};

    /// Wraps a store and makes one operation fail.
    struct Faulty<S> {
        inner: S,
        fail_stage: Option<usize>,
        fail_rename: Option<usize>,
        stages: usize,
        renames: usize,
    }

    fn injected(op: &'static str, path: &str) -> PatchError {
        PatchError::Io {
            op,
            path: path.to_owned(),
            source: PathError::Io {
                op,
                path: path.into(),
                source: std::io::Error::other("injected fault"),
            },
        }
    }

    impl<S: Store> Faulty<S> {
        fn rename_fault(&mut self, path: &str) -> Result<()> {
            self.renames += 1;
            if self.fail_rename == Some(self.renames) {
                return Err(injected("rename", path));
            }
            Ok(())
        }
    }

    impl<S: Store> Store for Faulty<S> {
        type Staged = S::Staged;
        fn stage(&mut self, path: &str, bytes: &[u8]) -> Result<S::Staged> {
            self.stages += 1;
            if self.fail_stage == Some(self.stages) {
                return Err(injected("stage", path));
            }
            self.inner.stage(path, bytes)
        }
        fn commit(&mut self, path: &str, staged: S::Staged) -> Result<()> {
            if let Err(e) = self.rename_fault(path) {
                self.inner.discard(path, staged)?;
                return Err(e);
            }
            self.inner.commit(path, staged)
        }
        fn discard(&mut self, path: &str, staged: S::Staged) -> Result<()> {
            self.inner.discard(path, staged)
        }
        fn remove_file(&mut self, path: &str) -> Result<()> {
            self.rename_fault(path)?;
            self.inner.remove_file(path)
        }
        fn rename(&mut self, from: &str, to: &str) -> Result<()> {
            self.rename_fault(to)?;
            self.inner.rename(from, to)
        }
        fn create_dir(&mut self, path: &str) -> Result<()> {
            self.inner.create_dir(path)
        }
        fn remove_dir(&mut self, path: &str) -> Result<()> {
            self.inner.remove_dir(path)
        }
    }

    /// Every entry under `root`: content (`None` for a directory) and mode.
    fn snapshot(root: &Path) -> BTreeMap<String, (Option<Vec<u8>>, u32)> {
        use std::os::unix::fs::PermissionsExt;
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                let mode = std::fs::metadata(&path)
                    .map(|m| m.permissions().mode())
                    .unwrap_or_default();
                if path.is_dir() {
                    out.insert(rel, (None, mode));
                    stack.push(path);
                } else {
                    out.insert(rel, (std::fs::read(&path).ok(), mode));
                }
            }
        }
        out
    }

    const PATCH: &str = "\
--- a/one.txt
+++ b/one.txt
@@ -1,2 +1,2 @@
 one
-two
+TWO
--- /dev/null
+++ b/new/dir/created.txt
@@ -0,0 +1 @@
+created
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/old-name.txt b/moved/new-name.txt
similarity index 50%
rename from old-name.txt
rename to moved/new-name.txt
--- a/old-name.txt
+++ b/moved/new-name.txt
@@ -1,2 +1,2 @@
 keep
-change
+changed
--- a/three.txt
+++ b/three.txt
@@ -1 +1 @@
-three
+THREE
";

    fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("canonicalize: {e}"));
        for (name, content) in [
            ("one.txt", "one\ntwo\n"),
            ("gone.txt", "gone\n"),
            ("old-name.txt", "keep\nchange\n"),
            ("three.txt", "three\n"),
        ] {
            std::fs::write(root.join(name), content).unwrap_or_else(|e| panic!("write: {e}"));
        }
        // An executable that the patch moves and changes: it stays executable.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join("old-name.txt"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap_or_else(|e| panic!("chmod: {e}"));
        (dir, root)
    }

    type Snapshot = BTreeMap<String, (Option<Vec<u8>>, u32)>;

    fn run(
        fail_stage: Option<usize>,
        fail_rename: Option<usize>,
    ) -> (Result<()>, usize, usize, bool, Snapshot) {
        let (_dir, root) = setup();
        let before = snapshot(&root);
        let policy = PathPolicy::builder()
            .allow(&root)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        let beneath = policy
            .open_beneath()
            .unwrap_or_else(|e| panic!("beneath: {e}"));
        let config = PatchPolicyConfig::default();
        let ctx = plan::Context {
            policy: &policy,
            beneath: &beneath,
            fs: &RealFs,
            base: &root,
            config: &config,
        };
        let patch = Patch::parse(PATCH).unwrap_or_else(|e| panic!("parse: {e}"));
        let planned = plan::plan(&patch, &ctx, None).unwrap_or_else(|e| panic!("plan: {e}"));
        let mut store = Faulty {
            inner: BeneathStore {
                beneath: &beneath,
                base: &root,
            },
            fail_stage,
            fail_rename,
            stages: 0,
            renames: 0,
        };
        let result = execute(&mut store, &planned);
        let after = snapshot(&root);
        let identical = after == before;
        (result, store.stages, store.renames, identical, after)
    }

    #[test]
    fn unfaulted_run_applies_everything() {
        let (result, stages, renames, identical, after) = run(None, None);
        assert!(result.is_ok(), "{result:?}");
        assert!(!identical);
        let moved = after.get("moved/new-name.txt").cloned();
        assert_eq!(
            moved,
            Some((Some(b"keep\nchanged\n".to_vec()), 0o100_755)),
            "content and mode"
        );
        assert!(!after.contains_key("old-name.txt"));
        // 4 writes staged; 4 renames + 2 removals.
        assert_eq!((stages, renames), (4, 6));
    }

    #[test]
    fn kth_staging_write_fails_tree_untouched() {
        for k in 1..=4 {
            let (result, _, _, identical, _) = run(Some(k), None);
            assert!(
                matches!(result, Err(PatchError::Io { op: "stage", .. })),
                "k={k}: {result:?}"
            );
            assert!(
                identical,
                "k={k}: the tree changed or a temporary file was left"
            );
        }
    }

    #[test]
    fn kth_rename_fails_tree_rolled_back() {
        for k in 1..=6 {
            let (result, _, _, identical, _) = run(None, Some(k));
            assert!(
                matches!(result, Err(PatchError::Io { op: "rename", .. })),
                "k={k}: {result:?}"
            );
            assert!(
                identical,
                "k={k}: the tree differs after rollback or a temporary file was left"
            );
        }
    }

    /// Swaps `sub/` for a link to `outside/` just before the first staging
    /// write or the first rename: the race a check-then-use applier loses.
    struct Swapper<'a, S> {
        inner: S,
        root: &'a Path,
        outside: &'a Path,
        before_stage: bool,
        swapped: bool,
    }

    impl<S> Swapper<'_, S> {
        fn swap(&mut self) {
            if !self.swapped {
                self.swapped = true;
                let sub = self.root.join("sub");
                std::fs::rename(&sub, self.root.join("sub.moved"))
                    .unwrap_or_else(|e| panic!("rename: {e}"));
                std::os::unix::fs::symlink(self.outside, &sub)
                    .unwrap_or_else(|e| panic!("symlink: {e}"));
            }
        }
    }

    impl<S: Store> Store for Swapper<'_, S> {
        type Staged = S::Staged;
        fn stage(&mut self, path: &str, bytes: &[u8]) -> Result<S::Staged> {
            if self.before_stage {
                self.swap();
            }
            self.inner.stage(path, bytes)
        }
        fn commit(&mut self, path: &str, staged: S::Staged) -> Result<()> {
            self.swap();
            self.inner.commit(path, staged)
        }
        fn discard(&mut self, path: &str, staged: S::Staged) -> Result<()> {
            self.inner.discard(path, staged)
        }
        fn remove_file(&mut self, path: &str) -> Result<()> {
            self.swap();
            self.inner.remove_file(path)
        }
        fn rename(&mut self, from: &str, to: &str) -> Result<()> {
            self.swap();
            self.inner.rename(from, to)
        }
        fn create_dir(&mut self, path: &str) -> Result<()> {
            self.inner.create_dir(path)
        }
        fn remove_dir(&mut self, path: &str) -> Result<()> {
            self.inner.remove_dir(path)
        }
    }

    fn race(before_stage: bool) -> (Result<()>, Snapshot) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let top = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("canonicalize: {e}"));
        let (root, outside) = (top.join("root"), top.join("outside"));
        std::fs::create_dir_all(root.join("sub")).unwrap_or_else(|e| panic!("mkdir: {e}"));
        std::fs::create_dir_all(&outside).unwrap_or_else(|e| panic!("mkdir: {e}"));
        std::fs::write(root.join("sub/file.txt"), "a\n").unwrap_or_else(|e| panic!("write: {e}"));
        std::fs::write(outside.join("file.txt"), "a\n").unwrap_or_else(|e| panic!("write: {e}"));
        let outside_before = snapshot(&outside);
        let policy = PathPolicy::builder()
            .allow(&root)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        let beneath = policy
            .open_beneath()
            .unwrap_or_else(|e| panic!("beneath: {e}"));
        let config = PatchPolicyConfig::default();
        let ctx = plan::Context {
            policy: &policy,
            beneath: &beneath,
            fs: &RealFs,
            base: &root,
            config: &config,
        };
        let text = "--- a/sub/file.txt\n+++ b/sub/file.txt\n@@ -1 +1 @@\n-a\n+pwned\n--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1 @@\n+pwned\n";
        let patch = Patch::parse(text).unwrap_or_else(|e| panic!("parse: {e}"));
        let planned = plan::plan(&patch, &ctx, None).unwrap_or_else(|e| panic!("plan: {e}"));
        let mut store = Swapper {
            inner: BeneathStore {
                beneath: &beneath,
                base: &root,
            },
            root: &root,
            outside: &outside,
            before_stage,
            swapped: false,
        };
        let result = execute(&mut store, &planned);
        assert_eq!(
            snapshot(&outside),
            outside_before,
            "a write escaped through the swapped-in link: {result:?}"
        );
        (result, snapshot(&root))
    }

    #[test]
    fn link_swapped_in_before_staging_is_refused_and_nothing_escapes() {
        let (result, _) = race(true);
        assert!(
            result.is_err(),
            "staging through a swapped-in link must fail"
        );
    }

    #[test]
    fn link_swapped_in_after_staging_writes_stay_beneath_the_root() {
        // The staged files hold the real directory's handle: the renames land
        // in the moved directory, inside the root, never through the link.
        let (result, root) = race(false);
        assert!(result.is_ok(), "{result:?}");
        let content = |k: &str| root.get(k).and_then(|(c, _)| c.clone());
        assert_eq!(content("sub.moved/file.txt"), Some(b"pwned\n".to_vec()));
        assert_eq!(content("sub.moved/new.txt"), Some(b"pwned\n".to_vec()));
    }
}
