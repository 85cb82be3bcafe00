//! Judged write-back: what a command changed in a writable root, read from
//! the staging (upper) layer of the root's overlay once it has ended, judged
//! entry by entry as a write through the path policy, and committed to the
//! real tree together: a change whose step of the commit fails is taken
//! out (with what cannot land without it) and refused alone, the commit
//! undone and made again without it, so the rest lands.
//!
//! - `scan` reads the staging layer: created, modified and deleted
//!   entries (whiteouts and opaque directories), mode changes, symbolic and
//!   hard links, special files. Beneath a directory the command put in the
//!   place of a link or a file, the real tree holds nothing (the link's
//!   target is never written through); beneath a directory it removed and
//!   made again (an opaque one), every real entry it does not hold is
//!   deleted, at every depth. Each real entry a change touches is marked
//!   when it changed after the view was built (its status-change time is
//!   later than the staging layer's birth), by the host or another run.
//! - `judge` decides each change: the path policy with write access
//!   (protected persistence files, blocked names — also in any letter
//!   case — read-only roots), portable names for new entries, link targets
//!   that must stay inside the roots, no special files, no set-id or sticky
//!   bits, no hard link to an inode the command did not create; a change
//!   to a real entry that changed meanwhile is a `conflict` (the other
//!   version is kept), and so is removing or replacing a real directory
//!   the runner cannot list (what it holds was never seen); a file rewritten with its own bytes, only opened
//!   for writing or touched is no change (compared in chunks). A link
//!   whose name is a directory on the way to a protected entry (`.cargo`,
//!   `.github`) is refused; so is any `.git` file (a `gitdir:` pointer).
//! - `history`: an index or ref the command changed lands only when no
//!   index entry or commit it added (read with `gix`) adds or changes a
//!   protected path, or deletes one the view masked (`masked-deletion`).
//! - `decider`: a [`WriteBackDecider`] the sandbox holds is asked, once
//!   per run, about the changes refused only because they write a
//!   write-protected entry; the approved ones land in the same commit.
//! - each change is judged at every other name it is reachable by through
//!   a link the real tree already holds at a guarded name
//!   ([`agentcaps_paths::GuardedLinks`]: `.cargo -> cfg` makes
//!   `cfg/config.toml` cargo's config), the same judge the file tools and
//!   patches use.
//! - `gitdir`: inside a git directory (`.git`, its `modules/*` and
//!   `worktrees/*`) only git's data lands; `config` is judged by its keys
//!   (`git-config-key` names the first that could run a program).
//! - `commit` puts the allowed changes in place through the path crate's
//!   handles ([`agentcaps_paths::Beneath`]): every new content is staged
//!   first, in one hidden directory per root (`.agentcaps-commit-PID-N`,
//!   `0700`), then each is exchanged with the file it replaces (kept aside
//!   there), created or moved aside there; any failure puts everything
//!   back. A process killed mid-commit leaves each file old or new and its
//!   temporary files only in that directory, which the next run into the
//!   root removes (whether it commits anything or not). An entry whose own name is not UTF-8 is deleted by
//!   its directory's handle. Names the
//!   command hard-linked among its own new files land as hard links of one
//!   file (compilers make them); a hard link to a file it did not create
//!   is refused. New directories get the command's mode (`& 0o777`) once
//!   everything beneath them is in place.
//!
//! Every path of the staging layer and the real tree is read through
//! [`agentcaps_paths::long_path`], so a change beneath a path longer than
//! `PATH_MAX` is scanned, judged and committed like any other.
//!
//! Each root is locked (`flock` on its directory) from the scan to the end
//! of the commit, so two runs' write-backs into one root take turns, and
//! the later one sees the earlier one's commit as a conflict.

mod changes;
mod commit;
mod decider;
mod gitdir;
mod history;
mod judge;
mod scan;
#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agentcaps_paths::{GuardedLinks, LinkJudging, PathPolicy};

use changes::Rule;
pub use changes::{Change, ChangeAction, Changes, RefusedChange};
pub(crate) use commit::CommitFault;
use commit::{RootOps, commit};
pub(crate) use decider::Decider;
pub use decider::WriteBackDecider;
use judge::{Judged, Judging, Op, judge, refused_change, shown};
use scan::scan;

/// Judges the changes each staging layer holds over its root (`(root,
/// upper)` pairs) and commits the allowed ones, all or none; what a run in
/// the private view does when the command has ended. Paths are shown
/// relative to `cwd` when beneath it. Public for benchmarks and tests.
#[doc(hidden)]
#[must_use]
pub fn write_back_layers(paths: &PathPolicy, layers: &[(&Path, &Path)], cwd: &Path) -> Changes {
    write_back(paths, layers, cwd, None, None)
}

