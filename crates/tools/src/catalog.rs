//! The one definition of every tool: name, title, hints, input and output
//! schemas, and the description builder. The tool list, the MCP server, the
//! documentation tests and the counts are all generated from [`CATALOG`];
//! the handler is chosen by an exhaustive `match` on [`ToolId`], so a tool
//! cannot be listed without a handler, nor served without hints.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::describe::Descriptions;
use crate::{files, http, inputs, patch, policy_info, search, shell};

/// Which tool a definition is (the handler is matched on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolId {
    ReadFile,
    ReadManyFiles,
    WriteFile,
    EditFile,
    CreateDirectory,
    MoveFile,
    ListDirectory,
    FileInfo,
    SearchFiles,
    ShellCommand,
    HttpRequest,
    ApplyPatch,
    PolicyInfo,
}

/// What a tool may do, as MCP annotations: hints for clients, never used by
/// agentcaps itself to decide anything. Every field must be given: there is
/// no default, so no tool silently becomes "destructive" or "read-only".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolHints {
    /// It never changes anything.
    pub read_only: bool,
    /// It may overwrite or remove what exists (only meaningful when not
    /// read-only).
    pub destructive: bool,
    /// Calling it twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// It reaches outside the machine (the network).
    pub open_world: bool,
}

/// One tool's definition.
pub(crate) struct Definition {
    pub(crate) id: ToolId,
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) hints: ToolHints,
    pub(crate) input_schema: fn() -> Value,
    pub(crate) output_schema: fn() -> Value,
    pub(crate) describe: fn(&Descriptions) -> String,
}

const READS: ToolHints = ToolHints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Every tool, in the order they are listed.
pub(crate) const CATALOG: &[Definition] = &[
    Definition {
        id: ToolId::ReadFile,
        name: "read_file",
        title: "Read a file",
        hints: READS,
        input_schema: schema::<inputs::ReadFile>,
        output_schema: schema::<files::ReadFileOutput>,
        describe: Descriptions::read_file,
    },
    Definition {
        id: ToolId::ReadManyFiles,
        name: "read_many_files",
        title: "Read several files",
        hints: READS,
        input_schema: schema::<inputs::ReadManyFiles>,
        output_schema: schema::<files::ReadManyFilesOutput>,
        describe: Descriptions::read_many_files,
    },
    Definition {
        id: ToolId::WriteFile,
        name: "write_file",
        title: "Write a file",
        hints: ToolHints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        input_schema: schema::<inputs::WriteFile>,
        output_schema: schema::<files::WriteFileOutput>,
        describe: Descriptions::write_file,
    },
    Definition {
        id: ToolId::EditFile,
        name: "edit_file",
        title: "Edit a file by exact text replacement",
        hints: ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        input_schema: schema::<inputs::EditFile>,
        output_schema: schema::<files::EditFileOutput>,
        describe: Descriptions::edit_file,
    },
    Definition {
        id: ToolId::CreateDirectory,
        name: "create_directory",
        title: "Create a directory",
        hints: ToolHints {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        input_schema: schema::<inputs::CreateDirectory>,
        output_schema: schema::<files::CreateDirectoryOutput>,
        describe: Descriptions::create_directory,
    },
    Definition {
        id: ToolId::MoveFile,
        name: "move_file",
        title: "Move or rename a file",
        hints: ToolHints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
        input_schema: schema::<inputs::MoveFile>,
        output_schema: schema::<files::MoveFileOutput>,
        describe: Descriptions::move_file,
    },
    Definition {
        id: ToolId::ListDirectory,
        name: "list_directory",
        title: "List a directory",
        hints: READS,
        input_schema: schema::<inputs::ListDirectory>,
        output_schema: schema::<files::ListDirectoryOutput>,
        describe: Descriptions::list_directory,
    },
    Definition {
        id: ToolId::FileInfo,
        name: "file_info",
        title: "Describe a file",
        hints: READS,
        input_schema: schema::<inputs::FileInfo>,
        output_schema: schema::<files::FileInfoOutput>,
        describe: Descriptions::file_info,
    },
    Definition {
        id: ToolId::SearchFiles,
        name: "search_files",
        title: "Search file contents",
        hints: READS,
        input_schema: schema::<inputs::SearchFiles>,
        output_schema: schema::<search::SearchFilesOutput>,
        describe: Descriptions::search_files,
    },
    Definition {
        id: ToolId::ShellCommand,
        name: "shell_command",
        title: "Run a command",
        hints: ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        input_schema: schema::<inputs::ShellCommand>,
        output_schema: schema::<shell::CommandOutput>,
        describe: Descriptions::shell_command,
    },
    Definition {
        id: ToolId::HttpRequest,
        name: "http_request",
        title: "Make an HTTP request",
        hints: ToolHints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: true,
        },
        input_schema: schema::<inputs::HttpRequest>,
        output_schema: schema::<http::HttpOutput>,
        describe: Descriptions::http_request,
    },
    Definition {
        id: ToolId::ApplyPatch,
        name: "apply_patch",
        title: "Apply a patch",
        hints: ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        input_schema: schema::<inputs::ApplyPatch>,
        output_schema: schema::<patch::PatchOutput>,
        describe: Descriptions::apply_patch,
    },
    Definition {
        id: ToolId::PolicyInfo,
        name: "policy_info",
        title: "Show the policy",
        hints: READS,
        input_schema: schema::<inputs::PolicyInfo>,
        output_schema: schema::<policy_info::PolicyInfoOutput>,
        describe: Descriptions::policy_info,
    },
];

