//! The Landlock domain: built from [`KernelRules`] and applied to the calling
//! thread only.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd,
    RestrictSelf, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::enforcement::Enforcement;
use super::program::{program_dirs, remembered_program_files};
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

/// A ruleset ready to be applied, and the ABI level whose features it holds;
/// with [`KernelRules::exec_only_program`], a second one nested inside it
/// whose only handled right is execution (see `exec_only` below).
pub(super) struct Domain {
    ruleset: RulesetCreated,
    exec_only: Option<RulesetCreated>,
    level: u8,
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
        Self::of(rules.restrict_files, rules.allow_network, level)
    }

    /// What a domain restricting files (or not) and allowing the network
    /// (or not) handles at ABI `level`.
    fn of(restrict_files: bool, allow_network: bool, level: u8) -> Self {
        let abi = ABI::from(i32::from(level));
        Self {
            fs: if restrict_files {
                AccessFs::from_all(abi)
            } else {
                BitFlags::EMPTY
            },
            net: if allow_network {
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

    /// Builds (or takes from those kept) the ruleset `key` identifies.
    ///
    /// Paths that do not exist or cannot be opened get no rule: what they
    /// would have granted stays denied.
    pub(super) fn build(key: &Key) -> io::Result<Self> {
        let level = key.level;
        if let Some(built) = reuse(key) {
            return Ok(built);
        }
        let ruleset = fresh(key)?;
        let exec_only = match &key.exec_only {
            Some(files) => Some(exec_only(files, ABI::from(i32::from(level)))?),
            None => None,
        };
        let built = Self {
            ruleset,
            exec_only,
            level,
        };
        keep(key.clone(), &built);
        Ok(built)
    }

    /// Whether restricting with this domain also puts up the execute-only
    /// wall: when [`restrict_current_thread`](Self::restrict_current_thread)
    /// succeeds, the thread can then execute nothing but the program's own
    /// file and its loader.
    pub(super) fn is_exec_only(&self) -> bool {
        self.exec_only.is_some()
    }

    /// Restricts the calling thread (and every process it starts from now
    /// on) with this domain, after setting `no_new_privs` on it. Other
    /// threads are not affected. The execute-only wall, when the domain
    /// holds one, goes up after it, nested; it is fully enforced or this
    /// fails (the thread is then unusable for the command, which must not
    /// run without it).
    pub(super) fn restrict_current_thread(self) -> io::Result<Enforcement> {
        let status = self.ruleset.restrict_self().map_err(landlock_error)?;
        let enforced = match status.ruleset {
            RulesetStatus::FullyEnforced if status.no_new_privs => Enforcement::for_abi(self.level),
            RulesetStatus::NotEnforced => Enforcement::None,
            _ => Enforcement::Partial { abi: self.level },
        };
        if let Some(exec_only) = self.exec_only {
            let status = exec_only.restrict_self().map_err(landlock_error)?;
            if status.ruleset != RulesetStatus::FullyEnforced {
                return Err(landlock_error(
                    "the kernel did not enforce the execute-only domain",
                ));
            }
        }
        Ok(enforced)
    }
}

/// What identifies a built ruleset: the rules, the ABI level, and the
/// identity of everything it grants by name, as found now — every root and
/// program directory (device, inode), and the directories holding the
/// `/etc` entries (device, inode and modification time, which changes when
/// one of them is added, removed or replaced). Landlock grants inodes, so a
/// ruleset kept for an equal key grants exactly what one built now would;
/// a root replaced since (moved away, recreated), a program directory
/// swapped or an `/etc` file replaced makes a different key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    read: Vec<(PathBuf, Option<Inode>)>,
    write: Vec<(PathBuf, Option<Inode>)>,
    program: Vec<(PathBuf, Option<Inode>)>,
    /// With [`KernelRules::exec_only_program`]: the only files the command
    /// may execute (the program, its interpreter, that one's loader).
    exec_only: Option<Vec<(PathBuf, Option<Inode>)>>,
    etc: Vec<Option<(Inode, Modified)>>,
    restrict_files: bool,
    allow_network: bool,
    connect_ports: Vec<u16>,
    level: u8,
}

/// Device and inode: what a rule on a directory grants (everything beneath
/// it, whatever is added or removed there).
type Inode = (u64, u64);
/// Modification time (seconds, nanoseconds).
type Modified = (i64, i64);

fn inode(path: &Path) -> Option<Inode> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// A directory's inode and modification time, which changes when one of
/// its entries is added, removed or replaced.
fn stamp(path: &Path) -> Option<(Inode, Modified)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| ((m.dev(), m.ino()), (m.mtime(), m.mtime_nsec())))
}

