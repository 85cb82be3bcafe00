//! Committing the allowed changes of one command, all or none (the
//! caller takes a change that fails out and commits the rest again).
//!
//! 1. Create the new directories (parents first), each with the
//!    command's mode (owner access added until the end, never wider).
//! 2. Stage every new content as a temporary file (or link) in the
//!    commit's hidden directory at the root (beside its target on another
//!    file system). A failure here removes what was staged and created:
//!    the real tree is as it was. A crash from here on leaves each file
//!    old or new, and the temporary files in that directory, which the
//!    next commit into the root removes.
//! 3. In order: exchange each staged file with the file it replaces (kept
//!    aside in the hidden directory), rename each new one into place
//!    (refusing one that appeared meanwhile), move each deleted entry
//!    aside (a directory whole, by one rename). A failure here puts
//!    everything kept aside back, removes every new one and the new
//!    directories, newest first.
//! 4. Once all is in place, what was kept aside is removed (a directory
//!    by handle, whatever its names and depth).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Beneath, PathError, SetAside, Staged};

/// Why a step failed.
type Failure = String;

fn failed(error: PathError) -> Failure {
    error.to_string()
}

/// Why a commit failed (the real tree is as it was), and at which change
/// when one change's step failed: `(root, op)` indices.
#[derive(Debug)]
pub(crate) struct Failed {
    /// What went wrong.
    pub(crate) reason: String,
    /// The change whose step failed, if one did.
    pub(crate) at: Option<(usize, usize)>,
}

/// Tags a step's failure with the change it belongs to.
fn at(r: usize, i: usize) -> impl FnOnce(Failure) -> Failed {
    move |reason| Failed {
        reason,
        at: Some((r, i)),
    }
}

use super::changes::Change;
use super::judge::{Op, shown};

/// Test seam: just before its `n`-th step that touches the real tree
/// (staging included), make the commit fail, as a full disk or a vanished
/// directory would, or kill the process (`SIGKILL`), as a crash would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(all(feature = "landlock", target_os = "linux")),
    allow(dead_code, reason = "set only by the view's run")
)]
pub(crate) enum CommitFault {
    /// Fail the step.
    Fail(usize),
    /// Kill the process at the step (the steps of removing what was kept
    /// aside and of setting directory modes count too).
    Kill(usize),
}

/// One root's allowed changes.
pub(crate) struct RootOps<'a> {
    /// The root.
    pub(crate) root: &'a Path,
    /// Its changes, parents before children.
    pub(crate) ops: Vec<Op>,
    /// Where a file or link is removed to make room for a new entry, or
    /// is the old half of a rename (looked up per change: sets, so that
    /// the bookkeeping stays O(N log N)).
    removed_files: BTreeSet<String>,
    /// Where a directory is removed (to make room for a file or link).
    removed_dirs: BTreeSet<String>,
    /// Where something other than a delete happens.
    placed: BTreeSet<String>,
    /// Where renamed files were.
    renamed_from: BTreeSet<String>,
    /// Removals that may not fail alone (other changes were judged with
    /// what they remove gone): the whole commit fails with one of them.
    pub(crate) pinned: BTreeSet<String>,
}

impl<'a> RootOps<'a> {
    /// One root's changes, with their lookups.
    pub(crate) fn new(root: &'a Path, ops: Vec<Op>) -> Self {
        let mut removed_files = BTreeSet::new();
        let mut removed_dirs = BTreeSet::new();
        let mut placed = BTreeSet::new();
        let mut renamed_from = BTreeSet::new();
        for op in &ops {
            match op {
                Op::Delete {
                    rel, dir: false, ..
                } => {
                    removed_files.insert(rel.clone());
                }
                Op::Delete { rel, dir: true, .. } => {
                    removed_dirs.insert(rel.clone());
                }
                other => {
                    placed.insert(other.rel().to_owned());
                }
            }
            if let Some(from) = op.renamed_from() {
                renamed_from.insert(from.to_owned());
            }
        }
        Self {
            root,
            ops,
            removed_files,
            removed_dirs,
            placed,
            renamed_from,
            pinned: BTreeSet::new(),
        }
    }
}

