//! Reading a TOML policy file strictly: syntax errors, type errors and
//! unknown keys are all reported with the line they are on.
//!
//! The file is deserialised twice, into two views that each own a part of
//! the keys (the crates' own config types, and the keys only the tools use,
//! such as `files.max_read_bytes`). Neither view refuses unknown keys by
//! itself; instead every key that a view skips is recorded
//! (`serde_ignored`), and a key is unknown when **both** views skipped it (or
//! a table holding it). The line of a key comes from a spanned parse of the
//! same text.

use serde::de::DeserializeOwned;
use toml::de::{DeTable, DeValue};

use crate::PolicyError;

/// The keys one view of the file skipped, as dotted paths split in parts.
type Skipped = Vec<Vec<String>>;

/// Deserialises `src` into `T`, returning the keys `T` did not use.
fn view<T: DeserializeOwned>(src: &str) -> Result<(T, Skipped), PolicyError> {
    let mut skipped = Vec::new();
    let de = toml::de::Deserializer::parse(src).map_err(|e| syntax(src, &e))?;
    let value = serde_ignored::deserialize(de, |path| skipped.push(segments(&path)))
        .map_err(|e| invalid(src, &e))?;
    Ok((value, skipped))
}

/// Parses `src` into the two views `A` and `B`, refusing any key that
/// neither of them uses.
pub(crate) fn two_views<A: DeserializeOwned, B: DeserializeOwned>(
    src: &str,
) -> Result<(A, B), PolicyError> {
    let spanned = DeTable::parse(src).map_err(|e| syntax(src, &e))?;
    let (a, skipped_a) = view::<A>(src)?;
    let (b, skipped_b) = view::<B>(src)?;
    let mut unknown: Vec<&Vec<String>> = skipped_a
        .iter()
        .filter(|key| skipped_b.iter().any(|other| is_prefix(other, key)))
        .chain(
            skipped_b
                .iter()
                .filter(|key| skipped_a.iter().any(|other| is_prefix(other, key))),
        )
        .collect();
    // Report the first unknown key in the file, so the message is stable.
    unknown.sort_by_key(|key| key_offset(spanned.get_ref(), key));
    match unknown.first() {
        Some(key) => Err(PolicyError::UnknownKey {
            key: key.join("."),
            line: line_of(src, key_offset(spanned.get_ref(), key)),
        }),
        None => Ok((a, b)),
    }
}

/// Whether the raw file sets `section.key` to the boolean `value`, and on
/// which line (used for `defaults = false`, which must be reported loudly
/// whatever the section's type does with it).
pub(crate) fn bool_key(src: &str, section: &str, key: &str) -> Option<(bool, usize)> {
    let spanned = DeTable::parse(src).ok()?;
    let table = spanned.get_ref().get(section)?.get_ref().as_table()?;
    let value = table.get(key)?;
    Some((value.get_ref().as_bool()?, line_of(src, value.span().start)))
}

/// The spanned parse of a policy file, to find the line of a section, a
/// key or one element of a list.
pub(crate) struct Spans<'s> {
    src: &'s str,
    table: Option<toml::Spanned<DeTable<'s>>>,
}

impl<'s> Spans<'s> {
    pub(crate) fn new(src: &'s str) -> Self {
        Self {
            src,
            table: DeTable::parse(src).ok(),
        }
    }

    fn section(&self, section: &str) -> Option<&toml::Spanned<DeValue<'s>>> {
        self.table.as_ref()?.get_ref().get(section)
    }

    /// The line of `[section]` (its first key when written dotted).
    pub(crate) fn section_line(&self, section: &str) -> Option<usize> {
        let table = self.table.as_ref()?.get_ref();
        let (key, _) = table.get_key_value(section)?;
        Some(line_of(self.src, key.span().start))
    }

    /// The line of `section.key`, when the file sets it.
    pub(crate) fn key_line(&self, section: &str, key: &str) -> Option<usize> {
        let table = self.section(section)?.get_ref().as_table()?;
        let (spanned_key, _) = table.get_key_value(key)?;
        Some(line_of(self.src, spanned_key.span().start))
    }

    /// The line of the key at the dotted `path` (`credentials.github.hosts`),
    /// or of the deepest table on the way the file has.
    pub(crate) fn path_line(&self, path: &[&str]) -> Option<usize> {
        let table = self.table.as_ref()?.get_ref();
        let owned: Vec<String> = path.iter().map(|p| (*p).to_owned()).collect();
        table
            .get(*path.first()?)
            .map(|_| line_of(self.src, key_offset(table, &owned)))
    }

    /// The line of element `index` of the list `section.key`.
    pub(crate) fn element_line(&self, section: &str, key: &str, index: usize) -> Option<usize> {
        let table = self.section(section)?.get_ref().as_table()?;
        let DeValue::Array(items) = table.get(key)?.get_ref() else {
            return None;
        };
        Some(line_of(self.src, items.get(index)?.span().start))
    }

    /// An invalid element of `section.key`, at its line (or the key's, or
    /// the section's).
    pub(crate) fn invalid_element(
        &self,
        section: &str,
        key: &str,
        index: usize,
        message: String,
    ) -> PolicyError {
        let line = self
            .element_line(section, key, index)
            .or_else(|| self.key_line(section, key))
            .or_else(|| self.section_line(section))
            .unwrap_or(1);
        PolicyError::InvalidValue {
            key: format!("{section}.{key}"),
            line,
            message,
        }
    }

    /// A section that does not build, at its header's line.
    pub(crate) fn invalid_section(&self, section: &str, message: String) -> PolicyError {
        PolicyError::InvalidValue {
            key: section.to_owned(),
            line: self.section_line(section).unwrap_or(1),
            message,
        }
    }
}

