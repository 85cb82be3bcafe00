//! Judged write-back: what a command changed in a writable root, read from
//! the staging (upper) layer of the root's overlay once it has ended, judged
//! entry by entry as a write through the path policy, and committed to the
//! real tree all together or not at all.
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
//!   version is kept); a file rewritten with its own bytes, only opened
//!   for writing or touched is no change (compared in chunks). A link
//!   whose name is a directory on the way to a protected entry (`.cargo`,
//!   `.github`) is refused; so is any `.git` file (a `gitdir:` pointer).
//! - `history`: an index or ref the command changed lands only when no
//!   index entry or commit it added (read with `gix`) adds or changes a
//!   protected path, or deletes one the view masked (`masked-deletion`).
//! - `aliases`: each change is judged at every other name it is reachable
//!   by through a link the real tree already holds at a guarded name
//!   (`.cargo -> cfg` makes `cfg/config.toml` cargo's config).
//! - `gitdir`: inside a git directory (`.git`, its `modules/*` and
//!   `worktrees/*`) only git's data lands; `config` is judged by its keys
//!   (`git-config-key` names the first that could run a program).
//! - `commit` puts the allowed changes in place through the path crate's
//!   handles ([`agentcaps_paths::Beneath`]): every new content is staged
//!   first, then each is exchanged with the file it replaces (kept aside),
//!   created or moved aside; any failure puts everything back. Names the
//!   command hard-linked among its own new files land as hard links of one
//!   file (compilers make them); a hard link to a file it did not create
//!   is refused. New directories get the command's mode (`& 0o777`) once
//!   everything beneath them is in place.
//!
//! Each root is locked (`flock` on its directory) from the scan to the end
//! of the commit, so two runs' write-backs into one root take turns, and
//! the later one sees the earlier one's commit as a conflict.

mod aliases;
mod changes;
mod commit;
mod gitdir;
mod history;
mod judge;
mod scan;

use std::path::Path;

use agentcaps_paths::PathPolicy;

use aliases::Aliases;
use changes::Rule;
pub use changes::{Change, ChangeAction, Changes, RefusedChange};
pub(crate) use commit::CommitFault;
use commit::{RootOps, commit};
use judge::{judge, refused_change, shown};
use scan::scan;

/// Judges the changes each staging layer holds over its root (`(root,
/// upper)` pairs) and commits the allowed ones, all or none; what a run in
/// the private view does when the command has ended. Paths are shown
/// relative to `cwd` when beneath it. Public for benchmarks and tests.
#[doc(hidden)]
#[must_use]
pub fn write_back_layers(paths: &PathPolicy, layers: &[(&Path, &Path)], cwd: &Path) -> Changes {
    write_back(paths, layers, cwd, None)
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

/// [`write_back_layers`] with a test fault.
pub(crate) fn write_back(
    paths: &PathPolicy,
    layers: &[(&Path, &Path)],
    cwd: &Path,
    fault: Option<CommitFault>,
) -> Changes {
    let mut changes = Changes::default();
    let mut roots = Vec::new();
    // Held until the commit is over: another run's write-back into the
    // same root waits, then sees this one's commit as a change of the real
    // tree since its view was built (a conflict), never loses it.
    let _locks = lock_roots(layers);
    let mut aliases = None;
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
            Aliases::of_roots(paths, &roots)
        });
        let mut judged = judge(paths, root, &entries, aliases);
        history::judge_records(paths, root, upper, &mut judged);
        for refused in judged.refused {
            changes.refused.push(refused_change(root, cwd, refused));
        }
        if !judged.ops.is_empty() {
            roots.push(RootOps::new(root, judged.ops));
        }
    }
    if roots.is_empty() {
        return changes;
    }
    // A git config the judge read key by key lands although the policy
    // protects `.git/config` from writes: the commit writes it through a
    // policy without that one entry (everything else as judged).
    let writes_git_config = roots.iter().any(|root| {
        root.ops.iter().any(|op| {
            matches!(op, judge::Op::Write { .. })
                && gitdir::git_place(Path::new(op.rel()), false) == gitdir::GitPlace::Config
        })
    });
    let committed = if writes_git_config {
        paths.without_write_protected(GIT_CONFIG)
    } else {
        Ok(paths.clone())
    }
    .and_then(|policy| policy.open_beneath())
    .map(|mut beneath| {
        // One descriptor per directory, not per staged file: a command
        // that writes tens of thousands of files commits under the usual
        // limit of 1024 open files.
        beneath.share_dir_handles(true);
        beneath
    })
    .map_err(|e| e.to_string())
    .and_then(|beneath| commit(&beneath, &roots, cwd, fault));
    match committed {
        Ok(applied) => changes.applied = applied,
        Err(reason) => {
            for root in &roots {
                for op in &root.ops {
                    changes.refused.push(RefusedChange {
                        path: shown(&root.root.join(op.rel()), cwd),
                        action: op.action(),
                        from: op
                            .renamed_from()
                            .map(|from| shown(&root.root.join(from), cwd)),
                        rule: Rule::CommitFailed.id(),
                        reason: format!("none of the command's changes landed: {reason}"),
                    });
                }
            }
        }
    }
    changes
}
