//! Committing a plan atomically: stage everything, put it in place, and
//! undo what was done if anything fails.
//!
//! 1. Create the directories new files need (parents first).
//! 2. Stage every new content as a temporary file beside its target (on
//!    several threads for large patches). A failure here discards every
//!    staged file: the tree is untouched.
//! 3. In patch order: exchange each staged file with the file it replaces
//!    (which stays beside it under a temporary name), rename each created
//!    file into place (refusing a file that appeared there meanwhile),
//!    rename moved files (a move's new content is first put at its old
//!    name, so the file keeps its mode; the rename refuses to replace a
//!    file), and move each deleted file aside under a temporary name.
//!    A failure here discards what is still staged and undoes what was
//!    done, newest first: each replaced or deleted file is renamed back —
//!    the very same file, content, mode and links, and no disk space
//!    needed — a moved file is renamed back, a created file is removed.
//!    Directories created in step 1 are removed.
//! 4. Once everything is in place, the replaced and deleted files kept
//!    aside are removed. One that cannot be is reported, never hidden.
//!
//! Where the file system cannot exchange two names, the replaced file is
//! kept by a hard link instead, or else as a copy in memory (see
//! [`Beneath::replace`]). The plan itself holds no old content: each is
//! dropped once its new content is computed.
//!
//! No `.orig` or `.rej` file is ever written. The file operations go through
//! the [`Store`] seam, so tests can make the k-th of them fail.

use std::path::Path;

use agentcaps_paths::{Beneath, PathError, SetAside, Staged, Version};

use crate::error::PatchError;
use crate::model::Operation;
use crate::parallel::in_parallel;
use crate::plan::Plan;

type Result<T> = std::result::Result<T, PatchError>;

/// The file operations a transaction needs, on relative spellings.
/// Staging, discarding and releasing take `&self`: they run on several
/// threads for large patches.
pub(crate) trait Store: Sync {
    /// A staged file.
    type Staged: Send;
    /// A file kept aside (replaced or deleted), until restored or released.
    type Aside: Send;
    fn stage(&self, path: &str, bytes: &[u8]) -> Result<Self::Staged>;
    fn discard(&self, path: &str, staged: Self::Staged) -> Result<()>;
    /// Puts `staged` in place of the existing file, which is kept aside;
    /// with `read`, only while that file is still the version read.
    fn replace(
        &mut self,
        path: &str,
        staged: Self::Staged,
        read: Option<Version>,
    ) -> Result<Self::Aside>;
    /// Puts `staged` at `path`, where nothing may be.
    fn create(&mut self, path: &str, staged: Self::Staged) -> Result<()>;
    /// Moves the file at `path` aside; with `read`, only while it is still
    /// the version read.
    fn set_aside(&mut self, path: &str, read: Option<Version>) -> Result<Self::Aside>;
    fn restore(&mut self, path: &str, aside: Self::Aside) -> Result<()>;
    fn release(&self, path: &str, aside: Self::Aside) -> Result<()>;
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
            PatchError::PathPolicy {
                path,
                source: Box::new(source),
            }
        } else {
            PatchError::Io {
                op,
                path,
                source: Box::new(source),
            }
        }
    }
}

