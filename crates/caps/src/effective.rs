//! The effective policy as TOML, each entry marked with its origin.

use std::fmt::Write;

use serde::Serialize;

use crate::load::Spans;
use crate::{Origin, Policy};

/// Renders `policy` (read from `source`) as commented TOML.
pub(crate) fn render(policy: &Policy, source: &str) -> String {
    let spans = Spans::new(source);
    let from_file = match policy.origin() {
        Origin::File(path) => Some(path.display().to_string()),
        Origin::Text { .. } => Some("policy text".to_owned()),
        Origin::BuiltIn { .. } => None,
    };
    let origin = |line: Option<usize>| match (&from_file, line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        _ => "built-in".to_owned(),
    };
    let mut out = format!(
        "# effective policy: {}\n# each entry says where it came from: built-in, or file:line\n",
        policy.origin()
    );
    for notice in policy.notices() {
        let _ = writeln!(out, "# {notice}");
    }

    // [files], with the tools' key and the built-in blocked entries.
    let mut files = table(&policy.files);
    files.insert(
        "max_read_bytes".into(),
        toml::Value::Integer(i64::try_from(policy.max_read_bytes).unwrap_or(i64::MAX)),
    );
    let built = policy.path_policy().ok();
    if let Some(built) = &built {
        extend_list(&mut files, "blocked", built.blocked());
        extend_list(&mut files, "write_protected", built.write_protected());
    }
    section(&mut out, "files", &files, &spans, &origin);
    let path_loosenings = built.as_ref().map(|b| b.loosenings()).unwrap_or_default();
    loosened(&mut out, "files", &files, &path_loosenings, &spans, &origin);

    let mut shell = table(&policy.shell);
    let built = policy.shell_policy().ok();
    if let Some(built) = &built {
        extend_list(
            &mut shell,
            "allowed_commands",
            built.allowed_commands().iter().map(String::as_str),
        );
    }
    section(&mut out, "shell", &shell, &spans, &origin);
    let shell_loosenings = built.map(|b| b.loosenings()).unwrap_or_default();
    loosened(
        &mut out,
        "shell",
        &shell,
        &shell_loosenings,
        &spans,
        &origin,
    );

    let mut egress = table(&policy.egress);
    let roots: Vec<toml::Value> = policy
        .root_certificates()
        .iter()
        .map(|p| toml::Value::String(p.display().to_string()))
        .collect();
    if !roots.is_empty() {
        egress.insert("root_certificates".into(), toml::Value::Array(roots));
    }
    section(&mut out, "egress", &egress, &spans, &origin);
    let egress_loosenings = policy
        .egress_policy()
        .map(|b| b.loosenings().to_vec())
        .unwrap_or_default();
    loosened(
        &mut out,
        "egress",
        &egress,
        &egress_loosenings,
        &spans,
        &origin,
    );

    let patch = table(&policy.patch);
    section(&mut out, "patch", &patch, &spans, &origin);
    loosened(
        &mut out,
        "patch",
        &patch,
        &policy.patch.loosenings(),
        &spans,
        &origin,
    );

    let approvals = table(&policy.approvals);
    section(&mut out, "approvals", &approvals, &spans, &origin);
    credentials(&mut out, policy, &origin);
    out
}

/// Each `[credentials.NAME]`: its source, hosts and binding, never its
/// value.
fn credentials(out: &mut String, policy: &Policy, origin: &dyn Fn(Option<usize>) -> String) {
    for entry in policy.credentials() {
        let c = &entry.credential;
        let _ = writeln!(
            out,
            "\n[credentials.{}]  # {}\n{}\nhosts = {}",
            entry.name,
            origin(Some(entry.line)),
            entry.source,
            toml::Value::from(c.hosts().to_vec())
        );
        if let Some(env) = c.env() {
            let _ = writeln!(out, "env = {env:?}");
        }
        if !c.methods().is_empty() {
            let methods: Vec<String> = c.methods().iter().map(ToString::to_string).collect();
            let _ = writeln!(out, "methods = {}", toml::Value::from(methods));
        }
        if !c.paths().is_empty() {
            let _ = writeln!(out, "paths = {}", toml::Value::from(c.paths()));
        }
    }
}

/// Lists, as comments after a section, what it weakens compared with the
/// safe defaults, each marked with the line of the key that does it
/// (`built-in` when no key of the file names it, say a loosening made in
/// code).
fn loosened(
    out: &mut String,
    name: &str,
    table: &toml::Table,
    loosenings: &[String],
    spans: &Spans<'_>,
    origin: &dyn Fn(Option<usize>) -> String,
) {
    for loosening in loosenings {
        let line = table
            .keys()
            .filter(|key| names(loosening, key))
            .find_map(|key| spans.key_line(name, key));
        let _ = writeln!(
            out,
            "# LOOSENED: {loosening}  # {}",
            origin(line).replace('\n', " ")
        );
    }
}

/// Whether `text` names `key` as a whole word.
fn names(text: &str, key: &str) -> bool {
    text.match_indices(key).any(|(at, _)| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        !text[..at].ends_with(word) && !text[at + key.len()..].starts_with(word)
    })
}

fn table<T: Serialize>(value: &T) -> toml::Table {
    match toml::Value::try_from(value) {
        Ok(toml::Value::Table(table)) => table,
        _ => toml::Table::new(),
    }
}

/// Adds to the list `key` the entries of `all` it lacks.
fn extend_list<'a>(table: &mut toml::Table, key: &str, all: impl Iterator<Item = &'a str>) {
    let list = table
        .entry(key)
        .or_insert_with(|| toml::Value::Array(Vec::new()));
    if let toml::Value::Array(items) = list {
        for entry in all {
            if !items.iter().any(|item| item.as_str() == Some(entry)) {
                items.push(toml::Value::String(entry.to_owned()));
            }
        }
    }
}

fn section(
    out: &mut String,
    name: &str,
    table: &toml::Table,
    spans: &Spans<'_>,
    origin: &dyn Fn(Option<usize>) -> String,
) {
    let _ = writeln!(out, "\n[{name}]");
    for (key, value) in table {
        match value {
            toml::Value::Array(items)
                if !items.is_empty() && !items.iter().any(toml::Value::is_table) =>
            {
                // The file's entries come first, in order; what follows
                // them is a built-in expansion.
                let _ = writeln!(out, "{key} = [");
                for (index, item) in items.iter().enumerate() {
                    let line = spans.element_line(name, key, index);
                    let _ = writeln!(out, "    {item},  # {}", origin(line));
                }
                let _ = writeln!(out, "]");
            }
            _ => {
                let _ = writeln!(
                    out,
                    "{key} = {value}  # {}",
                    origin(spans.key_line(name, key))
                );
            }
        }
    }
}