/// How many tools there are.
pub const TOOL_COUNT: usize = CATALOG.len();

/// The names of the tools, in the order [`Toolbox::tools`](crate::Toolbox::tools)
/// lists them.
pub const TOOL_NAMES: [&str; TOOL_COUNT] = {
    let mut names = [""; TOOL_COUNT];
    let mut i = 0;
    while i < TOOL_COUNT {
        names[i] = CATALOG[i].name;
        i += 1;
    }
    names
};

/// The definition named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Definition> {
    CATALOG.iter().find(|definition| definition.name == name)
}

/// The JSON Schema (draft 2020-12) of `T`, in standard vocabulary only:
/// schemars' own integer formats (`uint64`, `int32`, ...) are dropped, since
/// generic validators do not know them (the `minimum` stays).
fn schema<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        // A tool without arguments still says it takes an object of none:
        // some clients read a schema without `properties` as malformed.
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
    standardise(&mut value);
    value
}

/// The formats JSON Schema itself defines (and validators know).
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn standardise(value: &mut Value) {
    match value {
        Value::Object(object) => {
            let non_standard = object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !STANDARD_FORMATS.contains(&format));
            if non_standard {
                object.remove("format");
            }
            for child in object.values_mut() {
                standardise(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(standardise),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_ids_match_one_definition_each() {
        for (i, definition) in CATALOG.iter().enumerate() {
            assert!(
                CATALOG[i + 1..].iter().all(|d| d.name != definition.name),
                "{} twice",
                definition.name
            );
            assert_eq!(
                CATALOG.iter().filter(|d| d.id == definition.id).count(),
                1,
                "{}",
                definition.name
            );
        }
    }

    #[test]
    fn every_schema_is_an_object_in_standard_vocabulary() {
        for definition in CATALOG {
            for schema in [(definition.input_schema)(), (definition.output_schema)()] {
                assert_eq!(schema["type"], "object", "{}", definition.name);
                let text = schema.to_string();
                for format in ["uint", "int32", "int64", "double", "float"] {
                    assert!(
                        !text.contains(&format!("\"format\":\"{format}")),
                        "{}: {text}",
                        definition.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_tool_without_arguments_declares_no_properties() {
        let schema = (find("policy_info").expect("policy_info").input_schema)();
        assert_eq!(schema["properties"], serde_json::json!({}));
    }

    #[test]
    fn offset_line_is_at_least_one() {
        let schema = (find("read_file").expect("read_file").input_schema)();
        assert_eq!(schema["properties"]["offset_line"]["minimum"], 1);
    }

    #[test]
    fn a_read_only_tool_is_never_destructive() {
        for definition in CATALOG {
            assert!(
                !(definition.hints.read_only && definition.hints.destructive),
                "{}",
                definition.name
            );
        }
    }
}
