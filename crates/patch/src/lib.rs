//! # agentcaps-patch — apply model-written patches, atomically, inside a path policy
//!
//! Parses a unified diff (plain or git-style) or a `*** Begin Patch`
//! envelope, judges every path it names with an
//! [`agentcaps_paths::PathPolicy`] **against the tree as the patch would
//! leave it**, applies every hunk in memory, and only then writes: each new
//! content is staged beside its target beneath the root's directory handle
//! and exchanged with the file it replaces (which is kept aside until the
//! whole patch is in place), and anything already done is undone if a later
//! step fails — replaced and deleted files come back as the very same
//! files. No `.orig`/`.rej` files, ever.
//!
//! ```
//! use agentcaps_patch::{ApplyOptions, Patch, PatchPolicyConfig, Patcher};
//! use agentcaps_paths::PathPolicy;
//!
//! let dir = tempfile::tempdir()?;
//! let root = dir.path().canonicalize()?;
//! std::fs::write(root.join("hello.txt"), "hello\nworld\n")?;
//! let patcher = Patcher::new(PathPolicy::builder().allow(&root).build()?, PatchPolicyConfig::default());
//!
//! // Allowed: an edit of a file under the root.
//! let patch = Patch::parse("--- a/hello.txt\n+++ b/hello.txt\n@@ -1,2 +1,2 @@\n hello\n-world\n+there\n")?;
//! patcher.apply(&patch, &root, ApplyOptions::default())?;
//! assert_eq!(std::fs::read_to_string(root.join("hello.txt"))?, "hello\nthere\n");
//!
//! // Refused: a path that climbs out, whatever the policy allows.
//! let patch = Patch::parse("*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch\n")?;
//! let err = patcher.apply(&patch, &root, ApplyOptions::default()).unwrap_err();
//! assert_eq!(err.rule(), "dot-dot");
//! assert!(err.is_refusal());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is decided
//!
//! - **Formats**: see [`Patch::parse`]. `ed` scripts, context diffs, binary
//!   patches, copies, mode changes, symbolic links and unknown git headers
//!   are refused by name.
//! - **Paths**: absolute names, `..`, empty names, backslashes and names
//!   that are not portable on every platform are refused from the spelling
//!   alone;
//!   then every name is judged by the path policy for `Write` (a move's
//!   source for `Read` too) on an overlay of the tree showing the patch's
//!   own changes; no name may go through a symbolic link, before or after.
//!   One fate per path.
//! - **One meaning per section**: every name a file section gives
//!   (`diff --git a/X b/Y`, `---`, `+++`, `rename from`/`rename to`, the
//!   envelope's `*** Update File:`/`*** Move to:`) must name the same file
//!   once the prefixes are stripped, as `git apply` checks; otherwise the
//!   patch is refused (`inconsistent-names`) rather than one name written
//!   and another judged.
//! - **Repairs**: malformed shapes that models often write are refused with
//!   the shape named and how to fix it: line numbers copied from a file
//!   reader (`line-number-prefix`), placeholder hunk headers such as
//!   `@@ -XXX @@` (`placeholder-hunk-header`), a path that spells the
//!   repository directory twice (`doubled-path`), and a context that matches
//!   in several places (`ambiguous`, every candidate line listed).
//! - **Matching**: stated line, nearest exact offset, trailing whitespace
//!   ignored, lenient folding only when configured; ties are ambiguous and
//!   refused; every concession is in the [`ApplyReport`].
//! - **State**: creating over an existing file, moving onto one, updating or
//!   deleting a missing one, and deleting a file whose content differs from
//!   the patch are refused.
//! - **Bounds**: [`PatchPolicyConfig`].
//!
//! # What is not protected
//!
//! Hard links cannot be seen by a path check, but a patched
//! file is replaced by rename, so a hard-linked inode elsewhere is never
//! written. A file another process creates where the patch creates one,
//! between planning and renaming, is not replaced: the patch fails and is
//! undone. Other concurrent changes to the files a patch touches (an edit
//! between reading and replacing) are not detected. Directories emptied by
//! deletions are left in place. Without
//! [`durable`](PatchPolicyConfig::durable), a crash or power loss soon
//! after a patch can leave the files it wrote empty on some file systems.
#![forbid(unsafe_code)]

