//! # agentcaps-sandbox — run a prepared command confined
//!
//! Given a command that is ready to run (the program's absolute path, argv,
//! working directory, the whole environment: a [`SandboxCommand`]) and what
//! it may touch (a [`Sandbox`]: a path policy, a network mode, an output
//! cap), this crate runs it with no shell, stdin closed or fed, a timeout
//! that kills everything it started, capped output — and confined by the
//! kernel:
//!
//! - **Linux**: a private view of the machine ([`kernel::view`]: new user,
//!   mount, PID, IPC and network namespaces; only the runtime and the
//!   policy's roots exist; blocked entries are absent; writable roots are
//!   overlays) with Landlock inside it as a second wall. When the command
//!   ends, its writes are judged by the same path policy and committed
//!   ([`writeback`]); [`RunResult::changes`] lists what landed and what was
//!   refused.
//! - **macOS**: a Seatbelt profile made from the same policy
//!   ([`kernel::seatbelt`]).
//! - **Windows**: a Job object holds the tree together; the kernel confines
//!   nothing else.
//!
//! Every [`RunResult`] says what was enforced (`enforced`, and
//! `enforced_reason` when it is not `full`).
//!
//! This crate knows nothing of which commands are allowed: it runs what it
//! is given. `agentcaps-shell` judges an agent's command against its
//! command policy and runs only what it accepted through this crate; a host
//! that builds its own command calls [`Sandbox::run`] directly and owns that
//! decision.
//!
//! ```no_run
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use agentcaps_paths::PathPolicy;
//! use agentcaps_sandbox::{Sandbox, SandboxCommand};
//!
//! // First thing in `main`: this executable builds the views.
//! agentcaps_sandbox::kernel::view::dispatch();
//!
//! let project = std::env::current_dir()?;
//! let sandbox = Sandbox::builder()
//!     .path_policy(Some(PathPolicy::builder().allow(&project).build()?))
//!     .build();
//! let command = SandboxCommand::new("/usr/bin/make", ["make", "test"], &project)
//!     .env("PATH", "/usr/bin:/bin");
//! let result = sandbox.run(command).await?;
//! println!("{} (enforced: {})", result.stdout, result.enforced);
//! if let Some(changes) = &result.changes {
//!     // `.git/hooks/*`, `.env` and the like never land.
//!     println!("{} refused", changes.refused.len());
//! }
//! # Ok(()) }
//! ```
//!
//! # Security
//!
//! What holds where, and what does not, is in [`kernel`]'s docs; the result
//! of every run says it again. Without a path policy, files are as on the
//! host.
//!
//! # Crate features
//!
//! - `landlock` (default): on Linux, the private view and Landlock. Without
//!   it commands run unconfined by the kernel (the result says `none`).
#![forbid(unsafe_code)]

mod command;
mod confinement;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod credentials;
mod error;
pub mod kernel;
mod network;
mod output;
mod run;
mod tree;
#[cfg(all(feature = "landlock", target_os = "linux"))]
mod view_run;
pub mod writeback;

pub use command::SandboxCommand;
pub use confinement::{Limits, Sandbox, SandboxBuilder};
pub use error::SandboxError;
pub use network::{Connection, NetworkProxy, PROXY_PORT, ProxyCredentials, ProxySession};
pub use output::OutputCounter;
pub use run::{Exit, RunResult, Truncated, ViewAvailability};
pub use writeback::{Change, ChangeAction, Changes, RefusedChange, WriteBackDecider};
