//! `agentcaps-egress`: an HTTP(S) client that an agent tool — or a
//! model-provider adapter — can point at untrusted URLs without opening a
//! path into the host's network.
//!
//! Every URL is parsed once by the WHATWG rules and judged: scheme
//! (`http`/`https`), no userinfo, no IPv6 zone id, name rules (special-use
//! names and single labels refused before any query, allow and deny
//! lists after UTS-46 normalization), port and method. The client resolves
//! the host itself, judges **every** answer (one denied answer refuses the
//! name) and dials only an address it judged; redirects are followed by
//! the client and judged from scratch, hop by hop. TLS verifies the URL's
//! host, never the pinned address.
//!
//! ```
//! use agentcaps_egress::{EgressPolicy, Method};
//!
//! let policy = EgressPolicy::default();
//! // A public name passes the lexical judgement (its addresses are judged
//! // when it is resolved).
//! assert!(policy.check_url("https://docs.rs/url", &Method::GET).is_ok());
//! // 0x7f.1 is 127.0.0.1: refused as the address it denotes.
//! let refused = policy.check_url("http://0x7f.1/", &Method::GET).unwrap_err();
//! assert_eq!(refused.rule(), "address.special-purpose");
//! assert!(refused.to_string().contains("127.0.0.0/8"));
//! ```
//!
//! Fetching (inside a Tokio runtime):
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentcaps_egress::EgressError> {
//! use agentcaps_egress::{Client, EgressPolicy};
//!
//! let client = Client::new(EgressPolicy::default())?;
//! let mut response = client.get("https://docs.rs/").send().await?;
//! while let Some(chunk) = response.chunk().await? {
//!     // server-sent events arrive here as they come
//!     let _ = chunk;
//! }
//! # Ok(()) }
//! ```
//!
//! # What is and is not protected
//!
//! Protected: every spelling of an address, DNS answers pointing inward
//! (rebinding included: a hop's name is resolved once and only those
//! answers are dialled), redirects to anything the first URL could not
//! reach, environment proxy variables (ignored), oversized or slow
//! responses. Not protected: what a *public* server does with what it is
//! sent, and a private network reachable through public addresses (a
//! host's own public address is denied by `deny_own_addresses`, other
//! routes are not known to this crate).
//!
//! # Crate features
//!
//! - `proxy` (default): [`proxy`], an HTTP proxy (absolute-form `http://`
//!   requests and `CONNECT` tunnels) whose every connection is judged by
//!   the policy, for commands that need the web only through this judge.
//!
//! Resolution (hickory-resolver), TLS (rustls with `ring`, Web PKI roots)
//! and HTTP/1.1 and HTTP/2 (hyper) are always built in.
//!
//! # Types from other crates
//!
//! [`Method`], [`StatusCode`], [`Version`], [`HeaderMap`], [`HeaderName`] and
//! [`HeaderValue`] come from the
//! `http` crate and [`Bytes`] from `bytes`: the common vocabulary of Rust
//! HTTP code, re-exported here on purpose. No hyper, hickory or rustls type
//! is part of the API.
#![forbid(unsafe_code)]

mod address;
mod client;
mod config;
pub mod credentials;
pub mod danger;
mod error;
mod headers;
mod name;
mod policy;
#[cfg(feature = "proxy")]
pub mod proxy;
mod resolve;
mod response;
mod transport;

pub use bytes::Bytes;
pub use client::{Client, ClientBuilder, RequestBuilder, ResolvedUrl};
pub use config::EgressPolicyConfig;
pub use error::{
    AddressRule, CredentialRule, EgressError, HeaderRule, NameRule, Phase, RedirectRule,
};
pub use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
pub use policy::{EgressPolicy, MAX_URL_BYTES, UrlVerdict, parse_method};
pub use response::{BodyBytes, BodyText, Hop, Response};
