//! Reading an argument as options: short clusters, long options with their
//! abbreviations, single-dash words and Windows switches — and which parts
//! of it a program may open as a file.
//!
//! Whatever a program's real option grammar, the reading here is the
//! conservative one: every argument that starts with `-` is read
//! as options (after `--` too), a short option is found anywhere in a
//! cluster, and a long option on any prefix of at least one letter.

use crate::budget::Parts;
use crate::rules::{Grammar, OptionRule, ProgramRules, Scope, Spelling, When};

/// The conditions that switch rules on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conditions {
    /// A path policy is set.
    pub(crate) path_policy: bool,
    /// Windows rules apply.
    pub(crate) windows: bool,
    /// The argument comes after the program's subcommand (rules scoped to
    /// the program's own options do not apply).
    pub(crate) after_subcommand: bool,
}

impl Conditions {
    pub(crate) fn applies(self, rule: &OptionRule) -> bool {
        let when = match rule.when {
            When::Always => true,
            When::PathPolicy => self.path_policy,
            When::Windows => self.windows,
        };
        when && !(self.after_subcommand && rule.scope == Scope::BeforeSubcommand)
    }

    /// The same conditions, for an argument after the subcommand or not.
    pub(crate) fn after_subcommand(self, after: bool) -> Self {
        Self {
            after_subcommand: after,
            ..self
        }
    }
}

/// How an argument reads as options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape<'a> {
    /// Not an option: no leading dash, or exactly `-` or `--`.
    Operand,
    /// `--name` or `--name=value`.
    Long {
        name: &'a str,
        value: Option<&'a str>,
    },
    /// `-abc`: the text after the dash.
    Cluster(&'a str),
}

/// Read `arg` as options. `bundled` makes a dash-less argument a cluster
/// (`tar xf`).
pub(crate) fn shape(arg: &str, bundled: bool) -> Shape<'_> {
    if arg == "-" || arg == "--" || arg.is_empty() {
        return Shape::Operand;
    }
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((name, value)) => Shape::Long {
                name,
                value: Some(value),
            },
            None => Shape::Long {
                name: long,
                value: None,
            },
        };
    }
    if let Some(body) = arg.strip_prefix('-') {
        return Shape::Cluster(body);
    }
    if bundled {
        return Shape::Cluster(arg);
    }
    Shape::Operand
}

/// The first rule of `rules` that refuses `arg`, if any.
///
/// Where the table has a grammar and `arg` spells one of its long options
/// exactly (`tar --file`), it is not read as an abbreviation of a longer
/// refused one (`--files-from`): an exact match is what the program takes.
pub(crate) fn refused<'r>(
    rules: &'r ProgramRules,
    arg: &str,
    bundled: bool,
    when: Conditions,
) -> Option<&'r OptionRule> {
    refused_with(
        &rules.refuse,
        &rules.text_value,
        rules.grammar.as_ref(),
        arg,
        bundled,
        when,
    )
}

/// [`refused`] for any list of rules and the grammar beside them (a
/// subcommand's).
pub(crate) fn refused_with<'r>(
    refuse: &'r [OptionRule],
    text_value: &[char],
    grammar: Option<&Grammar>,
    arg: &str,
    bundled: bool,
    when: Conditions,
) -> Option<&'r OptionRule> {
    let hit = refused_by(refuse, text_value, arg, bundled, when)?;
    if let (Shape::Long { name, .. }, Some(grammar)) = (shape(arg, bundled), grammar) {
        let exact = |entry: &str| entry.strip_prefix("--") == Some(name);
        let refused_exactly = |rule: &OptionRule| match Spelling::parse(&rule.option) {
            Some(Spelling::Long {
                name: r,
                any_suffix,
            }) => r == name || (any_suffix && name.starts_with(r)),
            _ => false,
        };
        if grammar.entries().any(|(e, _)| exact(e)) {
            return refuse
                .iter()
                .filter(|r| when.applies(r))
                .find(|r| refused_exactly(r));
        }
    }
    Some(hit)
}

/// The first of `refuse` that refuses `arg`, if any; `text_value` lists the
/// short options whose attached value is text.
pub(crate) fn refused_by<'r>(
    refuse: &'r [OptionRule],
    text_value: &[char],
    arg: &str,
    bundled: bool,
    when: Conditions,
) -> Option<&'r OptionRule> {
    let active = || refuse.iter().filter(move |r| when.applies(r));
    // Single-dash words and Windows switches are matched on the whole argument.
    for rule in active() {
        match Spelling::parse(&rule.option) {
            Some(Spelling::Word(word)) if arg == word => return Some(rule),
            Some(Spelling::Switch(prefix)) if switch_matches(arg, prefix) => return Some(rule),
            _ => {}
        }
    }
    match shape(arg, bundled) {
        Shape::Operand => None,
        // The rule spelled exactly as given names the refusal; else the
        // first the argument abbreviates.
        Shape::Long { name, .. } => active()
            .find(|rule| {
                matches!(Spelling::parse(&rule.option),
                    Some(Spelling::Long { name: refused, .. }) if refused == name)
            })
            .or_else(|| {
                active().find(|rule| match Spelling::parse(&rule.option) {
                    Some(Spelling::Long {
                        name: refused,
                        any_suffix,
                    }) => long_matches(name, refused, any_suffix),
                    _ => false,
                })
            }),
        Shape::Cluster(body) => {
            for c in body.chars() {
                let hit =
                    active().find(|rule| Spelling::parse(&rule.option) == Some(Spelling::Short(c)));
                if hit.is_some() {
                    return hit;
                }
                if text_value.contains(&c) {
                    break;
                }
            }
            None
        }
    }
}