impl<'a> RootOps<'a> {
    /// Takes the change at `i` out, with what cannot land without it: the
    /// other halves at its path (the delete that made room, the entry that
    /// took it), everything beneath it, and for a rename the old file's
    /// delete (the file stays). A rename whose delete is taken out lands
    /// as a copy. Returns what is left and what was taken.
    pub(crate) fn take_out(self, i: usize) -> (RootOps<'a>, Vec<Op>) {
        let RootOps {
            root, ops, pinned, ..
        } = self;
        let Some(failed) = ops.get(i) else {
            let mut left = RootOps::new(root, ops);
            left.pinned = pinned;
            return (left, Vec::new());
        };
        let rel = failed.rel().to_owned();
        let renamed_from = failed.renamed_from().map(str::to_owned);
        let beneath = format!("{rel}/");
        let goes = |op: &Op| {
            op.rel() == rel
                || op.rel().starts_with(&beneath)
                || (matches!(op, Op::Delete { dir: false, .. })
                    && renamed_from.as_deref() == Some(op.rel()))
        };
        let (taken, mut kept): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(|op| goes(op));
        let deleted: Vec<&str> = taken
            .iter()
            .filter(|op| matches!(op, Op::Delete { .. }))
            .map(Op::rel)
            .collect();
        for op in &mut kept {
            if let Op::Write {
                renamed_from: from @ Some(_),
                action,
                ..
            } = op
                && deleted.contains(&from.as_deref().unwrap_or_default())
            {
                *from = None;
                *action = super::changes::ChangeAction::Create;
            }
        }
        let mut left = RootOps::new(root, kept);
        left.pinned = pinned;
        (left, taken)
    }
}

/// What was done so far, to undo on failure.
#[derive(Default)]
struct Undo {
    dirs: Vec<(PathBuf, String)>,
    created: Vec<(PathBuf, String)>,
    aside: Vec<SetAside>,
}

struct Steps {
    taken: usize,
    fault: Option<CommitFault>,
}

impl Steps {
    fn next(&mut self) -> Result<(), Failure> {
        self.taken += 1;
        match self.fault {
            Some(CommitFault::Fail(n)) if n == self.taken => {
                Err("the commit failed: a fault injected by a test".to_owned())
            }
            Some(CommitFault::Kill(n)) if n == self.taken => kill_self(),
            _ => Ok(()),
        }
    }

    /// A step that cannot fail (the commit has succeeded), where only a
    /// crash can stop it.
    fn after(&mut self) {
        self.taken += 1;
        if self.fault == Some(CommitFault::Kill(self.taken)) {
            kill_self();
        }
    }
}

/// The test seam's crash: `SIGKILL` to this process.
fn kill_self() -> ! {
    #[cfg(unix)]
    {
        use rustix::process::{Signal, getpid, kill_process};
        let _ = kill_process(getpid(), Signal::KILL);
    }
    std::process::abort()
}

