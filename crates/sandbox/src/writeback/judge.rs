//! Judging each change of a writable root as a write the agent asked for.

use std::collections::BTreeMap;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use agentcaps_paths::{
    Access, COMMIT_DIR_PREFIX, GuardedLinks, PathError, PathPolicy, check_portable_name, long_path,
};

use super::changes::{ChangeAction, RefusedChange, Rule};
use super::gitdir::{GitPlace, git_place, judge_config};
use super::scan::{Entry, Lower, Upper, lower_at};

/// How changes are judged: the real tree's links at guarded names, and
/// whether write-protected entries are let through (to find what a
/// decider may be asked about; nothing else is relaxed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judging<'a> {
    /// The real tree's links at guarded names.
    pub(crate) aliases: &'a GuardedLinks,
    /// Write-protected entries do not refuse.
    pub(crate) protected_allowed: bool,
}

/// One allowed change, as the commit performs it. `rel` is relative to
/// the root and valid UTF-8 (others are refused as not portable).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Create a directory (its parents exist or come first).
    CreateDir {
        /// Relative to the root.
        rel: String,
        /// Permission bits to give it once everything beneath is in place
        /// (`& 0o777`).
        mode: u32,
    },
    /// Put the staged file's content (with `mode & 0o777`) at `rel`.
    Write {
        /// Relative to the root.
        rel: String,
        /// The staged file.
        staged: PathBuf,
        /// Permission bits to give it.
        mode: u32,
        /// A file is there now (it is replaced).
        replace: bool,
        /// How the change is reported.
        action: ChangeAction,
        /// Another new file of the same command this one is a hard link
        /// of (written earlier in the list): it lands as a hard link too.
        link_of: Option<String>,
        /// The file of the real tree this one was moved from (whose
        /// delete is in the list too): reported as one rename.
        renamed_from: Option<String>,
    },
    /// Put a symbolic link to `target` at `rel`.
    Symlink {
        /// Relative to the root.
        rel: String,
        /// Where it points.
        target: PathBuf,
        /// A link is there now (it is replaced).
        replace: bool,
    },
    /// Remove the entry at `rel` (a directory: with everything beneath).
    Delete {
        /// Relative to the root (for a name that is not UTF-8, with each
        /// byte that is not a replacement character: for reports).
        rel: String,
        /// It is a directory.
        dir: bool,
        /// The entry's own name, where it is not UTF-8 (its directory's
        /// path, `rel`'s parent, is).
        name: Option<std::ffi::OsString>,
    },
}

impl Op {
    /// The path relative to the root.
    pub(crate) fn rel(&self) -> &str {
        match self {
            Self::CreateDir { rel, .. }
            | Self::Write { rel, .. }
            | Self::Symlink { rel, .. }
            | Self::Delete { rel, .. } => rel,
        }
    }

    /// For the new half of a rename, where the file was.
    pub(crate) fn renamed_from(&self) -> Option<&str> {
        match self {
            Self::Write { renamed_from, .. } => renamed_from.as_deref(),
            _ => None,
        }
    }

    /// How the change is reported.
    pub(crate) fn action(&self) -> ChangeAction {
        match self {
            Self::CreateDir { .. } => ChangeAction::Create,
            Self::Write { action, .. } => *action,
            Self::Symlink { .. } => ChangeAction::Link,
            Self::Delete { .. } => ChangeAction::Delete,
        }
    }
}

/// The verdicts on one root's changes.
#[derive(Debug, Default)]
pub(crate) struct Judged {
    /// The allowed changes, parents before children.
    pub(crate) ops: Vec<Op>,
    /// The refused ones (path relative to the root for now), each with its
    /// rule and reason.
    pub(crate) refused: Vec<Refused>,
}

/// A refused change, its path relative to the root.
#[derive(Debug)]
pub(crate) struct Refused {
    /// Relative to the root.
    pub(crate) rel: PathBuf,
    /// What the command did.
    pub(crate) action: ChangeAction,
    /// The rule.
    pub(crate) rule: String,
    /// Why.
    pub(crate) reason: String,
    /// For a refused rename, where the file was (and stays).
    pub(crate) from: Option<PathBuf>,
}

type Refusal = (String, String);

fn refusal(error: &PathError) -> Refusal {
    (error.rule().to_owned(), error.to_string())
}

