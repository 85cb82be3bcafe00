//! One structured line per tool call: `{"ts":…,"tool":…,"decision":…,
//! "rule":…,"duration_ms":…}`, and one per question a person was asked
//! and its answer: `{"ts_ms":…,"event":"approval","tool":…,"rule":…,
//! "action":…,"answer":…,"client":…}` (the action is its digest, never its
//! arguments), to stderr or a file — never stdout, which belongs to the MCP
//! protocol.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::approval::ApprovalRecord;
use crate::toolbox::CallRecord;

/// Where call records go.
#[derive(Debug)]
pub struct CallLog {
    sink: Sink,
}

#[derive(Debug)]
enum Sink {
    Stderr,
    File(Mutex<File>),
    Off,
}

impl CallLog {
    /// Log to standard error.
    pub fn stderr() -> Self {
        Self { sink: Sink::Stderr }
    }

    /// Append to the file at `path` (created if missing).
    ///
    /// # Errors
    ///
    /// The I/O error if the file cannot be opened for appending.
    pub fn file(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self {
            sink: Sink::File(Mutex::new(file)),
        })
    }

    /// Log nothing.
    pub fn off() -> Self {
        Self { sink: Sink::Off }
    }

    /// The line for `record` (without the newline).
    pub fn line(record: &CallRecord) -> String {
        serde_json::json!({
            "ts_ms": now_ms(),
            "tool": record.tool,
            "decision": record.decision,
            "rule": record.rule,
            "duration_ms": record.duration_ms,
        })
        .to_string()
    }

    /// The line for one question and its answer (without the newline).
    pub fn approval_line(record: &ApprovalRecord) -> String {
        serde_json::json!({
            "ts_ms": now_ms(),
            "event": "approval",
            "tool": record.tool,
            "rule": record.rule,
            "action": record.action,
            "answer": record.answer,
            "client": record.client,
        })
        .to_string()
    }

    /// Writes one line for `record`. A failing log never fails the call.
    pub fn record(&self, record: &CallRecord) {
        self.write(&Self::line(record));
    }

    /// Writes one line for a question and its answer.
    pub fn approval(&self, record: &ApprovalRecord) {
        self.write(&Self::approval_line(record));
    }

    /// Writes one line for something the server decided outside a call
    /// (such as a client root it ignored): `{"ts_ms", "event", "detail"}`.
    pub fn event(&self, event: &str, detail: &str) {
        let line = serde_json::json!({"ts_ms": now_ms(), "event": event, "detail": detail});
        self.write(&line.to_string());
    }

    fn write(&self, line: &str) {
        match &self.sink {
            Sink::Stderr => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            Sink::File(file) => {
                if let Ok(mut file) = file.lock() {
                    let _ = writeln!(file, "{line}");
                }
            }
            Sink::Off => {}
        }
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