/// Commits every root's changes; on success the changes as reported, on
/// failure the error (and the real tree as it was).
pub(crate) fn commit(
    beneath: &Beneath,
    roots: &[RootOps<'_>],
    cwd: &Path,
    fault: Option<CommitFault>,
) -> Result<Vec<Change>, Failed> {
    let mut undo = Undo::default();
    let mut steps = Steps { taken: 0, fault };
    match apply(beneath, roots, &mut undo, &mut steps) {
        Ok(()) => {
            for aside in undo.aside {
                steps.after();
                let _ = beneath.release(aside);
            }
            // New directories get their own mode last, deepest first (one
            // the command made read-only still took its entries).
            for root in roots {
                for op in root.ops.iter().rev() {
                    if let Op::CreateDir { rel, mode } = op {
                        steps.after();
                        let _ = beneath.set_dir_mode(root.root, rel, *mode);
                    }
                }
            }
            Ok(roots
                .iter()
                .flat_map(|r| {
                    r.ops.iter().filter_map(|op| {
                        // A delete that makes room for a new entry is part
                        // of that entry's change.
                        let replaced_by_next =
                            matches!(op, Op::Delete { .. }) && r.placed.contains(op.rel());
                        // The delete half of a rename is the rename.
                        let moved = matches!(op, Op::Delete { dir: false, .. })
                            && r.renamed_from.contains(op.rel());
                        (!replaced_by_next && !moved).then(|| Change {
                            path: shown(&r.root.join(op.rel()), cwd),
                            action: op.action(),
                            from: op.renamed_from().map(|from| shown(&r.root.join(from), cwd)),
                        })
                    })
                })
                .collect())
        }
        Err(error) => {
            for aside in undo.aside.into_iter().rev() {
                let _ = beneath.restore(aside);
            }
            for (root, rel) in undo.created.iter().rev() {
                let _ = beneath.remove_file(root, rel);
            }
            for (root, rel) in undo.dirs.iter().rev() {
                let _ = beneath.remove_dir(root, rel);
            }
            Err(error)
        }
    }
}

/// Steps 1 to 3.
fn apply(
    beneath: &Beneath,
    roots: &[RootOps<'_>],
    undo: &mut Undo,
    steps: &mut Steps,
) -> Result<(), Failed> {
    // 1. Directories.
    for (r, root) in roots.iter().enumerate() {
        for (i, op) in root.ops.iter().enumerate() {
            if let Op::CreateDir { rel, mode } = op {
                if replaced_first(root, rel) {
                    continue;
                }
                steps.next().map_err(at(r, i))?;
                beneath
                    .create_dir_all_with_mode(root.root, rel, *mode)
                    .map_err(|e| at(r, i)(failed(e)))?;
                undo.dirs.push((root.root.to_path_buf(), rel.clone()));
            }
        }
    }
    // 2. Staging.
    let mut staged: Vec<Option<Staged>> = Vec::new();
    let staging = stage_all(beneath, roots, steps, &mut staged);
    if let Err(error) = staging {
        for file in staged.into_iter().flatten() {
            let _ = beneath.discard(file);
        }
        return Err(error);
    }
    // 3. In place.
    let mut staged = staged.into_iter();
    let mut failure = None;
    'roots: for (r, root) in roots.iter().enumerate() {
        for (i, op) in root.ops.iter().enumerate() {
            let file = if matches!(op, Op::Write { .. } | Op::Symlink { .. }) {
                staged.next().flatten()
            } else {
                None
            };
            if let Err(error) = place(beneath, root, op, file, undo, steps) {
                failure = Some(at(r, i)(error));
                break 'roots;
            }
        }
    }
    if let Some(error) = failure {
        for file in staged.flatten() {
            let _ = beneath.discard(file);
        }
        return Err(error);
    }
    Ok(())
}

/// Whether a new entry at `rel` can only be made once the file or link at
/// its place, or at the place of a directory above it, is removed (then it
/// is made in step 3): until then, making it would follow a link the
/// command replaced by a directory, into that link's target.
fn replaced_first(root: &RootOps<'_>, rel: &str) -> bool {
    let mut at = rel;
    loop {
        if root.removed_files.contains(at) {
            return true;
        }
        match at.rfind('/') {
            Some(slash) => at = at.get(..slash).unwrap_or_default(),
            None => return false,
        }
    }
}

/// Whether the new entry at `rel` can only be staged once the entry there
/// now is out of the way.
fn staged_late(root: &RootOps<'_>, rel: &str) -> bool {
    replaced_first(root, rel) || root.removed_dirs.contains(rel)
}

fn stage_all(
    beneath: &Beneath,
    roots: &[RootOps<'_>],
    steps: &mut Steps,
    staged: &mut Vec<Option<Staged>>,
) -> Result<(), Failed> {
    for (r, root) in roots.iter().enumerate() {
        // Where each new file of this root is in `staged`, for the hard
        // links to it.
        let mut staged_at: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, op) in root.ops.iter().enumerate() {
            stage_one(beneath, root, op, steps, staged, &mut staged_at).map_err(at(r, i))?;
        }
    }
    Ok(())
}

/// Stages one change's new content (none for directories and deletes,
/// and none yet for one staged late).
fn stage_one<'r>(
    beneath: &Beneath,
    root: &'r RootOps<'_>,
    op: &'r Op,
    steps: &mut Steps,
    staged: &mut Vec<Option<Staged>>,
    staged_at: &mut BTreeMap<&'r str, usize>,
) -> Result<(), Failure> {
    match op {
        Op::Write {
            rel,
            staged: from,
            mode,
            link_of,
            ..
        } => {
            if staged_late(root, rel) {
                staged.push(None);
                return Ok(());
            }
            steps.next()?;
            let first = link_of
                .as_deref()
                .and_then(|first| staged_at.get(first))
                .and_then(|&at| staged.get(at))
                .and_then(Option::as_ref);
            // A hard link among the command's new files lands as
            // one; where the two cannot share a file (another file
            // system beneath the root), as a copy.
            let file = match first.map(|first| beneath.stage_hard_link(root.root, rel, first)) {
                Some(Ok(file)) => file,
                _ => beneath
                    .stage_file(root.root, rel, from, *mode)
                    .map_err(failed)?,
            };
            staged_at.insert(rel, staged.len());
            staged.push(Some(file));
        }
        Op::Symlink { rel, target, .. } => {
            if staged_late(root, rel) {
                staged.push(None);
                return Ok(());
            }
            steps.next()?;
            staged.push(Some(
                beneath
                    .stage_symlink(root.root, rel, target)
                    .map_err(failed)?,
            ));
        }
        Op::CreateDir { .. } | Op::Delete { .. } => {}
    }
    Ok(())
}

