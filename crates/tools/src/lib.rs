//! # agentcaps-tools
//!
//! Agent tools held to one [`agentcaps::Policy`]: files (`read_file`,
//! `read_many_files`, `write_file`, `edit_file`, `create_directory`,
//! `move_file`, `list_directory`, `file_info`, `search_files`), a shell
//! (`shell_command`), the web (`http_request`), patches (`apply_patch`) and
//! `policy_info` — [`TOOL_NAMES`] lists them. Each has a title, hints, input
//! and output JSON Schemas and a description generated from the live
//! policy; results are plain text for the model plus structured data. The
//! crate also has an MCP server ([`McpServer`], `agentcaps mcp`) and the
//! `agentcaps` command line. The server and the command line are behind the
//! default features `mcp` and `cli`; without them the crate has no
//! `rmcp` or `clap` dependency.
//!
//! [`Toolbox`] is framework-neutral: list the tools, then dispatch a call by
//! name with JSON arguments. A refusal is a [`ToolError`] whose
//! [`to_model_text`](ToolError::to_model_text) tells the model what was
//! refused, the rule, and what is allowed instead.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentcaps_tools::Toolbox;
//! use serde_json::json;
//!
//! let dir = std::env::temp_dir().join(format!("agentcaps-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let policy = agentcaps::Policy::default_for(&dir)?;
//! let toolbox = Toolbox::new(&policy, &dir)?;
//!
//! // Allowed: a file inside the working directory.
//! toolbox.call("write_file", json!({"path": "notes.txt", "content": "hi\n"})).await?;
//! let read = toolbox.call("read_file", json!({"path": "notes.txt"})).await?;
//! assert_eq!(read.structured["content"], "hi\n");
//! assert_eq!(read.text, "hi\n"); // plain text for the model
//!
//! // Refused: a path that leads out of the allowed root.
//! let refused = toolbox.call("read_file", json!({"path": "../../etc/passwd"})).await.unwrap_err();
//! assert!(refused.is_refusal());
//! assert_eq!(refused.rule(), "outside-roots");
//! # drop(toolbox); // Windows deletes no directory a handle holds open
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```
//!
//! # Security
//!
//! File tools act only through [`agentcaps::paths::Beneath`]: the path is
//! judged where it really leads and then used beneath the root's directory
//! handle, so a link swapped in after the check makes the call fail instead
//! of escaping; a write whose directory is renamed while it writes is
//! undone. Writers of one file are serialised within the process, and a
//! write made from what was read refuses a file changed since (`conflict`),
//! so parallel calls and two servers on one tree never lose an edit
//! silently. `search_files` never follows links and judges every file it
//! reads. `shell_command` runs one program with no shell, under
//! `agentcaps-shell`'s rules; `http_request` connects only to addresses
//! `agentcaps-egress` judged. What is not protected is listed in the
//! workspace README (hard links, races inside child processes, the
//! `development` preset).
#![forbid(unsafe_code)]

mod approval;
mod calllog;
mod catalog;
mod describe;
mod edit;
mod error;
mod files;
mod http;
pub mod inputs;
#[cfg(feature = "mcp")]
mod mcp;
mod patch;
mod policy_info;
mod roots;
mod search;
mod shell;
mod stop;
mod toolbox;
#[cfg(unix)]
mod walk;

pub use agentcaps::shell::OutputCounter;
pub use approval::{
    Action, Answer, AnswerFuture, ApprovalRecord, Approver, Question, Refuse, validate_command,
};
pub use calllog::CallLog;
pub use catalog::{TOOL_COUNT, TOOL_NAMES, ToolHints};
pub use error::{MAX_ERROR_CHARS, ToolError};
pub use http::header_map;
#[cfg(feature = "mcp")]
pub use mcp::{HttpOptions, MCP_PATH, McpError, McpServer};
pub use roots::IgnoredRoot;
pub use shell::{AppliedChange, CommandChanges, CommandConnection, CommandOutput, RefusedChange};
pub use stop::{DEFAULT_CALL_TIME, Stop};
pub use toolbox::{CallRecord, ToolOutput, ToolSpec, Toolbox};
