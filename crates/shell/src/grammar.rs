//! Reading a program's arguments with its allow-list grammar.
//!
//! Where a table has a [`Grammar`], every option must be one the grammar
//! lists (or, where the program accepts them, an unambiguous abbreviation
//! of one); anything else is refused as unknown, so a spelling nobody
//! modelled fails closed. Reading with the grammar also says which
//! arguments are operands and which are option values, so the script of
//! `sed`/`awk` and the target of a copy are found wherever the options put
//! them.

use crate::cluster::{Conditions, Shape, long_matches, shape};
use crate::rules::{Grammar, Kind, OptionRule, Spelling};

/// The arguments of one program, read with its grammar.
#[derive(Debug, Default)]
pub(crate) struct Reading<'a> {
    /// Operands, in order (after `--` too).
    pub(crate) operands: Vec<&'a str>,
    /// Where each operand is (an index into the arguments).
    pub(crate) operand_at: Vec<usize>,
    /// Every option met, as its grammar entry spells it.
    pub(crate) options: Vec<&'a str>,
    /// Option values, with the grammar entry of their option.
    pub(crate) values: Vec<(&'a str, &'a str)>,
    /// Where the subcommand is (an index into the arguments), for grammars
    /// with subcommands.
    pub(crate) subcommand: Option<usize>,
    /// Arguments (indices) read as the value of a `text` option, or as
    /// such an option with its value attached: never opened as files.
    pub(crate) text: Vec<usize>,
}

impl<'a> Reading<'a> {
    /// The program's scripts: the values of script options, or else the
    /// first operand.
    pub(crate) fn scripts(&self, grammar: &Grammar) -> Vec<&'a str> {
        let found: Vec<&'a str> = self
            .values
            .iter()
            .filter(|(entry, _)| grammar.scripts.iter().any(|s| s == entry))
            .map(|(_, value)| *value)
            .collect();
        if found.is_empty() {
            self.operands.first().copied().into_iter().collect()
        } else {
            found
        }
    }

    /// Where the script is when it is the first operand: no script option
    /// and no option that gives the script another way was met.
    pub(crate) fn script_operand(&self, grammar: &Grammar) -> Option<usize> {
        if grammar.scripts.is_empty() {
            return None;
        }
        let elsewhere = self.options.iter().any(|option| {
            grammar
                .scripts
                .iter()
                .chain(&grammar.script_elsewhere)
                .any(|s| s == option)
        });
        if elsewhere {
            None
        } else {
            self.operand_at.first().copied()
        }
    }

    /// The directory a copy writes into, and its sources.
    pub(crate) fn copy(&self, grammar: &Grammar) -> Option<(&'a str, Vec<&'a str>)> {
        let target = self
            .values
            .iter()
            .rev()
            .find(|(entry, _)| grammar.target.iter().any(|t| t == entry))
            .map(|(_, value)| *value);
        match target {
            Some(dir) => Some((dir, self.operands.clone())),
            None => match self.operands.split_last() {
                Some((dir, sources)) if !sources.is_empty() => Some((dir, sources.to_vec())),
                _ => None,
            },
        }
    }
}

/// Why a grammar does not accept an argument.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Problem<'a> {
    /// An option the grammar does not list (or an ambiguous abbreviation).
    Unknown {
        /// The argument that holds it.
        argument: &'a str,
        /// The option as read.
        option: String,
    },
    /// A refused option found where only the grammar can see it (the value
    /// of `awk -W`).
    Refused {
        /// The argument that holds it.
        argument: &'a str,
        /// The rule.
        rule: &'a OptionRule,
    },
}

