//! Integration tests of `agentcaps-patch`: the fixture corpus, the parse
//! corpus, and snapshots of refusal messages.

mod fixtures;
mod links;
mod parse;
mod snapshots;
mod support;
