//! Planning: every name resolved and judged, every hunk applied in memory,
//! before anything is written.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agentcaps_paths::{
    Access, Beneath, EntryKind, FileSystem, PathError, PathPolicy, Version, check_portable_name,
};

use crate::config::PatchPolicyConfig;
use crate::error::{Bound, Malformed, PatchError, StateCheck, UnsafePath};
use crate::model::{FilePatch, Format, Operation, Patch};
use crate::overlay::{After, Overlay};
use crate::report::{FileAction, FileReport};

type Result<T> = std::result::Result<T, PatchError>;

/// One file's planned change. Old contents are not kept: undoing renames
/// the old files back (see the transaction).
#[derive(Debug)]
pub(crate) struct Planned {
    pub(crate) op: Operation,
    /// Content after the patch: for a creation, an update, and a move
    /// that changes the content (`None` for a move that does not).
    pub(crate) content: Option<Vec<u8>>,
    pub(crate) report: FileReport,
    /// The unified diff this change applies (when asked for: dry runs).
    pub(crate) diff: Option<String>,
    /// The version of the file the change was made from (an update, a
    /// move or a deletion): it is replaced or removed only while it is
    /// still that version.
    pub(crate) read: Option<Version>,
}

/// A whole patch, planned.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) files: Vec<Planned>,
    /// Directories to create, parents first (relative spellings).
    pub(crate) new_dirs: Vec<String>,
}

impl Plan {
    /// Every file the plan writes, creates, moves or removes.
    pub(crate) fn paths(&self) -> Vec<&str> {
        let mut paths = Vec::new();
        for planned in &self.files {
            match &planned.op {
                Operation::Create(p) | Operation::Update(p) | Operation::Delete(p) => {
                    paths.push(p.as_str());
                }
                Operation::Move(from, to) => paths.extend([from.as_str(), to.as_str()]),
            }
        }
        paths
    }
}

/// Removes the strip prefix: git's `a/`/`b/` by default, `n` components
/// with `-p n`.
fn strip(raw: &str, strip: Option<usize>, git_prefix: &str) -> Result<String> {
    match strip {
        None => Ok(raw.strip_prefix(git_prefix).unwrap_or(raw).to_owned()),
        Some(0) => Ok(raw.to_owned()),
        Some(n) => {
            let mut rest = raw;
            for _ in 0..n {
                match rest.split_once('/') {
                    Some((_, r)) => rest = r.trim_start_matches('/'),
                    None => {
                        return Err(PatchError::UnsafePath {
                            path: raw.to_owned(),
                            why: UnsafePath::Strip,
                        });
                    }
                }
            }
            Ok(rest.to_owned())
        }
    }
}

fn is_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b.first().is_some_and(u8::is_ascii_alphabetic) && b.get(1) == Some(&b':')
}

/// Judges a name from its spelling alone and returns it normalized
/// (components joined by `/`, `.` components dropped).
pub(crate) fn normalize(raw: &str) -> Result<String> {
    let refuse = |why| {
        Err(PatchError::UnsafePath {
            path: raw.to_owned(),
            why,
        })
    };
    if raw.is_empty() {
        return refuse(UnsafePath::Empty);
    }
    if raw.starts_with('/') || raw.starts_with('\\') || is_drive(raw) {
        return refuse(UnsafePath::Absolute);
    }
    if raw
        .split(['/', '\\'])
        .any(|c| c.starts_with("..") && c.trim_end_matches([' ', '.']).is_empty())
    {
        return refuse(UnsafePath::DotDot);
    }
    if raw.contains('\\') {
        return refuse(UnsafePath::Backslash);
    }
    let mut parts = Vec::new();
    for component in raw.split('/') {
        match component {
            "" => return refuse(UnsafePath::Empty),
            "." => {}
            c => {
                check_portable_name(c).map_err(|source| PatchError::PathPolicy {
                    path: raw.to_owned(),
                    source: Box::new(source),
                })?;
                parts.push(c);
            }
        }
    }
    if parts.is_empty() {
        return refuse(UnsafePath::Empty);
    }
    Ok(parts.join("/"))
}

