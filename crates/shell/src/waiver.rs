//! Refusals a person approved for one command.
//!
//! A waiver names one refusal exactly (its rule and its every word, so the
//! program it names); validating with it lets that one refusal through and
//! judges everything else as always. It is meant for the exact command
//! the person was shown: the host keeps the approval bound to that argv and
//! working directory.

use crate::error::ShellError;
use crate::identity::is_bare;

/// The rules a [`Waivers`] can let through: a program not on the allowed
/// list, named bare (looked up in the command's `PATH` like any other).
pub const WAIVABLE_RULES: &[&str] = &["not-allowed-program"];

/// The refusals a person approved, for
/// [`ShellPolicy::validate_waiving`](crate::ShellPolicy::validate_waiving).
///
/// ```
/// use agentcaps_shell::{CommandRequest, ShellPolicy, Waivers};
///
/// let policy = ShellPolicy::read_only("/").build()?;
/// let request = CommandRequest::argv(["true"]);
/// let refusal = policy.validate(&request).unwrap_err();
/// assert_eq!(refusal.rule(), "not-allowed-program");
///
/// let mut waivers = Waivers::none();
/// assert!(waivers.waive(&refusal));
/// let validated = policy.validate_waiving(&request, &waivers)?;
/// assert_eq!(validated.argv(), ["true"]);
///
/// // Another unlisted program is still refused.
/// let other = CommandRequest::argv(["false"]);
/// assert!(policy.validate_waiving(&other, &waivers).is_err());
/// # Ok::<(), agentcaps_shell::ShellError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waivers {
    /// (rule, the refusal's full text)
    refusals: Vec<(&'static str, String)>,
}

impl Waivers {
    /// No refusal waived: validating with it is
    /// [`ShellPolicy::validate`](crate::ShellPolicy::validate).
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether `refusal` is one a waiver can let through (see
    /// [`WAIVABLE_RULES`]).
    pub fn can_waive(refusal: &ShellError) -> bool {
        match refusal {
            ShellError::NotAllowedProgram { program, .. } => {
                !program.is_empty() && is_bare(program)
            }
            _ => false,
        }
    }

    /// Waives exactly `refusal`; `false` (and nothing waived) when it is not
    /// one [`Waivers::can_waive`] accepts.
    pub fn waive(&mut self, refusal: &ShellError) -> bool {
        if !Self::can_waive(refusal) {
            return false;
        }
        let entry = (refusal.rule(), refusal.to_string());
        if !self.refusals.contains(&entry) {
            self.refusals.push(entry);
        }
        true
    }

    /// Whether `refusal` is exactly one that was waived.
    pub(crate) fn covers(&self, refusal: &ShellError) -> bool {
        !self.refusals.is_empty()
            && Self::can_waive(refusal)
            && self
                .refusals
                .iter()
                .any(|(rule, text)| *rule == refusal.rule() && *text == refusal.to_string())
    }

    /// Whether nothing is waived.
    pub fn is_empty(&self) -> bool {
        self.refusals.is_empty()
    }
}
