//! # agentcaps-paths — where a path really goes
//!
//! An agent hands you a path. Before anything touches it, this crate
//! answers: *where will the OS really go with this spelling?* — and refuses
//! it unless **every** location it could end up at is allowed:
//!
//! 1. the **lexical** location (the normalized spelling),
//! 2. the **POSIX** reading (links followed as met; `link/..` is the parent
//!    of the link's target),
//! 3. the **Windows** reading (`..` applied lexically first; `link/..` is
//!    the directory holding the link).
//!
//! ```
//! use agentcaps_paths::{Access, PathPolicy};
//!
//! let root = std::env::temp_dir().canonicalize()?.join("agentcaps-lib-doc");
//! std::fs::create_dir_all(&root)?;
//! let policy = PathPolicy::builder().allow(&root).build()?;
//!
//! let allowed = policy.check(&root, "notes.txt", Access::Write)?;
//! assert!(allowed.location().ends_with("agentcaps-lib-doc/notes.txt"));
//!
//! let refused = policy.check(&root, "../../etc/passwd", Access::Read).unwrap_err();
//! assert_eq!(refused.rule(), "outside-roots");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The parts
//!
//! - [`PathPolicy`] (built with [`PathPolicy::builder`] or from the policy
//!   file's [`PathPolicyConfig`]): allowed roots, blocked roots and globs
//!   compiled once into one automaton, the safe defaults, Windows and
//!   case-folding modes ([`WindowsAliases`], [`CaseInsensitive`]).
//! - [`PathPolicy::check`] → [`Checked`] (the three locations and the
//!   lookups spent) or a [`PathError`] naming the spelling, the [`Reading`]
//!   that escaped, where it landed and the rule.
//! - Cost: [`PathPolicy::cost_upper_bound`] from the spelling
//!   alone, before any lookup; [`Budget`] to share one bound across a batch.
//! - [`FileSystem`]: the view a check looks through — [`RealFs`] (the host,
//!   via `rustix`) or [`SimFs`] (in memory: Windows and case-insensitive
//!   volumes, exact lookup counts).
//! - [`Beneath`] ([`PathPolicy::open_beneath`]): read, write, list, rename
//!   and remove beneath the roots' directory handles with no check-then-use
//!   gap, on Linux, macOS and Windows (each platform's mechanism is in
//!   [`Beneath`]'s docs).
//! - [`GuardedLinks`]: the links a tree holds at guarded names
//!   (`.cargo -> cfg`), which make ordinary names protected ones; every
//!   write through [`Beneath`] is judged at those other names too.
//! - [`check_portable_name`]: the rules for names being created.
//! - [`long_path`]: looking up paths longer than the kernel takes in one
//!   call, in pieces, as one lookup would (checks and [`Beneath`] use it;
//!   so can a host reading a tree as deep as a program made it).
//! - [`danger`]: loosenings (the safe defaults turned off), each listed by
//!   [`PathPolicy::loosenings`] for a host to show.
//!
//! # Security
//!
//! Hard links are invisible to any path check and pass. A check is advice
//! for programs that open paths themselves (the shell's children); only
//! [`Beneath`] closes the gap between check and use. The `base` of a check
//! must be a real location (for example the [`Checked::location`] of the
//! working directory): its own links are not followed again.
#![forbid(unsafe_code)]

mod beneath;
mod config;
pub mod danger;
mod defaults;
mod error;
mod fs;
mod glob;
mod links;
mod location;
pub mod long_path;
mod policy;
mod real_fs;
mod resolve;
mod rules;
mod sim_fs;
mod spelling;

pub use beneath::{
    Beneath, COMMIT_DIR_PREFIX, DirEntryInfo, EntryInfo, LinkJudging, SetAside, Staged, Version,
    WriteMode, Writers,
};
pub use config::{Access, CaseInsensitive, PathPolicyConfig, RootAccess, WindowsAliases};
pub use error::{NotPortable, PathError, Reading, Unjudgeable};
pub use fs::{EntryKind, FileSystem, Probe};
pub use links::GuardedLinks;
pub use policy::{Budget, Checked, Located, PathPolicy, PathPolicyBuilder};
pub use real_fs::RealFs;
pub use sim_fs::{SimFs, SimMode};
pub use spelling::check_portable_name;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
