//! What the kernel achieved for one run, and the refusal when that is not
//! enough.

use std::fmt;
use std::str::FromStr;

/// The Landlock ABI whose features express the whole of [`KernelRules`]:
/// file access with truncation and device ioctls (ABI 1–5), TCP
/// `bind`/`connect` (ABI 4), and abstract UNIX sockets and signals scoped to
/// the domain (ABI 6).
///
/// [`KernelRules`]: super::KernelRules
pub const FULL_ABI: u8 = 6;

/// How much of [`KernelRules`](super::KernelRules) the kernel enforced for a
/// run.
///
/// Serialised (serde and [`Display`](fmt::Display)) as `"full"`,
/// `"partial (abi N)"` or `"none"`, the words every run result carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Enforcement {
    /// Every rule is enforced by the kernel (Landlock ABI 6 or later).
    Full,
    /// Part of the confinement held: the rules up to Landlock ABI `abi`
    /// (0: none), and not everything else (no private view, or the host's
    /// network); the run's `enforced_reason` says what is missing.
    Partial {
        /// The Landlock ABI whose features were enforced (1 to 5).
        abi: u8,
    },
    /// Nothing is enforced by the kernel: only the argument checks apply.
    None,
}

impl Enforcement {
    /// The enforcement a kernel (or a cap) offering Landlock ABI `abi`
    /// achieves: `0` is [`None`](Enforcement::None), 1 to 5 are
    /// [`Partial`](Enforcement::Partial), [`FULL_ABI`] and later
    /// [`Full`](Enforcement::Full).
    #[must_use]
    pub fn for_abi(abi: u8) -> Self {
        match abi {
            0 => Self::None,
            abi if abi < FULL_ABI => Self::Partial { abi },
            _ => Self::Full,
        }
    }

    /// Whether every rule is enforced by the kernel.
    #[must_use]
    pub fn is_full(self) -> bool {
        self == Self::Full
    }
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full => f.write_str("full"),
            Self::Partial { abi } => write!(f, "partial (abi {abi})"),
            Self::None => f.write_str("none"),
        }
    }
}

/// The text was not `full`, `partial (abi N)` or `none`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an enforcement level: expected `full`, `partial (abi N)` or `none`")]
pub struct ParseEnforcementError {
    /// The text that was not understood.
    pub text: String,
}

impl FromStr for Enforcement {
    type Err = ParseEnforcementError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ParseEnforcementError {
            text: text.to_owned(),
        };
        match text {
            "full" => Ok(Self::Full),
            "none" => Ok(Self::None),
            _ => {
                let abi: u8 = text
                    .strip_prefix("partial (abi ")
                    .and_then(|rest| rest.strip_suffix(')'))
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(bad)?;
                // Any level: a run without its private view is partial even
                // with a full Landlock ABI.
                Ok(Self::Partial { abi })
            }
        }
    }
}

impl serde::Serialize for Enforcement {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Enforcement {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Refusal: the rules say `require` (the policy's
/// `require_kernel_enforcement = true`) and the kernel cannot enforce all of
/// them, so nothing was run.
///
/// [`spawn_confined`](super::spawn_confined) returns it inside an
/// [`std::io::Error`] of kind [`Unsupported`](std::io::ErrorKind::Unsupported);
/// get it back with [`KernelRefusal::from_io_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "refused to run: the policy sets `require_kernel_enforcement`, and kernel enforcement here would be `{achieved}`, not `full` (that needs Landlock ABI {needed_abi} or later); nothing ran. Commands run only where the kernel enforces the whole policy: the host must use such a kernel or lift the requirement."
)]
#[non_exhaustive]
pub struct KernelRefusal {
    /// What the kernel could achieve.
    pub achieved: Enforcement,
    /// The Landlock ABI that full enforcement needs ([`FULL_ABI`]).
    pub needed_abi: u8,
}

impl KernelRefusal {
    /// The rule id of this refusal, for logs and the CLI's JSON `rule`.
    pub const RULE: &'static str = "require-kernel-enforcement";

    pub(crate) fn new(achieved: Enforcement) -> Self {
        Self {
            achieved,
            needed_abi: FULL_ABI,
        }
    }

    /// The refusal carried by an error of
    /// [`spawn_confined`](super::spawn_confined), if it is one.
    #[must_use]
    pub fn from_io_error(error: &std::io::Error) -> Option<&Self> {
        error.get_ref()?.downcast_ref()
    }

    pub(crate) fn into_io_error(self) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::Unsupported, self)
    }
}
