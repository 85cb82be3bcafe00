//! A link whose name is a directory on the way to a write-protected entry
//! makes files written elsewhere readable at protected names: refused,
//! in every case; other names are not.

use agentcaps_paths::PathPolicy;

fn policy() -> PathPolicy {
    PathPolicy::builder()
        .allow(std::path::Path::new("/r"))
        .build()
        .expect("policy")
}

#[test]
fn a_link_named_as_a_directory_on_the_way_to_a_protected_entry_is_refused() {
    let policy = policy();
    for name in [
        ".cargo",
        ".github",
        ".github/workflows",
        ".GitHub",
        ".git",
        ".git/hooks",
        "sub/.git",
        "deep/er/.CARGO",
        ".config/systemd",
        ".config",
        ".husky",
    ] {
        let location = std::path::Path::new("/r").join(name);
        let error = policy.judge_link_location(&location).expect_err(name);
        assert_eq!(error.rule(), "write-protected", "{name}: {error}");
        assert!(error.to_string().contains("on the way to"), "{error}");
    }
}

#[test]
fn a_link_with_any_other_name_is_not_refused_for_its_name() {
    let policy = policy();
    for name in [
        "cfg",
        "node_modules/pkg",
        ".venv/bin/python3",
        ".cargo-home",
        "github",
        ".github/ISSUE_TEMPLATE",
        ".gitmodules-old",
        "sub/.githooks",
    ] {
        let location = std::path::Path::new("/r").join(name);
        assert!(
            policy.judge_link_location(&location).is_ok(),
            "{name} was refused"
        );
    }
    assert_eq!(
        policy
            .judge_link_location(std::path::Path::new("relative"))
            .map_err(|e| e.rule().to_owned()),
        Err("relative-base".to_owned())
    );
}
