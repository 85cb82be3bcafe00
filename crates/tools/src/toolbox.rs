//! The framework-neutral [`Toolbox`]: the eight tools, their schemas and
//! live descriptions, and dispatch by name with JSON arguments.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agentcaps::Policy;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::describe::Descriptions;
use crate::files::FileTools;
use crate::http::HttpTool;
use crate::patch::PatchTool;
use crate::search;
use crate::shell::ShellTool;
use crate::{ToolError, inputs};

/// The names of the tools, in the order [`Toolbox::tools`] lists them.
pub const TOOL_NAMES: [&str; 8] = [
    "read_file",
    "write_file",
    "list_directory",
    "file_info",
    "search_files",
    "shell_command",
    "http_request",
    "apply_patch",
];

/// One tool as an agent framework registers it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name, such as `read_file`.
    pub name: &'static str,
    /// What it does and what the live policy allows, for the model.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of its arguments: always an object.
    pub input_schema: Value,
}

/// A successful call's result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The typed result, as JSON.
    pub structured: Value,
    /// The same result as text for a model (pretty JSON).
    pub text: String,
}

impl ToolOutput {
    pub(crate) fn from_typed<T: Serialize>(value: &T) -> Result<Self, ToolError> {
        let structured = serde_json::to_value(value).map_err(|e| ToolError::Unsupported {
            tool: "toolbox",
            rule: "output",
            message: format!("could not encode the result: {e}"),
        })?;
        let text = serde_json::to_string_pretty(&structured).unwrap_or_default();
        Ok(Self { structured, text })
    }
}

/// What happened on one call, for the structured call log.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct CallRecord {
    /// The tool name as asked.
    pub tool: String,
    /// `allow` (the call ran), `deny` (the policy refused) or `error`
    /// (malformed arguments or a failure).
    pub decision: &'static str,
    /// The rule for a `deny` or `error`, empty for `allow`.
    pub rule: &'static str,
    /// Wall time of the call, in milliseconds.
    pub duration_ms: u64,
}

/// The eight agentcaps tools over one [`Policy`].
///
/// ```no_run
/// # async fn demo() -> Result<(), agentcaps_tools::ToolError> {
/// use agentcaps_tools::Toolbox;
/// let cwd = std::env::current_dir().unwrap();
/// let policy = agentcaps::Policy::default_for(&cwd)?;
/// let toolbox = Toolbox::new(&policy, &cwd)?;
/// for tool in toolbox.tools() {
///     println!("{}: {}", tool.name, tool.description);
/// }
/// let out = toolbox.call("list_directory", serde_json::json!({"path": "."})).await?;
/// println!("{}", out.text);
/// # Ok(()) }
/// ```
pub struct Toolbox {
    files: FileTools,
    shell: ShellTool,
    http: HttpTool,
    patch: PatchTool,
    specs: Vec<ToolSpec>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("base", &self.files.base())
            .finish_non_exhaustive()
    }
}

impl Toolbox {
    /// Builds every tool from `policy`. Relative paths in calls are relative
    /// to `base` (the directory the server was started in), which is also
    /// the shell's default working directory.
    ///
    /// # Errors
    ///
    /// [`ToolError::Policy`] if a section of the policy does not build, and
    /// [`ToolError::Path`] if a root's directory handle cannot be opened.
    pub fn new(policy: &Policy, base: &Path) -> Result<Self, ToolError> {
        let base: PathBuf = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        let files = FileTools::new(policy, &base)?;
        let shell = ShellTool::new(policy)?;
        let http = HttpTool::new(policy)?;
        let patch = PatchTool::new(policy, &base)?;
        let d = Descriptions::new(policy, &base, &files, &shell, &http);
        let specs = vec![
            spec::<inputs::ReadFile>("read_file", d.read_file()),
            spec::<inputs::WriteFile>("write_file", d.write_file()),
            spec::<inputs::ListDirectory>("list_directory", d.list_directory()),
            spec::<inputs::FileInfo>("file_info", d.file_info()),
            spec::<inputs::SearchFiles>("search_files", d.search_files()),
            spec::<inputs::ShellCommand>("shell_command", d.shell_command()),
            spec::<inputs::HttpRequest>("http_request", d.http_request()),
            spec::<inputs::ApplyPatch>("apply_patch", d.apply_patch()),
        ];
        Ok(Self {
            files,
            shell,
            http,
            patch,
            specs,
        })
    }

    /// The tools, with their live descriptions and input schemas.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The directory relative paths are relative to.
    pub fn base(&self) -> &Path {
        self.files.base()
    }

    /// Calls the tool `name` with JSON `arguments` (an object).
    ///
    /// # Errors
    ///
    /// A [`ToolError`] whose [`to_model_text`](ToolError::to_model_text) is
    /// meant for the model: malformed arguments, a refusal (with the rule
    /// and what is allowed), or a failure.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        match name {
            "read_file" => out(self.files.read_file(&args("read_file", arguments)?)),
            "write_file" => out(self.files.write_file(&args("write_file", arguments)?)),
            "list_directory" => out(self
                .files
                .list_directory(&args("list_directory", arguments)?)),
            "file_info" => out(self.files.file_info(&args("file_info", arguments)?)),
            "search_files" => out(search::search_files(
                &self.files,
                &args("search_files", arguments)?,
            )),
            "shell_command" => out(self.shell.run(args("shell_command", arguments)?).await),
            "http_request" => out(self.http.request(args("http_request", arguments)?).await),
            "apply_patch" => out(self.patch.apply(&args("apply_patch", arguments)?)),
            _ => Err(ToolError::UnknownTool {
                name: name.chars().take(100).collect(),
                known: TOOL_NAMES.join(", "),
            }),
        }
    }

    /// Like [`Toolbox::call`], also returning the [`CallRecord`] to log.
    pub async fn call_recorded(
        &self,
        name: &str,
        arguments: Value,
    ) -> (Result<ToolOutput, ToolError>, CallRecord) {
        let started = Instant::now();
        let result = self.call(name, arguments).await;
        let (decision, rule) = match &result {
            Ok(_) => ("allow", ""),
            Err(e) if e.is_refusal() => ("deny", e.rule()),
            Err(e) => ("error", e.rule()),
        };
        let record = CallRecord {
            tool: name.chars().take(100).collect(),
            decision,
            rule,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        (result, record)
    }
}

fn out<T: Serialize>(result: Result<T, ToolError>) -> Result<ToolOutput, ToolError> {
    ToolOutput::from_typed(&result?)
}

/// Parses arguments; `null` (no arguments) reads as `{}`.
fn args<T: DeserializeOwned>(tool: &'static str, arguments: Value) -> Result<T, ToolError> {
    let arguments = if arguments.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        arguments
    };
    serde_json::from_value(arguments).map_err(|e| ToolError::InvalidArguments {
        tool,
        message: e.to_string(),
    })
}

fn spec<T: schemars::JsonSchema>(name: &'static str, description: String) -> ToolSpec {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut input_schema = schema.to_value();
    if let Some(object) = input_schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    ToolSpec {
        name,
        description,
        input_schema,
    }
}
