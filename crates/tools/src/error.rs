//! The tools' one error type. Its `Display` is the text a model sees when a
//! call is refused or fails: what was refused, the rule, what is allowed.

use agentcaps::PolicyError;
use agentcaps::egress::EgressError;
use agentcaps::patch::PatchError;
use agentcaps::paths::PathError;
use agentcaps::shell::ShellError;

use crate::approval::Answer;

/// The most characters of an error text handed to a model.
pub const MAX_ERROR_CHARS: usize = 600;

/// Why a tool call was refused or failed.
///
/// A refusal (see [`ToolError::is_refusal`]) names the refused input and the
/// rule; its `Display` adds what the live policy allows instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool `{name}`; the tools are: {known}")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The tools that exist, comma-separated.
        known: String,
    },
    /// The arguments do not match the tool's input schema (wrong type,
    /// missing or unknown field, or a combination the tool does not accept).
    #[error(
        "{tool}: invalid arguments: {message}. Call it with an object matching its input schema."
    )]
    InvalidArguments {
        /// The tool.
        tool: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The path policy refused (or an operation beneath a root failed).
    #[error("{tool}: {} {allowed}", with_rule(source.is_refusal(), source.rule(), &source.to_string()))]
    Path {
        /// The tool.
        tool: &'static str,
        /// The refusal.
        #[source]
        source: Box<PathError>,
        /// What the policy allows instead.
        allowed: String,
    },
    /// The shell policy refused the command, or running it failed.
    #[error("{tool}: {}{}{allowed}", sentence(&source.to_string()), if allowed.is_empty() { "" } else { " " })]
    Shell {
        /// The tool.
        tool: &'static str,
        /// The refusal.
        #[source]
        source: Box<ShellError>,
        /// What the policy allows instead.
        allowed: String,
    },
    /// The egress policy refused the request, or the request failed.
    #[error("{tool}: {} {allowed}", with_rule(source.is_refusal(), source.rule(), &source.to_string()))]
    Egress {
        /// The tool.
        tool: &'static str,
        /// The refusal.
        #[source]
        source: Box<EgressError>,
        /// What the policy allows instead.
        allowed: String,
    },
    /// The patch was refused or does not apply.
    #[error("{tool}: {}", sentence(&source.to_string()))]
    Patch {
        /// The tool.
        tool: &'static str,
        /// The refusal.
        #[source]
        source: Box<PatchError>,
    },
    /// The request is valid but cannot be served as asked (a binary file for
    /// `read_file`, a regex that does not compile, ...).
    #[error("{tool}: {message}")]
    Unsupported {
        /// The tool.
        tool: &'static str,
        /// The stable rule id.
        rule: &'static str,
        /// What went wrong, and what to do instead.
        message: String,
    },
    /// The policy could not be built.
    #[error("policy: {0}")]
    Policy(#[from] PolicyError),
    /// A person was asked to approve the refused action and did not: they
    /// declined, dismissed the question, or did not answer in time. The
    /// rule is the refusal's.
    #[error("{source} {}", not_approved(answer))]
    NotApproved {
        /// The refusal asked about.
        #[source]
        source: Box<ToolError>,
        /// What came back.
        answer: Answer,
    },
    /// The refusal's rule is one the policy asks a person about, but no one
    /// could be asked (an MCP client without elicitation, no terminal).
    #[error(
        "{source} Approving it needs a person, and none could be asked (rule approval-unavailable): {why}."
    )]
    ApprovalUnavailable {
        /// The refusal.
        #[source]
        source: Box<ToolError>,
        /// Why no one could be asked.
        why: String,
    },
}

/// The sentence that follows a refusal a person did not approve.
fn not_approved(answer: &Answer) -> String {
    match answer {
        Answer::Decline => "A person was asked to approve exactly this and declined.".to_owned(),
        Answer::Cancel => {
            "A person was asked to approve exactly this and declined (the question was dismissed)."
                .to_owned()
        }
        Answer::TimedOut => {
            "A person was asked to approve exactly this and declined (no answer in time)."
                .to_owned()
        }
        other => format!(
            "A person was asked to approve exactly this and did not ({}).",
            other.word()
        ),
    }
}

impl ToolError {
    /// The stable rule id, such as `outside-roots`, `shell-operator` or
    /// `invalid-arguments` (used in logs and the CLI's JSON).
    pub fn rule(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "unknown-tool",
            ToolError::InvalidArguments { .. } => "invalid-arguments",
            ToolError::Path { source, .. } => source.rule(),
            ToolError::Shell { source, .. } => source.rule(),
            ToolError::Egress { source, .. } => source.rule(),
            ToolError::Patch { source, .. } => source.rule(),
            ToolError::Unsupported { rule, .. } => rule,
            ToolError::Policy(_) => "policy",
            ToolError::NotApproved { source, .. } => source.rule(),
            ToolError::ApprovalUnavailable { .. } => "approval-unavailable",
        }
    }

    /// Whether the policy refused (as opposed to a failure: I/O, network, a
    /// patch that does not apply, malformed arguments).
    pub fn is_refusal(&self) -> bool {
        match self {
            ToolError::Path { source, .. } => source.is_refusal(),
            ToolError::Shell { source, .. } => source.is_refusal(),
            ToolError::Egress { source, .. } => source.is_refusal(),
            ToolError::Patch { source, .. } => source.is_refusal(),
            ToolError::NotApproved { .. } | ToolError::ApprovalUnavailable { .. } => true,
            _ => false,
        }
    }

    /// The text for a model: `Display`, cut to [`MAX_ERROR_CHARS`] on a
    /// character boundary.
    pub fn to_model_text(&self) -> String {
        clip(&self.to_string(), MAX_ERROR_CHARS)
    }
}

/// `message` as a sentence, prefixed with the rule when it is a refusal.
fn with_rule(refusal: bool, rule: &str, message: &str) -> String {
    if refusal {
        sentence(&format!("(rule {rule}) {message}"))
    } else {
        sentence(message)
    }
}

/// `text` ending with a full stop (unless it ends with punctuation).
fn sentence(text: &str) -> String {
    let text = text.trim_end();
    if text.ends_with(['.', '!', '?', ')']) {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > max => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_keeps_short_text_and_cuts_long_text_on_a_char_boundary() {
        assert_eq!(clip("abc", 5), "abc");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("ééééé", 3), "éé…");
        assert_eq!(clip("ééé", 3), "ééé");
    }
}