/// The built-in write-protected entry of git's config.
const GIT_CONFIG: &str = "**/.git/config";

/// An exclusive lock on each root's directory (in one order, so two
/// write-backs never wait for each other crosswise). A root that cannot be
/// opened is not locked; its commit then fails on its own.
fn lock_roots(layers: &[(&Path, &Path)]) -> Vec<std::fs::File> {
    let mut roots: Vec<&Path> = layers.iter().map(|&(root, _)| root).collect();
    roots.sort();
    roots.dedup();
    roots
        .into_iter()
        .filter_map(|root| {
            let dir = std::fs::File::open(root).ok()?;
            #[cfg(unix)]
            {
                use rustix::fs::{FlockOperation, flock};
                flock(&dir, FlockOperation::LockExclusive).ok()?;
            }
            Some(dir)
        })
        .collect()
}

/// One root's verdicts: as judged, and (when a decider may be asked) as
/// judged with write-protected entries let through.
struct Verdicts<'a> {
    root: &'a Path,
    judged: Judged,
    lenient: Option<Judged>,
    /// Removals of guarded links that other changes were judged without:
    /// one that cannot land takes the whole commit with it.
    pinned: BTreeSet<String>,
}

/// What identifies an op across the two judgings: its path and kind.
fn op_key(op: &Op) -> (String, u8) {
    let kind = match op {
        Op::CreateDir { .. } => 0,
        Op::Write { .. } => 1,
        Op::Symlink { .. } => 2,
        Op::Delete { .. } => 3,
    };
    (op.rel().to_owned(), kind)
}

/// [`write_back_layers`] with a test fault and a decider.
pub(crate) fn write_back(
    paths: &PathPolicy,
    layers: &[(&Path, &Path)],
    cwd: &Path,
    fault: Option<CommitFault>,
    decider: Option<&Decider>,
) -> Changes {
    let mut changes = Changes::default();
    // Held until the commit is over: another run's write-back into the
    // same root waits, then sees this one's commit as a change of the real
    // tree since its view was built (a conflict), never loses it.
    let _locks = lock_roots(layers);
    // What a commit killed earlier left (its hidden directory) goes now,
    // whether or not this run commits anything.
    if !layers.is_empty()
        && let Ok(beneath) = paths.open_beneath()
    {
        beneath.remove_commit_left_overs();
    }
    let mut aliases = None;
    let mut verdicts = Vec::new();
    for &(root, upper) in layers {
        let entries = match scan(root, upper) {
            Ok(entries) => entries,
            Err(error) => {
                changes.refused.push(RefusedChange {
                    path: shown(root, cwd),
                    action: ChangeAction::Modify,
                    from: None,
                    rule: Rule::StagingUnreadable.id(),
                    reason: format!(
                        "the command's changes could not be read ({error}); none of them landed"
                    ),
                });
                continue;
            }
        };
        if entries.is_empty() {
            continue;
        }
        // The real tree's links at guarded names, found once for all the
        // roots (only when something changed).
        let aliases = aliases.get_or_insert_with(|| {
            let roots: Vec<&Path> = layers.iter().map(|&(root, _)| root).collect();
            GuardedLinks::of_roots(paths, &roots)
        });
        let judge_with = |aliases: &GuardedLinks, protected_allowed: bool| {
            let how = Judging {
                aliases,
                protected_allowed,
            };
            let mut judged = judge(paths, root, &entries, &how);
            history::judge_records(paths, root, upper, &mut judged, protected_allowed);
            judged
        };
        let mut judged = judge_with(aliases, false);
        // A guarded link the command removed (and whose removal is
        // allowed) is no other name of anything once committed: judged
        // again without it. Its removal must then land, or nothing does.
        let removed: Vec<(String, PathBuf)> = judged
            .ops
            .iter()
            .filter(|op| matches!(op, Op::Delete { .. }))
            .map(|op| (op.rel().to_owned(), root.join(op.rel())))
            .collect();
        let gone: Vec<PathBuf> = removed.iter().map(|(_, at)| at.clone()).collect();
        let fewer = aliases.without(&gone);
        let mut pinned = BTreeSet::new();
        if let Some(fewer) = &fewer {
            judged = judge_with(fewer, false);
            pinned = removed
                .into_iter()
                .filter(|(_, at)| aliases.has_link_at_or_beneath(at))
                .map(|(rel, _)| rel)
                .collect();
        }
        let aliases = fewer.as_ref().unwrap_or(aliases);
        let judge_as = |protected_allowed: bool| judge_with(aliases, protected_allowed);
        let askable = decider.is_some() && judged.refused.iter().any(|r| r.rule == WRITE_PROTECTED);
        let lenient = askable.then(|| judge_as(true));
        verdicts.push(Verdicts {
            root,
            judged,
            lenient,
            pinned,
        });
    }
    let (roots, lifted) = decide(paths, verdicts, decider, cwd, &mut changes);
    if roots.is_empty() {
        return changes;
    }
    // A git config the judge read key by key lands although the policy
    // protects `.git/config` from writes, and so does what a decider
    // approved: the commit writes them through a policy without those
    // entries (everything else as judged).
    let writes_git_config = roots.iter().any(|root| {
        root.ops.iter().any(|op| {
            matches!(op, Op::Write { .. })
                && gitdir::git_place(Path::new(op.rel()), false) == gitdir::GitPlace::Config
        })
    });
    let mut lift: Vec<&str> = lifted.iter().map(String::as_str).collect();
    if writes_git_config {
        lift.push(GIT_CONFIG);
    }
    let beneath = lift
        .iter()
        .try_fold(paths.clone(), |policy, entry| {
            policy.without_write_protected(entry)
        })
        .and_then(|policy| policy.open_beneath())
        .map(|mut beneath| {
            // One descriptor per directory, not per staged file: a command
            // that writes tens of thousands of files commits under the usual
            // limit of 1024 open files.
            beneath.share_dir_handles(true);
            // The links were judged above, in the tree as it will be
            // (links the command removed no longer count).
            beneath.set_link_judging(LinkJudging::ByCaller);
            // Every temporary file in one hidden directory per root: a
            // commit killed at any point leaves each file old or new and
            // nothing stray beside them (the next commit removes it).
            beneath.stage_in_commit_dir(true);
            beneath
        });
    let mut roots = roots;
    match beneath {
        Ok(beneath) => commit_each_alone(&beneath, roots, cwd, fault, &mut changes),
        Err(error) => {
            let reason = format!("none of the command's changes landed: {error}");
            refuse_all(&mut roots, &reason, cwd, &mut changes);
        }
    }
    changes
}

