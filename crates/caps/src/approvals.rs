//! `[approvals]`: which refusals become a question to a person instead,
//! how long a "yes" is remembered, and how long a question waits.
//!
//! Only refusals whose exact action the tools can let through alone are
//! askable ([`ASKABLE_RULES`]). Some never are ([`NEVER_ASKABLE`]): secrets,
//! the machine's own and special-purpose addresses, refusals that protect
//! the checks themselves, and confinement. Naming one of those, a rule that
//! cannot be asked about, or an ID that is no rule at all in `ask` is a
//! policy error with its line: a listed rule is never silently not asked.

use serde::{Deserialize, Serialize};

use crate::PolicyError;
use crate::load::Spans;

/// The rules a person can be asked about: for each, the tools know how to
/// let exactly the refused action through and nothing else.
pub const ASKABLE_RULES: &[&str] = &[
    "not-allowed-program",
    "unknown-option",
    "name.not-allowed",
    "write-protected",
];

/// Rules that are never asked about, with why (listing one in `ask` is a
/// policy error).
pub const NEVER_ASKABLE: &[(&str, &str)] = &[
    ("blocked", "blocked entries guard secrets"),
    (
        "address.special-purpose",
        "private, loopback and other special-purpose addresses are never opened by a question",
    ),
    (
        "address.not-global-unicast",
        "addresses outside global unicast are special-purpose ones",
    ),
    (
        "address.own-address",
        "the machine's own addresses are never opened by a question",
    ),
    (
        "credential-unbound",
        "a credential goes only where the policy binds it",
    ),
    (
        "credential-cleartext",
        "a credential is never sent in clear text",
    ),
    ("nul", "a NUL byte makes the action mean something else"),
    ("too-costly", "the check itself could not be made"),
    ("view-failed", "a command runs only inside its private view"),
    (
        "require-kernel-enforcement",
        "the host requires kernel confinement for every command",
    ),
    (
        "approval-unavailable",
        "it is the answer when no one can be asked",
    ),
];

/// The rule IDs the crates report (the table of `RULES.md`).
fn known_rules() -> impl Iterator<Item = &'static str> {
    include_str!("../RULES.md")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`').map(|(id, _)| id))
}

/// How long a person's "yes" holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Remember {
    /// For the one call that asked.
    #[default]
    Once,
    /// For the session: the same exact action is not asked again (the person
    /// chooses, per answer, whether to remember it).
    Session,
}

/// The `[approvals]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ApprovalsConfig {
    /// Rule IDs whose refusals become a question (empty: nothing is asked).
    pub ask: Vec<String>,
    /// How long a "yes" holds.
    pub remember: Remember,
    /// How long a question waits for an answer; none in time is a refusal.
    pub timeout_ms: u64,
}

/// Default for `[approvals] timeout_ms`: two minutes.
pub const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 120_000;

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            ask: Vec::new(),
            remember: Remember::Once,
            timeout_ms: DEFAULT_APPROVAL_TIMEOUT_MS,
        }
    }
}

impl ApprovalsConfig {
    /// Whether a refusal under `rule` is asked about.
    pub fn asks(&self, rule: &str) -> bool {
        self.ask.iter().any(|r| r == rule)
    }
}

/// Checks `[approvals]`: every `ask` entry is an askable rule, and the
/// timeout is not zero.
pub(crate) fn validate(spans: &Spans<'_>, config: &ApprovalsConfig) -> Result<(), PolicyError> {
    for (index, rule) in config.ask.iter().enumerate() {
        if ASKABLE_RULES.contains(&rule.as_str()) {
            continue;
        }
        let askable = ASKABLE_RULES.join(", ");
        let message = if let Some((_, why)) = NEVER_ASKABLE.iter().find(|(r, _)| r == rule) {
            format!("`{rule}` is never asked about: {why}; remove it (askable: {askable})")
        } else if known_rules().any(|known| known == rule) {
            format!(
                "`{rule}` cannot be asked about: no approval can let exactly that action through; remove it (askable: {askable})"
            )
        } else {
            format!("`{rule}` is not a rule ID agentcaps reports; the askable rules are {askable}")
        };
        return Err(spans.invalid_element("approvals", "ask", index, message));
    }
    if config.timeout_ms == 0 {
        return Err(PolicyError::InvalidValue {
            key: "approvals.timeout_ms".to_owned(),
            line: spans.key_line("approvals", "timeout_ms").unwrap_or(1),
            message: "0 ms leaves no time to answer; give the milliseconds a question waits"
                .to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_table_is_read() {
        let known: Vec<&str> = known_rules().collect();
        assert!(known.contains(&"not-allowed-program"), "{known:?}");
        assert!(known.contains(&"name.not-allowed"), "{known:?}");
        assert!(known.len() > 80, "{}", known.len());
    }

    #[test]
    fn every_askable_rule_is_a_known_one_and_none_is_never_askable() {
        for rule in ASKABLE_RULES {
            assert!(known_rules().any(|k| k == *rule), "{rule}");
            assert!(!NEVER_ASKABLE.iter().any(|(r, _)| r == rule), "{rule}");
        }
    }
}
