//! Fuzz target for agentcaps-paths judgement.
//!
//! Arbitrary spellings, on simulated trees (POSIX, case-insensitive,
//! Windows) full of links in and out, loops, chains and `/proc` magic
//! links, under policies with Windows aliases off and on. Invariants:
//! - nothing panics (`check_on`, `locate`, `cost_upper_bound`,
//!   `check_portable_name`);
//! - the lookups a check makes never exceed `cost_upper_bound`, and a
//!   check reports exactly the lookups the file system saw;
//! - an allowed spelling's every location is inside the allowed root, and
//!   outside `/proc` and the blocked test directory;
//! - judging is stable: the same spelling gets the same decision again.
#![no_main]

use std::path::Path;
use std::sync::LazyLock;

use agentcaps_paths::{
    Access, CaseInsensitive, PathPolicy, SimFs, SimMode, WindowsAliases, check_portable_name,
};
use libfuzzer_sys::fuzz_target;

fn tree(mode: SimMode) -> SimFs {
    let mut fs = SimFs::with_mode(mode);
    fs.add_dir("/r/sub/deep")
        .add_dir("/r/secret")
        .add_dir("/etc")
        .add_dir("/proc/1")
        .add_file("/r/a.txt")
        .add_file("/r/.env")
        .add_file("/r/.git/config")
        .add_file("/etc/passwd")
        .add_symlink("/r/out", "/etc")
        .add_symlink("/r/up", "..")
        .add_symlink("/r/deeplink", "sub/deep")
        .add_symlink("/r/sub/back", "../..")
        .add_symlink("/r/loop", "loop")
        .add_symlink("/r/wout", r"..\etc")
        .add_symlink("/r/proc", "/proc/self/root")
        .add_symlink("/proc/self", "1")
        .add_symlink("/proc/1/root", "/")
        .add_symlink("/r/dangling", "../outside/new");
    for i in 0..45 {
        fs.add_symlink(format!("/r/c{i}"), format!("c{}", i + 1));
    }
    fs
}

struct World {
    trees: Vec<SimFs>,
    policies: Vec<PathPolicy>,
}

static WORLD: LazyLock<World> = LazyLock::new(|| World {
    trees: vec![
        tree(SimMode::Posix),
        tree(SimMode::CaseInsensitive),
        tree(SimMode::Windows),
    ],
    policies: [WindowsAliases::Auto, WindowsAliases::Always]
        .into_iter()
        .flat_map(|aliases| {
            [CaseInsensitive::Never, CaseInsensitive::Always]
                .into_iter()
                .map(move |case| {
                    PathPolicy::builder()
                        .allow("/r")
                        .block("/r/secret")
                        .windows_aliases(aliases)
                        .case_insensitive(case)
                        .build()
                        .expect("the fuzz policy builds")
                })
        })
        .collect(),
});

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(spelling) = std::str::from_utf8(rest) else {
        return;
    };
    let world = &*WORLD;
    let fs = &world.trees[usize::from(selector) % world.trees.len()];
    let policy = &world.policies[usize::from(selector / 3) % world.policies.len()];
    let access = [Access::Read, Access::Write, Access::List][usize::from(selector / 12) % 3];
    let base = if selector & 0x80 == 0 {
        "/r"
    } else {
        "/r/sub/deep"
    };

    let _ = check_portable_name(spelling);
    let bound = policy.cost_upper_bound(spelling);
    fs.reset_lookups();
    let first = policy.check_on(fs, Path::new(base), spelling, access);
    let made = fs.lookups();
    assert!(
        made <= bound,
        "{spelling:?}: {made} lookups > bound {bound}"
    );
    if let Ok(checked) = &first {
        assert_eq!(checked.lookups(), made, "{spelling:?}: reported lookups");
        let folds = policy.case_insensitive().applies();
        for location in [checked.lexical(), checked.location(), checked.windows()] {
            let text = location.to_string_lossy();
            let text = if folds {
                text.to_lowercase()
            } else {
                text.into_owned()
            };
            let location = Path::new(&text);
            assert!(
                location.starts_with("/r"),
                "{spelling:?}: allowed at {location:?}"
            );
            assert!(
                !location.starts_with("/r/secret"),
                "{spelling:?}: blocked {location:?}"
            );
            assert!(!location.starts_with("/proc"), "{spelling:?}: {location:?}");
        }
    }
    let second = policy.check_on(fs, Path::new(base), spelling, access);
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{spelling:?}: unstable"),
        (Err(a), Err(b)) => assert_eq!(a.rule(), b.rule(), "{spelling:?}: unstable"),
        _ => panic!("{spelling:?}: unstable decision"),
    }
    let _ = policy.locate(fs, Path::new(base), spelling);
});
