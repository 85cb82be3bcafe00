//! Caller headers: refused when they could inject a line, override what
//! the client decides (the host, the framing) or carry a cloud-metadata
//! credential header.

use http::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{EgressError, HeaderRule};

/// Headers the caller may not set. `host` and the framing headers are the
/// client's to decide (the host comes from the judged URL); the rest are
/// what cloud metadata services require, so a request carrying them could
/// only be meant for one.
pub(crate) const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
    "metadata",
    "metadata-flavor",
    "x-google-metadata-request",
    "x-aws-ec2-metadata-token",
    "x-aws-ec2-metadata-token-ttl-seconds",
    "x-identity-header",
    "x-ms-metadata",
];

/// Headers dropped when a redirect changes origin.
pub(crate) const CREDENTIALS: &[&str] = &["authorization", "cookie", "proxy-authorization"];

fn refuse(name: &str, rule: HeaderRule) -> EgressError {
    EgressError::Header {
        name: name.to_owned(),
        rule,
    }
}

/// Validates one caller header.
pub(crate) fn caller_header(
    name: &str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), EgressError> {
    let breaks = |s: &str| s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
    if breaks(name) || breaks(value) {
        return Err(refuse(name, HeaderRule::LineBreak));
    }
    let parsed = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| refuse(name, HeaderRule::Invalid))?;
    if RESERVED.contains(&parsed.as_str()) {
        return Err(refuse(name, HeaderRule::Reserved));
    }
    let value =
        HeaderValue::from_str(value.trim()).map_err(|_| refuse(name, HeaderRule::Invalid))?;
    Ok((parsed, value))
}

/// The size of a response head as counted against `max_header_bytes`:
/// every name and value plus `": "` and CRLF.
pub(crate) fn head_size(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum()
}
