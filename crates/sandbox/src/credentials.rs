//! What a command gets from a proxy that puts credentials into requests:
//! each credential's **placeholder** (never its value) in the variable
//! the policy names, git's `extraHeader` for the bound hosts, and a CA
//! bundle — the system's roots, the policy's extra roots and the proxy's
//! per-run CA certificate (never its key) — in the view at
//! [`VIEW_BUNDLE`], pointed at by the variables programs read it from.
//!
//! Without the view ([`for_fallback`]) the same is given only where
//! Landlock holds the command's files to its roots: the bundle is then a
//! file of a private staging directory that the command may read and not
//! write, and nothing else of this process is in its reach.

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::kernel::view::spec::Mount;
use crate::kernel::view::staging::{Staging, default_base};
use crate::kernel::{self, Enforcement, KernelRules};
use crate::network::ProxyCredentials;

/// The bundle's name in a run's staging directory.
const BUNDLE_FILE: &str = "ca-bundle.pem";

/// Where the bundle is in the view.
pub(crate) const VIEW_BUNDLE: &str = "/etc/agentcaps/ca-bundle.pem";

/// Why a command without its view gets no credentials, when it does not.
const FALLBACK_UNSAFE: &str = "credentials are not offered without the private view unless Landlock holds the command's files to its roots (none of them holding `/proc`), for the real values are in this process, whose `/proc` entries it could read otherwise: HTTPS to a bound host fails (the proxy's CA is not trusted) and no placeholder is set";

/// A command without its view (Landlock only): its CA bundle, staged in a
/// private directory of its own until the run ends.
pub(crate) struct FallbackBundle {
    staging: Staging,
}

impl FallbackBundle {
    /// The bundle file: the command may read it (and nothing else there),
    /// and write it nowhere, for it is in no root.
    pub(crate) fn path(&self) -> PathBuf {
        self.staging.path().join(BUNDLE_FILE)
    }
}

/// For a run without the view (`rules` are the command's Landlock rules):
/// the placeholders and the bundle, as in a view, when that is safe —
/// Landlock will hold the command's files to its roots, so it can read
/// neither the agentcaps process's `/proc` entries (where a `from_env`
/// value lives) nor a credential's file outside them, nor trace it
/// (Landlock forbids tracing a process outside the domain). Otherwise
/// (no path policy, no Landlock, or a root that holds `/proc`), why not:
/// the command then gets no placeholder and no bundle, and HTTPS to a bound
/// host fails closed.
pub(crate) fn for_fallback(
    credentials: &ProxyCredentials,
    env: &mut Vec<(OsString, OsString)>,
    staging_base: Option<&Path>,
    rules: &KernelRules,
    confined_files: bool,
) -> Result<FallbackBundle, String> {
    let proc_in_a_root = rules
        .read
        .iter()
        .chain(&rules.write)
        .any(|root| Path::new("/proc").starts_with(root));
    if !confined_files || kernel::would_enforce(rules) == Enforcement::None || proc_in_a_root {
        return Err(FALLBACK_UNSAFE.to_owned());
    }
    let base = match staging_base {
        Some(base) => base.to_path_buf(),
        None => default_base()?,
    };
    let staging = Staging::create(&base).map_err(|e| {
        format!(
            "credentials are not offered: their CA bundle cannot be staged in {} ({e})",
            base.display()
        )
    })?;
    prepare(credentials, env, staging.path(), false).map_err(|e| {
        format!("credentials are not offered: their CA bundle cannot be staged ({e})")
    })?;
    Ok(FallbackBundle { staging })
}

/// The prefix of git's configuration variables.
const GIT_CONFIG: &str = "GIT_CONFIG_";

