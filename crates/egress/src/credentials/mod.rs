//! Credentials a command uses without holding them.
//!
//! A [`Credential`] binds a secret to hosts (and optionally methods and
//! paths). For each run, [`RunCredentials`] draws a new placeholder per
//! credential ([`placeholder`]): the command's environment holds only the
//! placeholder; the proxy (or the `http_request` tool) puts the real value
//! into the request headers, and only for a request over verified TLS to
//! a bound host, method and path. A placeholder anywhere else is refused
//! before anything is sent (`credential-unbound`, `credential-cleartext`).
//! Bodies and query strings are never rewritten.
//!
//! # What is and is not protected
//!
//! The value goes only to a bound host's judged address, over TLS the
//! egress client verified. Refusing a misplaced placeholder needs the
//! request in the clear: the proxy ends TLS only for a `CONNECT` to a bound
//! host, and a tunnel to any other host stays opaque (certificate pinning
//! keeps working there). A placeholder sent through such a tunnel is
//! therefore not refused, and that server receives it — a random string,
//! new for every run, which tells it the value's length, prefix and kinds
//! of characters, and nothing that works anywhere. Misuse at the bound host
//! itself (an allowed request the person did not want) is not prevented
//! either: narrow the binding with methods and paths.

#[cfg(feature = "proxy")]
pub(crate) mod authority;
mod base64;
mod paths;
pub mod placeholder;
mod rewrite;
mod secret;

use std::sync::Arc;

use http::{HeaderName, HeaderValue, Method};

pub use rewrite::Destination;
pub use secret::Secret;

use crate::error::{CredentialRule, EgressError};
use crate::name::DomainList;
use crate::policy::parse_method;
use paths::PathPattern;

/// How the `http_request` tool adds a credential to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inject {
    /// `Authorization: Bearer VALUE` (the default).
    Bearer,
    /// `NAME: VALUE`.
    Header(HeaderName),
    /// `Authorization: Basic base64(USER:VALUE)`.
    Basic(String),
}

/// A secret bound to hosts, methods and paths.
#[derive(Debug, Clone)]
pub struct Credential {
    name: String,
    secret: Secret,
    host_patterns: Vec<String>,
    hosts: DomainList,
    methods: Vec<Method>,
    paths: Vec<PathPattern>,
    inject: Inject,
    env: Option<String>,
}

fn config(name: &str, key: &str, message: impl Into<String>) -> EgressError {
    EgressError::Config {
        field: format!("credentials.{name}.{key}"),
        message: message.into(),
    }
}

impl Credential {
    /// A credential named `name` holding `secret`, bound to `hosts`
    /// (names, `*.suffix` for the names under a suffix).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] for no host, a host that is not a name, or a
    /// value too short for a placeholder that cannot be guessed (fewer than
    /// [`placeholder::MIN_RANDOM_POSITIONS`] letters and digits after its
    /// prefix) or that holds characters a header cannot carry.
    pub fn new(name: &str, secret: Secret, hosts: &[String]) -> Result<Credential, EgressError> {
        if hosts.is_empty() {
            return Err(config(name, "hosts", "name at least one host"));
        }
        let list = DomainList::new(hosts).map_err(|m| config(name, "hosts", m))?;
        if placeholder::random_positions(secret.expose()) < placeholder::MIN_RANDOM_POSITIONS {
            return Err(config(
                name,
                "value",
                format!(
                    "the secret has fewer than {} letters and digits after its prefix: a placeholder for it could be guessed",
                    placeholder::MIN_RANDOM_POSITIONS
                ),
            ));
        }
        if HeaderValue::from_str(secret.expose()).is_err() || secret.expose().contains(' ') {
            return Err(config(
                name,
                "value",
                "the secret holds characters a header cannot carry (spaces, control or non-ASCII characters)",
            ));
        }
        Ok(Credential {
            name: name.to_owned(),
            secret,
            host_patterns: hosts.to_vec(),
            hosts: list,
            methods: Vec::new(),
            paths: Vec::new(),
            inject: Inject::Bearer,
            env: None,
        })
    }

