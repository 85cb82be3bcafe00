//! A small model of SBPL, the S-expression language of macOS Seatbelt
//! profiles, to check the profiles this crate generates where no
//! `sandbox-exec` can: the text reads as S-expressions (balanced, strings
//! and regex literals closed, escapes known), the profile starts with
//! `(version 1)`, and every other form is `(allow|deny OPERATION...
//! FILTER...)` with operations and filters from Apple's documented
//! vocabulary, each filter given the arguments it takes; regexes use only
//! what POSIX extended regular expressions have.

/// One S-expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    /// A name: an operation, a filter, `allow`, a value such as `same-sandbox`.
    Symbol(String),
    /// A number.
    Number(i64),
    /// A string literal, unescaped.
    Str(String),
    /// A regex literal `#"…"`, its body as written.
    Regex(String),
    /// A parenthesised list.
    List(Vec<Expr>),
}

/// Operations of the Seatbelt vocabulary (a `*` ends a family name).
const OPERATIONS: &[&str] = &[
    "default",
    "file*",
    "file-read*",
    "file-read-data",
    "file-read-metadata",
    "file-read-xattr",
    "file-write*",
    "file-write-data",
    "file-write-create",
    "file-write-unlink",
    "file-write-mode",
    "file-write-owner",
    "file-write-times",
    "file-write-xattr",
    "file-write-flags",
    "file-ioctl",
    "file-revoke",
    "file-link",
    "file-map-executable",
    "process*",
    "process-exec",
    "process-exec*",
    "process-fork",
    "process-info*",
    "signal",
    "sysctl*",
    "sysctl-read",
    "sysctl-write",
    "mach*",
    "mach-lookup",
    "mach-register",
    "mach-priv-host-port",
    "ipc*",
    "ipc-posix-shm*",
    "ipc-posix-shm-read*",
    "ipc-posix-shm-read-data",
    "ipc-posix-shm-read-metadata",
    "ipc-posix-shm-write-data",
    "ipc-posix-sem",
    "ipc-sysv*",
    "network*",
    "network-inbound",
    "network-outbound",
    "network-bind",
    "system*",
    "system-socket",
    "system-audit",
    "system-sched",
    "iokit-open",
    "pseudo-tty",
    "user-preference-read",
];

/// Filters, and how many arguments each takes (`None`: any number of
/// filters, for the combinators).
const FILTERS: &[(&str, Option<usize>)] = &[
    ("literal", Some(1)),
    ("subpath", Some(1)),
    ("prefix", Some(1)),
    ("regex", Some(1)),
    ("global-name", Some(1)),
    ("local-name", Some(1)),
    ("global-name-regex", Some(1)),
    ("ipc-posix-name", Some(1)),
    ("ipc-posix-name-prefix", Some(1)),
    ("target", Some(1)),
    ("remote", Some(2)),
    ("local", Some(2)),
    ("vnode-type", Some(1)),
    ("require-any", None),
    ("require-all", None),
    ("require-not", Some(1)),
];

/// Reads the whole text as S-expressions.
pub(crate) fn parse(text: &str) -> Result<Vec<Expr>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    let mut stack: Vec<Vec<Expr>> = vec![Vec::new()];
    while at < chars.len() {
        let c = chars[at];
        match c {
            ';' => {
                while at < chars.len() && chars[at] != '\n' {
                    at += 1;
                }
            }
            c if c.is_whitespace() => at += 1,
            '(' => {
                stack.push(Vec::new());
                at += 1;
            }
            ')' => {
                let list = stack.pop().ok_or("unbalanced `)`")?;
                stack
                    .last_mut()
                    .ok_or_else(|| format!("unbalanced `)` at {at}"))?
                    .push(Expr::List(list));
                at += 1;
            }
            '"' => {
                let (body, next) = quoted(&chars, at + 1, true)?;
                push(&mut stack, Expr::Str(body));
                at = next;
            }
            '#' if chars.get(at + 1) == Some(&'"') => {
                let (body, next) = quoted(&chars, at + 2, false)?;
                push(&mut stack, Expr::Regex(body));
                at = next;
            }
            _ => {
                let start = at;
                while at < chars.len()
                    && !chars[at].is_whitespace()
                    && !matches!(chars[at], '(' | ')' | '"' | ';')
                {
                    at += 1;
                }
                let word: String = chars[start..at].iter().collect();
                let valid = word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '*' | '_' | '.'));
                if !valid {
                    return Err(format!("`{word}` is not a symbol"));
                }
                push(
                    &mut stack,
                    match word.parse() {
                        Ok(n) => Expr::Number(n),
                        Err(_) => Expr::Symbol(word),
                    },
                );
            }
        }
    }
    if stack.len() != 1 {
        return Err(format!("{} unclosed `(`", stack.len() - 1));
    }
    Ok(stack.pop().unwrap_or_default())
}

