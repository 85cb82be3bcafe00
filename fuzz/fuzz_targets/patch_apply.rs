//! Fuzz patch *application*: arbitrary patches applied to a small real
//! tree in a temporary directory (files, a nested source tree, protected
//! entries, a link inside and a link out, a file outside the root).
//!
//! Whatever the patch: nothing outside the root changes; the protected
//! entries (`.env`, `.git/config`, `.git/hooks/pre-commit`, `.bashrc`) and
//! the links never change; every path that changed is one the policy
//! allows writing; a refused or failed patch, and a dry run, leave the tree
//! byte-identical; no panic.
#![no_main]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use agentcaps_patch::{ApplyOptions, PatchPolicyConfig, Patcher};
use agentcaps_paths::{Access, PathPolicy};
use libfuzzer_sys::fuzz_target;

/// What is at a path: a file's bytes, a link's target, or a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Link(PathBuf),
    Dir,
}

const FILES: &[(&str, &str)] = &[
    ("a.txt", "one\ntwo\nthree\n"),
    ("b.txt", "x\nx\nx\n"),
    ("crlf.txt", "a\r\nb\r\n"),
    ("src/main.rs", "fn main() {\n    run();\n}\n"),
    ("src/lib.rs", "pub fn run() {}\n"),
    (".env", "KEY=secret\n"),
    (".bashrc", "alias ll='ls -l'\n"),
    (".git/config", "[core]\n\tbare = false\n"),
    (".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n"),
];

const LINKS: &[(&str, &str)] = &[("out", "../outside"), ("inlink", "a.txt")];

const PROTECTED: &[&str] = &[
    ".env",
    ".bashrc",
    ".git/config",
    ".git/hooks/pre-commit",
    "out",
    "inlink",
];

struct Fixture {
    root: PathBuf,
    outside: PathBuf,
    patcher: Patcher,
    lenient: Patcher,
    policy: PathPolicy,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let top = std::env::temp_dir()
            .canonicalize()
            .expect("temp dir")
            .join(format!("agentcaps-fuzz-apply-{}", std::process::id()));
        let (root, outside) = (top.join("root"), top.join("outside"));
        std::fs::create_dir_all(&root).expect("root");
        std::fs::create_dir_all(&outside).expect("outside");
        std::fs::write(outside.join("secret.txt"), "outside\n").expect("outside file");
        let policy = PathPolicy::builder().allow(&root).build().expect("policy");
        let lenient_config = PatchPolicyConfig {
            lenient: true,
            ..PatchPolicyConfig::default()
        };
        Fixture {
            patcher: Patcher::new(policy.clone(), PatchPolicyConfig::default()),
            lenient: Patcher::new(policy.clone(), lenient_config),
            policy,
            root,
            outside,
        }
    })
}

/// Put the root back to its fixed content.
fn reset(root: &Path) {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root.join("sub")).expect("root");
    for (name, content) in FILES {
        let path = root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("dir");
        }
        std::fs::write(path, content).expect("file");
    }
    for (link, target) in LINKS {
        std::os::unix::fs::symlink(target, root.join(link)).expect("link");
    }
}

/// Every entry under `dir`, by relative path, links not followed.
fn tree(dir: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let kind = if meta.file_type().is_symlink() {
                Entry::Link(std::fs::read_link(&path).unwrap_or_default())
            } else if meta.is_dir() {
                stack.push(path.clone());
                Entry::Dir
            } else {
                Entry::File(std::fs::read(&path).unwrap_or_default())
            };
            out.insert(rel, kind);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&options, text)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let fixture = fixture();
    reset(&fixture.root);
    let before = tree(&fixture.root);
    let outside_before = tree(&fixture.outside);
    let patcher = if options & 1 == 0 {
        &fixture.patcher
    } else {
        &fixture.lenient
    };
    let apply = ApplyOptions {
        dry_run: options & 2 != 0,
        strip: match (options >> 2) & 3 {
            0 => None,
            n => Some(usize::from(n - 1)),
        },
    };
    let result = patcher
        .parse(text)
        .and_then(|patch| patcher.apply(&patch, &fixture.root, apply));
    let after = tree(&fixture.root);

    assert_eq!(
        tree(&fixture.outside),
        outside_before,
        "outside the root changed\n--- patch\n{text}"
    );
    if result.is_err() || apply.dry_run {
        assert_eq!(
            after, before,
            "refused, failed or dry run ({result:?}), but the tree changed\n--- patch\n{text}"
        );
        return;
    }
    for name in PROTECTED {
        assert_eq!(
            after.get(*name),
            before.get(*name),
            "protected entry {name} changed\n--- patch\n{text}"
        );
    }
    let changed = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k));
    for rel in changed {
        assert!(
            !matches!(after.get(rel), Some(Entry::Link(_))),
            "a link appeared or changed at {rel}\n--- patch\n{text}"
        );
        // Directories left behind or created on the way hold what changed.
        if matches!(
            (before.get(rel), after.get(rel)),
            (Some(Entry::Dir), None) | (None, Some(Entry::Dir))
        ) {
            continue;
        }
        assert!(
            fixture
                .policy
                .check(&fixture.root, rel, Access::Write)
                .is_ok(),
            "{rel} changed but the policy refuses writing it\n--- patch\n{text}"
        );
    }
});
