//! Integration tests of `agentcaps-patch`: the fixture corpus, the parse
//! corpus, and snapshots of refusal messages.

mod parse;

// Fixtures hold symbolic links (which Wine, where the Windows build is
// tested, does not emulate as Windows does) and the sandboxes use Unix
// permissions: Unix only.
#[cfg(unix)]
mod fixtures;
#[cfg(unix)]
mod links;
#[cfg(unix)]
mod snapshots;
#[cfg(unix)]
mod support;
