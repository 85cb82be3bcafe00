//! The header rewrite's invariants, shared by the property test here and
//! the fuzz target `credential_rewrite`: arbitrary header sets, with and
//! without placeholders (plain and inside `Authorization: Basic`), sent to
//! the bound host or another, over TLS or not, with a bound method and
//! path or not.
//!
//! - the real value appears in a rewritten request only when it goes to
//!   the bound host, over TLS, with a bound method and path (a request
//!   that already holds it elsewhere is refused like a placeholder);
//! - a request with neither a placeholder nor the value is passed exactly
//!   as it came;
//! - no header is lost, duplicated, renamed or moved;
//! - each rewritten value is the input with every placeholder replaced
//!   (inside Basic: decoded, replaced, re-encoded), and no placeholder is
//!   left;
//! - a refusal is a credential rule, and only where the value may not go.

use agentcaps_egress::credentials::{Credential, Destination, RunCredentials, Secret};
use agentcaps_egress::{EgressError, HeaderMap, HeaderName, HeaderValue, Method};

pub const VALUE: &str = "tok_RealValueForTheOracle0123456789abcd";
pub const BOUND: &str = "api.bound.test";

pub fn credentials() -> RunCredentials {
    let credential = Credential::new("api", Secret::new(VALUE.to_owned()), &[BOUND.to_owned()])
        .and_then(|c| c.with_methods(&["GET".to_owned(), "POST".to_owned()]))
        .and_then(|c| c.with_paths(&["/v1/**".to_owned()]))
        .expect("credential");
    RunCredentials::new(&[credential]).expect("placeholders")
}

/// An independent base64 (standard alphabet, padded).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An independent decoder of the canonical spelling only (what `base64`
/// gives back unchanged).
pub fn unbase64(text: &str) -> Option<Vec<u8>> {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let body = text.trim_end_matches('=');
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in body.bytes() {
        let v = A.iter().position(|&a| a == c)?;
        bits = bits << 6 | v as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    (base64(&out) == text).then_some(out)
}

/// The decoded payload of `Basic PAYLOAD`.
fn basic_decoded(value: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(value).ok()?;
    let (scheme, rest) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    unbase64(rest.trim())
}

fn contains(text: &[u8], needle: &[u8]) -> bool {
    text.windows(needle.len()).any(|w| w == needle)
}

/// A request built from fuzz bytes: the first three choose the host, the
/// method, TLS and the path; the rest are `name: value` lines where byte
/// `0xff` stands for the placeholder and `0xfe` for `Basic
/// base64(user:PLACEHOLDER)`, `0xfd` for the real value and `0xfc` for
/// `Basic base64(user:VALUE)` (a command that somehow learnt it).
pub struct Case {
    pub headers: HeaderMap,
    pub host: &'static str,
    pub method: Method,
    pub target: &'static str,
    pub tls: bool,
}

pub fn case(data: &[u8], placeholder: &str) -> Option<Case> {
    let (&[h, m, p], rest) = data.split_first_chunk::<3>()?;
    let host = if h % 2 == 0 { BOUND } else { "other.test" };
    let method = [Method::GET, Method::POST, Method::DELETE][usize::from(m % 3)].clone();
    let tls = m & 0x80 == 0;
    let target = ["/v1/x", "/v2/x", "/v1/../v2", "/v1/%2e%2e/v2?x=/v1/"][usize::from(p % 4)];
    let mut headers = HeaderMap::new();
    for line in rest.split(|b| *b == b'\n') {
        let mut text = Vec::new();
        for &b in line {
            match b {
                0xff => text.extend_from_slice(placeholder.as_bytes()),
                0xfe => {
                    text.extend_from_slice(b"Basic ");
                    text.extend_from_slice(
                        base64(format!("u:{placeholder}").as_bytes()).as_bytes(),
                    );
                }
                0xfd => text.extend_from_slice(VALUE.as_bytes()),
                0xfc => {
                    text.extend_from_slice(b"Basic ");
                    text.extend_from_slice(base64(format!("u:{VALUE}").as_bytes()).as_bytes());
                }
                other => text.push(other),
            }
        }
        let Some(colon) = text.iter().position(|b| *b == b':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(text[..colon].trim_ascii()),
            HeaderValue::from_bytes(text[colon + 1..].trim_ascii()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    Some(Case {
        headers,
        host,
        method,
        target,
        tls,
    })
}

/// What `value` should become: every placeholder replaced, and inside
/// the Basic payload of `Authorization` too (anywhere else base64 is just
/// text).
fn expected(authorization: bool, value: &[u8], placeholder: &str) -> Vec<u8> {
    let basic = format!("Basic {}", base64(format!("u:{placeholder}").as_bytes()));
    if authorization && value == basic.as_bytes() {
        return format!("Basic {}", base64(format!("u:{VALUE}").as_bytes())).into_bytes();
    }
    // Byte by byte: a value need not be UTF-8.
    let (from, to) = (placeholder.as_bytes(), VALUE.as_bytes());
    let mut out = Vec::new();
    let mut i = 0;
    while i < value.len() {
        if value[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(value[i]);
            i += 1;
        }
    }
    out
}

/// The violated invariant, if any.
pub fn violations(run: &RunCredentials, case: &Case) -> Option<String> {
    let placeholder = run.placeholder("api")?;
    let to = Destination {
        host: case.host,
        method: &case.method,
        target: case.target,
        tls: case.tls,
    };
    // A placeholder or the value itself, plain or (in `Authorization`)
    // inside a Basic payload: either is held to the binding.
    let holds = |v: &[u8]| contains(v, placeholder.as_bytes()) || contains(v, VALUE.as_bytes());
    let carries = case.headers.iter().any(|(n, v)| {
        holds(v.as_bytes())
            || (n == "authorization" && basic_decoded(v.as_bytes()).is_some_and(|d| holds(&d)))
    });
    let may_go = case.host == BOUND
        && case.tls
        && case.method != Method::DELETE
        && case.target.starts_with("/v1/x");
    match run.rewrite(&case.headers, &to) {
        Err(EgressError::Credential { .. }) if carries && !may_go => None,
        Err(e) => Some(format!("refused {e} (carries {carries}, may go {may_go})")),
        Ok(out) => {
            if carries && !may_go {
                return Some("a placeholder went where the value may not".to_owned());
            }
            let mut got = out.iter();
            for (name, value) in &case.headers {
                let Some((n, v)) = got.next() else {
                    return Some(format!("header {name} lost"));
                };
                if n != name {
                    return Some(format!("{name} became {n}"));
                }
                let want = expected(name == "authorization", value.as_bytes(), placeholder);
                if v.as_bytes() != want.as_slice() {
                    return Some(format!("{name}: {:?} is not {want:?}", v.as_bytes()));
                }
                if v.as_bytes()
                    .windows(placeholder.len())
                    .any(|w| w == placeholder.as_bytes())
                {
                    return Some(format!("{name}: a placeholder was left"));
                }
            }
            if got.next().is_some() {
                return Some("a header was added".to_owned());
            }
            // Plainly, or where the rewrite looks into Basic payloads.
            let has_value = |v: &[u8]| contains(v, VALUE.as_bytes());
            let leaked = out.iter().any(|(n, v)| {
                has_value(v.as_bytes())
                    || (n == "authorization"
                        && basic_decoded(v.as_bytes()).is_some_and(|d| has_value(&d)))
            });
            if leaked && !may_go {
                return Some("the value went where it may not".to_owned());
            }
            None
        }
    }
}
