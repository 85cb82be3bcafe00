//! Properties: the tokenizer never panics and round-trips what it quoted;
//! the decision does not depend on argument order.

use agentcaps_shell::{CommandRequest, ShellPolicy, quote, split};
use proptest::prelude::*;

use crate::fixture::Tree;

proptest! {
    #[test]
    fn split_never_panics(line in "\\PC*") {
        let _ = split(&line);
    }

    #[test]
    fn split_never_panics_on_shell_text(line in "[a-z '\"\\\\;|&<>()$`\n\t-]{0,40}") {
        let _ = split(&line);
    }

    #[test]
    fn split_gives_back_what_quote_wrote(argv in prop::collection::vec("\\PC*", 1..6)) {
        prop_assert_eq!(split(&quote(&argv)).unwrap(), argv);
    }

    #[test]
    fn split_gives_back_shell_text_quote_wrote(
        argv in prop::collection::vec("[a-z '\"\\\\;|&<>()$`\n\t*?~#=-]{0,12}", 1..6)
    ) {
        prop_assert_eq!(split(&quote(&argv)).unwrap(), argv);
    }
}

/// Arguments that exercise every phase: options, tails, links, blocked names.
const POOL: &[&str] = &[
    "notes.txt",
    "sub",
    "-n",
    "-b",
    "-C",
    "--fil",
    "-iflout",
    "README",
    "..",
    "-e..",
    "--",
    "--file=lout",
    "-f/etc/passwd",
    "inlink/../notes.txt",
    "linkout/../notes.txt",
    "-to",
    "x",
    ".env",
    "-Mmagic",
    "list",
    "-L",
];

fn decision(policy: &ShellPolicy, argv: &[String]) -> Result<(), &'static str> {
    policy
        .validate(&CommandRequest::argv(argv.iter().cloned()))
        .map(|_| ())
        .map_err(|e| e.rule())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// For tables read the conservative way (every option anywhere, no
    /// values): programs with an allow-list grammar are left out, since in
    /// a grammar a value-taking option takes the argument after it (`grep
    /// -C -Mmagic` is a context of `-Mmagic`), so order matters there.
    #[test]
    fn the_decision_does_not_depend_on_argument_order(
        program in prop::sample::select(vec!["cat", "head", "tail"]),
        args in prop::collection::vec(prop::sample::select(POOL.to_vec()), 0..6)
            .prop_flat_map(|args| (Just(args.clone()), Just(args).prop_shuffle())),
    ) {
        let tree = Tree::new();
        let policy = tree.policy("files");
        let (original, shuffled) = args;
        let argv = |args: &[&str]| {
            std::iter::once(program.to_owned()).chain(args.iter().map(|a| (*a).to_owned())).collect::<Vec<_>>()
        };
        prop_assert_eq!(decision(&policy, &argv(&original)), decision(&policy, &argv(&shuffled)));
    }
}