/// Judge every entry of one root's staging layer.
pub(crate) fn judge(
    policy: &PathPolicy,
    root: &Path,
    entries: &[Entry],
    how: &Judging<'_>,
) -> Judged {
    let mut judged = Judged::default();
    let copied_up_links = links_to_existing_files(entries);
    // The first allowed new file of each inode the command hard-linked
    // among its own new files: the others land as links to it.
    let mut first_of_inode: BTreeMap<(u64, u64), String> = BTreeMap::new();
    // Directories refused whole: nothing beneath them is looked at again.
    let mut refused_dirs: Vec<PathBuf> = Vec::new();
    for entry in entries {
        if refused_dirs.iter().any(|dir| entry.rel.starts_with(dir)) {
            continue;
        }
        let mut refuse = |action: ChangeAction, (rule, reason): Refusal| {
            judged.refused.push(Refused {
                rel: entry.rel.clone(),
                action,
                rule,
                reason,
                from: None,
            });
        };
        let Some(rel) = entry.rel.to_str().map(str::to_owned) else {
            if let Some(op) = odd_delete(policy, root, entry, how) {
                match op {
                    Ok(op) => judged.ops.push(op),
                    Err(why) => refuse(ChangeAction::Delete, why),
                }
                continue;
            }
            let action = if entry.lower == Lower::Absent {
                ChangeAction::Create
            } else {
                ChangeAction::Modify
            };
            refuse(
                action,
                (
                    "not-portable".to_owned(),
                    "the name is not valid UTF-8".to_owned(),
                ),
            );
            if matches!(entry.upper, Upper::Dir { .. }) {
                refused_dirs.push(entry.rel.clone());
            }
            continue;
        };
        let created = entry.lower == Lower::Absent;
        if created && is_commit_directory_name(&entry.rel) {
            let action = match entry.upper {
                Upper::Symlink(_) => ChangeAction::Link,
                _ => ChangeAction::Create,
            };
            refuse(
                action,
                (
                    "write-protected".to_owned(),
                    format!(
                        "names beginning `{}` are the write-back's own (a later commit removes such a directory); choose another name",
                        COMMIT_DIR_PREFIX
                    ),
                ),
            );
            if matches!(entry.upper, Upper::Dir { .. }) {
                refused_dirs.push(entry.rel.clone());
            }
            continue;
        }
        // A real entry the commit would overwrite or remove that the
        // command did not see as it is: kept, and the change refused.
        let conflict = if entry.unseen {
            Some(
                "the real directory holds entries this run cannot list, which the command never saw; it is kept as it is",
            )
        } else if entry.changed_since
            && !created
            && !matches!(
                (&entry.upper, entry.lower),
                (Upper::Dir { .. }, Lower::Dir { .. })
            )
        {
            Some(
                "it changed in the real tree while the command ran (the host or another run wrote it); that version is kept",
            )
        } else {
            None
        };
        if let Some(reason) = conflict {
            let action = match entry.upper {
                Upper::Deleted => ChangeAction::Delete,
                Upper::Symlink(_) => ChangeAction::Link,
                _ => ChangeAction::Modify,
            };
            refuse(action, (Rule::Conflict.id(), reason.to_owned()));
            if matches!(entry.upper, Upper::Dir { .. }) {
                refused_dirs.push(entry.rel.clone());
            }
            continue;
        }
        match &entry.upper {
            Upper::Special => refuse(
                ChangeAction::Create,
                (
                    Rule::SpecialFile.id(),
                    "FIFOs, sockets and devices are never written to the real tree".to_owned(),
                ),
            ),
            Upper::Deleted => match entry.lower {
                Lower::Absent => {}
                Lower::Dir { .. } => match judge_tree_removal(policy, root, &entry.rel, how) {
                    Ok(()) => judged.ops.push(Op::Delete {
                        rel,
                        dir: true,
                        name: None,
                    }),
                    Err(why) => refuse(ChangeAction::Delete, why),
                },
                _ => match judge_write(policy, root, &entry.rel, how)
                    .and_then(|()| judge_not_git_code(&entry.rel, false))
                {
                    Ok(()) => judged.ops.push(Op::Delete {
                        rel,
                        dir: false,
                        name: None,
                    }),
                    Err(why) => refuse(ChangeAction::Delete, why),
                },
            },
            Upper::Dir { mode, .. } => match entry.lower {
                Lower::Dir { mode: old } => {
                    if old != *mode {
                        refuse(
                            ChangeAction::Mode,
                            (
                                Rule::DirectoryMode.id(),
                                "permission changes of existing directories are not applied"
                                    .to_owned(),
                            ),
                        );
                    }
                }
                lower => {
                    let judged_dir = judge_write(policy, root, &entry.rel, how)
                        .and_then(|()| judge_new_name(&entry.rel));
                    match judged_dir {
                        Ok(()) => {
                            if lower != Lower::Absent {
                                judged.ops.push(Op::Delete {
                                    rel: rel.clone(),
                                    dir: false,
                                    name: None,
                                });
                            }
                            judged.ops.push(Op::CreateDir {
                                rel,
                                mode: mode & 0o777,
                            });
                        }
                        Err(why) => {
                            refuse(ChangeAction::Create, why);
                            refused_dirs.push(entry.rel.clone());
                        }
                    }
                }
            },
            Upper::Symlink(target) => {
                let verdict = judge_write(policy, root, &entry.rel, how)
                    .and_then(|()| judge_not_git_code(&entry.rel, true))
                    .and_then(|()| judge_name_if_new(created, &entry.rel))
                    .and_then(|()| {
                        policy
                            .judge_link_location(&root.join(&entry.rel))
                            .map_err(|e| refusal(&e))
                    })
                    .and_then(|()| judge_link_target(policy, root, &entry.rel, target));
                match verdict {
                    Ok(()) => {
                        if entry.lower == Lower::Other {
                            refuse(
                                ChangeAction::Link,
                                (
                                    Rule::ReplacesDirectory.id(),
                                    "a link may not take the place of a special file".to_owned(),
                                ),
                            );
                            continue;
                        }
                        if matches!(entry.lower, Lower::Dir { .. }) {
                            // The directory goes, with all beneath it.
                            match judge_tree_removal(policy, root, &entry.rel, how) {
                                Ok(()) => judged.ops.push(Op::Delete {
                                    rel: rel.clone(),
                                    dir: true,
                                    name: None,
                                }),
                                Err(why) => {
                                    refuse(ChangeAction::Link, why);
                                    continue;
                                }
                            }
                        }
                        if matches!(entry.lower, Lower::File { .. }) {
                            judged.ops.push(Op::Delete {
                                rel: rel.clone(),
                                dir: false,
                                name: None,
                            });
                        }
                        judged.ops.push(Op::Symlink {
                            rel,
                            target: target.clone(),
                            replace: entry.lower == Lower::Symlink,
                        });
                    }
                    Err(why) => refuse(ChangeAction::Link, why),
                }
            }
            Upper::File {
                mode, inode, links, ..
            } => {
                if copied_up_links.contains(&entry.rel) {
                    refuse(
                        ChangeAction::Link,
                        (
                            Rule::HardLink.id(),
                            "a hard link to a file the command did not create is never applied"
                                .to_owned(),
                        ),
                    );
                    continue;
                }
                let verdict = judge_file_write(policy, root, entry, how)
                    .and_then(|()| judge_name_if_new(created, &entry.rel))
                    .and_then(|()| judge_git_file(&entry.rel));
                if let Err(why) = verdict {
                    let action = if created {
                        ChangeAction::Create
                    } else {
                        ChangeAction::Modify
                    };
                    refuse(action, why);
                    continue;
                }
                if mode & 0o7000 != 0 {
                    refuse(
                        ChangeAction::Mode,
                        (
                            Rule::SetId.id(),
                            "set-user-ID, set-group-ID and sticky bits are never applied; the file lands without them"
                                .to_owned(),
                        ),
                    );
                }
                let action = match entry.lower {
                    Lower::Absent => Some(ChangeAction::Create),
                    Lower::File { mode: old, len } => {
                        if !same_content(&entry.staged, &root.join(&entry.rel), len) {
                            // (Copied up and rewritten with the same
                            // bytes, or only touched: no change.)
                            Some(ChangeAction::Modify)
                        } else if old & 0o777 != mode & 0o777 {
                            Some(ChangeAction::Mode)
                        } else {
                            if xattrs_differ(&entry.staged, &root.join(&entry.rel)) {
                                refuse(
                                    ChangeAction::Mode,
                                    (
                                        Rule::Xattr.id(),
                                        "extended attributes are never written to the real tree; the file is unchanged".to_owned(),
                                    ),
                                );
                            }
                            None
                        }
                    }
                    Lower::Symlink => {
                        judged.ops.push(Op::Delete {
                            rel: rel.clone(),
                            dir: false,
                            name: None,
                        });
                        Some(ChangeAction::Modify)
                    }
                    Lower::Dir { .. } => match judge_tree_removal(policy, root, &entry.rel, how) {
                        // The directory goes, with all beneath it.
                        Ok(()) => {
                            judged.ops.push(Op::Delete {
                                rel: rel.clone(),
                                dir: true,
                                name: None,
                            });
                            Some(ChangeAction::Modify)
                        }
                        Err(why) => {
                            refuse(ChangeAction::Modify, why);
                            None
                        }
                    },
                    Lower::Other => {
                        refuse(
                            ChangeAction::Modify,
                            (
                                Rule::ReplacesDirectory.id(),
                                "a file may not take the place of a special file".to_owned(),
                            ),
                        );
                        None
                    }
                };
                if let Some(mut action) = action {
                    let mut link_of = None;
                    if created && *links > 1 {
                        match first_of_inode.get(inode) {
                            Some(first) => {
                                link_of = Some(first.clone());
                                action = ChangeAction::Link;
                            }
                            None => {
                                first_of_inode.insert(*inode, rel.clone());
                            }
                        }
                    }
                    judged.ops.push(Op::Write {
                        rel,
                        staged: entry.staged.clone(),
                        mode: mode & 0o777,
                        replace: matches!(entry.lower, Lower::File { .. }),
                        action,
                        link_of,
                        renamed_from: None,
                    });
                }
            }
        }
    }
    pair_renames(&mut judged, &renames(root, entries));
    judged
}