/// The directories holding the [`RUNTIME_ETC`] entries.
fn etc_dirs() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let mut dirs: Vec<PathBuf> = RUNTIME_ETC
            .iter()
            .filter_map(|entry| Path::new(entry).parent().map(Path::to_path_buf))
            .collect();
        dirs.sort();
        dirs.dedup();
        dirs
    })
}

impl Key {
    fn new(rules: &KernelRules, handled: &Handled, level: u8) -> Self {
        let with_id = |paths: &[PathBuf]| paths.iter().map(|p| (p.clone(), inode(p))).collect();
        let restricts_files = !handled.fs.is_empty();
        let program = match rules.program.as_deref() {
            Some(program) if restricts_files => {
                let runtime = Runtime::get();
                let dirs: Vec<PathBuf> = program_dirs(program)
                    .into_iter()
                    .filter(|dir| !runtime.covers(dir))
                    .collect();
                with_id(&dirs)
            }
            _ => Vec::new(),
        };
        let exec_only = rules
            .exec_only_program
            .then(|| match rules.program.as_deref() {
                Some(program) => with_id(&remembered_program_files(program)),
                None => Vec::new(),
            });
        let etc = if restricts_files {
            etc_dirs().iter().map(|dir| stamp(dir)).collect()
        } else {
            Vec::new()
        };
        Self {
            read: with_id(&rules.read),
            write: with_id(&rules.write),
            program,
            exec_only,
            etc,
            restrict_files: rules.restrict_files,
            allow_network: rules.allow_network,
            connect_ports: rules.connect_ports.clone(),
            level,
        }
    }
}

/// How many built rulesets are kept (the least recently used goes).
pub(super) const REUSE_SLOTS: usize = 8;

static REUSED: Mutex<Vec<(Key, Domain)>> = Mutex::new(Vec::new());

impl Domain {
    /// Another handle on the same rulesets: the kernel lets one ruleset
    /// restrict any number of threads.
    fn try_clone(&self) -> Option<Self> {
        let exec_only = match &self.exec_only {
            Some(ruleset) => Some(ruleset.try_clone().ok()?),
            None => None,
        };
        Some(Self {
            ruleset: self.ruleset.try_clone().ok()?,
            exec_only,
            level: self.level,
        })
    }
}

/// A handle on the domain built for `key`.
fn reuse(key: &Key) -> Option<Domain> {
    let mut kept = REUSED.lock().ok()?;
    let at = kept.iter().position(|(k, _)| k == key)?;
    let entry = kept.remove(at);
    let copy = entry.1.try_clone();
    kept.push(entry);
    copy
}

fn keep(key: Key, domain: &Domain) {
    let (Ok(mut kept), Some(copy)) = (REUSED.lock(), domain.try_clone()) else {
        return;
    };
    kept.retain(|(k, _)| *k != key);
    if kept.len() >= REUSE_SLOTS {
        kept.remove(0);
    }
    kept.push((key, copy));
}

/// Builds the ruleset `key` describes from scratch.
fn fresh(key: &Key) -> io::Result<RulesetCreated> {
    let level = key.level;
    let handled = Handled::of(key.restrict_files, key.allow_network, level);
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
    // Ports still reachable by TCP connect while the rest is denied.
    if handled.net.contains(AccessNet::ConnectTcp) {
        for port in &key.connect_ports {
            let rule = NetPort::new(*port, AccessNet::ConnectTcp);
            ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
        }
    }
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
        // The key's paths, in the rules' order, with the identity each had
        // when the key was made: a path that now opens to another file is
        // refused, so a kept ruleset always grants what its key says.
        let grants = key
            .program
            .iter()
            .map(|(p, id)| (p, *id, read))
            .chain(key.read.iter().map(|(p, id)| (p, *id, read)))
            .chain(key.write.iter().map(|(p, id)| (p, *id, all)));
        for (path, expected, access) in grants {
            if let Some(rule) = beneath(path, expected, access, abi)? {
                ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
            }
        }
    }
    Ok(ruleset)
}