/// How many changes may fail one by one before the commit gives up (and
/// nothing lands): more is a failure of the whole, not of changes.
const MAX_FAILED_ALONE: usize = 16;

/// Commits the roots' changes; a change whose step fails is taken out
/// (with what cannot land without it), refused, and the rest committed
/// again from the real tree as it was.
fn commit_each_alone(
    beneath: &agentcaps_paths::Beneath,
    mut roots: Vec<RootOps<'_>>,
    cwd: &Path,
    mut fault: Option<CommitFault>,
    changes: &mut Changes,
) {
    let mut failed_alone = 0;
    while !roots.is_empty() {
        let failure = match commit(beneath, &roots, cwd, fault.take()) {
            Ok(applied) => {
                changes.applied = applied;
                return;
            }
            Err(failure) => failure,
        };
        let at = failure.at.filter(|&(r, i)| {
            failed_alone < MAX_FAILED_ALONE
                && roots.get(r).is_some_and(|root| {
                    root.ops
                        .get(i)
                        .is_some_and(|op| !root.pinned.contains(op.rel()))
                })
        });
        let Some((r, i)) = at else {
            let reason = format!("none of the command's changes landed: {}", failure.reason);
            refuse_all(&mut roots, &reason, cwd, changes);
            return;
        };
        failed_alone += 1;
        let root = roots.remove(r);
        let base = root.root;
        let (left, taken) = root.take_out(i);
        for op in taken {
            changes.refused.push(commit_failed(
                base,
                &op,
                &format!(
                    "it could not be applied ({}); it was left out and the command's other changes committed",
                    failure.reason
                ),
                cwd,
            ));
        }
        if !left.ops.is_empty() {
            roots.insert(r, left);
        }
    }
}

/// Refuses every change left in `roots` with `reason`.
fn refuse_all(roots: &mut Vec<RootOps<'_>>, reason: &str, cwd: &Path, changes: &mut Changes) {
    for root in roots.drain(..) {
        for op in &root.ops {
            changes
                .refused
                .push(commit_failed(root.root, op, reason, cwd));
        }
    }
}

