//! `[credentials.NAME]`: secrets commands and `http_request` use without
//! holding them, and `[egress] root_certificates`. Everything is checked
//! when the file is loaded — exactly one source, the variable or file
//! there, hosts that are names, methods, paths, the way it is injected —
//! each mistake with its line. The values are read then, kept in a
//! [`Secret`](crate::egress::credentials::Secret), and never shown: the
//! effective policy and `check policy` list the name, the source and the
//! hosts. A `from_file` source must lie outside every root of `[files]`
//! (as written and as its real path): inside one, the file tools and the
//! commands could read the value itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::PolicyError;
use crate::egress::credentials::{Credential, Secret};
use crate::egress::{EgressPolicy, danger};
use crate::load::Spans;

/// One `[credentials.NAME]` section as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct CredentialKeys {
    from_env: Option<String>,
    from_file: Option<PathBuf>,
    hosts: Vec<String>,
    env: Option<String>,
    inject: Option<String>,
    methods: Vec<String>,
    paths: Vec<String>,
}

/// Where a credential's value is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CredentialSource {
    /// An environment variable of agentcaps itself.
    Env(String),
    /// A file (read by agentcaps, never mounted in a view).
    File(PathBuf),
}

impl std::fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialSource::Env(var) => write!(f, "from_env = {var:?}"),
            CredentialSource::File(path) => {
                write!(f, "from_file = {:?}", path.display().to_string())
            }
        }
    }
}

/// A loaded credential: its name, where its value came from, and the
/// binding; the value itself only inside the egress [`Credential`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CredentialEntry {
    /// The section's name (`github` for `[credentials.github]`).
    pub name: String,
    /// Where the value was read from.
    pub source: CredentialSource,
    /// The line of its section.
    pub line: usize,
    /// The credential, value included (redacted in `Debug`).
    pub credential: Credential,
}

/// `[egress] root_certificates`, as the tools' view reads it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EgressToolKeys {
    pub(crate) root_certificates: Vec<PathBuf>,
}

/// A PEM file of `root_certificates`, read at load.
#[derive(Debug, Clone)]
pub(crate) struct RootFile {
    pub(crate) path: PathBuf,
    pub(crate) pem: Vec<u8>,
}

fn invalid(spans: &Spans<'_>, path: &[&str], message: String) -> PolicyError {
    PolicyError::InvalidValue {
        key: path.join("."),
        line: spans.path_line(path).unwrap_or(1),
        message,
    }
}

fn resolve(base: &Path, path: &Path) -> PathBuf {
    if path.is_relative() {
        base.join(path)
    } else {
        path.to_path_buf()
    }
}

