//! Judged write-back: what a command changed in a writable root, read from
//! the staging (upper) layer of the root's overlay once it has ended, judged
//! entry by entry as a write through the path policy, and committed to the
//! real tree all together or not at all.
//!
//! - [`scan`] reads the staging layer: created, modified and deleted
//!   entries (whiteouts and opaque directories), mode changes, symbolic and
//!   hard links, special files.
//! - [`judge`] decides each change: the path policy with write access
//!   (protected persistence files, blocked names — also in any letter
//!   case — read-only roots), portable names for new entries, link targets
//!   that must stay inside the roots, no special files, no set-id or sticky
//!   bits, no hard link to an inode the command did not create.
//! - [`commit`] puts the allowed changes in place through the path crate's
//!   handles ([`agentcaps_paths::Beneath`]): every new content is staged
//!   first, then each is exchanged with the file it replaces (kept aside),
//!   created or moved aside; any failure puts everything back.

mod changes;
mod commit;
mod judge;
mod scan;

pub use changes::{Change, ChangeAction, Changes, RefusedChange};
pub(crate) use commit::{CommitFault, RootOps, commit};
pub(crate) use judge::{judge, refused_change, shown};
pub(crate) use scan::scan;
