//! Blocked-entry globs, translated to regular expressions so that all of
//! them compile into one automaton.
//!
//! Syntax: `*` (any run of characters in one component), `?` (one
//! character), `[abc]` / `[!a-z]` (one character of a class), `{a,b}`
//! (alternatives), `**` as a whole component (any number of components),
//! `\x` (a literal `x`). A glob that does not start with `/` matches at any
//! depth (`*.pem` is `**/*.pem`). Every glob also matches everything beneath
//! what it matches: blocking `**/.ssh` blocks `~/.ssh/id_ed25519`, and
//! `.vscode/**` covers `.vscode` itself.

use regex_syntax::hir::{
    Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, Look,
};

/// Whether a blocked entry is a glob rather than a path: it contains a glob
/// metacharacter or starts with `**`.
pub(crate) fn is_glob(entry: &str) -> bool {
    // On Windows, the verbatim prefix (`\\?\C:\…`, the form canonicalizing
    // gives there) is part of a path, not a wildcard: read as a glob, a
    // blocked path spelled that way would never match anything.
    #[cfg(windows)]
    let entry = entry.strip_prefix(r"\\?\").unwrap_or(entry);
    entry.starts_with("**") || entry.contains(['*', '?', '[', '{'])
}

const META: &[char] = &[
    '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$', '#', '&', '-', '~',
];

fn escape_into(out: &mut String, c: char) {
    if META.contains(&c) {
        out.push('\\');
    }
    out.push(c);
}

/// The regex (anchored at both ends) that matches a path `root` and
/// everything beneath it (the text [`Pattern::Path`] stands for; the tests
/// hold the two equal).
#[cfg(test)]
pub(crate) fn path_regex(root: &[u8]) -> String {
    let text = String::from_utf8_lossy(root);
    if text == "/" {
        return "^(?s-u:/.*)$".to_owned();
    }
    let mut out = String::from("^");
    if let Ok(text) = std::str::from_utf8(root) {
        for c in text.chars() {
            escape_into(&mut out, c);
        }
    } else {
        for b in root {
            out.push_str(&format!("(?-u:\\x{b:02X})"));
        }
    }
    out.push_str("(?s-u:/.*)?$");
    out
}

/// One character of a name: a Unicode scalar or, in a name that is not
/// valid UTF-8, one byte.
const ONE_CHAR: &str = "(?:[^/]|(?-u:[\\x80-\\xFF]))";

/// Any run of characters of a name. The same strings as `ONE_CHAR*` (every
/// byte but `/`, one at a time), but a single byte class: an automaton a
/// fraction of the size, built much faster.
const ANY_CHARS: &str = "(?-u:[^/])*";

/// Translate a glob to an anchored regex.
///
/// # Errors
///
/// An unterminated `[` or `{`, a stray `}`, or a trailing `\`.
pub(crate) fn glob_regex(glob: &str) -> Result<String, String> {
    let anchored = glob.starts_with('/');
    let body = glob.trim_start_matches('/');
    let segments: Vec<&str> = body.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() {
        return Err("an empty glob matches nothing".to_owned());
    }
    let mut out = String::from("^");
    if !anchored && segments.first() != Some(&"**") {
        out.push_str("(?s-u:(?:/.*)?)");
    }
    for segment in segments {
        if segment == "**" {
            out.push_str("(?s-u:(?:/.*)?)");
        } else {
            out.push('/');
            segment_regex(segment, &mut out)?;
        }
    }
    out.push_str(SUBTREE_END);
    Ok(out)
}

fn segment_regex(segment: &str, out: &mut String) -> Result<(), String> {
    let mut chars = segment.chars().peekable();
    let mut braces = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                out.push_str(ANY_CHARS);
            }
            '?' => out.push_str(ONE_CHAR),
            '\\' => match chars.next() {
                Some(next) => escape_into(out, next),
                None => return Err("a trailing `\\` escapes nothing".to_owned()),
            },
            '{' => {
                braces += 1;
                out.push_str("(?:");
            }
            ',' if braces > 0 => out.push('|'),
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            '}' => return Err("`}` without `{`".to_owned()),
            '[' => out.push_str(&bracket_class(&mut chars)?),
            _ => escape_into(out, c),
        }
    }
    if braces > 0 {
        return Err("`{` without `}`".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ANY_CHARS, ONE_CHAR, Pattern, parse};
    use proptest::prelude::*;

    /// The tree built directly is the one parsing the regex text gives, in
    /// both modes; a glob that does not translate does not build.
    fn same_tree(pattern: &Pattern) {
        for fold in [false, true] {
            match pattern.regex() {
                // A class the regex syntax refuses (`[a-*]`, a range
                // whose ends are reversed) must not build either.
                Ok(text) => match parse(&text, fold) {
                    Ok(parsed) => assert_eq!(
                        pattern.hir(fold),
                        Ok(parsed),
                        "{pattern:?} (fold {fold}): {text}"
                    ),
                    Err(error) => assert!(
                        pattern.hir(fold).is_err(),
                        "{pattern:?} (fold {fold}): {text} does not parse ({error}) but its tree builds"
                    ),
                },
                Err(_) => assert!(pattern.hir(fold).is_err(), "{pattern:?}"),
            }
        }
    }

    #[test]
    fn a_class_with_a_reversed_range_does_not_build() {
        for glob in ["[a-*]", "**/[z-a].txt", "[a-**]"] {
            let pattern = Pattern::Glob(glob.to_owned());
            same_tree(&pattern);
            assert!(pattern.hir(false).is_err(), "{glob}");
        }
    }

    #[test]
    fn every_built_in_entry_builds_the_tree_its_regex_parses_to() {
        let globs = crate::defaults::BLOCKED
            .iter()
            .chain(crate::defaults::WRITE_PROTECTED)
            .map(|(glob, _)| *glob);
        for glob in globs {
            same_tree(&Pattern::Glob(glob.to_owned()));
            for way in crate::rules::ways_to(glob) {
                same_tree(&Pattern::Exact(way));
            }
        }
        for glob in [
            "/abs/x",
            "**",
            "a/**/b",
            "*.{pem,key}",
            "{a,{b,c}d,}",
            "[!a-z]x",
            "[^/-a]",
            "[]x]",
            "[a\\]",
            "\\*",
            "K\u{212A}\u{17F}ss",
            "é[É-ü]",
            "x}",
            "{x",
            "[x",
            "x\\",
            "",
            "/",
            "a,b",
            "?*?",
            "**/.Git/**",
            "\u{130}\u{131}",
        ] {
            same_tree(&Pattern::Glob(glob.to_owned()));
            same_tree(&Pattern::Exact(glob.to_owned()));
        }
        for path in [
            &b"/"[..],
            b"/srv/app",
            b"/a/\xff/K",
            b"/r/\xe9t\xe9",
            b"/r/Z\x80a-b.c",
        ] {
            same_tree(&Pattern::Path(path.to_vec()));
        }
    }

    proptest! {
        /// Any glob of the characters that mean something (and of letters
        /// that fold in Unicode: `K`, Kelvin's `K`, long `ſ`, `É`).
        #[test]
        fn any_glob_builds_the_tree_its_regex_parses_to(
            glob in proptest::collection::vec(
                proptest::sample::select(vec![
                    "a", "B", "k", "K", "\u{212A}", "\u{17F}", "É", "ß", "/", "**", "*", "?", "[",
                    "]", "!", "^", "-", "{", "}", ",", "\\", ".", "$", "(",
                ]),
                0..14,
            )
        ) {
            let glob: String = glob.concat();
            same_tree(&Pattern::Glob(glob.clone()));
            same_tree(&Pattern::Exact(glob));
        }

        /// Any path, UTF-8 or not.
        #[test]
        fn any_path_builds_the_tree_its_regex_parses_to(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![b'/', b'a', b'Z', b'.', b'-', b'*', 0x80, 0xC3, 0xA9, 0xFF]),
                0..16,
            )
        ) {
            let mut path = vec![b'/'];
            path.extend(bytes);
            same_tree(&Pattern::Path(path));
        }
    }

    use regex_automata::meta::Regex;
    use regex_automata::util::syntax;

    fn anchored(body: &str) -> Regex {
        Regex::builder()
            .syntax(syntax::Config::new().utf8(false))
            .configure(Regex::config().utf8_empty(false))
            .build(&format!("^{body}$"))
            .unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    proptest! {
        /// `*` compiles to a byte class; it must accept exactly the names
        /// `ONE_CHAR*` accepts, valid UTF-8 or not.
        #[test]
        fn any_chars_is_one_char_repeated(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let one = anchored(&format!("{ONE_CHAR}*"));
            let any = anchored(ANY_CHARS);
            prop_assert_eq!(one.is_match(&bytes[..]), any.is_match(&bytes[..]), "{:?}", bytes);
        }
    }
}

