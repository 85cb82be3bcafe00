//! Option lists built from the grammar tables themselves: for a program
//! with an allow-list grammar (not `git`, whose subcommands have their own
//! target), the input bytes choose options the grammar lists — short ones
//! alone or clustered, long ones whole or abbreviated (where the program
//! accepts abbreviations), with their values attached or separate — mixed
//! with mutated spellings no grammar knows (a letter it does not list, a
//! long name with a tail, a flag given `=value`, an unknown single-dash
//! word) and a `--` somewhere. The oracle:
//!
//! - a command holding an unknown option (before `--`) is refused, and, when
//!   nothing in it is refused by the table's rules, refused as
//!   `unknown-option`;
//! - a command of known options only, none of them refused by a rule (nor
//!   possibly, by abbreviation), is never refused as `unknown-option`.
//!
//! For `sed` and `awk` the first operand is, where a choice says so, a
//! script of the programs' own grammars (labels, `v`, regexes after
//! `print`, `~`, `(`: the generator of `shared/script_gen.rs`), placed
//! before the options: with or without the attack command in it, the
//! options around it read the same, the harmless script is never the one
//! refused, and — unless an option may have made the script come from
//! elsewhere (`-e`, `--source`, `-f`) — the script with the attack is
//! refused.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use agentcaps_paths::{PathPolicy, SimFs};
use agentcaps_shell::ShellError;
use agentcaps_shell::{CommandRequest, Grammar, ProgramRules, ShellPolicy, When};
use libfuzzer_sys::fuzz_target;

// The whole-script `generate` is the other target's.
#[allow(dead_code)]
#[path = "shared/script_gen.rs"]
mod script_gen;

struct Setup {
    policy: ShellPolicy,
    fs: SimFs,
    /// The programs with a grammar this target builds commands for.
    programs: Vec<ProgramRules>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let root: PathBuf = std::env::temp_dir().canonicalize().expect("temp dir");
        let base = ShellPolicy::read_only(&root)
            .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
            .build()
            .expect("policy");
        let programs: Vec<ProgramRules> = base
            .rules()
            .filter(|t| t.grammar.as_ref().is_some_and(|g| g.subcommands.is_empty()))
            .cloned()
            .collect();
        let policy = programs
            .iter()
            .fold(ShellPolicy::read_only(&root), |b, t| {
                b.allow_command(t.name.clone())
            })
            .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
            .build()
            .expect("policy");
        let mut fs = SimFs::new();
        fs.add_dir(&root).add_file(root.join("notes.txt"));
        Setup {
            policy,
            fs,
            programs,
        }
    })
}

/// The input, read as a stream of choices.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }

    fn pick<'t, T>(&mut self, items: &'t [T]) -> Option<&'t T> {
        if items.is_empty() {
            return None;
        }
        let at = usize::from(self.byte()?) % items.len();
        items.get(at)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flag,
    Value,
    Optional,
    Either,
}

fn entries(g: &Grammar) -> Vec<(&str, Kind)> {
    g.flags
        .iter()
        .map(|e| (e.as_str(), Kind::Flag))
        .chain(g.values.iter().map(|e| (e.as_str(), Kind::Value)))
        .chain(g.optional.iter().map(|e| (e.as_str(), Kind::Optional)))
        .chain(g.either.iter().map(|e| (e.as_str(), Kind::Either)))
        .collect()
}

fn is_word(e: &str) -> bool {
    e.len() > 2 && e.starts_with('-') && !e.starts_with("--")
}

/// Whether the spelling `given` (one option, as emitted) could be refused
/// by one of the table's rules: a short letter equal to a rule's anywhere
/// in a cluster, a long name that is a rule's or abbreviates one, a word
/// (in a grammar of words) equal to one.
fn maybe_refused(rules: &ProgramRules, given: &str) -> bool {
    let words = rules
        .grammar
        .as_ref()
        .is_some_and(|g| entries(g).iter().any(|(e, _)| is_word(e)));
    rules
        .refuse
        .iter()
        .filter(|r| r.when != When::Windows)
        .any(|r| {
            let rule = r.option.trim_end_matches('*');
            if let Some(name) = given.strip_prefix("--") {
                let name = name.split('=').next().unwrap_or_default();
                rule.strip_prefix("--")
                    .is_some_and(|full| full.starts_with(name) || name.starts_with(full))
            } else if words || is_word(rule) {
                given == rule
            } else {
                // A cluster: any of its letters.
                let letter = rule.strip_prefix('-').filter(|l| l.chars().count() == 1);
                letter.is_some_and(|l| given.trim_start_matches('-').contains(l))
            }
        })
}

/// The shortest prefix of `--name` that the grammar resolves to it, at
/// least `at_least` letters long.
fn abbreviation(g: &Grammar, name: &str, at_least: usize) -> String {
    let longs: Vec<&str> = entries(g)
        .iter()
        .filter_map(|(e, _)| e.strip_prefix("--"))
        .collect();
    for len in at_least.max(1)..=name.len() {
        let Some(prefix) = name.get(..len) else {
            continue;
        };
        // Another entry spelled exactly as the prefix would be read instead.
        let other = prefix != name && longs.contains(&prefix);
        let many = longs.iter().filter(|l| l.starts_with(prefix)).count();
        if prefix == name || (!other && many == 1) {
            return prefix.to_owned();
        }
    }
    name.to_owned()
}

