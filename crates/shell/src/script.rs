//! Scanning `sed` scripts and `awk` programs for commands that run a program,
//! write a file or read a file the command line does not name.
//!
//! The scanners are conservative: what they cannot read with confidence is
//! refused, never passed.

use crate::cluster::{Shape, shape};
use crate::rules::ScriptLanguage;

/// The scripts among a program's arguments (`args` excludes `argv[0]`).
///
/// `-e SCRIPT`, `-eSCRIPT`, `--expression=SCRIPT` (sed), or else the first
/// operand. Options listed in `takes_value` consume the next argument.
pub(crate) fn scripts(language: ScriptLanguage, args: &[String]) -> Vec<&str> {
    let (script_short, script_long, takes_value): (char, &str, &[char]) = match language {
        ScriptLanguage::Sed => ('e', "expression", &['e', 'f', 'l']),
        ScriptLanguage::Awk => ('e', "source", &['e', 'f', 'v', 'F', 'i', 'l', 'E']),
    };
    let mut found = Vec::new();
    let mut operands = Vec::new();
    let mut iter = args.iter().enumerate();
    while let Some((_, arg)) = iter.next() {
        match shape(arg, false) {
            Shape::Operand => operands.push(arg.as_str()),
            Shape::Long { name, value } => {
                let is_script = !name.is_empty() && script_long.starts_with(name);
                match value {
                    Some(value) if is_script => found.push(value),
                    None if is_script => {
                        if let Some((_, next)) = iter.next() {
                            found.push(next.as_str());
                        }
                    }
                    _ => {}
                }
            }
            Shape::Cluster(body) => {
                for (at, c) in body.char_indices() {
                    if takes_value.contains(&c) {
                        let attached = body.get(at + c.len_utf8()..).unwrap_or("");
                        let value = if attached.is_empty() {
                            iter.next().map(|(_, next)| next.as_str())
                        } else {
                            Some(attached)
                        };
                        if c == script_short {
                            found.extend(value);
                        }
                        break;
                    }
                }
            }
        }
    }
    if found.is_empty() {
        found.extend(operands.first());
    }
    found
}

/// Why `script` is refused, if it is.
pub(crate) fn refusal(language: ScriptLanguage, script: &str) -> Option<&'static str> {
    match language {
        ScriptLanguage::Sed => sed(script),
        ScriptLanguage::Awk => awk(script),
    }
}

fn sed(script: &str) -> Option<&'static str> {
    sed_commands(script).err()
}

const UNREADABLE: &str = "cannot be read with confidence (an unterminated address, `s` or `y`)";

const AMBIGUOUS_BRACKET: &str = "holds a bracket expression that sed variants end in different \
                                 places (the delimiter with `\\` or `[:…:]` inside `[…]`)";

/// Whether `c` ends a label or `v`'s version, as GNU sed reads them: at
/// whitespace or `;`. (Other seds read a label to the end of the line; what
/// follows is then scanned as commands too, which only refuses more.)
fn ends_label(c: char) -> bool {
    c.is_whitespace() || c == ';'
}