/// What one blocked or write-protected entry matches, compiled straight
/// to the automaton's syntax tree: parsing the regex text of every entry
/// at each start cost most of a policy load. [`Pattern::regex`] is the
/// same pattern as text, and the tests hold the two equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Pattern {
    /// A glob: what it names and everything beneath ([`glob_regex`]).
    Glob(String),
    /// A glob's own entries only, nothing beneath (the directories on the
    /// way to a write-protected glob).
    Exact(String),
    /// A path and everything beneath it ([`path_regex`]).
    Path(Vec<u8>),
}

impl Pattern {
    /// The pattern as regex text (the tests hold [`Pattern::hir`] equal
    /// to parsing it).
    ///
    /// # Errors
    ///
    /// As [`glob_regex`].
    #[cfg(test)]
    pub(crate) fn regex(&self) -> Result<String, String> {
        match self {
            Pattern::Glob(glob) => glob_regex(glob),
            Pattern::Exact(glob) => {
                let regex = glob_regex(glob)?;
                Ok(regex
                    .strip_suffix(SUBTREE_END)
                    .map_or_else(|| regex.clone(), |r| format!("{r}$")))
            }
            Pattern::Path(bytes) => Ok(path_regex(bytes)),
        }
    }

    /// The pattern's syntax tree, folding case or not: exactly what
    /// parsing [`Pattern::regex`] gives.
    ///
    /// # Errors
    ///
    /// As [`glob_regex`].
    pub(crate) fn hir(&self, fold: bool) -> Result<Hir, String> {
        let pieces = Pieces::get(fold)?;
        let mut out = vec![Hir::look(Look::Start)];
        match self {
            Pattern::Glob(glob) | Pattern::Exact(glob) => {
                let anchored = glob.starts_with('/');
                let body = glob.trim_start_matches('/');
                let segments: Vec<&str> = body.split('/').filter(|s| !s.is_empty()).collect();
                if segments.is_empty() {
                    return Err("an empty glob matches nothing".to_owned());
                }
                if !anchored && segments.first() != Some(&"**") {
                    out.push(pieces.any_depth.clone());
                }
                for segment in segments {
                    if segment == "**" {
                        out.push(pieces.any_depth.clone());
                    } else {
                        out.push(Hir::literal(*b"/"));
                        segment_hir(segment, fold, pieces, &mut out)?;
                    }
                }
                if matches!(self, Pattern::Glob(_)) {
                    out.push(pieces.beneath.clone());
                }
            }
            Pattern::Path(root) if root.as_slice() == b"/" => {
                out.push(pieces.all_beneath.clone());
            }
            Pattern::Path(root) => {
                match std::str::from_utf8(root) {
                    Ok(text) => text.chars().for_each(|c| out.push(char_hir(c, fold))),
                    Err(_) => root.iter().for_each(|&b| out.push(byte_hir(b, fold))),
                }
                out.push(pieces.beneath.clone());
            }
        }
        out.push(Hir::look(Look::End));
        Ok(Hir::concat(out))
    }
}

