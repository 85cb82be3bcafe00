//! What the whole-process benches share: the binary they time, the
//! project they run in, and the median of a run of samples.

use std::path::PathBuf;
use std::time::Duration;

/// The `agentcaps` binary: `AGENTCAPS_BIN` (the release build `cargo xtask
/// bench` copies), else the one cargo built for this bench.
pub(crate) fn agentcaps() -> PathBuf {
    std::env::var_os("AGENTCAPS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_agentcaps")),
        PathBuf::from,
    )
}

/// A project holding `a.txt` and a blocked `.env`.
pub(crate) fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "hello\n").expect("a.txt");
    std::fs::write(dir.path().join(".env"), "SECRET=1\n").expect(".env");
    dir
}

/// The median sample.
pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples.get(samples.len() / 2).copied().unwrap_or_default()
}