impl Store for BeneathStore<'_> {
    type Staged = Staged;
    type Aside = SetAside;
    fn stage(&self, path: &str, bytes: &[u8]) -> Result<Staged> {
        self.beneath
            .stage(self.base, path, bytes)
            .map_err(wrap("stage", path))
    }
    fn discard(&self, path: &str, staged: Staged) -> Result<()> {
        self.beneath.discard(staged).map_err(wrap("discard", path))
    }
    fn replace(&mut self, path: &str, staged: Staged, read: Option<Version>) -> Result<SetAside> {
        match read {
            Some(read) => self.beneath.replace_unchanged(staged, read),
            None => self.beneath.replace(staged),
        }
        .map_err(wrap("rename", path))
    }
    fn create(&mut self, path: &str, staged: Staged) -> Result<()> {
        self.beneath
            .commit_new(staged)
            .map_err(wrap("rename", path))
    }
    fn set_aside(&mut self, path: &str, read: Option<Version>) -> Result<SetAside> {
        match read {
            Some(read) => self.beneath.set_aside_unchanged(self.base, path, read),
            None => self.beneath.set_aside(self.base, path),
        }
        .map_err(wrap("remove", path))
    }
    fn restore(&mut self, path: &str, aside: SetAside) -> Result<()> {
        self.beneath.restore(aside).map_err(wrap("restore", path))
    }
    fn release(&self, path: &str, aside: SetAside) -> Result<()> {
        self.beneath.release(aside).map_err(wrap("remove", path))
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
    /// Put the staged content (index into the staged list) at `path`, in
    /// place of the file there (`replaces`) or where nothing is.
    Write {
        path: &'p str,
        staged: usize,
        replaces: bool,
        read: Option<Version>,
    },
    /// Move the file at `path` aside (a deletion), the version read.
    Remove {
        path: &'p str,
        read: Option<Version>,
    },
    /// Rename `from` to `to` (refused if `to` exists by then).
    Rename { from: &'p str, to: &'p str },
}

/// What a step did, for undoing it.
enum Done<'p, A> {
    /// A file replaced or removed, kept aside.
    Aside {
        path: &'p str,
        aside: A,
    },
    Created {
        path: &'p str,
    },
    Renamed {
        from: &'p str,
        to: &'p str,
    },
}

/// Applies `plan` through `store`, all or nothing. Returns the temporary
/// names of replaced or deleted files that could not be removed once
/// everything was in place (normally none).
///
/// # Errors
///
/// The first failure, after everything done was undone; or
/// [`PatchError::RollbackFailed`] when undoing failed too.
pub(crate) fn execute<S: Store>(store: &mut S, plan: &Plan) -> Result<Vec<String>> {
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
    let mut writes: Vec<(&str, &[u8])> = Vec::new();
    for planned in &plan.files {
        // A move's new content is written at its old name first (so the file
        // keeps its mode), then the file is renamed.
        // (A move whose content does not change has none planned.)
        let target: Option<(&str, bool)> = match &planned.op {
            Operation::Create(p) => Some((p, false)),
            Operation::Update(p) | Operation::Move(p, _) => Some((p, true)),
            Operation::Delete(_) => None,
        };
        if let (Some((path, replaces)), Some(content)) = (target, planned.content.as_deref()) {
            steps.push(Step::Write {
                path,
                staged: writes.len(),
                replaces,
                read: planned.read,
            });
            writes.push((path, content));
        }
        match &planned.op {
            Operation::Delete(p) => steps.push(Step::Remove {
                path: p,
                read: planned.read,
            }),
            Operation::Move(from, to) => steps.push(Step::Rename { from, to }),
            _ => {}
        }
    }
    let shared: &S = store;
    let results = in_parallel(writes, Result::is_err, |(path, bytes)| {
        shared.stage(path, bytes).map(|s| (path, s))
    });
    let mut staged: Vec<Option<(&str, S::Staged)>> = Vec::with_capacity(results.len());
    let mut first_error = None;
    for result in results {
        match result {
            Some(Ok(s)) => staged.push(Some(s)),
            Some(Err(e)) => {
                first_error.get_or_insert(e);
                staged.push(None);
            }
            None => staged.push(None),
        }
    }
    if let Some(e) = first_error {
        let mut failed = discard_all(store, &mut staged);
        failed.extend(remove_dirs(store, &made_dirs));
        return Err(outcome(e, failed));
    }

    // 3. Put in place, undoing on failure.
    let mut done: Vec<Done<'_, S::Aside>> = Vec::new();
    for step in &steps {
        let result = match *step {
            Step::Write {
                path,
                staged: i,
                replaces,
                read,
            } => match staged.get_mut(i).and_then(Option::take) {
                Some((_, s)) if replaces => store
                    .replace(path, s, read)
                    .map(|aside| Done::Aside { path, aside }),
                Some((_, s)) => store.create(path, s).map(|()| Done::Created { path }),
                None => continue,
            },
            Step::Remove { path, read } => store
                .set_aside(path, read)
                .map(|aside| Done::Aside { path, aside }),
            Step::Rename { from, to } => {
                store.rename(from, to).map(|()| Done::Renamed { from, to })
            }
        };
        match result {
            Ok(step_done) => done.push(step_done),
            Err(e) => {
                let mut failed = discard_all(store, &mut staged);
                failed.extend(undo(store, done));
                failed.extend(remove_dirs(store, &made_dirs));
                return Err(outcome(e, failed));
            }
        }
    }

    // 4. Remove what was kept aside.
    let kept: Vec<(&str, S::Aside)> = done
        .into_iter()
        .filter_map(|d| match d {
            Done::Aside { path, aside } => Some((path, aside)),
            Done::Created { .. } | Done::Renamed { .. } => None,
        })
        .collect();
    let shared: &S = store;
    let released = in_parallel(
        kept,
        |_| false,
        |(path, aside)| shared.release(path, aside).err().map(|_| path),
    );
    Ok(released
        .into_iter()
        .flatten()
        .flatten()
        .map(|path| format!("{path} (its old content, beside it under a temporary name)"))
        .collect())
}

