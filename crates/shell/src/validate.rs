//! Judging one command: splitting, the program, launchers, options (the
//! tables' refusals and grammars), scripts, variables, the budget, paths.
//!
//! Order matters for cost: everything that needs no file system comes
//! first (splitting, lengths, the program, launchers, options, scripts,
//! variables), then the budget is computed from the spellings alone, and
//! only a command within budget has its paths looked up.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcaps_paths::{Access, Budget, FileSystem, PathError, PathPolicy};

use crate::budget::LowerBound;
use crate::cluster::{Conditions, parts, path_spellings, refused, refused_by, refused_with};
use crate::env::{
    absolute_path_entries, append_git_safety, check_agent_variable, child_environment, inheritable,
};
use crate::error::ShellError;
use crate::grammar::{self, Problem};
use crate::identity::{identity, is_bare};
use crate::launcher::{Launch, is_shell, launch, shell_reads_stdin};
use crate::policy::{LOOKUP_BUDGET, MAX_ARGUMENT_CHARS, MAX_STDIN_BYTES, ShellPolicy, normalize};
use crate::request::{Command, CommandRequest, ValidatedCommand};
use crate::rules::{
    ArgumentAccess, Arguments, DefaultWrite, Grammar, OptionRule, ProgramRules, ScriptLanguage,
    Subcommand,
};
use crate::waiver::Waivers;
use crate::{devices, git_paths, remote, script, tokenize, value_files};

/// How deep launchers may nest (`nice timeout 5 env cat`).
const MAX_LAUNCHER_DEPTH: usize = 4;

/// Which program one part of argv runs.
#[derive(Debug)]
enum Target {
    /// An allowed bare name, to look up in `PATH`.
    Name(String),
    /// A host-listed absolute path.
    Path(PathBuf),
}

/// One program in argv: the outer launchers, then the program that does the
/// work (the last segment).
#[derive(Debug)]
struct Segment {
    start: usize,
    end: usize,
    identity: String,
    target: Target,
}

pub(crate) fn validate(
    policy: &ShellPolicy,
    fs: &dyn FileSystem,
    request: &CommandRequest,
    waivers: &Waivers,
) -> Result<ValidatedCommand, ShellError> {
    validate_at(policy, fs, request, waivers, 0)
}

/// [`validate`], inside `depth` unwrapped shell `-c` strings.
fn validate_at(
    policy: &ShellPolicy,
    fs: &dyn FileSystem,
    request: &CommandRequest,
    waivers: &Waivers,
    depth: usize,
) -> Result<ValidatedCommand, ShellError> {
    // Borrowed until the command passes: a flood of arguments is refused
    // without copying it.
    let argv: Cow<'_, [String]> = match &request.command {
        Command::Argv(argv) => Cow::Borrowed(argv),
        Command::Line(line) => Cow::Owned(tokenize::split(line)?),
    };
    if argv.is_empty() {
        return Err(ShellError::EmptyCommand);
    }
    for (index, arg) in argv.iter().enumerate() {
        if arg.contains('\0') {
            return Err(ShellError::Nul { index });
        }
        // No more characters than bytes: count only long arguments, and
        // only as far as the limit.
        if arg.len() > MAX_ARGUMENT_CHARS
            && arg.chars().take(MAX_ARGUMENT_CHARS + 1).count() > MAX_ARGUMENT_CHARS
        {
            return Err(ShellError::ArgumentTooLong {
                index,
                length: arg.chars().count(),
                limit: MAX_ARGUMENT_CHARS,
            });
        }
    }

    if let Some(inner) = shell_string(policy, &argv)? {
        if depth >= MAX_LAUNCHER_DEPTH {
            return Err(ShellError::Launcher {
                program: identity(argv.first().map(String::as_str).unwrap_or_default()),
                reason: format!(
                    "`-c` strings nest more than {MAX_LAUNCHER_DEPTH} deep; give the inner \
                     command directly"
                ),
            });
        }
        let mut inner_request = request.clone();
        inner_request.command = Command::Argv(inner);
        return validate_at(policy, fs, &inner_request, waivers, depth + 1);
    }

    let when = Conditions {
        path_policy: policy.paths.is_some(),
        windows: policy.windows_rules,
        after_subcommand: false,
    };
    let mut segments = Vec::new();
    judge_programs(policy, waivers, &argv, 0, 0, &mut segments)?;
    // Options a person approved are left out of the judging (see
    // `Waivers`); the command keeps them.
    let spans = segments
        .iter()
        .map(|s| (s.start, s.end, s.identity.as_str()));
    let (argv, approved) = match waivers.without_options(&argv, spans) {
        Some((judged, kept)) => {
            segments.clear();
            judge_programs(policy, waivers, &judged, 0, 0, &mut segments)?;
            (Cow::Owned(judged), Some((argv.into_owned(), kept)))
        }
        None => (argv, None),
    };
    // The tables of the programs named, parsed before anything is judged
    // by them.
    for segment in &segments {
        policy.rules.load(&segment.identity)?;
    }
    let work = segments.last().ok_or(ShellError::EmptyCommand)?;
    let text = match &policy.paths {
        Some(_) => text_arguments(policy, &argv, work, when),
        None => Vec::new(),
    };
    if policy.paths.is_some() {
        quick_bound(policy, &argv, work, when, &text)?;
    }
    for segment in &segments {
        judge_options(policy, &argv, segment, when)?;
    }

    if !request.env.is_empty() && !policy.agent_environment {
        let name = request.env.keys().next().cloned().unwrap_or_default();
        return Err(ShellError::EnvVar {
            name,
            reason: "this policy does not let a command's variables be chosen; the command runs \
                     with the host's chosen environment"
                .to_owned(),
        });
    }
    for (name, value) in &request.env {
        check_agent_variable(name, value)?;
    }

    let stdin = match &request.stdin {
        None => None,
        Some(_) if !policy.stdin => {
            return Err(ShellError::Stdin {
                reason: "this policy closes standard input; give the data as a file argument"
                    .to_owned(),
            });
        }
        Some(_)
            if shell_reads_stdin(
                &work.identity,
                argv.get(work.start + 1..work.end).unwrap_or_default(),
            ) =>
        {
            return Err(ShellError::Launcher {
                program: work.identity.clone(),
                reason: format!(
                    "`{}` reads its commands from standard input here (no script named, or -s \
                     or -i), so the input would run as a shell command string; name a script \
                     file, or give the program and its arguments directly",
                    work.identity
                ),
            });
        }
        Some(input) if input.len() > MAX_STDIN_BYTES => {
            return Err(ShellError::Stdin {
                reason: format!(
                    "{} bytes is more than the {MAX_STDIN_BYTES} allowed",
                    input.len()
                ),
            });
        }
        Some(input) => Some(input.clone().into_bytes()),
    };

    let cwd_spelling = request.cwd.as_deref().unwrap_or(".");
    let (cwd, lookups) = match &policy.paths {
        Some(paths) => {
            let work = Work {
                segment: work,
                text: &text,
            };
            judge_paths(policy, paths, fs, &argv, work, cwd_spelling, when)?
        }
        None => (normalize(&policy.working_directory.join(cwd_spelling)), 0),
    };

    let mut env = child_environment(
        inheritable(&policy.inherit),
        &policy.inherit,
        &policy.environment,
        &request.env,
        cfg!(windows),
    );
    append_git_safety(&mut env, cfg!(windows));
    absolute_path_entries(&mut env, cfg!(windows));
    let path_var = env
        .iter()
        .rev()
        .find(|(name, _)| {
            if cfg!(windows) {
                name.eq_ignore_ascii_case("PATH")
            } else {
                name == "PATH"
            }
        })
        .map(|(_, value)| value.as_os_str());
    let mut argv = argv.into_owned();
    let mut program = PathBuf::new();
    for (i, segment) in segments.iter().enumerate() {
        let resolved = match &segment.target {
            Target::Name(name) => policy.found.find(name, path_var)?,
            Target::Path(path) => path.clone(),
        };
        let word = argv
            .get_mut(segment.start)
            .ok_or(ShellError::EmptyCommand)?;
        if i == 0 {
            *word = match &segment.target {
                Target::Name(name) => name.clone(),
                Target::Path(path) => path.to_string_lossy().into_owned(),
            };
            program = resolved;
        } else {
            // The launcher must not search for its inner program again.
            *word = resolved.to_string_lossy().into_owned();
        }
    }

    let runs_programs = match segments.as_slice() {
        [only] => starts_programs(policy, &argv, only, when),
        _ => true,
    };
    if let Some((mut whole, kept)) = approved {
        for segment in &segments {
            if let (Some(&at), Some(word)) = (kept.get(segment.start), argv.get(segment.start))
                && let Some(slot) = whole.get_mut(at)
            {
                slot.clone_from(word);
            }
        }
        argv = whole;
    }
    let requested = request.timeout_ms.map(Duration::from_millis);
    let timeout = requested.map_or(policy.timeout, |t| t.min(policy.timeout));
    Ok(ValidatedCommand {
        program,
        argv,
        cwd,
        env,
        lookups,
        timeout,
        stdin,
        runs_programs,
    })
}

