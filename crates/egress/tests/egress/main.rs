//! Integration tests of agentcaps-egress: data tables, and end-to-end on
//! loopback with a real DNS server, HTTP and TLS servers.
#![allow(unreachable_pub)] // support items are `pub` for the test modules of this one binary

mod adapter;
mod cross_family;
mod e2e;
mod invariants;
mod knobs;
mod limits;
mod messages;
mod oracle;
mod proxy;
mod rewrite;
mod rewrite_oracle;
mod support;
mod tables;
mod tls;
