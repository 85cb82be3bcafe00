//! Loosening a policy in code. Everything here opens part of the host's
//! network to URLs an agent chooses, or trusts another certificate
//! authority; the call site says so by its path (`danger::allow_cidr(...)`).
//!
//! # Security
//!
//! A policy loosened here can reach whatever the opened ranges hold:
//! loopback services, the cloud metadata endpoint, the private network.
//! Prefer a narrow range (`127.0.0.1/32` for one test server) and keep
//! these calls out of code paths an agent can influence. Every loosening
//! is listed by [`crate::EgressPolicy::loosenings`].

use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

use crate::client::ClientBuilder;
use crate::error::EgressError;
use crate::policy::{EgressPolicy, parse_cidr};

/// Makes every address in `cidr` reachable, even inside a default-denied
/// range (`denied_cidrs` still wins).
///
/// # Errors
///
/// [`EgressError::Config`] when `cidr` is neither a CIDR nor an address.
///
/// # Security
///
/// See the [module docs](self).
///
/// ```
/// use agentcaps_egress::{EgressPolicy, Method, danger};
///
/// let mut policy = EgressPolicy::default();
/// assert!(policy.check_url("http://127.0.0.1/", &Method::GET).is_err());
/// danger::allow_cidr(&mut policy, "127.0.0.1/32").unwrap();
/// assert!(policy.check_url("http://127.0.0.1/", &Method::GET).is_ok());
/// ```
pub fn allow_cidr(policy: &mut EgressPolicy, cidr: &str) -> Result<(), EgressError> {
    let net = parse_cidr(cidr).map_err(|message| EgressError::Config {
        field: "allowed_cidrs".to_owned(),
        message,
    })?;
    policy.addresses.allowed.push(net);
    policy.loosened.push(format!("allowed_cidrs opens {net}"));
    Ok(())
}

/// Turns off the default denied ranges and names (the `defaults = false`
/// of the policy file): only the policy's own lists remain.
///
/// # Security
///
/// See the [module docs](self). Without a `denied_cidrs` list this makes
/// every address reachable, loopback and cloud metadata included.
pub fn without_defaults(policy: &mut EgressPolicy) {
    policy.addresses.defaults = false;
    policy
        .loosened
        .push("defaults = false: the default denied ranges and names are off".to_owned());
}

/// Makes `port` reachable in addition to the ports already allowed.
///
/// # Security
///
/// Non-web ports reach services (databases, SMTP, admin consoles) that
/// do not expect requests written by an agent.
pub fn allow_port(policy: &mut EgressPolicy, port: u16) {
    if policy.ports.is_empty() {
        policy.ports = vec![80, 443];
    }
    if port != 0 && !policy.ports.contains(&port) {
        policy.ports.push(port);
    }
}

/// Trusts the CA certificates in `pem` in addition to the Web PKI roots
/// (webpki-roots): the only way to trust another certificate authority.
/// Listed by the client policy's [`loosenings`](crate::EgressPolicy::loosenings).
///
/// Meant for tests: this is how a test trusts the CA of its own TLS
/// server on loopback.
///
/// # Errors
///
/// [`EgressError::Config`] when `pem` holds no certificate or one that
/// does not parse.
///
/// # Security
///
/// Any certificate the added CA signs is then accepted for **any** name:
/// whoever holds its key can read and change every HTTPS exchange the
/// client makes. Never add a CA an agent can influence; a host that trusts
/// a private CA in production accepts that CA as an authority for the
/// whole web.
pub fn add_root_certificate_pem(
    mut builder: ClientBuilder,
    pem: &[u8],
) -> Result<ClientBuilder, EgressError> {
    let bad = |m: String| EgressError::Config {
        field: "root_certificate".to_owned(),
        message: m,
    };
    let mut added = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        added.push(cert.map_err(|e| bad(format!("not a PEM certificate: {e}")))?);
    }
    if added.is_empty() {
        return Err(bad("no certificate in the PEM text".to_owned()));
    }
    builder.policy.loosened.push(format!(
        "root_certificate: {} extra CA certificate(s) trusted for every name",
        added.len()
    ));
    builder.extra_roots.extend(added);
    Ok(builder)
}

/// Trusts the CA certificates in `pem` (read from `source`, named in the
/// loosening) for every client built from `policy`, the proxy's upstream
/// side included: the policy file's `[egress] root_certificates`.
///
/// # Errors
///
/// [`EgressError::Config`] when `pem` holds no certificate or one that
/// does not parse.
///
/// # Security
///
/// As [`add_root_certificate_pem`]: the CA is then an authority for every
/// name.
pub fn trust_root_certificates_pem(
    policy: &mut EgressPolicy,
    pem: &[u8],
    source: &str,
) -> Result<usize, EgressError> {
    let bad = |m: String| EgressError::Config {
        field: "root_certificates".to_owned(),
        message: format!("{source}: {m}"),
    };
    let mut added = Vec::new();
    for cert in CertificateDer::pem_slice_iter(pem) {
        added.push(cert.map_err(|e| bad(format!("not a PEM certificate: {e}")))?);
    }
    if added.is_empty() {
        return Err(bad("no certificate in the PEM text".to_owned()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in &added {
        roots
            .add(cert.clone())
            .map_err(|e| bad(format!("not a usable CA certificate: {e}")))?;
    }
    policy.loosened.push(format!(
        "root_certificates: {} CA certificate(s) from {source} trusted for every name",
        added.len()
    ));
    let n = added.len();
    policy.extra_roots.extend(added);
    Ok(n)
}