/// Whether the one program of a command may start others: unless its
/// table says it runs nothing by itself and none of the table's
/// `starts_programs` options is given (in any spelling a refusal would
/// catch).
fn starts_programs(
    policy: &ShellPolicy,
    argv: &[String],
    work: &Segment,
    when: Conditions,
) -> bool {
    let Some(rules) = policy.rules.get(&work.identity) else {
        return true;
    };
    if rules.runs_programs {
        return true;
    }
    let starting: Vec<OptionRule> = rules
        .starts_programs
        .iter()
        .map(|option| OptionRule::new(option.clone(), "starts a program"))
        .collect();
    let args = argv.get(work.start + 1..work.end).unwrap_or_default();
    args.iter().enumerate().any(|(i, arg)| {
        refused_by(
            &starting,
            &rules.text_value,
            arg,
            rules.bundled_first && i == 0,
            when,
        )
        .is_some()
    })
}

/// Where the policy unwraps launchers and allows the shell, `SHELL -c
/// STRING` (exactly that) is the command STRING: split like a command
/// string (no expansion; an operator is refused), judged as if given
/// directly, and run without the shell, so what runs is what was judged.
/// A string holding what a shell would expand (`*`, `?`, `[`, `~`, `{`,
/// `#`) is refused: run without a shell, it would mean something else.
fn shell_string(policy: &ShellPolicy, argv: &[String]) -> Result<Option<Vec<String>>, ShellError> {
    let [shell, flag, string] = argv else {
        return Ok(None);
    };
    let id = identity(shell);
    let allowed = || is_bare(shell) && policy.allowed.iter().any(|n| identity(n) == id);
    if !policy.unwrap_launchers || flag != "-c" || !is_shell(&id) || !allowed() {
        return Ok(None);
    }
    if let Some(c) = string.chars().find(|c| "*?[~{#".contains(*c)) {
        return Err(ShellError::Launcher {
            program: id,
            reason: format!(
                "`-c` string holds `{c}`, which a shell would expand; the string is run as one \
                 command without a shell, so give the names it stands for directly"
            ),
        });
    }
    Ok(Some(tokenize::split(string)?))
}

