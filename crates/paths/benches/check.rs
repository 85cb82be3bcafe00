//! Decisions per second against `std::fs::canonicalize` (being written).
fn main() {}
