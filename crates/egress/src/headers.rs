//! Caller headers: refused when they could inject a line, override what
//! the client decides (the host, the framing) or carry a cloud-metadata
//! credential header.

use http::{HeaderMap, HeaderName, HeaderValue, Method};

use crate::error::{EgressError, HeaderRule};
use crate::policy::parse_method;

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
];

/// Headers cloud metadata services require or honour: a request carrying
/// one could only be meant for such a service.
pub(crate) const METADATA: &[&str] = &[
    "metadata",
    "metadata-flavor",
    "x-google-metadata-request",
    "x-metadata-token",
    "x-identity-header",
    "x-ms-metadata",
];

/// Header name prefixes of cloud-metadata tokens: every header whose
/// name starts with one of these is refused (`X-aws-ec2-metadata-token`,
/// `X-aws-ec2-metadata-token-ttl-seconds`, `X-aliyun-ecs-metadata-token`,
/// `X-aliyun-ecs-metadata-token-ttl-seconds`, …).
pub(crate) const RESERVED_PREFIXES: &[&str] =
    &["x-aws-ec2-metadata-token", "x-aliyun-ecs-metadata-token"];

/// Headers that ask a server to treat the request as another method;
/// accepted only when their value is a method the policy allows.
pub(crate) const METHOD_OVERRIDES: &[&str] = &[
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// Headers dropped when a redirect changes origin.
pub(crate) const CREDENTIALS: &[&str] = &["authorization", "cookie", "proxy-authorization"];

fn refuse(name: &str, rule: HeaderRule) -> EgressError {
    EgressError::Header {
        name: name.to_owned(),
        rule,
    }
}

/// Validates one caller header; `methods` are the methods the policy
/// allows (a method-override header must name one of them).
pub(crate) fn caller_header(
    name: &str,
    value: &str,
    methods: &[Method],
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
    judge_meaning(&parsed, &value, methods).map_err(|e| match e {
        EgressError::Header { rule, .. } => refuse(name, rule),
        other => other,
    })?;
    Ok((parsed, value))
}

/// The rules on what a header asks for, whoever wrote the request: no
/// cloud-metadata header, no override to a method the policy refuses.
/// (The proxy applies these to the requests it forwards.)
pub(crate) fn judge_meaning(
    name: &HeaderName,
    value: &HeaderValue,
    methods: &[Method],
) -> Result<(), EgressError> {
    let lower = name.as_str();
    if METADATA.contains(&lower) || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return Err(refuse(lower, HeaderRule::Reserved));
    }
    if METHOD_OVERRIDES.contains(&lower) {
        let allowed = value
            .to_str()
            .ok()
            .and_then(|v| parse_method(v.trim()).ok())
            .is_some_and(|m| methods.contains(&m));
        if !allowed {
            return Err(refuse(lower, HeaderRule::MethodOverride));
        }
    }
    Ok(())
}

/// The size of a response head as counted against `max_header_bytes`:
/// every name and value plus `": "` and CRLF.
pub(crate) fn head_size(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len() + 4)
        .sum()
}
