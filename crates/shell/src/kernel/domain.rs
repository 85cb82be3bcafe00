//! The Landlock domain: built from [`KernelRules`] and applied to the calling
//! thread only.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, PathBeneath, PathFd, RestrictSelf,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::enforcement::Enforcement;
use super::program::program_dirs;
use super::rules::{
    KernelRules, RUNTIME_DEVICES_READ, RUNTIME_DEVICES_RW, RUNTIME_DIRS, RUNTIME_ETC,
};

/// The Landlock ABI the running kernel offers (0: none), probed once without
/// restricting anything.
pub(super) fn kernel_abi() -> u8 {
    static KERNEL_ABI: OnceLock<u8> = OnceLock::new();
    *KERNEL_ABI.get_or_init(
        || match RestrictSelf::default().no_new_privs(false).apply() {
            Ok(status) => match status.landlock {
                LandlockStatus::Available { effective_abi, .. } => {
                    u8::try_from(effective_abi as i32).unwrap_or(0)
                }
                _ => 0,
            },
            Err(_) => 0,
        },
    )
}

/// A ruleset ready to be applied, the ABI level whose features it holds,
/// and when it was built (it holds `/etc` files opened then).
pub(super) struct Domain {
    ruleset: RulesetCreated,
    level: u8,
    built: Instant,
}

/// What the rules handle at ABI `level` (the accesses the domain denies
/// unless a rule grants them).
struct Handled {
    fs: BitFlags<AccessFs>,
    net: BitFlags<AccessNet>,
    scope: BitFlags<Scope>,
}

impl Handled {
    fn new(rules: &KernelRules, level: u8) -> Self {
        let abi = ABI::from(i32::from(level));
        Self {
            fs: if rules.restrict_files {
                AccessFs::from_all(abi)
            } else {
                BitFlags::EMPTY
            },
            net: if rules.allow_network {
                BitFlags::EMPTY
            } else {
                AccessNet::from_all(abi)
            },
            scope: Scope::from_all(abi),
        }
    }

    fn is_empty(&self) -> bool {
        self.fs.is_empty() && self.net.is_empty() && self.scope.is_empty()
    }
}

/// Whether anything at all is restricted for `rules` at ABI `level`.
pub(super) fn restricts_anything(rules: &KernelRules, level: u8) -> bool {
    level > 0 && !Handled::new(rules, level).is_empty()
}

fn landlock_error(error: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("could not build the Landlock domain: {error}"))
}

impl Domain {
    /// What identifies the domain `rules` need at ABI `level` (which the
    /// kernel offers) as of now; `None` when there is nothing to restrict.
    pub(super) fn key(rules: &KernelRules, level: u8) -> Option<Key> {
        let handled = Handled::new(rules, level);
        if level == 0 || handled.is_empty() {
            return None;
        }
        Some(Key::new(rules, &handled, level))
    }

    /// Builds (or takes from the last second's) the ruleset `key`, made by
    /// [`Domain::key`] from the same `rules`, identifies.
    ///
    /// Paths that do not exist or cannot be opened get no rule: what they
    /// would have granted stays denied.
    pub(super) fn build(rules: &KernelRules, key: &Key) -> io::Result<Self> {
        let level = key.level;
        if let Some((ruleset, built)) = reuse(key) {
            return Ok(Self {
                ruleset,
                level,
                built,
            });
        }
        let handled = Handled::new(rules, level);
        let built = Instant::now();
        let ruleset = fresh(rules, &handled, key)?;
        keep(key.clone(), built, &ruleset);
        Ok(Self {
            ruleset,
            level,
            built,
        })
    }

    /// When this ruleset was built: it is used until [`REUSE_FOR`] after.
    pub(super) fn built(&self) -> Instant {
        self.built
    }

    /// Restricts the calling thread (and every process it starts from now
    /// on) with this domain, after setting `no_new_privs` on it. Other
    /// threads are not affected.
    pub(super) fn restrict_current_thread(self) -> io::Result<Enforcement> {
        let status = self.ruleset.restrict_self().map_err(landlock_error)?;
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced if status.no_new_privs => Enforcement::for_abi(self.level),
            RulesetStatus::NotEnforced => Enforcement::None,
            _ => Enforcement::Partial { abi: self.level },
        })
    }
}

/// What identifies a built ruleset: the rules, the ABI level, the program
/// directories it grants and the identity (device, inode) of every root
/// when it was built — a root replaced since (moved away, recreated) is a
/// different key, so a reused ruleset never grants a directory the rules no
/// longer name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    read: Vec<(PathBuf, Option<(u64, u64)>)>,
    write: Vec<(PathBuf, Option<(u64, u64)>)>,
    program: Vec<PathBuf>,
    restrict_files: bool,
    allow_network: bool,
    level: u8,
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Key {
    fn new(rules: &KernelRules, handled: &Handled, level: u8) -> Self {
        let with_id = |paths: &[PathBuf]| paths.iter().map(|p| (p.clone(), file_id(p))).collect();
        let program = match rules.program.as_deref() {
            Some(program) if !handled.fs.is_empty() => {
                let runtime = Runtime::get();
                program_dirs(program)
                    .into_iter()
                    .filter(|dir| !runtime.covers(dir))
                    .collect()
            }
            _ => Vec::new(),
        };
        Self {
            read: with_id(&rules.read),
            write: with_id(&rules.write),
            program,
            restrict_files: rules.restrict_files,
            allow_network: rules.allow_network,
            level,
        }
    }
}

/// How long a built ruleset is reused for the same [`Key`]. Short, because
/// the `/etc` files it holds can be replaced (a reused ruleset would keep
/// granting the old file and not the new one, which only breaks the
/// program, never widens what it may reach).
pub(super) const REUSE_FOR: Duration = Duration::from_secs(1);
/// How many built rulesets are kept.
pub(super) const REUSE_SLOTS: usize = 8;

