//! What a subcommand prints and the exit code it returns.

use serde_json::{Map, Value, json};

/// The exit codes: 0 allowed, 3 refused by the policy, 2 usage or policy-file error, 1 anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Allowed (for `run`: the command ran).
    Allowed = 0,
    /// Anything else: I/O, network, a patch that does not apply.
    Failed = 1,
    /// Usage or policy-file error.
    Usage = 2,
    /// Refused by the policy.
    Refused = 3,
}

/// A subcommand's result: exit code, the JSON object and the human text.
#[derive(Debug)]
pub(crate) struct Outcome {
    exit: Exit,
    json: Map<String, Value>,
    text: String,
    report: bool,
}

impl Outcome {
    fn new(exit: Exit, decision: &str, rule: &str, reason: String) -> Self {
        let mut json = Map::new();
        json.insert("decision".into(), json!(decision));
        json.insert("rule".into(), json!(rule));
        json.insert("reason".into(), json!(reason));
        Self {
            exit,
            json,
            text: reason,
            report: false,
        }
    }

    /// Allowed; `text` is printed to stdout.
    pub(crate) fn allowed(reason: impl Into<String>) -> Self {
        Self::new(Exit::Allowed, "allow", "", reason.into())
    }

    /// Refused by the policy (exit 3).
    pub(crate) fn refused(rule: &str, reason: impl Into<String>) -> Self {
        Self::new(Exit::Refused, "deny", rule, reason.into())
    }

    /// Usage or policy-file error (exit 2).
    pub(crate) fn usage(rule: &str, reason: impl Into<String>) -> Self {
        Self::new(Exit::Usage, "error", rule, reason.into())
    }

    /// Anything else (exit 1).
    pub(crate) fn failed(rule: &str, reason: impl Into<String>) -> Self {
        Self::new(Exit::Failed, "error", rule, reason.into())
    }

    /// A crate error: refused (exit 3) or failed (exit 1).
    pub(crate) fn from_error(refusal: bool, rule: &str, error: &dyn std::fmt::Display) -> Self {
        if refusal {
            Self::refused(rule, error.to_string())
        } else {
            Self::failed(rule, error.to_string())
        }
    }

    /// Nothing to print (the MCP server's normal end).
    pub(crate) fn quiet(exit: Exit) -> Self {
        let mut outcome = Self::new(exit, "allow", "", String::new());
        outcome.json.clear();
        outcome
    }

    /// Adds `key: value` to the JSON object.
    pub(crate) fn with(mut self, key: &str, value: Value) -> Self {
        self.json.insert(key.into(), value);
        self
    }

    /// The text is a report (one line per item): it goes to stdout whatever
    /// the decision.
    pub(crate) fn report(mut self) -> Self {
        self.report = true;
        self
    }

    /// Replaces the human text.
    pub(crate) fn text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// Prints (JSON to stdout; text to stdout when allowed, else stderr) and
    /// returns the exit code.
    pub(crate) fn print(self, json: bool) -> i32 {
        if json && !self.json.is_empty() {
            println!("{}", Value::Object(self.json));
        } else if !self.text.is_empty() {
            if self.exit == Exit::Allowed || self.report {
                println!("{}", self.text);
            } else {
                eprintln!("agentcaps: {}", self.text);
            }
        }
        self.exit as i32
    }
}
