//! The compiled policy: canonical roots, and every blocked and
//! write-protected entry in one automaton.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::{Anchored, Input, MatchKind, PatternSet, meta};

use crate::defaults::{DOTENV, DOTENV_TEMPLATES};
use crate::glob::{Pattern, glob_regex, is_glob};
use crate::location::Location;
use crate::spelling::windows_alias_of;
use crate::{Access, PathError, Reading, RootAccess};

#[derive(Debug)]
pub(crate) struct Root {
    /// Canonical location (what [`crate::PathPolicy::roots`] reports).
    pub(crate) canonical: Arc<Path>,
    /// Spellings that denote it (canonical and as given), folded when roots
    /// compare case-insensitively.
    forms: Vec<Vec<u8>>,
    pub(crate) access: RootAccess,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Blocked,
    WriteProtected,
}

#[derive(Debug)]
pub(crate) struct Rules {
    pub(crate) roots: Vec<Root>,
    /// Blocked and write-protected entries, in pattern order.
    entries: Vec<(String, EntryKind)>,
    /// The entries as the policy's modes read them (for reads and lists).
    automaton: Option<meta::Regex>,
    /// The same entries matched in every case (for writes); `None` when
    /// [`Rules::automaton`] already folds case. Compiled when first asked
    /// (a policy loaded to judge a read never needs it).
    write_automaton: Option<LazyAutomaton>,
    fold_roots: bool,
    aliases: bool,
    allowed_text: String,
    /// The directories on the way to each write-protected glob (`**/.git`
    /// and `**/.git/hooks` for `**/.git/hooks/**`), matched exactly and in
    /// every case, with the glob each leads to. Compiled when first asked.
    ways: LazyAutomaton,
    way_entries: Vec<String>,
    /// The entry of the built-in `**/.env*`, which does not block the
    /// committed templates (`.env.example`, ...).
    dotenv_default: Option<usize>,
}

/// Patterns compiled into one automaton when first needed: loading a
/// policy compiles only what judging a read needs. The same patterns
/// compiled in this process before are not compiled again
/// ([`compile_entries`]).
#[derive(Debug)]
struct LazyAutomaton {
    patterns: Vec<Pattern>,
    fold: bool,
    compiled: std::sync::OnceLock<Result<Option<meta::Regex>, String>>,
}

/// What a judgement names when an automaton compiled on demand could not
/// be built (it is then refused: nothing is let through unjudged).
const UNCOMPILED: &str = "the policy's protected entries (their automaton could not be built)";

impl LazyAutomaton {
    fn new(patterns: Vec<Pattern>, fold: bool) -> Self {
        Self {
            patterns,
            fold,
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// The automaton (`None` when there are no patterns), or why it could
    /// not be built.
    fn get(&self) -> Result<Option<&meta::Regex>, &str> {
        self.compiled
            .get_or_init(|| compile_entries(&self.patterns, self.fold).map_err(|e| e.to_string()))
            .as_ref()
            .map(Option::as_ref)
            .map_err(String::as_str)
    }
}

/// Case folding used for roots (and by the simulated file system).
pub(crate) fn fold(bytes: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_lowercase().into_bytes(),
        Err(_) => bytes.to_ascii_lowercase(),
    }
}

fn invalid(entry: &str, reason: impl Into<String>) -> PathError {
    PathError::InvalidPolicy {
        entry: entry.to_owned(),
        reason: reason.into(),
    }
}

/// Canonicalize the longest existing prefix of an absolute path and append
/// the rest, so that a root spelled through a link (macOS `/tmp`) and a
/// root not created yet both work.
fn canonical(path: &Path, entry: &str) -> Result<Location, PathError> {
    let lexical =
        Location::from_absolute(path).ok_or_else(|| invalid(entry, "must be an absolute path"))?;
    let names: Vec<&[u8]> = lexical.names().collect();
    for keep in (0..=names.len()).rev() {
        let mut prefix = Location::root();
        for name in names.iter().take(keep) {
            prefix.push(name);
        }
        if let Ok(real) = std::fs::canonicalize(prefix.as_path()) {
            let Some(mut location) = Location::from_absolute(&real) else {
                continue;
            };
            for name in names.iter().skip(keep) {
                location.push(name);
            }
            return Ok(location);
        }
    }
    Ok(lexical)
}

pub(crate) struct Settings<'a> {
    pub(crate) roots: &'a [(PathBuf, RootAccess)],
    pub(crate) blocked: &'a [String],
    pub(crate) write_protected: &'a [String],
    /// Files protected from writes by path (not glob).
    pub(crate) protected_files: &'a [PathBuf],
    pub(crate) fold_roots: bool,
    pub(crate) fold_blocked: bool,
    pub(crate) aliases: bool,
    /// The built-in defaults come first in `blocked`.
    pub(crate) defaults: bool,
}

