//! Inside a git directory, a command writes only git's data.
//!
//! Git reads code from its directory: hooks, and config keys that name
//! programs (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`,
//! aliases, filters, credential helpers), and it follows `commondir` and
//! `gitdir` pointers to other directories whose config and hooks it runs
//! too. So under any `.git` — and its `modules/<name>` and
//! `worktrees/<name>`, which git takes as git directories of their own —
//! a command may create or change only what git stores as data (objects,
//! refs, logs, `HEAD`, the index, the state of a merge, rebase or bisect);
//! `config` and `config.worktree` land only when every key they add or
//! change runs nothing ([`judge_config`]), and everything else there is
//! refused.

use std::io::Read;
use std::path::{Component, Path};

use agentcaps_paths::long_path;

/// Where a path lies with respect to git directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GitPlace {
    /// Not inside any git directory.
    Outside,
    /// A git directory itself, or a directory inside one (an empty
    /// directory runs nothing; what it holds is judged on its own).
    Dir,
    /// Git's data: may be written.
    Data,
    /// A `config` or `config.worktree`: judged by its keys.
    Config,
    /// Anything else inside a git directory (`hooks/**`, `info/**`,
    /// `commondir`, `gitdir`, ...): never written.
    Other(String),
}

/// Directories of git's data, at any depth beneath.
const DATA_DIRS: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "rr-cache",
];

/// Files of git's data, directly in the git directory.
const DATA_FILES: &[&str] = &[
    "packed-refs",
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "MERGE_MSG",
    "MERGE_MODE",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "AUTO_MERGE",
    "COMMIT_EDITMSG",
    "index",
    "shallow",
    "description",
];

/// Where `rel` (relative to a root) lies: beneath the first component
/// named `.git` in any case, judged by [`place_in`]; a path that is not
/// valid UTF-8 inside one is [`GitPlace::Other`].
pub(crate) fn git_place(rel: &Path, is_dir: bool) -> GitPlace {
    let mut names = Vec::new();
    let mut inside = false;
    for component in rel.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        if inside {
            match name.to_str() {
                Some(name) => names.push(name),
                None => return GitPlace::Other(rel.display().to_string()),
            }
        } else if name
            .to_str()
            .is_some_and(|n| n.eq_ignore_ascii_case(".git"))
        {
            inside = true;
        }
    }
    if !inside {
        return GitPlace::Outside;
    }
    place_in(&names, is_dir)
}

/// Where `inner` (relative to a git directory) lies.
fn place_in(inner: &[&str], is_dir: bool) -> GitPlace {
    let Some((first, rest)) = inner.split_first() else {
        return GitPlace::Dir;
    };
    if DATA_DIRS.contains(first) {
        return GitPlace::Data;
    }
    if rest.is_empty() && !is_dir {
        if DATA_FILES.contains(first) || first.starts_with("BISECT_") {
            return GitPlace::Data;
        }
        if *first == "config" || *first == "config.worktree" {
            return GitPlace::Config;
        }
    }
    if *first == "modules" || *first == "worktrees" {
        // `modules/<name>/...` (a name may hold slashes) and
        // `worktrees/<name>/...` are git directories of their own: the
        // path is data or config when some split makes it so; anything
        // else there is refused.
        if is_dir {
            return GitPlace::Dir;
        }
        let mut verdict = GitPlace::Other(inner.join("/"));
        for start in 2..inner.len() {
            let Some(sub) = inner.get(start..) else {
                continue;
            };
            match place_in(sub, false) {
                GitPlace::Data => return GitPlace::Data,
                GitPlace::Config => verdict = GitPlace::Config,
                _ => {}
            }
        }
        return verdict;
    }
    if is_dir {
        return GitPlace::Dir;
    }
    GitPlace::Other(inner.join("/"))
}

/// The most a config file may hold to be judged (a bigger one is refused).
const MAX_CONFIG: u64 = 1 << 20;

/// Why a config does not land: the first offending key and the reason.
pub(crate) type ConfigRefusal = (String, String);

