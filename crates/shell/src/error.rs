//! The one error type of this crate.

use std::path::PathBuf;

use agentcaps_paths::PathError;

/// Why a command was refused, or why it could not be run.
///
/// Every refusal is its own variant, carries what was refused, and names a
/// stable rule id ([`ShellError::rule`]). Its `Display` is written for the
/// model: what was refused, the rule, and what is allowed instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShellError {
    /// The command string holds a shell operator outside quotes.
    #[error(
        "refused `{operator}` at byte {position} (rule shell-operator): no shell runs this command, \
         exactly one program runs with the words you give; no pipes, redirection, sequencing, \
         substitution or variables"
    )]
    ShellOperator {
        /// The command string as given.
        command: String,
        /// The operator character.
        operator: char,
        /// Its byte offset in `command`.
        position: usize,
    },
    /// A quote (or a trailing backslash) is not closed.
    #[error(
        "refused the command (rule unterminated-quote): the `{quote}` opened in it is never closed; \
         close it, or give the command as an argv array"
    )]
    UnterminatedQuote {
        /// The command string as given.
        command: String,
        /// The quote character (`'`, `"` or `\`).
        quote: char,
    },
    /// No program was named.
    #[error("refused an empty command (rule empty-command): name one program and its arguments")]
    EmptyCommand,
    /// The command starts with `NAME=value`, a variable assignment.
    #[error(
        "refused `{argument}` (rule env-assignment): `NAME=value` before a command sets a variable \
         in a shell, and no shell runs here; start the command with the program's name"
    )]
    Assignment {
        /// The assignment word.
        argument: String,
    },
    /// The program is not on the allow list.
    #[error(
        "refused program `{program}` (rule not-allowed-program): allowed programs are {}",
        list_or_none(allowed)
    )]
    NotAllowedProgram {
        /// `argv[0]` as given.
        program: String,
        /// The allowed command names and host-listed programs.
        allowed: Vec<String>,
    },
    /// `argv[0]` is a path that the host did not list.
    #[error(
        "refused program `{program}` (rule program-path): name the program bare (like `{name}`); \
         it is looked up in the command's PATH, never in the working directory"
    )]
    ProgramPath {
        /// `argv[0]` as given.
        program: String,
        /// Its file name.
        name: String,
    },
    /// An option that makes the program write, run or read what it was not
    /// given as an argument.
    #[error(
        "refused `{argument}` for `{program}` (rule refused-option): option `{option}` {reason}; \
         run `{program}` without it"
    )]
    RefusedOption {
        /// The program's identity (file name, lower case, no `.exe`).
        program: String,
        /// The argument that holds the option.
        argument: String,
        /// The refused option as the rule spells it.
        option: String,
        /// Why it is refused.
        reason: String,
    },
    /// An option the program's grammar does not list: what it would do
    /// cannot be judged.
    #[error(
        "refused `{argument}` for `{program}` (rule unknown-option): `{option}` is not an option \
         this policy knows for `{program}`, so what it does cannot be judged; the options it \
         knows are {}",
        list_some(allowed)
    )]
    UnknownOption {
        /// The program's identity (with its subcommand, `git log`).
        program: String,
        /// The argument that holds the option.
        argument: String,
        /// The option as read.
        option: String,
        /// The options the program's grammar lists.
        allowed: Vec<String>,
    },
    /// A subcommand the program's table does not list.
    #[error(
        "refused `{program} {subcommand}` (rule unknown-subcommand): this policy knows the \
         `{program}` subcommands {}",
        list_some(allowed)
    )]
    UnknownSubcommand {
        /// The program's identity.
        program: String,
        /// The subcommand as given.
        subcommand: String,
        /// The subcommands the table lists.
        allowed: Vec<String>,
    },
    /// A subcommand the program's table refuses.
    #[error("refused `{program} {subcommand}` (rule refused-subcommand): it {reason}")]
    RefusedSubcommand {
        /// The program's identity.
        program: String,
        /// The subcommand.
        subcommand: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A copy whose names in the target cannot be told from the command
    /// line (the contents of a directory, `src/` or `src/.`).
    #[error(
        "refused `{source_spelling}` for `{program}` (rule copy-contents): it copies the contents \
         of a directory into `{target}`, under names the command line does not show, so they \
         cannot be judged; name the directory itself (without a trailing `/` or `/.`), or copy \
         into a directory below the working directory and outside `.git`"
    )]
    CopyContents {
        /// The program's identity.
        program: String,
        /// The source as given.
        source_spelling: String,
        /// The directory it is copied into.
        target: String,
    },
    /// An operand that names another machine (`host:path`, `host::module`,
    /// `rsync://host/…`): the program would reach it through a remote shell
    /// or a network daemon that no check here governs.
    #[error(
        "refused `{argument}` for `{program}` (rule remote-operand): {program} reads an operand \
         with a `:` before its first `/` as another machine, reached through a remote shell; \
         name local paths only (a local file of that name is written `./{argument}`)"
    )]
    RemoteOperand {
        /// The program's identity.
        program: String,
        /// The operand as given.
        argument: String,
    },
    /// A program's script would run a command or write a file.
    #[error(
        "refused the {program} script `{script}` (rule refused-script): it {reason}; \
         use a script that only prints"
    )]
    RefusedScript {
        /// The program's identity.
        program: String,
        /// The script text.
        script: String,
        /// What the script would do.
        reason: String,
    },
    /// A program that runs another program.
    #[error("refused `{program}` (rule launcher): {reason}")]
    Launcher {
        /// The launcher's identity.
        program: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// An argument, or a value inside it, names a path the policy refuses.
    #[error(
        "refused argument `{argument}` (rule path: {}): {}{}",
        source.rule(),
        spelling_note(argument, spelling),
        without_prefix(source)
    )]
    Path {
        /// The whole argument.
        argument: String,
        /// The part judged as a path (the argument, a `=value`, or a
        /// cluster tail).
        spelling: String,
        /// The path policy's refusal.
        #[source]
        source: Box<PathError>,
    },
    /// The working directory is outside the path policy.
    #[error(
        "refused working directory `{}` (rule working-directory: {}): {}",
        cwd.display(),
        source.rule(),
        without_prefix(source)
    )]
    WorkingDirectory {
        /// The working directory as asked.
        cwd: PathBuf,
        /// The path policy's refusal.
        #[source]
        source: Box<PathError>,
    },
    /// The checks would cost more file-system lookups than the budget.
    #[error(
        "refused the command (rule too-costly): checking its arguments would take more than \
         {budget} file-system lookups (at least {bound}); give fewer or shorter path-like arguments"
    )]
    TooCostly {
        /// A lower bound on the upper bound of the command's cost.
        bound: u64,
        /// The budget.
        budget: u64,
    },
    /// An argument is longer than the limit.
    #[error(
        "refused argument {index} (rule argument-too-long): it has {length} characters, \
         more than the {limit} allowed"
    )]
    ArgumentTooLong {
        /// Its index in argv.
        index: usize,
        /// Its length in characters.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// An argument contains a NUL character, which no program can receive.
    #[error("refused argument {index} (rule nul): it contains a NUL character")]
    Nul {
        /// Its index in argv.
        index: usize,
    },
    /// An environment variable the agent asked for is refused.
    #[error("refused environment variable `{name}` (rule env-var): {reason}")]
    EnvVar {
        /// The variable's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// The allowed program is not found in the command's `PATH`.
    #[error(
        "`{program}` is allowed but was not found in the command's PATH \
         (rule program-not-found); the PATH searched is `{path}`"
    )]
    ProgramNotFound {
        /// The allowed name.
        program: String,
        /// The `PATH` searched (empty and relative entries are skipped).
        path: String,
    },
    /// The request gives standard input and the policy does not allow it,
    /// or gives more than the limit.
    #[error("refused standard input (rule stdin): {reason}")]
    Stdin {
        /// Why.
        reason: String,
    },
    /// The policy itself is invalid.
    #[error("invalid shell policy (rule config): {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// The path policy could not be consulted (a real I/O failure, not a
    /// refusal).
    #[error("could not check `{spelling}`: {source}")]
    PathIo {
        /// What was being checked.
        spelling: String,
        /// The failure.
        #[source]
        source: Box<PathError>,
    },
    /// The policy requires kernel enforcement and the kernel cannot give it;
    /// nothing ran.
    #[error("{message} (rule require-kernel-enforcement)")]
    KernelEnforcement {
        /// What the kernel can and cannot enforce.
        message: String,
    },
    /// The command's private view failed (after this machine was found able
    /// to build views): the run ended, nothing it wrote was committed, and
    /// it was not run again with less confinement.
    #[error("{message}")]
    ViewFailed {
        /// What failed, and what was done about it.
        message: String,
    },
    /// The program could not be started or waited for.
    #[error("could not run `{}`: {source}", program.display())]
    Spawn {
        /// The resolved program.
        program: PathBuf,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
}