/// Identify the program at `argv[start]`, unwrapping launchers.
fn judge_programs(
    policy: &ShellPolicy,
    waivers: &Waivers,
    argv: &[String],
    start: usize,
    depth: usize,
    out: &mut Vec<Segment>,
) -> Result<(), ShellError> {
    let word = argv.get(start).ok_or(ShellError::EmptyCommand)?;
    if is_assignment(word) {
        return Err(ShellError::Assignment {
            argument: word.clone(),
        });
    }
    let id = identity(word);
    let target = if is_bare(word) {
        match policy
            .allowed
            .iter()
            .find(|name| !word.is_empty() && identity(name) == id)
        {
            Some(name) => Target::Name(name.clone()),
            // A person approved running exactly this unlisted program.
            None => match not_allowed(policy, word) {
                refusal if waivers.covers(&refusal) => Target::Name(word.clone()),
                refusal => return Err(refusal),
            },
        }
    } else if policy
        .programs
        .iter()
        .any(|p| p.as_os_str() == word.as_str())
    {
        Target::Path(PathBuf::from(word))
    } else if policy.allowed.iter().any(|name| identity(name) == id) {
        return Err(ShellError::ProgramPath {
            program: word.clone(),
            name: id,
        });
    } else {
        return Err(not_allowed(policy, word));
    };
    let rest = argv.get(start..).unwrap_or_default();
    match launch(&id, rest, policy.unwrap_launchers) {
        Launch::NotALauncher => out.push(Segment {
            start,
            end: argv.len(),
            identity: id,
            target,
        }),
        Launch::Refused(reason) => {
            return Err(ShellError::Launcher {
                program: id,
                reason,
            });
        }
        Launch::Unknown {
            argument,
            option,
            allowed,
        } => {
            return Err(ShellError::UnknownOption {
                program: id,
                argument,
                option,
                allowed,
            });
        }
        Launch::NoCommand { assignments } => {
            check_assignments(&assignments)?;
            out.push(Segment {
                start,
                end: argv.len(),
                identity: id,
                target,
            });
        }
        Launch::Inner {
            start: inner,
            assignments,
        } => {
            check_assignments(&assignments)?;
            if depth >= MAX_LAUNCHER_DEPTH {
                return Err(ShellError::Launcher {
                    program: id,
                    reason: format!(
                        "launchers nest more than {MAX_LAUNCHER_DEPTH} deep; give the inner \
                         command directly"
                    ),
                });
            }
            out.push(Segment {
                start,
                end: start + inner,
                identity: id,
                target,
            });
            judge_programs(policy, waivers, argv, start + inner, depth + 1, out)?;
        }
    }
    Ok(())
}

fn check_assignments(assignments: &[(&str, &str)]) -> Result<(), ShellError> {
    assignments
        .iter()
        .try_for_each(|(name, value)| check_agent_variable(name, value))
}

/// `NAME=value`, as a shell would read it before a command.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn not_allowed(policy: &ShellPolicy, word: &str) -> ShellError {
    let mut allowed = policy.allowed.clone();
    allowed.extend(policy.programs.iter().map(|p| p.display().to_string()));
    ShellError::NotAllowedProgram {
        program: word.to_owned(),
        allowed,
    }
}

fn judge_options(
    policy: &ShellPolicy,
    argv: &[String],
    segment: &Segment,
    when: Conditions,
) -> Result<(), ShellError> {
    let Some(rules) = policy.rules.get(&segment.identity) else {
        return Ok(());
    };
    let args = argv.get(segment.start + 1..segment.end).unwrap_or_default();
    // Rules scoped to the program's own options stop at its subcommand
    // (`git -c` is not `git diff -c`). Where the options cannot be read,
    // every rule judges every argument.
    let subcommand_at = rules
        .grammar
        .as_ref()
        .filter(|g| !g.subcommands.is_empty())
        .and_then(|g| grammar::read(g, &rules.refuse, when, args, false, false).ok())
        .and_then(|reading| reading.subcommand)
        .unwrap_or(args.len());
    // After the subcommand, the subcommand's own rules are asked first (so
    // that a refusal names them), then the program's (see
    // `judge_subcommand`).
    for (i, arg) in args
        .iter()
        .enumerate()
        .take(subcommand_at.saturating_add(1))
    {
        if let Some(rule) = refused(rules, arg, rules.bundled_first && i == 0, when) {
            return Err(refused_option(&segment.identity, arg, rule));
        }
    }
    let mut scripts = Vec::new();
    if let Some(grammar) = &rules.grammar {
        // Programs that ship in variants reading an option differently
        // (BSD `sed -l` vs GNU `sed -l N`) are read both ways.
        for reading in every_reading(rules, grammar, args, when) {
            let reading = reading.map_err(|p| problem(&segment.identity, grammar, p))?;
            if let Some(names) = &grammar.assignments {
                judge_assignments(&segment.identity, names, &reading.operands)?;
            }
            if let Some(at) = reading.subcommand {
                judge_subcommand(&segment.identity, rules, grammar, args, at, when)?;
            }
            if rules.refuse_remote {
                let targets = reading
                    .values
                    .iter()
                    .filter(|(entry, _)| grammar.target.iter().any(|t| t == entry))
                    .map(|(_, value)| *value);
                refuse_remote(
                    &segment.identity,
                    reading.operands.iter().copied().chain(targets),
                )?;
            }
            refuse_remote(
                &segment.identity,
                reading
                    .values
                    .iter()
                    .filter(|(entry, _)| grammar.remote.iter().any(|r| r == entry))
                    .map(|(_, value)| *value),
            )?;
            if rules.script == Some(ScriptLanguage::Awk) {
                judge_awk_outside_program(&segment.identity, grammar, &reading)?;
            }
            if rules.script.is_some() {
                scripts.extend(reading.scripts(grammar));
            }
        }
    } else {
        if rules.refuse_remote {
            // No grammar to tell operands from option values: every
            // argument that is not an option is judged as an operand.
            refuse_remote(
                &segment.identity,
                args.iter()
                    .map(String::as_str)
                    .filter(|a| !a.starts_with('-')),
            )?;
        }
        if let Some(language) = rules.script {
            scripts = script::scripts(language, args);
        }
    }
    if let Some(language) = rules.script.filter(|_| !policy.skip_script_scan) {
        for text in scripts {
            if let Some(reason) = script::refusal(language, text) {
                return Err(ShellError::RefusedScript {
                    program: segment.identity.clone(),
                    script: text.to_owned(),
                    reason: reason.to_owned(),
                });
            }
        }
    }
    Ok(())
}

