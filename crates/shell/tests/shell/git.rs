//! git's table as a whole: every subcommand that is not refused reads its
//! options with an allow-list grammar, every option of that grammar is
//! accepted on its own, and a generated option list holding one option the
//! grammar does not know (or one it refuses, in any abbreviation) is refused.

use agentcaps_shell::{CommandRequest, ShellPolicy, Subcommand};
use proptest::prelude::*;

use crate::fixture::Tree;

fn git_subcommands(policy: &ShellPolicy) -> Vec<Subcommand> {
    policy
        .rules()
        .find(|t| t.name == "git")
        .and_then(|t| t.grammar.clone())
        .expect("git has a grammar")
        .subcommands
        .into_iter()
        .filter(|s| s.refused.is_none())
        .collect()
}

/// Operands a subcommand needs so that what it writes can be judged.
fn operands(sub: &str) -> &'static [&'static str] {
    match sub {
        "clone" => &["sub", "dst"],
        _ => &[],
    }
}

fn decide(policy: &ShellPolicy, argv: &[String]) -> Result<(), String> {
    policy
        .validate(&CommandRequest::argv(argv.iter().cloned()))
        .map(|_| ())
        .map_err(|e| e.rule().to_owned())
}

#[test]
fn every_subcommand_that_runs_reads_its_options_with_a_grammar() {
    let tree = Tree::new();
    let subs = git_subcommands(&tree.policy("files"));
    assert!(subs.len() > 60, "git's subcommands shrank: {}", subs.len());
    let without: Vec<&str> = subs
        .iter()
        .filter(|s| s.grammar.is_none())
        .map(|s| s.name.as_str())
        .collect();
    assert!(without.is_empty(), "no grammar: {without:?}");
}

/// Options that run a program, write what the command line does not name
/// for writing, or move the repository, in whichever subcommand has them:
/// no grammar may list one (each is refused where git has it).
#[test]
fn no_grammar_lists_an_option_that_runs_or_writes() {
    const NEVER: &[&str] = &[
        "--ext-diff",
        "--textconv",
        "--filters",
        "--strategy",
        "--edit",
        "--edit-todo",
        "--edit-description",
        "--reedit-message",
        "--exec",
        "--exec-path",
        "--ext-grep",
        "--upload-pack",
        "--receive-pack",
        "--open-files-in-pager",
        "--output",
        "--output-directory",
        "--template",
        "--separate-git-dir",
        "--work-tree",
        "--git-dir",
        "--paginate",
        "--help",
    ];
    let tree = Tree::new();
    let policy = tree.policy("files");
    let mut listed = Vec::new();
    for sub in git_subcommands(&policy) {
        let grammar = sub.grammar.as_deref().expect("a grammar");
        for option in NEVER {
            // `rev-parse --git-dir` prints it; `notes merge --strategy`
            // names one of git's own note-merging rules, never a program.
            let allowed_here = (sub.name == "rev-parse" && *option == "--git-dir")
                || (sub.name == "notes" && *option == "--strategy");
            if grammar.entries_contain(option) && !allowed_here {
                listed.push(format!("git {} {option}", sub.name));
            }
        }
    }
    assert!(listed.is_empty(), "listed: {listed:?}");
}

