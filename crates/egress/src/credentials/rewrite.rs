//! The header rewrite: placeholders found in request header values (and
//! inside `Authorization: Basic`, decoded and re-encoded) are replaced by
//! the real values, for a request each of their credentials is bound to.
//! Every header keeps its name, its place and its count; a header without
//! a placeholder is passed as it is. A header that holds a real value
//! itself is held to its credential's binding just the same.

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue, Method};

use super::{Credential, RunCredentials, base64};
use crate::error::EgressError;

/// Where a request goes, as far as a credential's binding asks.
#[derive(Debug, Clone, Copy)]
pub struct Destination<'a> {
    /// The host (normalised: lower case, no trailing dot).
    pub host: &'a str,
    /// The method.
    pub method: &'a Method,
    /// The request target (origin form: path and query).
    pub target: &'a str,
    /// Over TLS the egress client verifies.
    pub tls: bool,
}

/// `Basic ` and what follows, when `value` is one.
fn basic_payload(value: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(value).ok()?;
    let (scheme, rest) = text.split_once(' ')?;
    scheme.eq_ignore_ascii_case("basic").then(|| rest.trim())
}

/// Replaces each placeholder of `run` in `text`, after checking its
/// credential may go to `to`; `None` when there is none. A text that
/// already holds a real value is held to the same binding (and left as it
/// is): a command should never hold one, but if a bound server showed it
/// the value, the proxy still sends it nowhere else it can see.
fn swap(
    run: &RunCredentials,
    text: &[u8],
    to: Option<&Destination<'_>>,
) -> Result<Option<Vec<u8>>, EgressError> {
    let mut out: Option<Vec<u8>> = None;
    for (credential, placeholder) in run.iter() {
        let value = credential.secret().expose().as_bytes();
        let current = out.as_deref().unwrap_or(text);
        let holds_placeholder = find(current, placeholder.as_bytes()).is_some();
        if !holds_placeholder && find(text, value).is_none() {
            continue;
        }
        match to {
            Some(to) => credential.allows(to)?,
            None => return Err(found(credential)),
        }
        if holds_placeholder {
            out = Some(replace(current, placeholder.as_bytes(), value));
        }
    }
    Ok(out)
}

fn found(credential: &Credential) -> EgressError {
    EgressError::Credential {
        name: credential.name.clone(),
        host: String::new(),
        rule: crate::error::CredentialRule::Cleartext,
    }
}

fn find(text: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    text.windows(needle.len()).position(|w| w == needle)
}

fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + to.len());
    let mut rest = text;
    while let Some(i) = find(rest, from) {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// One header value as sent: `None` when it is unchanged.
fn rewrite_value(
    run: &RunCredentials,
    is_authorization: bool,
    value: &HeaderValue,
    to: Option<&Destination<'_>>,
) -> Result<Option<HeaderValue>, EgressError> {
    let bytes = value.as_bytes();
    let mut changed = swap(run, bytes, to)?;
    if is_authorization
        && let Some(payload) = basic_payload(changed.as_deref().unwrap_or(bytes))
        && let Some(decoded) = base64::decode(payload)
        && let Some(swapped) = swap(run, &decoded, to)?
    {
        let mut text = b"Basic ".to_vec();
        text.extend_from_slice(base64::encode(&swapped).as_bytes());
        changed = Some(text);
    }
    let Some(new) = changed else {
        return Ok(None);
    };
    let mut value = HeaderValue::from_bytes(&new).map_err(|_| EgressError::Http {
        url: String::new(),
        message: "a header with a credential could not be rebuilt".to_owned(),
    })?;
    value.set_sensitive(true);
    Ok(Some(value))
}

pub(super) fn rewrite(
    run: &RunCredentials,
    headers: &HeaderMap,
    to: &Destination<'_>,
) -> Result<HeaderMap, EgressError> {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let new = rewrite_value(run, name == AUTHORIZATION, value, Some(to))?;
        out.append(name.clone(), new.unwrap_or_else(|| value.clone()));
    }
    Ok(out)
}

