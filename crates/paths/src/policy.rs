//! The policy: roots, blocked entries, modes — and the check.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::defaults;
use crate::location::Location;
use crate::resolve::{Follow, Resolver, lexical};
use crate::rules::{Rules, Settings};
use crate::spelling::{Spelled, split_posix, split_windows, unjudgeable};
use crate::{
    Access, Beneath, CaseInsensitive, EntryKind, FileSystem, PathError, Reading, RealFs,
    RootAccess, WindowsAliases, check_portable_name,
};

/// Builds a [`PathPolicy`]; starts **with** the safe defaults
/// ([`PathPolicy::DEFAULT_BLOCKED`], [`PathPolicy::DEFAULT_WRITE_PROTECTED`]);
/// entries added extend them. Turning the defaults off is a loosening:
/// [`crate::danger::without_defaults`].
///
/// ```
/// use agentcaps_paths::PathPolicy;
/// let policy = PathPolicy::builder()
///     .allow("/tmp")
///     .block("**/*.key")
///     .build()?;
/// # Ok::<(), agentcaps_paths::PathError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct PathPolicyBuilder {
    pub(crate) roots: Vec<(PathBuf, RootAccess)>,
    pub(crate) blocked: Vec<String>,
    pub(crate) write_protected: Vec<String>,
    pub(crate) protected_files: Vec<PathBuf>,
    pub(crate) defaults: bool,
    pub(crate) windows_aliases: WindowsAliases,
    pub(crate) case_insensitive: CaseInsensitive,
}

impl PathPolicyBuilder {
    /// Allow `root` (absolute) for reading, writing and listing.
    pub fn allow(mut self, root: impl AsRef<Path>) -> Self {
        self.roots
            .push((root.as_ref().to_path_buf(), RootAccess::ReadWrite));
        self
    }

    /// Allow `root` (absolute) for reading and listing only.
    pub fn allow_read_only(mut self, root: impl AsRef<Path>) -> Self {
        self.roots
            .push((root.as_ref().to_path_buf(), RootAccess::ReadOnly));
        self
    }

    /// Block an absolute root, or a glob (`**/.env`, `*.pem`), for every
    /// access. Blocked entries win over allowed roots.
    pub fn block(mut self, root_or_glob: &str) -> Self {
        self.blocked.push(root_or_glob.to_owned());
        self
    }

    /// Block a glob for writing only (reading and listing stay allowed).
    pub fn protect_from_writes(mut self, glob: &str) -> Self {
        self.write_protected.push(glob.to_owned());
        self
    }

    /// Block one file (an absolute path, read as a path and never as a
    /// glob) for writing only, wherever it lies and whether or not it
    /// exists: at the path as given and at its real location. A host
    /// protects the files it reads its own configuration from this way.
    pub fn protect_file_from_writes(mut self, file: impl AsRef<Path>) -> Self {
        self.protected_files.push(file.as_ref().to_path_buf());
        self
    }

    /// When Windows spelling rules apply.
    pub fn windows_aliases(mut self, mode: WindowsAliases) -> Self {
        self.windows_aliases = mode;
        self
    }

    /// When comparisons fold case.
    pub fn case_insensitive(mut self, mode: CaseInsensitive) -> Self {
        self.case_insensitive = mode;
        self
    }

    /// Canonicalize the roots (on the host's file system, longest existing
    /// prefix) and compile every blocked and write-protected entry once,
    /// into one automaton.
    ///
    /// # Errors
    ///
    /// [`PathError::InvalidPolicy`] for a relative root or blocked path, or
    /// a glob that does not compile.
    pub fn build(self) -> Result<PathPolicy, PathError> {
        let mut blocked: Vec<String> = Vec::new();
        let mut write_protected: Vec<String> = Vec::new();
        if self.defaults {
            blocked.extend(
                defaults::BLOCKED
                    .iter()
                    .map(|(entry, _)| (*entry).to_owned()),
            );
            write_protected.extend(
                defaults::WRITE_PROTECTED
                    .iter()
                    .map(|(entry, _)| (*entry).to_owned()),
            );
        }
        blocked.extend(self.blocked);
        write_protected.extend(self.write_protected);
        let aliases = self.windows_aliases.applies();
        let fold_roots = self.case_insensitive.applies();
        let rules = Rules::compile(&Settings {
            roots: &self.roots,
            blocked: &blocked,
            write_protected: &write_protected,
            protected_files: &self.protected_files,
            fold_roots,
            fold_blocked: fold_roots || aliases,
            aliases,
            defaults: self.defaults,
        })?;
        Ok(PathPolicy {
            inner: Arc::new(Inner {
                rules,
                blocked,
                write_protected,
                protected_files: self.protected_files,
                windows_aliases: self.windows_aliases,
                case_insensitive: self.case_insensitive,
                defaults: self.defaults,
            }),
        })
    }
}

