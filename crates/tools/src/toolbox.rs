//! The framework-neutral [`Toolbox`]: the tools of the catalog, their
//! schemas and live descriptions, and dispatch by name with JSON arguments.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agentcaps::Policy;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::approval::{self, ApprovalRecord, Approver, Asking, Memory, Protected, Refuse};
use crate::catalog::{self, CATALOG, Definition, TOOL_NAMES, ToolHints, ToolId};
use crate::describe::Descriptions;
use crate::files::FileTools;
use crate::http::HttpTool;
use crate::patch::PatchTool;
use crate::policy_info::PolicyInfoOutput;
use crate::roots::{self, IgnoredRoot};
use crate::search;
use crate::shell::ShellTool;
use crate::stop::Stop;
use crate::{ToolError, inputs};

/// One tool as an agent framework registers it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The tool's name, such as `read_file`.
    pub name: &'static str,
    /// A short human title, such as "Read a file".
    pub title: &'static str,
    /// What it does and what the live policy allows, for the model.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of its arguments: always an object.
    pub input_schema: Value,
    /// The JSON Schema of [`ToolOutput::structured`]: always an object.
    pub output_schema: Value,
    /// What the tool may do (MCP annotations).
    pub hints: ToolHints,
}

/// A successful call's result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The typed result, as JSON, matching the tool's output schema.
    pub structured: Value,
    /// The same result as plain text for a model: a file's lines as they
    /// are, a listing one entry a line, a command's output under `stdout:`
    /// and `stderr:` headers.
    pub text: String,
}

/// A typed result that also reads as plain text.
pub(crate) trait Answer: Serialize {
    /// The text a model reads.
    fn text(&self) -> String;
}

