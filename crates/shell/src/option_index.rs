//! A grammar's options, indexed once: the first entry of each short letter
//! and of each single-dash word, and every long name sorted, so that a
//! lookup is a map access or a binary search instead of a scan of every
//! entry (curl lists over 400). Built the first time a grammar is read,
//! and answering exactly as a scan of the entries in order would: the
//! first entry of a spelling wins, and an abbreviation is a prefix of one
//! long entry alone (a name listed twice is two entries, so ambiguous).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::rules::{Grammar, Kind, Spelling};

/// What a grammar's lookups need, built once per grammar value.
#[derive(Debug)]
pub(crate) struct OptionIndex {
    /// The first entry of each short letter (`-x`).
    short: BTreeMap<char, (usize, Kind)>,
    /// The first entry spelled exactly so, of each single-dash word or
    /// short letter (`-name`, `-x`), for grammars that read words whole.
    word: BTreeMap<String, (usize, Kind)>,
    /// Every long entry's name (without `--`), with its entry and kind,
    /// sorted by name; equal names keep the entries' order.
    long: Vec<(String, usize, Kind)>,
    /// Every entry, in order (what the numbers above point into).
    entries: Vec<(String, Kind)>,
    /// Whether any entry is a single-dash word.
    has_words: bool,
}

impl OptionIndex {
    fn new(grammar: &Grammar) -> Self {
        let entries: Vec<(String, Kind)> = grammar
            .entries()
            .map(|(e, kind)| (e.to_owned(), kind))
            .collect();
        let mut index = Self {
            short: BTreeMap::new(),
            word: BTreeMap::new(),
            long: Vec::new(),
            entries: Vec::new(),
            has_words: false,
        };
        for (at, (entry, kind)) in entries.iter().enumerate() {
            match Spelling::parse(entry) {
                Some(Spelling::Short(c)) => {
                    index.short.entry(c).or_insert((at, *kind));
                    index.word.entry(entry.clone()).or_insert((at, *kind));
                }
                Some(Spelling::Word(_)) => {
                    index.has_words = true;
                    index.word.entry(entry.clone()).or_insert((at, *kind));
                }
                Some(Spelling::Long { name, .. }) => {
                    index.long.push((name.to_owned(), at, *kind));
                }
                Some(Spelling::Switch(_)) | None => {}
            }
        }
        // Stable: among equal names the first entry stays first.
        index.long.sort_by(|a, b| a.0.cmp(&b.0));
        index.entries = entries;
        index
    }

    fn entry(&self, at: usize) -> Option<&str> {
        self.entries.get(at).map(|(e, _)| e.as_str())
    }

    fn hit(&self, (at, kind): (usize, Kind)) -> Option<(&str, Kind)> {
        self.entry(at).map(|e| (e, kind))
    }

    /// The first entry for the short letter `c`.
    pub(crate) fn short(&self, c: char) -> Option<(&str, Kind)> {
        self.short.get(&c).and_then(|hit| self.hit(*hit))
    }

    /// The first single-dash word or short letter spelled exactly `arg`.
    pub(crate) fn word(&self, arg: &str) -> Option<(&str, Kind)> {
        self.word.get(arg).and_then(|hit| self.hit(*hit))
    }

    /// The first long entry named `name`, or else (with `abbreviations`)
    /// the one long entry `name` is a prefix of.
    pub(crate) fn long(&self, name: &str, abbreviations: bool) -> Option<(&str, Kind)> {
        if name.is_empty() {
            return None;
        }
        let from = self.long.partition_point(|(n, _, _)| n.as_str() < name);
        let first = self.long.get(from)?;
        if first.0 == name {
            return self.hit((first.1, first.2));
        }
        if !abbreviations {
            return None;
        }
        // The names `name` is a prefix of sort together, from `from` on.
        let with_prefix = self
            .long
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|(n, _, _)| n.starts_with(name))
            .take(2)
            .collect::<Vec<_>>();
        match with_prefix.as_slice() {
            [(_, at, kind)] => self.hit((*at, *kind)),
            _ => None,
        }
    }

    /// Whether the grammar lists a single-dash word (`-name`).
    pub(crate) fn has_words(&self) -> bool {
        self.has_words
    }
}

