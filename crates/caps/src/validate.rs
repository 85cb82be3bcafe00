//! Checks made when a policy file is loaded, so that every mistake is
//! reported with its line: a glob, domain, CIDR, DNS server or method that
//! does not parse, and a root that does not exist (unless
//! `create_missing = true` in `[files]`, which creates it).
//!
//! The crates' `build` functions refuse a bad entry by field name only.
//! Here each section is built once; when that fails, each entry of its
//! lists is tried alone to find the one at fault and its line.

use std::path::Path;

use crate::PolicyError;
use crate::egress::EgressPolicyConfig;
use crate::load::Spans;
use crate::paths::PathPolicyConfig;

/// The HTTP methods `allowed_methods` may name: the ones the egress crate
/// knows (`CONNECT` is never allowed).
pub const KNOWN_METHODS: [&str; 8] = [
    "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "TRACE",
];

/// Checks `[files]`: every root exists (or is created with
/// `create_missing`), and the section builds.
pub(crate) fn files(
    spans: &Spans<'_>,
    files: &PathPolicyConfig,
    create_missing: bool,
) -> Result<(), PolicyError> {
    for key in ["allowed", "read_only"] {
        let roots = if key == "allowed" {
            &files.allowed
        } else {
            &files.read_only
        };
        for (index, root) in roots.iter().enumerate() {
            check_root(spans, key, index, root, create_missing)?;
        }
    }
    let Err(whole) = files.build() else {
        return Ok(());
    };
    for (index, entry) in files.blocked.iter().enumerate() {
        let alone = PathPolicyConfig {
            allowed: Vec::new(),
            read_only: Vec::new(),
            blocked: vec![entry.clone()],
            write_protected: Vec::new(),
            ..files.clone()
        };
        if let Err(e) = alone.build() {
            return Err(spans.invalid_element("files", "blocked", index, e.to_string()));
        }
    }
    for (index, entry) in files.write_protected.iter().enumerate() {
        let alone = PathPolicyConfig {
            allowed: Vec::new(),
            read_only: Vec::new(),
            blocked: Vec::new(),
            write_protected: vec![entry.clone()],
            ..files.clone()
        };
        if let Err(e) = alone.build() {
            return Err(spans.invalid_element("files", "write_protected", index, e.to_string()));
        }
    }
    Err(spans.invalid_section("files", whole.to_string()))
}

fn check_root(
    spans: &Spans<'_>,
    key: &str,
    index: usize,
    root: &Path,
    create_missing: bool,
) -> Result<(), PolicyError> {
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(spans.invalid_element(
            "files",
            key,
            index,
            format!("{} is not a directory; a root must be one", root.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create_missing => {
            std::fs::create_dir_all(root).map_err(|e| {
                spans.invalid_element(
                    "files",
                    key,
                    index,
                    format!("cannot create {}: {e}", root.display()),
                )
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(spans.invalid_element(
            "files",
            key,
            index,
            format!(
                "{} does not exist; create it, fix the path, or set `create_missing = true` in [files]",
                root.display()
            ),
        )),
        Err(e) => Err(spans.invalid_element(
            "files",
            key,
            index,
            format!("cannot read {}: {e}", root.display()),
        )),
    }
}

/// One list of the egress section, to set alone.
type ListField = fn(&mut EgressPolicyConfig) -> &mut Vec<String>;

/// Checks `[egress]`: every method is known, and the section builds.
pub(crate) fn egress(spans: &Spans<'_>, egress: &EgressPolicyConfig) -> Result<(), PolicyError> {
    for (index, method) in egress.allowed_methods.iter().enumerate() {
        if !KNOWN_METHODS.contains(&method.as_str()) {
            return Err(spans.invalid_element(
                "egress",
                "allowed_methods",
                index,
                format!(
                    "`{method}` is not an HTTP method the egress client knows; use upper case, one of {}",
                    KNOWN_METHODS.join(", ")
                ),
            ));
        }
    }
    let Err(whole) = egress.build() else {
        return Ok(());
    };
    let lists: [(&str, &Vec<String>, ListField); 5] = [
        ("allowed_domains", &egress.allowed_domains, |c| {
            &mut c.allowed_domains
        }),
        ("blocked_domains", &egress.blocked_domains, |c| {
            &mut c.blocked_domains
        }),
        ("allowed_cidrs", &egress.allowed_cidrs, |c| {
            &mut c.allowed_cidrs
        }),
        ("denied_cidrs", &egress.denied_cidrs, |c| {
            &mut c.denied_cidrs
        }),
        ("dns_servers", &egress.dns_servers, |c| &mut c.dns_servers),
    ];
    let empty = EgressPolicyConfig {
        allowed_domains: Vec::new(),
        blocked_domains: Vec::new(),
        allowed_cidrs: Vec::new(),
        denied_cidrs: Vec::new(),
        dns_servers: Vec::new(),
        deny_own_addresses: false,
        ..egress.clone()
    };
    for (key, entries, field) in lists {
        for (index, entry) in entries.iter().enumerate() {
            let mut alone = empty.clone();
            *field(&mut alone) = vec![entry.clone()];
            if let Err(e) = alone.build() {
                return Err(spans.invalid_element("egress", key, index, e.to_string()));
            }
        }
    }
    Err(spans.invalid_section("egress", whole.to_string()))
}
