//! What a command records in git is judged like what it writes.
//!
//! A command may write git's data (objects, refs, the index) without
//! touching the work tree: `git hash-object -w`, `git update-index --add
//! --cacheinfo …,.github/workflows/x.yml`, `git commit-tree` and `git
//! update-ref` put a workflow in the branch, which CI runs at the next
//! push and the host's `git checkout .` writes out. So when a write-back
//! replaces a git directory's `index`, or moves a ref (`HEAD`, `refs/**`,
//! `packed-refs`), the index entries and the commits it adds are read —
//! with a library that runs nothing, never the host's `git` — and diffed
//! against what was there:
//!
//! - an index entry or a commit that adds or changes a path the policy
//!   protects from writes (or blocks) refuses the index or the ref
//!   change, naming the entry or the commit and the path;
//! - one that deletes a path the view masked (the command never saw it;
//!   git in the view reports every masked tracked file as deleted) is a
//!   `masked-deletion`.
//!
//! A commit is the command's when the real tree's object store does not
//! hold it (walking stops at the first one it holds: that history was
//! there before). A merge adds what differs from every parent. Paths are
//! judged beneath the directory that holds the top `.git` (for a
//! submodule's git directory too: the protected names match at any
//! depth). What cannot be read (an object missing, a malformed index, a
//! repository of another hash) refuses the change: what is not understood
//! does not land.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agentcaps_paths::{Access, PathPolicy, long_path};
use gix_hash::ObjectId;
use gix_object::ObjectRef;

use super::changes::{ChangeAction, Rule};
use super::judge::{Judged, Op, Refused};

/// More commits than this added by one ref change, and it is refused (the
/// walk would cost too much).
const MAX_NEW_COMMITS: usize = 100_000;

/// What a write in a git directory records.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Record {
    /// The index.
    Index,
    /// A loose ref (`HEAD`, `refs/…`), by its name.
    Ref(String),
    /// `packed-refs`.
    PackedRefs,
}

/// A git directory a command recorded something in.
struct GitDir {
    /// The git directory, relative to the root.
    rel: PathBuf,
    /// Its objects, relative to the root (a worktree's are its common
    /// directory's).
    objects: PathBuf,
    /// Where the paths it records are judged, relative to the root.
    work_tree: PathBuf,
}

/// The git directory and record of a written `rel`, if it is one.
fn record_of(rel: &str) -> Option<(GitDir, Record)> {
    let names: Vec<&str> = rel.split('/').collect();
    let top = names.iter().position(|n| *n == ".git")?;
    // The git directory: `.git`, then any `modules/<name>` and at most one
    // `worktrees/<name>`.
    let mut end = top + 1;
    let mut worktree = false;
    while let (Some(kind), Some(_)) = (names.get(end), names.get(end + 1)) {
        let deeper = names.get(end + 2).is_some();
        match *kind {
            "modules" if deeper => end += 2,
            "worktrees" if deeper && !worktree => {
                worktree = true;
                end += 2;
            }
            _ => break,
        }
    }
    let rest = names.get(end..)?;
    let record = match rest {
        ["index"] => Record::Index,
        ["packed-refs"] => Record::PackedRefs,
        ["HEAD"] => Record::Ref("HEAD".to_owned()),
        ["refs", ..] => Record::Ref(rest.join("/")),
        _ => return None,
    };
    let rel: PathBuf = names.get(..end)?.iter().collect();
    let objects = if worktree {
        names
            .get(..end - 2)?
            .iter()
            .collect::<PathBuf>()
            .join("objects")
    } else {
        rel.join("objects")
    };
    let work_tree = names.get(..top)?.iter().collect();
    Some((
        GitDir {
            rel,
            objects,
            work_tree,
        },
        record,
    ))
}