/// The refusal of a change the commit could not apply.
fn commit_failed(root: &Path, op: &Op, reason: &str, cwd: &Path) -> RefusedChange {
    RefusedChange {
        path: shown(&root.join(op.rel()), cwd),
        action: op.action(),
        from: op.renamed_from().map(|from| shown(&root.join(from), cwd)),
        rule: Rule::CommitFailed.id(),
        reason: reason.to_owned(),
    }
}

/// The rule a decider is asked about.
const WRITE_PROTECTED: &str = "write-protected";

/// Asks the decider (if any) about each root's askable refusals — those
/// whose change the lenient judging allows — and returns each root's ops
/// to commit (the allowed ones and the approved ones, in the lenient
/// order: parents first) with the write-protected entries the approved
/// ones need lifted; the refusals that stand go to `changes`.
fn decide<'a>(
    paths: &PathPolicy,
    verdicts: Vec<Verdicts<'a>>,
    decider: Option<&Decider>,
    cwd: &Path,
    changes: &mut Changes,
) -> (Vec<RootOps<'a>>, BTreeSet<String>) {
    // (root, refusal) pairs that may be asked about.
    let mut asked_at = Vec::new();
    let mut asked = Vec::new();
    for (r, verdict) in verdicts.iter().enumerate() {
        let Some(lenient) = &verdict.lenient else {
            continue;
        };
        let strict: BTreeSet<(String, u8)> = verdict.judged.ops.iter().map(op_key).collect();
        for (i, refused) in verdict.judged.refused.iter().enumerate() {
            let lands_if_approved = refused.rule == WRITE_PROTECTED
                && lenient.ops.iter().any(|op| {
                    Path::new(op.rel()).starts_with(&refused.rel) && !strict.contains(&op_key(op))
                });
            if lands_if_approved {
                asked_at.push((r, i));
                asked.push(refused_change(
                    verdict.root,
                    cwd,
                    judge::Refused {
                        rel: refused.rel.clone(),
                        action: refused.action,
                        rule: refused.rule.clone(),
                        reason: refused.reason.clone(),
                        from: refused.from.clone(),
                    },
                ));
            }
        }
    }
    let answers = match decider {
        Some(decider) if !asked.is_empty() => decider.answers(&asked),
        _ => Vec::new(),
    };
    let approved: BTreeSet<(usize, usize)> = asked_at
        .into_iter()
        .zip(answers)
        .filter_map(|(at, yes)| yes.then_some(at))
        .collect();
    let mut roots = Vec::new();
    let mut lifted = BTreeSet::new();
    for (r, verdict) in verdicts.into_iter().enumerate() {
        let Verdicts {
            root,
            judged,
            lenient,
            pinned,
        } = verdict;
        let approved_rels: Vec<PathBuf> = judged
            .refused
            .iter()
            .enumerate()
            .filter(|(i, _)| approved.contains(&(r, *i)))
            .map(|(_, refused)| refused.rel.clone())
            .collect();
        let ops = match lenient {
            Some(lenient) if !approved_rels.is_empty() => {
                let strict: BTreeSet<(String, u8)> = judged.ops.iter().map(op_key).collect();
                let approves =
                    |rel: &str| approved_rels.iter().any(|a| Path::new(rel).starts_with(a));
                // What the lenient judging still refused beneath an
                // approved change is listed as refused.
                for refused in lenient.refused {
                    if approves(&refused.rel.to_string_lossy())
                        && !judged.refused.iter().any(|r| r.rel == refused.rel)
                    {
                        changes.refused.push(refused_change(root, cwd, refused));
                    }
                }
                lenient
                    .ops
                    .into_iter()
                    .filter(|op| {
                        let ours = strict.contains(&op_key(op));
                        if !ours && approves(op.rel()) {
                            if let Some(entry) = protected_entry(paths, &root.join(op.rel())) {
                                lifted.insert(entry);
                            }
                            return true;
                        }
                        ours
                    })
                    .collect()
            }
            _ => judged.ops,
        };
        for (i, refused) in judged.refused.into_iter().enumerate() {
            if !approved.contains(&(r, i)) {
                changes.refused.push(refused_change(root, cwd, refused));
            }
        }
        if !ops.is_empty() {
            let mut ops = RootOps::new(root, ops);
            ops.pinned = pinned;
            roots.push(ops);
        }
    }
    (roots, lifted)
}

/// The write-protected entry that refuses a write at `location`, if any.
fn protected_entry(paths: &PathPolicy, location: &Path) -> Option<String> {
    match paths.judge_location(location, agentcaps_paths::Access::Write) {
        Err(agentcaps_paths::PathError::WriteProtected { entry, .. }) => Some(entry),
        _ => None,
    }
}
