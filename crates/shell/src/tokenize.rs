//! Splitting a command string into argv, POSIX-style, with no expansion.
//!
//! The agent may give a command as one string. It is split the way a POSIX
//! shell splits words — `'…'`, `"…"` and `\` quote — and nothing else a shell
//! does happens: no variables, globs, tilde, command substitution, pipes,
//! redirection or sequencing. An unquoted operator is refused rather than
//! passed on, so the agent learns that no shell is involved instead of
//! running something other than what it meant.

use crate::error::ShellError;

/// Characters that a shell would treat as an operator or expansion when
/// unquoted. Inside double quotes `$` and `` ` `` still expand in a shell, so
/// they are refused there too.
const OPERATORS: &[char] = &[';', '|', '&', '<', '>', '(', ')', '$', '`', '\n'];

/// Split `line` into argv.
///
/// # Errors
///
/// [`ShellError::ShellOperator`] for an unquoted operator (or `$`/`` ` `` in
/// double quotes), [`ShellError::UnterminatedQuote`] for an open quote or a
/// trailing backslash, [`ShellError::EmptyCommand`] when no word results.
pub fn split(line: &str) -> Result<Vec<String>, ShellError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word is in progress (a quoted empty string is a word).
    let mut in_word = false;
    let mut chars = line.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\\' => match chars.next() {
                // POSIX: backslash-newline is a line continuation.
                Some((_, '\n')) => {}
                Some((_, escaped)) => {
                    word.push(escaped);
                    in_word = true;
                }
                None => return Err(unterminated(line, '\\')),
            },
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '\'')) => break,
                        Some((_, inner)) => word.push(inner),
                        None => return Err(unterminated(line, '\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => match chars.peek() {
                            Some(&(_, next @ ('$' | '`' | '"' | '\\'))) => {
                                word.push(next);
                                chars.next();
                            }
                            Some(&(_, '\n')) => {
                                chars.next();
                            }
                            _ => word.push('\\'),
                        },
                        Some((inner_at, inner @ ('$' | '`'))) => {
                            return Err(operator(line, inner, inner_at));
                        }
                        Some((_, inner)) => word.push(inner),
                        None => return Err(unterminated(line, '"')),
                    }
                }
            }
            c if OPERATORS.contains(&c) => return Err(operator(line, c, at)),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(ShellError::EmptyCommand);
    }
    Ok(words)
}

/// Quote `argv` so that [`split`] gives it back unchanged.
///
/// Words made only of characters no shell treats specially are left bare;
/// every other word is single-quoted (`'` written as `'\''`).
pub fn quote<S: AsRef<str>>(argv: &[S]) -> String {
    let mut out = String::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let arg = arg.as_ref();
        let bare = !arg.is_empty()
            && arg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
        if bare {
            out.push_str(arg);
        } else {
            out.push('\'');
            out.push_str(&arg.replace('\'', r"'\''"));
            out.push('\'');
        }
    }
    out
}

fn unterminated(line: &str, quote: char) -> ShellError {
    ShellError::UnterminatedQuote {
        command: line.to_owned(),
        quote,
    }
}

fn operator(line: &str, operator: char, position: usize) -> ShellError {
    ShellError::ShellOperator {
        command: line.to_owned(),
        operator,
        position,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_forms_join_into_one_word() {
        let argv = split(r#"grep -e 'a b'"c d"e\ f file"#).unwrap();
        assert_eq!(argv, ["grep", "-e", "a bc de f", "file"]);
    }

    #[test]
    fn empty_quotes_are_a_word() {
        assert_eq!(split("echo '' \"\"").unwrap(), ["echo", "", ""]);
    }

    #[test]
    fn operators_inside_single_quotes_are_text() {
        assert_eq!(split("echo 'a;b|c$d`e'").unwrap(), ["echo", "a;b|c$d`e"]);
    }

    #[test]
    fn dollar_in_double_quotes_is_refused() {
        let err = split("echo \"$HOME\"").unwrap_err();
        assert!(matches!(
            err,
            ShellError::ShellOperator {
                operator: '$',
                position: 6,
                ..
            }
        ));
    }

    #[test]
    fn escaped_dollar_in_double_quotes_is_text() {
        assert_eq!(split(r#"echo "\$HOME""#).unwrap(), ["echo", "$HOME"]);
    }

    #[test]
    fn backslash_newline_continues_the_line() {
        assert_eq!(split("echo a\\\nb").unwrap(), ["echo", "ab"]);
    }

    #[test]
    fn trailing_backslash_is_unterminated() {
        assert!(matches!(
            split("echo a\\").unwrap_err(),
            ShellError::UnterminatedQuote { quote: '\\', .. }
        ));
    }

    #[test]
    fn blank_line_is_empty() {
        assert!(matches!(
            split(" \t ").unwrap_err(),
            ShellError::EmptyCommand
        ));
    }
}