#[derive(Debug)]
struct Inner {
    rules: Rules,
    blocked: Vec<String>,
    write_protected: Vec<String>,
    protected_files: Vec<PathBuf>,
    windows_aliases: WindowsAliases,
    case_insensitive: CaseInsensitive,
    defaults: bool,
}

/// Where agent-supplied paths may go. Cheap to clone; `Send + Sync`.
///
/// ```
/// use agentcaps_paths::{Access, PathPolicy};
/// use std::path::Path;
/// let policy = PathPolicy::builder().allow("/tmp").build()?;
/// assert!(policy.check(Path::new("/tmp"), "../etc/passwd", Access::Read).is_err());
/// # Ok::<(), agentcaps_paths::PathError>(())
/// ```
#[derive(Debug, Clone)]
pub struct PathPolicy {
    inner: Arc<Inner>,
}

/// A check's lookup budget, shareable across many checks (a command's
/// arguments, a patch's files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    limit: u64,
    spent: u64,
}

impl Budget {
    /// A budget of `lookups`.
    pub fn new(lookups: u64) -> Self {
        Budget {
            limit: lookups,
            spent: 0,
        }
    }

    /// Lookups spent so far.
    pub fn spent(&self) -> u64 {
        self.spent
    }

    /// Lookups left.
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.spent)
    }

    /// The whole budget.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Spend one lookup; `false` when none is left.
    pub(crate) fn take(&mut self) -> bool {
        if self.spent >= self.limit {
            return false;
        }
        self.spent += 1;
        true
    }
}

/// A spelling that passed the check, with every location it was judged at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// `None` when it is the POSIX location.
    pub(crate) lexical: Option<PathBuf>,
    pub(crate) posix: PathBuf,
    /// `None` when it is the POSIX location.
    pub(crate) windows: Option<PathBuf>,
    pub(crate) root: Arc<Path>,
    pub(crate) root_access: RootAccess,
    pub(crate) kind: Option<EntryKind>,
    pub(crate) lookups: u64,
}

impl Checked {
    /// The POSIX real location: where the OS opens the spelling, links
    /// followed. Act on this.
    pub fn location(&self) -> &Path {
        &self.posix
    }

    /// The lexical location.
    pub fn lexical(&self) -> &Path {
        self.lexical.as_deref().unwrap_or(&self.posix)
    }

    /// The Windows-reading location.
    pub fn windows(&self) -> &Path {
        self.windows.as_deref().unwrap_or(&self.posix)
    }

    /// The (canonical) allowed root that holds [`Checked::location`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What that root permits.
    pub fn root_access(&self) -> RootAccess {
        self.root_access
    }

    /// What is at the real location (links followed), or `None` when it
    /// does not exist yet.
    pub fn kind(&self) -> Option<EntryKind> {
        self.kind
    }

    /// Lookups the check made.
    pub fn lookups(&self) -> u64 {
        self.lookups
    }
}

/// The three locations of a spelling, computed without judging
/// them: for explaining a decision, and for testing the resolver against
/// the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The lexical location.
    pub lexical: PathBuf,
    /// The POSIX real location (links followed as met).
    pub posix: PathBuf,
    /// The Windows-reading location (`..` applied lexically first).
    pub windows: PathBuf,
    /// What is at the POSIX location, `None` when it does not exist.
    pub kind: Option<EntryKind>,
    /// Lookups made.
    pub lookups: u64,
}

impl PathPolicy {
    /// The safe defaults blocked for every access, each with what it
    /// prevents: `/proc`, `/sys`, `/dev`, `**/.env*`, `**/*.pem`,
    /// `**/id_rsa*`, `**/.ssh/**`, `**/.aws/**`. Of `**/.env*`, the
    /// templates committed by convention (`.env.example`, `.env.sample`,
    /// `.env.template`, `.env.dist`) are not blocked.
    pub const DEFAULT_BLOCKED: &'static [(&'static str, &'static str)] = defaults::BLOCKED;

