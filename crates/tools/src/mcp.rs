//! `agentcaps mcp`: the [`Toolbox`] served over MCP on stdio with `rmcp`.
//!
//! Exactly the eight tools are served. A refusal, a failure or malformed
//! arguments come back as a tool result with `isError: true` and a short
//! text for the model — never a crash. Only a tool name that is not one of
//! the eight is a protocol error (JSON-RPC invalid params, as the MCP
//! specification says), naming the eight. Each call
//! writes one JSON line (tool, decision, rule, duration) to the
//! [`CallLog`]; nothing but protocol messages ever goes to stdout.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Map, Value};

use crate::calllog::CallLog;
use crate::{ToolError, Toolbox};

/// The MCP server: a [`Toolbox`] and a [`CallLog`].
#[derive(Clone)]
pub struct McpServer {
    toolbox: Arc<Toolbox>,
    tools: Arc<Vec<Tool>>,
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
    /// The session ended abnormally.
    #[error("MCP session ended with an error: {0}")]
    Run(String),
}

impl McpServer {
    /// A server for `toolbox`, logging each call to `log`.
    pub fn new(toolbox: Toolbox, log: CallLog) -> Self {
        let tools = toolbox
            .tools()
            .iter()
            .map(|spec| {
                let schema = match &spec.input_schema {
                    Value::Object(object) => object.clone(),
                    _ => Map::new(),
                };
                Tool::new(spec.name, spec.description.clone(), schema)
                    .with_annotations(annotations(spec.name))
            })
            .collect();
        Self {
            toolbox: Arc::new(toolbox),
            tools: Arc::new(tools),
            log: Arc::new(log),
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
        let running = match self.serve(rmcp::transport::stdio()).await {
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
    ) -> Result<CallToolResult, ErrorData> {
        let arguments = arguments.map_or(Value::Null, Value::Object);
        let (result, record) = self.toolbox.call_recorded(name, arguments).await;
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

/// MCP hints (never trusted by clients for decisions): which tools only
/// read, which can overwrite, which reach outside the machine.
fn annotations(tool: &str) -> ToolAnnotations {
    let hints = ToolAnnotations::new();
    match tool {
        "read_file" | "list_directory" | "file_info" | "search_files" => {
            hints.read_only(true).open_world(false)
        }
        "write_file" | "apply_patch" => hints.read_only(false).destructive(true).open_world(false),
        "http_request" => hints.read_only(false).destructive(false).open_world(true),
        _ => hints.read_only(false).destructive(true).open_world(false),
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(&request.name, request.arguments)
            .await
            .map(Into::into)
    }
}
