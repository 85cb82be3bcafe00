//! The per-run certificate authority of a proxy that terminates TLS for
//! bound hosts: made in memory when the proxy starts (its key never leaves
//! this process), one leaf certificate per bound host, made on first use
//! and kept for the run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::EgressError;

/// Leaf certificates kept at most (a run names few hosts).
const MAX_LEAVES: usize = 256;

/// A certificate authority for one run.
pub(crate) struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
    /// One key for every leaf of the run.
    leaf_key: KeyPair,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

fn tls_error(host: &str, e: impl std::fmt::Display) -> EgressError {
    EgressError::Tls {
        host: host.to_owned(),
        message: format!("the proxy's certificate authority: {e}"),
    }
}

impl Authority {
    /// A new authority (an ECDSA P-256 key and a self-signed certificate).
    pub(crate) fn new() -> Result<Authority, EgressError> {
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| tls_error("", e))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params
            .distinguished_name
            .push(DnType::CommonName, "agentcaps per-run credential proxy CA");
        let key = KeyPair::generate().map_err(|e| tls_error("", e))?;
        let issuer = CertifiedIssuer::self_signed(params, key).map_err(|e| tls_error("", e))?;
        let leaf_key = KeyPair::generate().map_err(|e| tls_error("", e))?;
        Ok(Authority {
            issuer,
            leaf_key,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate (PEM): what commands are told to trust.
    pub(crate) fn certificate_pem(&self) -> String {
        self.issuer.pem()
    }

    /// The server side of a terminated tunnel to `host` (HTTP/1.1 only).
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, EgressError> {
        let mut leaves = self.leaves.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(config) = leaves.get(host) {
            return Ok(config.clone());
        }
        let params =
            CertificateParams::new(vec![host.to_owned()]).map_err(|e| tls_error(host, e))?;
        let cert = params
            .signed_by(&self.leaf_key, &self.issuer)
            .map_err(|e| tls_error(host, e))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(host, e))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), self.issuer.der().clone()], key)
            .map_err(|e| tls_error(host, e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        if leaves.len() < MAX_LEAVES {
            leaves.insert(host.to_owned(), config.clone());
        }
        Ok(config)
    }
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}
