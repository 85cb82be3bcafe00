//! `agentcaps mcp`: the [`Toolbox`] served over MCP on stdio with `rmcp`.
//!
//! Exactly the catalog's tools are served, each with its title, hints and
//! input and output schemas. A result is plain text for the model plus
//! `structuredContent` matching the output schema. A refusal, a failure or
//! malformed arguments (`arguments` that are not an object included) come
//! back as a tool result with `isError: true` and a short text for the
//! model — never a crash. Only a tool name that is not in the catalog is a
//! protocol error (JSON-RPC invalid params, as the MCP specification says),
//! naming the tools; a line that is not JSON gets a `-32700` parse error.
//!
//! Calls run concurrently (file work on the blocking pool), and
//! `notifications/cancelled` stops a running call. Each call writes one
//! JSON line (tool, decision, rule, duration) to the [`CallLog`]; nothing
//! but protocol messages ever goes to stdout.

mod elicit;
mod gate;
mod http;
mod progress;
mod session;
mod wire;

use std::sync::Arc;

#[allow(deprecated)] // logging: deprecated from 2026-07-28, served for the versions before
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::calllog::CallLog;
use crate::toolbox::CallRecord;
use crate::{OutputCounter, Stop, ToolError, ToolHints, Toolbox};

pub use http::{HttpOptions, MCP_PATH};
use session::{Served, Session};

/// The MCP server: a [`Toolbox`] and a [`CallLog`]. Each session (one on
/// stdio, one per client over HTTP) has its own roots.
#[derive(Clone)]
pub struct McpServer {
    session: Arc<Session>,
    log: Arc<CallLog>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer").finish_non_exhaustive()
    }
}

/// Why the MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The session could not be started (the client went away during
    /// initialisation, or stdio failed).
    #[error("MCP session failed to start: {0}")]
    Start(String),
    /// The HTTP server was refused: a non-loopback address without a
    /// token, or an address that cannot be bound.
    #[error("{0}")]
    Refused(String),
    /// The session ended abnormally.
    #[error("MCP session ended with an error: {0}")]
    Run(String),
}

impl McpServer {
    /// A server for `toolbox`, logging each call to `log`.
    pub fn new(toolbox: Toolbox, log: CallLog) -> Self {
        Self {
            session: Arc::new(Session::new(Arc::new(served(toolbox)))),
            log: Arc::new(log),
        }
    }

    /// The same server for another client: its own session, no roots yet.
    fn for_new_session(&self) -> Self {
        Self {
            session: Arc::new(self.session.fresh(served)),
            log: Arc::clone(&self.log),
        }
    }