/// Reads and checks every `[credentials.NAME]` section.
pub(crate) fn load(
    spans: &Spans<'_>,
    sections: &BTreeMap<String, CredentialKeys>,
    base: &Path,
) -> Result<Vec<CredentialEntry>, PolicyError> {
    let mut out = Vec::new();
    let mut check = EgressPolicy::default();
    for (name, keys) in sections {
        let at = |key: &'static str| ["credentials", name.as_str(), key];
        let here = ["credentials", name.as_str()];
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(invalid(
                spans,
                &here,
                "a credential's name is letters, digits, `_` and `-`".to_owned(),
            ));
        }
        let (source, value) = match (&keys.from_env, &keys.from_file) {
            (Some(var), None) => {
                let value = std::env::var(var).map_err(|_| {
                    invalid(
                        spans,
                        &at("from_env"),
                        format!("the environment variable {var} is not set (or not UTF-8); set it before starting agentcaps"),
                    )
                })?;
                (CredentialSource::Env(var.clone()), value)
            }
            (None, Some(file)) => {
                let file = resolve(base, file);
                let value = std::fs::read_to_string(&file).map_err(|e| {
                    invalid(
                        spans,
                        &at("from_file"),
                        format!("cannot read {}: {e}", file.display()),
                    )
                })?;
                (CredentialSource::File(file), value.trim().to_owned())
            }
            _ => {
                return Err(invalid(
                    spans,
                    &here,
                    "a credential needs exactly one source: from_env = \"VAR\" or from_file = \"PATH\"".to_owned(),
                ));
            }
        };
        let mut credential = Credential::new(name, Secret::new(value), &keys.hosts)
            .map_err(|e| invalid(spans, &at("hosts"), e.to_string()))?;
        let env = keys.env.clone().or(keys.from_env.clone());
        if let Some(env) = env {
            credential = credential
                .with_env(&env)
                .map_err(|e| invalid(spans, &at("env"), e.to_string()))?;
        }
        if let Some(inject) = &keys.inject {
            credential = credential
                .with_inject(inject)
                .map_err(|e| invalid(spans, &at("inject"), e.to_string()))?;
        }
        credential = credential
            .with_methods(&keys.methods)
            .map_err(|e| invalid(spans, &at("methods"), e.to_string()))?
            .with_paths(&keys.paths)
            .map_err(|e| invalid(spans, &at("paths"), e.to_string()))?;
        check
            .add_credential(credential.clone())
            .map_err(|e| invalid(spans, &here, e.to_string()))?;
        out.push(CredentialEntry {
            name: name.clone(),
            source,
            line: spans.path_line(&here).unwrap_or(1),
            credential,
        });
    }
    Ok(out)
}

/// Refuses a `from_file` source that lies inside a root of `files` (for
/// reading or writing, compared as given and as its real path): the file
/// tools and every command could read the real value there, and where no
/// private view can be built nothing would hide it.
pub(crate) fn sources_outside_roots(
    spans: &Spans<'_>,
    entries: &[CredentialEntry],
    files: &crate::paths::PathPolicyConfig,
) -> Result<(), PolicyError> {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let roots: Vec<PathBuf> = files
        .allowed
        .iter()
        .chain(&files.read_only)
        .flat_map(|root| [root.clone(), real(root)])
        .collect();
    for entry in entries {
        let CredentialSource::File(file) = &entry.source else {
            continue;
        };
        let spellings = [file.clone(), real(file)];
        let inside = roots
            .iter()
            .find(|root| spellings.iter().any(|file| file.starts_with(root)));
        if let Some(root) = inside {
            return Err(invalid(
                spans,
                &["credentials", entry.name.as_str(), "from_file"],
                format!(
                    "{} lies inside the root {}, where the tools and commands could read the value; keep a credential's file outside every root",
                    file.display(),
                    root.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Reads and checks every `root_certificates` file.
pub(crate) fn roots(
    spans: &Spans<'_>,
    keys: &EgressToolKeys,
    base: &Path,
) -> Result<Vec<RootFile>, PolicyError> {
    let mut out = Vec::new();
    for (index, path) in keys.root_certificates.iter().enumerate() {
        let path = resolve(base, path);
        let bad = |m: String| spans.invalid_element("egress", "root_certificates", index, m);
        let pem = std::fs::read(&path)
            .map_err(|e| bad(format!("cannot read {}: {e}", path.display())))?;
        let mut probe = EgressPolicy::default();
        danger::trust_root_certificates_pem(&mut probe, &pem, &path.display().to_string())
            .map_err(|e| bad(e.to_string()))?;
        out.push(RootFile { path, pem });
    }
    Ok(out)
}

/// Adds the roots and the credentials to a built egress policy.
pub(crate) fn apply(
    policy: &mut EgressPolicy,
    roots: &[RootFile],
    credentials: &[CredentialEntry],
) -> Result<(), PolicyError> {
    for root in roots {
        danger::trust_root_certificates_pem(policy, &root.pem, &root.path.display().to_string())
            .map_err(PolicyError::Egress)?;
    }
    for entry in credentials {
        policy
            .add_credential(entry.credential.clone())
            .map_err(PolicyError::Egress)?;
    }
    Ok(())
}
