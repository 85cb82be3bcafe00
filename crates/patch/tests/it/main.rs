//! Integration tests of `agentcaps-patch`: the fixture corpus, the parse
//! corpus, and snapshots of refusal messages.

// Fixtures hold symbolic links and the sandboxes use Unix permissions.
#![cfg(unix)]

mod fixtures;
mod links;
mod parse;
mod snapshots;
mod support;
