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

fn sed_commands(script: &str) -> Result<(), &'static str> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        // Separators and addresses.
        while let Some(c) = at(i) {
            match c {
                ' ' | '\t' | '\n' | ';' | ',' | '!' | '$' | '~' | '+' | '0'..='9' => i += 1,
                '/' => i = skip_delimited(&chars, i + 1, '/').ok_or(UNREADABLE)?,
                '\\' => {
                    let delim = at(i + 1).ok_or(UNREADABLE)?;
                    i = skip_delimited(&chars, i + 2, delim).ok_or(UNREADABLE)?;
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
                while at(i).is_some_and(|c| c.is_ascii_digit() || c == ' ') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while at(i).is_some_and(|c| c != ';' && c != '\n') {
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
                i = skip_delimited(&chars, i + 1, delim).ok_or(UNREADABLE)?;
                i = skip_delimited(&chars, i, delim).ok_or(UNREADABLE)?;
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

/// Skip past the next unescaped `delim` starting at `from`; `None` (refuse)
/// when there is none.
fn skip_delimited(chars: &[char], from: usize, delim: char) -> Option<usize> {
    let mut i = from;
    loop {
        match chars.get(i)? {
            '\\' => i += 2,
            c if *c == delim => return Some(i + 1),
            _ => i += 1,
        }
    }
}

fn awk(program: &str) -> Option<&'static str> {
    let chars: Vec<char> = program.chars().collect();
    let mut i = 0;
    let mut depth = 0usize;
    let mut in_print = false;
    // Whether the last significant token ends an operand (so `/` divides).
    let mut after_operand = false;
    while let Some(&c) = chars.get(i) {
        match c {
            '"' => {
                i = match skip_delimited(&chars, i + 1, '"') {
                    Some(next) => next,
                    None => return Some("holds an unterminated string"),
                };
                after_operand = true;
                continue;
            }
            '/' if !after_operand => {
                i = match skip_delimited(&chars, i + 1, '/') {
                    Some(next) => next,
                    None => return Some("holds an unterminated regular expression"),
                };
                after_operand = true;
                continue;
            }
            '#' => {
                while chars.get(i).is_some_and(|c| *c != '\n') {
                    i += 1;
                }
                continue;
            }
            '@' => return Some("loads code (`@include`, `@load`)"),
            '|' => {
                if chars.get(i + 1) == Some(&'|') {
                    i += 2;
                    after_operand = false;
                    continue;
                }
                return Some("runs a command through a pipe");
            }
            '>' if in_print && depth == 0 => return Some("writes to a file (`print >`)"),
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ';' | '{' | '}' | '\n' => in_print = false,
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_alphanumeric() || *c == '_')
                {
                    i += 1;
                }
                let word: String = chars.get(start..i).unwrap_or_default().iter().collect();
                match word.as_str() {
                    "system" => return Some("runs a command (`system()`)"),
                    "getline" => return Some("reads a file or a command's output (`getline`)"),
                    "print" | "printf" => in_print = true,
                    _ => {}
                }
                after_operand = true;
                continue;
            }
            _ => {}
        }
        // Whitespace keeps the previous token's kind.
        if !(c.is_whitespace() && c != '\n') {
            after_operand = c.is_ascii_digit() || c == ')' || c == ']';
        }
        i += 1;
    }
    None
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
}