    /// Only these methods may carry it (default: any the policy allows).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] for a name that is not a method.
    pub fn with_methods(mut self, methods: &[String]) -> Result<Credential, EgressError> {
        for raw in methods {
            let m = parse_method(raw)
                .map_err(|_| config(&self.name, "methods", format!("`{raw}` is not a method")))?;
            self.methods.push(m);
        }
        Ok(self)
    }

    /// Only paths matching one of these patterns may carry it (`*` within
    /// a segment, `**` for any number of segments).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] for a pattern that is not a normal path.
    pub fn with_paths(mut self, paths: &[String]) -> Result<Credential, EgressError> {
        for raw in paths {
            let p = PathPattern::new(raw).map_err(|m| config(&self.name, "paths", m))?;
            self.paths.push(p);
        }
        Ok(self)
    }

    /// How `http_request` adds it: `bearer`, `header:NAME` or `basic:USER`.
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] for another spelling.
    pub fn with_inject(mut self, inject: &str) -> Result<Credential, EgressError> {
        let bad = |m: &str| config(&self.name, "inject", m);
        self.inject = if inject == "bearer" {
            Inject::Bearer
        } else if let Some(h) = inject.strip_prefix("header:") {
            Inject::Header(
                HeaderName::from_bytes(h.trim().as_bytes())
                    .map_err(|_| bad("`header:NAME` needs a header name"))?,
            )
        } else if let Some(user) = inject.strip_prefix("basic:") {
            if user.contains(':') || HeaderValue::from_str(user).is_err() {
                return Err(bad("`basic:USER` needs a user name without `:`"));
            }
            Inject::Basic(user.to_owned())
        } else {
            return Err(bad("write \"bearer\", \"header:NAME\" or \"basic:USER\""));
        };
        Ok(self)
    }

    /// The environment variable commands see the placeholder in.
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] for a name that is not a variable name.
    pub fn with_env(mut self, env: &str) -> Result<Credential, EgressError> {
        let valid = !env.is_empty()
            && !env.starts_with(|c: char| c.is_ascii_digit())
            && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(config(
                &self.name,
                "env",
                format!("`{env}` is not a variable name"),
            ));
        }
        self.env = Some(env.to_owned());
        Ok(self)
    }

    /// Its name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hosts it is bound to, as written.
    #[must_use]
    pub fn hosts(&self) -> &[String] {
        &self.host_patterns
    }

    /// The variable commands see its placeholder in, if any.
    #[must_use]
    pub fn env(&self) -> Option<&str> {
        self.env.as_deref()
    }

    /// The methods it is bound to (empty: any).
    #[must_use]
    pub fn methods(&self) -> &[Method] {
        &self.methods
    }

    /// The path patterns it is bound to (empty: any).
    #[must_use]
    pub fn paths(&self) -> Vec<&str> {
        self.paths.iter().map(PathPattern::as_str).collect()
    }

    /// Is `host` (normalised) one of its hosts?
    #[must_use]
    pub fn binds(&self, host: &str) -> bool {
        self.hosts.allows(host)
    }

    pub(crate) fn secret(&self) -> &Secret {
        &self.secret
    }

    /// The header `http_request` adds for it.
    pub(crate) fn injected(&self) -> Option<(HeaderName, HeaderValue)> {
        let value = self.secret.expose();
        let (name, text) = match &self.inject {
            Inject::Bearer => (http::header::AUTHORIZATION, format!("Bearer {value}")),
            Inject::Header(h) => (h.clone(), value.to_owned()),
            Inject::Basic(user) => (
                http::header::AUTHORIZATION,
                format!(
                    "Basic {}",
                    base64::encode(format!("{user}:{value}").as_bytes())
                ),
            ),
        };
        let mut v = HeaderValue::from_str(&text).ok()?;
        v.set_sensitive(true);
        Some((name, v))
    }

    /// May a request to `to` carry it?
    pub(crate) fn allows(&self, to: &Destination<'_>) -> Result<(), EgressError> {
        let refuse = |rule| EgressError::Credential {
            name: self.name.clone(),
            host: to.host.to_owned(),
            rule,
        };
        if !self.binds(to.host) {
            return Err(refuse(CredentialRule::Host(self.host_patterns.join(", "))));
        }
        if !to.tls {
            return Err(refuse(CredentialRule::Cleartext));
        }
        if !self.methods.is_empty() && !self.methods.contains(to.method) {
            return Err(refuse(CredentialRule::Method(to.method.to_string())));
        }
        if !self.paths.is_empty() {
            let path = paths::normalise(to.target).unwrap_or_default();
            if !self.paths.iter().any(|p| p.matches(&path)) {
                return Err(refuse(CredentialRule::Path(path)));
            }
        }
        Ok(())
    }
}