impl ToolOutput {
    pub(crate) fn from_answer<T: Answer>(value: &T) -> Result<Self, ToolError> {
        let structured = serde_json::to_value(value).map_err(|e| ToolError::Unsupported {
            tool: "toolbox",
            rule: "output",
            message: format!("could not encode the result: {e}"),
        })?;
        Ok(Self {
            structured,
            text: value.text(),
        })
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
    /// The questions the call asked a person, and the answers (in order).
    pub approvals: Vec<ApprovalRecord>,
}

/// The agentcaps tools over one [`Policy`].
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
///
/// Cloning is cheap (the tools are shared).
///
/// A refusal whose rule the policy's `[approvals] ask` lists is put to the
/// [`Approver`] ([`Toolbox::with_approver`]; by default [`Refuse`], so such
/// a refusal names `approval-unavailable`). Approvals remembered for the
/// session (`remember = "session"`) are shared by this toolbox and its
/// clones; [`Toolbox::new_session`] starts a session that remembers none.
#[derive(Clone)]
pub struct Toolbox {
    inner: Arc<Inner>,
    approver: Arc<dyn Approver>,
    memory: Arc<Memory>,
}

struct Inner {
    /// The policy the tools were built from (client roots narrow it).
    policy: Policy,
    files: FileTools,
    shell: ShellTool,
    http: HttpTool,
    patch: PatchTool,
    policy_info: PolicyInfoOutput,
    specs: Vec<ToolSpec>,
    approvals: agentcaps::ApprovalsConfig,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("base", &self.inner.files.base())
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
        let policy_info = PolicyInfoOutput::new(policy, files.policy(), shell.policy());
        let descriptions = Descriptions::new(policy, &base, &files, &shell, &http);
        let specs = CATALOG
            .iter()
            .map(|definition| ToolSpec {
                name: definition.name,
                title: definition.title,
                description: (definition.describe)(&descriptions),
                input_schema: (definition.input_schema)(),
                output_schema: (definition.output_schema)(),
                hints: definition.hints,
            })
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                policy: policy.clone(),
                files,
                shell,
                http,
                patch,
                policy_info,
                specs,
                approvals: policy.approvals.clone(),
            }),
            approver: Arc::new(Refuse),
            memory: Arc::new(Memory::default()),
        })
    }

    /// This toolbox with `approver` answering the questions of `[approvals]`
    /// (the tools and the session's remembered approvals are shared with
    /// `self`).
    #[must_use]
    pub fn with_approver(self, approver: Arc<dyn Approver>) -> Self {
        Self { approver, ..self }
    }

    /// The same tools and approver for a new session: no approval of
    /// another session is remembered in it (a server with several clients
    /// gives each its own).
    #[must_use]
    pub fn new_session(&self) -> Self {
        Self {
            memory: Arc::new(Memory::default()),
            ..self.clone()
        }
    }

    /// The tools, with their live descriptions and schemas.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.inner.specs
    }

    /// The directory relative paths are relative to.
    pub fn base(&self) -> &Path {
        self.inner.files.base()
    }

    /// The same tools confined to the intersection of this toolbox's roots
    /// and a client's roots (`file:` URIs): file tools and commands reach
    /// only directories both allow, never more. The result is the same
    /// session (approver and remembered approvals). Returns the client roots
    /// that were ignored (not a local directory, or outside every root),
    /// each with why.
    ///
    /// # Errors
    ///
    /// As [`Toolbox::new`].
    pub fn narrowed_to(&self, uris: &[String]) -> Result<(Self, Vec<IgnoredRoot>), ToolError> {
        let narrowing = roots::narrow(&roots::policy_roots(&self.inner.policy)?, uris);
        let policy = roots::narrowed_policy(&self.inner.policy, &narrowing);
        // The same session: its approver and its remembered approvals.
        let narrowed = Self {
            approver: Arc::clone(&self.approver),
            memory: Arc::clone(&self.memory),
            ..Self::new(&policy, self.base())?
        };
        Ok((narrowed, narrowing.ignored))
    }

    /// Calls the tool `name` with JSON `arguments` (an object; `null` reads
    /// as `{}`), within the default time limit.
    ///
    /// # Errors
    ///
    /// A [`ToolError`] whose [`to_model_text`](ToolError::to_model_text) is
    /// meant for the model: malformed arguments, a refusal (with the rule
    /// and what is allowed), or a failure.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<ToolOutput, ToolError> {
        self.call_until(name, arguments, &Stop::default()).await
    }

    /// Like [`Toolbox::call`], stopping when `stop` is cancelled or its
    /// deadline passes: walks (listing, searching, reading many files) then
    /// answer with what they have, marked truncated, and a cancelled call
    /// answers with the `cancelled` error. Work that blocks runs on tokio's
    /// blocking pool when a tokio runtime is running, so one slow call
    /// never holds another.
    ///
    /// # Errors
    ///
    /// As [`Toolbox::call`].
    pub async fn call_until(
        &self,
        name: &str,
        arguments: Value,
        stop: &Stop,
    ) -> Result<ToolOutput, ToolError> {
        let records = std::sync::Mutex::new(Vec::new());
        self.call_asking(name, arguments, stop, self.approver.as_ref(), &records)
            .await
    }

    /// Like [`Toolbox::call_until`], asking `approver` (instead of the
    /// toolbox's own) about refusals the policy asks about, and returning
    /// the [`CallRecord`] with the questions and answers.
    pub async fn call_recorded_with(
        &self,
        name: &str,
        arguments: Value,
        stop: &Stop,
        approver: &dyn Approver,
    ) -> (Result<ToolOutput, ToolError>, CallRecord) {
        let started = Instant::now();
        let records = std::sync::Mutex::new(Vec::new());
        let result = self
            .call_asking(name, arguments, stop, approver, &records)
            .await;
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
            approvals: records.into_inner().unwrap_or_default(),
        };
        (result, record)
    }

    async fn call_asking(
        &self,
        name: &str,
        arguments: Value,
        stop: &Stop,
        approver: &dyn Approver,
        records: &std::sync::Mutex<Vec<ApprovalRecord>>,
    ) -> Result<ToolOutput, ToolError> {
        let Some(definition) = catalog::find(name) else {
            return Err(ToolError::UnknownTool {
                name: name.chars().take(100).collect(),
                known: TOOL_NAMES.join(", "),
            });
        };
        self.inner.check_ranges(definition, &arguments)?;
        let asking = Asking {
            config: &self.inner.approvals,
            approver,
            memory: &self.memory,
            records,
            tool: definition.name,
        };
        match definition.id {
            ToolId::ShellCommand => {
                let input = args(definition, arguments)?;
                // Where there is no view, the command may make links in
                // the real tree: once it is over (or the call is dropped),
                // the next write looks for them again.
                let _refresh = RefreshLinksOnDrop(&self.inner.files);
                answer(
                    self.inner
                        .shell
                        .run(input, &asking, stop.output_counter())
                        .await,
                )
            }
            ToolId::HttpRequest => {
                let input = args(definition, arguments)?;
                let (http, policy) = (&self.inner.http, &self.inner.policy);
                answer(approval::request_asking(http, policy, input, &asking).await)
            }
            ToolId::WriteFile | ToolId::EditFile | ToolId::CreateDirectory
                if asking.asks(approval::WRITE_PROTECTED) =>
            {
                self.write_asking(definition, arguments, stop, &asking)
                    .await
            }
            _ => {
                let inner = Arc::clone(&self.inner);
                let stop = stop.clone();
                blocking(move || inner.call_blocking(definition, arguments, &stop)).await
            }
        }
    }

    /// A tool that writes one path, asking about a `write-protected`
    /// refusal of exactly that path; an approved write runs once with the
    /// matched protected glob left out, after the path is judged again.
    async fn write_asking(
        &self,
        definition: &'static Definition,
        arguments: Value,
        stop: &Stop,
        asking: &Asking<'_>,
    ) -> Result<ToolOutput, ToolError> {
        let run = |approved: Option<(Arc<FileTools>, Protected)>, arguments: Value| {
            let inner = Arc::clone(&self.inner);
            let stop = stop.clone();
            blocking(move || match approved {
                Some((files, protected))
                    if protected.still_holds(inner.files.policy(), inner.files.base()) =>
                {
                    write_one(&files, definition, arguments, &stop)
                }
                // Judged anew: whatever the path now is, the policy decides.
                _ => write_one(&inner.files, definition, arguments, &stop),
            })
        };
        // A dry run writes nothing: nothing to approve.
        let dry_run = arguments.get("dry_run") == Some(&Value::Bool(true));
        let target = arguments
            .get("path")
            .and_then(Value::as_str)
            .filter(|_| !dry_run)
            .map(str::to_owned);
        let refused = match run(None, arguments.clone()).await {
            Err(refused) => refused,
            done => return done,
        };
        let policy = self.inner.files.policy();
        let Some(protected) = approval::write_protected(&refused, target.as_deref(), policy) else {
            return Err(refused);
        };
        asking
            .approve(refused, &protected.key(), protected.action.clone())
            .await?;
        let files = Arc::new(self.inner.files.unprotected(&protected.entry)?);
        run(Some((files, protected)), arguments).await
    }

    /// Like [`Toolbox::call`], also returning the [`CallRecord`] to log.
    pub async fn call_recorded(
        &self,
        name: &str,
        arguments: Value,
    ) -> (Result<ToolOutput, ToolError>, CallRecord) {
        self.call_recorded_until(name, arguments, &Stop::default())
            .await
    }

    /// Like [`Toolbox::call_until`], also returning the [`CallRecord`].
    pub async fn call_recorded_until(
        &self,
        name: &str,
        arguments: Value,
        stop: &Stop,
    ) -> (Result<ToolOutput, ToolError>, CallRecord) {
        self.call_recorded_with(name, arguments, stop, self.approver.as_ref())
            .await
    }
}

