//! The quick lower bound of a command's cost, in one pass over
//! its bytes.
//!
//! Every part of an argument that is judged as a path — the argument, a
//! `--long=value` value, each tail of a short cluster — is a *suffix* of the
//! argument. One pass from the end of each argument hashes every suffix at
//! once (a polynomial hash, extended one byte at a time), so the distinct
//! path-like parts of a command are counted in time linear in its length,
//! however long its clusters. Each distinct part that holds a character
//! other than `.`, `/` and `\` names at least one component, so costs at
//! least one lookup (see `agentcaps-paths`): their number is a lower bound of the
//! command's cost. When it already exceeds the budget, the command is
//! refused without computing anything else — in microseconds, with no
//! lookup.
//!
//! Two distinct parts whose hashes collide are counted once: a collision can
//! only lower the bound, never refuse a command that is within budget. A
//! part that cannot be judged at all (`:` where Windows aliases apply) is
//! counted although its check costs nothing: it is refused outright, so a
//! command holding one is refused either way — only the rule named may be
//! `too-costly` instead of `path`. The
//! exact count ([`PathPolicy::spelled_cost`] on every distinct part) follows
//! for commands that pass this bound.
//!
//! [`PathPolicy::spelled_cost`]: agentcaps_paths::PathPolicy::spelled_cost

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Which suffixes of one argument are judged as paths.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts {
    /// Byte index after which a long option's value starts (`=`), if any.
    pub(crate) value_from: Option<usize>,
    /// Byte range `[start, end)` of positions whose suffixes are cluster
    /// tails (the text after the dash, up to a text value).
    pub(crate) tails: Option<(usize, usize)>,
}

/// Counts the distinct non-trivial path-like parts of a command, stopping
/// as soon as the count exceeds `limit`.
#[derive(Debug, Default)]
pub(crate) struct LowerBound {
    seen: HashSet<u64, BuildHasherDefault<Prehashed>>,
}

impl LowerBound {
    /// A counter sized for about `parts` parts (never more than the budget
    /// needs).
    pub(crate) fn with_capacity(parts: usize) -> Self {
        let cap =
            parts.min(usize::try_from(crate::policy::LOOKUP_BUDGET).unwrap_or(usize::MAX) + 1);
        Self {
            seen: HashSet::with_capacity_and_hasher(cap, BuildHasherDefault::default()),
        }
    }

    /// Add the parts of `arg`; returns the count so far.
    pub(crate) fn add(&mut self, arg: &str, parts: Parts) -> u64 {
        const BASE: u64 = 0x100_0000_01b3;
        let bytes = arg.as_bytes();
        let mut hash: u64 = 0;
        let mut nontrivial = false;
        for (i, &byte) in bytes.iter().enumerate().rev() {
            hash = hash.wrapping_mul(BASE).wrapping_add(u64::from(byte) + 1);
            nontrivial |= !matches!(byte, b'.' | b'/' | b'\\');
            let boundary = byte & 0xC0 != 0x80;
            let judged = i == 0
                || parts.value_from == Some(i)
                || parts
                    .tails
                    .is_some_and(|(start, end)| i >= start && i < end);
            if judged && boundary && nontrivial {
                self.seen.insert(finish(hash, bytes.len() - i));
            }
        }
        self.count()
    }

    /// The distinct non-trivial parts seen.
    pub(crate) fn count(&self) -> u64 {
        self.seen.len() as u64
    }
}

/// Mix the polynomial hash with the length (splitmix64's finalizer).
fn finish(hash: u64, len: usize) -> u64 {
    let mut z = hash ^ (len as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A hasher for keys that are already hashes.
#[derive(Debug, Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole() -> Parts {
        Parts {
            value_from: None,
            tails: None,
        }
    }

    #[test]
    fn equal_parts_of_different_arguments_count_once() {
        let mut bound = LowerBound::default();
        // `-abc` gives `-abc abc bc c`; `-xbc` adds `-xbc xbc` only.
        let tails = Parts {
            value_from: None,
            tails: Some((1, 4)),
        };
        assert_eq!(bound.add("-abc", tails), 4);
        assert_eq!(bound.add("-xbc", tails), 6);
        assert_eq!(bound.add("-abc", tails), 6);
    }

    #[test]
    fn a_value_is_a_suffix() {
        let mut bound = LowerBound::default();
        let parts = Parts {
            value_from: Some(7),
            tails: None,
        };
        assert_eq!(bound.add("--file=lout", parts), 2);
        assert_eq!(bound.add("lout", whole()), 2);
    }

    #[test]
    fn parts_without_a_name_do_not_count() {
        let mut bound = LowerBound::default();
        assert_eq!(bound.add("..", whole()), 0);
        assert_eq!(bound.add("./", whole()), 0);
        assert_eq!(bound.add("", whole()), 0);
        assert_eq!(bound.add("../x", whole()), 1);
    }

    #[test]
    fn tails_start_on_character_boundaries() {
        let mut bound = LowerBound::default();
        let parts = Parts {
            value_from: None,
            tails: Some((1, 4)),
        };
        // `-éa`: bytes `- C3 A9 a`; tails `éa` and `a`, plus the argument.
        assert_eq!(bound.add("-éa", parts), 3);
    }

    proptest::proptest! {
        /// The bound never exceeds the exact cost (the distinct parts'
        /// spelled costs), so it never refuses a command within budget —
        /// unless a part cannot be judged at all (it costs nothing because
        /// it is refused outright, so the command is refused either way).
        #[test]
        fn the_bound_is_a_lower_bound_of_the_exact_cost(
            args in proptest::collection::vec("[ab./\\=:é -]{0,12}", 0..8),
            windows in proptest::bool::ANY,
        ) {
            use crate::cluster::{Conditions, parts, path_spellings};
            let root = std::env::temp_dir().canonicalize().unwrap();
            let mut builder = agentcaps_paths::PathPolicy::builder().allow(&root);
            if windows {
                builder = builder.windows_aliases(agentcaps_paths::WindowsAliases::Always);
            }
            let paths = builder.build().unwrap();
            let when = Conditions {
                path_policy: true,
                windows,
                after_subcommand: false,
            };
            let mut bound = LowerBound::default();
            let mut seen = HashSet::new();
            let mut exact = 0u64;
            let mut refused = false;
            let mut out = Vec::new();
            for arg in &args {
                bound.add(arg, parts(None, arg, false, when));
                out.clear();
                path_spellings(None, arg, false, when, &mut out);
                for part in out.drain(..) {
                    if seen.insert(part.to_owned()) {
                        let cost = paths.spelled_cost(part);
                        exact += cost;
                        if cost == 0 {
                            let fs = agentcaps_paths::SimFs::new();
                            let judged = paths.check_on(&fs, &root, part, agentcaps_paths::Access::Read);
                            refused |= judged.is_err_and(|e| e.is_refusal());
                        }
                    }
                }
            }
            proptest::prop_assert!(refused || bound.count() <= exact, "bound {} > exact {exact} for {args:?}", bound.count());
        }
    }
}