/// The credentials of one run: each with its new placeholder.
#[derive(Debug, Clone)]
pub struct RunCredentials {
    entries: Arc<Vec<(Credential, String)>>,
    /// Ports besides 443 that HTTPS to a bound host may use (git's
    /// `extraHeader` is set for each).
    ports: Vec<u16>,
}

/// Fills `buf` from the system's secure random source.
pub(crate) fn fill_random(buf: &mut [u8]) -> Result<(), ()> {
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(buf)
        .map_err(|_| ())
}

impl RunCredentials {
    /// Draws a placeholder for each credential (distinct from every value
    /// and from each other).
    ///
    /// # Errors
    ///
    /// [`EgressError::Config`] when the random source fails.
    pub fn new(credentials: &[Credential]) -> Result<RunCredentials, EgressError> {
        let mut entries: Vec<(Credential, String)> = Vec::with_capacity(credentials.len());
        for credential in credentials {
            let placeholder = loop {
                let p =
                    placeholder::make(credential.secret.expose(), fill_random).map_err(|()| {
                        EgressError::Config {
                            field: "credentials".to_owned(),
                            message: "the system's random source failed".to_owned(),
                        }
                    })?;
                let clash = credentials
                    .iter()
                    .any(|c| c.secret.expose().contains(&p) || p.contains(c.secret.expose()))
                    || entries
                        .iter()
                        .any(|(_, q)| q.contains(&p) || p.contains(q.as_str()));
                if !clash {
                    break p;
                }
            };
            entries.push((credential.clone(), placeholder));
        }
        Ok(RunCredentials {
            entries: Arc::new(entries),
            ports: Vec::new(),
        })
    }

    /// The ports a bound host may be reached on (the policy's allowed
    /// ports): git matches `http.<url>.*` keys by the exact port, so
    /// [`RunCredentials::environment`] sets `extraHeader` for
    /// `https://HOST:PORT/` too, for each of them but 443 (the default
    /// `https://HOST/` covers it) and 80 (plain HTTP, where a placeholder
    /// is refused anyway).
    #[must_use]
    pub fn with_ports(mut self, ports: &[u16]) -> RunCredentials {
        self.ports = ports
            .iter()
            .copied()
            .filter(|p| *p != 443 && *p != 80)
            .collect();
        self.ports.sort_unstable();
        self.ports.dedup();
        self
    }

