//! # agentcaps-paths — where a path really goes
//!
//! Judges a path an agent wrote by **every location the OS could end up
//! at** (SPEC §1): its lexical spelling, the POSIX reading (links followed
//! as met, `..` to the physical parent) and the Windows reading (`..`
//! applied lexically first). All must be inside an allowed root and outside
//! every blocked entry. Then acts on it beneath the root's directory handle
//! with no check-then-use gap ([`Beneath`]).
//!
//! ```
//! use agentcaps_paths::{Access, PathPolicy};
//! use std::path::Path;
//!
//! let dir = std::env::temp_dir().canonicalize()?;
//! let policy = PathPolicy::builder().allow(&dir).build()?;
//! # let _ = policy.check(&dir, "notes.txt", Access::Write);
//! assert!(policy.check(&dir, "/etc/passwd", Access::Read).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod beneath;
mod config;
mod defaults;
mod error;
mod fs;
mod glob;
mod location;
mod policy;
mod real_fs;
mod resolve;
mod rules;
mod sim_fs;
mod spelling;

pub use beneath::{Beneath, DirEntryInfo, EntryInfo, Staged, WriteMode};
pub use config::{Access, CaseInsensitive, PathPolicyConfig, RootAccess, WindowsAliases};
pub use error::{NotPortable, PathError, Reading, Unjudgeable};
pub use fs::{EntryKind, FileSystem};
pub use policy::{Budget, Checked, Located, PathPolicy, PathPolicyBuilder};
pub use real_fs::RealFs;
pub use sim_fs::{SimFs, SimMode};
pub use spelling::check_portable_name;