fn sed_commands(script: &str) -> Result<(), &'static str> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        // Separators and addresses.
        while let Some(c) = at(i) {
            match c {
                ' ' | '\t' | '\n' | '\r' | ';' | ',' | '!' | '$' | '~' | '+' | '0'..='9' => i += 1,
                '/' => i = address_end(&chars, i + 1, '/')?,
                '\\' => {
                    let delim = at(i + 1).ok_or(UNREADABLE)?;
                    if delim == '\n' || delim == '\\' {
                        return Err(UNREADABLE);
                    }
                    i = address_end(&chars, i + 2, delim)?;
                }
                _ => break,
            }
        }
        let Some(command) = at(i) else { break };
        i += 1;
        match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while at(i).is_some_and(|c| c.is_ascii_digit() || c == ' ' || c == '\t') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                // Blanks, then the label (or version) up to whitespace or
                // `;`; what follows is the next command.
                while at(i).is_some_and(|c| c == ' ' || c == '\t') {
                    i += 1;
                }
                while at(i).is_some_and(|c| !ends_label(c)) {
                    i += 1;
                }
            }
            '#' => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; a backslash continues it.
                while let Some(c) = at(i) {
                    i += 1;
                    if c == '\\' {
                        i += 1;
                    } else if c == '\n' {
                        break;
                    }
                }
            }
            'e' => return Err("runs a command (sed `e`)"),
            'w' | 'W' => return Err("writes a file (sed `w`)"),
            'r' | 'R' => return Err("reads a file that is not an argument (sed `r`)"),
            's' | 'y' => {
                let delim = at(i).ok_or(UNREADABLE)?;
                if delim == '\n' || delim == '\\' {
                    return Err(UNREADABLE);
                }
                // `s`: a regular expression (brackets hold the delimiter),
                // then the replacement (they do not); `y`: two plain lists.
                i = delimited_end(&chars, i + 1, delim, command == 's')?;
                i = delimited_end(&chars, i, delim, false)?;
                if command == 's' {
                    while let Some(flag) = at(i) {
                        match flag {
                            'e' => return Err("runs the replacement as a command (sed `s///e`)"),
                            'w' => return Err("writes a file (sed `s///w`)"),
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            _ => break,
                        }
                    }
                }
            }
            _ => return Err("holds a command that cannot be read with confidence"),
        }
    }
    Ok(())
}

/// The end of an address's regular expression started at `from`, past its
/// `I` and `M` flags.
fn address_end(chars: &[char], from: usize, delim: char) -> Result<usize, &'static str> {
    let mut i = delimited_end(chars, from, delim, true)?;
    while chars.get(i).is_some_and(|c| *c == 'I' || *c == 'M') {
        i += 1;
    }
    Ok(i)
}

/// Past the next unescaped `delim` from `from`. With `brackets`, a
/// bracket expression (`[^/]`) may hold the delimiter, as GNU, BSD and
/// busybox sed and awk read a regular expression; a bracket that holds it
/// together with `\` or a `[:class:]` is read differently by them, and
/// refused.
fn delimited_end(
    chars: &[char],
    from: usize,
    delim: char,
    brackets: bool,
) -> Result<usize, &'static str> {
    let mut i = from;
    loop {
        match *chars.get(i).ok_or(UNREADABLE)? {
            '\\' => i += 2,
            c if c == delim => return Ok(i + 1),
            // A raw newline ends nothing: sed and awk refuse it here.
            '\n' => return Err(UNREADABLE),
            '[' if brackets => i = bracket_end(chars, i + 1, delim)?,
            _ => i += 1,
        }
    }
}

/// Past the `]` that ends a bracket expression whose body starts at
/// `from`. The body's first `]` (after an optional `^`) is literal, and a
/// `[:class:]`, `[.x.]` or `[=x=]` inside is skipped whole. Readers that
/// do not know classes (busybox) end the bracket at the class's `]`: a
/// bracket with a class or a `\` is refused when it holds the delimiter or
/// a plain `[`, where the readings part.
fn bracket_end(chars: &[char], from: usize, delim: char) -> Result<usize, &'static str> {
    let mut i = from;
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    let mut holds_delim = false;
    let mut plain_opens = false;
    let mut unsure = false;
    loop {
        let c = *chars.get(i).ok_or(UNREADABLE)?;
        match c {
            ']' => break,
            '\n' => return Err(UNREADABLE),
            '\\' => unsure = true,
            '[' => {
                if let Some(&kind @ (':' | '.' | '=')) = chars.get(i + 1) {
                    unsure = true;
                    i += 2;
                    // To the closing `kind]`.
                    loop {
                        let inner = *chars.get(i).ok_or(UNREADABLE)?;
                        if inner == '\n' {
                            return Err(UNREADABLE);
                        }
                        if inner == delim {
                            holds_delim = true;
                        }
                        if inner == kind && chars.get(i + 1) == Some(&']') {
                            i += 1;
                            break;
                        }
                        i += 1;
                    }
                } else {
                    plain_opens = true;
                }
            }
            _ => {}
        }
        if c == delim {
            holds_delim = true;
        }
        i += 1;
    }
    if unsure && (holds_delim || plain_opens) {
        return Err(AMBIGUOUS_BRACKET);
    }
    Ok(i + 1)
}

