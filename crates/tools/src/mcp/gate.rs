//! Who may talk to the HTTP server: the bearer token, the `Host` a request
//! names and the `Origin` a browser sends, judged before anything is read.
//!
//! A web page can make a browser send requests to `127.0.0.1`, or to a name
//! it re-points there (DNS rebinding); such a request names the page's
//! origin in `Origin` and the attacker's name in `Host`, so both must be
//! loopback or listed. A request without `Origin` does not come from a
//! page.

use std::net::SocketAddr;

use http::{HeaderMap, StatusCode, header};

/// Names always accepted in `Host` and `Origin`.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The judge of one server's requests.
pub(crate) struct Gate {
    token: Option<Vec<u8>>,
    hosts: Vec<String>,
    origins: Vec<String>,
}

/// A request refused at the gate: the status and the text saying why.
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) text: &'static str,
}

impl Gate {
    /// A gate for a server bound at `local`: `token` if any, plus the
    /// listed hosts and origins (loopback ones are always allowed, and the
    /// bound address when it is a specific one).
    pub(crate) fn new(
        local: SocketAddr,
        token: Option<&str>,
        hosts: &[String],
        origins: &[String],
    ) -> Self {
        let mut all_hosts: Vec<String> = LOOPBACK_NAMES.iter().map(|h| (*h).to_owned()).collect();
        if !local.ip().is_unspecified() && !local.ip().is_loopback() {
            all_hosts.push(local.ip().to_string());
        }
        all_hosts.extend(hosts.iter().map(|h| normalize_host(h)));
        Self {
            token: token.map(|t| t.trim().as_bytes().to_vec()),
            hosts: all_hosts,
            origins: origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Judges a request's headers.
    pub(crate) fn judge(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        if !self.host_allowed(headers) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                text: "forbidden: the Host header names neither loopback nor an allowed host (--allow-host)",
            });
        }
        if !self.origin_allowed(headers) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                text: "forbidden: the Origin is neither loopback nor an allowed origin (--allow-origin)",
            });
        }
        if let Some(token) = &self.token
            && !bearer_matches(headers, token)
        {
            return Err(Refusal {
                status: StatusCode::UNAUTHORIZED,
                text: "unauthorized: send Authorization: Bearer <token> (the token in the server's --token-file)",
            });
        }
        Ok(())
    }

    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
            return false;
        };
        let Ok(authority) = host.parse::<http::uri::Authority>() else {
            return false;
        };
        let name = normalize_host(authority.host());
        let with_port = authority.port_u16().map(|p| format!("{name}:{p}"));
        self.hosts
            .iter()
            .any(|allowed| *allowed == name || Some(allowed) == with_port.as_ref())
    }

    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(origin) = headers.get(header::ORIGIN) else {
            return true;
        };
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        let Some((scheme, rest)) = origin.split_once("://") else {
            return false;
        };
        let Ok(authority) = rest.parse::<http::uri::Authority>() else {
            return false;
        };
        let name = normalize_host(authority.host());
        if matches!(scheme, "http" | "https") && LOOPBACK_NAMES.contains(&name.as_str()) {
            return true;
        }
        self.origins.iter().any(|allowed| {
            *allowed == origin
                || allowed
                    .strip_suffix(":*")
                    .is_some_and(|base| origin.strip_prefix(base).is_some_and(port_or_nothing))
        })
    }
}

/// `""` or `":1234"`: what may follow an origin allowed with `:*`.
fn port_or_nothing(rest: &str) -> bool {
    rest.is_empty()
        || rest
            .strip_prefix(':')
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
}

/// A host without IPv6 brackets, lower case.
fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Whether `headers` carry `Authorization: Bearer <token>`, compared in a
/// time that does not depend on where they differ.
fn bearer_matches(headers: &HeaderMap, token: &[u8]) -> bool {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return false;
    };
    let value = value.as_bytes();
    let Some(given) = value
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
        .and_then(|_| value.get(7..))
    else {
        return false;
    };
    let given = given.trim_ascii();
    given.len() == token.len()
        && given
            .iter()
            .zip(token)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().expect("header value"));
        }
        map
    }

    fn gate(token: Option<&str>) -> Gate {
        Gate::new(
            "127.0.0.1:8000".parse().expect("addr"),
            token,
            &["mcp.internal".to_owned()],
            &["https://app.example.com:*".to_owned()],
        )
    }

    #[test]
    fn loopback_hosts_and_listed_ones_pass_others_are_forbidden() {
        let g = gate(None);
        for host in [
            "127.0.0.1:8000",
            "localhost:8000",
            "[::1]:8000",
            "LOCALHOST",
            "mcp.internal:9",
        ] {
            assert!(g.judge(&headers(&[("host", host)])).is_ok(), "{host}");
        }
        for host in [
            "evil.example:8000",
            "127.0.0.1.evil.example",
            "localhost.evil",
            "[::2]:8000",
        ] {
            let refused = g.judge(&headers(&[("host", host)])).expect_err(host);
            assert_eq!(refused.status, StatusCode::FORBIDDEN, "{host}");
        }
        assert!(g.judge(&headers(&[])).is_err(), "no Host at all");
    }

    #[test]
    fn origins_must_be_loopback_or_listed() {
        let g = gate(None);
        let ok = |origin: &str| {
            g.judge(&headers(&[("host", "127.0.0.1"), ("origin", origin)]))
                .is_ok()
        };
        assert!(ok("http://localhost:3000"));
        assert!(ok("http://127.0.0.1"));
        assert!(ok("https://app.example.com"));
        assert!(ok("https://app.example.com:8443"));
        assert!(!ok("https://app.example.com.evil.net"));
        assert!(!ok("https://app.example.comx"));
        assert!(!ok("http://app.example.com"));
        assert!(!ok("http://evil.example"));
        assert!(!ok("null"));
        assert!(!ok("http://localhost.evil.example"));
    }

    #[test]
    fn the_token_is_required_exactly() {
        let g = gate(Some("s3cret-token\n"));
        let with = |auth: &str| {
            g.judge(&headers(&[("host", "127.0.0.1"), ("authorization", auth)]))
                .map_err(|r| r.status)
        };
        assert_eq!(with("Bearer s3cret-token"), Ok(()));
        assert_eq!(with("bearer s3cret-token"), Ok(()));
        for wrong in [
            "Bearer s3cret-toke",
            "Bearer s3cret-token2",
            "Basic s3cret-token",
            "s3cret-token",
            "Bearer ",
        ] {
            assert_eq!(with(wrong), Err(StatusCode::UNAUTHORIZED), "{wrong}");
        }
        assert_eq!(
            g.judge(&headers(&[("host", "127.0.0.1")]))
                .map_err(|r| r.status),
            Err(StatusCode::UNAUTHORIZED)
        );
    }
}