/// What an awk command sets outside its program: one program text only
/// (awk reads several pieces as one stream, whose tokens a piece-by-piece
/// scan could read differently), and no `-v`/`--assign` value or
/// `NAME=value` operand that sets the names through which awk chooses
/// the files it reads.
fn judge_awk_outside_program(
    program: &str,
    grammar: &Grammar,
    reading: &grammar::Reading<'_>,
) -> Result<(), ShellError> {
    let from_options = reading
        .values
        .iter()
        .any(|(entry, _)| grammar.scripts.iter().any(|s| s == entry));
    let texts = reading.scripts(grammar);
    if texts.len() > 1 {
        return Err(ShellError::RefusedScript {
            program: program.to_owned(),
            script: texts.join("\n"),
            reason: "comes in several pieces, which awk reads as one program; give it as one \
                     program text"
                .to_owned(),
        });
    }
    let data = reading
        .operands
        .get(usize::from(!from_options)..)
        .unwrap_or_default();
    let assignments = reading
        .values
        .iter()
        .filter(|(entry, _)| script::AWK_ASSIGNMENT_OPTIONS.contains(entry))
        .map(|(_, value)| *value)
        .chain(data.iter().copied());
    for assignment in assignments {
        if let Some(reason) = script::awk_assignment_refusal(assignment) {
            return Err(ShellError::RefusedScript {
                program: program.to_owned(),
                script: assignment.to_owned(),
                reason: reason.to_owned(),
            });
        }
    }
    Ok(())
}

/// Refuse an operand holding `=` (a variable the program expands: make
/// reads every such operand as one, `V!=cmd`, `V?=x` and `V:=x` too)
/// unless it is exactly `NAME=value` with `NAME` one of `names` and a value
/// of letters, digits and `._,+/-` only, which expands and runs nothing.
fn judge_assignments(program: &str, names: &[String], operands: &[&str]) -> Result<(), ShellError> {
    for operand in operands {
        let Some((name, value)) = operand.split_once('=') else {
            continue;
        };
        let plain_value = value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._,+/-".contains(c));
        if names.iter().any(|n| n == name) && plain_value {
            continue;
        }
        let allowed = if names.is_empty() {
            "none can be set here".to_owned()
        } else {
            format!(
                "only `NAME=value` with NAME one of {} and a value of letters, digits and \
                 `._,+/-` can be set",
                names.join(", ")
            )
        };
        return Err(ShellError::RefusedOption {
            program: program.to_owned(),
            argument: (*operand).to_owned(),
            option: format!("{name}="),
            reason: format!(
                "sets a variable the program expands, which can choose the program it runs \
                 (`SHELL=`, `CC=`) or run one (`$(shell …)`, `V!=cmd`); {allowed}"
            ),
        });
    }
    Ok(())
}

/// Refuse an operand the program would read as another machine.
fn refuse_remote<'a>(
    program: &str,
    mut operands: impl Iterator<Item = &'a str>,
) -> Result<(), ShellError> {
    match operands.find(|o| remote::names_remote(o)) {
        Some(operand) => Err(ShellError::RemoteOperand {
            program: program.to_owned(),
            argument: operand.to_owned(),
        }),
        None => Ok(()),
    }
}

fn refused_option(program: &str, arg: &str, rule: &OptionRule) -> ShellError {
    ShellError::RefusedOption {
        program: program.to_owned(),
        argument: arg.to_owned(),
        option: rule.option.clone(),
        reason: rule.reason.clone(),
    }
}

fn problem(program: &str, grammar: &Grammar, problem: Problem<'_>) -> ShellError {
    match problem {
        Problem::Unknown { argument, option } => ShellError::UnknownOption {
            program: program.to_owned(),
            argument: argument.to_owned(),
            option,
            allowed: grammar::listed(grammar),
        },
        Problem::Refused { argument, rule } => refused_option(program, argument, rule),
    }
}