/// Undoes `done`, newest first; returns what could not be undone.
fn undo<S: Store>(store: &mut S, done: Vec<Done<'_, S::Aside>>) -> Vec<String> {
    let mut failed = Vec::new();
    for step in done.into_iter().rev() {
        let undone = match step {
            Done::Aside { path, aside } => store.restore(path, aside).err().map(|_| path),
            Done::Created { path } => store.remove_file(path).err().map(|_| path),
            Done::Renamed { from, to } => store.rename(to, from).err().map(|_| to),
        };
        failed.extend(undone.map(str::to_owned));
    }
    failed
}

fn discard_all<S: Store>(store: &S, staged: &mut [Option<(&str, S::Staged)>]) -> Vec<String> {
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
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use agentcaps_paths::{PathPolicy, RealFs};

    use super::*;
    use crate::{Patch, PatchPolicyConfig, plan};

    /// When a [`Hooked`] store calls its hook.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Moment {
        /// Before a staging write.
        Stage,
        /// Before a step that changes the tree: replace, create, set aside,
        /// remove, rename.
        Change,
    }

    /// Wraps a store and calls `hook` before each staging write and each
    /// step that changes the tree; an error from the hook becomes that
    /// operation's (a staged file it was given is discarded).
    struct Hooked<S, H> {
        inner: S,
        hook: H,
    }

    impl<S: Store, H: Fn(Moment, &str) -> Result<()> + Sync> Hooked<S, H> {
        fn put(&mut self, path: &str, staged: S::Staged) -> Result<S::Staged> {
            match (self.hook)(Moment::Change, path) {
                Ok(()) => Ok(staged),
                Err(e) => {
                    self.inner.discard(path, staged)?;
                    Err(e)
                }
            }
        }
    }

    impl<S: Store, H: Fn(Moment, &str) -> Result<()> + Sync> Store for Hooked<S, H> {
        type Staged = S::Staged;
        type Aside = S::Aside;
        fn stage(&self, path: &str, bytes: &[u8]) -> Result<S::Staged> {
            (self.hook)(Moment::Stage, path)?;
            self.inner.stage(path, bytes)
        }
        fn discard(&self, path: &str, staged: S::Staged) -> Result<()> {
            self.inner.discard(path, staged)
        }
        fn replace(
            &mut self,
            path: &str,
            staged: S::Staged,
            read: Option<Version>,
        ) -> Result<S::Aside> {
            let staged = self.put(path, staged)?;
            self.inner.replace(path, staged, read)
        }
        fn create(&mut self, path: &str, staged: S::Staged) -> Result<()> {
            let staged = self.put(path, staged)?;
            self.inner.create(path, staged)
        }
        fn set_aside(&mut self, path: &str, read: Option<Version>) -> Result<S::Aside> {
            (self.hook)(Moment::Change, path)?;
            self.inner.set_aside(path, read)
        }
        fn restore(&mut self, path: &str, aside: S::Aside) -> Result<()> {
            self.inner.restore(path, aside)
        }
        fn release(&self, path: &str, aside: S::Aside) -> Result<()> {
            self.inner.release(path, aside)
        }
        fn remove_file(&mut self, path: &str) -> Result<()> {
            (self.hook)(Moment::Change, path)?;
            self.inner.remove_file(path)
        }
        fn rename(&mut self, from: &str, to: &str) -> Result<()> {
            (self.hook)(Moment::Change, to)?;
            self.inner.rename(from, to)
        }
        fn create_dir(&mut self, path: &str) -> Result<()> {
            self.inner.create_dir(path)
        }
        fn remove_dir(&mut self, path: &str) -> Result<()> {
            self.inner.remove_dir(path)
        }
    }

    fn injected(op: &'static str, path: &str) -> PatchError {
        PatchError::Io {
            op,
            path: path.to_owned(),
            source: Box::new(PathError::Io {
                op,
                path: path.into(),
                source: std::io::Error::other("injected fault"),
            }),
        }
    }

    /// How many staging writes and tree changes a [`faulty`] store saw.
    #[derive(Default)]
    struct Counts {
        stages: AtomicUsize,
        changes: AtomicUsize,
    }

    /// A store whose `fail_stage`-th staging write or `fail_change`-th tree
    /// change (1-based) fails.
    fn faulty<'c, S: Store>(
        inner: S,
        counts: &'c Counts,
        fail_stage: Option<usize>,
        fail_change: Option<usize>,
    ) -> Hooked<S, impl Fn(Moment, &str) -> Result<()> + Sync + 'c> {
        let hook = move |moment: Moment, path: &str| {
            let (count, fail, op) = match moment {
                Moment::Stage => (&counts.stages, fail_stage, "stage"),
                Moment::Change => (&counts.changes, fail_change, "rename"),
            };
            let k = count.fetch_add(1, AtomicOrdering::SeqCst) + 1;
            if fail == Some(k) {
                return Err(injected(op, path));
            }
            Ok(())
        };
        Hooked { inner, hook }
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
        // Unusual modes on a modified and a deleted file: a rollback must
        // bring them back too.
        use std::os::unix::fs::PermissionsExt;
        for (name, mode) in [
            ("old-name.txt", 0o755),
            ("one.txt", 0o600),
            ("gone.txt", 0o700),
        ] {
            std::fs::set_permissions(root.join(name), std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("chmod: {e}"));
        }
        (dir, root)
    }

    type Snapshot = BTreeMap<String, (Option<Vec<u8>>, u32)>;

    /// The file systems a transaction must be all-or-nothing on: this one
    /// (`RENAME_EXCHANGE`), one without exchange (replaced files kept by a
    /// hard link), and one without hard links either (kept as copies) —
    /// the last two simulated by [`Beneath::simulate_missing`].
    const FILE_SYSTEMS: [(bool, bool); 3] = [(false, false), (true, false), (true, true)];

    /// The policy's handle on `root` (on a file system lacking what
    /// `missing` says, see [`FILE_SYSTEMS`]) and the plan of `text` there.
    fn plan_in(root: &Path, text: &str, (no_exchange, no_links): (bool, bool)) -> (Beneath, Plan) {
        let policy = PathPolicy::builder()
            .allow(root)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        let mut beneath = policy
            .open_beneath()
            .unwrap_or_else(|e| panic!("beneath: {e}"));
        beneath.simulate_missing(no_exchange, no_links);
        let config = PatchPolicyConfig::default();
        let ctx = plan::Context {
            policy: &policy,
            beneath: &beneath,
            fs: &RealFs,
            base: root,
            config: &config,
            want_diff: false,
        };
        let patch = Patch::parse(text).unwrap_or_else(|e| panic!("parse: {e}"));
        let planned = plan::plan(&patch, &ctx, None).unwrap_or_else(|e| panic!("plan: {e}"));
        (beneath, planned)
    }

    fn run(
        fail_stage: Option<usize>,
        fail_rename: Option<usize>,
    ) -> (Result<()>, usize, usize, bool, Snapshot) {
        run_on((false, false), fail_stage, fail_rename)
    }

    fn run_on(
        (no_exchange, no_links): (bool, bool),
        fail_stage: Option<usize>,
        fail_rename: Option<usize>,
    ) -> (Result<()>, usize, usize, bool, Snapshot) {
        let (_dir, root) = setup();
        let before = snapshot(&root);
        let (beneath, planned) = plan_in(&root, PATCH, (no_exchange, no_links));
        let counts = Counts::default();
        let inner = BeneathStore {
            beneath: &beneath,
            base: &root,
        };
        let mut store = faulty(inner, &counts, fail_stage, fail_rename);
        let result = execute(&mut store, &planned).map(|left_over| {
            assert_eq!(left_over, Vec::<String>::new());
        });
        let after = snapshot(&root);
        let identical = after == before;
        (
            result,
            counts.stages.load(AtomicOrdering::SeqCst),
            counts.changes.load(AtomicOrdering::SeqCst),
            identical,
            after,
        )
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
        for fs in FILE_SYSTEMS {
            let (result, _, _, identical, after) = run_on(fs, None, None);
            assert!(result.is_ok() && !identical, "{fs:?}: {result:?}");
            assert!(
                after.keys().all(|k| !k.contains(".agentcaps-")),
                "{fs:?}: a temporary file was left: {after:?}"
            );
            for k in 1..=6 {
                let (result, _, _, identical, _) = run_on(fs, None, Some(k));
                assert!(
                    matches!(result, Err(PatchError::Io { op: "rename", .. })),
                    "{fs:?} k={k}: {result:?}"
                );
                assert!(
                    identical,
                    "{fs:?} k={k}: the tree differs after rollback or a temporary file was left"
                );
            }
        }
    }

    /// A patch over enough files to be staged and released on several
    /// threads: 30 files modified, 5 created, 5 deleted.
    fn large() -> (tempfile::TempDir, std::path::PathBuf, String) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let root = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("canonicalize: {e}"));
        let mut text = String::new();
        for i in 0..30 {
            let name = format!("d{}/m{i}.txt", i % 3);
            std::fs::create_dir_all(root.join(format!("d{}", i % 3)))
                .unwrap_or_else(|e| panic!("mkdir: {e}"));
            std::fs::write(root.join(&name), format!("a\nb{i}\nc\n"))
                .unwrap_or_else(|e| panic!("write: {e}"));
            text.push_str(&format!(
                "--- a/{name}\n+++ b/{name}\n@@ -1,3 +1,3 @@\n a\n-b{i}\n+B{i}\n c\n"
            ));
        }
        for i in 0..5 {
            text.push_str(&format!(
                "--- /dev/null\n+++ b/new{i}/c{i}.txt\n@@ -0,0 +1 @@\n+c{i}\n"
            ));
            let name = format!("gone{i}.txt");
            std::fs::write(root.join(&name), format!("g{i}\n"))
                .unwrap_or_else(|e| panic!("write: {e}"));
            text.push_str(&format!(
                "--- a/{name}\n+++ /dev/null\n@@ -1 +0,0 @@\n-g{i}\n"
            ));
        }
        (dir, root, text)
    }

    fn run_large(
        fail_stage: Option<usize>,
        fail_rename: Option<usize>,
    ) -> (Result<Vec<String>>, bool, Snapshot) {
        let (_dir, root, text) = large();
        let before = snapshot(&root);
        let (beneath, planned) = plan_in(&root, &text, (false, false));
        let counts = Counts::default();
        let inner = BeneathStore {
            beneath: &beneath,
            base: &root,
        };
        let mut store = faulty(inner, &counts, fail_stage, fail_rename);
        let result = execute(&mut store, &planned);
        let after = snapshot(&root);
        (result, after == before, after)
    }

    #[test]
    fn durable_patches_apply_whole_and_leave_nothing_behind() {
        let (_dir, root, text) = large();
        let config = PatchPolicyConfig {
            durable: true,
            ..PatchPolicyConfig::default()
        };
        let policy = PathPolicy::builder()
            .allow(&root)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        let patcher = crate::Patcher::new(policy, config);
        let patch = patcher
            .parse(&text)
            .unwrap_or_else(|e| panic!("parse: {e}"));
        let report = patcher
            .apply(&patch, &root, crate::ApplyOptions::default())
            .unwrap_or_else(|e| panic!("apply: {e}"));
        assert_eq!(report.files.len(), 40);
        assert!(report.left_over.is_empty());
        let after = snapshot(&root);
        assert_eq!(
            after.get("d2/m29.txt").and_then(|(c, _)| c.clone()),
            Some(b"a\nB29\nc\n".to_vec())
        );
        assert!(
            after.keys().all(|k| !k.contains(".agentcaps-")),
            "{after:?}"
        );
    }

    #[test]
    fn large_patches_stage_on_threads_and_stay_all_or_nothing() {
        use crate::parallel::{PARALLEL_FROM, threads_for};
        // Smaller patches stay on the calling thread; this one (35 files
        // staged) is split wherever there is more than one core.
        assert_eq!(threads_for(PARALLEL_FROM - 1), 1);
        let (result, identical, after) = run_large(None, None);
        assert_eq!(result.ok(), Some(Vec::new()));
        assert!(!identical);
        assert_eq!(
            after.get("d1/m4.txt").and_then(|(c, _)| c.clone()),
            Some(b"a\nB4\nc\n".to_vec())
        );
        assert!(!after.contains_key("gone3.txt"));
        assert!(
            after.keys().all(|k| !k.contains(".agentcaps-")),
            "a temporary file was left: {after:?}"
        );
        // 35 files are staged: fail each of several, across the chunks.
        for k in [1, 2, 9, 10, 18, 26, 35] {
            let (result, identical, _) = run_large(Some(k), None);
            assert!(
                matches!(result, Err(PatchError::Io { op: "stage", .. })),
                "k={k}: {result:?}"
            );
            assert!(
                identical,
                "k={k}: the tree changed or a temporary file was left"
            );
        }
        // 40 steps change the tree: fail each of several, up to the last.
        for k in [1, 15, 30, 31, 36, 40] {
            let (result, identical, _) = run_large(None, Some(k));
            assert!(
                matches!(result, Err(PatchError::Io { op: "rename", .. })),
                "k={k}: {result:?}"
            );
            assert!(identical, "k={k}: the tree differs after rollback");
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
        let text = "--- a/sub/file.txt\n+++ b/sub/file.txt\n@@ -1 +1 @@\n-a\n+pwned\n--- /dev/null\n+++ b/sub/new.txt\n@@ -0,0 +1 @@\n+pwned\n";
        let (beneath, planned) = plan_in(&root, text, (false, false));
        // Swaps `sub/` for a link to `outside/` just before the first
        // staging write or the first change: the race a check-then-use
        // applier loses.
        let swapped = std::sync::atomic::AtomicBool::new(false);
        let swap = |moment: Moment, _: &str| {
            let due = before_stage || moment == Moment::Change;
            if due && !swapped.swap(true, AtomicOrdering::SeqCst) {
                let sub = root.join("sub");
                std::fs::rename(&sub, root.join("sub.moved"))
                    .unwrap_or_else(|e| panic!("rename: {e}"));
                std::os::unix::fs::symlink(&outside, &sub)
                    .unwrap_or_else(|e| panic!("symlink: {e}"));
            }
            Ok(())
        };
        let inner = BeneathStore {
            beneath: &beneath,
            base: &root,
        };
        let mut store = Hooked { inner, hook: swap };
        let result = execute(&mut store, &planned).map(|_| ());
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
    fn link_swapped_in_after_staging_is_refused_as_changed_and_undone() {
        // The staged files hold the real directory's handle, so nothing
        // goes through the link; and once a file is in place its directory
        // is opened again by its path: it is no longer the one the names
        // were judged for, so the change is undone and refused.
        let (result, root) = race(false);
        let refused = result.expect_err("the directory was moved meanwhile");
        assert_eq!(refused.rule(), "changed", "{refused:?}");
        let content = |k: &str| root.get(k).and_then(|(c, _)| c.clone());
        assert_eq!(content("sub.moved/file.txt"), Some(b"a\n".to_vec()));
        assert_eq!(content("sub.moved/new.txt"), None);
        assert!(
            root.keys().all(|k| !k.contains(".agentcaps-")),
            "no temporary file is left: {:?}",
            root.keys()
        );
    }
}