/// Read `args` (the program's arguments, without `argv[0]`) with `grammar`.
/// `either_value` chooses the reading of the grammar's `either` options.
pub(crate) fn read<'a>(
    grammar: &'a Grammar,
    refuse: &'a [OptionRule],
    when: Conditions,
    args: &'a [String],
    bundled_first: bool,
    either_value: bool,
) -> Result<Reading<'a>, Problem<'a>> {
    let words = grammar.index().has_words();
    let takes = |kind: Kind| match kind {
        Kind::Value => true,
        Kind::Either => either_value,
        Kind::Flag | Kind::Optional => false,
    };
    // A script (`sed -e`, `grep -e`) is text as well.
    let is_text = |entry: &str| {
        grammar
            .text
            .iter()
            .chain(&grammar.scripts)
            .any(|t| t == entry)
    };
    let mut out = Reading::default();
    let mut pending: Vec<&'a str> = Vec::new();
    let mut options_done = false;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if !pending.is_empty() {
            let entry = pending.remove(0);
            out.values.push((entry, arg.as_str()));
            if is_text(entry) {
                out.text.push(i - 1);
            }
            continue;
        }
        if options_done {
            out.operands.push(arg);
            out.operand_at.push(i - 1);
            if !grammar.subcommands.is_empty() {
                // `git -- log`: the subcommand comes after `--` too.
                out.subcommand = Some(i - 1);
                return Ok(out);
            }
            continue;
        }
        if arg == "--" {
            options_done = true;
            continue;
        }
        if words && arg.len() > 1 && arg.starts_with('-') && !arg.starts_with("--") {
            // Single-dash words (`find -name`) are matched whole, never as
            // clusters.
            let Some((entry, kind)) = word(grammar, arg) else {
                return Err(Problem::Unknown {
                    argument: arg,
                    option: arg.clone(),
                });
            };
            out.options.push(entry);
            if let Some(next) = args.get(i).filter(|_| takes(kind)) {
                out.values.push((entry, next));
                if is_text(entry) {
                    out.text.push(i);
                }
                i += 1;
            }
            continue;
        }
        let old_style = bundled_first && i == 1 && !arg.starts_with('-');
        match shape(arg, old_style) {
            Shape::Operand => {
                out.operands.push(arg);
                out.operand_at.push(i - 1);
                if !grammar.subcommands.is_empty() {
                    out.subcommand = Some(i - 1);
                    return Ok(out);
                }
            }
            Shape::Long { name, value } => {
                let Some((entry, kind)) = long(grammar, name, grammar.abbreviations) else {
                    return Err(Problem::Unknown {
                        argument: arg,
                        option: format!("--{name}"),
                    });
                };
                out.options.push(entry);
                match (kind, value) {
                    (Kind::Flag, Some(_)) => {
                        return Err(Problem::Unknown {
                            argument: arg,
                            option: format!("--{name}=…"),
                        });
                    }
                    (_, Some(value)) => {
                        out.values.push((entry, value));
                        if is_text(entry) {
                            out.text.push(i - 1);
                        }
                    }
                    (kind, None) if takes(kind) => {
                        if let Some(next) = args.get(i) {
                            out.values.push((entry, next));
                            if is_text(entry) {
                                out.text.push(i);
                            }
                            i += 1;
                        }
                    }
                    (_, None) => {}
                }
            }
            Shape::Cluster(body) => {
                for (at, c) in body.char_indices() {
                    let rest = body.get(at + c.len_utf8()..).unwrap_or("");
                    if grammar.digits && c.is_ascii_digit() {
                        continue;
                    }
                    if grammar.long_via == Some(c) {
                        let value = if rest.is_empty() {
                            i += 1;
                            args.get(i - 1).map(String::as_str)
                        } else {
                            Some(rest)
                        };
                        if let Some(value) = value {
                            let next = via(
                                grammar,
                                refuse,
                                when,
                                (arg, c, value),
                                args.get(i),
                                either_value,
                            )?;
                            out.options.push(next.0);
                            if let Some(v) = next.1 {
                                out.values.push((next.0, v));
                            }
                            if next.2 {
                                i += 1;
                            }
                            if next.1.is_some() && is_text(next.0) {
                                out.text.push(i - 1);
                            }
                        }
                        break;
                    }
                    let Some((entry, kind)) = short(grammar, c) else {
                        return Err(Problem::Unknown {
                            argument: arg,
                            option: format!("-{c}"),
                        });
                    };
                    out.options.push(entry);
                    if old_style {
                        // `tar cvf NAME`: each value letter takes the next
                        // argument, in order.
                        if takes(kind) {
                            pending.push(entry);
                        }
                        continue;
                    }
                    match kind {
                        Kind::Optional => {
                            if !rest.is_empty() {
                                out.values.push((entry, rest));
                                if is_text(entry) {
                                    out.text.push(i - 1);
                                }
                            }
                            break;
                        }
                        kind if takes(kind) => {
                            if rest.is_empty() {
                                if let Some(next) = args.get(i) {
                                    out.values.push((entry, next));
                                    if is_text(entry) {
                                        out.text.push(i);
                                    }
                                    i += 1;
                                }
                            } else {
                                out.values.push((entry, rest));
                                if is_text(entry) {
                                    out.text.push(i - 1);
                                }
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The value of `-W` read as a long option: (entry, its value, whether the
/// next argument was taken as the value).
fn via<'a>(
    grammar: &'a Grammar,
    refuse: &'a [OptionRule],
    when: Conditions,
    (arg, letter, value): (&'a str, char, &'a str),
    next: Option<&'a String>,
    either_value: bool,
) -> Result<(&'a str, Option<&'a str>, bool), Problem<'a>> {
    let (name, attached) = match value.split_once('=') {
        Some((name, v)) => (name, Some(v)),
        None => (value, None),
    };
    let hit = refuse.iter().filter(|r| when.applies(r)).find(|rule| {
        matches!(
            Spelling::parse(&rule.option),
            Some(Spelling::Long { name: refused, any_suffix }) if long_matches(name, refused, any_suffix)
        )
    });
    if let Some(rule) = hit {
        return Err(Problem::Refused {
            argument: arg,
            rule,
        });
    }
    let Some((entry, kind)) = long(grammar, name, true) else {
        return Err(Problem::Unknown {
            argument: arg,
            option: format!("-{letter} {name}"),
        });
    };
    match (kind, attached) {
        (Kind::Value, None) => Ok((entry, next.map(String::as_str), next.is_some())),
        (Kind::Either, None) if either_value => {
            Ok((entry, next.map(String::as_str), next.is_some()))
        }
        (_, attached) => Ok((entry, attached, false)),
    }
}

/// A short option of the grammar.
fn short(grammar: &Grammar, c: char) -> Option<(&str, Kind)> {
    grammar.index().short(c)
}

/// A single-dash word of the grammar, exactly.
fn word<'g>(grammar: &'g Grammar, arg: &str) -> Option<(&'g str, Kind)> {
    grammar.index().word(arg)
}

/// A long option of the grammar: exactly, or else (where abbreviations are
/// accepted) the one option `name` abbreviates.
fn long<'g>(grammar: &'g Grammar, name: &str, abbreviations: bool) -> Option<(&'g str, Kind)> {
    grammar.index().long(name, abbreviations)
}

/// The options a grammar lists, for a refusal message.
pub(crate) fn listed(grammar: &Grammar) -> Vec<String> {
    grammar.entries().map(|(e, _)| e.to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(flags: &[&str], values: &[&str]) -> Grammar {
        Grammar {
            flags: flags.iter().map(|s| (*s).to_owned()).collect(),
            values: values.iter().map(|s| (*s).to_owned()).collect(),
            abbreviations: true,
            ..Grammar::default()
        }
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    const WHEN: Conditions = Conditions {
        path_policy: true,
        windows: false,
        after_subcommand: false,
    };

    #[test]
    fn values_are_taken_attached_or_next() {
        let grammar = g(&["-n", "--quiet"], &["-l", "--line-length", "-e"]);
        let args = argv(&["-nl", "5", "--line=7", "-e", "p", "f"]);
        let r = read(&grammar, &[], WHEN, &args, false, false).unwrap();
        assert_eq!(r.operands, ["f"]);
        assert_eq!(r.values, [("-l", "5"), ("--line-length", "7"), ("-e", "p")]);
    }

    #[test]
    fn unknown_and_ambiguous_options_are_problems() {
        let grammar = g(&["--quiet", "--quit"], &[]);
        let args = argv(&["--qui"]);
        assert!(matches!(
            read(&grammar, &[], WHEN, &args, false, false),
            Err(Problem::Unknown { .. })
        ));
        let args = argv(&["-x"]);
        assert!(matches!(
            read(&grammar, &[], WHEN, &args, false, false),
            Err(Problem::Unknown { .. })
        ));
        let args = argv(&["--quiet=1"]);
        assert!(matches!(
            read(&grammar, &[], WHEN, &args, false, false),
            Err(Problem::Unknown { .. })
        ));
    }

    #[test]
    fn double_dash_ends_the_options() {
        let grammar = g(&[], &["-v"]);
        let args = argv(&["-v", "x=1", "--", "-prog", "f"]);
        let r = read(&grammar, &[], WHEN, &args, false, false).unwrap();
        assert_eq!(r.operands, ["-prog", "f"]);
    }

    #[test]
    fn the_subcommand_is_found_after_options_and_after_double_dash() {
        let mut grammar = g(&["--bare"], &["--namespace"]);
        grammar.subcommands.push(crate::rules::Subcommand {
            name: "log".to_owned(),
            ..crate::rules::Subcommand::default()
        });
        for (args, at) in [
            (argv(&["--bare", "--namespace", "n", "log", "-p"]), 3),
            (argv(&["--", "difftool", "-x"]), 1),
            (argv(&["--namespace=n", "--", "log"]), 2),
        ] {
            let r = read(&grammar, &[], WHEN, &args, false, false).unwrap();
            assert_eq!(r.subcommand, Some(at), "{args:?}");
        }
    }

    #[test]
    fn single_dash_words_are_matched_whole() {
        let grammar = g(&["-print", "-L"], &["-name"]);
        let args = argv(&["-L", ".", "-name", "-x", "-print"]);
        let r = read(&grammar, &[], WHEN, &args, false, false).unwrap();
        assert_eq!(r.values, [("-name", "-x")]);
        assert_eq!(r.operands, ["."]);
        let args = argv(&["-printf"]);
        assert!(read(&grammar, &[], WHEN, &args, false, false).is_err());
    }

    #[test]
    fn old_style_clusters_take_values_in_order() {
        let grammar = g(&["-c", "-v"], &["-f", "-b"]);
        let args = argv(&["cvfb", "a.tar", "20", "dir"]);
        let r = read(&grammar, &[], WHEN, &args, true, false).unwrap();
        assert_eq!(r.values, [("-f", "a.tar"), ("-b", "20")]);
        assert_eq!(r.operands, ["dir"]);
    }

    #[test]
    fn text_values_are_marked_attached_or_next() {
        let mut grammar = g(&["-v"], &["-d", "--chmod", "-f"]);
        grammar.text = vec!["-d".to_owned(), "--chmod".to_owned()];
        let args = argv(&[
            "-vd1:2",
            "--chmod",
            "u:x",
            "--chmod=a:b",
            "-f",
            "x:y",
            "-d",
            "3:4",
            "op:1",
        ]);
        let r = read(&grammar, &[], WHEN, &args, false, false).unwrap();
        assert_eq!(r.text, [0, 2, 3, 7]);
        assert_eq!(r.operands, ["op:1"]);
    }

    #[test]
    fn either_options_are_read_both_ways() {
        let mut grammar = g(&["-n"], &[]);
        grammar.either.push("-l".to_owned());
        let args = argv(&["-l", "5", "s"]);
        let as_flag = read(&grammar, &[], WHEN, &args, false, false).unwrap();
        let as_value = read(&grammar, &[], WHEN, &args, false, true).unwrap();
        assert_eq!(as_flag.operands, ["5", "s"]);
        assert_eq!(as_value.operands, ["s"]);
    }

    #[test]
    fn via_reads_a_long_option_and_its_refusals() {
        let mut grammar = g(&["--version"], &["--source"]);
        grammar.values.push("-W".to_owned());
        grammar.long_via = Some('W');
        let refuse = [OptionRule::new("--exec", "runs a file")];
        let args = argv(&["-W", "source", "BEGIN{}", "f"]);
        let r = read(&grammar, &refuse, WHEN, &args, false, false).unwrap();
        assert_eq!(r.values, [("--source", "BEGIN{}")]);
        assert_eq!(r.operands, ["f"]);
        for args in [argv(&["-We", "x"]), argv(&["-W", "exec", "x"])] {
            assert!(matches!(
                read(&grammar, &refuse, WHEN, &args, false, false),
                Err(Problem::Refused { .. })
            ));
        }
        let args = argv(&["-Wfoo"]);
        assert!(matches!(
            read(&grammar, &refuse, WHEN, &args, false, false),
            Err(Problem::Unknown { .. })
        ));
    }
}