/// The subcommand at `args[at]` and its arguments (`git log --oneline`).
fn judge_subcommand(
    program: &str,
    rules: &ProgramRules,
    grammar: &Grammar,
    args: &[String],
    at: usize,
    when: Conditions,
) -> Result<(), ShellError> {
    let name = args.get(at).map(String::as_str).unwrap_or_default();
    let Some(sub) = grammar.subcommands.iter().find(|s| s.name == name) else {
        return Err(ShellError::UnknownSubcommand {
            program: program.to_owned(),
            subcommand: name.to_owned(),
            allowed: grammar
                .subcommands
                .iter()
                .filter(|s| s.refused.is_none())
                .map(|s| s.name.clone())
                .collect(),
        });
    };
    if let Some(reason) = &sub.refused {
        return Err(ShellError::RefusedSubcommand {
            program: program.to_owned(),
            subcommand: name.to_owned(),
            reason: reason.clone(),
        });
    }
    let full = format!("{program} {name}");
    let rest = args.get(at + 1..).unwrap_or_default();
    let when = when.after_subcommand(true);
    for arg in rest {
        let grammar = sub.grammar.as_deref();
        if let Some(rule) = refused_with(&sub.refuse, &[], grammar, arg, false, when) {
            return Err(refused_option(&full, arg, rule));
        }
        // The program's rules judge every argument (`--upload-pack`
        // wherever it is), except those scoped to its own options; an
        // option the subcommand's grammar spells exactly (`git help
        // --config`) is that option, not an abbreviation of a refused one.
        if let Some(rule) =
            refused_with(&rules.refuse, &rules.text_value, grammar, arg, false, when)
        {
            return Err(refused_option(program, arg, rule));
        }
    }
    let (operands, options): (Vec<&str>, Vec<&str>) = match &sub.grammar {
        Some(inner) => {
            let reading = grammar::read(inner, &sub.refuse, when, rest, false, false)
                .map_err(|p| problem(&full, inner, p))?;
            (reading.operands, reading.options)
        }
        None => (
            rest.iter()
                .map(String::as_str)
                .filter(|a| !a.starts_with('-'))
                .collect(),
            Vec::new(),
        ),
    };
    let first = operands.first().copied().unwrap_or_default();
    if let Some(rule) = sub.refuse_operands.iter().find(|r| r.operand == first) {
        return Err(ShellError::RefusedOption {
            program: full,
            argument: first.to_owned(),
            option: rule.operand.clone(),
            reason: rule.reason.clone(),
        });
    }
    if let Some(max) = sub.max_operands {
        let lifted = options
            .iter()
            .any(|o| sub.more_operands_with.iter().any(|m| m == o));
        if operands.len() > max && !lifted {
            let extra = operands.get(max).copied().unwrap_or_default();
            return Err(ShellError::RefusedOption {
                program: full,
                argument: extra.to_owned(),
                option: format!("operand {}", max + 1),
                reason: sub
                    .operands_reason
                    .clone()
                    .unwrap_or_else(|| "is more operands than this policy allows".to_owned()),
            });
        }
    }
    Ok(())
}

/// Refuse, before anything else is computed, a command whose distinct
/// path-like parts alone exceed the budget (see [`crate::budget`]).
fn quick_bound(
    policy: &ShellPolicy,
    argv: &[String],
    work: &Segment,
    when: Conditions,
    text: &[bool],
) -> Result<(), ShellError> {
    let rules = policy.rules.get(&work.identity);
    if rules.is_some_and(|r| r.arguments == Arguments::Text) {
        return Ok(());
    }
    let bundled = rules.is_some_and(|r| r.bundled_first);
    let args = argv.get(work.start + 1..work.end).unwrap_or_default();
    let mut bound = LowerBound::with_capacity(args.len().saturating_mul(2));
    for (i, arg) in args.iter().enumerate() {
        if text.get(i) == Some(&true) {
            continue;
        }
        let count = bound.add(arg, parts(rules, arg, bundled && i == 0, when));
        if count > LOOKUP_BUDGET {
            return Err(ShellError::TooCostly {
                bound: count,
                budget: LOOKUP_BUDGET,
            });
        }
    }
    Ok(())
}

/// Which arguments of the working program its grammar reads as text values
/// (`touch -d DATE`, `rsync --chmod=MODE`: see [`Grammar::text`]), under
/// every reading of it; `true` at an argument's index. Empty when the
/// program has no grammar with text options, or the grammar does not read
/// the arguments (the options check refuses them then).
fn text_arguments(
    policy: &ShellPolicy,
    argv: &[String],
    work: &Segment,
    when: Conditions,
) -> Vec<bool> {
    let Some(rules) = policy.rules.get(&work.identity) else {
        return Vec::new();
    };
    let Some(grammar) = rules
        .grammar
        .as_ref()
        .filter(|g| !g.text.is_empty() || !g.scripts.is_empty())
    else {
        return Vec::new();
    };
    let args = argv.get(work.start + 1..work.end).unwrap_or_default();
    let mut text = vec![true; args.len()];
    for reading in every_reading(rules, grammar, args, when) {
        let Ok(reading) = reading else {
            return Vec::new();
        };
        let mut here = vec![false; args.len()];
        for &i in reading.text.iter().chain(&reading.script_operand(grammar)) {
            if let Some(flag) = here.get_mut(i) {
                *flag = true;
            }
        }
        for (flag, here) in text.iter_mut().zip(here) {
            *flag &= here;
        }
    }
    text
}

/// The working program, and which of its arguments are text values.
#[derive(Clone, Copy)]
struct Work<'a> {
    segment: &'a Segment,
    text: &'a [bool],
}