/// Words after which a `/` starts a regular expression, as awk's grammar
/// expects an operand there: `print /x/`, `return /x/`, `k in a`, `case
/// /x/:`, `do /x/ …`, `else /x/ …`. After any other word (a variable, a
/// function's name, `length`) a `/` divides.
const REGEX_AFTER_WORD: &[&str] = &[
    "print", "printf", "return", "in", "case", "do", "else", "exit", "delete",
];

/// Words after which `(…)` is a condition, followed by a statement (which
/// may start with a regular expression: `if (x) /y/ …`).
const CONDITION_WORDS: &[&str] = &["if", "while", "for", "switch"];

/// Names awk reads the files it opens from: a program that names them can
/// open a file the command line does not show (`ARGV[1] = "…"`), directly
/// or through an alias (`SYMTAB`, an array passed to a function).
const FILE_LIST_NAMES: &[&str] = &["ARGV", "ARGC", "SYMTAB"];

const AWK_UNREADABLE: &str = "holds a character awk's grammar does not place here, so it cannot \
                              be read with confidence";

fn awk(program: &str) -> Option<&'static str> {
    awk_tokens(program).err()
}

fn awk_tokens(program: &str) -> Result<(), &'static str> {
    let chars: Vec<char> = program.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut i = 0;
    // Whether a `/` here starts a regular expression (an operand is
    // expected) rather than dividing.
    let mut regex = true;
    // Open `(` and `[`: whether each `(` is a condition (after `if`, …).
    let mut open: Vec<bool> = Vec::new();
    let mut condition_next = false;
    // Inside a `print`/`printf` statement, at this nesting depth.
    let mut print_at: Option<usize> = None;
    // The last token lets a statement go on past a newline (`,`, `&&`,
    // `||`, `?`, `:`).
    let mut continues = false;
    while let Some(c) = at(i) {
        let mut next_regex = true;
        let mut next_continues = false;
        let mut next_condition = false;
        match c {
            ' ' | '\t' | '\r' => {
                i += 1;
                continue;
            }
            '\\' if at(i + 1) == Some('\n') => {
                i += 2;
                continue;
            }
            '\\' => return Err(AWK_UNREADABLE),
            '#' => {
                while at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
                continue;
            }
            '"' => {
                i = delimited_end(&chars, i + 1, '"', false)
                    .map_err(|_| "holds an unterminated string")?;
                next_regex = false;
            }
            '/' if regex => {
                i = delimited_end(&chars, i + 1, '/', true).map_err(|e| {
                    if e == UNREADABLE {
                        "holds an unterminated regular expression"
                    } else {
                        e
                    }
                })?;
                next_regex = false;
            }
            '@' => return Err("loads code (`@include`, `@load`) or calls a function by name"),
            '|' if at(i + 1) == Some('|') => {
                i += 2;
                next_continues = true;
            }
            '|' => return Err("runs a command through a pipe"),
            '&' if at(i + 1) == Some('&') => {
                i += 2;
                next_continues = true;
            }
            '>' if print_at.is_some_and(|d| open.len() <= d) => {
                return Err("writes to a file (`print >`)");
            }
            '(' | '[' => {
                open.push(c == '(' && condition_next);
                i += 1;
            }
            ')' | ']' => {
                let was_condition = open.pop().unwrap_or(false);
                // After a condition a statement starts; after a group or a
                // subscript an operand has ended.
                next_regex = was_condition;
                i += 1;
            }
            '\n' if continues => {
                next_continues = true;
                i += 1;
            }
            ';' | '{' | '}' | '\n' => {
                print_at = None;
                i += 1;
            }
            '+' | '-' if at(i + 1) == Some(c) => {
                // `x++ / 2`: after `++` or `--` a `/` divides.
                next_regex = false;
                i += 2;
            }
            ',' | '?' | ':' => {
                next_continues = true;
                i += 1;
            }
            '=' | '<' | '>' | '!' | '~' | '+' | '-' | '*' | '%' | '^' | '$' | '/' => i += 1,
            c if c.is_ascii_digit()
                || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '.') {
                    i += 1;
                }
                next_regex = false;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while at(i).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    i += 1;
                }
                let word: String = chars.get(start..i).unwrap_or_default().iter().collect();
                match word.as_str() {
                    "system" => return Err("runs a command (`system()`)"),
                    "getline" => return Err("reads a file or a command's output (`getline`)"),
                    w if FILE_LIST_NAMES.contains(&w) => {
                        return Err(
                            "names ARGV, ARGC or SYMTAB, through which a program chooses \
                                    the files awk reads (give them as arguments)",
                        );
                    }
                    "print" | "printf" => print_at = Some(open.len()),
                    _ => {}
                }
                next_regex = REGEX_AFTER_WORD.contains(&word.as_str());
                next_condition = CONDITION_WORDS.contains(&word.as_str());
            }
            _ => return Err(AWK_UNREADABLE),
        }
        regex = next_regex;
        continues = next_continues;
        condition_next = next_condition;
    }
    Ok(())
}