    /// The safe defaults blocked for writing only (inside allowed roots
    /// too, whether or not they exist yet), each with what it prevents:
    /// `.git/config`, `.git/hooks/**`, `.gitmodules`, `.bashrc`, `.profile`,
    /// `.zshrc`, `.envrc`, `.npmrc`, `.pypirc`, `.mcp.json`, `.vscode/**`,
    /// `.idea/**`, `.ripgreprc`, `.cargo/config`, `.cargo/config.toml`,
    /// `rust-toolchain`, `rust-toolchain.toml`, `.github/workflows/**`,
    /// `.gitlab-ci.yml`, `.pre-commit-config.yaml`, `.husky/**`,
    /// `.devcontainer/**`, `.claude/**`, `.codex/**`, `.cursor/**`,
    /// `.gemini/**`, `.git/info/**`, `.gitconfig`, `.yarnrc.yml`,
    /// `.yarnrc`, `.pnpmfile.cjs`, `.zshenv`, `.zprofile`, `.zlogin`,
    /// `.bash_profile`, `.bash_login`, `.bash_logout`, `.circleci/**`,
    /// `.travis.yml`, `azure-pipelines.yml`, `bitbucket-pipelines.yml`,
    /// `.buildkite/**`, `.github/actions/**`, `.config/fish/**`,
    /// `.config/autostart/**`, `.config/systemd/**` (at any depth).
    ///
    /// For writes, these and the blocked entries match in every case and
    /// every Windows alias on every host (`.GIT/hooks/x`, `.Env`,
    /// `.git./config`, `.git::$DATA/config`), whatever
    /// [`CaseInsensitive`] and [`WindowsAliases`] say: on a
    /// case-insensitive mount they are the same file.
    pub const DEFAULT_WRITE_PROTECTED: &'static [(&'static str, &'static str)] =
        defaults::WRITE_PROTECTED;

    /// Lookups a check may spend following links, beyond the spelled cost.
    pub const LINK_ALLOWANCE: u64 = 128;

    /// At most this many links are followed in one reading.
    pub const MAX_LINKS: u32 = 40;

    /// A builder that starts with the safe defaults.
    pub fn builder() -> PathPolicyBuilder {
        PathPolicyBuilder {
            roots: Vec::new(),
            blocked: Vec::new(),
            write_protected: Vec::new(),
            protected_files: Vec::new(),
            defaults: true,
            windows_aliases: WindowsAliases::default(),
            case_insensitive: CaseInsensitive::default(),
        }
    }

    /// Judge `spelling` (relative to `base`, or absolute) for `access` on
    /// the host's file system: lexical, POSIX and Windows readings, all must
    /// be allowed.
    ///
    /// `base` must be absolute and a real location (no links in it), such
    /// as [`Checked::location`] of the working directory.
    ///
    /// # Errors
    ///
    /// A refusal naming the reading that escaped and the rule, or
    /// [`PathError::Io`] when a lookup fails.
    pub fn check(&self, base: &Path, spelling: &str, access: Access) -> Result<Checked, PathError> {
        self.check_on(&RealFs, base, spelling, access)
    }

    /// [`PathPolicy::check`] on any file-system view.
    ///
    /// # Errors
    ///
    /// As [`PathPolicy::check`].
    pub fn check_on(
        &self,
        fs: &dyn FileSystem,
        base: &Path,
        spelling: &str,
        access: Access,
    ) -> Result<Checked, PathError> {
        self.judge(fs, base, spelling, access, None, Follow::Last)
    }

    /// [`PathPolicy::check_on`], paying lookups from a shared budget.
    ///
    /// # Errors
    ///
    /// As [`PathPolicy::check`], and [`PathError::TooCostly`] when the
    /// budget runs out.
    pub fn check_within(
        &self,
        fs: &dyn FileSystem,
        base: &Path,
        spelling: &str,
        access: Access,
        budget: &mut Budget,
    ) -> Result<Checked, PathError> {
        self.judge(fs, base, spelling, access, Some(budget), Follow::Last)
    }

