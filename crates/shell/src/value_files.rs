//! Files named inside option values: curl's `@FILE` and form fields.
//!
//! - After `@`: `-d @F`, `--data-binary @F`, `--data-urlencode name@F`,
//!   `-H @F` read `F`. The text after the first `@` is judged, wherever
//!   the `@` is: a value that merely holds one (`user@example.com`) only
//!   adds a spelling to judge.
//! - Form fields: `-F name=@F`, `name=<F`, `name=@"F";type=text/plain`,
//!   `name=@a,b` read each file. The text after every `=@` and `=<` is
//!   judged whole, and so is each piece of it split at `;` and `,`,
//!   without quotes, so whatever curl takes for the name is among them.

/// The file a value names after its first `@`, if any.
pub(crate) fn after_at(value: &str) -> Option<&str> {
    value
        .split_once('@')
        .map(|(_, file)| file)
        .filter(|file| !file.is_empty())
}

/// The files a form field names (see the module docs).
pub(crate) fn form_files(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for marker in ["=@", "=<"] {
        for (at, _) in value.match_indices(marker) {
            let tail = value.get(at + marker.len()..).unwrap_or_default();
            out.push(tail);
            out.extend(tail.split([';', ',']).map(|piece| piece.trim_matches('"')));
        }
    }
    // `-F @F` and `-F <F` without a name.
    if let Some(tail) = value.strip_prefix('@').or_else(|| value.strip_prefix('<')) {
        out.push(tail);
        out.extend(tail.split([';', ',']).map(|piece| piece.trim_matches('"')));
    }
    out.retain(|piece| !piece.is_empty());
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_after_at() {
        assert_eq!(after_at("@.env"), Some(".env"));
        assert_eq!(after_at("name@.env"), Some(".env"));
        assert_eq!(after_at("plain"), None);
        assert_eq!(after_at("@"), None);
    }

    #[test]
    fn every_reading_of_a_form_field() {
        assert_eq!(form_files("f=@.env"), [".env"]);
        assert_eq!(form_files("f=<.env"), [".env"]);
        assert!(form_files("f=@.env;type=text/plain").contains(&".env"));
        assert!(form_files("f=@\".env\";filename=x").contains(&".env"));
        assert!(form_files("f=@a.txt,.env").contains(&".env"));
        assert!(form_files("@.env").contains(&".env"));
        assert!(form_files("name=value").is_empty());
    }
}