/// The index a grammar value carries: built on its first lookup, never
/// copied (a clone, which may then be changed, builds its own), and no
/// part of the grammar's value (equal grammars are equal, indexed or not).
#[derive(Default)]
pub(crate) struct LazyIndex(OnceLock<OptionIndex>);

impl LazyIndex {
    pub(crate) fn get(&self, grammar: &Grammar) -> &OptionIndex {
        self.0.get_or_init(|| OptionIndex::new(grammar))
    }
}

impl Clone for LazyIndex {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for LazyIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for LazyIndex {}

impl std::fmt::Debug for LazyIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LazyIndex")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan the index replaces, as the lookups read before it.
    fn scan_long<'g>(g: &'g Grammar, name: &str, abbreviations: bool) -> Option<(&'g str, Kind)> {
        if name.is_empty() {
            return None;
        }
        let long_name = |e: &'g str| match Spelling::parse(e) {
            Some(Spelling::Long { name, .. }) => Some(name),
            _ => None,
        };
        if let Some(hit) = g.entries().find(|(e, _)| long_name(e) == Some(name)) {
            return Some(hit);
        }
        if !abbreviations {
            return None;
        }
        let mut c = g
            .entries()
            .filter(|(e, _)| long_name(e).is_some_and(|full| full.starts_with(name)));
        match (c.next(), c.next()) {
            (Some(hit), None) => Some(hit),
            _ => None,
        }
    }

    fn grammar(flags: &[&str], values: &[&str]) -> Grammar {
        Grammar {
            flags: flags.iter().map(|s| (*s).to_owned()).collect(),
            values: values.iter().map(|s| (*s).to_owned()).collect(),
            ..Grammar::default()
        }
    }

    #[test]
    fn lookups_answer_as_the_scan_of_the_entries_did() {
        let g = grammar(
            &["-a", "--all", "--allow", "-name", "--dup", "-x"],
            &["-a", "--dup", "--data", "--data-binary", "-o", "--output"],
        );
        let index = OptionIndex::new(&g);
        for name in [
            "all",
            "al",
            "a",
            "allo",
            "dup",
            "du",
            "d",
            "da",
            "data",
            "data-",
            "output",
            "o",
            "x",
            "",
            "zz",
            "data-binary-more",
        ] {
            for abbreviations in [false, true] {
                assert_eq!(
                    index.long(name, abbreviations),
                    scan_long(&g, name, abbreviations),
                    "{name} {abbreviations}"
                );
            }
        }
        // The first entry of a letter wins (`-a` is a flag first).
        assert_eq!(index.short('a'), Some(("-a", Kind::Flag)));
        assert_eq!(index.short('o'), Some(("-o", Kind::Value)));
        assert_eq!(index.short('q'), None);
        assert_eq!(index.word("-name"), Some(("-name", Kind::Flag)));
        assert_eq!(index.word("-x"), Some(("-x", Kind::Flag)));
        assert_eq!(index.word("-nam"), None);
        assert!(index.has_words());
        assert!(!OptionIndex::new(&grammar(&["-a", "--b"], &[])).has_words());
    }

    proptest::proptest! {
        #[test]
        fn any_grammar_and_name_answer_as_the_scan(
            names in proptest::collection::vec("[a-c]{1,3}", 0..12),
            kinds in proptest::collection::vec(proptest::prelude::any::<bool>(), 12),
            name in "[a-c]{0,4}",
        ) {
            let (mut flags, mut values) = (Vec::new(), Vec::new());
            for (n, value) in names.iter().zip(&kinds) {
                let spelled = format!("--{n}");
                if *value { values.push(spelled) } else { flags.push(spelled) }
            }
            let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let g = grammar(&flags, &values);
            let index = OptionIndex::new(&g);
            for abbreviations in [false, true] {
                proptest::prop_assert_eq!(index.long(&name, abbreviations), scan_long(&g, &name, abbreviations));
            }
        }
    }
}