    /// The check, following a final link or not.
    pub(crate) fn judge(
        &self,
        fs: &dyn FileSystem,
        base: &Path,
        spelling: &str,
        access: Access,
        mut budget: Option<&mut Budget>,
        follow: Follow,
    ) -> Result<Checked, PathError> {
        let base = Location::from_absolute(base).ok_or_else(|| PathError::RelativeBase {
            base: base.to_path_buf(),
        })?;
        let (base, plain_link) =
            match self.plain(fs, base, spelling, access, budget.as_deref_mut())? {
                Plain::Decided(checked) => return Ok(checked),
                Plain::Link(link) => {
                    let mut base = link.clone();
                    base.pop();
                    (base, Some(link))
                }
                Plain::No(base) => (base, None),
            };
        let readings = self.spell(spelling)?;
        let mut own_budget;
        let budget = match budget {
            Some(budget) => budget,
            None => {
                own_budget = Budget::new(self.cost_of(spelling, &readings) + Self::LINK_ALLOWANCE);
                // The fast path's lookup counts against the same bound.
                if plain_link.is_some() {
                    own_budget.take();
                }
                &mut own_budget
            }
        };
        let rules = &self.inner.rules;
        let lexical_location = lexical(&base, &readings.posix);
        let lexical_root = rules.judge(spelling, Reading::Lexical, &lexical_location, access)?;
        if let Some(windows) = &readings.windows {
            let windows_lexical = lexical(&base, windows);
            if windows_lexical != lexical_location {
                rules.judge(spelling, Reading::Lexical, &windows_lexical, access)?;
            }
        }
        let aliases = self.inner.rules.aliases();
        let mut resolver = Resolver::new(
            rules,
            fs,
            budget,
            spelling,
            aliases,
            readings.windows.is_some() || aliases || plain_link.is_some(),
        );
        if let Some(link) = plain_link {
            resolver.already_seen(link, EntryKind::Symlink);
        }
        let posix = resolver.posix(&base, &readings.posix, follow)?;
        // A location already judged is not judged again.
        let root = if posix.location == lexical_location {
            lexical_root
        } else {
            rules.judge(spelling, Reading::Posix, &posix.location, access)?
        };
        // Where Windows rules apply, a link's target reads differently
        // (backslashes, aliases), so the Windows reading runs whenever a
        // link was met, even for a spelling that reads the same.
        let windows_spelled = match (&readings.windows, aliases && posix.links > 0) {
            (Some(windows), _) => Some(windows),
            (None, true) => Some(&readings.posix),
            (None, false) => None,
        };
        let windows = match windows_spelled {
            Some(windows) => {
                let outcome = resolver.windows(&base, windows, follow)?;
                if outcome.location != posix.location && outcome.location != lexical_location {
                    rules.judge(spelling, Reading::Windows, &outcome.location, access)?;
                }
                outcome.location
            }
            None => posix.location.clone(),
        };
        if access == Access::Write
            && let Some(depth) = posix.missing_from
        {
            for name in posix.location.names().skip(depth.saturating_sub(1)) {
                crate::spelling::check_portable_bytes(name)?;
            }
        }
        let (root, root_access) = rules
            .roots
            .get(root)
            .map(|r| (r.canonical.clone(), r.access))
            .unwrap_or_else(|| (Arc::from(Path::new("/")), RootAccess::ReadOnly));
        let lookups = resolver.lookups();
        let lexical =
            (lexical_location != posix.location).then(|| lexical_location.into_path_buf());
        let windows = (windows != posix.location).then(|| windows.into_path_buf());
        Ok(Checked {
            lexical,
            posix: posix.location.into_path_buf(),
            windows,
            root,
            root_access,
            kind: posix.kind,
            lookups,
        })
    }

    /// Compute the lexical, POSIX and Windows locations of `spelling`
    /// without judging them against roots or blocked entries.
    ///
    /// # Errors
    ///
    /// Spellings that cannot be judged, link loops, more than 40 links, a
    /// spent budget, a link that lies inside a blocked entry (such as
    /// `/proc/self/root`), and I/O; never a root refusal.
    pub fn locate(
        &self,
        fs: &dyn FileSystem,
        base: &Path,
        spelling: &str,
    ) -> Result<Located, PathError> {
        let base = Location::from_absolute(base).ok_or_else(|| PathError::RelativeBase {
            base: base.to_path_buf(),
        })?;
        let readings = self.spell(spelling)?;
        let aliases = self.inner.rules.aliases();
        let mut budget = Budget::new(self.cost_upper_bound(spelling));
        let mut resolver =
            Resolver::new(&self.inner.rules, fs, &mut budget, spelling, aliases, true);
        let posix = resolver.posix(&base, &readings.posix, Follow::Last)?;
        let windows = match &readings.windows {
            Some(windows) => resolver.windows(&base, windows, Follow::Last)?.location,
            None if aliases && posix.links > 0 => {
                resolver
                    .windows(&base, &readings.posix, Follow::Last)?
                    .location
            }
            None => posix.location.clone(),
        };
        Ok(Located {
            lexical: lexical(&base, &readings.posix).as_path().to_path_buf(),
            posix: posix.location.as_path().to_path_buf(),
            windows: windows.as_path().to_path_buf(),
            kind: posix.kind,
            lookups: resolver.lookups(),
        })
    }

