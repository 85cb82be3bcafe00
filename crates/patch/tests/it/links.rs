//! Links no fixture can hold: hard links (git stores none).

use agentcaps_patch::{ApplyOptions, FileAction, Patch, PatchPolicyConfig};

use crate::support::Sandbox;

/// A hard link inside the root to a file outside passes every path
/// check, but a patched file is replaced by rename: the inode outside
/// is never written.
#[test]
fn hard_link_to_outside_is_replaced_not_written_through() {
    let sandbox = Sandbox::new();
    let inside = sandbox.root.join("h.txt");
    std::fs::hard_link(sandbox.outside.join("secret.txt"), &inside)
        .unwrap_or_else(|e| panic!("link: {e}"));
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let patch = Patch::parse("--- a/h.txt\n+++ b/h.txt\n@@ -1 +1 @@\n-secret\n+changed\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let report = patcher
        .apply(&patch, &sandbox.root, ApplyOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        report.files.first().map(|f| f.action),
        Some(FileAction::Modified)
    );
    let read =
        |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read: {e}"));
    assert_eq!(read(&inside), "changed\n");
    assert_eq!(read(&sandbox.outside.join("secret.txt")), "secret\n");
}

/// A link loop on the way is refused, not followed forever.
#[test]
fn link_loop_is_refused() {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink("b", sandbox.root.join("a")).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("a", sandbox.root.join("b")).unwrap_or_else(|e| panic!("{e}"));
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let patch = Patch::parse("*** Begin Patch\n*** Add File: a/x.txt\n+x\n*** End Patch\n")
        .unwrap_or_else(|e| panic!("{e}"));
    let err = patcher
        .apply(&patch, &sandbox.root, ApplyOptions::default())
        .err()
        .unwrap_or_else(|| panic!("applied"));
    assert!(err.is_refusal(), "{err}");
    assert!(["link-loop", "symlink"].contains(&err.rule()), "{err}");
}