/// The working directory and every path-like part of the working program's
/// arguments (not its text values), judged under one budget. Returns the
/// real working directory and the lookups spent.
fn judge_paths(
    policy: &ShellPolicy,
    paths: &PathPolicy,
    fs: &dyn FileSystem,
    argv: &[String],
    Work {
        segment: work,
        text: text_args,
    }: Work<'_>,
    cwd_spelling: &str,
    when: Conditions,
) -> Result<(PathBuf, u64), ShellError> {
    let rules = policy.rules.get(&work.identity);
    let text = rules.is_some_and(|r| r.arguments == Arguments::Text);
    let access = match rules.map(|r| r.access) {
        Some(ArgumentAccess::Write) => Access::Write,
        Some(ArgumentAccess::List) => Access::List,
        _ => Access::Read,
    };
    let args = argv.get(work.start + 1..work.end).unwrap_or_default();
    let targets = match rules {
        Some(r) if !text => copy_targets(r, args, when, &work.identity)?,
        _ => Vec::new(),
    };
    // What a subcommand writes (`git clone URL DIR`), judged for writing.
    let written = match rules {
        Some(r) if !text => subcommand_writes(r, args, when, &work.identity, cwd_spelling)?,
        _ => Written::default(),
    };
    // Paths inside arguments (`git show HEAD:.env`, `file://` remotes),
    // and the local remote a `git push` writes.
    let inside = match rules {
        Some(r) if !text => paths_inside(r, args, text_args, when, &work.identity)?,
        _ => Inside::default(),
    };
    let writes: HashSet<&str> = written
        .operands
        .iter()
        .copied()
        .chain(written.named.iter().map(|(_, name)| name.as_str()))
        .chain(inside.writes.iter().map(|(_, name)| name.as_str()))
        .collect();
    // Every distinct spelling once, with the argument it came from.
    let mut seen = HashSet::new();
    let mut spellings: Vec<(&str, &str)> = Vec::new();
    let mut parts = Vec::new();
    let mut cost = paths.spelled_cost(cwd_spelling);
    if !text {
        let bundled = rules.is_some_and(|r| r.bundled_first);
        let mut all: Vec<(&str, &str)> = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            if text_args.get(i) == Some(&true) {
                continue;
            }
            parts.clear();
            path_spellings(rules, arg, bundled && i == 0, when, &mut parts);
            all.extend(parts.iter().map(|part| (arg.as_str(), *part)));
        }
        // A copy's `DIR/<name>` targets, judged like the arguments, and
        // what a subcommand writes without naming it.
        all.extend(targets.iter().map(|(arg, target)| (*arg, target.as_str())));
        all.extend(
            written
                .named
                .iter()
                .chain(&inside.reads)
                .chain(&inside.writes)
                .map(|(arg, name)| (*arg, name.as_str())),
        );
        for (arg, part) in all {
            // `/dev/null` and the standard streams are accepted in every
            // argument check (see `crate::devices`).
            if devices::is_accepted_device(part) {
                continue;
            }
            if seen.insert(part) {
                cost = cost.saturating_add(paths.spelled_cost(part));
                if cost > LOOKUP_BUDGET {
                    return Err(ShellError::TooCostly {
                        bound: cost,
                        budget: LOOKUP_BUDGET,
                    });
                }
                spellings.push((arg, part));
            }
        }
    }

    let mut budget = Budget::new(LOOKUP_BUDGET);
    let base: &Path = &policy.working_directory;
    let cwd = paths
        .check_within(fs, base, cwd_spelling, Access::List, &mut budget)
        .map_err(|source| match source {
            PathError::TooCostly { .. } => too_costly(&budget),
            source if source.is_refusal() => ShellError::WorkingDirectory {
                cwd: PathBuf::from(cwd_spelling),
                source: Box::new(source),
            },
            source => ShellError::PathIo {
                spelling: cwd_spelling.to_owned(),
                source: Box::new(source),
            },
        })?
        .location()
        .to_path_buf();
    for (argument, spelling) in spellings {
        let access = if writes.contains(spelling) {
            Access::Write
        } else {
            access
        };
        paths
            .check_within(fs, &cwd, spelling, access, &mut budget)
            .map_err(|source| match source {
                PathError::TooCostly { .. } => too_costly(&budget),
                source if source.is_refusal() => ShellError::Path {
                    argument: argument.to_owned(),
                    spelling: spelling.to_owned(),
                    source: Box::new(source),
                },
                source => ShellError::PathIo {
                    spelling: spelling.to_owned(),
                    source: Box::new(source),
                },
            })?;
    }
    Ok((cwd, budget.spent()))
}

/// For a copy-like program, the `DIR/<name>` each source is written to
/// (with the source it comes from): `cp config .git/` writes `.git/config`,
/// and, since `--parents` and `rsync -R` keep directories, `DIR/<tail>` for
/// every tail of the source at a separator.
fn copy_targets<'a>(
    rules: &'a ProgramRules,
    args: &'a [String],
    when: Conditions,
    program: &str,
) -> Result<Vec<(&'a str, String)>, ShellError> {
    let Some(grammar) = rules.grammar.as_ref().filter(|_| rules.copy) else {
        return Ok(Vec::new());
    };
    let Ok(reading) = grammar::read(
        grammar,
        &rules.refuse,
        when,
        args,
        rules.bundled_first,
        false,
    ) else {
        return Ok(Vec::new());
    };
    let Some((dir, sources)) = reading.copy(grammar) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for source in sources {
        let trimmed = source.trim_end_matches(['/', '\\']);
        let name = trimmed.rsplit(['/', '\\']).next().unwrap_or(trimmed);
        // `rsync -a src/ dst` copies what `src` holds into `dst`, as `cp -r
        // src dst` does when `dst` is new: judged like it (`dst` and
        // `dst/src`). Into a directory that may already hold files that
        // run code (the working directory, a `.git`, any spelling that
        // leaves the directory or starts at `/`), the names it lands under
        // cannot be judged here.
        let contents = trimmed.len() != source.len();
        if name.is_empty()
            || name == "."
            || name == ".."
            || (contents && !contents_may_land_in(dir))
        {
            return Err(ShellError::CopyContents {
                program: program.to_owned(),
                source_spelling: source.to_owned(),
                target: dir.to_owned(),
            });
        }
        let dir = dir.trim_end_matches(['/', '\\']);
        // `cp --parents a/b DIR` writes DIR/a/b and `rsync -R a/./b DIR`
        // writes DIR/b: every tail of the source at a separator is judged
        // under DIR, its name alone included.
        let tails = std::iter::once(trimmed).chain(
            trimmed
                .match_indices(['/', '\\'])
                .filter_map(|(at, _)| trimmed.get(at + 1..))
                .filter(|tail| !tail.is_empty()),
        );
        for tail in tails {
            out.push((source, format!("{dir}/{tail}")));
        }
    }
    Ok(out)
}

