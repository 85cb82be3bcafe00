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
/// everything beneath it.
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
    out.push_str("(?s-u:/.*)?$");
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
            '[' => {
                let mut class = String::from("[");
                if matches!(chars.peek(), Some('!' | '^')) {
                    chars.next();
                    class.push_str("^/");
                }
                let mut first = true;
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        ']' if !first => {
                            closed = true;
                            break;
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
                if !closed {
                    return Err("`[` without `]`".to_owned());
                }
                class.push(']');
                out.push_str(&class);
            }
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
    use super::{ANY_CHARS, ONE_CHAR};
    use proptest::prelude::*;
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
