//! Integration tests of agentcaps-shell: attack tables, exact lookup
//! counts, properties, refusal messages and the runner with real processes.
#![allow(missing_docs)]

// The fixture of these tests is a POSIX tree (symbolic links in and out,
// `/etc/passwd`, stand-in programs as `#!/bin/sh` scripts): they run on
// Unix. Windows gets its own runner tests with Windows programs; the
// validator's Windows rules are tested by these tables on Linux, where the
// `windows` and `windows-paths` policies force them on.
#[cfg(unix)]
mod attacks;
#[cfg(unix)]
mod config;
#[cfg(unix)]
mod fixture;
#[cfg(unix)]
mod git;
#[cfg(unix)]
mod lookups;
#[cfg(unix)]
mod messages;
#[cfg(unix)]
mod properties;
#[cfg(all(unix, feature = "runner"))]
mod runner;
#[cfg(unix)]
mod runs_programs;
#[cfg(all(windows, feature = "runner"))]
mod windows_runner;