pub(super) fn found_in<'r>(run: &'r RunCredentials, headers: &HeaderMap) -> Option<&'r Credential> {
    for (name, value) in headers {
        if let Err(EgressError::Credential { name: found, .. }) =
            rewrite_value(run, name == AUTHORIZATION, value, None)
        {
            return run.credential(&found);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue, Method};

    use super::super::{Credential, RunCredentials, Secret, base64};
    use super::Destination;
    use crate::error::EgressError;

    const VALUE: &str = "ghp_RealSecretValue0123456789abcdef";

    fn run() -> RunCredentials {
        let c = Credential::new(
            "github",
            Secret::new(VALUE.to_owned()),
            &["github.com".to_owned()],
        )
        .unwrap()
        .with_methods(&["GET".to_owned()])
        .unwrap()
        .with_paths(&["/repos/acme/**".to_owned()])
        .unwrap();
        RunCredentials::new(&[c]).unwrap()
    }

    fn to<'a>(host: &'a str, method: &'a Method, target: &'a str, tls: bool) -> Destination<'a> {
        Destination {
            host,
            method,
            target,
            tls,
        }
    }

    #[test]
    fn swaps_bearer_and_basic_and_keeps_the_rest() {
        let run = run();
        let p = run.placeholder("github").unwrap().to_owned();
        let mut h = HeaderMap::new();
        h.append("accept", HeaderValue::from_static("*/*"));
        h.append("authorization", format!("Bearer {p}").parse().unwrap());
        h.append("x-two", HeaderValue::from_static("1"));
        h.append("x-two", HeaderValue::from_static("2"));
        let get = Method::GET;
        let out = run
            .rewrite(&h, &to("github.com", &get, "/repos/acme/x", true))
            .unwrap();
        assert_eq!(out.len(), h.len());
        assert_eq!(out["authorization"], format!("Bearer {VALUE}").as_str());
        assert_eq!(out.get_all("x-two").iter().count(), 2);
        let basic = format!(
            "Basic {}",
            base64::encode(format!("x-access-token:{p}").as_bytes())
        );
        let mut h = HeaderMap::new();
        h.insert("authorization", basic.parse().unwrap());
        let out = run
            .rewrite(&h, &to("github.com", &get, "/repos/acme/x", true))
            .unwrap();
        let expected = format!(
            "Basic {}",
            base64::encode(format!("x-access-token:{VALUE}").as_bytes())
        );
        assert_eq!(out["authorization"], expected.as_str());
    }

    #[test]
    fn refuses_outside_the_binding() {
        let run = run();
        let p = run.placeholder("github").unwrap().to_owned();
        let mut h = HeaderMap::new();
        h.insert("authorization", format!("token {p}").parse().unwrap());
        let (get, post) = (Method::GET, Method::POST);
        for (dest, rule) in [
            (
                to("evil.example", &get, "/repos/acme/x", true),
                "credential-unbound",
            ),
            (
                to("github.com", &post, "/repos/acme/x", true),
                "credential-unbound",
            ),
            (
                to("github.com", &get, "/repos/other", true),
                "credential-unbound",
            ),
            (
                to("github.com", &get, "/repos/acme/../other", true),
                "credential-unbound",
            ),
            (
                to("github.com", &get, "/repos/acme/x", false),
                "credential-cleartext",
            ),
        ] {
            let e = run.rewrite(&h, &dest).unwrap_err();
            assert!(matches!(e, EgressError::Credential { .. }), "{e}");
            assert_eq!(e.rule(), rule, "{dest:?}");
            assert!(!e.to_string().contains(VALUE));
        }
        assert_eq!(run.found_in(&h).map(Credential::name), Some("github"));
        assert!(run.found_in(&HeaderMap::new()).is_none());
    }

    #[test]
    fn the_value_itself_is_held_to_the_binding_and_never_rewritten() {
        let run = run();
        let get = Method::GET;
        let plain = format!("token {VALUE}");
        let basic = format!("Basic {}", base64::encode(format!("x:{VALUE}").as_bytes()));
        for text in [plain.as_str(), basic.as_str()] {
            let mut h = HeaderMap::new();
            h.insert("authorization", text.parse().unwrap());
            for dest in [
                to("evil.example", &get, "/repos/acme/x", true),
                to("github.com", &get, "/repos/other", true),
            ] {
                let e = run.rewrite(&h, &dest).unwrap_err();
                assert_eq!(e.rule(), "credential-unbound", "{text} {dest:?}");
                assert!(!e.to_string().contains(VALUE));
            }
            assert_eq!(run.found_in(&h).map(Credential::name), Some("github"));
            let out = run
                .rewrite(&h, &to("github.com", &get, "/repos/acme/x", true))
                .unwrap();
            assert_eq!(out, h);
        }
    }
}
