//! The shipped tables, read one program at a time.
//!
//! A command names one program or a few, and parsing every table of the
//! shipped files costs more than starting the process that runs it. The
//! files are cut at their `[[program]]` headers; only each table's `name`
//! and `aliases` lines are read up front, and a table is parsed the first
//! time a command names its program. What comes out is the table the whole
//! file gives (a test compares them).

use serde::Deserialize;

use super::ProgramRules;

/// One shipped table, not parsed yet: its names and its text.
#[derive(Debug, Clone)]
pub(super) struct Shipped {
    /// The program's name, as the table spells it.
    pub(super) name: String,
    /// Its other names.
    pub(super) aliases: Vec<String>,
    /// The table's text: a TOML document of one `[[program]]`.
    pub(super) text: &'static str,
}

/// The header every table starts with.
const HEADER: &str = "[[program]]";

/// The first lines of a table, before its first sub-table: where its
/// names are.
#[derive(Deserialize)]
struct Names {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OneTable {
    program: Vec<ProgramRules>,
}

/// The tables of `files`, in order, with their names.
///
/// # Errors
///
/// Text outside a table (other than comments), or a table whose `name`
/// (and `aliases`) is not on a line of its own before its first sub-table.
pub(super) fn index(files: &[&'static str]) -> Result<Vec<Shipped>, String> {
    let mut tables = Vec::new();
    for file in files {
        let mut starts: Vec<usize> = file
            .match_indices(HEADER)
            .map(|(at, _)| at)
            .filter(|&at| at == 0 || file.as_bytes().get(at - 1) == Some(&b'\n'))
            .filter(|&at| {
                let rest = file.get(at + HEADER.len()..).unwrap_or_default();
                rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n")
            })
            .collect();
        let preamble = file.get(..starts.first().copied().unwrap_or(file.len()));
        if let Some(line) = preamble
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with('#'))
        {
            return Err(format!("`{line}` is outside every [[program]] table"));
        }
        starts.push(file.len());
        for bounds in starts.windows(2) {
            let (from, to) = (bounds[0], bounds[1]);
            let text = file.get(from..to).unwrap_or_default();
            let names = names(text)?;
            tables.push(Shipped {
                name: names.name,
                aliases: names.aliases,
                text,
            });
        }
    }
    Ok(tables)
}

/// The `name` and `aliases` lines of one table's text.
fn names(text: &str) -> Result<Names, String> {
    let head: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|line| !line.starts_with('['))
        .filter(|line| {
            let key = line.split('=').next().unwrap_or_default().trim();
            key == "name" || key == "aliases"
        })
        .collect();
    toml::from_str::<Names>(&head.join("\n")).map_err(|e| {
        let first = text.lines().nth(1).unwrap_or_default();
        format!(
            "the table after `{first}` does not give its `name` (and `aliases`) on lines of their own: {e}"
        )
    })
}

/// Parses one shipped table.
///
/// # Errors
///
/// Why it does not parse, or why it is not the table its names said.
pub(super) fn parse(shipped: &Shipped) -> Result<ProgramRules, String> {
    let file = toml::from_str::<OneTable>(shipped.text)
        .map_err(|e| format!("the table of `{}`: {e}", shipped.name))?;
    let mut programs = file.program.into_iter();
    match (programs.next(), programs.next()) {
        (Some(table), None) if table.name == shipped.name && table.aliases == shipped.aliases => {
            Ok(table)
        }
        _ => Err(format!(
            "the table of `{}` is not one table of that name",
            shipped.name
        )),
    }
}