fn place(
    beneath: &Beneath,
    root: &RootOps<'_>,
    op: &Op,
    file: Option<Staged>,
    undo: &mut Undo,
    steps: &mut Steps,
) -> Result<(), Failure> {
    let base = root.root;
    let staged_now = |steps: &mut Steps| -> Result<Staged, Failure> {
        steps.next()?;
        match op {
            Op::Write {
                rel, staged, mode, ..
            } => beneath.stage_file(base, rel, staged, *mode).map_err(failed),
            Op::Symlink { rel, target, .. } => {
                beneath.stage_symlink(base, rel, target).map_err(failed)
            }
            Op::CreateDir { rel, .. } | Op::Delete { rel, .. } => {
                Err(format!("nothing to stage for {rel}"))
            }
        }
    };
    match op {
        Op::CreateDir { rel, mode } => {
            if replaced_first(root, rel) {
                steps.next()?;
                beneath
                    .create_dir_all_with_mode(base, rel, *mode)
                    .map_err(failed)?;
                undo.dirs.push((base.to_path_buf(), rel.clone()));
            }
        }
        Op::Write { rel, replace, .. } | Op::Symlink { rel, replace, .. } => {
            let file = match file {
                Some(file) => file,
                None => staged_now(steps)?,
            };
            if let Err(error) = steps.next() {
                let _ = beneath.discard(file);
                return Err(error);
            }
            if *replace {
                undo.aside.push(beneath.replace(file).map_err(failed)?);
            } else {
                beneath.commit_new(file).map_err(failed)?;
                undo.created.push((base.to_path_buf(), rel.clone()));
            }
        }
        Op::Delete {
            rel,
            dir,
            name: Some(name),
        } => {
            // A name that is not UTF-8: by its directory's handle.
            steps.next()?;
            let parent = rel
                .rfind('/')
                .map_or("", |slash| rel.get(..slash).unwrap_or(""));
            undo.aside.push(
                beneath
                    .set_aside_entry(base, parent, name, *dir)
                    .map_err(failed)?,
            );
        }
        Op::Delete {
            rel, dir: false, ..
        } => {
            steps.next()?;
            undo.aside
                .push(beneath.set_aside(base, rel).map_err(failed)?);
        }
        Op::Delete { rel, dir: true, .. } => {
            // Whole, by one rename: whatever its names or depth.
            steps.next()?;
            undo.aside
                .push(beneath.set_aside_dir(base, rel).map_err(failed)?);
        }
    }
    Ok(())
}