/// The awk options whose value is a variable assignment.
pub(crate) const AWK_ASSIGNMENT_OPTIONS: &[&str] = &["-v", "--assign"];

/// Whether an awk variable assignment given outside the program (`-v
/// NAME=…`, or a `NAME=…` operand, which awk reads as an assignment) sets
/// one of the names through which awk chooses its files.
pub(crate) fn awk_assignment_refusal(assignment: &str) -> Option<&'static str> {
    let (name, _) = assignment.split_once('=')?;
    FILE_LIST_NAMES
        .contains(&name.trim())
        .then_some("sets ARGV, ARGC or SYMTAB, which choose the files awk reads")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn sed_script_is_the_first_operand_or_every_e() {
        assert_eq!(
            scripts(ScriptLanguage::Sed, &argv(&["-n", "p", "f"])),
            ["p"]
        );
        assert_eq!(
            scripts(
                ScriptLanguage::Sed,
                &argv(&["-ne", "s/a/b/", "-e1d", "--expression=p", "f"])
            ),
            ["s/a/b/", "1d", "p"]
        );
    }

    #[test]
    fn sed_commands() {
        assert_eq!(sed("s/a/b/g"), None);
        assert_eq!(sed("1,/x/{p;d}"), None);
        assert!(sed("s/a/b/e").is_some());
        assert!(sed("s/a/b/w out").is_some());
        assert!(sed("1e id").is_some());
        assert!(sed("$w out").is_some());
        assert!(sed("/x/r /etc/passwd").is_some());
        assert_eq!(sed(r"s/a\/e/b/"), None);
        assert!(sed("s/a/b").is_some());
    }

    #[test]
    fn a_sed_label_or_version_ends_at_whitespace_or_semicolon() {
        for script in [
            ":x e touch PWNED",
            ":x\te id",
            "b x; e id",
            "bx e id",
            "t x e id",
            "Tx w ../outside/f",
            "v 4.2 e id",
            ": x;e id",
            "b;e id",
            "/a/b end\n:end e id",
        ] {
            assert!(sed(script).is_some(), "{script:?}");
        }
        for script in [
            ":x",
            ":a;N;$!ba;s/\\n/ /g",
            "b end",
            "t",
            "v 4.2",
            "/x/{b skip};p;:skip",
        ] {
            assert_eq!(sed(script), None, "{script:?}");
        }
    }

    #[test]
    fn sed_brackets_hold_the_delimiter_where_every_sed_agrees() {
        // GNU, BSD and busybox sed end `[^/]` at its `]`.
        assert_eq!(sed("s/[^/]*$//"), None);
        assert_eq!(sed("s/[]/]/X/g"), None);
        assert_eq!(sed("/[/]/p"), None);
        assert_eq!(sed("s/[[:space:]]*$//"), None);
        // The replacement has no brackets: `[` there is literal.
        assert_eq!(sed("s/a/[/"), None);
        assert!(sed("s/a/[/e").is_some());
        // Read as one bracket, `/e` would hide the flag.
        assert!(sed("s/x/[/]/e").is_some());
        // Readers part on a class or a backslash in a bracket that holds
        // the delimiter.
        assert!(sed("s/[[:alpha:]/]/X/").is_some());
        assert!(sed("s/[\\/]/X/").is_some());
        assert!(sed("s/[/").is_some());
        // A raw newline ends no `s`.
        assert!(sed("s/a\n/b/").is_some());
        assert_eq!(sed("s/a\\\n/b/"), None);
        // Address flags.
        assert_eq!(sed("/foo/Ip"), None);
        assert_eq!(sed("/foo/I,/bar/Md"), None);
    }

    #[test]
    fn awk_programs() {
        assert_eq!(awk("{ print $1 }"), None);
        assert_eq!(awk("$1 > 5 { print $2 }"), None);
        assert_eq!(awk("/a|b/ { print }"), None);
        assert_eq!(awk("{ print (a > b) }"), None);
        assert!(awk("BEGIN { system(\"id\") }").is_some());
        assert!(awk("{ print > \"out\" }").is_some());
        assert!(awk("{ print | \"sh\" }").is_some());
        assert!(awk("BEGIN { \"id\" | getline x }").is_some());
        assert!(awk("@include \"x\"").is_some());
    }

    #[test]
    fn awk_slash_after_these_tokens_starts_a_regex() {
        for program in [
            "{ print /#/; system(\"id\") }",
            "{ printf /#/; system(\"id\") }",
            "function f() { return /#/; system(\"id\") }",
            "{ x = $0 ~ /#/; system(\"id\") }",
            "{ x = $0 !~ /#/; system(\"id\") }",
            "{ x = (/#/); system(\"id\") }",
            "{ f(1, /#/); system(\"id\") }",
            "/#/ { system(\"id\") }",
            "{ x = 1 && /#/; system(\"id\") }",
            "{ x = 1 || /#/; system(\"id\") }",
            "{ x = !/#/; system(\"id\") }",
            "{ x = 1;/#/; system(\"id\") }",
            "{ if (x) /#/; system(\"id\") }",
            "{ x = 1\n/#/; system(\"id\") }",
            "{ print a,\n b > \"out\" }",
            "{ print a ? /x/ : /#/ > \"out\" }",
        ] {
            assert!(awk(program).is_some(), "{program:?}");
        }
    }

    #[test]
    fn awk_slash_after_an_operand_divides() {
        for program in [
            "{ x = $1 / 2; y = 3 / 4 }",
            "{ x = a[1] / 2; y = b / 4 }",
            "{ x = (a) / 2; y = (b) / 4 }",
            "{ x = length / 2; y = 1 / 4 }",
            "{ x = i++ / 2; y = i-- / 4 }",
            "{ x = \"a\" / 2; y = 3 \\\n / 4 }",
            "/a[/]b/ { n++ } END { print n / 2 }",
            "NR % 2 == 0 { print $1, $2 / 60 }",
        ] {
            assert_eq!(awk(program), None, "{program:?}");
        }
        // Read as a regex, `/ 2; system("id"); y = 3 /` would hide it.
        assert!(awk("{ x = a / 2; system(\"id\"); y = 3 / 4 }").is_some());
        assert!(awk("{ x = (a) / 2; system(\"id\"); y = (b) / 4 }").is_some());
    }

    #[test]
    fn awk_file_lists_are_refused() {
        for program in [
            "BEGIN { ARGV[1] = \"../outside/secret\"; ARGC = 2 }",
            "BEGIN { ARGC++ }",
            "function f(a) { a[1] = \"x\" } BEGIN { f(ARGV) }",
            "BEGIN { SYMTAB[\"ARGV\"][1] = \"x\" }",
            "BEGIN { split(\"x\", ARGV) }",
        ] {
            assert!(awk(program).is_some(), "{program:?}");
        }
        assert!(awk_assignment_refusal("ARGC=3").is_some());
        assert!(awk_assignment_refusal("x=1").is_none());
        assert!(awk_assignment_refusal("ARGVX=1").is_none());
    }

    #[test]
    fn awk_what_cannot_be_read_is_refused() {
        for program in [
            "{ print \"a }",
            "{ print \"a\n\" }",
            "/a",
            "/a\n/",
            "{ x = 1 \\ 2 }",
            "{ x & y }",
            "{ x = `id` }",
        ] {
            assert!(awk(program).is_some(), "{program:?}");
        }
    }
}
