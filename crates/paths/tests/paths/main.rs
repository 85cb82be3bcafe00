//! The integration tests of `agentcaps-paths`: attack corpora (data files in
//! `tests/data/`), the kernel oracle, exact lookup counts, races through
//! `Beneath`, and snapshots of every refusal message.

// The `Beneath` suites are compiled twice on purpose, once per mechanism
// (`openat2` and the component walk).
#![allow(clippy::duplicate_mod)]

mod config;
mod link_ways;
mod lookups;
mod portable;
mod sim_fs;

// The kernel's own resolution (`openat2`) is the oracle: Linux only.
#[cfg(target_os = "linux")]
mod oracle;

// Not built on Windows: these suites build real trees of symbolic links
// (Wine, where the Windows build is tested, does not emulate them as
// Windows does), read Unix modes and inodes, or name files with bytes that
// are not UTF-8. `portable` runs `Beneath` there instead.
#[cfg(unix)]
mod commit_dir;
#[cfg(unix)]
mod component_walk;
#[cfg(unix)]
mod corpus;
#[cfg(target_os = "linux")]
mod deep;
#[cfg(unix)]
mod guarded_links;
#[cfg(unix)]
mod openat2;
#[cfg(unix)]
mod snapshots;

/// A symbolic link, on any platform.
#[cfg(windows)]
fn symlink(
    target: impl AsRef<std::path::Path>,
    link: impl AsRef<std::path::Path>,
) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(target, link)
}
#[cfg(unix)]
use std::os::unix::fs::symlink;

/// Makes `depth` directories named `name` below `top`, each relative to
/// the last (a path to the bottom may be longer than one call takes);
/// returns the bottom one, open.
#[cfg(unix)]
fn mkdir_chain(top: &std::path::Path, name: &str, depth: usize) -> std::fs::File {
    let mut at = std::fs::File::open(top).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&at, name, rustix::fs::Mode::from_raw_mode(0o755)).unwrap();
        let next = rustix::fs::openat(
            &at,
            name,
            rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        at = std::fs::File::from(next);
    }
    at
}
