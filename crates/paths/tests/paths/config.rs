//! The `[files]` section as the facade deserializes it, and the policy's
//! thread-safety.

use std::path::Path;

use agentcaps_paths::{
    Access, Beneath, CaseInsensitive, PathPolicy, PathPolicyConfig, RootAccess, WindowsAliases,
};

#[test]
#[cfg_attr(
    windows,
    ignore = "a root without a drive is on the current drive on Windows (`Z:` under Wine)"
)]
fn files_section_deserializes_with_defaults() {
    let config: PathPolicyConfig = toml::from_str(
        r#"
        allowed = ["/srv/app"]
        read_only = ["/srv/docs"]
        blocked = ["/srv/app/secrets", "**/*.key"]
        windows_aliases = "always"
        case_insensitive = "never"
        "#,
    )
    .unwrap();
    assert!(config.defaults, "defaults stay on unless set to false");
    assert_eq!(config.windows_aliases, WindowsAliases::Always);
    assert_eq!(config.case_insensitive, CaseInsensitive::Never);
    let policy = config.build().unwrap();
    let roots: Vec<(&Path, RootAccess)> = policy.roots().collect();
    assert_eq!(
        roots,
        [
            (Path::new("/srv/app"), RootAccess::ReadWrite),
            (Path::new("/srv/docs"), RootAccess::ReadOnly)
        ]
    );
    assert!(policy.blocked().any(|b| b == "**/*.key"));
    assert!(
        policy.blocked().any(|b| b == "/proc"),
        "user entries extend the defaults"
    );
    assert!(policy.has_defaults());

    let empty: PathPolicyConfig = toml::from_str("").unwrap();
    assert_eq!(empty, PathPolicyConfig::default());
    assert_eq!(empty.windows_aliases, WindowsAliases::Auto);
    assert_eq!(empty.case_insensitive, CaseInsensitive::Auto);
}

#[test]
fn defaults_false_starts_from_empty_lists() {
    let config: PathPolicyConfig =
        toml::from_str("allowed = [\"/srv\"]\ndefaults = false").unwrap();
    let policy = config.build().unwrap();
    assert!(!policy.has_defaults());
    assert_eq!(policy.blocked().count(), 0);
    assert_eq!(policy.write_protected().count(), 0);
}

#[test]
fn relative_entries_are_refused_when_building() {
    for config in [
        "allowed = [\"relative\"]",
        "read_only = [\"./x\"]",
        "blocked = [\"secrets\"]",
        "blocked = [\"**/[unclosed\"]",
    ] {
        let config: PathPolicyConfig = toml::from_str(config).unwrap();
        let err = config.build().unwrap_err();
        assert_eq!(err.rule(), "invalid-policy", "{config:?}: {err}");
    }
}

#[test]
fn every_default_says_what_it_prevents() {
    for (entry, prevents) in PathPolicy::DEFAULT_BLOCKED
        .iter()
        .chain(PathPolicy::DEFAULT_WRITE_PROTECTED)
    {
        assert!(prevents.len() > 10, "{entry}: {prevents}");
    }
    let policy = PathPolicy::builder().allow("/srv").build().unwrap();
    for (entry, _) in PathPolicy::DEFAULT_WRITE_PROTECTED {
        assert!(policy.write_protected().any(|w| w == *entry));
    }
    let access = serde_json_like(Access::Write);
    assert_eq!(access, "\"write\"");
}

fn serde_json_like(access: Access) -> String {
    #[derive(serde::Serialize)]
    struct Wrapper {
        access: Access,
    }
    let text = toml::to_string(&Wrapper { access }).unwrap();
    text.trim().trim_start_matches("access = ").to_owned()
}

#[test]
fn policy_and_handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync + Clone>() {}
    fn send_sync_only<T: Send + Sync>() {}
    send_sync::<PathPolicy>();
    send_sync_only::<Beneath>();
}

#[test]
#[cfg_attr(windows, ignore = "Wine does not emulate Windows' symbolic links")]
fn a_root_spelled_through_a_link_is_canonicalized_when_built() {
    // Like macOS, where /tmp is a link to /private/tmp.
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("private/work")).unwrap();
    crate::symlink(base.join("private"), base.join("tmp")).unwrap();
    let policy = PathPolicy::builder()
        .allow(base.join("tmp/work"))
        .build()
        .unwrap();
    let roots: Vec<&Path> = policy.roots().map(|(root, _)| root).collect();
    assert_eq!(roots, [base.join("private/work").as_path()]);
    let real = base.join("private/work");
    assert!(policy.check(&real, "notes.txt", Access::Write).is_ok());
    // The spelling through the link is the same root.
    assert!(
        policy
            .check(
                &real,
                &format!("{}/notes.txt", base.join("tmp/work").display()),
                Access::Read
            )
            .is_ok()
    );
    // A root that does not exist yet keeps its spelling below the longest
    // existing prefix.
    let later = PathPolicy::builder()
        .allow(base.join("tmp/later/sub"))
        .build()
        .unwrap();
    let roots: Vec<&Path> = later.roots().map(|(root, _)| root).collect();
    assert_eq!(roots, [base.join("private/later/sub").as_path()]);
}