/// Makes each moved file (`new` → `old` relative paths) one rename: both
/// halves allowed, the write reports it and the delete is folded in; the
/// new place refused, the old file is not deleted either (a move whose
/// destination is refused loses nothing). Other cases stay as they are (a
/// delete refused with the new place allowed is a copy).
fn pair_renames(judged: &mut Judged, renames: &[(PathBuf, PathBuf)]) {
    for (new, old) in renames {
        let (Some(new), Some(old)) = (new.to_str(), old.to_str()) else {
            continue;
        };
        let is_delete = |op: &Op| matches!(op, Op::Delete { rel, dir: false, .. } if rel == old);
        let Some(delete_at) = judged.ops.iter().position(is_delete) else {
            continue;
        };
        let write = judged.ops.iter_mut().find(
            |op| matches!(op, Op::Write { rel, action: ChangeAction::Create, .. } if rel == new),
        );
        if let Some(Op::Write {
            action,
            renamed_from,
            ..
        }) = write
        {
            *action = ChangeAction::Rename;
            *renamed_from = Some(old.to_owned());
            continue;
        }
        let Some(at) = judged
            .refused
            .iter()
            .position(|r| Path::new(new).starts_with(&r.rel) && r.action == ChangeAction::Create)
        else {
            continue;
        };
        judged.ops.remove(delete_at);
        let refused = judged.refused.get_mut(at);
        match refused {
            Some(refused) if refused.rel == Path::new(new) => {
                refused.action = ChangeAction::Rename;
                refused.from = Some(PathBuf::from(old));
                refused.reason = format!(
                    "{}; the file stays at {old}",
                    refused.reason.trim_end_matches('.')
                );
            }
            Some(refused) => {
                // Moved into a directory refused whole.
                let moved = Refused {
                    rel: PathBuf::from(new),
                    action: ChangeAction::Rename,
                    rule: refused.rule.clone(),
                    reason: format!(
                        "it was moved into {}, which was refused; the file stays at {old}",
                        refused.rel.display()
                    ),
                    from: Some(PathBuf::from(old)),
                };
                judged.refused.push(moved);
            }
            None => {}
        }
    }
}