/// A long option `name` (as written, before any `=`) matches a refused long
/// option when it is an abbreviation of it (a prefix of at least one
/// letter), or, for `--name*` rules, when it starts with it.
pub(crate) fn long_matches(name: &str, refused: &str, any_suffix: bool) -> bool {
    !name.is_empty() && (refused.starts_with(name) || (any_suffix && name.starts_with(refused)))
}

/// A Windows switch (`/O…`, `/t…`), compared ignoring ASCII case.
fn switch_matches(arg: &str, prefix: &str) -> bool {
    arg.strip_prefix('/')
        .and_then(|rest| rest.get(..prefix.len()))
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Which parts of `arg` the program may open as a file: the
/// argument itself, the value after `=` of a long option, and every tail of
/// a short cluster after the dash — except tails inside a text value
/// (`sort -t`'s separator). Every part is a suffix of `arg`.
pub(crate) fn parts(
    rules: Option<&ProgramRules>,
    arg: &str,
    bundled: bool,
    when: Conditions,
) -> Parts {
    let mut parts = Parts {
        value_from: None,
        tails: None,
    };
    match shape(arg, bundled) {
        Shape::Operand => {}
        Shape::Long { value, .. } => {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                parts.value_from = Some(arg.len() - value.len());
            }
        }
        Shape::Cluster(body) => {
            let offset = arg.len() - body.len();
            let end = rules
                .and_then(|r| text_value_start(r, body, when))
                .unwrap_or(body.len());
            parts.tails = Some((offset, offset + end));
        }
    }
    parts
}

/// The path-like parts of `arg` ([`parts`]) as string slices, in order.
pub(crate) fn path_spellings<'a>(
    rules: Option<&ProgramRules>,
    arg: &'a str,
    bundled: bool,
    when: Conditions,
    out: &mut Vec<&'a str>,
) {
    let parts = parts(rules, arg, bundled, when);
    out.push(arg);
    if let Some(value) = parts.value_from.and_then(|at| arg.get(at..)) {
        out.push(value);
    }
    if let Some((start, end)) = parts.tails {
        for (at, _) in arg
            .char_indices()
            .filter(|(at, _)| *at >= start && *at < end)
        {
            if let Some(tail) = arg.get(at..) {
                out.push(tail);
            }
        }
    }
}

/// Where, in a cluster's body, a text value starts (just after an option
/// listed in `text_value` that no active rule refuses).
fn text_value_start(rules: &ProgramRules, body: &str, when: Conditions) -> Option<usize> {
    for (at, c) in body.char_indices() {
        let refused = rules.refuse.iter().any(|rule| {
            when.applies(rule) && Spelling::parse(&rule.option) == Some(Spelling::Short(c))
        });
        if !refused && rules.text_value.contains(&c) {
            return Some(at + c.len_utf8());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(shape("--", false), Shape::Operand);
        assert_eq!(shape("-", false), Shape::Operand);
        assert_eq!(shape("x", false), Shape::Operand);
        assert_eq!(shape("x", true), Shape::Cluster("x"));
        assert_eq!(
            shape("--file=lout", false),
            Shape::Long {
                name: "file",
                value: Some("lout")
            }
        );
        assert_eq!(shape("-iflout", false), Shape::Cluster("iflout"));
    }

    #[test]
    fn tails_of_a_cluster() {
        let mut out = Vec::new();
        let when = Conditions {
            path_policy: true,
            windows: false,
            after_subcommand: false,
        };
        path_spellings(None, "-iflout", false, when, &mut out);
        assert_eq!(
            out,
            ["-iflout", "iflout", "flout", "lout", "out", "ut", "t"]
        );
    }

    #[test]
    fn long_abbreviations() {
        assert!(long_matches("fil", "file", false));
        assert!(long_matches("f", "file", false));
        assert!(!long_matches("", "file", false));
        assert!(!long_matches("filex", "file", false));
        assert!(long_matches(
            "dereference-command-line",
            "dereference",
            true
        ));
    }

    #[test]
    fn switches_ignore_case() {
        assert!(switch_matches("/o", "O"));
        assert!(switch_matches("/OUTPUT", "O"));
        assert!(!switch_matches("/", "O"));
        assert!(!switch_matches("-o", "O"));
    }
}