/// What a section does, with names stripped and judged by spelling.
fn operation(file: &FilePatch, format: Format, strip_level: Option<usize>) -> Result<Operation> {
    let strip_level = if format == Format::Envelope {
        Some(0)
    } else {
        strip_level
    };
    let stripped =
        |name: &str, prefix| strip(name, strip_level, prefix).and_then(|s| normalize(&s));
    let old = file.old.as_deref().map(|o| stripped(o, "a/")).transpose()?;
    let new = file.new.as_deref().map(|n| stripped(n, "b/")).transpose()?;
    // git writes `rename from`/`rename to` without the a/ b/ prefix: with
    // `-p n` it strips one component fewer from them.
    let rename = match &file.rename {
        Some((from, to)) => {
            let level = match strip_level {
                None | Some(0) => Some(0),
                Some(n) => Some(n - 1),
            };
            let rename_name = |name: &str| strip(name, level, "").and_then(|s| normalize(&s));
            Some((rename_name(from)?, rename_name(to)?))
        }
        None => None,
    };
    let git = match &file.git_names.0 {
        Some((a, b)) => Some((stripped(a, "a/")?, stripped(b, "b/")?)),
        None => None,
    };
    // The envelope's `*** Update File:` names the old side only when a
    // `*** Move to:` follows.
    let new_name = match (format, &rename) {
        (Format::Envelope, Some(_)) => None,
        _ => new.as_ref(),
    };
    agree(file, old.as_ref(), new_name, rename.as_ref(), git.as_ref())?;
    if let Some((from, to)) = rename {
        return Ok(Operation::Move(from, to));
    }
    Ok(match (old, new) {
        (None, Some(n)) => Operation::Create(n),
        (Some(o), None) => Operation::Delete(o),
        (Some(_), Some(n)) => Operation::Update(n),
        (None, None) => {
            return Err(PatchError::UnsafePath {
                path: String::new(),
                why: UnsafePath::Empty,
            });
        }
    })
}