    /// Serves MCP on this process's stdin and stdout until the client
    /// closes the session. A client that closes the connection before
    /// initialising is a normal end, not an error.
    ///
    /// # Errors
    ///
    /// [`McpError`] if the session cannot start or ends abnormally.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        self.serve_on(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves MCP on `input` and `output` (newline-delimited JSON-RPC), as
    /// [`McpServer::serve_stdio`] does on stdio.
    ///
    /// # Errors
    ///
    /// [`McpError`] if the session cannot start or ends abnormally.
    pub async fn serve_on<R, W>(self, input: R, output: W) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let (read, write, pumps) = wire::checked(input, output);
        let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(read, write)
            .with_max_line_length(wire::FORWARDED_LINE_BYTES);
        let served = self.serve_transport(transport).await;
        pumps.finish().await;
        served
    }

    async fn serve_transport(
        self,
        transport: rmcp::transport::async_rw::AsyncRwTransport<
            RoleServer,
            tokio::io::DuplexStream,
            tokio::io::DuplexStream,
        >,
    ) -> Result<(), McpError> {
        let running = match self.serve(transport).await {
            Ok(running) => running,
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(McpError::Start(e.to_string())),
        };
        running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| McpError::Run(e.to_string()))
    }

    /// Runs one call and logs it. An unknown tool name is a protocol error
    /// (JSON-RPC "invalid params", as the MCP specification has it); every
    /// other failure, malformed arguments included, is a tool error the
    /// model sees and can correct.
    async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let arguments = arguments.map_or(Value::Null, wire::restore_arguments);
        let output = OutputCounter::new();
        let stop = Stop::default().counting_output(output.clone());
        let started = std::time::Instant::now();
        let cancelled = context.ct.cancelled_owned();
        let _progress = (name == "shell_command")
            .then(|| context.meta.get_progress_token())
            .flatten()
            .map(|token| progress::Ticker::start(context.peer.clone(), token, output));
        let approver = elicit::ClientApprover::new(context.peer.clone());
        let call = async {
            match self.session.served(&context.peer).await {
                Ok(served) => {
                    served
                        .toolbox
                        .call_recorded_with(name, arguments, &stop, &approver)
                        .await
                }
                Err(error) => {
                    let record = CallRecord {
                        tool: name.chars().take(100).collect(),
                        decision: "error",
                        rule: error.rule(),
                        duration_ms: 0,
                        approvals: Vec::new(),
                    };
                    (Err(error), record)
                }
            }
        };
        let (result, record) = tokio::select! {
            done = call => done,
            () = cancelled => {
                // Dropping the call stops async work (a command's process is
                // killed); blocking work sees the stop between steps.
                stop.cancel();
                let error = stop_error(name, &stop);
                let record = CallRecord {
                    tool: name.chars().take(100).collect(),
                    decision: "error",
                    rule: "cancelled",
                    duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    approvals: Vec::new(),
                };
                (Err(error), record)
            }
        };
        for approval in &record.approvals {
            self.log.approval(approval);
        }
        self.log.record(&record);
        match result {
            Ok(output) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
                result.structured_content = Some(output.structured);
                Ok(result)
            }
            Err(error @ ToolError::UnknownTool { .. }) => {
                Err(ErrorData::invalid_params(error.to_model_text(), None))
            }
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(
                error.to_model_text(),
            )])),
        }
    }
}

/// The tools of `toolbox` as MCP describes them.
fn served(toolbox: Toolbox) -> Served {
    let tools = toolbox
        .tools()
        .iter()
        .map(|spec| {
            let schema = match &spec.input_schema {
                Value::Object(object) => object.clone(),
                _ => Map::new(),
            };
            let output = match &spec.output_schema {
                Value::Object(object) => object.clone(),
                _ => Map::new(),
            };
            Tool::new(spec.name, spec.description.clone(), schema)
                .with_title(spec.title)
                .with_raw_output_schema(Arc::new(output))
                .with_annotations(annotations(spec.title, spec.hints))
        })
        .collect();
    Served { toolbox, tools }
}

fn stop_error(name: &str, stop: &Stop) -> ToolError {
    let tool = crate::catalog::find(name).map_or("tools/call", |d| d.name);
    stop.error(tool)
}

/// MCP annotations from the catalog's hints (never trusted by clients for
/// decisions): which tools only read, which can overwrite, which reach
/// outside the machine.
fn annotations(title: &str, hints: ToolHints) -> ToolAnnotations {
    let annotations = ToolAnnotations::with_title(title)
        .read_only(hints.read_only)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world);
    if hints.read_only {
        annotations
    } else {
        annotations.destructive(hints.destructive)
    }
}

impl ServerHandler for McpServer {
    #[allow(deprecated)] // logging: see set_level
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
            .with_server_info(Implementation::new("agentcaps", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "File, shell, web and patch tools held to a policy. A refused call returns an error that says what was refused, the rule, and what is allowed instead.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.session.current().tools.clone(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let current = self.session.current();
        current.tools.iter().find(|tool| tool.name == name).cloned()
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The server sends no log messages to the client (its log is the
        // call log), so every level is already honoured.
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.session.refresh(&context.peer, &self.log, served).await;
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.session.refresh(&context.peer, &self.log, served).await;
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(&request.name, request.arguments, context)
            .await
            .map(Into::into)
    }
}
