//! Exact lookup counts on the simulated file system, and the
//! bound computed before any lookup.

use std::path::Path;

use agentcaps_paths::{Access, Budget, PathError, PathPolicy, SimFs};

fn tree() -> SimFs {
    let mut fs = SimFs::new();
    fs.add_dir("/r/a/b/c")
        .add_dir("/r/sub/deep")
        .add_file("/r/a.txt")
        .add_symlink("/r/lnk", "a.txt")
        .add_symlink("/r/lnk_dir", "sub/deep")
        .add_symlink("/r/self", "self");
    fs
}

fn policy() -> PathPolicy {
    PathPolicy::builder().allow("/r").build().unwrap()
}

/// Check `spelling` from `/r` and return the lookups the file system saw,
/// asserting the check reported the same number and stayed under the bound.
fn lookups(fs: &SimFs, spelling: &str) -> u64 {
    let policy = policy();
    fs.reset_lookups();
    let result = policy.check_on(fs, Path::new("/r"), spelling, Access::Read);
    let made = fs.lookups();
    if let Ok(checked) = &result {
        assert_eq!(checked.lookups(), made, "{spelling}: reported lookups");
    }
    assert!(
        made <= policy.cost_upper_bound(spelling),
        "{spelling}: {made} lookups over the bound"
    );
    made
}

#[test]
fn missing_plain_name_costs_exactly_one_lookup() {
    let fs = tree();
    assert_eq!(lookups(&fs, "nothing-here"), 1);
    assert_eq!(policy().spelled_cost("nothing-here"), 1);
}

#[test]
fn existing_plain_file_or_directory_is_resolved_in_full_in_one_lookup() {
    // Full resolution of a component is lstat, plus readlink only when it
    // is a link: a file or directory needs the one lstat.
    let fs = tree();
    assert_eq!(lookups(&fs, "a.txt"), 1);
    assert_eq!(lookups(&fs, "a"), 1);
}

#[test]
fn existing_plain_link_is_resolved_in_full() {
    // lstat lnk, readlink lnk, lstat a.txt.
    let fs = tree();
    assert_eq!(lookups(&fs, "lnk"), 3);
}

#[test]
fn nested_path_costs_at_most_two_lookups_per_component() {
    let fs = tree();
    let policy = policy();
    assert_eq!(policy.spelled_cost("a/b/c"), 6);
    // No links: one lstat per component.
    assert_eq!(lookups(&fs, "a/b/c"), 3);
    // Beneath a missing name the rest is lexical: no lookup.
    assert_eq!(lookups(&fs, "a/missing/c/d/e"), 2);
    assert_eq!(lookups(&fs, "a/b/missing"), 3);
}

#[test]
fn dot_dot_is_free_and_the_windows_reading_reuses_lookups() {
    let fs = tree();
    // POSIX: lstat a, lstat a.txt; Windows: /r/a.txt again, from the memo.
    assert_eq!(lookups(&fs, "a/../a.txt"), 2);
    // POSIX: probe lnk_dir (a link: its target comes with it), probe sub,
    // probe deep, lstat sub/x; Windows: lstat /r/x.
    assert_eq!(lookups(&fs, "lnk_dir/../x"), 5);
}

#[test]
fn a_link_met_before_the_last_name_costs_one_lookup() {
    // A name with more to resolve after it is probed with one readlink,
    // which tells "missing", "a link, to here" or "something else" at once:
    // probe lnk_dir, probe sub, probe deep, lstat f.
    let fs = tree();
    assert_eq!(lookups(&fs, "lnk_dir/f"), 4);
    assert!(4 <= policy().spelled_cost("lnk_dir/f"));
}

#[test]
fn a_loop_is_refused_before_the_link_is_read_twice() {
    let fs = tree();
    // lstat self, readlink self; then the same link with the same rest to
    // resolve (its lstat is remembered within the check): refused.
    assert_eq!(lookups(&fs, "self"), 2);
}

#[test]
fn cost_upper_bound_touches_nothing() {
    let fs = tree();
    let policy = policy();
    fs.reset_lookups();
    let spellings: Vec<String> = (0..10_000).map(|i| format!("--flag-{i}/x/../y")).collect();
    let total: u64 = spellings.iter().map(|s| policy.cost_upper_bound(s)).sum();
    assert!(total > 20_000);
    assert_eq!(fs.lookups(), 0);
}

#[test]
fn a_shared_budget_is_never_exceeded() {
    let fs = tree();
    let policy = policy();
    fs.reset_lookups();
    let mut budget = Budget::new(2);
    let result = policy.check_within(&fs, Path::new("/r"), "a/b/c", Access::Read, &mut budget);
    assert!(
        matches!(result, Err(PathError::TooCostly { budget: 2, .. })),
        "{result:?}"
    );
    assert_eq!(fs.lookups(), 2);
    assert_eq!(budget.remaining(), 0);
}

#[test]
fn a_budget_shared_by_a_batch_pays_for_each_check() {
    let fs = tree();
    let policy = policy();
    let mut budget = Budget::new(100);
    for spelling in ["a.txt", "a/b/c", "missing"] {
        policy
            .check_within(&fs, Path::new("/r"), spelling, Access::Read, &mut budget)
            .unwrap();
    }
    assert_eq!(budget.spent(), 1 + 3 + 1);
}