/// Every name a section gives must name the same file once prefixes are
/// stripped, as `git apply` checks: the old side (`diff --git a/X`, `---`,
/// `rename from`) and the new side (`diff --git b/Y`, `+++`, `rename to`)
/// each agree, and without a rename the two sides agree with each other.
/// Otherwise one name would be written and another judged.
fn agree(
    file: &FilePatch,
    old: Option<&String>,
    new: Option<&String>,
    rename: Option<&(String, String)>,
    git: Option<&(String, String)>,
) -> Result<()> {
    let header = if file.git {
        ("`---`", "`+++`")
    } else if rename.is_some() {
        ("`*** Update File:`", "`*** Update File:`")
    } else {
        ("`--- old`", "`+++ new`")
    };
    let mut old_side: Vec<(&'static str, &String)> = Vec::new();
    let mut new_side: Vec<(&'static str, &String)> = Vec::new();
    if let Some((a, b)) = git {
        old_side.push(("`diff --git a/`", a));
        new_side.push(("`diff --git b/`", b));
    }
    if let Some(o) = old {
        old_side.push((header.0, o));
    }
    if let Some(n) = new {
        new_side.push((header.1, n));
    }
    if let Some((from, to)) = rename {
        let (from_header, to_header) = if file.git {
            ("`rename from`", "`rename to`")
        } else {
            ("`*** Update File:`", "`*** Move to:`")
        };
        old_side.push((from_header, from));
        new_side.push((to_header, to));
    }
    let check = |names: &[(&'static str, &String)]| -> Result<()> {
        let Some((first_header, first)) = names.first() else {
            return Ok(());
        };
        for (second_header, second) in names.iter().skip(1) {
            if second != first {
                return Err(PatchError::InconsistentNames {
                    line: file.at.0,
                    first_header,
                    first: (*first).clone(),
                    second_header,
                    second: (*second).clone(),
                });
            }
        }
        Ok(())
    };
    if rename.is_some() {
        check(&old_side)?;
        check(&new_side)
    } else {
        old_side.extend(new_side);
        check(&old_side)
    }
}

fn bound(bound: Bound, limit: u64, actual: u64, path: Option<&str>) -> Result<()> {
    if actual > limit {
        return Err(PatchError::Bound {
            bound,
            limit,
            actual,
            path: path.map(str::to_owned),
        });
    }
    Ok(())
}

fn as_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The size and count bounds that need no file.
pub(crate) fn check_bounds(patch: &Patch, config: &PatchPolicyConfig) -> Result<()> {
    bound(
        Bound::PatchBytes,
        config.max_patch_bytes,
        as_u64(patch.source_bytes.0),
        None,
    )?;
    bound(
        Bound::Files,
        as_u64(config.max_files),
        as_u64(patch.files.len()),
        None,
    )?;
    let hunks: usize = patch.files.iter().map(|f| f.hunks.len()).sum();
    bound(Bound::Hunks, as_u64(config.max_hunks), as_u64(hunks), None)
}

/// Everything a plan needs from the caller.
pub(crate) struct Context<'a> {
    pub(crate) policy: &'a PathPolicy,
    pub(crate) beneath: &'a Beneath,
    pub(crate) fs: &'a dyn FileSystem,
    pub(crate) base: &'a Path,
    pub(crate) config: &'a PatchPolicyConfig,
    /// Also write the unified diff of each change (dry runs).
    pub(crate) want_diff: bool,
}

fn io(op: &'static str, path: &str, source: std::io::Error) -> PatchError {
    PatchError::Io {
        op,
        path: path.to_owned(),
        source: Box::new(PathError::Io {
            op,
            path: PathBuf::from(path),
            source,
        }),
    }
}

/// What is at `rel` in `fs`, refusing links on the way (and at the end).
fn walk(fs: &dyn FileSystem, base: &Path, rel: &str) -> Result<Option<EntryKind>> {
    let mut at = base.to_path_buf();
    let mut components = rel.split('/').peekable();
    while let Some(c) = components.next() {
        at.push(c);
        let kind = fs.entry(&at).map_err(|e| io("lstat", rel, e))?;
        let last = components.peek().is_none();
        let so_far = at
            .strip_prefix(base)
            .unwrap_or(&at)
            .to_string_lossy()
            .into_owned();
        match kind {
            Some(EntryKind::Symlink) => {
                return Err(PatchError::Symlink {
                    path: rel.to_owned(),
                    link: so_far,
                });
            }
            Some(k) if last => return Ok(Some(k)),
            None => return Ok(None),
            Some(EntryKind::Dir) => {}
            Some(_) => {
                return Err(PatchError::State {
                    path: rel.to_owned(),
                    check: StateCheck::ParentNotADirectory,
                });
            }
        }
    }
    Ok(None)
}

/// The policy's verdict on `rel`; a write also at the other names the
/// tree's guarded links give it (as the commit's handles judge it).
fn judge(ctx: &Context<'_>, view: &dyn FileSystem, rel: &str, access: Access) -> Result<()> {
    ctx.policy
        .check_on(view, ctx.base, rel, access)
        .and_then(|checked| match access {
            Access::Write => ctx.beneath.judge_guarded_links(rel, checked.location()),
            _ => Ok(()),
        })
        .map_err(|source| PatchError::PathPolicy {
            path: rel.to_owned(),
            source: Box::new(source),
        })
}

/// For a file that is missing: the name it was probably meant to be when
/// the patch repeats the repository directory (`repo/src/x` from inside
/// `repo`, `src/src/x`) and that name is a readable file.
fn doubled_path(ctx: &Context<'_>, rel: &str, line: usize) -> Option<PatchError> {
    let parts: Vec<&str> = rel.split('/').collect();
    let base: Vec<String> = ctx
        .base
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let mut candidates = Vec::new();
    // The base directory's last k components spelled again in front.
    for k in 1..parts.len() {
        let (front, rest) = parts.split_at(k);
        if base.len() > k
            && base
                .get(base.len() - k..)
                .is_some_and(|tail| tail.iter().zip(front).all(|(a, b)| a == b))
        {
            candidates.push(rest.join("/"));
        }
    }
    // A run of components spelled twice (`src/src/x`, `a/b/a/b/x`).
    for k in 1..=parts.len() / 2 {
        if parts.get(..k) == parts.get(k..2 * k) && parts.len() > 2 * k - 1 {
            candidates.push(parts.get(k..).unwrap_or_default().join("/"));
        }
    }
    candidates.into_iter().find_map(|fixed| {
        let readable = judge(ctx, ctx.fs, &fixed, Access::Read).is_ok()
            && matches!(walk(ctx.fs, ctx.base, &fixed), Ok(Some(EntryKind::File)));
        readable.then(|| PatchError::malformed(line, Malformed::DoubledPath { fixed }, rel))
    })
}

fn expect_file(rel: &str, kind: Option<EntryKind>) -> Result<()> {
    match kind {
        Some(EntryKind::File) => Ok(()),
        None => Err(PatchError::State {
            path: rel.to_owned(),
            check: StateCheck::Missing,
        }),
        Some(_) => Err(PatchError::State {
            path: rel.to_owned(),
            check: StateCheck::NotAFile,
        }),
    }
}

fn expect_absent(rel: &str, kind: Option<EntryKind>) -> Result<()> {
    match kind {
        None => Ok(()),
        Some(_) => Err(PatchError::State {
            path: rel.to_owned(),
            check: StateCheck::Exists,
        }),
    }
}

fn read(ctx: &Context<'_>, rel: &str) -> Result<(Vec<u8>, Version)> {
    let (bytes, version) = ctx
        .beneath
        .read_versioned(ctx.base, rel, ctx.config.max_target_bytes)
        .map_err(|e| match e {
            PathError::TooLarge { len, limit, .. } => PatchError::Bound {
                bound: Bound::TargetBytes,
                limit,
                actual: len,
                path: Some(rel.to_owned()),
            },
            e if e.is_refusal() => PatchError::PathPolicy {
                path: rel.to_owned(),
                source: Box::new(e),
            },
            e => PatchError::Io {
                op: "read",
                path: rel.to_owned(),
                source: Box::new(e),
            },
        })?;
    if bytes.contains(&0) {
        return Err(PatchError::State {
            path: rel.to_owned(),
            check: StateCheck::NotText,
        });
    }
    Ok((bytes, version))
}

/// Resolves, judges and applies the whole patch in memory.
pub(crate) fn plan(patch: &Patch, ctx: &Context<'_>, strip_level: Option<usize>) -> Result<Plan> {
    check_bounds(patch, ctx.config)?;
    let ops = patch
        .files
        .iter()
        .map(|f| operation(f, patch.format, strip_level))
        .collect::<Result<Vec<_>>>()?;

    // One fate per path (case folded: two spellings of one file on a
    // case-insensitive file system are one path).
    let mut seen = HashSet::new();
    for op in &ops {
        let names: &[&String] = match op {
            Operation::Create(p) | Operation::Delete(p) | Operation::Update(p) => &[p],
            Operation::Move(a, b) => &[a, b],
        };
        for name in names {
            if !seen.insert(name.to_lowercase()) {
                return Err(PatchError::DuplicatePath {
                    path: (*name).clone(),
                });
            }
        }
    }

    // The tree as the patch would leave it.
    let mut overlay = Overlay::new(ctx.fs);
    for op in &ops {
        let abs = |p: &str| ctx.base.join(p);
        match op {
            Operation::Create(p) | Operation::Update(p) => {
                overlay.set(ctx.base, abs(p), After::File)
            }
            Operation::Delete(p) => overlay.set(ctx.base, abs(p), After::Gone),
            Operation::Move(from, to) => {
                overlay.set(ctx.base, abs(from), After::Gone);
                overlay.set(ctx.base, abs(to), After::MovedFrom(abs(from)));
            }
        }
    }

    // Judge every name, before and after, then check the existing state.
    let mut new_dirs = Vec::new();
    let mut dirs_seen = HashSet::new();
    for (op, file) in ops.iter().zip(&patch.files) {
        let expect_file = |rel: &str, kind| {
            expect_file(rel, kind).map_err(|e| doubled_path(ctx, rel, file.at.0).unwrap_or(e))
        };
        match op {
            Operation::Create(p) | Operation::Update(p) | Operation::Delete(p) => {
                judge(ctx, &overlay, p, Access::Write)?;
                walk(&overlay, ctx.base, p)?;
                let before = walk(ctx.fs, ctx.base, p)?;
                match op {
                    Operation::Create(_) => expect_absent(p, before)?,
                    _ => expect_file(p, before)?,
                }
            }
            Operation::Move(from, to) => {
                judge(ctx, &overlay, from, Access::Write)?;
                judge(ctx, &overlay, from, Access::Read)?;
                judge(ctx, &overlay, to, Access::Write)?;
                walk(&overlay, ctx.base, to)?;
                expect_file(from, walk(ctx.fs, ctx.base, from)?)?;
                expect_absent(to, walk(ctx.fs, ctx.base, to)?)?;
            }
        }
        if let Operation::Create(p) | Operation::Move(_, p) = op {
            let mut prefix = String::new();
            let parts: Vec<&str> = p.split('/').collect();
            for part in parts.iter().take(parts.len().saturating_sub(1)) {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(part);
                let exists = ctx
                    .fs
                    .entry(&ctx.base.join(&prefix))
                    .map_err(|e| io("lstat", &prefix, e))?
                    .is_some();
                if !exists && dirs_seen.insert(prefix.clone()) {
                    new_dirs.push(prefix.clone());
                }
            }
        }
    }

    // Apply every hunk in memory, one file after another or, for a large
    // patch, on a few threads. (Only when the comparison budget runs out
    // can which file reports it depend on the threads' timing.)
    let budget = crate::hunk::Budget::new(crate::hunk::MAX_MATCH_WORK);
    let sections: Vec<(&FilePatch, Operation)> = patch.files.iter().zip(ops).collect();
    let planned = crate::parallel::in_parallel(sections, Result::is_err, |(file, op)| {
        plan_file(patch.format, file, op, ctx, &budget)
    });
    let mut files = Vec::with_capacity(planned.len());
    for result in planned {
        match result {
            Some(Ok(file)) => files.push(file),
            Some(Err(e)) => return Err(e),
            // Skipped after an earlier failure, which comes first.
            None => {}
        }
    }
    Ok(Plan { files, new_dirs })
}

/// Reads one file (when it exists) and applies its hunks in memory. The
/// old content is dropped here, its memory free for the next file.
fn plan_file(
    format: Format,
    file: &FilePatch,
    op: Operation,
    ctx: &Context<'_>,
    budget: &crate::hunk::Budget,
) -> Result<Planned> {
    let work = crate::hunk::Work::new(budget);
    let lenient = ctx.config.lenient;
    let diff;
    let mut read_version = None;
    let (content, report) = match &op {
        Operation::Create(p) => {
            let content = crate::hunk::created(&file.hunks);
            bound(
                Bound::TargetBytes,
                ctx.config.max_target_bytes,
                as_u64(content.len()),
                Some(p),
            )?;
            let report = FileReport {
                path: p.clone(),
                from: None,
                action: FileAction::Created,
                hunks: Vec::new(),
            };
            diff = ctx
                .want_diff
                .then(|| crate::diff::file_diff(&op, &[], &content, &[], &[]));
            (Some(content), report)
        }
        Operation::Update(source) | Operation::Move(source, _) => {
            let (target, from, action) = match &op {
                Operation::Move(from, to) => (to, Some(from.clone()), FileAction::Moved),
                _ => (source, None, FileAction::Modified),
            };
            let (original, version) = read(ctx, source)?;
            read_version = Some(version);
            let (content, hunks) =
                crate::hunk::apply(source, &original, &file.hunks, lenient, &work)?;
            bound(
                Bound::TargetBytes,
                ctx.config.max_target_bytes,
                as_u64(content.len()),
                Some(target),
            )?;
            let report = FileReport {
                path: target.clone(),
                from,
                action,
                hunks,
            };
            diff = ctx.want_diff.then(|| {
                crate::diff::file_diff(&op, &original, &content, &file.hunks, &report.hunks)
            });
            // A move that keeps the content is a rename alone.
            let unchanged = matches!(op, Operation::Move(..)) && content == original;
            // `original` is dropped here: its memory serves the next file.
            ((!unchanged).then_some(content), report)
        }
        Operation::Delete(p) => {
            let (original, version) = read(ctx, p)?;
            read_version = Some(version);
            let mut hunks = Vec::new();
            if format == Format::Unified {
                let differs = || PatchError::State {
                    path: p.clone(),
                    check: StateCheck::ContentDiffers,
                };
                let (rest, reports) = crate::hunk::apply(p, &original, &file.hunks, false, &work)
                    .map_err(|e| match e {
                    PatchError::NoMatch { .. } | PatchError::Ambiguous { .. } => differs(),
                    e => e,
                })?;
                if !rest.is_empty() || reports.iter().any(|r| !r.concessions.is_empty()) {
                    return Err(differs());
                }
                hunks = reports;
            }
            let report = FileReport {
                path: p.clone(),
                from: None,
                action: FileAction::Deleted,
                hunks,
            };
            diff = ctx
                .want_diff
                .then(|| crate::diff::file_diff(&op, &original, &[], &[], &[]));
            (None, report)
        }
    };
    Ok(Planned {
        op,
        content,
        report,
        diff,
        read: read_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_defaults_to_git_prefixes_only() {
        assert_eq!(strip("a/src/x", None, "a/").ok(), Some("src/x".into()));
        assert_eq!(strip("src/x", None, "a/").ok(), Some("src/x".into()));
        assert_eq!(strip("b/x", None, "a/").ok(), Some("b/x".into()));
        assert_eq!(strip("one/two/x", Some(2), "a/").ok(), Some("x".into()));
        assert!(strip("x", Some(1), "a/").is_err());
    }
}