mod config;
mod diff;
mod envelope;
mod error;
mod hunk;
mod model;
mod overlay;
mod parallel;
mod plan;
mod print;
#[cfg(test)]
mod proptests;
mod quote;
mod report;
mod text;
mod transaction;
mod unified;

use std::path::Path;
use std::sync::Arc;

use agentcaps_paths::{GuardedLinks, LinkJudging, PathError, PathPolicy, RealFs};

pub use config::PatchPolicyConfig;
pub use error::{Bound, Candidate, Malformed, PatchError, StateCheck, UnsafePath, Unsupported};
pub use hunk::MAX_MATCH_WORK;
pub use model::{Format, Patch};
pub use report::{ApplyReport, Concession, FileAction, FileReport, HunkReport};

impl Patch {
    /// Parses a patch, detecting its format: a `*** Begin Patch` envelope
    /// when its first non-blank line opens one, a unified diff otherwise.
    ///
    /// Unified diffs: plain or git-style, several files, `/dev/null` for
    /// creation and deletion, `rename from`/`rename to`, C-quoted names,
    /// `\ No newline at end of file`; hunk header counts must agree with the
    /// body. Text before the first file header is skipped.
    ///
    /// Envelope: `*** Add File:`, `*** Delete File:`, `*** Update File:`
    /// with an optional `*** Move to:`, `@@` anchors, `*** End of File`.
    ///
    /// A leading byte-order mark, blank lines and Markdown code fences
    /// around the patch are ignored.
    ///
    /// This does not bound the text's size; [`Patcher::parse`] does.
    ///
    /// # Errors
    ///
    /// [`PatchError::Parse`] (the line and what was expected),
    /// [`PatchError::HeaderCounts`], and [`PatchError::Unsupported`] for the
    /// constructs refused by name.
    pub fn parse(text: &str) -> Result<Patch, PatchError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if envelope::detect(text) {
            envelope::parse(text)
        } else {
            unified::parse(text)
        }
    }

    /// The format the patch was written in.
    pub fn format(&self) -> Format {
        self.format
    }

    /// How many file sections the patch has.
    pub fn file_count(&self) -> usize {
        self.files.len()
    }

    /// How many hunks the patch has, all files together.
    pub fn hunk_count(&self) -> usize {
        self.files.iter().map(|f| f.hunks.len()).sum()
    }
}

/// How to apply a patch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Plan and report, write nothing; the report carries the unified diff
    /// that would be applied ([`ApplyReport::diff`]).
    pub dry_run: bool,
    /// Leading components removed from unified-diff names (`-p N`). `None`:
    /// remove git's `a/` from old names and `b/` from new names where
    /// present. Names of `rename from`/`rename to` carry no prefix: with
    /// `-p N` (N ≥ 1) they lose `N - 1` components, as with `git apply`.
    /// Names of the envelope are never stripped.
    pub strip: Option<usize>,
}

/// Applies patches under a path policy.
#[derive(Debug, Clone)]
pub struct Patcher {
    policy: PathPolicy,
    config: PatchPolicyConfig,
}

impl Patcher {
    /// A patcher that writes only where `policy` allows, within `config`'s
    /// bounds.
    pub fn new(policy: PathPolicy, config: PatchPolicyConfig) -> Self {
        Patcher { policy, config }
    }

    /// The bounds and modes in force.
    pub fn config(&self) -> &PatchPolicyConfig {
        &self.config
    }

    /// [`Patch::parse`], refusing text longer than `max_patch_bytes` before
    /// reading it.
    ///
    /// # Errors
    ///
    /// [`PatchError::Bound`], or as [`Patch::parse`].
    pub fn parse(&self, text: &str) -> Result<Patch, PatchError> {
        let len = u64::try_from(text.len()).unwrap_or(u64::MAX);
        if len > self.config.max_patch_bytes {
            return Err(PatchError::Bound {
                bound: Bound::PatchBytes,
                limit: self.config.max_patch_bytes,
                actual: len,
                path: None,
            });
        }
        Patch::parse(text)
    }

