//! What the kernel is asked to enforce for one command.

use std::path::{Path, PathBuf};

/// Directories that running an ordinary program needs to read and execute
/// beneath, whatever the policy: programs, shared libraries and the dynamic
/// loader, locale data, time zones, terminfo. On merged-`/usr` systems the
/// top-level ones are links into `/usr`.
///
/// Granting `/usr` whole is deliberate: `make` recipes and build tools run
/// other programs (`/bin/sh`, compilers) from there. Nothing under `/usr`
/// is writable by the domain.
pub const RUNTIME_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Files (and two certificate directories) of `/etc` that the dynamic
/// loader, the C library and common tools read by themselves: the loader
/// cache and preload list, users and groups (`whoami`, `ls -l`), the
/// name-service and resolver configuration, time zone, locale aliases,
/// `file`'s magic, git's system config and the CA certificates. Read only;
/// nothing else in `/etc` is readable by the domain. Entries that do not
/// exist are skipped.
pub const RUNTIME_ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/locale.alias",
    "/etc/magic",
    "/etc/gitconfig",
    "/etc/ssl/certs",
    "/etc/pki/tls/certs",
];

/// Devices any program may read: `/dev/zero`, `/dev/random`,
/// `/dev/urandom`. (`/dev/null` is [`RUNTIME_DEVICES_RW`].)
pub const RUNTIME_DEVICES_READ: &[&str] = &["/dev/zero", "/dev/random", "/dev/urandom"];

/// Devices any program may read and write (and truncate, for `> /dev/null`):
/// `/dev/null` and `/dev/full`.
pub const RUNTIME_DEVICES_RW: &[&str] = &["/dev/null", "/dev/full"];

/// What the kernel is asked to enforce for one command.
///
/// Build it with [`KernelRules::new`] (or [`Default`], the same) and the
/// `with_*` methods, or set the public fields. The default is the strictest
/// setting: no roots, no network, only [the runtime list](RUNTIME_DIRS).
///
/// # Security
///
/// Landlock only *adds* permissions beneath a directory: everything beneath
/// a root in [`read`](Self::read) or [`write`](Self::write) is granted,
/// including entries the path policy blocks inside it (`.git/hooks`,
/// `**/.env`). Those stay guarded by the argument checks alone; see the
/// module docs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct KernelRules {
    /// Directories (and files) the command may read and execute beneath.
    pub read: Vec<PathBuf>,
    /// Directories the command may read, execute, write, create, remove and
    /// rename beneath.
    pub write: Vec<PathBuf>,
    /// The resolved program about to run. Its directory (as spelled and
    /// after following links), its ELF interpreter's directory and, for a
    /// `#!` script, its interpreter's directory become readable and
    /// executable.
    pub program: Option<PathBuf>,
    /// Let the command execute nothing but [`program`](Self::program)'s own
    /// file and its loader (the ELF interpreter it names; for a `#!` script,
    /// the interpreter and that one's loader): for a program that runs
    /// nothing by itself (`sed`, `awk`, `grep`), so that a command its
    /// arguments hide (a `sed` `e`, an `awk` `system()`) fails with
    /// `EACCES`. A second Landlock domain, nested inside the first, handles
    /// execution alone; it needs Landlock at all (ABI 1) and is applied
    /// only where the first domain is. Off by default.
    pub exec_only_program: bool,
    /// Whether file access is restricted at all. `false` when the command
    /// has no path policy (then only network and scopes are enforced).
    pub restrict_files: bool,
    /// Whether TCP `bind`/`connect` is allowed.
    pub allow_network: bool,
    /// TCP ports the command may still `connect` to when
    /// [`allow_network`](Self::allow_network) is off (Landlock ABI 4 and
    /// later): the port of a judging proxy on loopback.
    ///
    /// # Security
    ///
    /// Landlock judges the port alone: a connection to *any* address on
    /// that port is allowed, and UDP is not restricted at all.
    pub connect_ports: Vec<u16>,
    /// Refuse to run when the kernel cannot enforce all of the above.
    pub require: bool,
    /// Use at most this Landlock ABI, even if the kernel offers more.
    /// `Some(0)` turns kernel enforcement off (the run reports `none`), which
    /// is also how tests simulate a kernel without Landlock.
    ///
    /// # Security
    ///
    /// Lowering it weakens enforcement; the achieved level is still
    /// reported honestly, and [`require`](Self::require) still refuses.
    pub max_abi: Option<u8>,
}

