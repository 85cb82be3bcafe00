//! `search_files` attacked and measured for what it must keep: it never
//! reads a blocked file or one reached through a link (even one swapped in
//! while it walks), honours the ignore files as documented, stops at its
//! limits, and agrees with a plain line-by-line reading.

mod common;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::{Value, json};

fn toolbox(tree: &common::Tree) -> Toolbox {
    let policy = Policy::load(&tree.policy("")).expect("policy");
    Toolbox::new(&policy, &tree.root).expect("toolbox")
}

async fn search(toolbox: &Toolbox, args: Value) -> Value {
    toolbox
        .call("search_files", args)
        .await
        .expect("search")
        .structured
}

fn paths(out: &Value) -> Vec<String> {
    out["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| format!("{}:{}", m["path"].as_str().unwrap_or(""), m["line_number"]))
        .collect()
}

#[tokio::test]
async fn a_glob_naming_hidden_files_still_never_reads_blocked_ones() {
    let tree = common::Tree::new();
    std::fs::create_dir_all(tree.root.join("a/b")).expect("mkdir");
    std::fs::write(tree.root.join("a/b/.env.local"), "API_KEY=deep-secret\n").expect("write");
    std::fs::create_dir_all(tree.root.join("a/.ssh")).expect("mkdir");
    std::fs::write(tree.root.join("a/.ssh/config"), "ssh-secret\n").expect("write");
    let toolbox = toolbox(&tree);
    for glob in [".*", ".env*", "**/.env*", "*", "config", "**", ".ENV"] {
        let out = search(&toolbox, json!({"pattern": "secret|PEM", "glob": glob})).await;
        let text = out.to_string();
        for secret in [
            "inside-secret",
            "deep-secret",
            "ssh-secret",
            "PEM-KEY-SECRET",
        ] {
            assert!(!text.contains(secret), "glob {glob}: {secret} read: {text}");
        }
    }
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Wine makes no symbolic links (its CreateSymbolicLink reports success and does nothing)"
)]
async fn links_to_blocked_files_and_out_of_the_root_are_never_followed() {
    let tree = common::Tree::new();
    let root = &tree.root;
    common::symlink(&root.join(".env"), &root.join("visible-env"));
    common::symlink(&root.join("server.pem"), &root.join("key.txt"));
    common::symlink(&root.join(".git"), &root.join("git-dir"));
    common::symlink(std::path::Path::new("/etc"), &root.join("etc"));
    let toolbox = toolbox(&tree);
    let out = search(&toolbox, json!({"pattern": "secret|PEM|core|root:"})).await;
    assert_eq!(paths(&out), Vec::<String>::new(), "{out}");
}

