//! The Landlock domain: built from [`KernelRules`] and applied to the calling
//! thread only.

use std::io;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::OnceLock;

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

/// A ruleset ready to be applied, and the ABI level whose features it holds.
pub(super) struct Domain {
    ruleset: RulesetCreated,
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
    /// Builds the ruleset for `rules` with the features of ABI `level`
    /// (which the kernel offers). `None` when there is nothing to restrict.
    ///
    /// Paths that do not exist or cannot be opened get no rule: what they
    /// would have granted stays denied.
    pub(super) fn build(rules: &KernelRules, level: u8) -> io::Result<Option<Self>> {
        let handled = Handled::new(rules, level);
        if level == 0 || handled.is_empty() {
            return Ok(None);
        }
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
            let program = rules.program.as_deref().map(program_dirs);
            let grants = RUNTIME_DIRS
                .iter()
                .chain(RUNTIME_ETC)
                .chain(RUNTIME_DEVICES_READ)
                .map(|p| (Path::new(*p), read))
                .chain(
                    RUNTIME_DEVICES_RW
                        .iter()
                        .map(|p| (Path::new(*p), device_rw)),
                )
                .chain(program.iter().flatten().map(|p| (p.as_path(), read)))
                .chain(rules.read.iter().map(|p| (p.as_path(), read)))
                .chain(rules.write.iter().map(|p| (p.as_path(), all)));
            for (path, access) in grants {
                if let Some(rule) = beneath(path, access, abi) {
                    ruleset = ruleset.add_rule(rule).map_err(landlock_error)?;
                }
            }
        }
        Ok(Some(Self { ruleset, level }))
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

/// A rule granting `access` beneath `path` (masked to what a file can carry
/// when `path` is not a directory); `None` when `path` cannot be opened.
fn beneath(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
    let fd = PathFd::new(path).ok()?;
    // fstat on the opened (O_PATH) descriptor: the kind of what the rule
    // will hold, not of whatever the path names a moment later.
    let is_dir = std::fs::File::from(fd.as_fd().try_clone_to_owned().ok()?)
        .metadata()
        .ok()?
        .is_dir();
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    (!access.is_empty()).then(|| PathBeneath::new(fd, access))
}