impl Inner {
    /// Refuses a number outside the range the tool's input schema states
    /// (`offset_line: 0` where the schema says at least 1) as malformed,
    /// rather than reading it as the nearest allowed value.
    fn check_ranges(&self, definition: &Definition, arguments: &Value) -> Result<(), ToolError> {
        let Some(spec) = self.specs.iter().find(|s| s.name == definition.name) else {
            return Ok(());
        };
        let (Some(given), Some(properties)) = (
            arguments.as_object(),
            spec.input_schema["properties"].as_object(),
        ) else {
            return Ok(());
        };
        for (name, value) in given {
            let (Some(number), Some(schema)) = (value.as_f64(), properties.get(name)) else {
                continue;
            };
            let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
            let wrong = match (bound("minimum"), bound("maximum")) {
                (Some(min), _) if number < min => Some(format!("at least {min}")),
                (_, Some(max)) if number > max => Some(format!("at most {max}")),
                _ => None,
            };
            if let Some(wrong) = wrong {
                return Err(ToolError::InvalidArguments {
                    tool: definition.name,
                    message: format!("`{name}` is {value}; it must be {wrong}"),
                });
            }
        }
        Ok(())
    }

    /// The tools whose work blocks (file system). The `match` is exhaustive:
    /// a tool added to the catalog without a handler does not compile.
    fn call_blocking(
        &self,
        definition: &'static Definition,
        arguments: Value,
        stop: &Stop,
    ) -> Result<ToolOutput, ToolError> {
        let d = definition;
        match d.id {
            ToolId::ReadFile => answer(self.files.read_file(&args(d, arguments)?)),
            ToolId::ReadManyFiles => answer(self.files.read_many_files(&args(d, arguments)?, stop)),
            ToolId::WriteFile | ToolId::EditFile | ToolId::CreateDirectory => {
                write_one(&self.files, d, arguments, stop)
            }
            ToolId::MoveFile => answer(self.files.move_file(&args(d, arguments)?)),
            ToolId::ListDirectory => answer(self.files.list_directory(&args(d, arguments)?, stop)),
            ToolId::FileInfo => answer(self.files.file_info(&args(d, arguments)?)),
            ToolId::SearchFiles => answer(search::search_files(
                &self.files,
                &args(d, arguments)?,
                stop,
            )),
            ToolId::ApplyPatch => answer(
                self.patch
                    .apply(&args(d, arguments)?, self.files.guarded_links()),
            ),
            ToolId::PolicyInfo => {
                let _: inputs::PolicyInfo = args(d, arguments)?;
                answer(Ok(self.policy_info.clone()))
            }
            ToolId::ShellCommand | ToolId::HttpRequest => Err(ToolError::Unsupported {
                tool: d.name,
                rule: "internal",
                message: "this tool is asynchronous and is not run on the blocking pool".to_owned(),
            }),
        }
    }
}