/// A host can show what a policy weakened: nothing for the defaults, one
/// line per loosening otherwise, whether set in code or in the policy file.
#[test]
fn loosenings_list_what_a_policy_weakened() {
    let root = std::env::temp_dir().canonicalize().unwrap();
    let strict = PathPolicy::builder().allow(&root).build().unwrap();
    assert!(strict.loosenings().is_empty(), "{:?}", strict.loosenings());

    let file: agentcaps_paths::PathPolicyConfig = toml::from_str(&format!(
        "allowed = [{:?}]\ndefaults = false\ncase_insensitive = \"never\"\n",
        root.display().to_string()
    ))
    .unwrap();
    let loose = file.build().unwrap();
    let lines = loose.loosenings();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("defaults = false"), "{lines:?}");
    assert!(
        lines[1].starts_with("case_insensitive = never"),
        "{lines:?}"
    );
    assert!(
        loose
            .check(&root, ".env", agentcaps_paths::Access::Read)
            .is_ok(),
        "without defaults .env is readable"
    );

    let in_code = agentcaps_paths::danger::without_defaults(PathPolicy::builder().allow(&root))
        .build()
        .unwrap();
    assert_eq!(in_code.loosenings().len(), 1);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "a root without a drive is on the current drive on Windows (`Z:` under Wine)"
)]
fn blocked_entry_names_what_blocks_a_location_outside_the_roots_too() {
    let policy = PathPolicy::builder()
        .allow("/srv/app")
        .block("/opt/tool/secret")
        .block("**/credentials.toml")
        .build()
        .unwrap();
    // Outside every root: judge_location refuses it as outside, while
    // blocked_entry still names the entry that blocks it.
    assert!(
        policy
            .judge_location(Path::new("/opt/tool/.env"), Access::Read)
            .is_err()
    );
    for (location, entry) in [
        ("/opt/tool/.env", Some("**/.env*")),
        ("/opt/tool/env", None),
        ("/opt/tool/.ssh", Some("**/.ssh/**")),
        ("/opt/tool/.ssh/id_ed25519", Some("**/.ssh/**")),
        (
            "/usr/local/cargo/credentials.toml",
            Some("**/credentials.toml"),
        ),
        ("/opt/tool/secret", Some("/opt/tool/secret")),
        ("/opt/tool/secret/inner", Some("/opt/tool/secret")),
        ("/opt/tool/secretive", None),
        ("/srv/app/key.pem", Some("**/*.pem")),
        // Write-protected only: not blocked for reading.
        ("/opt/tool/.npmrc", None),
        ("/opt/tool/bin/tool", None),
        ("relative/.env", None),
    ] {
        assert_eq!(
            policy.blocked_entry(Path::new(location)),
            entry,
            "{location}"
        );
    }
}

/// A blocked path blocks however its root and the entry are spelled: as
/// given, or as `std::fs::canonicalize` returns them (on Windows the
/// verbatim `\\?\C:\…` form, whose `?` must not make the entry a glob that
/// never matches).
#[test]
fn a_blocked_path_blocks_in_its_canonical_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().to_path_buf();
    let canonical = std::fs::canonicalize(&plain).unwrap();
    for root in [&plain, &canonical] {
        for spelled in [&plain, &canonical] {
            let blocked = spelled.join(".git").display().to_string();
            let policy = PathPolicy::builder()
                .allow(root)
                .block(&blocked)
                .build()
                .unwrap();
            for inside in [".git", ".git/HEAD", ".git/hooks/pre-commit"] {
                for access in [Access::Read, Access::Write] {
                    let judged = policy.check(root, inside, access);
                    assert!(
                        judged.is_err(),
                        "root {root:?}, blocked {blocked:?}: {inside} {access:?} allowed"
                    );
                }
            }
            assert!(policy.check(root, "src/main.rs", Access::Write).is_ok());
        }
    }
}

/// Policies built from the same entries in one process share their
/// compiled automata; one that folds case and one that does not must
/// still judge differently, however often and in whatever order they are
/// built.
#[test]
#[cfg_attr(
    windows,
    ignore = "Windows aliases fold case there whatever case_insensitive says"
)]
fn policies_sharing_entries_keep_their_own_case_folding() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".ENV"), "x").unwrap();
    let build = |mode| {
        PathPolicy::builder()
            .allow(dir.path())
            .block("**/*.shared-entry")
            .case_insensitive(mode)
            .build()
            .unwrap()
    };
    for _ in 0..3 {
        for mode in [CaseInsensitive::Never, CaseInsensitive::Always] {
            let policy = build(mode);
            let read = policy.check(dir.path(), ".ENV", Access::Read);
            assert_eq!(read.is_err(), mode == CaseInsensitive::Always, "{mode:?}");
            let upper = policy.check(dir.path(), "A.SHARED-ENTRY", Access::Read);
            assert_eq!(upper.is_err(), mode == CaseInsensitive::Always, "{mode:?}");
            // Writes match in every case whatever the mode.
            assert!(policy.check(dir.path(), ".ENV", Access::Write).is_err());
            assert!(
                policy
                    .check(dir.path(), "x.shared-entry", Access::Read)
                    .is_err()
            );
        }
    }
}