/// The command's new files that are files of the real tree it deleted,
/// moved: the same size, modification time (a move keeps it; the overlay's
/// copy-up too) and bytes. Each deleted file pairs with one new file at
/// most. `(new, old)` paths relative to the root.
fn renames(root: &Path, entries: &[Entry]) -> Vec<(PathBuf, PathBuf)> {
    use std::time::SystemTime;
    let key = |meta: &std::fs::Metadata| -> Option<(u64, SystemTime)> {
        meta.is_file()
            .then(|| meta.modified().ok().map(|t| (meta.len(), t)))
            .flatten()
    };
    let mut deleted: BTreeMap<(u64, SystemTime), Vec<&Path>> = BTreeMap::new();
    for entry in entries {
        if entry.upper == Upper::Deleted
            && matches!(entry.lower, Lower::File { .. })
            && let Some(k) = long_path::symlink_metadata(&root.join(&entry.rel))
                .ok()
                .as_ref()
                .and_then(key)
        {
            deleted.entry(k).or_default().push(&entry.rel);
        }
    }
    if deleted.is_empty() {
        return Vec::new();
    }
    let mut pairs = Vec::new();
    for entry in entries {
        let Upper::File { links: 1, .. } = entry.upper else {
            continue;
        };
        if entry.lower != Lower::Absent {
            continue;
        }
        let Some(candidates) = long_path::symlink_metadata(&entry.staged)
            .ok()
            .as_ref()
            .and_then(key)
            .and_then(|k| deleted.get_mut(&k))
        else {
            continue;
        };
        if let Some(at) = candidates
            .iter()
            .position(|old| same_bytes(&entry.staged, &root.join(old)))
        {
            let old = candidates.remove(at);
            pairs.push((entry.rel.clone(), old.to_path_buf()));
        }
    }
    pairs
}

