//! The validator never panics on any argv or command string, a decision is
//! stable (the same request gets the same answer twice), and every command
//! it accepts passes an independent oracle:
//!
//! - the program (after any launcher) is an allowed one;
//! - no argument holds an option its table refuses (short options anywhere
//!   in a cluster up to a text value, long options on any abbreviation,
//!   single-dash words exactly), nor, for a table with a grammar, a long
//!   option the grammar does not know or a cluster whose first letter it
//!   does not know;
//! - for a program with subcommands (git), the same of the subcommand's
//!   table for the arguments after it: none of its refused options, none
//!   its grammar does not know; the program's rules scoped to its own
//!   options judge only the arguments before the subcommand;
//! - every argument of a program whose arguments are paths lies, once its
//!   links are followed in the simulated tree, inside the root and outside
//!   the blocked entries.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentcaps_paths::{PathPolicy, SimFs};
use agentcaps_shell::{
    Arguments, CommandRequest, Grammar, OptionRule, ProgramRules, Scope, ShellPolicy, When,
};
use libfuzzer_sys::fuzz_target;

const COMMANDS: &[&str] = &[
    "sort", "grep", "find", "env", "sed", "awk", "tar", "cp", "git", "nice", "timeout",
];

/// Programs whose arguments are not paths whatever their table says.
const LAUNCHERS: &[&str] = &[
    "env", "nice", "timeout", "nohup", "stdbuf", "time", "command", "setsid",
];

struct Setup {
    policy: ShellPolicy,
    fs: SimFs,
    root: PathBuf,
    /// Links of the simulated tree: where each points.
    links: Vec<(PathBuf, PathBuf)>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let root: PathBuf = std::env::temp_dir().canonicalize().expect("temp dir");
        let policy = COMMANDS
            .iter()
            .fold(ShellPolicy::read_only(&root), |b, c| b.allow_command(*c))
            .unwrap_launchers(true)
            .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
            .build()
            .expect("policy");
        let links = vec![
            (root.join("out"), PathBuf::from("/etc")),
            (root.join("loop"), root.join("loop")),
            (root.join("up"), PathBuf::from("..")),
            (root.join("in"), PathBuf::from("sub")),
        ];
        let mut fs = SimFs::new();
        fs.add_dir(&root)
            .add_file(root.join("notes.txt"))
            .add_file(root.join(".env"))
            .add_dir(root.join("sub"))
            .add_file(root.join("sub/a.txt"))
            .add_dir("/etc")
            .add_file("/etc/passwd");
        for (link, target) in &links {
            fs.add_symlink(link, target);
        }
        Setup {
            policy,
            fs,
            root,
            links,
        }
    })
}

fn identity(word: &str) -> String {
    let name = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
        .to_lowercase();
    name.strip_suffix(".exe").map(str::to_owned).unwrap_or(name)
}

fn table<'p>(policy: &'p ShellPolicy, program: &str) -> Option<&'p ProgramRules> {
    policy
        .rules()
        .find(|t| identity(&t.name) == program || t.aliases.iter().any(|a| identity(a) == program))
}

/// Whether `arg` holds an option that `rules` refuses (the rules of the
/// command reading: anywhere, after `--` too).
fn holds_refused(rules: &ProgramRules, arg: &str, first: bool) -> Option<String> {
    holds_refused_by(
        &rules.refuse,
        rules.grammar.as_ref(),
        &rules.text_value,
        rules.bundled_first,
        false,
        arg,
        first,
    )
}

/// [`holds_refused`] for any rules and the grammar beside them;
/// `after_subcommand` leaves out the rules scoped to the program's own
/// options.
fn holds_refused_by(
    refuse: &[OptionRule],
    grammar: Option<&Grammar>,
    text_value: &[char],
    bundled_first: bool,
    after_subcommand: bool,
    arg: &str,
    first: bool,
) -> Option<String> {
    let exact_grammar_long = |name: &str| {
        grammar
            .iter()
            .flat_map(|g| {
                g.flags
                    .iter()
                    .chain(&g.values)
                    .chain(&g.optional)
                    .chain(&g.either)
            })
            .any(|e| e.strip_prefix("--") == Some(name))
    };
    for rule in refuse {
        if rule.when == When::Windows || (after_subcommand && rule.scope == Scope::BeforeSubcommand)
        {
            continue;
        }
        let option = rule.option.as_str();
        if let Some(long) = option.strip_prefix("--") {
            let (refused, any_suffix) = match long.strip_suffix('*') {
                Some(r) => (r, true),
                None => (long, false),
            };
            if let Some(given) = arg.strip_prefix("--") {
                let name = given.split('=').next().unwrap_or_default();
                if name.is_empty() {
                    continue;
                }
                let abbreviates =
                    refused.starts_with(name) || (any_suffix && name.starts_with(refused));
                if abbreviates && (name == refused || !exact_grammar_long(name)) {
                    return Some(option.to_owned());
                }
            }
        } else if option.chars().count() == 2 && option.starts_with('-') {
            let c = option.chars().nth(1).unwrap_or_default();
            let body = if arg.starts_with("--") || arg == "-" {
                None
            } else if let Some(body) = arg.strip_prefix('-') {
                Some(body)
            } else if first && bundled_first {
                Some(arg)
            } else {
                None
            };
            for b in body.unwrap_or_default().chars() {
                if b == c {
                    return Some(option.to_owned());
                }
                if text_value.contains(&b) {
                    break;
                }
            }
        } else if option.starts_with('-') && arg == option {
            return Some(option.to_owned());
        }
    }
    None
}