#[tokio::test]
#[cfg_attr(
    windows,
    ignore = "Wine makes no symbolic links (its CreateSymbolicLink reports success and does nothing)"
)]
async fn a_directory_swapped_for_a_link_during_the_walk_is_never_entered() {
    let tree = common::Tree::new();
    let root = tree.root.clone();
    // Many directories, so the walk is under way while they are swapped.
    for i in 0..200 {
        let dir = root.join(format!("d{i:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("f.txt"), "inside needle\n").expect("write");
    }
    let outside = tree.outside.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = std::sync::Arc::clone(&stop);
        let root = root.clone();
        std::thread::spawn(move || {
            let mut swaps = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for i in 0..200 {
                    let dir = root.join(format!("d{i:03}"));
                    let aside = root.join(format!("aside{i:03}"));
                    // The directory goes aside and a link to outside takes
                    // its name; then back.
                    if std::fs::rename(&dir, &aside).is_ok() {
                        let _ = common::try_symlink(&outside, &dir);
                        let _ = std::fs::remove_file(&dir);
                        let _ = std::fs::rename(&aside, &dir);
                        swaps += 1;
                    }
                }
            }
            swaps
        })
    };
    let toolbox = toolbox(&tree);
    for _ in 0..30 {
        let out = search(
            &toolbox,
            json!({"pattern": "secret|needle", "max_matches": 1000}),
        )
        .await;
        assert!(!out.to_string().contains("outside secret"), "{out}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(swapper.join().expect("swapper") > 0, "nothing was swapped");
}

#[tokio::test]
async fn ignore_files_are_honoured_as_documented() {
    let tree = common::Tree::new();
    let root = &tree.root;
    // The tree holds `.git`: its `.gitignore` files count.
    std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").expect("write");
    std::fs::create_dir_all(root.join("build")).expect("mkdir");
    std::fs::create_dir_all(root.join("sub/inner")).expect("mkdir");
    let files = [
        ("a.log", "needle"),
        ("build/out.txt", "needle"),
        ("sub/keep.log", "needle"),
        ("sub/plain.txt", "needle"),
        ("sub/inner/x.txt", "needle"),
        ("sub/inner/y.txt", "needle"),
    ];
    for (path, text) in files {
        std::fs::write(root.join(path), text).expect("write");
    }
    std::fs::write(root.join("sub/.gitignore"), "!keep.log\n").expect("write");
    std::fs::write(root.join("sub/inner/.ignore"), "x.txt\n").expect("write");
    let toolbox = toolbox(&tree);
    let out = search(&toolbox, json!({"pattern": "needle"})).await;
    let found = paths(&out);
    assert!(found.contains(&"sub/keep.log:1".to_owned()), "{found:?}");
    assert!(found.contains(&"sub/plain.txt:1".to_owned()), "{found:?}");
    assert!(found.contains(&"sub/inner/y.txt:1".to_owned()), "{found:?}");
    for ignored in ["a.log:1", "build/out.txt:1", "sub/inner/x.txt:1"] {
        assert!(
            !found.contains(&ignored.to_owned()),
            "{ignored} searched: {found:?}"
        );
    }
    // Searching below: the root's `.gitignore` still counts.
    let out = search(&toolbox, json!({"pattern": "needle", "path": "sub"})).await;
    assert_eq!(
        paths(&out),
        ["inner/y.txt:1", "keep.log:1", "plain.txt:1"],
        "{out}"
    );
    // Without `.git` a `.gitignore` does not count; `.ignore` does.
    std::fs::remove_dir_all(root.join(".git")).expect("rm .git");
    let out = search(&toolbox, json!({"pattern": "needle"})).await;
    let found = paths(&out);
    assert!(found.contains(&"a.log:1".to_owned()), "{found:?}");
    assert!(
        !found.contains(&"sub/inner/x.txt:1".to_owned()),
        "{found:?}"
    );
}

#[tokio::test]
async fn the_result_limit_stops_the_search_truncated_and_sorted() {
    let tree = common::Tree::new();
    for i in 0..50 {
        std::fs::write(tree.root.join(format!("m{i:02}.txt")), "hit\nmiss\nhit\n").expect("write");
    }
    let toolbox = toolbox(&tree);
    let out = search(&toolbox, json!({"pattern": "^hit$", "max_matches": 7})).await;
    let found = paths(&out);
    assert_eq!(found.len(), 7, "{out}");
    assert_eq!(out["truncated"], true);
    let mut sorted = found.clone();
    sorted.sort();
    assert_eq!(found, sorted);
    // Exactly the number of matches: not truncated.
    let out = search(&toolbox, json!({"pattern": "^hit$", "max_matches": 100})).await;
    assert_eq!(paths(&out).len(), 100, "{out}");
    assert_eq!(out["truncated"], false, "{out}");
}

#[tokio::test]
async fn lines_and_numbers_agree_with_a_line_by_line_reading() {
    let tree = common::Tree::new();
    let text = "first\r\nsecond needle\r\n\r\nneedle\n  needle at end";
    std::fs::write(tree.root.join("crlf.txt"), text).expect("write");
    let toolbox = toolbox(&tree);
    let out = search(&toolbox, json!({"pattern": "needle$", "glob": "crlf.txt"})).await;
    let expected: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.ends_with("needle"))
        .map(|(i, _)| format!("crlf.txt:{}", i + 1))
        .collect();
    assert_eq!(paths(&out), expected, "{out}");
    assert_eq!(out["matches"][0]["line"], "second needle");
}

#[tokio::test]
async fn files_larger_than_a_chunk_keep_their_lines_and_numbers() {
    let tree = common::Tree::new();
    // Lines of every length around the 64 KiB chunk, one longer than a
    // chunk, CRLF endings, and a last line without its end.
    let mut text = String::new();
    for i in 0..20_000 {
        let filler = "x".repeat(i % 37);
        if i % 997 == 0 {
            text.push_str(&format!("{filler} needle {i}\r\n"));
        } else {
            text.push_str(&format!("{filler} line {i}\n"));
        }
    }
    text.push_str(&"y".repeat(200_000));
    text.push_str(" needle long\n");
    text.push_str("needle at the end");
    std::fs::write(tree.root.join("big.txt"), &text).expect("write");
    // A NUL far beyond the first chunk: binary, skipped whole.
    let mut binary = "needle\n".repeat(30_000).into_bytes();
    binary.push(0);
    std::fs::write(tree.root.join("late-nul.txt"), binary).expect("write");
    let policy_file = tree.top.join("big-reads.toml");
    std::fs::write(
        &policy_file,
        "[files]\nallowed = [\"root\"]\nmax_read_bytes = 4194304\n",
    )
    .expect("write");
    let policy = Policy::load(&policy_file).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let out = search(
        &toolbox,
        json!({"pattern": "needle", "max_matches": 1000, "glob": "*.txt"}),
    )
    .await;
    let expected: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("needle"))
        .map(|(i, _)| format!("big.txt:{}", i + 1))
        .collect();
    let found: Vec<String> = paths(&out)
        .into_iter()
        .filter(|p| !p.starts_with("src/"))
        .collect();
    assert_eq!(found, expected, "{}", out["matches"]);
    assert_eq!(out["matches"][0]["line"], " needle 0");
    assert_eq!(out["truncated"], false);
}

#[tokio::test]
async fn a_glob_into_a_hidden_directory_searches_beneath_it() {
    let tree = common::Tree::new();
    std::fs::create_dir_all(tree.root.join(".github/workflows")).expect("mkdir");
    std::fs::write(
        tree.root.join(".github/workflows/ci.yml"),
        "run: cargo test\n",
    )
    .expect("write");
    std::fs::write(tree.root.join(".github/CODEOWNERS"), "* @cargo-team\n").expect("write");
    std::fs::create_dir_all(tree.root.join(".hidden")).expect("mkdir");
    std::fs::write(tree.root.join(".hidden/ci.yml"), "cargo elsewhere\n").expect("write");
    let toolbox = toolbox(&tree);
    let out = search(&toolbox, json!({"pattern": "cargo", "glob": ".github/**"})).await;
    assert_eq!(
        paths(&out),
        [".github/CODEOWNERS:1", ".github/workflows/ci.yml:1"],
        "{out}"
    );
    let out = search(
        &toolbox,
        json!({"pattern": "cargo", "glob": ".github/workflows/*.yml"}),
    )
    .await;
    assert_eq!(paths(&out), [".github/workflows/ci.yml:1"], "{out}");
    // A glob without a `/` still passes over hidden directories.
    let out = search(&toolbox, json!({"pattern": "cargo", "glob": "*.yml"})).await;
    assert_eq!(paths(&out), Vec::<String>::new(), "{out}");
}
