//! Git's C-style quoting of file names (`"a\tb\303\251"`).

/// Decodes a quoted name that starts at the beginning of `s` (which must start
/// with `"`). Returns the name and the rest of `s` after the closing quote,
/// or `None` when the quoting is malformed or the bytes are not UTF-8.
pub(crate) fn unquote(s: &str) -> Option<(String, &str)> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                let name = String::from_utf8(out).ok()?;
                return Some((name, s.get(i + 1..)?));
            }
            b'\\' => {
                let e = *bytes.get(i + 1)?;
                i += 2;
                let decoded = match e {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let d1 = bytes.get(i).copied().filter(u8::is_ascii_digit)?;
                        let d2 = bytes.get(i + 1).copied().filter(u8::is_ascii_digit)?;
                        if d1 > b'7' || d2 > b'7' {
                            return None;
                        }
                        i += 2;
                        (e - b'0') * 64 + (d1 - b'0') * 8 + (d2 - b'0')
                    }
                    _ => return None,
                };
                out.push(decoded);
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// Whether a name must be quoted to survive a round trip through a header.
pub(crate) fn needs_quotes(name: &str, space_ends_name: bool) -> bool {
    name.is_empty()
        || name.starts_with('"')
        || name != name.trim()
        || name == "/dev/null"
        || (space_ends_name && name.contains(' '))
        || name
            .chars()
            .any(|c| c == '\\' || c == '"' || c.is_control())
}

/// Writes `name` quoted when [`needs_quotes`] says so, raw otherwise.
pub(crate) fn quote_if_needed(name: &str, space_ends_name: bool) -> String {
    if !needs_quotes(name, space_ends_name) {
        return name.to_owned();
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{b:03o}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_and_octal_utf8() {
        let (name, rest) = unquote("\"a\\tb\\303\\251\\\"\" tail").unwrap_or_default();
        assert_eq!(name, "a\tbé\"");
        assert_eq!(rest, " tail");
    }

    #[test]
    fn decodes_quoted_dot_dot() {
        let (name, _) = unquote("\"\\056\\056/etc/passwd\"").unwrap_or_default();
        assert_eq!(name, "../etc/passwd");
    }

    #[test]
    fn refuses_malformed_quoting() {
        for bad in [
            "\"abc",
            "\"\\q\"",
            "\"\\777\"",
            "\"\\37\"",
            "abc",
            "\"\\377\"",
        ] {
            assert!(unquote(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn quoting_round_trips() {
        for name in [
            "plain",
            "with space",
            "tab\there",
            "q\"uote",
            "back\\slash",
            "\u{7}bell",
            "",
            " lead",
            "é",
            "/dev/null",
        ] {
            let q = quote_if_needed(name, true);
            let back = if q.starts_with('"') {
                unquote(&q).map(|(n, _)| n)
            } else {
                Some(q.clone())
            };
            assert_eq!(back.as_deref(), Some(name), "{q}");
        }
    }
}
