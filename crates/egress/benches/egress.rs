//! Benchmarks of agentcaps-egress (filled in below).
fn main() {}