fn push(stack: &mut [Vec<Expr>], expr: Expr) {
    if let Some(top) = stack.last_mut() {
        top.push(expr);
    }
}

/// The body of a literal starting at `at`, and where the text goes on.
/// In a string `\\` and `\"` are the escapes (`unescape`); in a regex
/// literal only `\"` is, and other backslashes stay as they are.
fn quoted(chars: &[char], mut at: usize, unescape: bool) -> Result<(String, usize), String> {
    let mut body = String::new();
    while let Some(&c) = chars.get(at) {
        match c {
            '"' => return Ok((body, at + 1)),
            '\\' => {
                let next = *chars.get(at + 1).ok_or("a `\\` ends the text")?;
                match (next, unescape) {
                    ('"', _) => body.push('"'),
                    ('\\', true) => body.push('\\'),
                    (other, true) => return Err(format!("unknown escape `\\{other}` in a string")),
                    (other, false) => {
                        body.push('\\');
                        body.push(other);
                    }
                }
                at += 2;
            }
            '\n' => return Err("a string runs past its line".to_owned()),
            c => {
                body.push(c);
                at += 1;
            }
        }
    }
    Err("an unclosed string".to_owned())
}

/// Checks a whole profile: `(version 1)` first, then rules only.
pub(crate) fn check(text: &str) -> Result<Vec<Expr>, String> {
    let forms = parse(text)?;
    let mut forms_iter = forms.iter();
    match forms_iter.next() {
        Some(Expr::List(items)) if items == &[Expr::Symbol("version".into()), Expr::Number(1)] => {}
        other => {
            return Err(format!(
                "the profile must start with (version 1), not {other:?}"
            ));
        }
    }
    for form in forms_iter {
        check_rule(form)?;
    }
    Ok(forms)
}

fn check_rule(form: &Expr) -> Result<(), String> {
    let Expr::List(items) = form else {
        return Err(format!("a rule must be a list: {form:?}"));
    };
    match items.first() {
        Some(Expr::Symbol(kind)) if kind == "allow" || kind == "deny" => {}
        other => return Err(format!("a rule starts with allow or deny, not {other:?}")),
    }
    let mut operations = 0;
    let mut filters = 0;
    for item in &items[1..] {
        match item {
            Expr::Symbol(op) if filters == 0 => {
                if !OPERATIONS.contains(&op.as_str()) {
                    return Err(format!("unknown operation `{op}`"));
                }
                operations += 1;
            }
            Expr::List(_) => {
                check_filter(item)?;
                filters += 1;
            }
            other => return Err(format!("unexpected {other:?} in a rule")),
        }
    }
    if operations == 0 {
        return Err(format!("a rule without an operation: {form:?}"));
    }
    let default_alone = items.get(1) == Some(&Expr::Symbol("default".into()));
    if default_alone && (operations != 1 || filters != 0) {
        return Err("`default` takes no filter and no other operation".to_owned());
    }
    Ok(())
}