static REUSED: Mutex<Vec<(Key, Instant, RulesetCreated)>> = Mutex::new(Vec::new());

/// A handle on a ruleset recently built for `key`, and when it was built:
/// the kernel lets one ruleset restrict any number of threads.
fn reuse(key: &Key) -> Option<(RulesetCreated, Instant)> {
    let kept = REUSED.lock().ok()?;
    let (_, built, ruleset) = kept
        .iter()
        .find(|(k, built, _)| k == key && built.elapsed() < REUSE_FOR)?;
    Some((ruleset.try_clone().ok()?, *built))
}

fn keep(key: Key, built: Instant, ruleset: &RulesetCreated) {
    let (Ok(mut kept), Ok(copy)) = (REUSED.lock(), ruleset.try_clone()) else {
        return;
    };
    kept.retain(|(k, built, _)| *k != key && built.elapsed() < REUSE_FOR);
    if kept.len() >= REUSE_SLOTS {
        kept.remove(0);
    }
    kept.push((key, built, copy));
}

/// Builds the ruleset for `rules` from scratch.
fn fresh(rules: &KernelRules, handled: &Handled, key: &Key) -> io::Result<RulesetCreated> {
    let level = key.level;
    let mut ruleset = Ruleset::default();
    if !handled.fs.is_empty() {
        ruleset = ruleset.handle_access(handled.fs).map_err(landlock_error)?;
    }
    if !handled.net.is_empty() {
        ruleset = ruleset.handle_access(handled.net).map_err(landlock_error)?;
    }
    if !handled.scope.is_empty() {
        ruleset = ruleset.scope(handled.scope).map_err(landlock_error)?;
    }
    let mut ruleset = ruleset.create().map_err(landlock_error)?;
    if !handled.fs.is_empty() {
        let abi = ABI::from(i32::from(level));
        let read = AccessFs::from_read(abi);
        let all = handled.fs;
        let device_rw = all & (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate);
        let runtime = Runtime::get();
        let file = AccessFs::from_file(abi);
        let held = runtime
            .dirs
            .iter()
            .map(|(_, fd)| (fd, read))
            .chain(runtime.devices_read.iter().map(|fd| (fd, read & file)))
            .chain(runtime.devices_rw.iter().map(|fd| (fd, device_rw & file)));
        for (fd, access) in held {
            let rule = PathBeneath::new(fd.as_fd(), access);
            ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
        }
        // `/etc` entries: reading files only, a right valid on a file and
        // on a directory alike, so no `stat` is needed to choose.
        let etc = all & AccessFs::ReadFile;
        for path in RUNTIME_ETC {
            if let Ok(fd) = PathFd::new(path) {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(fd, etc))
                    .map_err(landlock_error)?;
            }
        }
        let grants = key
            .program
            .iter()
            .map(|p| (p.as_path(), read))
            .chain(rules.read.iter().map(|p| (p.as_path(), read)))
            .chain(rules.write.iter().map(|p| (p.as_path(), all)));
        for (path, access) in grants {
            if let Some(rule) = beneath(path, access, abi) {
                ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
            }
        }
    }
    Ok(ruleset)
}

/// The runtime directories and devices, opened once per process: they do
/// not move, and opening them for every command was most of the cost of
/// building a domain. (The `/etc` files are opened afresh for every
/// command, because tools replace them — `resolv.conf`, `passwd` — and a
/// held descriptor would keep granting the old file.)
struct Runtime {
    /// Canonical path and handle of each [`RUNTIME_DIRS`] entry that exists
    /// and is not beneath another (on merged-`/usr` systems `/bin` is
    /// `/usr/bin`).
    dirs: Vec<(PathBuf, PathFd)>,
    devices_read: Vec<PathFd>,
    devices_rw: Vec<PathFd>,
}

impl Runtime {
    fn get() -> &'static Self {
        static RUNTIME: OnceLock<Runtime> = OnceLock::new();
        RUNTIME.get_or_init(|| {
            let mut dirs: Vec<(PathBuf, PathFd)> = Vec::new();
            for dir in RUNTIME_DIRS {
                let Ok(real) = std::fs::canonicalize(dir) else {
                    continue;
                };
                if !real.is_dir() || dirs.iter().any(|(kept, _)| real.starts_with(kept)) {
                    continue;
                }
                if let Ok(fd) = PathFd::new(&real) {
                    dirs.retain(|(kept, _)| !kept.starts_with(&real));
                    dirs.push((real, fd));
                }
            }
            let open = |paths: &[&str]| paths.iter().filter_map(|p| PathFd::new(p).ok()).collect();
            Self {
                dirs,
                devices_read: open(RUNTIME_DEVICES_READ),
                devices_rw: open(RUNTIME_DEVICES_RW),
            }
        })
    }

    /// Whether `dir` (canonical) is already beneath a runtime directory.
    fn covers(&self, dir: &Path) -> bool {
        self.dirs.iter().any(|(kept, _)| dir.starts_with(kept))
    }
}

/// A rule granting `access` beneath `path` (masked to what a file can carry
/// when `path` is not a directory); `None` when `path` cannot be opened.
fn beneath(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
    // The kind only narrows the rights to what the kernel accepts on a file;
    // if the path changes kind before the open, the kernel refuses the rule
    // (EINVAL) or the rule grants no more than `access`.
    let is_dir = std::fs::metadata(path).ok()?.is_dir();
    let fd = PathFd::new(path).ok()?;
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    (!access.is_empty()).then(|| PathBeneath::new(fd, access))
}