    /// Applies `patch` to the files under `base_dir` (names in the patch are
    /// relative to it): all of it, or — on any error — none of it.
    ///
    /// # Errors
    ///
    /// Refusals ([`PatchError::is_refusal`]): bounds, unsafe or refused
    /// paths, symbolic links, two sections for one file. Failures to apply:
    /// [`PatchError::NoMatch`], [`PatchError::Ambiguous`],
    /// [`PatchError::State`]. [`PatchError::Io`] when reading or writing
    /// fails; what was done is rolled back first, and
    /// [`PatchError::RollbackFailed`] names the files it could not restore.
    ///
    /// # Security
    ///
    /// Every name is judged for `Write` (and a move's source for `Read`) by
    /// the path policy on a view of the tree as the patch would leave it, so
    /// a patch cannot create or rename a link and then write through it; no
    /// name may pass through a symbolic link at all. Writes happen beneath
    /// the root's directory handle ([`agentcaps_paths::Beneath`]), refusing
    /// any link met on the way, so a link swapped in after the checks makes
    /// the write fail rather than escape.
    pub fn apply(
        &self,
        patch: &Patch,
        base_dir: &Path,
        options: ApplyOptions,
    ) -> Result<ApplyReport, PatchError> {
        self.apply_with_links(patch, base_dir, options, None)
    }

    /// [`Patcher::apply`], judging each write also at the other names
    /// `links` give it (the tree's links at guarded names, such as
    /// `.cargo -> cfg`, found by the caller's own handles); with `None`
    /// they are looked for once, by this call.
    ///
    /// # Errors
    ///
    /// As [`Patcher::apply`].
    pub fn apply_with_links(
        &self,
        patch: &Patch,
        base_dir: &Path,
        options: ApplyOptions,
        links: Option<Arc<GuardedLinks>>,
    ) -> Result<ApplyReport, PatchError> {
        plan::check_bounds(patch, &self.config)?;
        let base = base_dir.canonicalize().map_err(|source| PatchError::Io {
            op: "open base directory",
            path: base_dir.display().to_string(),
            source: Box::new(PathError::Io {
                op: "canonicalize",
                path: base_dir.to_path_buf(),
                source,
            }),
        })?;
        let mut beneath = self.policy.open_beneath().map_err(|source| {
            if source.is_refusal() {
                PatchError::PathPolicy {
                    path: base.display().to_string(),
                    source: Box::new(source),
                }
            } else {
                PatchError::Io {
                    op: "open roots",
                    path: base.display().to_string(),
                    source: Box::new(source),
                }
            }
        })?;
        beneath.set_durable(self.config.durable);
        // One walk for the guarded links of the tree per patch, or none.
        match links {
            Some(links) => beneath.use_guarded_links(links),
            None => beneath.set_link_judging(LinkJudging::UntilRefreshed),
        }
        let ctx = plan::Context {
            policy: &self.policy,
            beneath: &beneath,
            fs: &RealFs,
            base: &base,
            config: &self.config,
            want_diff: options.dry_run,
        };
        let plan = plan::plan(patch, &ctx, options.strip)?;
        let mut left_over = Vec::new();
        if !options.dry_run {
            // Other writers of these files in this process wait; one that
            // wrote since the plan read them makes this a conflict (each
            // file is replaced only while it is the version read).
            let _writers = beneath
                .hold_writers(&base, &plan.paths())
                .map_err(|source| PatchError::PathPolicy {
                    path: base.display().to_string(),
                    source: Box::new(source),
                })?;
            let mut store = transaction::BeneathStore {
                beneath: &beneath,
                base: &base,
            };
            left_over = transaction::execute(&mut store, &plan)?;
        }
        let diff = options.dry_run.then(|| {
            plan.files
                .iter()
                .filter_map(|f| f.diff.as_deref())
                .collect::<String>()
        });
        Ok(ApplyReport {
            dry_run: options.dry_run,
            files: plan.files.into_iter().map(|f| f.report).collect(),
            left_over,
            diff,
        })
    }
}