/// Judges what each allowed write of git's index or refs records; a
/// refused one leaves `judged.ops` for `judged.refused`.
/// With `protected_allowed`, only masked deletions and what cannot be
/// read refuse (to find what a decider may be asked about).
pub(crate) fn judge_records(
    policy: &PathPolicy,
    root: &Path,
    upper: &Path,
    judged: &mut Judged,
    protected_allowed: bool,
) {
    let mut refused_at: BTreeMap<usize, (String, String)> = BTreeMap::new();
    for (at, op) in judged.ops.iter().enumerate() {
        let Op::Write { rel, staged, .. } = op else {
            continue;
        };
        let Some((dir, record)) = record_of(rel) else {
            continue;
        };
        let history = History {
            policy,
            root,
            dir: &dir,
            stores: Stores::open(root, upper, &dir),
            ops: &judged.ops,
            protected_allowed,
        };
        let verdict = match &record {
            Record::Index => history.judge_index(staged),
            Record::Ref(name) => history.judge_ref(name, staged),
            Record::PackedRefs => history.judge_packed_refs(staged),
        };
        if let Err(why) = verdict {
            refused_at.insert(at, why);
        }
    }
    for (at, (rule, reason)) in refused_at.into_iter().rev() {
        if at < judged.ops.len() {
            let op = judged.ops.remove(at);
            judged.refused.push(Refused {
                rel: PathBuf::from(op.rel()),
                action: ChangeAction::Modify,
                rule,
                reason,
                from: None,
            });
        }
    }
}

type Verdict = Result<(), (String, String)>;

/// A tree's entries by name: each one's object and whether it is a tree.
type TreeEntries = BTreeMap<Vec<u8>, (ObjectId, bool)>;

/// An index's entries by path: object, mode and stage.
type IndexEntries = BTreeMap<Vec<u8>, (ObjectId, u32, u32)>;

/// The object stores of one git directory: the real tree's, and the
/// staging layer's new objects over it.
struct Stores {
    real: Option<gix_odb::Handle>,
    new: Option<gix_odb::Handle>,
}

impl Stores {
    fn open(root: &Path, upper: &Path, dir: &GitDir) -> Self {
        let open = |objects: PathBuf| {
            objects
                .is_dir()
                .then(|| gix_odb::at(objects, gix_hash::Kind::Sha1).ok())
                .flatten()
        };
        Self {
            real: open(root.join(&dir.objects)),
            new: open(upper.join(&dir.objects)),
        }
    }

    /// Whether the real tree's store held `id` before the command.
    fn was_there(&self, id: &ObjectId) -> bool {
        use gix_object::Exists;
        self.real.as_ref().is_some_and(|real| real.exists(id))
    }
}

impl Stores {
    /// The object `id`, new or old.
    fn object<'b>(
        &self,
        id: &ObjectId,
        buffer: &'b mut Vec<u8>,
    ) -> Result<gix_object::Data<'b>, String> {
        use gix_object::{Exists, FindExt};
        let store = match (&self.new, &self.real) {
            (Some(new), _) if new.exists(id) => new,
            (_, Some(real)) => real,
            (Some(new), None) => new,
            (None, None) => return Err("the repository has no objects".to_owned()),
        };
        store.find(id, buffer).map_err(|e| e.to_string())
    }

    /// The decoded object `id`.
    fn decoded<'b>(
        &self,
        id: &ObjectId,
        buffer: &'b mut Vec<u8>,
    ) -> Result<gix_object::ObjectRef<'b>, String> {
        self.object(id, buffer)?.decode().map_err(|e| e.to_string())
    }
}

/// The judge of one git directory's records.
struct History<'a> {
    policy: &'a PathPolicy,
    root: &'a Path,
    dir: &'a GitDir,
    stores: Stores,
    ops: &'a [Op],
    protected_allowed: bool,
}

/// How a path differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Diff {
    /// Added or changed (content or mode).
    Written,
    /// Removed.
    Deleted,
}

fn unreadable(what: &str, error: impl std::fmt::Display) -> (String, String) {
    (
        Rule::CommitFailed.id(),
        format!(
            "{what} could not be read ({error}), so what it records cannot be judged; it does not land"
        ),
    )
}

