//! Temporary trees: a root the policy allows and an `outside` beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agentcaps_patch::{PatchPolicyConfig, Patcher};
use agentcaps_paths::PathPolicy;

/// What is at a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    File(String),
    Link(PathBuf),
    Dir,
}

/// Every entry under `root`, by relative path (links not followed).
pub(crate) fn tree(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    Entry::Link(std::fs::read_link(&path).unwrap_or_default()),
                );
            } else if meta.is_dir() {
                out.insert(rel, Entry::Dir);
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                // Shown escaped so a CRLF difference is visible in a failure.
                out.insert(
                    rel,
                    Entry::File(format!("{:?}", String::from_utf8_lossy(&bytes))),
                );
            }
        }
    }
    out
}

/// Copies `from` to `to`, recreating links as links.
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries.flatten() {
        let src = entry.path();
        let dst = to.join(entry.file_name());
        let meta = std::fs::symlink_metadata(&src)
            .unwrap_or_else(|e| panic!("lstat {}: {e}", src.display()));
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&src).unwrap_or_else(|e| panic!("readlink: {e}"));
            std::os::unix::fs::symlink(&target, &dst).unwrap_or_else(|e| panic!("symlink: {e}"));
        } else if meta.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        }
    }
}

/// A temporary directory holding `root/` (allowed) and `outside/` (not).
pub(crate) struct Sandbox {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) outside: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let top = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("canonicalize: {e}"));
        let (root, outside) = (top.join("root"), top.join("outside"));
        for d in [&root, &outside] {
            std::fs::create_dir(d).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        std::fs::write(outside.join("secret.txt"), "secret\n")
            .unwrap_or_else(|e| panic!("write: {e}"));
        Sandbox {
            _dir: dir,
            root,
            outside,
        }
    }

    pub(crate) fn patcher(&self, config: PatchPolicyConfig) -> Patcher {
        let policy = PathPolicy::builder()
            .allow(&self.root)
            .build()
            .unwrap_or_else(|e| panic!("policy: {e}"));
        Patcher::new(policy, config)
    }
}
