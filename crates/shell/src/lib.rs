//! # agentcaps-shell — run an agent's commands without a shell
//!
//! Judges a command an agent asks for (an argv array, or a string split
//! with POSIX quoting and no expansion) against a [`ShellPolicy`], then runs
//! it with no shell, a chosen environment, a timeout that kills the whole
//! process tree (its process group; on Windows its Job object), and capped
//! output.
//!
//! - **Programs**: `argv[0]` is a bare allowed name (looked up in the
//!   command's own `PATH`, never in the working directory) or an absolute
//!   path the host listed. Launchers (`env cmd`, `xargs`, `sudo`, `sh -c`)
//!   are refused, or unwrapped where the host opts in.
//! - **Options**: rules are data, one table per program
//!   ([`ProgramRules`]); a refused short option is found anywhere in a
//!   cluster, a long one on any abbreviation, after `--` too. Programs that
//!   can run code, write, or read files they do not name (`awk`, `sed`,
//!   `find`, `git`, `tar`, `cp`, …) have an allow-list [`Grammar`]: an
//!   option it does not know is refused (`unknown-option`), and it finds
//!   the `awk`/`sed` script and a copy's target wherever the options put
//!   them.
//! - **Paths**: with a path policy, the working directory and every
//!   path-like part of every argument (whole argument, `--opt=value`, every
//!   tail of a short cluster) are judged by `agentcaps-paths` — lexical,
//!   POSIX and Windows readings — under a budget of 20 000 lookups computed
//!   before the first one.
//! - **Environment**: nothing inherited but the names listed. Every command
//!   also gets git's `safe.bareRepository=explicit`, appended through
//!   `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` after any
//!   entries already there, so git never takes a directory the agent wrote
//!   (`HEAD`, `config`, `objects/`) for a bare repository and runs the
//!   programs its `config` names; the agent cannot set `GIT_*` itself.
//!
//! ```
//! use agentcaps_paths::PathPolicy;
//! use agentcaps_shell::{CommandRequest, ShellPolicy};
//!
//! let dir = tempfile::tempdir()?;
//! let root = dir.path().canonicalize()?;
//! std::fs::write(root.join("notes.txt"), "hello\n")?;
//! let policy = ShellPolicy::read_only(&root)
//!     .path_policy(PathPolicy::builder().allow(&root).build()?)
//!     .build()?;
//!
//! // Allowed: a file inside the root.
//! let cmd = policy.validate(&CommandRequest::line("cat notes.txt"))?;
//! assert_eq!(cmd.argv(), ["cat", "notes.txt"]);
//!
//! // Refused: a value glued to a flag that points outside it.
//! let err = policy.validate(&CommandRequest::argv(["cat", "-f/etc/passwd"])).unwrap_err();
//! assert_eq!(err.rule(), "path");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Security
//!
//! Without a path policy, arguments are not looked at as files: an allowed
//! `cat` reads anything this process can. With one, paths inside arguments
//! are judged too (`git show HEAD:.env`, `curl -d @.env`, a `file://` URL),
//! but a secret that was ever committed stays in the history: `git log -p`
//! and `git show REV` print whole commits, whose contents no path check
//! sees. Scripts, programs and patterns (`sed -n /foo/p`, `grep -rn
//! /api/v1 src`) are text; the `sed`/`awk` scanners read them by the
//! programs' grammars and refuse what they cannot read with confidence,
//! and [`ValidatedCommand::runs_programs`] says when a program needs to
//! start no other: the runner then lets it execute nothing but its own
//! file and the loader (Landlock), so that a `sed` `e` or an `awk`
//! `system()` the scanner missed fails with `EACCES`. The `development` preset
//! ([`danger::development`]) is **not a sandbox**: its programs run
//! arbitrary code by design and it inherits the whole environment. Hard
//! links cannot be seen by any path check. Argument checks judge what a
//! command is asked to touch; what a program does by itself is the
//! kernel's to stop: on Linux each command runs in a private view of the
//! machine where blocked entries are absent, its writes are judged and
//! committed all-or-none when it ends ([`RunResult::changes`]), and nothing
//! it started survives it ([`kernel`] says exactly what holds, and what
//! the `partial` fallback does not). On macOS each command runs under a
//! Seatbelt profile generated from the same policy ([`kernel::seatbelt`],
//! `partial`); on Windows nothing is enforced by the kernel (`none`).
//! Everywhere the result's `enforced` says which.
//!
//! # Crate features
//!
//! - `runner` (default): [`ShellPolicy::run`] on tokio, with the kernel
//!   enforcement seam. Without it the crate is a validator only, with no
//!   tokio dependency.
//! - `landlock` (default, implies `runner`): on Linux, every command runs in
//!   its private view ([`kernel::view`], needs a view helper: the
//!   `agentcaps-view` binary of this crate, or any binary that calls
//!   [`kernel::view::dispatch`]) with a Landlock domain built from the same
//!   policy; what was enforced is in each [`RunResult`].
#![forbid(unsafe_code)]

mod budget;
mod cluster;
mod config;
mod devices;
mod env;
mod error;
mod git_paths;
mod grammar;
mod identity;
mod launcher;
mod option_index;
mod policy;
mod program;
mod remote;
mod request;
mod rules;
mod script;
mod shells;
mod tokenize;
mod validate;
mod value_files;
mod waiver;

#[cfg(feature = "runner")]
mod runner;

/// Kernel confinement (re-exported from `agentcaps-sandbox`).
#[cfg(feature = "runner")]
pub use agentcaps_sandbox::kernel;
/// The judged write-back (re-exported from `agentcaps-sandbox`).
#[cfg(feature = "runner")]
pub use agentcaps_sandbox::writeback;

#[cfg(feature = "runner")]
pub use agentcaps_sandbox::{Change, ChangeAction, Changes, RefusedChange, WriteBackDecider};
#[cfg(feature = "runner")]
pub use agentcaps_sandbox::{Connection, NetworkProxy, PROXY_PORT, ProxyCredentials, ProxySession};
#[cfg(feature = "runner")]
pub use agentcaps_sandbox::{Exit, Limits, OutputCounter, RunResult, Truncated};
pub use config::{DEVELOPMENT_CACHES, Network, Preset, ShellPolicyConfig};
pub use env::DEFAULT_INHERITED;
pub use error::ShellError;
pub use policy::{
    DEVELOPMENT_COMMANDS, LOOKUP_BUDGET, MAX_ARGUMENT_CHARS, MAX_STDIN_BYTES, READ_ONLY_COMMANDS,
    ShellPolicy, ShellPolicyBuilder, WindowsRules, danger,
};
pub use request::{Command, CommandRequest, ValidatedCommand};
pub use rules::{
    ArgumentAccess, Arguments, DefaultWrite, Grammar, OperandRule, OptionRule, ProgramRules, Scope,
    ScriptLanguage, Subcommand, When,
};
pub use tokenize::{quote, split};
pub use waiver::{WAIVABLE_RULES, Waivers};
