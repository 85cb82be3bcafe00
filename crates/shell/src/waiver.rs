//! Refusals a person approved for one command.
//!
//! A waiver names one refusal exactly (its rule and its every word, so the
//! program it names); validating with it lets that one refusal through and
//! judges everything else as always. It is meant for the exact command
//! the person was shown: the host keeps the approval bound to that argv and
//! working directory.
//!
//! An approved `unknown-option` (an option the program's rules do not
//! model, given alone: `--frobnicate`, never `--frobnicate=VALUE` or a
//! cluster of letters) is left out when the command is judged, for that
//! program (and subcommand) only, and kept in the command that runs. It is
//! left out only where it is given once, before any `--`; given twice, the
//! command stays refused. Every
//! other word is judged as always: a word the option might take as its
//! value is judged as an operand (a file argument, so a path the policy
//! allows), which is never looser than judging it as the option's value.
//! Whether the program may start others is judged as for the command
//! without the option: a program whose rules say it starts none is still
//! denied that, whatever the option would make it do.

use crate::error::ShellError;
use crate::identity::is_bare;

/// The rules a [`Waivers`] can let through: a program not on the allowed
/// list, named bare (looked up in the command's `PATH` like any other), and
/// an option the program's rules do not know, given alone.
pub const WAIVABLE_RULES: &[&str] = &["not-allowed-program", "unknown-option"];

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
    /// The approved unknown options: (program with its subcommand, as the
    /// refusal names it; the argument).
    options: Vec<(String, String)>,
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
            ShellError::UnknownOption {
                argument, option, ..
            } => alone(argument, option),
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
        if let ShellError::UnknownOption {
            program, argument, ..
        } = refusal
        {
            let option = (program.clone(), argument.clone());
            if !self.options.contains(&option) {
                self.options.push(option);
            }
        }
        true
    }

    /// `argv` without the approved unknown options of the programs whose
    /// words `segments` (start, end, identity) span, and for each word
    /// kept its index in `argv`; `None` when no word is left out.
    pub(crate) fn without_options<'a>(
        &self,
        argv: &[String],
        segments: impl Iterator<Item = (usize, usize, &'a str)>,
    ) -> Option<(Vec<String>, Vec<usize>)> {
        if self.options.is_empty() {
            return None;
        }
        let mut dropped = vec![false; argv.len()];
        for (start, end, identity) in segments {
            let words = argv.get(start + 1..end).unwrap_or_default();
            for (program, argument) in &self.options {
                let (name, subcommand) = match program.split_once(' ') {
                    Some((name, sub)) => (name, Some(sub)),
                    None => (program.as_str(), None),
                };
                if name != identity {
                    continue;
                }
                // `git log --x` is approved after `log`, not before it.
                let from = match subcommand {
                    Some(sub) => match words.iter().position(|w| w == sub) {
                        Some(at) => at + 1,
                        None => continue,
                    },
                    None => 0,
                };
                // Exactly one place, before any `--`: with two, leaving one
                // out could make the next word read as another option's
                // value instead of a file (`--x --value --x FILE`).
                let options = words.iter().position(|w| w == "--").unwrap_or(words.len());
                let places: Vec<usize> = (from..words.len())
                    .filter(|&i| words[i] == *argument)
                    .collect();
                if let [only] = places.as_slice()
                    && *only < options
                {
                    dropped[start + 1 + only] = true;
                }
            }
        }
        if !dropped.contains(&true) {
            return None;
        }
        let kept: Vec<usize> = (0..argv.len()).filter(|&i| !dropped[i]).collect();
        let judged = kept.iter().map(|&i| argv[i].clone()).collect();
        Some((judged, kept))
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

/// Whether an unknown option is given alone: the argument is exactly the
/// option (`--frobnicate`, `-frob` for single-dash words), with no value
/// attached and no other letters clustered with it.
fn alone(argument: &str, option: &str) -> bool {
    argument == option && argument.len() > 1 && argument.starts_with('-') && argument != "--"
}