/// Judge the config file the command left (`new`) against the one the
/// real tree holds (`old`, if any): every key it sets or changes must be
/// one that runs nothing, and it may include no other file.
pub(crate) fn judge_config(new: &Path, old: Option<&Path>) -> Result<(), ConfigRefusal> {
    let read = |path: &Path| -> Result<String, ConfigRefusal> {
        let mut text = String::new();
        long_path::open(path)
            .and_then(|file| file.take(MAX_CONFIG + 1).read_to_string(&mut text))
            .map_err(|e| {
                (
                    "config".to_owned(),
                    format!("it cannot be read as text ({e})"),
                )
            })?;
        if text.len() as u64 > MAX_CONFIG {
            return Err(("config".to_owned(), "it is larger than 1 MiB".to_owned()));
        }
        Ok(text)
    };
    let new_entries = parse(&read(new)?)?;
    let old_entries = match old {
        Some(old) => parse(&read(old)?).unwrap_or_default(),
        None => Vec::new(),
    };
    let mut unchanged = old_entries;
    for (key, value) in new_entries {
        if let Some(at) = unchanged.iter().position(|e| e.0 == key && e.1 == value) {
            unchanged.swap_remove(at);
            continue;
        }
        if let Some(why) = refused_key(&key) {
            return Err((key, why));
        }
    }
    Ok(())
}

/// Why git may run something named by `key` (`section[.subsection].name`,
/// section and name in lower case); `None` for the keys that run nothing.
fn refused_key(key: &str) -> Option<String> {
    let (section, rest) = key.split_once('.').unwrap_or((key, ""));
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    if section == "include" || section == "includeif" {
        return Some("it includes another config file, whose keys are never judged".to_owned());
    }
    let allowed = match (section, sub) {
        ("core", None) => [
            "repositoryformatversion",
            "filemode",
            "bare",
            "logallrefupdates",
            "ignorecase",
            "precomposeunicode",
            "symlinks",
            "autocrlf",
            "eol",
        ]
        .contains(&name),
        ("remote", Some(_)) => ["url", "fetch", "pushurl"].contains(&name),
        ("branch", Some(_)) => ["remote", "merge", "rebase"].contains(&name),
        ("user", None) => ["name", "email"].contains(&name),
        ("init", None) => name == "defaultbranch",
        ("pull", None) => name == "rebase",
        ("push", None) => name == "default",
        ("extensions", None) => name != "worktreeconfig",
        _ => false,
    };
    (!allowed).then(|| {
        "it is not one of the keys that run nothing (core's format keys, remote.*.url/fetch/pushurl, branch.*.remote/merge/rebase, user.name/email, init.defaultBranch, pull.rebase, push.default, extensions.*)".to_owned()
    })
}

/// The `(key, value)` pairs a git config sets, in order; keys as git
/// compares them (section and name in lower case, subsection as written).
/// What git would read otherwise than this parser is refused.
fn parse(text: &str) -> Result<Vec<(String, String)>, ConfigRefusal> {
    let malformed = |line: usize, what: &str| {
        (
            format!("line {line}"),
            format!("{what}: the config is not read the way git would read it"),
        )
    };
    let mut entries = Vec::new();
    let mut section: Option<String> = None;
    let mut lines = text.lines().enumerate();
    while let Some((index, raw)) = lines.next() {
        let number = index + 1;
        let mut line = raw.trim_start().to_owned();
        if line.starts_with('[') {
            let Some(close) = line.find(']') else {
                return Err(malformed(number, "a section header with no `]`"));
            };
            let header = line.get(1..close).unwrap_or_default();
            section =
                Some(section_name(header).ok_or_else(|| malformed(number, "a section header"))?);
            line = line
                .get(close + 1..)
                .unwrap_or_default()
                .trim_start()
                .to_owned();
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some(section) = section.as_deref() else {
            return Err(malformed(number, "a key outside any section"));
        };
        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name.trim().to_owned(), value.to_owned()),
            None => (line.trim().to_owned(), String::new()),
        };
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(malformed(number, "a key name"));
        }
        // A value continued on the next lines (a `\` at the end).
        let mut value = value;
        while value.ends_with('\\') {
            value.pop();
            match lines.next() {
                Some((_, next)) => value.push_str(next),
                None => break,
            }
        }
        entries.push((
            format!("{section}.{}", name.to_ascii_lowercase()),
            value.trim().to_owned(),
        ));
    }
    Ok(entries)
}