/// Whether two files hold the same bytes (read in chunks).
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read;
    let (Ok(mut a), Ok(mut b)) = (long_path::open(a), long_path::open(b)) else {
        return false;
    };
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let Ok(n) = read_full(&mut a, &mut x) else {
            return false;
        };
        let Ok(m) = read_full(&mut b, &mut y) else {
            return false;
        };
        if n != m || x.get(..n) != y.get(..m) {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
    fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match file.read(buf.get_mut(filled..).unwrap_or_default())? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
}

/// Files of the staging layer that share an inode with a file the real
/// tree already holds (the command hard-linked an existing file): the new
/// names are refused.
fn links_to_existing_files(entries: &[Entry]) -> Vec<PathBuf> {
    let mut groups: BTreeMap<(u64, u64), Vec<&Entry>> = BTreeMap::new();
    for entry in entries {
        if let Upper::File { inode, links, .. } = entry.upper
            && links > 1
        {
            groups.entry(inode).or_default().push(entry);
        }
    }
    let mut refused = Vec::new();
    for members in groups.values() {
        if members.iter().any(|m| m.lower != Lower::Absent) {
            refused.extend(
                members
                    .iter()
                    .filter(|m| m.lower == Lower::Absent)
                    .map(|m| m.rel.clone()),
            );
        }
    }
    refused
}

/// The path policy for a write at `root/rel`, also as spelled in lower
/// case (a name blocked or protected in one case is in every case), and
/// at every other location it is reachable by through a link the real
/// tree holds at a guarded name (`.cargo -> cfg` makes `cfg/config.toml`
/// cargo's config).
fn judge_write(
    policy: &PathPolicy,
    root: &Path,
    rel: &Path,
    how: &Judging<'_>,
) -> Result<(), Refusal> {
    let location = root.join(rel);
    let refuses = |error: &PathError| !(how.protected_allowed && error.rule() == "write-protected");
    match policy.judge_location(&location, Access::Write) {
        Err(error) if refuses(&error) => return Err(refusal(&error)),
        _ => {}
    }
    match how
        .aliases
        .judge_write(policy, &rel.to_string_lossy(), &location)
    {
        Err(error) if refuses(&error) => return Err(refusal(&error)),
        _ => {}
    }
    if let Some(text) = rel.to_str() {
        let folded = text.to_lowercase();
        if folded != text
            && let Err(error) = policy.judge_location(&root.join(&folded), Access::Write)
            && matches!(error.rule(), "blocked" | "write-protected")
            && refuses(&error)
        {
            return Err((
                error.rule().to_owned(),
                format!("{error} (names are judged in every letter case)"),
            ));
        }
    }
    Ok(())
}