impl History<'_> {
    /// The refusal of a path recorded with `diff`, if any: its rule, the
    /// path, and why (the entry of the policy it matches).
    fn judge_path(&self, path: &[u8], diff: Diff) -> Option<(String, String, String)> {
        use agentcaps_paths::PathError;
        let text = String::from_utf8_lossy(path).into_owned();
        let location = self.root.join(&self.dir.work_tree).join(&text);
        let entry = |error: &PathError| match error {
            PathError::WriteProtected { entry, .. } | PathError::Blocked { entry, .. } => {
                format!("`{entry}`")
            }
            other => format!("the path policy ({})", other.rule()),
        };
        match diff {
            Diff::Written => match self.policy.judge_location(&location, Access::Write) {
                Err(error)
                    if error.rule() == "blocked"
                        || (error.rule() == "write-protected" && !self.protected_allowed) =>
                {
                    Some((
                        error.rule().to_owned(),
                        text,
                        format!("it matches {}, which no command may write", entry(&error)),
                    ))
                }
                _ => None,
            },
            Diff::Deleted => self
                .policy
                .judge_location(&location, Access::Read)
                .err()
                .map(|error| {
                    (
                        Rule::MaskedDeletion.id(),
                        text,
                        format!(
                            "the view masked it ({} matches), so git there saw it deleted",
                            entry(&error)
                        ),
                    )
                }),
        }
    }

    /// The first refused path of a set of differences.
    fn first_refused(&self, diffs: &BTreeMap<Vec<u8>, Diff>) -> Option<(String, String, String)> {
        diffs
            .iter()
            .find_map(|(path, diff)| self.judge_path(path, *diff))
    }

    fn judge_index(&self, staged: &Path) -> Verdict {
        let old_path = self.root.join(&self.dir.rel).join("index");
        let old = if old_path.exists() {
            read_index(&old_path).map_err(|e| unreadable("the repository's index", e))?
        } else {
            BTreeMap::new()
        };
        let new = read_index(staged).map_err(|e| unreadable("the command's index", e))?;
        let mut diffs = BTreeMap::new();
        for (path, entry) in &new {
            if old.get(path) != Some(entry) {
                diffs.insert(path.clone(), Diff::Written);
            }
        }
        for path in old.keys() {
            if !new.contains_key(path) {
                diffs.insert(path.clone(), Diff::Deleted);
            }
        }
        match self.first_refused(&diffs) {
            None => Ok(()),
            Some((rule, path, why)) => Err((
                rule.clone(),
                format!(
                    "the index entry `{path}` is {}: {why}; the index does not land (the repository keeps its own)",
                    if rule == Rule::MaskedDeletion.rule() {
                        "deleted"
                    } else {
                        "added or changed"
                    }
                ),
            )),
        }
    }

    fn judge_ref(&self, name: &str, staged: &Path) -> Verdict {
        let text = long_path::read_to_string(staged).map_err(|e| unreadable("the ref", e))?;
        match self.ref_value(text.trim(), 0)? {
            Some(tip) => self.judge_tip(name, tip),
            None => Ok(()),
        }
    }

    fn judge_packed_refs(&self, staged: &Path) -> Verdict {
        let new = long_path::read_to_string(staged).map_err(|e| unreadable("packed-refs", e))?;
        let old = long_path::read_to_string(&self.root.join(&self.dir.rel).join("packed-refs"))
            .unwrap_or_default();
        let old = packed(&old);
        for (name, id) in packed(&new) {
            if old.get(&name) != Some(&id) {
                self.judge_tip(&name, id)?;
            }
        }
        Ok(())
    }

    /// The object a ref's content names, following symbolic refs as they
    /// will be once committed; `None` for a symbolic ref to nothing yet.
    fn ref_value(&self, content: &str, depth: usize) -> Result<Option<ObjectId>, (String, String)> {
        if depth > 5 {
            return Err(unreadable("the ref", "symbolic refs nest too deep"));
        }
        let Some(target) = content.strip_prefix("ref:") else {
            return ObjectId::from_hex(content.as_bytes())
                .map(Some)
                .map_err(|e| unreadable("the ref", e));
        };
        let target = target.trim();
        let written = self.ops.iter().find_map(|op| match op {
            Op::Write { rel, staged, .. } if Path::new(rel) == self.dir.rel.join(target) => {
                Some(staged.clone())
            }
            _ => None,
        });
        let file = written.unwrap_or_else(|| self.root.join(&self.dir.rel).join(target));
        match long_path::read_to_string(&file) {
            Ok(text) => self.ref_value(text.trim(), depth + 1),
            Err(_) => {
                // Packed, or not there yet (a new branch with no commit).
                let packed_refs =
                    long_path::read_to_string(&self.root.join(&self.dir.rel).join("packed-refs"))
                        .unwrap_or_default();
                Ok(packed(&packed_refs).get(target).copied())
            }
        }
    }

    /// Judges the commits a ref moved to `tip` adds.
    fn judge_tip(&self, name: &str, tip: ObjectId) -> Verdict {
        let mut pending = vec![tip];
        let mut seen = BTreeSet::new();
        let mut buffer = Vec::new();
        while let Some(id) = pending.pop() {
            if !seen.insert(id) || self.stores.was_there(&id) {
                continue;
            }
            if seen.len() > MAX_NEW_COMMITS {
                return Err(unreadable(
                    "the history",
                    format!("more than {MAX_NEW_COMMITS} new commits"),
                ));
            }
            let (tree, parents) = match self.stores.decoded(&id, &mut buffer) {
                Ok(ObjectRef::Commit(commit)) => {
                    (commit.tree(), commit.parents().collect::<Vec<_>>())
                }
                Ok(ObjectRef::Tag(tag)) => {
                    pending.push(tag.target());
                    continue;
                }
                // A ref to a tree or a blob records no history.
                Ok(_) => continue,
                Err(error) => return Err(unreadable("a commit", error)),
            };
            let diffs = self.commit_diffs(tree, &parents)?;
            if let Some((rule, path, why)) = self.first_refused(&diffs) {
                let short = id.to_hex_with_len(12);
                return Err((
                    rule.clone(),
                    format!(
                        "commit {short} (for {name}) {} `{path}`: {why}; the ref does not move (commit the other changes apart)",
                        if rule == Rule::MaskedDeletion.rule() {
                            "deletes"
                        } else {
                            "adds or changes"
                        }
                    ),
                ));
            }
            pending.extend(parents);
        }
        Ok(())
    }

    /// What the commit of `tree` changes against every one of `parents`
    /// (a root commit: against nothing).
    fn commit_diffs(
        &self,
        tree: ObjectId,
        parents: &[ObjectId],
    ) -> Result<BTreeMap<Vec<u8>, Diff>, (String, String)> {
        let mut buffer = Vec::new();
        let mut parent_trees = Vec::new();
        for parent in parents {
            match self.stores.decoded(parent, &mut buffer) {
                Ok(ObjectRef::Commit(commit)) => parent_trees.push(Some(commit.tree())),
                Ok(_) => return Err(unreadable("a parent commit", "not a commit")),
                Err(error) => return Err(unreadable("a parent commit", error)),
            }
        }
        if parent_trees.is_empty() {
            parent_trees.push(None);
        }
        let mut common: Option<BTreeMap<Vec<u8>, Diff>> = None;
        for parent in parent_trees {
            let mut diffs = BTreeMap::new();
            self.diff_trees(parent, Some(tree), Vec::new(), &mut diffs)?;
            common = Some(match common {
                None => diffs,
                Some(before) => before
                    .into_iter()
                    .filter(|(path, diff)| diffs.get(path) == Some(diff))
                    .collect(),
            });
        }
        Ok(common.unwrap_or_default())
    }

    /// The paths that differ between two trees (either absent: empty),
    /// each under `prefix`.
    fn diff_trees(
        &self,
        old: Option<ObjectId>,
        new: Option<ObjectId>,
        prefix: Vec<u8>,
        out: &mut BTreeMap<Vec<u8>, Diff>,
    ) -> Result<(), (String, String)> {
        if old == new {
            return Ok(());
        }
        let old = self.tree_entries(old)?;
        let new = self.tree_entries(new)?;
        let path = |name: &[u8]| {
            let mut path = prefix.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            path
        };
        for (name, &(new_id, new_tree)) in &new {
            let old_entry = old.get(name).copied();
            if old_entry == Some((new_id, new_tree)) {
                continue;
            }
            let old_tree = old_entry.filter(|&(_, tree)| tree).map(|(id, _)| id);
            if new_tree {
                self.diff_trees(old_tree, Some(new_id), path(name), out)?;
            } else {
                out.insert(path(name), Diff::Written);
                if old_tree.is_some() {
                    self.diff_trees(old_tree, None, path(name), out)?;
                }
            }
        }
        for (name, &(old_id, old_tree)) in &old {
            match (new.get(name), old_tree) {
                (None, true) => self.diff_trees(Some(old_id), None, path(name), out)?,
                (None, false) => {
                    out.insert(path(name), Diff::Deleted);
                }
                // A file replaced by a tree: the file is gone.
                (Some(&(_, true)), false) => {
                    out.insert(path(name), Diff::Deleted);
                }
                // (A tree replaced by a file was walked above.)
                (Some(_), _) => {}
            }
        }
        Ok(())
    }

    /// A tree's entries by name: their object and whether each is a tree.
    fn tree_entries(&self, id: Option<ObjectId>) -> Result<TreeEntries, (String, String)> {
        let Some(id) = id else {
            return Ok(BTreeMap::new());
        };
        let mut buffer = Vec::new();
        let tree = match self.stores.decoded(&id, &mut buffer) {
            Ok(ObjectRef::Tree(tree)) => tree,
            Ok(_) => return Err(unreadable("a tree", "not a tree")),
            Err(error) => return Err(unreadable("a tree", error)),
        };
        Ok(tree
            .entries
            .iter()
            .map(|entry| {
                (
                    entry.filename.to_vec(),
                    (entry.oid.to_owned(), entry.mode.is_tree()),
                )
            })
            .collect())
    }
}