/// The end of every glob's and path's regex: what is beneath, then the
/// end of the path.
const SUBTREE_END: &str = "(?s-u:/.*)?$";

/// The fixed parts of the patterns, parsed once per process and mode.
struct Pieces {
    /// `(?s-u:(?:/.*)?)`: any number of components (`**`).
    any_depth: Hir,
    /// `(?s-u:/.*)?`: everything beneath.
    beneath: Hir,
    /// `(?s-u:/.*)`: everything beneath `/`, and `/` itself not.
    all_beneath: Hir,
    /// [`ONE_CHAR`].
    one_char: Hir,
    /// [`ANY_CHARS`].
    any_chars: Hir,
}

impl Pieces {
    fn get(fold: bool) -> Result<&'static Pieces, String> {
        static PIECES: [std::sync::OnceLock<Result<Pieces, String>>; 2] =
            [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        PIECES[usize::from(fold)]
            .get_or_init(|| {
                Ok(Pieces {
                    any_depth: parse("(?s-u:(?:/.*)?)", fold)?,
                    beneath: parse("(?s-u:/.*)?", fold)?,
                    all_beneath: parse("(?s-u:/.*)", fold)?,
                    one_char: parse(ONE_CHAR, fold)?,
                    any_chars: parse(ANY_CHARS, fold)?,
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Parses regex text as the automaton's builder would.
fn parse(text: &str, fold: bool) -> Result<Hir, String> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(fold)
        .build()
        .parse(text)
        .map_err(|e| e.to_string())
}

/// One literal character, in every case it has when folding (Unicode's
/// simple case folding, as the regex parser applies it).
fn char_hir(c: char, fold: bool) -> Hir {
    if fold {
        let mut class = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
        class.case_fold_simple();
        Hir::class(Class::Unicode(class))
    } else {
        let mut buffer = [0u8; 4];
        Hir::literal(c.encode_utf8(&mut buffer).as_bytes())
    }
}

/// One byte of a name that is not UTF-8 (`(?-u:\xHH)`): an ASCII letter
/// in both cases when folding, any other byte as it is.
fn byte_hir(b: u8, fold: bool) -> Hir {
    if b.is_ascii() {
        if fold && b.is_ascii_alphabetic() {
            let mut class = ClassBytes::new([ClassBytesRange::new(b, b)]);
            class.case_fold_simple();
            return Hir::class(Class::Bytes(class));
        }
        return Hir::literal([b]);
    }
    Hir::literal([b])
}

/// The regex class of a glob's `[...]` (`!` or `^` negates it, and never
/// takes `/`), read from just after its `[`.
fn bracket_class(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let mut class = String::from("[");
    if matches!(chars.peek(), Some('!' | '^')) {
        chars.next();
        class.push_str("^/");
    }
    let mut first = true;
    while let Some(c) = chars.next() {
        match c {
            ']' if !first => {
                class.push(']');
                return Ok(class);
            }
            '-' => class.push('-'),
            '\\' => match chars.next() {
                Some(next) => escape_into(&mut class, next),
                None => return Err("a trailing `\\` escapes nothing".to_owned()),
            },
            _ => escape_into(&mut class, c),
        }
        first = false;
    }
    Err("`[` without `]`".to_owned())
}

/// [`segment_regex`], as a syntax tree.
fn segment_hir(
    segment: &str,
    fold: bool,
    pieces: &Pieces,
    out: &mut Vec<Hir>,
) -> Result<(), String> {
    // Each open `{`: its alternatives so far, each a sequence.
    let mut open: Vec<Vec<Vec<Hir>>> = Vec::new();
    let mut chars = segment.chars().peekable();
    let push = |open: &mut Vec<Vec<Vec<Hir>>>, out: &mut Vec<Hir>, hir: Hir| match open
        .last_mut()
        .and_then(|alternatives| alternatives.last_mut())
    {
        Some(sequence) => sequence.push(hir),
        None => out.push(hir),
    };
    while let Some(c) = chars.next() {
        match c {
            '*' => {
                while chars.peek() == Some(&'*') {
                    chars.next();
                }
                push(&mut open, out, pieces.any_chars.clone());
            }
            '?' => push(&mut open, out, pieces.one_char.clone()),
            '\\' => match chars.next() {
                Some(next) => push(&mut open, out, char_hir(next, fold)),
                None => return Err("a trailing `\\` escapes nothing".to_owned()),
            },
            '{' => open.push(vec![Vec::new()]),
            ',' if !open.is_empty() => {
                if let Some(alternatives) = open.last_mut() {
                    alternatives.push(Vec::new());
                }
            }
            '}' => {
                let Some(alternatives) = open.pop() else {
                    return Err("`}` without `{`".to_owned());
                };
                let hir = Hir::alternation(alternatives.into_iter().map(Hir::concat).collect());
                push(&mut open, out, hir);
            }
            '[' => {
                let class = bracket_class(&mut chars)?;
                push(&mut open, out, parse(&class, fold)?);
            }
            _ => push(&mut open, out, char_hir(c, fold)),
        }
    }
    if !open.is_empty() {
        return Err("`{` without `}`".to_owned());
    }
    Ok(())
}