fn check_filter(filter: &Expr) -> Result<(), String> {
    let Expr::List(items) = filter else {
        return Err(format!("a filter must be a list: {filter:?}"));
    };
    let Some(Expr::Symbol(name)) = items.first() else {
        return Err(format!("a filter starts with its name: {filter:?}"));
    };
    let Some((_, arity)) = FILTERS.iter().find(|(known, _)| known == name) else {
        return Err(format!("unknown filter `{name}`"));
    };
    let args = &items[1..];
    match arity {
        None => args.iter().try_for_each(check_filter),
        Some(1) if name == "require-not" => args.iter().try_for_each(check_filter),
        Some(n) if args.len() != *n => Err(format!("`{name}` takes {n} argument(s): {filter:?}")),
        Some(_) => args.iter().try_for_each(|arg| check_argument(name, arg)),
    }
}

fn check_argument(filter: &str, arg: &Expr) -> Result<(), String> {
    match (filter, arg) {
        ("regex" | "global-name-regex", Expr::Regex(body)) => check_ere(body),
        ("regex" | "global-name-regex", other) => {
            Err(format!("`{filter}` takes #\"…\": {other:?}"))
        }
        ("literal" | "subpath" | "prefix", Expr::Str(path)) if path.starts_with('/') => Ok(()),
        ("literal" | "subpath" | "prefix", other) => {
            Err(format!("`{filter}` takes an absolute path: {other:?}"))
        }
        (
            "global-name" | "local-name" | "ipc-posix-name" | "ipc-posix-name-prefix",
            Expr::Str(_),
        ) => Ok(()),
        ("target", Expr::Symbol(s)) if matches!(s.as_str(), "self" | "same-sandbox" | "others") => {
            Ok(())
        }
        ("vnode-type", Expr::Symbol(_)) | ("remote" | "local", Expr::Symbol(_) | Expr::Str(_)) => {
            Ok(())
        }
        (_, other) => Err(format!("`{filter}` does not take {other:?}")),
    }
}

/// A POSIX extended regular expression, as far as it matters here:
/// groups and bracket expressions balanced, no Perl-only syntax (`(?`,
/// `\d`, `\w`, `\s`, lazy quantifiers), escapes only of ERE specials, a
/// quantifier only after something.
pub(crate) fn check_ere(regex: &str) -> Result<(), String> {
    let chars: Vec<char> = regex.chars().collect();
    let mut depth = 0usize;
    let mut at = 0;
    let mut quantifiable = false;
    while at < chars.len() {
        match chars[at] {
            '\\' => {
                let next = *chars.get(at + 1).ok_or("a trailing `\\`")?;
                if !r".+*?()|[]{}^$\/".contains(next) {
                    return Err(format!("`\\{next}` is not an ERE escape"));
                }
                at += 2;
                quantifiable = true;
            }
            '(' => {
                if chars.get(at + 1) == Some(&'?') {
                    return Err("`(?` is not ERE".to_owned());
                }
                depth += 1;
                at += 1;
                quantifiable = false;
            }
            ')' => {
                depth = depth.checked_sub(1).ok_or("unbalanced `)` in a regex")?;
                at += 1;
                quantifiable = true;
            }
            '[' => {
                let mut end = at + 1;
                if chars.get(end) == Some(&'^') {
                    end += 1;
                }
                if chars.get(end) == Some(&']') {
                    end += 1;
                }
                while end < chars.len() && chars[end] != ']' {
                    end += 1;
                }
                if end >= chars.len() {
                    return Err("an unclosed `[` in a regex".to_owned());
                }
                at = end + 1;
                quantifiable = true;
            }
            '*' | '+' | '?' => {
                if !quantifiable {
                    return Err(format!("a quantifier with nothing before it at {at}"));
                }
                if matches!(chars.get(at + 1), Some('?' | '+')) {
                    return Err("lazy or possessive quantifiers are not ERE".to_owned());
                }
                at += 1;
                quantifiable = false;
            }
            '|' => {
                at += 1;
                quantifiable = false;
            }
            _ => {
                at += 1;
                quantifiable = true;
            }
        }
    }
    if depth != 0 {
        return Err("an unclosed `(` in a regex".to_owned());
    }
    Ok(())
}