/// A file written at `entry.rel`: the path policy; inside a git directory,
/// only git's data, and a config whose every new key runs nothing (a
/// config is judged by its content instead of being write-protected).
fn judge_file_write(
    policy: &PathPolicy,
    root: &Path,
    entry: &Entry,
    how: &Judging<'_>,
) -> Result<(), Refusal> {
    match git_place(&entry.rel, false) {
        GitPlace::Config => {
            match judge_write(policy, root, &entry.rel, how) {
                Err((rule, _)) if rule == "write-protected" => {}
                other => other?,
            }
            let old = matches!(entry.lower, Lower::File { .. }).then(|| root.join(&entry.rel));
            judge_config(&entry.staged, old.as_deref()).map_err(|(key, why)| {
                (
                    Rule::GitConfigKey.id(),
                    format!("the git config sets `{key}`: {why}; git runs what such keys name, so the config does not land (the repository keeps its config)"),
                )
            })
        }
        _ => {
            judge_write(policy, root, &entry.rel, how)?;
            judge_not_git_code(&entry.rel, false)
        }
    }
}

/// Inside a git directory, anything but git's data is refused; a config
/// put there as a link too (as a file, [`judge_file_write`] judges its
/// keys).
fn judge_not_git_code(rel: &Path, link: bool) -> Result<(), Refusal> {
    let other = match git_place(rel, false) {
        GitPlace::Other(inner) => inner,
        GitPlace::Config if link => "config".to_owned(),
        _ => return Ok(()),
    };
    Err((
        "write-protected".to_owned(),
        format!(
            "inside a git directory only git's data lands (objects, refs, logs, HEAD, the index, the state of a merge, rebase or bisect); `{other}` is not data, and git may run or follow what it holds"
        ),
    ))
}

/// Whether a component of `rel` is named like the write-back's own
/// per-commit directories (`Beneath::stage_in_commit_dir`): a later commit
/// removes a left-over one, so the command may not make one.
fn is_commit_directory_name(rel: &Path) -> bool {
    rel.components().any(|c| {
        c.as_os_str()
            .to_str()
            .is_some_and(|n| n.starts_with(COMMIT_DIR_PREFIX))
    })
}

/// A file named `.git` (in any case) is a `gitdir:` pointer: git takes
/// the directory it names as the repository, config and hooks included.
/// None is ever written.
fn judge_git_file(rel: &Path) -> Result<(), Refusal> {
    let is_git = rel
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case(".git"));
    if is_git {
        return Err((
            "write-protected".to_owned(),
            "a `.git` file points git at another repository directory (`gitdir:`), whose config and hooks git runs; it is never written".to_owned(),
        ));
    }
    Ok(())
}

/// [`judge_new_name`] for an entry the command created.
fn judge_name_if_new(created: bool, rel: &Path) -> Result<(), Refusal> {
    if created { judge_new_name(rel) } else { Ok(()) }
}

/// A new entry's name must be portable.
fn judge_new_name(rel: &Path) -> Result<(), Refusal> {
    let name = rel.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        (
            "not-portable".to_owned(),
            "the name is not valid UTF-8".to_owned(),
        )
    })?;
    check_portable_name(name).map_err(|e| refusal(&e))
}

/// A symbolic link's target, read from the link's directory, must stay
/// inside the roots (and not reach a blocked entry).
fn judge_link_target(
    policy: &PathPolicy,
    root: &Path,
    rel: &Path,
    target: &Path,
) -> Result<(), Refusal> {
    let Some(text) = target.to_str() else {
        return Err((
            "not-portable".to_owned(),
            "the link's target is not valid UTF-8".to_owned(),
        ));
    };
    let base = root.join(rel.parent().unwrap_or(Path::new("")));
    if in_runtime(policy, target) {
        return Ok(());
    }
    policy
        .check(&base, text, Access::Read)
        .map(|_| ())
        .map_err(|error| match error.rule() {
            "outside-roots" => (
                Rule::LinkOutsideRoots.id(),
                format!("the link points outside the roots: {error}"),
            ),
            _ => refusal(&error),
        })
}

/// The system's read-only runtime, which every view holds read-only and
/// every user may read: a link into it grants nothing (a virtual
/// environment's `bin/python3 -> /usr/bin/python3`).
const RUNTIME: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib64"];

/// Whether `target` is an absolute, plain path (no `.` or `..`) inside
/// the runtime, and not blocked.
fn in_runtime(policy: &PathPolicy, target: &Path) -> bool {
    use std::path::Component;
    let plain = target.is_absolute()
        && target
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    plain
        && RUNTIME.iter().any(|dir| target.starts_with(dir))
        && policy.blocked_entry(target).is_none()
}

