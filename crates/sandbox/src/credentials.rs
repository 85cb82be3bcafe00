//! What a command gets from a proxy that puts credentials into requests:
//! each credential's **placeholder** (never its value) in the variable
//! the policy names, git's `extraHeader` for the bound hosts, and a CA
//! bundle — the system's roots, the policy's extra roots and the proxy's
//! per-run CA certificate (never its key) — in the view at
//! [`VIEW_BUNDLE`], pointed at by the variables programs read it from.

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::kernel::view::spec::Mount;
use crate::network::ProxyCredentials;

/// Where the bundle is in the view.
pub(crate) const VIEW_BUNDLE: &str = "/etc/agentcaps/ca-bundle.pem";

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
    let staged = staging.join("ca-bundle.pem");
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
        set(name, OsString::from(value));
    }
    for name in &credentials.ca_variables {
        set(name, seen.clone().into_os_string());
    }
    Ok(in_view.then_some(Mount::Bind {
        source: staged,
        target: seen,
        writable: false,
    }))
}