/// Whether `name` (a long option as given) names no grammar entry, exactly
/// or (with abbreviations) by a unique prefix.
fn unknown_long(g: &Grammar, name: &str) -> bool {
    let longs: Vec<&str> = entries(g)
        .iter()
        .filter_map(|(e, _)| e.strip_prefix("--"))
        .collect();
    if longs.contains(&name) {
        return false;
    }
    !(g.abbreviations && longs.iter().filter(|l| l.starts_with(name)).count() == 1)
}

/// One command for `rules`: (argv, holds an unknown option, may hold a
/// refused one).
fn build(rules: &ProgramRules, c: &mut Choices<'_>) -> Option<(Vec<String>, bool, bool)> {
    let g = rules.grammar.as_ref()?;
    let all = entries(g);
    let words = all.iter().any(|(e, _)| is_word(e));
    let shorts: Vec<(char, Kind)> = all
        .iter()
        .filter(|(e, _)| !is_word(e) && !e.starts_with("--"))
        .filter_map(|(e, k)| e.chars().nth(1).map(|ch| (ch, *k)))
        .filter(|(ch, _)| Some(*ch) != g.long_via)
        .collect();
    let longs: Vec<(&str, Kind)> = all
        .iter()
        .filter(|(e, _)| e.starts_with("--"))
        .copied()
        .collect();
    let mut argv = vec![rules.name.clone()];
    let mut unknown = false;
    let mut refused = false;
    let mut ended = false;
    let count = usize::from(c.byte()? % 6) + 1;
    for n in 0..count {
        let choice = c.byte()? % 10;
        if ended {
            argv.push("notes.txt".to_owned());
            continue;
        }
        let before = argv.len();
        match choice {
            // A `--`: options end (never first, so `tar`'s first word
            // stays an option).
            0 if n > 0 => {
                argv.push("--".to_owned());
                ended = true;
                continue;
            }
            // A short option, or a cluster of them.
            1..=3 if !words && !shorts.is_empty() => {
                let mut body = String::new();
                let letters = usize::from(c.byte()? % 3) + 1;
                let mut separate = None;
                for _ in 0..letters {
                    let (ch, kind) = *c.pick(&shorts)?;
                    body.push(ch);
                    match kind {
                        Kind::Flag => {}
                        Kind::Optional => {
                            body.push('1');
                            break;
                        }
                        Kind::Value | Kind::Either => {
                            if kind == Kind::Value && c.byte()? % 2 == 0 {
                                body.push('1');
                            } else {
                                separate = Some("1");
                            }
                            break;
                        }
                    }
                }
                refused |= maybe_refused(rules, &format!("-{body}"));
                argv.push(format!("-{body}"));
                argv.extend(separate.map(str::to_owned));
            }
            // A long option, whole or abbreviated.
            4..=6 if !longs.is_empty() => {
                let (entry, kind) = *c.pick(&longs)?;
                let full = entry.trim_start_matches('-');
                let name = if g.abbreviations {
                    abbreviation(g, full, usize::from(c.byte()? % 8))
                } else {
                    full.to_owned()
                };
                refused |= maybe_refused(rules, &format!("--{name}"));
                match kind {
                    Kind::Flag => argv.push(format!("--{name}")),
                    Kind::Optional => argv.push(format!("--{name}=1")),
                    Kind::Value if c.byte()? % 2 == 0 => argv.push(format!("--{name}=1")),
                    Kind::Value | Kind::Either => {
                        argv.push(format!("--{name}"));
                        argv.push("1".to_owned());
                    }
                }
            }
            // A single-dash word (find).
            1..=6 if words => {
                let (entry, kind) = *c.pick(&all)?;
                refused |= maybe_refused(rules, entry);
                argv.push(entry.to_owned());
                if matches!(kind, Kind::Value | Kind::Either) {
                    argv.push("1".to_owned());
                }
            }
            // A letter the grammar does not list.
            7 if !words => {
                let letter = (b'a'..=b'z')
                    .chain(b'A'..=b'Z')
                    .map(char::from)
                    .filter(|ch| {
                        !shorts.iter().any(|(s, _)| s == ch)
                            && Some(*ch) != g.long_via
                            && !(g.digits && ch.is_ascii_digit())
                    })
                    .nth(usize::from(c.byte()? % 52));
                let Some(letter) = letter else { continue };
                // Alone, or at the end of a cluster of known flags.
                let flags: Vec<char> = shorts
                    .iter()
                    .filter(|(_, k)| *k == Kind::Flag)
                    .map(|(ch, _)| *ch)
                    .collect();
                let mut body: String = (0..c.byte()? % 3)
                    .filter_map(|_| c.pick(&flags).copied())
                    .collect();
                body.push(letter);
                refused |= maybe_refused(rules, &format!("-{body}"));
                argv.push(format!("-{body}"));
                unknown = true;
            }
            // A long name with a tail no entry has.
            8 => {
                let base = c
                    .pick(&longs)
                    .map_or("zz", |(e, _)| e.trim_start_matches('-'));
                let name = format!("{base}-qzx");
                if unknown_long(g, &name) {
                    refused |= maybe_refused(rules, &format!("--{name}"));
                    argv.push(format!("--{name}"));
                    unknown = true;
                }
            }
            // A flag given a value, or an unknown word.
            9 => {
                if words {
                    argv.push("-qzxword".to_owned());
                    unknown = true;
                } else if let Some((entry, _)) = c.pick(
                    &longs
                        .iter()
                        .filter(|(_, k)| *k == Kind::Flag)
                        .copied()
                        .collect::<Vec<_>>(),
                ) {
                    refused |= maybe_refused(rules, entry);
                    argv.push(format!("{entry}=1"));
                    unknown = true;
                }
            }
            _ => argv.push("notes.txt".to_owned()),
        }
        // `tar`'s first word must be an option for the reading above.
        if rules.bundled_first && before == 1 && !argv.get(1)?.starts_with('-') {
            return None;
        }
    }
    Some((argv, unknown, refused))
}