/// Removing a directory of the real tree: it and everything beneath it
/// must be writable.
/// The delete of a real entry whose own name is not UTF-8 (in a directory
/// whose path is), judged at its real path and at the spelling the commit
/// removes it by (each byte that is not UTF-8 a replacement character);
/// `None` for any other change.
fn odd_delete(
    policy: &PathPolicy,
    root: &Path,
    entry: &Entry,
    how: &Judging<'_>,
) -> Option<Result<Op, Refusal>> {
    if entry.upper != Upper::Deleted || entry.lower == Lower::Absent {
        return None;
    }
    let name = entry.rel.file_name()?;
    let parent = entry.rel.parent()?.to_str()?;
    let shown = Path::new(parent).join(name.to_string_lossy().as_ref());
    let dir = matches!(entry.lower, Lower::Dir { .. });
    let judged = [entry.rel.as_path(), shown.as_path()]
        .into_iter()
        .try_for_each(|rel| {
            if dir {
                judge_tree_removal(policy, root, rel, how)
            } else {
                judge_write(policy, root, rel, how).and_then(|()| judge_not_git_code(rel, false))
            }
        });
    Some(judged.map(|()| Op::Delete {
        rel: shown.to_string_lossy().into_owned(),
        dir,
        name: Some(name.to_owned()),
    }))
}

fn judge_tree_removal(
    policy: &PathPolicy,
    root: &Path,
    rel: &Path,
    how: &Judging<'_>,
) -> Result<(), Refusal> {
    judge_write(policy, root, rel, how)?;
    let Ok(read) = long_path::read_dir_names(&root.join(rel)) else {
        return Ok(());
    };
    for name in read {
        let child = rel.join(name);
        if matches!(lower_at(&root.join(&child)), Lower::Dir { .. }) {
            judge_tree_removal(policy, root, &child, how)?;
        } else {
            judge_write(policy, root, &child, how)?;
        }
    }
    Ok(())
}

/// Whether the staged file holds exactly what the real file of `len`
/// bytes does, compared in chunks (memory stays bounded whatever the
/// size). Modification times do not count: a file only opened for writing
/// or touched holds the same bytes, and is no change.
fn same_content(staged: &Path, real: &Path, len: u64) -> bool {
    match long_path::metadata(staged) {
        Ok(meta) if meta.len() == len => same_bytes(staged, real),
        _ => false,
    }
}

/// Whether the two files' extended attributes differ (the overlay's own,
/// `user.overlay.*` and `trusted.overlay.*`, aside). Attributes that cannot
/// be read count as different: the change is listed, never dropped.
fn xattrs_differ(staged: &Path, real: &Path) -> bool {
    #[cfg(unix)]
    {
        xattrs(staged) != xattrs(real)
    }
    #[cfg(not(unix))]
    {
        let _ = (staged, real);
        false
    }
}

/// A file's extended attributes, by name (`None` when unreadable).
#[cfg(unix)]
fn xattrs(path: &Path) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let mut names = vec![0u8; 64 * 1024];
    let len = rustix::fs::llistxattr(path, &mut names).ok()?;
    let mut out = BTreeMap::new();
    for name in names
        .get(..len)?
        .split(|&b| b == 0)
        .filter(|n| !n.is_empty())
    {
        if name.starts_with(b"user.overlay.") || name.starts_with(b"trusted.overlay.") {
            continue;
        }
        let text = std::ffi::OsStr::from_bytes(name);
        let mut value = vec![0u8; 64 * 1024];
        let n = rustix::fs::lgetxattr(path, text, &mut value).ok()?;
        out.insert(name.to_vec(), value.get(..n)?.to_vec());
    }
    Some(out)
}

/// The path a result shows for `location`: relative to `cwd` when beneath
/// it, absolute otherwise.
pub(crate) fn shown(location: &Path, cwd: &Path) -> String {
    match location.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => location.display().to_string(),
    }
}

/// A refusal in the result's shape.
pub(crate) fn refused_change(root: &Path, cwd: &Path, refused: Refused) -> RefusedChange {
    RefusedChange {
        path: shown(&root.join(refused.rel), cwd),
        action: refused.action,
        from: refused.from.map(|from| shown(&root.join(from), cwd)),
        rule: refused.rule,
        reason: refused.reason,
    }
}