/// Each option a grammar lists is accepted alone (a value option with a
/// value), so no grammar entry is shadowed by a refusal of the table. (No
/// path policy here: `-o` would be judged as the link `o` too.)
#[test]
fn every_listed_option_is_accepted_alone() {
    let tree = Tree::new();
    let policy = tree.policy("none");
    let mut refused = Vec::new();
    let mut tried = 0;
    for sub in git_subcommands(&policy) {
        let grammar = sub.grammar.as_deref().expect("a grammar");
        let flags = grammar.flags.iter().map(|f| vec![f.clone()]);
        let values = grammar
            .values
            .iter()
            .map(|v| vec![v.clone(), "x".to_owned()]);
        for option in flags.chain(values) {
            let mut argv = vec!["git".to_owned(), sub.name.clone()];
            argv.extend(option);
            argv.extend(operands(&sub.name).iter().map(|o| (*o).to_owned()));
            tried += 1;
            if let Err(rule) = decide(&policy, &argv) {
                refused.push(format!("{argv:?}: {rule}"));
            }
        }
    }
    assert!(tried > 3000, "only {tried} options tried");
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

/// A long option no git subcommand has.
fn unknown_long() -> impl Strategy<Value = String> {
    "[a-z]{1,8}".prop_map(|tail| format!("--zq{tail}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Known flags in any number and order, and one unknown option
    /// anywhere among them: refused as unknown.
    #[test]
    fn an_unknown_option_among_known_flags_is_refused(
        which in any::<prop::sample::Index>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        at in any::<prop::sample::Index>(),
        unknown in unknown_long(),
        short in prop::bool::ANY,
    ) {
        let tree = Tree::new();
        let policy = tree.policy("files");
        let subs = git_subcommands(&policy);
        let sub = which.get(&subs);
        let grammar = sub.grammar.as_deref().expect("a grammar");
        let mut args: Vec<String> = picks
            .iter()
            .filter(|_| !grammar.flags.is_empty())
            .map(|p| p.get(&grammar.flags).clone())
            .collect();
        // An unknown option: a long one, or a short letter the grammar
        // does not list, clustered after a known short flag if there is one.
        let letter = ('a'..='z')
            .chain('A'..='Z')
            .find(|c| !grammar.entries_contain(&format!("-{c}")));
        let odd = match (short, letter) {
            (true, Some(c)) => {
                let known = grammar.flags.iter().find(|f| f.len() == 2 && f != &"-h");
                format!("{}{c}", known.map_or("-", String::as_str))
            }
            _ => unknown.clone(),
        };
        let position = at.index(args.len() + 1);
        args.insert(position, odd.clone());
        let mut argv = vec!["git".to_owned(), sub.name.clone()];
        argv.extend(args);
        argv.extend(operands(&sub.name).iter().map(|o| (*o).to_owned()));
        let got = decide(&policy, &argv);
        prop_assert!(
            matches!(got.as_ref().map_err(String::as_str), Err("unknown-option" | "refused-option")),
            "{argv:?} gave {got:?}"
        );
    }

    /// A refused option of a subcommand, whole or abbreviated to any prefix
    /// git would still read as it (at least its first letter), among known
    /// flags: refused.
    #[test]
    fn a_refused_option_in_any_abbreviation_is_refused(
        which in any::<prop::sample::Index>(),
        rule in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        at in any::<prop::sample::Index>(),
    ) {
        let tree = Tree::new();
        let policy = tree.policy("files");
        let subs: Vec<Subcommand> = git_subcommands(&policy)
            .into_iter()
            .filter(|s| !s.refuse.is_empty())
            .collect();
        let sub = which.get(&subs);
        let grammar = sub.grammar.as_deref().expect("a grammar");
        let option = &rule.get(&sub.refuse).option;
        let spelled = match option.strip_prefix("--") {
            Some(long) => {
                let keep = 1 + cut.index(long.len());
                format!("--{}=x", long.get(..keep).unwrap_or(long))
            }
            None => option.clone(),
        };
        let mut args: Vec<String> = picks
            .iter()
            .filter(|_| !grammar.flags.is_empty())
            .map(|p| p.get(&grammar.flags).clone())
            .collect();
        let position = at.index(args.len() + 1);
        args.insert(position, spelled);
        let mut argv = vec!["git".to_owned(), sub.name.clone()];
        argv.extend(args);
        argv.extend(operands(&sub.name).iter().map(|o| (*o).to_owned()));
        let got = decide(&policy, &argv);
        prop_assert!(
            matches!(got.as_ref().map_err(String::as_str), Err("refused-option" | "unknown-option")),
            "{argv:?} gave {got:?}"
        );
    }
}

/// Helpers on a grammar for these tests.
trait Entries {
    fn entries_contain(&self, entry: &str) -> bool;
}

impl Entries for agentcaps_shell::Grammar {
    fn entries_contain(&self, entry: &str) -> bool {
        self.flags
            .iter()
            .chain(&self.values)
            .chain(&self.optional)
            .chain(&self.either)
            .any(|e| e == entry)
    }
}

/// A host extends git's table in its policy: a rule of the program table
/// judges every argument unless scoped to git's own options, and rules for
/// a shipped subcommand add to it (its grammar still refuses what it does
/// not know).
#[test]
fn a_host_extends_git_subcommands_without_replacing_them() {
    use agentcaps_shell::{ProgramRules, ShellPolicy};

    let tree = Tree::new();
    let host: ProgramRules = toml::from_str(
        r#"
        name = "git"
        refuse = [
            { option = "--no-verify", reason = "skips the hooks this host relies on (test rule)" },
            { option = "-q", scope = "before-subcommand", reason = "is refused by this host (test rule)" },
        ]
        [[grammar.subcommands]]
        name = "log"
        refuse = [{ option = "--graph", reason = "is refused by this host (test rule)" }]
        "#,
    )
    .expect("host rules parse");
    let policy = ShellPolicy::read_only(&tree.root)
        .allow_command("git")
        .rules(host)
        .build()
        .expect("policy");
    let argv = |words: &str| words.split(' ').map(str::to_owned).collect::<Vec<_>>();
    for (words, expected) in [
        ("git commit --no-verify -m x", Err("refused-option")),
        ("git log --graph", Err("refused-option")),
        ("git log --frobnicate", Err("unknown-option")),
        ("git log --ext-diff -p", Err("refused-option")),
        ("git log --oneline -5", Ok(())),
        // `-q` is scoped to git's own options: `git log -q` is log's.
        ("git log -q", Ok(())),
    ] {
        let got = decide(&policy, &argv(words));
        assert_eq!(
            got.as_ref().copied().map_err(String::as_str),
            expected,
            "{words}"
        );
    }
}

/// The same subcommand twice in one table is a configuration error, not a
/// second table nobody reads.
#[test]
fn a_subcommand_listed_twice_is_a_config_error() {
    use agentcaps_shell::{ProgramRules, ShellPolicy};

    let tree = Tree::new();
    let host: ProgramRules = toml::from_str(
        r#"
        name = "tool"
        [[grammar.subcommands]]
        name = "run"
        refused = "runs programs (test rule)"
        [[grammar.subcommands]]
        name = "run"
        "#,
    )
    .expect("host rules parse");
    let err = ShellPolicy::read_only(&tree.root)
        .allow_command("tool")
        .rules(host)
        .build()
        .expect_err("refused");
    assert_eq!(err.rule(), "config");
    assert!(err.to_string().contains("listed twice"), "{err}");
}