fn is_prefix(prefix: &[String], key: &[String]) -> bool {
    key.starts_with(prefix)
}

/// Byte offset of the key at `path` in the spanned table, or of the deepest
/// table on the way that exists (so an unknown key is never without a line).
fn key_offset(table: &DeTable<'_>, path: &[String]) -> usize {
    let Some((first, rest)) = path.split_first() else {
        return 0;
    };
    let Some((key, value)) = table.get_key_value(first.as_str()) else {
        return 0;
    };
    let here = key.span().start;
    match value.get_ref() {
        DeValue::Table(inner) if !rest.is_empty() => match inner.get(rest[0].as_str()) {
            Some(_) => key_offset(inner, rest),
            None => here,
        },
        _ => here,
    }
}

/// 1-based line of byte `offset` in `src`.
pub(crate) fn line_of(src: &str, offset: usize) -> usize {
    let end = offset.min(src.len());
    src.as_bytes()
        .get(..end)
        .map_or(0, |head| head.iter().filter(|b| **b == b'\n').count())
        + 1
}

fn syntax(src: &str, e: &toml::de::Error) -> PolicyError {
    PolicyError::Syntax {
        line: e.span().map_or(1, |s| line_of(src, s.start)),
        message: e.message().trim().to_owned(),
    }
}

fn invalid(src: &str, e: &toml::de::Error) -> PolicyError {
    let offset = e.span().map_or(0, |s| s.start);
    let key = DeTable::parse(src)
        .map(|table| key_at(table.get_ref(), offset).join("."))
        .unwrap_or_default();
    PolicyError::InvalidValue {
        key,
        line: line_of(src, offset),
        message: e.message().trim().to_owned(),
    }
}

/// The dotted path of the deepest key whose value spans byte `offset`.
fn key_at(table: &DeTable<'_>, offset: usize) -> Vec<String> {
    for (key, value) in table {
        // A table's own span may cover only its header, so look inside it.
        if let DeValue::Table(inner) = value.get_ref() {
            let inner_path = key_at(inner, offset);
            if !inner_path.is_empty() {
                let mut path = vec![key.get_ref().to_string()];
                path.extend(inner_path);
                return path;
            }
        }
        if value.span().contains(&offset) || key.span().contains(&offset) {
            return vec![key.get_ref().to_string()];
        }
    }
    Vec::new()
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut v = segments(parent);
            v.push(index.to_string());
            v
        }
        Path::Map { parent, key } => {
            let mut v = segments(parent);
            v.push(key.clone());
            v
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => segments(parent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Crates {
        files: CrateFiles,
        shell: CrateShell,
    }
    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct CrateFiles {
        allowed: Vec<String>,
    }
    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct CrateShell {
        timeout_ms: u64,
    }
    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Tools {
        files: ToolFiles,
    }
    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct ToolFiles {
        max_read_bytes: u64,
    }

    fn load(src: &str) -> Result<(Crates, Tools), PolicyError> {
        two_views::<Crates, Tools>(src)
    }

    #[test]
    fn keys_owned_by_either_view_are_accepted() {
        let (c, t) =
            load("[files]\nallowed = [\"a\"]\nmax_read_bytes = 7\n[shell]\ntimeout_ms = 3\n")
                .unwrap();
        assert_eq!(c.files.allowed, ["a"]);
        assert_eq!(c.shell.timeout_ms, 3);
        assert_eq!(t.files.max_read_bytes, 7);
    }

    #[test]
    fn unknown_key_in_a_known_section_is_refused_with_its_line() {
        let err = load("[files]\nallowed = []\n\nbloked = [\"x\"]\n").unwrap_err();
        assert!(
            matches!(&err, PolicyError::UnknownKey { key, line: 4 } if key == "files.bloked"),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_section_is_refused_with_its_line() {
        let err = load("[files]\nallowed = []\n[egres]\nx = 1\n").unwrap_err();
        assert!(
            matches!(&err, PolicyError::UnknownKey { key, line: 3 } if key == "egres"),
            "{err:?}"
        );
    }

    #[test]
    fn tool_key_in_the_wrong_section_is_refused() {
        let err = load("[shell]\nmax_read_bytes = 1\n").unwrap_err();
        assert!(
            matches!(&err, PolicyError::UnknownKey { key, line: 2 } if key == "shell.max_read_bytes"),
            "{err:?}"
        );
    }

    #[test]
    fn dotted_unknown_key_is_refused() {
        let err = load("files.allowed = []\nfiles.secret.x = 1\n").unwrap_err();
        assert!(
            matches!(&err, PolicyError::UnknownKey { key, line: 2 } if key.starts_with("files.secret")),
            "{err:?}"
        );
    }

    #[test]
    fn wrong_type_is_refused_with_its_line() {
        let err = load("[files]\n\nallowed = \"not a list\"\n").unwrap_err();
        assert!(
            matches!(err, PolicyError::InvalidValue { line: 3, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn syntax_error_has_its_line() {
        let err = load("[files]\nallowed = [\n\n= 3").unwrap_err();
        assert!(matches!(err, PolicyError::Syntax { .. }), "{err:?}");
    }

    #[test]
    fn bool_key_reports_value_and_line() {
        assert_eq!(
            bool_key("[shell]\n\ndefaults = false\n", "shell", "defaults"),
            Some((false, 3))
        );
        assert_eq!(bool_key("[shell]\n", "shell", "defaults"), None);
    }

    #[test]
    fn line_of_counts_newlines_and_clamps() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 999), 3);
    }
}