/// Paths inside a program's arguments (see [`crate::git_paths`]), with
/// the argument each comes from.
#[derive(Debug, Default)]
struct Inside<'a> {
    reads: Vec<(&'a str, String)>,
    writes: Vec<(&'a str, String)>,
}

/// Paths inside a program's arguments: the path parts of git's object
/// names and `file://` URLs ([`crate::git_paths`]), the files named in
/// option values ([`crate::value_files`], [`Grammar::written`]), and, for
/// a subcommand that writes its remote (`git push`), the local directory
/// its first operand or `--repo` names. Text values are skipped.
fn paths_inside<'a>(
    rules: &'a ProgramRules,
    args: &'a [String],
    text_args: &[bool],
    when: Conditions,
    program: &str,
) -> Result<Inside<'a>, ShellError> {
    let mut out = Inside::default();
    for (i, arg) in args.iter().enumerate() {
        if text_args.get(i) == Some(&true) {
            continue;
        }
        if rules.object_names {
            out.reads.extend(
                git_paths::paths_in(arg)
                    .into_iter()
                    .map(|p| (arg.as_str(), p)),
            );
        }
        if rules.file_urls {
            let value = arg.split_once('=').map(|(_, v)| v);
            for url in std::iter::once(arg.as_str()).chain(value) {
                let Some(paths) = git_paths::file_url_paths(url) else {
                    continue;
                };
                if url.contains(['{', '[']) {
                    return Err(pattern_refusal(program, arg, "file://"));
                }
                out.writes
                    .extend(paths.into_iter().map(|p| (arg.as_str(), p)));
            }
        }
    }
    let Some(grammar) = rules.grammar.as_ref() else {
        return Ok(out);
    };
    let values_name_files = !(grammar.at_files.is_empty()
        && grammar.form_files.is_empty()
        && grammar.written.is_empty()
        && grammar.patterns.is_empty());
    if values_name_files {
        let listed = |list: &[String], entry: &str| list.iter().any(|e| e == entry);
        for reading in every_reading(rules, grammar, args, when) {
            let Ok(reading) = reading else {
                continue;
            };
            for &(entry, value) in &reading.values {
                if listed(&grammar.patterns, entry) && value.contains(['{', '[']) {
                    return Err(pattern_refusal(program, value, entry));
                }
                if listed(&grammar.at_files, entry) {
                    out.reads
                        .extend(value_files::after_at(value).map(|f| (value, f.to_owned())));
                }
                if listed(&grammar.form_files, entry) {
                    out.reads.extend(
                        value_files::form_files(value)
                            .into_iter()
                            .map(|f| (value, f.to_owned())),
                    );
                }
                if listed(&grammar.written, entry) {
                    out.writes.push((value, value.to_owned()));
                }
            }
        }
    }
    let Some((sub, _, rest)) = subcommand_of(rules, args, when).filter(|(s, ..)| s.writes_remote)
    else {
        return Ok(out);
    };
    let Some(inner) = &sub.grammar else {
        return Ok(out);
    };
    let Ok(sub_reading) = grammar::read(inner, &sub.refuse, when, rest, false, false) else {
        return Ok(out);
    };
    let remotes = sub_reading
        .values
        .iter()
        .filter(|(entry, _)| *entry == "--repo")
        .map(|(_, value)| *value)
        .chain(sub_reading.operands.first().copied());
    for remote in remotes {
        for path in git_paths::pushed_path(remote).unwrap_or_default() {
            out.writes.push((remote, path));
        }
    }
    Ok(out)
}

/// The program's arguments read with its grammar, under every reading:
/// both ways for programs with `either` options (BSD `sed -l` vs GNU `sed
/// -l N`).
fn every_reading<'a>(
    rules: &'a ProgramRules,
    grammar: &'a Grammar,
    args: &'a [String],
    when: Conditions,
) -> impl Iterator<Item = Result<grammar::Reading<'a>, Problem<'a>>> {
    let readings: &[bool] = if grammar.either.is_empty() {
        &[false]
    } else {
        &[false, true]
    };
    readings.iter().map(move |&either| {
        grammar::read(
            grammar,
            &rules.refuse,
            when,
            args,
            rules.bundled_first,
            either,
        )
    })
}

fn pattern_refusal(program: &str, argument: &str, option: &str) -> ShellError {
    ShellError::RefusedOption {
        program: program.to_owned(),
        argument: argument.to_owned(),
        option: option.to_owned(),
        reason: "names files by a pattern the program expands (`{a,b}`, `[1-3]`), which cannot \
                 be judged; name each file"
            .to_owned(),
    }
}

/// The listed subcommand of a program with subcommands, its name and the
/// arguments after it. `None` when the options do not read (refused
/// before) or there is none.
fn subcommand_of<'a>(
    rules: &'a ProgramRules,
    args: &'a [String],
    when: Conditions,
) -> Option<(&'a Subcommand, &'a str, &'a [String])> {
    let grammar = rules
        .grammar
        .as_ref()
        .filter(|g| !g.subcommands.is_empty())?;
    let reading = grammar::read(grammar, &rules.refuse, when, args, false, false).ok()?;
    let at = reading.subcommand?;
    let name = args.get(at).map(String::as_str).unwrap_or_default();
    let sub = grammar.subcommands.iter().find(|s| s.name == name)?;
    Some((sub, name, args.get(at + 1..).unwrap_or_default()))
}

/// Whether a directory's contents may be copied into `dir` (see
/// [`copy_targets`]): a relative spelling, below the working directory,
/// outside any `.git`.
fn contents_may_land_in(dir: &str) -> bool {
    let mut below = false;
    for component in dir.split(['/', '\\']) {
        match component {
            "" | "." => {}
            ".." => return false,
            _ => below = true,
        }
    }
    below && !dir.starts_with(['/', '\\']) && !inside_git_dir(dir) && !dir.contains(':')
}

/// What a subcommand writes: operands that name it, and names it writes
/// without the command line spelling them (with the argument they come
/// from).
#[derive(Debug, Default)]
struct Written<'a> {
    operands: Vec<&'a str>,
    named: Vec<(&'a str, String)>,
}