/// The execute-only domain: it handles execution alone, and grants it on
/// `files` (each with the identity it had when the key was made) and
/// nothing else. Nested inside the command's domain, it leaves every other
/// right as that one says; the kernel checks execution at `execve` on the
/// program and on the ELF interpreter it names (and, for a `#!` script, on
/// the interpreter and its loader), so those run, and whatever the program
/// then tries to start fails with `EACCES`. Shared libraries are mapped,
/// not executed: they load as before.
fn exec_only(files: &[(PathBuf, Option<Inode>)], abi: ABI) -> io::Result<RulesetCreated> {
    let execute = BitFlags::from(AccessFs::Execute);
    let mut ruleset = Ruleset::default()
        .handle_access(execute)
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;
    for (path, expected) in files {
        if let Some(rule) = beneath(path, *expected, execute, abi)? {
            ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
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
/// when `path` is not a directory); `None` when `path` cannot be opened and
/// did not exist when the key was made either.
///
/// # Errors
///
/// `path` opens to another file than the one the key recorded (`expected`):
/// it was replaced meanwhile, and the command is not run.
fn beneath(
    path: &Path,
    expected: Option<Inode>,
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> io::Result<Option<PathBeneath<PathFd>>> {
    let opened = PathFd::new(path).ok().and_then(|fd| {
        let stat = rustix::fs::fstat(fd.as_fd()).ok()?;
        Some((fd, stat))
    });
    let found = opened.as_ref().map(|(_, stat)| (stat.st_dev, stat.st_ino));
    if found != expected {
        return Err(io::Error::other(format!(
            "{} was replaced while the Landlock domain was being built; run the command again",
            path.display()
        )));
    }
    let Some((fd, stat)) = opened else {
        return Ok(None);
    };
    // The kind, from the opened file itself, narrows the rights to what the
    // kernel accepts on a file.
    let is_dir =
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory;
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    Ok((!access.is_empty()).then(|| PathBeneath::new(fd, access)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_for(root: &Path) -> Key {
        let rules = KernelRules::from_roots(Some([(root.to_path_buf(), true)]));
        let level = kernel_abi();
        assert!(level > 0, "these tests need Landlock");
        Domain::key(&rules, level).expect("something to restrict")
    }

    #[test]
    fn work_inside_a_root_keeps_its_key_but_replacing_the_root_does_not() {
        let top = tempfile::tempdir().expect("tempdir");
        let root = top.path().join("root");
        std::fs::create_dir(&root).expect("mkdir");
        let before = key_for(&root);
        // Commands create and remove files in their roots all the time: the
        // domain (a rule on the root's inode) is the same.
        std::fs::write(root.join("new.txt"), "x").expect("write");
        std::fs::remove_file(root.join("new.txt")).expect("remove");
        assert_eq!(key_for(&root), before);
        // A different directory under the same name is another domain.
        std::fs::rename(&root, top.path().join("old")).expect("rename");
        std::fs::create_dir(&root).expect("mkdir");
        assert_ne!(key_for(&root), before);
    }

    #[test]
    fn a_root_replaced_between_key_and_build_is_refused_not_granted() {
        let top = tempfile::tempdir().expect("tempdir");
        let root = top.path().join("root");
        std::fs::create_dir(&root).expect("mkdir");
        let key = key_for(&root);
        // The swap lands after the key recorded the old directory.
        std::fs::rename(&root, top.path().join("old")).expect("rename");
        std::fs::create_dir(&root).expect("mkdir");
        let Err(error) = Domain::build(&key) else {
            panic!("a ruleset was built for a root that is not the key's");
        };
        assert!(error.to_string().contains("was replaced"), "{error}");
        // A key made now builds.
        assert!(Domain::build(&key_for(&root)).is_ok());
    }

    #[test]
    fn replacing_an_entry_changes_its_directory_stamp() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("resolv.conf"), "a").expect("write");
        let before = stamp(dir.path());
        assert!(before.is_some());
        // The way tools replace `/etc` files: write aside, rename over.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(dir.path().join("resolv.conf.new"), "b").expect("write");
        std::fs::rename(
            dir.path().join("resolv.conf.new"),
            dir.path().join("resolv.conf"),
        )
        .expect("rename");
        assert_ne!(stamp(dir.path()), before);
    }

    #[test]
    fn the_etc_directories_are_those_of_the_runtime_list() {
        let dirs = etc_dirs();
        assert!(dirs.contains(&PathBuf::from("/etc")));
        for entry in RUNTIME_ETC {
            let parent = Path::new(entry).parent().expect("a parent");
            assert!(dirs.iter().any(|d| d == parent), "{entry}");
        }
    }
}
