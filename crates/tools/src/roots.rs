//! A client's roots (the directories its user opened) narrow the policy's
//! roots; they never widen them.
//!
//! The effective roots are the intersection: a client root inside a policy
//! root becomes a root with that policy root's access (read-only stays
//! read-only); a policy root inside a client root stays as it is; a client
//! root that meets no policy root is ignored (and reported, so it can be
//! logged). A client that names only roots outside the policy is left with
//! no root at all: every path is then refused, because the client asked
//! for no access beyond what it listed.

use std::path::PathBuf;

use agentcaps::Policy;
use agentcaps::paths::RootAccess;

use crate::ToolError;

/// A client root that narrowing did not use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IgnoredRoot {
    /// The root's URI as the client sent it.
    pub uri: String,
    /// Why it is not used: not a `file:` URI, not a local directory, or
    /// outside the policy's roots.
    pub reason: &'static str,
}

/// What narrowing did with the client's roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Narrowing {
    /// The effective roots, with their access, in the policy's order.
    pub(crate) roots: Vec<(PathBuf, RootAccess)>,
    /// Client roots that are not used.
    pub(crate) ignored: Vec<IgnoredRoot>,
}

/// The directory a root URI names: only absolute `file:` URIs count.
fn root_dir(uri: &str) -> Result<PathBuf, &'static str> {
    let url = url::Url::parse(uri).map_err(|_| "not a URI")?;
    if url.scheme() != "file" {
        return Err("not a file: URI");
    }
    let path = url.to_file_path().map_err(|()| "not a local path")?;
    std::fs::canonicalize(&path).map_err(|_| "does not exist")
}

/// The policy's roots narrowed to the client's `uris`.
pub(crate) fn narrow(policy_roots: &[(PathBuf, RootAccess)], uris: &[String]) -> Narrowing {
    let mut narrowing = Narrowing::default();
    let mut dirs = Vec::new();
    for uri in uris {
        match root_dir(uri) {
            Ok(dir) => dirs.push((uri, dir)),
            Err(reason) => narrowing.ignored.push(IgnoredRoot {
                uri: uri.clone(),
                reason,
            }),
        }
    }
    for (uri, dir) in &dirs {
        if !policy_roots
            .iter()
            .any(|(root, _)| dir.starts_with(root) || root.starts_with(dir))
        {
            narrowing.ignored.push(IgnoredRoot {
                uri: (*uri).clone(),
                reason: "outside the policy's roots",
            });
        }
    }
    for (root, access) in policy_roots {
        for (_, dir) in &dirs {
            let effective = if dir.starts_with(root) {
                dir.clone()
            } else if root.starts_with(dir) {
                root.clone()
            } else {
                continue;
            };
            if !narrowing
                .roots
                .iter()
                .any(|(r, a)| *r == effective && a == access)
            {
                narrowing.roots.push((effective, *access));
            }
        }
    }
    narrowing
}

/// `policy` with its `[files]` roots replaced by `narrowing`'s.
pub(crate) fn narrowed_policy(policy: &Policy, narrowing: &Narrowing) -> Policy {
    let mut policy = policy.clone();
    policy.files.allowed.clear();
    policy.files.read_only.clear();
    for (root, access) in &narrowing.roots {
        match access {
            RootAccess::ReadWrite => policy.files.allowed.push(root.clone()),
            _ => policy.files.read_only.push(root.clone()),
        }
    }
    policy
}

/// The canonical roots of `policy`, with their access.
pub(crate) fn policy_roots(policy: &Policy) -> Result<Vec<(PathBuf, RootAccess)>, ToolError> {
    let paths = policy.path_policy()?;
    Ok(paths
        .roots()
        .map(|(root, access)| (root.to_path_buf(), access))
        .collect())
}

/// `path` as a `file://` URI.
#[cfg(test)]
fn uri(path: &std::path::Path) -> String {
    url::Url::from_directory_path(path).map_or_else(|()| String::new(), |u| u.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("project/src")).expect("mkdir");
        std::fs::create_dir_all(root.join("elsewhere")).expect("mkdir");
        (dir, root)
    }

    #[test]
    fn a_subdirectory_root_narrows_and_keeps_the_access() {
        let (_dir, root) = tree();
        let project = root.join("project");
        let policy = [(project.clone(), RootAccess::ReadOnly)];
        let n = narrow(&policy, &[uri(&project.join("src"))]);
        assert_eq!(n.roots, vec![(project.join("src"), RootAccess::ReadOnly)]);
        assert!(n.ignored.is_empty(), "{n:?}");
    }

    #[test]
    fn a_wider_root_keeps_the_policy_root_and_an_outside_one_widens_nothing() {
        let (_dir, root) = tree();
        let project = root.join("project");
        let policy = [(project.clone(), RootAccess::ReadWrite)];
        let n = narrow(&policy, &[uri(&root), uri(&root.join("elsewhere"))]);
        assert_eq!(n.roots, vec![(project, RootAccess::ReadWrite)]);
        assert_eq!(n.ignored.len(), 1, "{n:?}");
        assert_eq!(n.ignored[0].reason, "outside the policy's roots");
    }

    #[test]
    fn only_outside_roots_leave_no_root_at_all() {
        let (_dir, root) = tree();
        let policy = [(root.join("project"), RootAccess::ReadWrite)];
        let n = narrow(&policy, &[uri(&root.join("elsewhere"))]);
        assert!(n.roots.is_empty(), "{n:?}");
    }

    #[test]
    fn uris_that_are_not_local_directories_are_ignored() {
        let (_dir, root) = tree();
        let policy = [(root.join("project"), RootAccess::ReadWrite)];
        let n = narrow(
            &policy,
            &[
                "https://example.com/project".into(),
                "not a uri".into(),
                uri(&root.join("project/missing")),
                // A dot-dot spelling is resolved before it is judged.
                format!("{}project/src/../../elsewhere", uri(&root)),
            ],
        );
        assert!(n.roots.is_empty(), "{n:?}");
        assert_eq!(n.ignored.len(), 4, "{n:?}");
    }
}