#[cfg(feature = "runner")]
impl From<agentcaps_sandbox::SandboxError> for ShellError {
    fn from(error: agentcaps_sandbox::SandboxError) -> Self {
        use agentcaps_sandbox::SandboxError as E;
        match error {
            E::Spawn { program, source } => ShellError::Spawn { program, source },
            E::KernelEnforcement { message } => ShellError::KernelEnforcement { message },
            E::Config { message } => ShellError::Config { message },
            error @ E::ViewFailed { .. } => ShellError::ViewFailed {
                message: error.to_string(),
            },
            // A variant this version does not know: kept as a refusal to run.
            other => ShellError::KernelEnforcement {
                message: other.to_string(),
            },
        }
    }
}

impl ShellError {
    /// A short stable id for the rule (for logs and the CLI's JSON `rule`).
    pub fn rule(&self) -> &'static str {
        match self {
            Self::ShellOperator { .. } => "shell-operator",
            Self::UnterminatedQuote { .. } => "unterminated-quote",
            Self::EmptyCommand => "empty-command",
            Self::Assignment { .. } => "env-assignment",
            Self::NotAllowedProgram { .. } => "not-allowed-program",
            Self::ProgramPath { .. } => "program-path",
            Self::RefusedOption { .. } => "refused-option",
            Self::RefusedScript { .. } => "refused-script",
            Self::UnknownOption { .. } => "unknown-option",
            Self::UnknownSubcommand { .. } => "unknown-subcommand",
            Self::RefusedSubcommand { .. } => "refused-subcommand",
            Self::CopyContents { .. } => "copy-contents",
            Self::RemoteOperand { .. } => "remote-operand",
            Self::Launcher { .. } => "launcher",
            Self::Path { .. } => "path",
            Self::WorkingDirectory { .. } => "working-directory",
            Self::TooCostly { .. } => "too-costly",
            Self::ArgumentTooLong { .. } => "argument-too-long",
            Self::Nul { .. } => "nul",
            Self::EnvVar { .. } => "env-var",
            Self::Stdin { .. } => "stdin",
            Self::ProgramNotFound { .. } => "program-not-found",
            Self::Config { .. } => "config",
            Self::PathIo { .. } => "io",
            Self::KernelEnforcement { .. } => "require-kernel-enforcement",
            Self::ViewFailed { .. } => "view-failed",
            Self::Spawn { .. } => "io",
        }
    }

    /// The path policy's own rule id when this is a path refusal
    /// (`"outside-roots"`, `"blocked"`, …).
    pub fn path_rule(&self) -> Option<&'static str> {
        match self {
            Self::Path { source, .. } | Self::WorkingDirectory { source, .. } => {
                Some(source.rule())
            }
            _ => None,
        }
    }

    /// Whether this is a refusal by the policy (as opposed to a broken
    /// policy, a missing program or an I/O failure).
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Self::ProgramNotFound { .. }
                | Self::Config { .. }
                | Self::PathIo { .. }
                | Self::ViewFailed { .. }
                | Self::Spawn { .. }
        )
    }
}

/// A list for a message: at most 60 items, then how many more.
fn list_some(items: &[String]) -> String {
    const SHOWN: usize = 60;
    if items.is_empty() {
        return "none".to_owned();
    }
    let mut text = items
        .iter()
        .take(SHOWN)
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(" ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

fn list_or_none(allowed: &[String]) -> String {
    if allowed.is_empty() {
        "none".to_owned()
    } else {
        allowed.join(", ")
    }
}

/// The path policy's message without its leading "refused `…`: ", which
/// this crate's own message already says.
fn without_prefix(source: &PathError) -> String {
    let text = source.to_string();
    match text.split_once("`: ") {
        Some((head, rest)) if head.starts_with("refused") && !head.contains(": ") => {
            rest.to_owned()
        }
        _ => text,
    }
}

fn spelling_note(argument: &str, spelling: &str) -> String {
    if argument == spelling {
        String::new()
    } else {
        format!("its part `{spelling}` is judged as a path, since the program may open it; ")
    }
}
