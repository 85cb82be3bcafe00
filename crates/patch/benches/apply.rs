//! Placeholder: the apply benchmark is being written.
fn main() {}