/// An index file's entries by path: object and mode (every stage).
fn read_index(path: &Path) -> Result<IndexEntries, String> {
    // Read whole (never mapped: a file changed while mapped would fault).
    let data = long_path::read(path).map_err(|e| e.to_string())?;
    let (state, _) = gix_index::State::from_bytes(
        &data,
        filetime::FileTime::from_unix_time(0, 0),
        gix_hash::Kind::Sha1,
        gix_index::decode::Options::default(),
    )
    .map_err(|e| e.to_string())?;
    Ok(state
        .entries()
        .iter()
        .map(|entry| {
            (
                entry.path(&state).to_vec(),
                (entry.id, entry.mode.bits(), entry.stage_raw()),
            )
        })
        .collect())
}

/// The refs of a `packed-refs` file by name (peeled lines skipped).
fn packed(text: &str) -> BTreeMap<String, ObjectId> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with('^'))
        .filter_map(|line| {
            let (id, name) = line.split_once(' ')?;
            Some((
                name.trim().to_owned(),
                ObjectId::from_hex(id.as_bytes()).ok()?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_in_every_git_directory() {
        let (dir, record) = record_of("sub/.git/refs/heads/main").expect("a ref");
        assert_eq!(record, Record::Ref("refs/heads/main".to_owned()));
        assert_eq!(dir.rel, Path::new("sub/.git"));
        assert_eq!(dir.objects, Path::new("sub/.git/objects"));
        assert_eq!(dir.work_tree, Path::new("sub"));
        let (dir, record) = record_of(".git/worktrees/w/index").expect("an index");
        assert_eq!(record, Record::Index);
        assert_eq!(dir.objects, Path::new(".git/objects"));
        let (dir, _) = record_of(".git/modules/m/HEAD").expect("HEAD");
        assert_eq!(dir.objects, Path::new(".git/modules/m/objects"));
        assert!(record_of(".git/objects/ab/cdef").is_none());
        assert!(record_of(".git/logs/HEAD").is_none());
        assert!(record_of("src/index").is_none());
    }
}