/// For a table with a grammar: an option it cannot know (a long option it
/// does not list or abbreviate, or a cluster whose first letter it does not
/// list), before `--` and before any subcommand.
fn holds_unknown(rules: &ProgramRules, args: &[String]) -> Option<String> {
    holds_unknown_in(rules.grammar.as_ref()?, rules.bundled_first, args)
}

/// [`holds_unknown`] for any grammar.
fn holds_unknown_in(grammar: &Grammar, bundled_first: bool, args: &[String]) -> Option<String> {
    let entries: Vec<&str> = grammar
        .flags
        .iter()
        .chain(&grammar.values)
        .chain(&grammar.optional)
        .chain(&grammar.either)
        .map(String::as_str)
        .collect();
    let words = entries
        .iter()
        .any(|e| e.len() > 2 && e.starts_with('-') && !e.starts_with("--"));
    let takes_value =
        |e: &str| grammar.values.iter().any(|v| v == e) || grammar.either.iter().any(|v| v == e);
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            return None;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            let exact: Vec<&&str> = entries
                .iter()
                .filter(|e| e.strip_prefix("--") == Some(name))
                .collect();
            let prefixed: Vec<&&str> = entries
                .iter()
                .filter(|e| {
                    e.strip_prefix("--")
                        .is_some_and(|full| full.starts_with(name))
                })
                .collect();
            let resolved = match (exact.as_slice(), prefixed.as_slice()) {
                ([one], _) => Some(**one),
                ([], [one]) if grammar.abbreviations => Some(**one),
                _ => None,
            };
            let Some(entry) = resolved else {
                return Some(arg.clone());
            };
            if !long.contains('=') && takes_value(entry) {
                i += 1;
            }
        } else if let Some(body) = arg.strip_prefix('-').filter(|b| !b.is_empty()) {
            if words {
                if !entries.contains(&arg.as_str()) {
                    return Some(arg.clone());
                }
                if takes_value(arg) {
                    i += 1;
                }
                continue;
            }
            let first = body.chars().next().unwrap_or_default();
            let short = format!("-{first}");
            let known = entries.contains(&short.as_str())
                || (grammar.digits && first.is_ascii_digit())
                || grammar.long_via == Some(first);
            if !known {
                return Some(arg.clone());
            }
            // Values are located by the validator; stop at the first value
            // option rather than model them here.
            if body.chars().any(|c| {
                let s = format!("-{c}");
                takes_value(&s) || grammar.optional.contains(&s) || grammar.long_via == Some(c)
            }) {
                return None;
            }
        } else if !grammar.subcommands.is_empty() || (i == 1 && bundled_first) {
            return None;
        }
    }
    None
}

/// Where a program's subcommand is: its first operand, read with the
/// program's own grammar (`git --namespace n log`: 2). `None` when there is
/// none or the options cannot be read simply (a cluster holding a value
/// option).
fn subcommand_at(grammar: &Grammar, args: &[String]) -> Option<usize> {
    let takes_value = |e: &str| grammar.values.iter().any(|v| v == e);
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            return args.get(i + 1).map(|_| i + 1);
        }
        if let Some(long) = arg.strip_prefix("--") {
            if !long.contains('=') && takes_value(arg) {
                i += 1;
            }
        } else if let Some(body) = arg.strip_prefix('-').filter(|b| !b.is_empty()) {
            if body.chars().any(|c| takes_value(&format!("-{c}"))) {
                return None;
            }
        } else {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// For a program with subcommands: an argument after the subcommand that
/// holds an option the subcommand refuses, one the program refuses
/// anywhere, or one the subcommand's grammar does not know.
fn holds_after_subcommand(rules: &ProgramRules, args: &[String]) -> Option<String> {
    let grammar = rules.grammar.as_ref()?;
    let at = subcommand_at(grammar, args)?;
    let name = args.get(at)?;
    let sub = grammar.subcommands.iter().find(|s| &s.name == name)?;
    let rest = args.get(at + 1..).unwrap_or_default();
    let inner = sub.grammar.as_deref();
    for arg in rest {
        let hit =
            holds_refused_by(&sub.refuse, inner, &[], false, true, arg, false).or_else(|| {
                holds_refused_by(
                    &rules.refuse,
                    inner,
                    &rules.text_value,
                    false,
                    true,
                    arg,
                    false,
                )
            });
        if hit.is_some() {
            return hit;
        }
    }
    holds_unknown_in(inner?, false, rest)
}

/// Where `spelling` (relative to the root) really is, following the
/// simulated tree's links; `None` for a loop.
fn real_location(s: &Setup, spelling: &str) -> Option<PathBuf> {
    let mut pending: Vec<String> = spelling.split('/').rev().map(str::to_owned).collect();
    let mut at = if spelling.starts_with('/') {
        PathBuf::from("/")
    } else {
        s.root.clone()
    };
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        match part.as_str() {
            "" | "." => {}
            ".." => {
                at.pop();
            }
            name => {
                let next = at.join(name);
                match s.links.iter().find(|(link, _)| *link == next) {
                    Some((_, target)) => {
                        hops += 1;
                        if hops > 40 {
                            return None;
                        }
                        let text = target.to_string_lossy().into_owned();
                        if target.is_absolute() {
                            at = PathBuf::from("/");
                        }
                        pending.extend(text.split('/').rev().map(str::to_owned));
                    }
                    None => at = next,
                }
            }
        }
    }
    Some(at)
}