/// The system's bundle of roots, the first that exists.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// Sets the credentials' variables in `env` (replacing any of the same
/// name) and writes the bundle into `staging`. `in_view`: the bundle is
/// mounted at [`VIEW_BUNDLE`] (the mount to add is returned); otherwise
/// the variables name the staged file itself.
pub(crate) fn prepare(
    credentials: &ProxyCredentials,
    env: &mut Vec<(OsString, OsString)>,
    staging: &Path,
    in_view: bool,
) -> io::Result<Option<Mount>> {
    let mut bundle = SYSTEM_BUNDLES
        .iter()
        .find_map(|path| std::fs::read(path).ok())
        .unwrap_or_default();
    if !bundle.is_empty() && !bundle.ends_with(b"\n") {
        bundle.push(b'\n');
    }
    bundle.extend_from_slice(credentials.extra_roots_pem.as_bytes());
    let staged = staging.join(BUNDLE_FILE);
    std::fs::write(&staged, &bundle)?;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o444))?;
    let seen = if in_view {
        PathBuf::from(VIEW_BUNDLE)
    } else {
        staged.clone()
    };
    let mut set = |name: &str, value: OsString| {
        env.retain(|(n, _)| n != name);
        env.push((OsString::from(name), value));
    };
    for (name, value) in &credentials.env {
        if !name.starts_with(GIT_CONFIG) {
            set(name, OsString::from(value));
        }
    }
    for name in &credentials.ca_variables {
        set(name, seen.clone().into_os_string());
    }
    append_git_config(env, &git_entries(&credentials.env))?;
    Ok(in_view.then_some(Mount::Bind {
        source: staged,
        target: seen,
        writable: false,
    }))
}

/// The `(key, value)` entries that `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`
/// and `GIT_CONFIG_VALUE_n` of `vars` hold, in order.
fn git_entries(vars: &[(String, String)]) -> Vec<(String, String)> {
    let get = |name: &str| vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let count: usize = get("GIT_CONFIG_COUNT")
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (0..count)
        .filter_map(|i| {
            Some((
                get(&format!("GIT_CONFIG_KEY_{i}"))?,
                get(&format!("GIT_CONFIG_VALUE_{i}"))?,
            ))
        })
        .collect()
}

/// Appends `entries` after the `GIT_CONFIG_*` entries `env` already holds
/// (the shell's `safe.bareRepository`, the host's own), renumbered, so
/// that none of those is replaced. An existing count that is not a number
/// is an error: which entries it meant cannot be told.
fn append_git_config(
    env: &mut Vec<(OsString, OsString)>,
    entries: &[(String, String)],
) -> io::Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let count = env.iter().find(|(n, _)| n == "GIT_CONFIG_COUNT");
    let first: usize = match count {
        None => 0,
        Some((_, v)) => v.to_str().and_then(|v| v.parse().ok()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "GIT_CONFIG_COUNT is not a number",
            )
        })?,
    };
    let mut set = |name: String, value: OsString| {
        env.retain(|(n, _)| *n != *name);
        env.push((OsString::from(name), value));
    };
    for (i, (key, value)) in entries.iter().enumerate() {
        set(format!("GIT_CONFIG_KEY_{}", first + i), key.into());
        set(format!("GIT_CONFIG_VALUE_{}", first + i), value.into());
    }
    set(
        "GIT_CONFIG_COUNT".to_owned(),
        (first + entries.len()).to_string().into(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(n, v)| (OsString::from(n), OsString::from(v)))
            .collect()
    }

    #[test]
    fn git_entries_are_appended_after_those_the_command_already_has() {
        let mut env = os(&[
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
            ("GIT_CONFIG_VALUE_0", "explicit"),
        ]);
        let vars: Vec<(String, String)> = [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "http.https://h/.extraHeader"),
            ("GIT_CONFIG_VALUE_0", "Authorization: Bearer p"),
        ]
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
        append_git_config(&mut env, &git_entries(&vars)).expect("appended");
        let mut env: Vec<_> = env
            .into_iter()
            .map(|(n, v)| (n.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        env.sort();
        let expected = [
            ("GIT_CONFIG_COUNT", "2"),
            ("GIT_CONFIG_KEY_0", "safe.bareRepository"),
            ("GIT_CONFIG_KEY_1", "http.https://h/.extraHeader"),
            ("GIT_CONFIG_VALUE_0", "explicit"),
            ("GIT_CONFIG_VALUE_1", "Authorization: Bearer p"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(env, expected);
        let mut bad = os(&[("GIT_CONFIG_COUNT", "x")]);
        assert!(append_git_config(&mut bad, &git_entries(&vars)).is_err());
    }
}
