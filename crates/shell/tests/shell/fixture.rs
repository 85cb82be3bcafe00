//! A real temporary tree with links in and out, and the policies the attack
//! tables name.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;

use agentcaps_paths::{PathPolicy, WindowsAliases};
use agentcaps_shell::{
    Arguments, ProgramRules, READ_ONLY_COMMANDS, ShellPolicy, ShellPolicyBuilder, WindowsRules,
    danger,
};

/// Commands allowed in the test fixtures beyond `read_only`.
pub(crate) const EXTRA: &[&str] = &[
    "sort", "grep", "find", "git", "rg", "sed", "awk", "tar", "env", "xargs", "sh", "bash", "sudo",
    "nice", "timeout", "gawk", "mawk", "nawk", "fd", "ag", "tree", "cp", "mv", "ln", "install",
    "rsync", "dash", "zsh", "ksh", "busybox", "flock", "taskset", "watch", "unshare", "setsid",
    "chrt", "ionice", "nsenter", "chroot", "strace", "gdb", "parallel", "entr", "script", "su",
    "doas", "pkexec", "runuser", "make", "du", "mkdir", "touch", "rm", "rmdir", "tee", "gmake",
    "curl",
];

pub(crate) struct Tree {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    bin: PathBuf,
}

impl Tree {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical tempdir");
        let root = base.join("root");
        let outside = base.join("outside");
        // `a:b`, `sub/a:b` and `sub/c:d`: local names holding a `:` (rsync reads
        // `a:b` as a remote host unless written `./a:b`).
        for d in [root.join("sub/c:d"), outside.join("dir")] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        for f in [
            root.join("notes.txt"),
            root.join("a:b"),
            root.join("sub/a:b"),
            root.join("list"),
            root.join("sub/a.txt"),
            root.join(".env"),
            root.join("key.pem"),
            outside.join("secret.txt"),
            outside.join("notes.txt"),
            outside.join("dir/x"),
        ] {
            std::fs::write(f, "1 one\n2 two\n").expect("write");
        }
        symlink("/etc/passwd", root.join("README")).expect("link");
        symlink(outside.join("secret.txt"), root.join("lout")).expect("link");
        symlink("/etc/passwd", root.join("o")).expect("link");
        symlink("../outside/dir", root.join("linkout")).expect("link");
        symlink("sub", root.join("inlink")).expect("link");
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        // Validation looks each program up in PATH: programs not installed
        // here are found as empty stand-ins, after the real ones.
        let bin = base.join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        for name in EXTRA.iter().chain(READ_ONLY_COMMANDS) {
            let stub = bin.join(name);
            std::fs::write(&stub, "#!/bin/sh\nexit 0\n").expect("write");
            std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        Tree {
            _dir: dir,
            root,
            bin,
        }
    }

    pub(crate) fn paths(&self) -> PathPolicy {
        PathPolicy::builder()
            .allow(&self.root)
            .build()
            .expect("path policy")
    }

    fn with_extra(&self, builder: ShellPolicyBuilder) -> ShellPolicyBuilder {
        let path = match std::env::var_os("PATH") {
            Some(real) => {
                let mut dirs: Vec<PathBuf> = std::env::split_paths(&real).collect();
                dirs.push(self.bin.clone());
                std::env::join_paths(dirs).expect("PATH")
            }
            None => self.bin.clone().into_os_string(),
        };
        let builder = builder.env("PATH", path.to_string_lossy());
        EXTRA.iter().fold(builder, |b, c| b.allow_command(*c))
    }

    /// The policy a table row names.
    pub(crate) fn policy(&self, name: &str) -> ShellPolicy {
        self.policy_builder(name).build().expect("shell policy")
    }

    /// The builder of [`Tree::policy`], for a test to add to.
    pub(crate) fn policy_builder(&self, name: &str) -> ShellPolicyBuilder {
        let files = || {
            self.with_extra(ShellPolicy::read_only(&self.root))
                .path_policy(self.paths())
        };
        match name {
            "files" => files(),
            "none" => self.with_extra(ShellPolicy::read_only(&self.root)),
            "windows" => files().windows_rules(WindowsRules::Always),
            "unwrap" => files().unwrap_launchers(true),
            "agent-env" => files().allow_agent_environment(true),
            "stdin" => files().allow_stdin(true),
            "host-program" => files().allow_program("/usr/bin/file"),
            "windows-paths" => self
                .with_extra(ShellPolicy::read_only(&self.root))
                .path_policy(
                    PathPolicy::builder()
                        .allow(&self.root)
                        .windows_aliases(WindowsAliases::Always)
                        .build()
                        .expect("path policy"),
                ),
            "host-rules" => files()
                .rules(
                    ProgramRules::new("cat").refuse("-v", "shows control characters (test rule)"),
                )
                .rules(
                    ProgramRules::new("FILE.exe")
                        .refuse("--brief", "is refused by this host (test rule)"),
                )
                .rules(text_arguments("head")),
            "development" => danger::development(&self.root).path_policy(self.paths()),
            other => panic!("unknown fixture policy {other:?}"),
        }
    }
}

/// A table that marks `name`'s arguments as text.
fn text_arguments(name: &str) -> ProgramRules {
    let mut table = ProgramRules::new(name);
    table.arguments = Arguments::Text;
    table
}
