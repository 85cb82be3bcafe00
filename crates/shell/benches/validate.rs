//! Validation cost against the cost of spawning `/bin/true` (the baseline,
//! measured in the same run), and the over-budget refusal.
//!
//! `cargo bench -p agentcaps-shell --bench validate -- --warm-up-time 1 --measurement-time 3`
#![allow(missing_docs)]

use std::hint::black_box;
use std::process::{Command, Stdio};

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, ShellPolicy};
use criterion::{Criterion, criterion_group, criterion_main};

/// Typical commands an agent runs, on a real tree (warm caches).
const TYPICAL: &[&str] = &[
    "cat notes.txt",
    "ls -la sub",
    "grep -rn 'fn main' src",
    "head -n 20 notes.txt",
    "wc -l notes.txt sub/a.txt",
    "file -b notes.txt",
    "sort -t, -k2 notes.txt",
    "date +%Y-%m-%d",
    "find src -name '*.rs'",
    "tail -c 4096 src/main.rs",
];

/// Commands of programs read with an allow-list grammar.
const GRAMMAR: &[&str] = &[
    "awk -F: '{print $1}' notes.txt",
    "sed -n '1,5p' notes.txt",
    "git log --oneline -5",
    "tar -tf x.tar",
    "cp notes.txt sub/",
    "find . -name '*.rs' -type f",
    "grep -rn --include=*.rs -e main src",
    "make -j4 test",
    "du -sh .",
    "mkdir -p a/b",
    "touch -d '2020-01-01 10:00' notes.txt",
    "rm -rf build",
    "bash -eu notes.txt",
];

/// Commands whose scripts, patterns and option values are read by the
/// programs' own grammars: sed labels, awk regexes after `print`, patterns
/// as text, curl's files, git object names.
const READ_INSIDE: &[&str] = &[
    "sed -n ':a;/foo/p;ta' notes.txt",
    "awk '/x/ { print $1 / 2, /#/ }' notes.txt",
    "grep -rn /api/v1 src",
    "curl -sS -o /dev/null -d @notes.txt http://127.0.0.1:9/",
    "git show HEAD:src/main.rs",
    "find . -perm /u+x -name '*.rs'",
];

/// git commands: each subcommand reads its options with its own grammar
/// (log's lists over 200 options), and what clone writes is judged.
const GIT: &[&str] = &[
    "git log --graph --all --decorate --oneline -20",
    "git diff --stat HEAD~1 -- src",
    "git status -s",
    "git commit -am msg",
    "git clone --depth 1 sub copy",
    "git rev-parse --show-toplevel",
];

fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    for f in ["notes.txt", "sub/a.txt", "src/main.rs"] {
        std::fs::write(root.join(f), "fn main() {}\n").expect("write");
    }
    (dir, root)
}

fn benches(c: &mut Criterion) {
    let (_dir, root) = tree();
    let policy = ShellPolicy::read_only(&root)
        .allow_command("grep")
        .allow_command("sort")
        .allow_command("find")
        .allow_command("awk")
        .allow_command("sed")
        .allow_command("git")
        .allow_command("tar")
        .allow_command("cp")
        .allow_command("make")
        .allow_command("du")
        .allow_command("mkdir")
        .allow_command("touch")
        .allow_command("rm")
        .allow_command("bash")
        .allow_command("curl")
        .path_policy(PathPolicy::builder().allow(&root).build().expect("paths"))
        .build()
        .expect("policy");
    let requests: Vec<CommandRequest> = TYPICAL.iter().map(|l| CommandRequest::line(*l)).collect();
    for req in &requests {
        policy.validate(req).expect("typical commands are allowed");
    }
    let grammar: Vec<CommandRequest> = GRAMMAR.iter().map(|l| CommandRequest::line(*l)).collect();
    for req in &grammar {
        policy.validate(req).expect("grammar commands are allowed");
    }

    let mut group = c.benchmark_group("shell");
    group.bench_function("baseline_spawn_bin_true", |b| {
        b.iter(|| {
            let status = Command::new("/bin/true")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("spawn");
            black_box(status)
        });
    });
    group.bench_function("validate_typical_command_avg_of_10", |b| {
        b.iter(|| {
            for req in &requests {
                black_box(policy.validate(black_box(req)).ok());
            }
        });
    });
    group.bench_function("validate_grammar_command_avg_of_13", |b| {
        b.iter(|| {
            for req in &grammar {
                black_box(policy.validate(black_box(req)).ok());
            }
        });
    });
    let git: Vec<CommandRequest> = GIT.iter().map(|l| CommandRequest::line(*l)).collect();
    for req in &git {
        policy.validate(req).expect("git commands are allowed");
    }
    group.bench_function("validate_git_command_avg_of_6", |b| {
        b.iter(|| {
            for req in &git {
                black_box(policy.validate(black_box(req)).ok());
            }
        });
    });
    let inside: Vec<CommandRequest> = READ_INSIDE
        .iter()
        .map(|l| CommandRequest::line(*l))
        .collect();
    for req in &inside {
        policy
            .validate(req)
            .expect("commands read inside are allowed");
    }
    group.bench_function("validate_read_inside_command_avg_of_6", |b| {
        b.iter(|| {
            for req in &inside {
                black_box(policy.validate(black_box(req)).ok());
            }
        });
    });
    for (line, req) in TYPICAL
        .iter()
        .zip(&requests)
        .chain(GRAMMAR.iter().zip(&grammar))
        .chain(GIT.iter().zip(&git))
        .chain(READ_INSIDE.iter().zip(&inside))
    {
        group.bench_function(format!("validate `{line}`"), |b| {
            b.iter(|| black_box(policy.validate(black_box(req)).ok()));
        });
    }

    // Thousands of distinct long flags: refused before any lookup.
    let mut flags = vec!["cat".to_owned()];
    flags.extend((0..30_000).map(|i| format!("--flag-{i}=value/{i}")));
    let over = CommandRequest::argv(flags);
    assert_eq!(
        policy.validate(&over).err().map(|e| e.rule()),
        Some("too-costly")
    );
    group.bench_function("refuse_over_budget_30000_long_flags", |b| {
        b.iter(|| black_box(policy.validate(black_box(&over)).err()));
    });
    // The smallest refusal: 20 001 one-lookup names.
    let mut names = vec!["cat".to_owned()];
    names.extend((0..20_001).map(|i| format!("f{i}")));
    let just_over = CommandRequest::argv(names);
    assert_eq!(
        policy.validate(&just_over).err().map(|e| e.rule()),
        Some("too-costly")
    );
    group.bench_function("refuse_over_budget_20001_names", |b| {
        b.iter(|| black_box(policy.validate(black_box(&just_over)).err()));
    });
    // A long cluster: 6 × 4096 tails.
    let mut clusters = vec!["cat".to_owned()];
    clusters.extend((b'a'..=b'f').map(|c| format!("-{}", (c as char).to_string().repeat(4095))));
    let cluster_req = CommandRequest::argv(clusters);
    group.bench_function("refuse_over_budget_6_clusters_of_4096", |b| {
        b.iter(|| black_box(policy.validate(black_box(&cluster_req)).err()));
    });
    group.finish();
}

criterion_group!(shell, benches);
criterion_main!(shell);