fn blocked(location: &Path) -> bool {
    location.starts_with("/proc")
        || location.starts_with("/sys")
        || location.starts_with("/dev")
        || location.components().any(|c| {
            let name = c.as_os_str().to_string_lossy();
            name.starts_with(".env")
                || name.ends_with(".pem")
                || name.starts_with("id_rsa")
                || name == ".ssh"
                || name == ".aws"
        })
}

fn oracle(s: &Setup, request: &[String], accepted: &[String]) {
    // The program that does the work: the last word the validator replaced
    // with a found path (a launcher's inner program), else argv[0].
    let start = (1..accepted.len())
        .rev()
        .find(|&i| {
            accepted.get(i).is_some_and(|w| Path::new(w).is_absolute())
                && request.get(i) != accepted.get(i)
        })
        .unwrap_or(0);
    // The validator puts the allowed name (or the found path) in place of
    // the word asked for (`cat ` and `CAT` name `cat`).
    let program = identity(accepted.get(start).map(String::as_str).unwrap_or_default());
    assert!(
        s.policy
            .allowed_commands()
            .iter()
            .any(|c| identity(c) == program),
        "accepted a program that is not allowed: {request:?}"
    );
    let args = request.get(start + 1..).unwrap_or_default();
    let rules = table(&s.policy, &program);
    if let Some(rules) = rules {
        // With subcommands, the program's table judges the arguments up to
        // the subcommand; the subcommand's, those after it.
        let own = match rules.grammar.as_ref().filter(|g| !g.subcommands.is_empty()) {
            Some(grammar) => subcommand_at(grammar, args).map_or(args.len(), |at| at + 1),
            None => args.len(),
        };
        for (i, arg) in args.iter().enumerate().take(own) {
            if let Some(option) = holds_refused(rules, arg, i == 0) {
                panic!("accepted {request:?} although `{arg}` holds the refused {option}");
            }
        }
        if let Some(option) = holds_after_subcommand(rules, args) {
            panic!("accepted {request:?} although {option} follows the subcommand");
        }
        if let Some(arg) = holds_unknown(rules, args) {
            panic!("accepted {request:?} although `{arg}` is unknown to {program}'s grammar");
        }
    }
    let text = LAUNCHERS.contains(&program.as_str())
        || rules.is_some_and(|r| r.arguments == Arguments::Text)
        || ["echo", "pwd", "date", "whoami", "which"].contains(&program.as_str());
    if text {
        return;
    }
    for arg in args {
        if let Some(location) = real_location(s, arg) {
            assert!(
                location.starts_with(&s.root) && !blocked(&location),
                "accepted {request:?} although `{arg}` is at {}",
                location.display()
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = setup();
    let request = match text.strip_prefix('!') {
        Some(line) => CommandRequest::line(line),
        None => CommandRequest::argv(text.split('\0')),
    };
    let first = s.policy.validate_on(&s.fs, &request);
    let second = s.policy.validate_on(&s.fs, &request);
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a.argv(), b.argv()),
        (Err(a), Err(b)) => {
            assert_eq!(a.rule(), b.rule());
            assert_eq!(a.to_string(), b.to_string());
        }
        _ => panic!("the decision changed between two identical requests"),
    }
    if let Ok(accepted) = &first {
        let words: Vec<String> = match text.strip_prefix('!') {
            Some(line) => agentcaps_shell::split(line).unwrap_or_default(),
            None => text.split('\0').map(str::to_owned).collect(),
        };
        oracle(s, &words, accepted.argv());
    }
});
