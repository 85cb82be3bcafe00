//! `agentcaps mcp --http ADDR:PORT`: the same server over MCP's Streamable
//! HTTP transport at `/mcp` (rmcp's session-keeping service under hyper).
//!
//! Who may talk to it:
//! - It binds a loopback address unless told otherwise; any other address
//!   is refused without a bearer token ([`HttpOptions::token`]). With a
//!   token, every request without `Authorization: Bearer <token>` gets 401.
//! - `Host` must name loopback (or a host given with
//!   [`HttpOptions::allow_host`], or the address it is bound to), and an
//!   `Origin`, when a browser sends one, must be loopback or one given with
//!   [`HttpOptions::allow_origin`]: others get 403, so a web page cannot
//!   reach the server through DNS rebinding.
//! - A body is one JSON-RPC message checked as a stdio line is (the same
//!   limit, the same answers to malformed messages).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::gate::Gate;
use super::wire::{self, Checked, MAX_LINE_BYTES};
use super::{McpError, McpServer};

/// The path the server answers at.
pub const MCP_PATH: &str = "/mcp";

/// How `agentcaps mcp --http` serves: where, and whom it lets in.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// The bearer token every request must carry, if any. Required for a
    /// non-loopback address.
    pub token: Option<String>,
    /// Browser origins allowed besides loopback ones, such as
    /// `https://app.example.com:443` (`:*` for any port).
    pub allow_origins: Vec<String>,
    /// `Host` names allowed besides loopback ones and the bound address.
    pub allow_hosts: Vec<String>,
}

impl HttpOptions {
    /// Loopback only, no token.
    pub fn new() -> Self {
        Self {
            token: None,
            allow_origins: Vec::new(),
            allow_hosts: Vec::new(),
        }
    }

    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Also allows the browser origin `origin`.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allow_origins.push(origin.into());
        self
    }

    /// Also allows the `Host` name `host` (with or without a port).
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allow_hosts.push(host.into());
        self
    }

    /// Refuses a non-loopback `addr` without a token, and an empty token.
    ///
    /// # Errors
    ///
    /// [`McpError::Refused`], saying what to do instead.
    pub fn check(&self, addr: SocketAddr) -> Result<(), McpError> {
        match &self.token {
            Some(token) if token.trim().is_empty() => Err(McpError::Refused(
                "the token file is empty; put a long random token in it".to_owned(),
            )),
            None if !addr.ip().is_loopback() => Err(McpError::Refused(format!(
                "refusing to serve MCP on {addr} without --token-file: anyone who can reach it could use every tool; bind 127.0.0.1, or give --token-file FILE (clients then send Authorization: Bearer <token>)"
            ))),
            _ => Ok(()),
        }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self::new()
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// The gate and the session-keeping service behind it.
struct Front {
    gate: Gate,
    service: StreamableHttpService<McpServer, LocalSessionManager>,
}

impl McpServer {
    /// Serves MCP over Streamable HTTP at [`MCP_PATH`] on `listener`
    /// (already bound; see [`HttpOptions::check`]) until the process ends.
    /// Each client gets its own session (and roots).
    ///
    /// # Errors
    ///
    /// [`McpError::Refused`] when `options` do not allow the listener's
    /// address; [`McpError::Run`] if accepting connections fails.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
    ) -> Result<(), McpError> {
        let local = listener
            .local_addr()
            .map_err(|e| McpError::Run(e.to_string()))?;
        options.check(local)?;
        let front = Arc::new(Front {
            gate: Gate::new(
                local,
                options.token.as_deref(),
                &options.allow_hosts,
                &options.allow_origins,
            ),
            service: StreamableHttpService::new(
                {
                    let server = self.clone();
                    move || Ok(server.for_new_session())
                },
                Arc::new(LocalSessionManager::default()),
                config(),
            ),
        });
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) if is_transient(&e) => continue,
                Err(e) => return Err(McpError::Run(e.to_string())),
            };
            // An answer goes out in several writes (the stream's priming
            // event, then the message): without this, Nagle's algorithm holds
            // the last one for the client's delayed ACK, some 40 ms a call.
            let _ = stream.set_nodelay(true);
            let front = Arc::clone(&front);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| answer(Arc::clone(&front), request));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}

/// Errors `accept` returns for one connection, not for the listener.
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset, Interrupted};
    matches!(e.kind(), ConnectionAborted | ConnectionReset | Interrupted)
        || e.raw_os_error()
            .is_some_and(|code| code == 24 || code == 23)
}

/// rmcp's configuration: the same message limit as stdio. `Host` and
/// `Origin` are judged by the [`Gate`] before rmcp sees a request.
fn config() -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(wire::FORWARDED_LINE_BYTES);
    config.sse_keep_alive = Some(std::time::Duration::from_secs(15));
    config
}

/// One request: the gate, then the message check, then rmcp.
async fn answer(
    front: Arc<Front>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if let Err(refusal) = front.gate.judge(request.headers()) {
        let mut response = plain(refusal.status, refusal.text);
        if refusal.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer"),
            );
        }
        return Ok(response);
    }
    if request.uri().path() != MCP_PATH {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            &format!("not found: the MCP endpoint is {MCP_PATH}"),
        ));
    }
    let (parts, body) = request.into_parts();
    let method = parts.method.clone();
    let body = if method == Method::POST {
        let bytes = match Limited::new(body, MAX_LINE_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                let mut response = json_error(wire::too_long(&serde_json::Value::Null));
                *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
                return Ok(response);
            }
            Err(_) => {
                return Ok(plain(
                    StatusCode::BAD_REQUEST,
                    "the request body could not be read",
                ));
            }
        };
        match wire::check_line(&bytes) {
            Checked::Skip => bytes,
            Checked::Forward(checked, _) => Bytes::from(checked),
            Checked::Answer(error) => return Ok(json_error(error)),
        }
    } else {
        Bytes::new()
    };
    let mut response = front
        .service
        .handle(Request::from_parts(parts, Full::new(body)))
        .await;
    // A session ended by DELETE is done, not pending: 200, which clients
    // expect (rmcp answers 202).
    if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    Ok(response)
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{text}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// A JSON-RPC error answered at once: `200` when it answers a request by
/// its `id`, `400` when the message had no readable `id`.
fn json_error(line: String) -> Response<Body> {
    let answers_request =
        serde_json::from_str::<serde_json::Value>(&line).is_ok_and(|error| !error["id"].is_null());
    let status = if answers_request {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    let mut response = Response::new(Full::new(Bytes::from(line)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