/// `core`, `remote "origin"` → `remote.origin`, `branch.main` (the old
/// form) → `branch.main`; section names in lower case.
fn section_name(header: &str) -> Option<String> {
    let header = header.trim();
    if let Some((name, sub)) = header.split_once(char::is_whitespace) {
        let sub = sub.trim();
        let sub = sub.strip_prefix('"')?.strip_suffix('"')?;
        let sub = sub.replace("\\\"", "\"").replace("\\\\", "\\");
        valid_section(name).then(|| format!("{}.{sub}", name.to_ascii_lowercase()))
    } else {
        match header.split_once('.') {
            Some((name, sub)) => valid_section(name)
                .then(|| format!("{}.{}", name.to_ascii_lowercase(), sub.to_ascii_lowercase())),
            None => valid_section(header).then(|| header.to_ascii_lowercase()),
        }
    }
}

fn valid_section(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(rel: &str) -> GitPlace {
        git_place(Path::new(rel), false)
    }

    #[test]
    fn git_data_is_data_and_what_runs_code_is_not() {
        for data in [
            ".git/objects/ab/cdef",
            ".git/refs/heads/main",
            ".git/HEAD",
            ".git/index",
            ".git/logs/HEAD",
            ".git/BISECT_LOG",
            "sub/.git/packed-refs",
            ".git/modules/lib/objects/pack/x.pack",
            ".git/modules/a/b/HEAD",
            ".git/worktrees/wt/HEAD",
            ".git/rebase-merge/done",
        ] {
            assert_eq!(place(data), GitPlace::Data, "{data}");
        }
        for config in [
            ".git/config",
            ".GIT/config.worktree",
            ".git/modules/lib/config",
        ] {
            assert_eq!(place(config), GitPlace::Config, "{config}");
        }
        for other in [
            ".git/hooks/pre-commit",
            ".git/info/attributes",
            ".git/commondir",
            ".git/modules/lib/hooks/post-checkout",
            ".git/worktrees/wt/commondir",
            ".git/worktrees/wt/gitdir",
            ".git/HEAD/x",
            ".git/anything",
        ] {
            assert!(matches!(place(other), GitPlace::Other(_)), "{other}");
        }
        assert_eq!(place("src/config"), GitPlace::Outside);
        assert_eq!(git_place(Path::new(".git/hooks"), true), GitPlace::Dir);
    }

    #[test]
    fn config_keys_that_run_programs_are_refused_by_name() {
        let judge = |text: &str| -> Result<(), String> {
            parse(text).map_err(|e| e.0).and_then(|entries| {
                entries
                    .into_iter()
                    .find_map(|(key, _)| refused_key(&key).map(|_| key))
                    .map_or(Ok(()), Err)
            })
        };
        assert_eq!(
            judge(
                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = /x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\temail = a@b\n"
            ),
            Ok(())
        );
        for (text, key) in [
            ("[core]\n\tfsmonitor = ./evil\n", "core.fsmonitor"),
            ("[core] hooksPath = /tmp", "core.hookspath"),
            ("[CORE]\nsshCommand = x", "core.sshcommand"),
            ("[alias]\n\tst = !evil", "alias.st"),
            ("[include]\n\tpath = ../x", "include.path"),
            (
                "[includeIf \"gitdir:/\"]\n\tpath = x",
                "includeif.gitdir:/.path",
            ),
            ("[diff \"x\"]\n\ttextconv = evil", "diff.x.textconv"),
            ("[filter \"lfs\"]\n\tclean = evil", "filter.lfs.clean"),
            ("[credential]\n\thelper = evil", "credential.helper"),
            (
                "[extensions]\n\tworktreeConfig = true",
                "extensions.worktreeconfig",
            ),
            ("[core.x]\n\tfsmonitor = 1", "core.x.fsmonitor"),
            ("[core]\n\tpager = less \\\n\t; evil", "core.pager"),
        ] {
            assert_eq!(judge(text), Err(key.to_owned()), "{text}");
        }
        for malformed in [
            "[core\n\tbare = 1",
            "bare = 1",
            "[core]\n\t-x = 1",
            "[c\"x\"]\nurl=1",
        ] {
            assert!(judge(malformed).is_err(), "{malformed}");
        }
    }
}
