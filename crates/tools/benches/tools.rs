//! What a tool call costs over doing the same thing with no checks at all,
//! measured in the same run: `read_file` through the `Toolbox` (argument
//! parsing, the path judged in every reading, the open beneath the root's
//! handle, the typed result as JSON) against `std::fs::read_to_string` on
//! the same file; the judged read alone (`Beneath::read`), to show where
//! the time goes; a refusal (a path leading outside); and `write_file` in
//! a project of many directories against `std::fs::write`.

#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn tools(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let top = std::fs::canonicalize(tmp.path()).expect("canonical");
    let root = top.join("root");
    std::fs::create_dir_all(root.join("src/nested")).expect("mkdir");
    let text: String = (0..200)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(root.join("src/nested/file.txt"), &text).expect("write");
    // The refusal measured goes through a link leading outside (on Windows
    // a directory link, which needs the privilege to make links).
    #[cfg(unix)]
    std::os::unix::fs::symlink(&top, root.join("escape")).expect("symlink");
    #[cfg(windows)]
    std::os::windows::fs::symlink_dir(&top, root.join("escape")).expect("symlink");
    let policy = Policy::from_toml("[files]\nallowed = [\"root\"]\n", &top).expect("policy");
    let toolbox = Toolbox::new(&policy, &root).expect("toolbox");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let mut group = c.benchmark_group("read_file");
    let file = root.join("src/nested/file.txt");
    group.bench_function("baseline std::fs::read_to_string", |b| {
        b.iter(|| black_box(std::fs::read_to_string(black_box(&file)).expect("read")))
    });
    let beneath = policy
        .path_policy()
        .expect("paths")
        .open_beneath()
        .expect("beneath");
    group.bench_function("paths Beneath::read (the judged open alone)", |b| {
        b.iter(|| {
            black_box(
                beneath
                    .read(&root, black_box("src/nested/file.txt"), 1 << 20)
                    .expect("read"),
            )
        })
    });
    group.bench_function("toolbox read_file (allowed)", |b| {
        b.iter(|| {
            let out = rt
                .block_on(toolbox.call("read_file", json!({"path": "src/nested/file.txt"})))
                .expect("allowed");
            black_box(out)
        })
    });
    group.bench_function("toolbox read_file (refused, link outside)", |b| {
        b.iter(|| {
            let err = rt
                .block_on(toolbox.call("read_file", json!({"path": "escape/root/x"})))
                .expect_err("refused");
            black_box(err)
        })
    });
    group.finish();

    // A write is also judged at the names links at guarded names give it
    // (`.cargo -> cfg`), found by one walk of the project that the toolbox
    // keeps until it runs a command: measured in a project of
    // `WRITE_DIRS` directories (default 2000, ten files each) against
    // `std::fs::write` of the same bytes.
    let dirs: usize = std::env::var("WRITE_DIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for d in 0..dirs {
        let dir = root.join(format!("pkg{}/mod{d}", d % 50));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..10 {
            std::fs::write(dir.join(format!("f{f}.rs")), "x").expect("write");
        }
    }
    let mut group = c.benchmark_group(format!("write_file in {dirs} directories"));
    let target = root.join("src/out.txt");
    group.bench_function("baseline std::fs::write", |b| {
        b.iter(|| std::fs::write(black_box(&target), text.as_bytes()).expect("write"))
    });
    // The walk itself, made at a toolbox's first write and after each
    // command it runs.
    let paths = policy.path_policy().expect("paths");
    group.bench_function("the walk for guarded links alone", |b| {
        b.iter(|| black_box(paths.guarded_links()))
    });
    group.bench_function("toolbox write_file (overwrite)", |b| {
        b.iter(|| {
            let out = rt
                .block_on(toolbox.call(
                    "write_file",
                    json!({"path": "src/out.txt", "content": text, "overwrite": true}),
                ))
                .expect("allowed");
            black_box(out)
        })
    });
    group.finish();
}

criterion_group!(benches, tools);
criterion_main!(benches);