    /// True when there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The placeholder of the credential `name`.
    #[must_use]
    pub fn placeholder(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(c, _)| c.name == name)
            .map(|(_, p)| p.as_str())
    }

    /// The variables a command gets: each credential's `env` set to its
    /// placeholder, and for git an `http.https://HOST/.extraHeader` per
    /// exact bound host of a credential with a variable, and one for
    /// `https://HOST:PORT/` per port of [`RunCredentials::with_ports`]
    /// (through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`).
    #[must_use]
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        let mut git = Vec::new();
        for (credential, placeholder) in self.entries.iter() {
            let Some(var) = &credential.env else { continue };
            env.push((var.clone(), placeholder.clone()));
            for host in &credential.host_patterns {
                if host.starts_with("*.") {
                    continue;
                }
                let Some((name, value)) = Credential::injected_with(credential, placeholder) else {
                    continue;
                };
                let header = format!("{name}: {value}");
                git.push((format!("http.https://{host}/.extraHeader"), header.clone()));
                for port in &self.ports {
                    git.push((
                        format!("http.https://{host}:{port}/.extraHeader"),
                        header.clone(),
                    ));
                }
            }
        }
        if !git.is_empty() {
            env.push(("GIT_CONFIG_COUNT".to_owned(), git.len().to_string()));
            for (i, (key, value)) in git.into_iter().enumerate() {
                env.push((format!("GIT_CONFIG_KEY_{i}"), key));
                env.push((format!("GIT_CONFIG_VALUE_{i}"), value));
            }
        }
        env
    }

    /// The credential `name`, by name.
    #[must_use]
    pub fn credential(&self, name: &str) -> Option<&Credential> {
        self.entries.iter().map(|(c, _)| c).find(|c| c.name == name)
    }

    /// Each credential and its placeholder.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Credential, &str)> {
        self.entries.iter().map(|(c, p)| (c, p.as_str()))
    }

    /// Does any credential bind `host`?
    #[must_use]
    pub fn binds(&self, host: &str) -> bool {
        self.entries.iter().any(|(c, _)| c.binds(host))
    }

    /// The headers as sent to `to`: every placeholder (also inside
    /// `Authorization: Basic`) replaced by its real value, each header
    /// kept in its place; nothing else changes.
    ///
    /// # Errors
    ///
    /// [`EgressError::Credential`] when a placeholder is in a header of a
    /// request its credential is not bound to (host, method, path) or one
    /// not over TLS: nothing may be sent then.
    pub fn rewrite(
        &self,
        headers: &http::HeaderMap,
        to: &Destination<'_>,
    ) -> Result<http::HeaderMap, EgressError> {
        rewrite::rewrite(self, headers, to)
    }

    /// The first credential whose placeholder is in `headers` (for a
    /// request that must carry none: cleartext).
    #[must_use]
    pub fn found_in(&self, headers: &http::HeaderMap) -> Option<&Credential> {
        rewrite::found_in(self, headers)
    }
}

impl Credential {
    /// The header git is told to add: the injected form, with the
    /// placeholder for the value.
    fn injected_with(credential: &Credential, placeholder: &str) -> Option<(String, String)> {
        let (name, value) = match &credential.inject {
            Inject::Bearer => ("Authorization".to_owned(), format!("Bearer {placeholder}")),
            Inject::Header(h) => (h.as_str().to_owned(), placeholder.to_owned()),
            Inject::Basic(user) => (
                "Authorization".to_owned(),
                format!(
                    "Basic {}",
                    base64::encode(format!("{user}:{placeholder}").as_bytes())
                ),
            ),
        };
        Some((name, value))
    }
}

/// The header `http_request` adds for `credential` on the hop to
/// `verdict`: refused on the first hop when the credential is not bound
/// there, left out on a later (redirected) one.
pub(crate) fn inject_for(
    credential: &Credential,
    verdict: &crate::policy::UrlVerdict,
    first: bool,
) -> Result<Option<(HeaderName, HeaderValue)>, EgressError> {
    let url = url::Url::parse(verdict.url()).ok();
    let target = url.as_ref().map_or("/", |u| {
        &u[url::Position::BeforePath..url::Position::AfterQuery]
    });
    let host = verdict.host();
    let to = Destination {
        host: &host,
        method: verdict.method(),
        target,
        tls: verdict.is_https(),
    };
    match credential.allows(&to) {
        Ok(()) => Ok(credential.injected()),
        Err(e) if first => Err(e),
        Err(_) => Ok(None),
    }
}

/// A DER certificate as PEM.
#[cfg(feature = "proxy")]
pub(crate) fn pem_certificate(der: &[u8]) -> String {
    let text = base64::encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}
