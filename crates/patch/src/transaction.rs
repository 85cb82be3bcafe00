//! Committing a plan atomically: stage everything, rename into place, and
//! undo what was done if anything fails.
//!
//! 1. Create the directories new files need (parents first).
//! 2. Stage every new content as a temporary file beside its target. A
//!    failure here discards every staged file: the tree is untouched.
//! 3. Rename each staged file over its target and remove deleted files, in
//!    patch order. A failure here discards what is still staged and undoes
//!    what was done, newest first: a replaced file gets its old content back
//!    (staged and renamed again), a created file is removed, a removed file
//!    is written back. Directories created in step 1 are removed.
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
        let writes: Option<(&str, Option<&[u8]>)> = match &planned.op {
            Operation::Create(p) | Operation::Move(_, p) => Some((p, None)),
            Operation::Update(p) => Some((p, planned.original.as_deref())),
            Operation::Delete(_) => None,
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
        if let (Operation::Delete(p) | Operation::Move(p, _), Some(original)) =
            (&planned.op, planned.original.as_deref())
        {
            steps.push(Step::Remove { path: p, original });
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