/// For a program with subcommands, what the subcommand writes (see
/// [`crate::rules::Subcommand::writes_from`]). A command whose options do
/// not read has been refused before; it writes nothing here.
fn subcommand_writes<'a>(
    rules: &'a ProgramRules,
    args: &'a [String],
    when: Conditions,
    program: &str,
    cwd_spelling: &str,
) -> Result<Written<'a>, ShellError> {
    let mut out = Written::default();
    let Some((sub, name, rest)) = subcommand_of(rules, args, when) else {
        return Ok(out);
    };
    let Some(from) = sub.writes_from else {
        return Ok(out);
    };
    let operands: Vec<&str> = match &sub.grammar {
        Some(inner) => match grammar::read(inner, &sub.refuse, when, rest, false, false) {
            Ok(reading) => reading.operands,
            Err(_) => return Ok(out),
        },
        // No grammar to tell values from operands: every argument that is
        // not an option.
        None => rest
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect(),
    };
    let in_git_dir = |argument: &str, spelling: &str, at: usize| {
        if sub.writes_repository && inside_git_dir(spelling) {
            Err(ShellError::RefusedOption {
                program: format!("{program} {name}"),
                argument: argument.to_owned(),
                option: format!("operand {}", at + 1),
                reason: "puts a repository or a work tree inside a `.git` directory, where git \
                         reads names as its own configuration and hooks; choose a directory \
                         outside `.git`"
                    .to_owned(),
            })
        } else {
            Ok(())
        }
    };
    match operands.get(from..) {
        Some(written) if !written.is_empty() => {
            for (i, operand) in written.iter().enumerate() {
                if is_pattern(operand) {
                    return Err(ShellError::RefusedOption {
                        program: format!("{program} {name}"),
                        argument: (*operand).to_owned(),
                        option: format!("operand {}", from + i + 1),
                        reason: "is a pathspec pattern: git writes every file it matches, which \
                                 the command line does not name; name the files"
                            .to_owned(),
                    });
                }
                in_git_dir(operand, &format!("{cwd_spelling}/{operand}"), from + i)?;
            }
            out.operands.extend(written);
        }
        _ => match sub.writes_default {
            None => {}
            Some(DefaultWrite::WorkingDirectory) => {
                in_git_dir(cwd_spelling, cwd_spelling, from)?;
                out.named.push((name, ".".to_owned()));
            }
            Some(DefaultWrite::SourceName) => {
                let source = operands.first().copied().unwrap_or_default();
                match source_name(source) {
                    Some(dir) => {
                        in_git_dir(source, &format!("{cwd_spelling}/{dir}"), from)?;
                        out.named.push((source, dir));
                    }
                    None => {
                        return Err(ShellError::RefusedOption {
                            program: format!("{program} {name}"),
                            argument: source.to_owned(),
                            option: format!("operand {}", from + 1),
                            reason: "writes a directory whose name cannot be told from the \
                                     source; name the directory to write"
                                .to_owned(),
                        });
                    }
                }
            }
        },
    }
    Ok(out)
}

/// Whether git reads `operand` as a pathspec pattern rather than one name:
/// glob characters, or `:` magic (`:(glob)…`, `:!x`, `:/x`).
fn is_pattern(operand: &str) -> bool {
    operand.starts_with(':') || operand.contains(['*', '?', '['])
}

/// Whether a component of `spelling` names a `.git` directory as git or
/// Windows would read it: any case, trailing dots and spaces, a `:stream`,
/// or its 8.3 short name (`GIT~1`).
fn inside_git_dir(spelling: &str) -> bool {
    spelling.split(['/', '\\']).any(|component| {
        let name = component.split(':').next().unwrap_or(component);
        let name = name.trim_end_matches(['.', ' ']).to_ascii_lowercase();
        name == ".git" || name.strip_prefix("git~").is_some_and(|n| !n.is_empty())
    })
}

/// The directory `git clone SOURCE` creates: the last component of the
/// source (after a `/`, `\`, or the `:` of `host:path`), without a
/// trailing `/`, `/.git`, `.git` or `.bundle`. `None` when nothing is left
/// that names a directory.
fn source_name(source: &str) -> Option<String> {
    let mut rest = source.trim_end_matches(|c: char| c == '/' || c == '\\' || c.is_whitespace());
    for suffix in ["/.git", "\\.git"] {
        if let Some(stripped) = rest.strip_suffix(suffix) {
            rest = stripped.trim_end_matches(['/', '\\']);
        }
    }
    let last = rest.rsplit(['/', '\\', ':']).next().unwrap_or(rest);
    let last = last
        .strip_suffix(".git")
        .or_else(|| last.strip_suffix(".bundle"))
        .unwrap_or(last);
    match last {
        "" | "." | ".." => None,
        name => Some(name.to_owned()),
    }
}

fn too_costly(budget: &Budget) -> ShellError {
    ShellError::TooCostly {
        bound: budget.spent().max(budget.limit().saturating_add(1)),
        budget: LOOKUP_BUDGET,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_a_clone_is_named_after() {
        for (source, name) in [
            ("https://example.invalid/team/repo.git", Some("repo")),
            ("https://example.invalid/team/repo/.git/", Some("repo")),
            ("host:team/repo", Some("repo")),
            ("host:repo.git", Some("repo")),
            ("../a/b.bundle", Some("b")),
            ("sub", Some("sub")),
            ("sub\\inner", Some("inner")),
            ("https://example.invalid/x/.git.git", Some(".git")),
            ("..", None),
            ("/", None),
            ("", None),
        ] {
            assert_eq!(source_name(source).as_deref(), name, "{source}");
        }
    }

    #[test]
    fn a_git_directory_in_any_spelling() {
        for inside in [
            ".git/x",
            "./.git",
            "a/.GIT/b",
            ".git./x",
            ".git .\\x",
            ".git::$INDEX_ALLOCATION/x",
            "GIT~1/x",
            "git~2",
        ] {
            assert!(inside_git_dir(inside), "{inside}");
        }
        for outside in [".github/x", "git", ".gitx/y", "a.git/b", "git~/x", "sub"] {
            assert!(!inside_git_dir(outside), "{outside}");
        }
    }
}