    /// Judge a real location as it stands, with no lookup: inside a root,
    /// not blocked (nor, for writes, write-protected), and for writes not
    /// beneath a read-only root. For callers that already hold a real
    /// location (an entry found by walking a root's directory, where no
    /// component is a link) and need the rules only, such as the shell's
    /// masking of blocked entries and its judging of a command's changes.
    ///
    /// # Errors
    ///
    /// The refusal ([`PathError::OutsideRoots`], [`PathError::Blocked`],
    /// [`PathError::WriteProtected`], [`PathError::ReadOnly`]), or
    /// [`PathError::RelativeBase`] when `location` is not absolute.
    pub fn judge_location(&self, location: &Path, access: Access) -> Result<(), PathError> {
        let spelling = location.display().to_string();
        let located = Location::from_absolute(location).ok_or_else(|| PathError::RelativeBase {
            base: location.to_path_buf(),
        })?;
        self.inner
            .rules
            .judge(&spelling, Reading::Lexical, &located, access)
            .map(|_| ())
    }

    /// Judge a symbolic link about to be made at the absolute `location`
    /// (by a command, a patch or a tool): refused when its name is a
    /// directory on the way to a write-protected entry (`.git`, `.cargo`,
    /// `.github`, `.github/workflows`, ...), in every case. Through such a
    /// link, files written under an ordinary name elsewhere would be read
    /// at protected names: `.cargo -> cfg` makes `cfg/config.toml` cargo's
    /// config. Where the link points is judged apart.
    ///
    /// # Errors
    ///
    /// [`PathError::WriteProtected`] naming the way and the entry it leads
    /// to, or [`PathError::RelativeBase`] for a relative `location`.
    pub fn judge_link_location(&self, location: &Path) -> Result<(), PathError> {
        let located = Location::from_absolute(location).ok_or_else(|| PathError::RelativeBase {
            base: location.to_path_buf(),
        })?;
        match self.inner.rules.way_entry(&located) {
            Some(entry) => Err(PathError::WriteProtected {
                spelling: location.display().to_string(),
                reading: Reading::Lexical,
                location: location.to_path_buf(),
                entry: entry.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// The blocked entry (root or glob) that matches the absolute
    /// `location` by its path alone, wherever it lies — inside a root or
    /// not — with no lookup; `None` when nothing blocks it (or `location`
    /// is relative). For a caller that shows a directory outside the
    /// roots (the shell's view holds a tool's installation read-only) and
    /// hides what the policy blocks there.
    pub fn blocked_entry(&self, location: &Path) -> Option<&str> {
        let located = Location::from_absolute(location)?;
        self.inner.rules.blocked_entry(&located)
    }

    /// Judge a location that an operation creates as spelled (no lookups):
    /// where a moved directory's contents land.
    pub(crate) fn judge_created(&self, spelling: &str, location: &Path) -> Result<(), PathError> {
        let location =
            Location::from_absolute(location).ok_or_else(|| PathError::RelativeBase {
                base: location.to_path_buf(),
            })?;
        self.inner
            .rules
            .judge(spelling, Reading::Lexical, &location, Access::Write)
            .map(|_| ())
    }

    /// The fast path for a plain component: one lookup, and
    /// when nothing (or no link) is there, the decision on the spelling
    /// where it stands. `None` when the full check must run (not plain, or
    /// a link is there).
    fn plain(
        &self,
        fs: &dyn FileSystem,
        base: Location,
        spelling: &str,
        access: Access,
        budget: Option<&mut Budget>,
    ) -> Result<Plain, PathError> {
        let rules = &self.inner.rules;
        if !self.is_plain_component(spelling)
            || (rules.aliases() && crate::spelling::windows_reads_specially(spelling))
        {
            return Ok(Plain::No(base));
        }
        let mut location = base;
        location.push(spelling.as_bytes());
        let root = rules.judge(spelling, Reading::Lexical, &location, access)?;
        let mut own_budget;
        let budget = match budget {
            Some(budget) => budget,
            None => {
                own_budget = Budget::new(1 + Self::LINK_ALLOWANCE);
                &mut own_budget
            }
        };
        if !budget.take() {
            return Err(PathError::TooCostly {
                spelling: spelling.to_owned(),
                budget: budget.limit(),
            });
        }
        let kind = fs
            .entry(location.as_path())
            .map_err(|e| PathError::io("lstat", location.as_path(), e))?;
        if kind == Some(EntryKind::Symlink) {
            return Ok(Plain::Link(location));
        }
        if kind.is_none() && access == Access::Write {
            check_portable_name(spelling)?;
        }
        let (root, root_access) = rules
            .roots
            .get(root)
            .map(|r| (r.canonical.clone(), r.access))
            .unwrap_or_else(|| (Arc::from(Path::new("/")), RootAccess::ReadOnly));
        Ok(Plain::Decided(Checked {
            lexical: None,
            posix: location.into_path_buf(),
            windows: None,
            root,
            root_access,
            kind,
            lookups: 1,
        }))
    }

    /// Split a spelling for each reading, refusing what cannot be judged.
    fn spell<'s>(&self, spelling: &'s str) -> Result<Readings<'s>, PathError> {
        let aliases = self.inner.rules.aliases();
        let refuse = |why| PathError::Unjudgeable {
            spelling: spelling.to_owned(),
            why,
        };
        if let Some(why) = unjudgeable(spelling, aliases) {
            return Err(refuse(why));
        }
        let posix = split_posix(spelling.as_bytes());
        let windows = if aliases {
            Some(split_windows(spelling).map_err(refuse)?).filter(|w| w.has_up() || *w != posix)
        } else if posix.has_up() {
            Some(posix.clone())
        } else {
            None
        };
        Ok(Readings { posix, windows })
    }

    /// Lookups the spelled components need when no link is met: 1 for a
    /// plain component, otherwise 2 per component of each reading that
    /// needs its own resolution.
    pub fn spelled_cost(&self, spelling: &str) -> u64 {
        match self.spell(spelling) {
            Ok(readings) => self.cost_of(spelling, &readings),
            // Refused before any lookup.
            Err(_) => 0,
        }
    }

    fn cost_of(&self, spelling: &str, readings: &Readings<'_>) -> u64 {
        if readings.windows.is_none() && self.is_plain_component(spelling) {
            return 1;
        }
        let names = |s: &Spelled<'_>| 2 * s.names() as u64;
        names(&readings.posix) + readings.windows.as_ref().map_or(0, names)
    }

    /// Upper bound, in lookups, of a check of `spelling`,
    /// computed from the spelling alone: [`PathPolicy::spelled_cost`] plus
    /// [`PathPolicy::LINK_ALLOWANCE`]. A check never exceeds it: following
    /// links past it is refused as [`PathError::TooCostly`].
    pub fn cost_upper_bound(&self, spelling: &str) -> u64 {
        self.spelled_cost(spelling) + Self::LINK_ALLOWANCE
    }

    /// Whether `spelling` is one plain component.
    pub fn is_plain_component(&self, spelling: &str) -> bool {
        crate::spelling::is_plain(spelling)
    }

    /// The allowed roots (canonical) and what each permits.
    pub fn roots(&self) -> impl Iterator<Item = (&Path, RootAccess)> {
        self.inner
            .rules
            .roots
            .iter()
            .map(|r| (&*r.canonical, r.access))
    }

    /// The blocked entries (roots and globs), defaults included.
    pub fn blocked(&self) -> impl Iterator<Item = &str> {
        self.inner.blocked.iter().map(String::as_str)
    }

    /// The write-protected globs, defaults included.
    pub fn write_protected(&self) -> impl Iterator<Item = &str> {
        self.inner.write_protected.iter().map(String::as_str)
    }

    /// The files write-protected by path
    /// ([`PathPolicyBuilder::protect_file_from_writes`]), as given.
    pub fn protected_files(&self) -> impl Iterator<Item = &Path> {
        self.inner.protected_files.iter().map(PathBuf::as_path)
    }

    /// This policy with the write-protected glob `entry` left out, all
    /// else (roots, blocked entries, the other protected globs, modes)
    /// the same. For a caller that judges what such a file holds itself
    /// before writing it (the write-back judges a git `config` by its keys)
    /// and writes it through [`PathPolicy::open_beneath`] of the result.
    ///
    /// # Errors
    ///
    /// As [`PathPolicyBuilder::build`].
    pub fn without_write_protected(&self, entry: &str) -> Result<PathPolicy, PathError> {
        let roots: Vec<(PathBuf, RootAccess)> = self
            .roots()
            .map(|(root, access)| (root.to_path_buf(), access))
            .collect();
        let write_protected: Vec<String> = self
            .inner
            .write_protected
            .iter()
            .filter(|glob| glob.as_str() != entry)
            .cloned()
            .collect();
        let aliases = self.inner.windows_aliases.applies();
        let fold_roots = self.inner.case_insensitive.applies();
        let rules = Rules::compile(&Settings {
            roots: &roots,
            blocked: &self.inner.blocked,
            write_protected: &write_protected,
            protected_files: &self.inner.protected_files,
            fold_roots,
            fold_blocked: fold_roots || aliases,
            aliases,
            defaults: self.inner.defaults,
        })?;
        Ok(PathPolicy {
            inner: Arc::new(Inner {
                rules,
                blocked: self.inner.blocked.clone(),
                write_protected,
                protected_files: self.inner.protected_files.clone(),
                windows_aliases: self.inner.windows_aliases,
                case_insensitive: self.inner.case_insensitive,
                defaults: self.inner.defaults,
            }),
        })
    }

    /// Whether the safe defaults are in.
    pub fn has_defaults(&self) -> bool {
        self.inner.defaults
    }

    /// What this policy weakens compared with the safe defaults, one line
    /// each, for a host to show loudly: the defaults turned off
    /// ([`crate::danger::without_defaults`], `defaults = false`), and reads
    /// that compare names case-sensitively on every host
    /// (`case_insensitive = "never"`). Empty for a policy with the default
    /// protections.
    pub fn loosenings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.inner.defaults {
            out.push(
                "defaults = false: /proc, /sys, /dev, the host's secrets and the files that run code later are not blocked"
                    .to_owned(),
            );
        }
        if self.inner.case_insensitive == CaseInsensitive::Never {
            out.push(
                "case_insensitive = never: reads and listings compare names case-sensitively, so on a case-insensitive volume .ENV reads .env (writes still match every case)"
                    .to_owned(),
            );
        }
        out
    }

    /// The Windows-aliases setting.
    pub fn windows_aliases(&self) -> WindowsAliases {
        self.inner.windows_aliases
    }

    /// The case-folding setting.
    pub fn case_insensitive(&self) -> CaseInsensitive {
        self.inner.case_insensitive
    }

    /// Open one directory handle per root, for acting beneath them.
    ///
    /// # Errors
    ///
    /// [`PathError::Io`] when a root cannot be opened.
    pub fn open_beneath(&self) -> Result<Beneath, PathError> {
        Beneath::open(self, Arc::new(RealFs))
    }

    /// [`PathPolicy::open_beneath`], judging spellings on `view` instead
    /// of the host's file system (for tests and simulations).
    ///
    /// # Security
    ///
    /// Safety does not rest on the view telling the truth: every operation
    /// acts on the location the check computed, beneath the root's handle,
    /// refusing every link on the way, so a view that lies can only make
    /// operations fail, never reach outside the root or a blocked location.
    ///
    /// # Errors
    ///
    /// [`PathError::Io`] when a root cannot be opened.
    pub fn open_beneath_judging_on(&self, view: Arc<dyn FileSystem>) -> Result<Beneath, PathError> {
        Beneath::open(self, view)
    }
}

/// What the plain-component fast path found.
enum Plain {
    /// Not a plain component: check in full (from this base).
    No(Location),
    /// A link is there (one lookup made): resolve it in full.
    Link(Location),
    /// Decided with one lookup.
    Decided(Checked),
}

/// A spelling split for the POSIX reading, and for the Windows reading when
/// that one can land elsewhere.
struct Readings<'s> {
    posix: Spelled<'s>,
    windows: Option<Spelled<'s>>,
}
