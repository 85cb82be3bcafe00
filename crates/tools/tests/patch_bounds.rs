//! `apply_patch` is bounded in time as well as size: a patch whose hunk
//! context matches almost everywhere in a large file of long equal lines
//! (a search that would compare gigabytes) stops at the match-work limit
//! with a refusal that says so, and writes nothing.

mod common;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::json;

#[tokio::test]
async fn a_hunk_that_matches_almost_everywhere_stops_at_the_work_limit() {
    let tree = common::Tree::new();
    let line = "a".repeat(1023);
    let file = format!("{line}\n").repeat(12_000);
    std::fs::write(tree.root.join("big.txt"), &file).expect("write");
    // 3000 context lines equal to every line of the file, then a line
    // the file lacks: each of the 9000 places compares 3000 lines of 1 KiB
    // before failing.
    let mut patch = String::from("--- a/big.txt\n+++ b/big.txt\n@@ -1,3001 +1,3000 @@\n");
    for _ in 0..3000 {
        patch.push(' ');
        patch.push_str(&line);
        patch.push('\n');
    }
    patch.push_str("-b\n");
    let policy = Policy::load(&tree.policy("")).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let started = std::time::Instant::now();
    let refused = toolbox
        .call("apply_patch", json!({"patch": patch}))
        .await
        .expect_err("refused");
    eprintln!("refused after {:?}", started.elapsed());
    assert_eq!(refused.rule(), "match-work", "{}", refused.to_model_text());
    assert!(
        refused.to_model_text().contains("big.txt"),
        "{}",
        refused.to_model_text()
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("big.txt")).expect("read"),
        file
    );
}