impl Default for KernelRules {
    fn default() -> Self {
        Self::new()
    }
}

impl KernelRules {
    /// The strictest rules: files restricted to the runtime list, no
    /// network, best effort.
    #[must_use]
    pub fn new() -> Self {
        Self {
            read: Vec::new(),
            write: Vec::new(),
            program: None,
            exec_only_program: false,
            restrict_files: true,
            allow_network: false,
            connect_ports: Vec::new(),
            require: false,
            max_abi: None,
        }
    }

    /// The rules for one command under `policy` (the shell's path policy, if
    /// it holds file arguments to one): its roots become the read and
    /// writable roots, `program` (the resolved program) gets the
    /// directories it needs, TCP is allowed when `allow_network`, and
    /// `require` refuses to run without full enforcement. `None` leaves file
    /// access unrestricted by the kernel (network and scopes still apply).
    ///
    /// # Security
    ///
    /// The policy's blocked and write-protected entries *inside* its roots
    /// are not carried over (Landlock cannot subtract from a root); see the
    /// module docs.
    #[must_use]
    pub fn from_policy(
        policy: Option<&agentcaps_paths::PathPolicy>,
        program: &Path,
        allow_network: bool,
        require: bool,
    ) -> Self {
        let roots = policy.map(|policy| {
            policy
                .roots()
                .map(|(root, access)| {
                    (
                        root.to_path_buf(),
                        access.permits(agentcaps_paths::Access::Write),
                    )
                })
                .collect::<Vec<_>>()
        });
        let mut rules = Self::from_roots(roots).with_program(program);
        rules.allow_network = allow_network;
        rules.require = require;
        rules
    }

    /// Rules for a command whose file arguments are held to roots: `roots`
    /// gives each root and whether it is writable. `None` (no path policy)
    /// leaves file access unrestricted by the kernel.
    #[must_use]
    pub fn from_roots<I, P>(roots: Option<I>) -> Self
    where
        I: IntoIterator<Item = (P, bool)>,
        P: Into<PathBuf>,
    {
        let mut rules = Self::new();
        match roots {
            None => rules.restrict_files = false,
            Some(roots) => {
                for (root, writable) in roots {
                    if writable {
                        rules.write.push(root.into());
                    } else {
                        rules.read.push(root.into());
                    }
                }
            }
        }
        rules
    }

    /// Adds a directory (or file) to read and execute beneath.
    #[must_use]
    pub fn with_read(mut self, root: impl Into<PathBuf>) -> Self {
        self.read.push(root.into());
        self
    }

    /// Adds a directory to read, execute, write, create, remove and rename
    /// beneath.
    #[must_use]
    pub fn with_write(mut self, root: impl Into<PathBuf>) -> Self {
        self.write.push(root.into());
        self
    }

    /// Sets the resolved program (see [`program`](Self::program)).
    #[must_use]
    pub fn with_program(mut self, program: impl AsRef<Path>) -> Self {
        self.program = Some(program.as_ref().to_path_buf());
        self
    }

    /// Lets the command execute only its program and the loader, or
    /// anything its domain grants (see
    /// [`exec_only_program`](Self::exec_only_program)).
    #[must_use]
    pub fn with_exec_only_program(mut self, on: bool) -> Self {
        self.exec_only_program = on;
        self
    }

    /// Allows or denies TCP `bind`/`connect`.
    #[must_use]
    pub fn with_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// Allows TCP `connect` to `port` while the rest of the network stays
    /// denied (see [`connect_ports`](Self::connect_ports)).
    #[must_use]
    pub fn with_connect_port(mut self, port: u16) -> Self {
        self.connect_ports.push(port);
        self
    }

    /// Refuse to run unless the kernel enforces everything.
    #[must_use]
    pub fn with_require(mut self, require: bool) -> Self {
        self.require = require;
        self
    }

    /// Caps the Landlock ABI used (see [`max_abi`](Self::max_abi)).
    #[must_use]
    pub fn with_max_abi(mut self, abi: u8) -> Self {
        self.max_abi = Some(abi);
        self
    }
}