impl Rules {
    pub(crate) fn compile(settings: &Settings<'_>) -> Result<Self, PathError> {
        let fold_root = |bytes: &[u8]| {
            if settings.fold_roots {
                fold(bytes)
            } else {
                bytes.to_vec()
            }
        };
        let mut roots = Vec::new();
        for (path, access) in settings.roots {
            let entry = path.display().to_string();
            let real = canonical(path, &entry)?;
            let mut forms = vec![fold_root(real.as_bytes())];
            if let Some(spelled) = Location::from_absolute(path) {
                let spelled = fold_root(spelled.as_bytes());
                if !forms.contains(&spelled) {
                    forms.push(spelled);
                }
            }
            roots.push(Root {
                canonical: Arc::from(real.as_path()),
                forms,
                access: *access,
            });
        }
        let mut entries = Vec::new();
        let mut patterns = Vec::new();
        for entry in settings.blocked {
            if is_glob(entry) {
                glob_regex(entry).map_err(|e| invalid(entry, e))?;
                patterns.push(Pattern::Glob(entry.clone()));
            } else {
                let lexical = Location::from_absolute(Path::new(entry)).ok_or_else(|| {
                    invalid(
                        entry,
                        "a blocked path must be absolute (or use a glob such as `**/name`)",
                    )
                })?;
                let real = canonical(Path::new(entry), entry)?;
                patterns.push(Pattern::Path(real.as_bytes().to_vec()));
                if real != lexical {
                    entries.push((entry.clone(), EntryKind::Blocked));
                    patterns.push(Pattern::Path(lexical.as_bytes().to_vec()));
                }
            }
            entries.push((entry.clone(), EntryKind::Blocked));
        }
        for entry in settings.write_protected {
            glob_regex(entry).map_err(|e| invalid(entry, e))?;
            patterns.push(Pattern::Glob(entry.clone()));
            entries.push((entry.clone(), EntryKind::WriteProtected));
        }
        for file in settings.protected_files {
            let entry = file.display().to_string();
            let lexical = Location::from_absolute(file)
                .ok_or_else(|| invalid(&entry, "a protected file must be an absolute path"))?;
            let real = canonical(file, &entry)?;
            patterns.push(Pattern::Path(real.as_bytes().to_vec()));
            entries.push((entry.clone(), EntryKind::WriteProtected));
            if real != lexical {
                patterns.push(Pattern::Path(lexical.as_bytes().to_vec()));
                entries.push((entry, EntryKind::WriteProtected));
            }
        }
        let mut way_patterns = Vec::new();
        let mut way_entries = Vec::new();
        for entry in settings.write_protected {
            for way in ways_to(entry) {
                glob_regex(&way).map_err(|e| invalid(entry, e))?;
                // Only the directory itself, not what is beneath it.
                way_entries.push(format!("{way} (on the way to {entry})"));
                way_patterns.push(Pattern::Exact(way));
            }
        }
        let ways = LazyAutomaton::new(way_patterns, true);
        let dotenv_default = if settings.defaults {
            entries
                .iter()
                .position(|(entry, kind)| *kind == EntryKind::Blocked && entry == DOTENV)
        } else {
            None
        };
        let automaton = compile_entries(&patterns, settings.fold_blocked)?;
        // Writes match in every case whatever the modes say: on a
        // case-insensitive mount (WSL's /mnt/c, a Mac volume in a
        // container) `.GIT/hooks/x` is the real hook.
        let write_automaton =
            (!settings.fold_blocked).then(|| LazyAutomaton::new(patterns.clone(), true));
        let allowed_text = if roots.is_empty() {
            "none".to_owned()
        } else {
            roots
                .iter()
                .map(|r| match r.access {
                    RootAccess::ReadWrite => r.canonical.display().to_string(),
                    RootAccess::ReadOnly => format!("{} (read-only)", r.canonical.display()),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        Ok(Rules {
            roots,
            entries,
            automaton,
            write_automaton,
            fold_roots: settings.fold_roots,
            aliases: settings.aliases,
            allowed_text,
            ways,
            way_entries,
            dotenv_default,
        })
    }

    /// Whether Windows spelling rules apply.
    pub(crate) fn aliases(&self) -> bool {
        self.aliases
    }

    /// The most specific root holding `location`.
    pub(crate) fn root_of(&self, location: &Location) -> Option<usize> {
        let folded;
        let bytes = if self.fold_roots {
            folded = fold(location.as_bytes());
            &folded
        } else {
            location.as_bytes()
        };
        let mut best: Option<(usize, usize)> = None;
        for (index, root) in self.roots.iter().enumerate() {
            for form in &root.forms {
                if contains(form, bytes) && best.is_none_or(|(_, len)| form.len() > len) {
                    best = Some((index, form.len()));
                }
            }
        }
        best.map(|(index, _)| index)
    }

    /// The first blocked (or, for writes, write-protected) entry matching
    /// `location` as spelled and, where Windows aliases apply, as Windows
    /// would name it.
    ///
    /// For a **write**, every entry matches in every case and every Windows
    /// alias (`.GIT/hooks/x`, `.Env`, `.git./config`, `.git::$DATA`), with
    /// the characters HFS+ ignores removed (`.g\u{200C}it`) and the dotless
    /// `ı` that NTFS upper-cases to `I` (`.gıt`), whatever
    /// the modes say: a case-insensitive, Windows or HFS+ mount makes them
    /// the same file, as git refuses `.Git` on every host. Reads and lists
    /// keep the modes' semantics.
    fn blocking_entry(&self, location: &Location, access: Access) -> Option<(&str, EntryKind)> {
        let write = access == Access::Write;
        let automaton = match (&self.write_automaton, write) {
            (Some(folding), true) => match folding.get() {
                Ok(automaton) => automaton?,
                Err(_) => return Some((UNCOMPILED, EntryKind::Blocked)),
            },
            _ => self.automaton.as_ref()?,
        };
        let mut set: Option<PatternSet> = None;
        let mut probe = |bytes: &[u8]| {
            let input = Input::new(bytes).anchored(Anchored::Yes);
            if automaton.is_match(input.clone()) {
                let set = set.get_or_insert_with(|| PatternSet::new(automaton.pattern_len()));
                automaton.which_overlapping_matches(&input, set);
            }
        };
        probe(location.as_bytes());
        // Only a name another host reads differently (`.git.`,
        // `.env::$DATA`, `.g\u{200C}it` on HFS+) has another spelling to
        // probe. HFS+'s ignored characters count for writes only.
        if (self.aliases || write)
            && location.names().any(|name| {
                windows_alias_of(name).len() != name.len() || (write && has_ignorable(name))
            })
        {
            let mut aliased = Location::root();
            for name in location.names() {
                let visible = if write && has_ignorable(name) {
                    without_ignorable(name)
                } else {
                    name.to_vec()
                };
                let alias = windows_alias_of(&visible);
                aliased.push(if alias.is_empty() { &visible } else { alias });
            }
            if aliased != *location {
                probe(aliased.as_bytes());
            }
        }
        let set = set?;
        let mut protected = None;
        for id in set.iter() {
            let (entry, kind) = self.entries.get(id.as_usize())?;
            match kind {
                EntryKind::Blocked
                    if self.dotenv_default == Some(id.as_usize()) && is_template(location) => {}
                EntryKind::Blocked => return Some((entry, *kind)),
                EntryKind::WriteProtected if access == Access::Write => {
                    protected.get_or_insert((entry.as_str(), *kind));
                }
                EntryKind::WriteProtected => {}
            }
        }
        protected
    }

    /// The way to a write-protected entry that `location` is (`/r/.cargo`
    /// for `**/.cargo/config.toml`), in every case: what a link there
    /// would make reachable at protected names.
    pub(crate) fn way_entry(&self, location: &Location) -> Option<&str> {
        let ways = match self.ways.get() {
            Ok(ways) => ways?,
            Err(_) => return Some(UNCOMPILED),
        };
        let input = Input::new(location.as_bytes()).anchored(Anchored::Yes);
        if !ways.is_match(input.clone()) {
            return None;
        }
        let mut set = PatternSet::new(ways.pattern_len());
        ways.which_overlapping_matches(&input, &mut set);
        let id = set.iter().next()?;
        self.way_entries.get(id.as_usize()).map(String::as_str)
    }

    /// The blocked entry (not a write-protected one) that matches
    /// `location` for reading, wherever it lies.
    pub(crate) fn blocked_entry(&self, location: &Location) -> Option<&str> {
        match self.blocking_entry(location, Access::Read)? {
            (entry, EntryKind::Blocked) => Some(entry),
            (_, EntryKind::WriteProtected) => None,
        }
    }

    /// A link about to be followed inside a blocked entry (`/proc/self/root`,
    /// `/proc/self/fd/N`): its target is not what `readlink` says, so the
    /// spelling is refused wherever it would land.
    pub(crate) fn judge_link(
        &self,
        spelling: &str,
        reading: Reading,
        link: &Location,
    ) -> Result<(), PathError> {
        match self.blocking_entry(link, Access::Read) {
            Some((entry, EntryKind::Blocked)) => Err(PathError::Blocked {
                spelling: spelling.to_owned(),
                reading,
                location: link.as_path().to_path_buf(),
                entry: entry.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Judge one reading's location; returns the index of its root.
    pub(crate) fn judge(
        &self,
        spelling: &str,
        reading: Reading,
        location: &Location,
        access: Access,
    ) -> Result<usize, PathError> {
        let Some(index) = self.root_of(location) else {
            return Err(PathError::OutsideRoots {
                spelling: spelling.to_owned(),
                reading,
                location: location.as_path().to_path_buf(),
                allowed: self.allowed_text.clone(),
            });
        };
        if let Some((entry, kind)) = self.blocking_entry(location, access) {
            let location = location.as_path().to_path_buf();
            let spelling = spelling.to_owned();
            let entry = entry.to_owned();
            return Err(match kind {
                EntryKind::Blocked => PathError::Blocked {
                    spelling,
                    reading,
                    location,
                    entry,
                },
                EntryKind::WriteProtected => PathError::WriteProtected {
                    spelling,
                    reading,
                    location,
                    entry,
                },
            });
        }
        let root = self.roots.get(index).map(|r| (r.access, &r.canonical));
        if let Some((RootAccess::ReadOnly, root)) = root
            && access == Access::Write
        {
            return Err(PathError::ReadOnly {
                spelling: spelling.to_owned(),
                reading,
                location: location.as_path().to_path_buf(),
                root: root.to_path_buf(),
            });
        }
        Ok(index)
    }
}

/// Characters HFS+ ignores in names (as git's `core.protectHFS` knows):
/// `.g\u{200C}it` is `.git` on such a volume.
fn is_ignorable(c: char) -> bool {
    matches!(c, '\u{200C}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{206A}'..='\u{206F}' | '\u{FEFF}')
}

/// Whether a name reads as another on some volume beyond case folding: it
/// holds a character HFS+ ignores, or the dotless `ı`, which NTFS's
/// upper-case table maps to `I` (so `.gıt` is `.git` there).
fn has_ignorable(name: &[u8]) -> bool {
    // Each of these characters starts with 0xC4, 0xE2 or 0xEF in UTF-8.
    name.iter().any(|b| matches!(b, 0xC4 | 0xE2 | 0xEF))
        && std::str::from_utf8(name)
            .is_ok_and(|text| text.chars().any(|c| c == '\u{131}' || is_ignorable(c)))
}

/// The name with the ignorable characters removed and `ı` read as `i`.
fn without_ignorable(name: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(name) {
        Ok(text) => text
            .chars()
            .filter(|c| !is_ignorable(*c))
            .map(|c| if c == '\u{131}' { 'i' } else { c })
            .collect::<String>()
            .into_bytes(),
        Err(_) => name.to_vec(),
    }
}

/// Automata compiled in this process, by their patterns and folding: a
/// policy is built several times per process (validated when loaded,
/// then for the shell and for the files), always from the same entries;
/// compiling them once is most of what a load costs.
type Compiled = Vec<((Vec<Pattern>, bool), meta::Regex)>;
static COMPILED: std::sync::Mutex<Compiled> = std::sync::Mutex::new(Vec::new());

/// At most this many automata are kept (a process builds a handful of
/// distinct policies; a host building many evicts the oldest).
const MAX_COMPILED: usize = 8;

/// Compile blocked and write-protected patterns into one automaton
/// (`None` when there are none), folding case or not; the same patterns
/// compiled before in this process are not compiled again.
fn compile_entries(patterns: &[Pattern], fold: bool) -> Result<Option<meta::Regex>, PathError> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let cached = COMPILED.lock().ok().and_then(|compiled| {
        compiled
            .iter()
            .find(|((p, f), _)| *f == fold && p.as_slice() == patterns)
            .map(|(_, regex)| regex.clone())
    });
    if let Some(regex) = cached {
        return Ok(Some(regex));
    }
    let regex = compile_uncached(patterns, fold)?;
    if let Ok(mut compiled) = COMPILED.lock() {
        if compiled.len() >= MAX_COMPILED {
            compiled.remove(0);
        }
        compiled.push(((patterns.to_vec(), fold), regex.clone()));
    }
    Ok(Some(regex))
}

/// Compiles `patterns` from their syntax trees (built directly, not
/// parsed from text: see [`Pattern::hir`]).
fn compile_uncached(patterns: &[Pattern], fold: bool) -> Result<meta::Regex, PathError> {
    let hirs = patterns
        .iter()
        .map(|pattern| pattern.hir(fold))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid("blocked entries", e))?;
    meta::Regex::builder()
        .configure(
            meta::Regex::config()
                .match_kind(MatchKind::All)
                .utf8_empty(false)
                // Only which patterns match is asked, never where: no
                // capture states (a smaller automaton, built in about half
                // the time).
                .which_captures(WhichCaptures::None),
        )
        .build_many_from_hir(&hirs)
        .map_err(|e| invalid("blocked entries", e.to_string()))
}

/// Whether `root` is a whole-component prefix of `location`.
fn contains(root: &[u8], location: &[u8]) -> bool {
    if root == b"/" {
        return location.first() == Some(&b'/');
    }
    location.starts_with(root) && matches!(location.get(root.len()), None | Some(b'/'))
}

/// Whether the final name of `location` is a committed dotenv template
/// (`.env.example`, ...), in any case and as Windows names it.
fn is_template(location: &Location) -> bool {
    location.names().last().is_some_and(|name| {
        let alias = windows_alias_of(name);
        let name = if alias.is_empty() { name } else { alias };
        DOTENV_TEMPLATES
            .iter()
            .any(|template| name.eq_ignore_ascii_case(template.as_bytes()))
    })
}

/// The globs of the directories on the way to a write-protected glob:
/// `**/.github` and `**/.github/workflows` for `**/.github/workflows/**`;
/// none for `**/.gitmodules`. A prefix ending in a wildcard component is
/// left out (it names no one directory).
pub(crate) fn ways_to(entry: &str) -> Vec<String> {
    let components: Vec<&str> = entry.split('/').collect();
    let mut ways = Vec::new();
    for end in 1..components.len() {
        let Some(last) = components.get(end - 1) else {
            continue;
        };
        if last.is_empty() || *last == "**" {
            continue;
        }
        if let Some(prefix) = components.get(..end) {
            ways.push(prefix.join("/"));
        }
    }
    ways
}
