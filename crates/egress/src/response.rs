//! A response: status, headers, the redirect chain with the address each
//! hop dialled, and a body read as a stream under the size limit and the
//! request's deadline.

use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::error::{EgressError, Phase};

/// One request of a chain: what was asked, of which address, and what came
/// back.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hop {
    /// The URL requested (as parsed and judged).
    pub url: String,
    /// The method used.
    pub method: Method,
    /// The status it answered.
    pub status: StatusCode,
    /// The judged address the connection was made to.
    pub address: SocketAddr,
    /// Whether a pooled connection was reused.
    pub reused: bool,
    /// The HTTP version spoken on the connection.
    pub version: Version,
}

/// A whole body read by [`Response::bytes`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BodyBytes {
    /// The bytes read, at most `max_response_bytes`.
    pub bytes: Bytes,
    /// The body was longer than `max_response_bytes` and was cut.
    pub truncated: bool,
    /// A time limit stopped reading: the request's deadline
    /// (`timeout_ms`), or no byte for `idle_timeout_ms` (then `stalled` is
    /// true too); `bytes` holds what arrived before it.
    pub timed_out: bool,
    /// The body stopped arriving for `idle_timeout_ms`.
    pub stalled: bool,
}

/// A whole body read by [`Response::text`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BodyText {
    /// The body decoded as UTF-8, invalid bytes replaced, never cut inside
    /// a character.
    pub text: String,
    /// The body was longer than `max_response_bytes` and was cut.
    pub truncated: bool,
    /// A time limit stopped reading (the deadline, or `idle_timeout_ms`).
    pub timed_out: bool,
    /// The body stopped arriving for `idle_timeout_ms`.
    pub stalled: bool,
}

/// The response to a request, after redirects were followed.
///
/// The body has not been read yet: read it chunk by chunk as it arrives
/// ([`Response::chunk`], for server-sent events) or whole
/// ([`Response::bytes`], [`Response::text`]). Either way at most
/// `max_response_bytes` are returned and the request's deadline holds.
#[derive(Debug)]
pub struct Response {
    pub(crate) status: StatusCode,
    pub(crate) version: Version,
    pub(crate) headers: HeaderMap,
    pub(crate) hops: Vec<Hop>,
    pub(crate) body: Option<Incoming>,
    pub(crate) read: u64,
    pub(crate) limit: u64,
    pub(crate) truncated: bool,
    pub(crate) deadline: Instant,
    pub(crate) timeout_ms: u64,
    pub(crate) idle: std::time::Duration,
}

impl Response {
    /// The status of the final response.
    #[must_use]
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The HTTP version of the final response.
    #[must_use]
    pub fn version(&self) -> Version {
        self.version
    }

    /// The headers of the final response.
    #[must_use]
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The final URL (after redirects).
    #[must_use]
    pub fn url(&self) -> &str {
        self.hops.last().map_or("", |h| h.url.as_str())
    }

    /// The address the final response came from.
    #[must_use]
    pub fn remote_addr(&self) -> Option<SocketAddr> {
        self.hops.last().map(|h| h.address)
    }

    /// Every request of the chain, first to last (the last is this
    /// response).
    #[must_use]
    pub fn hops(&self) -> &[Hop] {
        &self.hops
    }

    /// Whether the body was cut at `max_response_bytes` (known once the
    /// body has been read up to the limit).
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The next piece of the body as it arrives, `None` at its end (or
    /// after the limit cut it: then [`Response::truncated`] is true).
    ///
    /// # Errors
    ///
    /// [`EgressError::Timeout`] when the request's deadline passes
    /// ([`Phase::Total`]) or no byte arrives for the idle limit
    /// ([`Phase::Idle`]),
    /// [`EgressError::Http`] when the connection breaks.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, EgressError> {
        loop {
            let Some(body) = self.body.as_mut() else {
                return Ok(None);
            };
            let now = Instant::now();
            let idle_end = now.checked_add(self.idle).unwrap_or(self.deadline);
            let (until, phase, limit_ms) = if idle_end < self.deadline {
                let idle_ms = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
                (idle_end, Phase::Idle, idle_ms)
            } else {
                (self.deadline, Phase::Total, self.timeout_ms)
            };
            let frame = match tokio::time::timeout_at(until, body.frame()).await {
                Err(_) => {
                    self.body = None;
                    return Err(EgressError::Timeout {
                        url: self.url().to_owned(),
                        phase,
                        limit_ms,
                    });
                }
                Ok(None) => {
                    self.body = None;
                    return Ok(None);
                }
                Ok(Some(Err(e))) => {
                    self.body = None;
                    return Err(EgressError::Http {
                        url: self.url().to_owned(),
                        message: e.to_string(),
                    });
                }
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue; // trailers
            };
            if data.is_empty() {
                continue;
            }
            let room = self.limit.saturating_sub(self.read);
            let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
            if len <= room {
                self.read += len;
                return Ok(Some(data));
            }
            // Over the limit: keep what fits, stop reading, say so.
            self.truncated = true;
            self.body = None;
            self.read = self.limit;
            if room == 0 {
                return Ok(None);
            }
            let keep = usize::try_from(room).unwrap_or(usize::MAX);
            return Ok(Some(data.slice(..keep.min(data.len()))));
        }
    }

    /// The whole body, at most `max_response_bytes`.
    ///
    /// # Errors
    ///
    /// [`EgressError::Http`] when the connection breaks. A deadline that
    /// passes while reading is not an error: what arrived is returned with
    /// `timed_out` set.
    pub async fn bytes(mut self) -> Result<BodyBytes, EgressError> {
        let mut chunks: Vec<Bytes> = Vec::new();
        let mut timed_out = false;
        let mut stalled = false;
        loop {
            match self.chunk().await {
                Ok(Some(chunk)) => chunks.push(chunk),
                Ok(None) => break,
                Err(EgressError::Timeout { phase, .. }) => {
                    timed_out = true;
                    stalled = phase == Phase::Idle;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        // One chunk (the common small body) is returned without a copy.
        let bytes = match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop().unwrap_or_default(),
            _ => Bytes::from(chunks.concat()),
        };
        Ok(BodyBytes {
            bytes,
            truncated: self.truncated,
            timed_out,
            stalled,
        })
    }

    /// The whole body as text (UTF-8, invalid bytes replaced), at most
    /// `max_response_bytes`; a cut never splits a character.
    ///
    /// # Errors
    ///
    /// As [`Response::bytes`].
    pub async fn text(self) -> Result<BodyText, EgressError> {
        let body = self.bytes().await?;
        let cut = body.truncated || body.timed_out;
        Ok(BodyText {
            text: decode(&body.bytes, cut),
            truncated: body.truncated,
            timed_out: body.timed_out,
            stalled: body.stalled,
        })
    }
}

/// UTF-8 with invalid bytes replaced; when the bytes were cut, an
/// incomplete character at the very end is dropped rather than replaced.
fn decode(bytes: &[u8], cut: bool) -> String {
    let mut end = bytes.len();
    if cut
        && let Err(e) = std::str::from_utf8(bytes)
        && e.error_len().is_none()
        && e.valid_up_to() >= bytes.len().saturating_sub(3)
    {
        end = e.valid_up_to();
    }
    String::from_utf8_lossy(bytes.get(..end).unwrap_or(bytes)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn a_cut_character_is_dropped_not_replaced() {
        let euro = "a€".as_bytes();
        assert_eq!(decode(&euro[..3], true), "a");
        assert_eq!(decode(&euro[..3], false), "a\u{fffd}");
        assert_eq!(decode(b"a\xffb", true), "a\u{fffd}b");
    }
}