fuzz_target!(|data: &[u8]| {
    let s = setup();
    let mut c = Choices(data);
    let Some(rules) = c.pick(&s.programs) else {
        return;
    };
    // For sed and awk, maybe a script of their grammar first.
    let script = match (rules.name.as_str(), c.byte().map(|b| b % 2)) {
        (name @ ("sed" | "awk"), Some(0)) => {
            let mut choices = script_gen::Choices(c.0);
            let generated = if name == "sed" {
                script_gen::sed(&mut choices)
            } else {
                script_gen::awk(&mut choices)
            };
            c.0 = choices.0;
            let Some((_, safe, attacked)) = generated else {
                return;
            };
            Some((safe, attacked))
        }
        _ => None,
    };
    let Some((argv, unknown, refused)) = build(rules, &mut c) else {
        return;
    };
    if let Some((safe, attacked)) = script {
        scripted(rules, &argv, &safe, &attacked, unknown, refused);
        return;
    }
    options_oracle(&argv, unknown, refused);
});

/// The oracle on option lists (see the crate docs).
fn options_oracle(argv: &[String], unknown: bool, refused: bool) {
    let got = setup()
        .policy
        .validate_on(&setup().fs, &CommandRequest::argv(argv.to_vec()));
    if unknown {
        let err = match &got {
            Ok(_) => panic!("accepted {argv:?}, which holds an option the grammar does not know"),
            Err(err) => err,
        };
        if !refused {
            assert_eq!(err.rule(), "unknown-option", "{argv:?}: {err}");
        }
    } else if !refused {
        if let Err(err) = &got {
            assert_ne!(
                err.rule(),
                "unknown-option",
                "{argv:?}: a command of options its grammar lists: {err}"
            );
        }
    }
}

/// Whether an option of `argv` may give the script another way (`-e`,
/// `--source`, `-f`, in a cluster or abbreviated), so that the first
/// operand is data.
fn script_may_come_elsewhere(rules: &ProgramRules, argv: &[String]) -> bool {
    let Some(g) = rules.grammar.as_ref() else {
        return true;
    };
    let spellings: Vec<&String> = g.scripts.iter().chain(&g.script_elsewhere).collect();
    argv.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-'))
        .any(|given| {
            spellings.iter().any(|rule| {
                if let Some(name) = given.strip_prefix("--") {
                    let name = name.split('=').next().unwrap_or_default();
                    rule.strip_prefix("--")
                        .is_some_and(|full| full.starts_with(name) || name.starts_with(full))
                } else {
                    let letter = rule.strip_prefix('-').filter(|l| l.chars().count() == 1);
                    letter.is_some_and(|l| given.trim_start_matches('-').contains(l))
                }
            })
        })
}

/// A sed or awk command whose first operand is a generated script: the
/// options oracle holds as it does for any list, the harmless script is
/// never what is refused, and the attacked one is refused.
fn scripted(
    rules: &ProgramRules,
    argv: &[String],
    safe: &str,
    attacked: &str,
    unknown: bool,
    refused: bool,
) {
    let with = |script: &str| {
        let mut words = argv.to_vec();
        words.insert(1, script.to_owned());
        words
    };
    let safe_argv = with(safe);
    options_oracle(&safe_argv, unknown, refused);
    let got = setup()
        .policy
        .validate_on(&setup().fs, &CommandRequest::argv(safe_argv.clone()));
    if let Err(ShellError::RefusedScript { script, reason, .. }) = &got {
        assert_ne!(
            script, safe,
            "{safe_argv:?}: the harmless script was refused ({reason})"
        );
    }
    if script_may_come_elsewhere(rules, argv) {
        return;
    }
    let attacked_argv = with(attacked);
    let got = setup()
        .policy
        .validate_on(&setup().fs, &CommandRequest::argv(attacked_argv.clone()));
    assert!(
        got.is_err(),
        "accepted {attacked_argv:?}, whose script runs a command or writes a file"
    );
}