/// Forgets the file tools' guarded links when dropped (after a command).
struct RefreshLinksOnDrop<'a>(&'a FileTools);

impl Drop for RefreshLinksOnDrop<'_> {
    fn drop(&mut self) {
        self.0.refresh_guarded_links();
    }
}

/// The file tools that write one path (`path`), with `files`.
fn write_one(
    files: &FileTools,
    d: &'static Definition,
    arguments: Value,
    stop: &Stop,
) -> Result<ToolOutput, ToolError> {
    match d.id {
        ToolId::WriteFile => answer(files.write_file(&args(d, arguments)?, stop)),
        ToolId::EditFile => answer(files.edit_file(&args(d, arguments)?)),
        ToolId::CreateDirectory => answer(files.create_directory(&args(d, arguments)?)),
        _ => Err(ToolError::Unsupported {
            tool: d.name,
            rule: "internal",
            message: "this tool does not write one path".to_owned(),
        }),
    }
}

/// Runs `work` on tokio's blocking pool when a runtime is running (so it
/// never holds the threads that serve other calls), else right here.
async fn blocking<F>(work: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce() -> Result<ToolOutput, ToolError> + Send + 'static,
{
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread => {
            handle.spawn_blocking(work).await.unwrap_or_else(|e| {
                Err(ToolError::Unsupported {
                    tool: "toolbox",
                    rule: "internal",
                    message: format!("the call failed: {e}"),
                })
            })
        }
        _ => work(),
    }
}

fn answer<T: crate::toolbox::Answer>(
    result: Result<T, ToolError>,
) -> Result<ToolOutput, ToolError> {
    ToolOutput::from_answer(&result?)
}

/// Parses arguments; `null` (no arguments) reads as `{}`, and anything but
/// an object is refused as malformed.
fn args<T: DeserializeOwned>(definition: &Definition, arguments: Value) -> Result<T, ToolError> {
    let tool = definition.name;
    let arguments = match arguments {
        Value::Null => Value::Object(serde_json::Map::new()),
        object @ Value::Object(_) => object,
        other => {
            return Err(ToolError::InvalidArguments {
                tool,
                message: format!("the arguments are {}, not an object", json_kind(&other)),
            });
        }
    };
    serde_json::from_value(arguments).map_err(|e| ToolError::InvalidArguments {
        tool,
        message: e.to_string(),
    })
}

/// "a string", "an array", ... for messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