#[test]
fn plain_components_are_what_seed_says() {
    let policy = policy();
    for plain in ["notes.txt", "--flag", "-iflout", "a b", "über"] {
        assert!(policy.is_plain_component(plain), "{plain}");
    }
    for not_plain in [
        "", ".", "..", "a/b", r"a\b", "a:b", "a.", "a ", "a*", "a?", "a\"", "a<", "a>", "a|",
        "a\u{1}", "CON", "nul.txt", "COM¹", "lpt9",
    ] {
        assert!(!policy.is_plain_component(not_plain), "{not_plain:?}");
    }
}

mod arbitrary {
    //! The fuzz target's invariants (`fuzz/fuzz_targets/paths_check.rs`),
    //! run on generated spellings in every test run.

    use std::path::Path;

    use agentcaps_paths::{
        Access, CaseInsensitive, PathPolicy, SimFs, SimMode, WindowsAliases, check_portable_name,
    };
    use proptest::prelude::*;

    fn tree(mode: SimMode) -> SimFs {
        let mut fs = SimFs::with_mode(mode);
        fs.add_dir("/r/sub/deep")
            .add_dir("/r/secret")
            .add_dir("/etc")
            .add_file("/r/a.txt")
            .add_symlink("/r/out", "/etc")
            .add_symlink("/r/up", "..")
            .add_symlink("/r/d", "sub/deep")
            .add_symlink("/r/sub/b", "../..")
            .add_symlink("/r/loop", "loop")
            .add_symlink("/r/w", r"..\etc");
        for i in 0..45 {
            fs.add_symlink(format!("/r/c{i}"), format!("c{}", i + 1));
        }
        fs
    }

    struct World {
        trees: Vec<SimFs>,
        policies: Vec<(PathPolicy, bool)>,
    }

    static WORLD: std::sync::LazyLock<World> = std::sync::LazyLock::new(|| World {
        trees: [SimMode::Posix, SimMode::CaseInsensitive, SimMode::Windows]
            .into_iter()
            .map(tree)
            .collect(),
        policies: [
            (WindowsAliases::Auto, false),
            (WindowsAliases::Auto, true),
            (WindowsAliases::Always, false),
            (WindowsAliases::Always, true),
        ]
        .into_iter()
        .map(|(aliases, fold)| {
            let policy = PathPolicy::builder()
                .allow("/r")
                .block("/r/secret")
                .windows_aliases(aliases)
                .case_insensitive(if fold {
                    CaseInsensitive::Always
                } else {
                    CaseInsensitive::Never
                })
                .build()
                .unwrap();
            (policy, fold)
        })
        .collect(),
    });

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1_000, failure_persistence: None, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_spellings_stay_within_the_bound_and_inside(
            spelling in r"(/|\\|\.\.|\.|r|sub|deep|out|up|d|b|loop|w|c1|c0|secret|a\.txt|CON|GIT~1|:|\$DATA| |\x00|¹|~1|C:|[A-Z]){0,12}",
            mode in 0..3usize,
            which in 0..4usize,
            access in 0..3usize,
        ) {
            let world = &*WORLD;
            let fs = &world.trees[mode];
            let (policy, fold) = (&world.policies[which].0, world.policies[which].1);
            fs.reset_lookups();
            let access = [Access::Read, Access::Write, Access::List][access];
            let _ = check_portable_name(&spelling);
            let bound = policy.cost_upper_bound(&spelling);
            let first = policy.check_on(fs, Path::new("/r"), &spelling, access);
            prop_assert!(fs.lookups() <= bound, "{:?}: {} > {}", spelling, fs.lookups(), bound);
            if let Ok(checked) = &first {
                prop_assert_eq!(checked.lookups(), fs.lookups());
                for location in [checked.lexical(), checked.location(), checked.windows()] {
                    let text = location.to_string_lossy();
                    let text = if fold { text.to_lowercase() } else { text.into_owned() };
                    prop_assert!(Path::new(&text).starts_with("/r"), "{:?} allowed at {:?}", spelling, location);
                    prop_assert!(!Path::new(&text).starts_with("/r/secret"), "{:?} allowed at {:?}", spelling, location);
                }
            }
            let second = policy.check_on(fs, Path::new("/r"), &spelling, access);
            prop_assert_eq!(first.is_ok(), second.is_ok());
            if let (Err(a), Err(b)) = (&first, &second) {
                prop_assert_eq!(a.rule(), b.rule());
            }
        }
    }
}

/// The seed assumes no limit on the length of a name: a plain name longer
/// than any file system stores (`ENAMETOOLONG` from the kernel) is missing,
/// costs its one lookup, and is judged by its spelling — not an I/O error.
#[test]
#[cfg_attr(windows, ignore = "Wine does not emulate Windows' symbolic links")]
fn a_name_longer_than_name_max_is_judged_as_missing_on_the_real_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let policy = PathPolicy::builder().allow(&root).build().unwrap();
    let long = "a".repeat(300);
    let checked = policy.check(&root, &long, Access::Write).unwrap();
    assert_eq!(checked.location(), root.join(&long));
    assert_eq!(checked.kind(), None);
    assert_eq!(checked.lookups(), 1);
    // Still judged: a long blocked name is refused by its spelling.
    let blocked = format!(".env{long}");
    assert!(matches!(
        policy.check(&root, &blocked, Access::Read),
        Err(PathError::Blocked { .. })
    ));
    // And beneath a link out, the link is still followed first.
    crate::symlink("/etc", root.join("out")).unwrap();
    assert!(matches!(
        policy.check(&root, &format!("out/{long}"), Access::Write),
        Err(PathError::OutsideRoots { .. })
    ));
}
