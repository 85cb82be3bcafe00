//! The `[shell]` section of the policy file.

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, Preset, ShellPolicyConfig};

use crate::fixture::Tree;

fn parse(text: &str) -> ShellPolicyConfig {
    toml::from_str(text).expect("the section parses")
}

#[test]
fn the_spec_example_builds() {
    let tree = Tree::new();
    let config = parse(&format!(
        r#"
        preset = "read-only"
        working_directory = "{}"
        path_policy = true
        timeout_ms = 30000
        max_output_bytes = 100000
        inherited_environment = ["PATH", "LANG", "LC_ALL", "TERM", "SystemRoot"]
        [environment]
        PAGER = "cat"
        "#,
        tree.root.display()
    ));
    let policy = config.build(Some(tree.paths())).unwrap();
    assert_eq!(policy.timeout().as_millis(), 30_000);
    assert_eq!(
        policy.environment().get("PAGER").map(String::as_str),
        Some("cat")
    );
    assert!(
        policy
            .validate(&CommandRequest::line("cat notes.txt"))
            .is_ok()
    );
    assert!(
        policy
            .validate(&CommandRequest::line("cat ../outside/secret.txt"))
            .is_err()
    );
}

#[test]
fn every_field_has_a_default() {
    let config = parse("");
    assert_eq!(config, ShellPolicyConfig::default());
    assert!(config.path_policy);
}

#[test]
fn no_preset_and_no_list_is_read_only_but_a_list_alone_is_exact() {
    let tree = Tree::new();
    let dir = tree.root.display();
    let default = parse(&format!(
        "working_directory = \"{dir}\"\npath_policy = false"
    ));
    let policy = default.build(None).unwrap();
    assert!(policy.allowed_commands().iter().any(|c| c == "cat"));
    let only = parse(&format!(
        "working_directory = \"{dir}\"\npath_policy = false\nallowed_commands = [\"ls\"]"
    ));
    assert_eq!(only.build(None).unwrap().allowed_commands(), ["ls"]);
}

#[test]
fn a_path_policy_is_required_when_asked_for() {
    let tree = Tree::new();
    let config = parse(&format!("working_directory = \"{}\"", tree.root.display()));
    assert_eq!(config.build(None).unwrap_err().rule(), "config");
}

#[test]
fn a_relative_working_directory_is_refused() {
    let config = parse("working_directory = \"relative/dir\"\npath_policy = false");
    assert_eq!(config.build(None).unwrap_err().rule(), "config");
}

#[test]
fn the_development_preset_inherits_everything_and_read_only_does_not() {
    let tree = Tree::new();
    let dir = tree.root.display();
    let dev = parse(&format!(
        "preset = \"development\"\nworking_directory = \"{dir}\"\npath_policy = false"
    ));
    assert_eq!(dev.preset, Some(Preset::Development));
    assert!(dev.build(None).unwrap().inherited_environment().is_none());
    let ro = parse(&format!(
        "working_directory = \"{dir}\"\npath_policy = false"
    ));
    assert!(ro.build(None).unwrap().inherited_environment().is_some());
}

#[test]
fn rule_tables_come_from_the_file() {
    let tree = Tree::new();
    let config = parse(&format!(
        r#"
        working_directory = "{}"
        allowed_commands = ["cat"]
        [[rules]]
        name = "cat"
        refuse = [{{ option = "-v", reason = "is refused here" }}]
        "#,
        tree.root.display()
    ));
    let policy = config.build(Some(tree.paths())).unwrap();
    let err = policy
        .validate(&CommandRequest::argv(["cat", "-v"]))
        .unwrap_err();
    assert_eq!(err.rule(), "refused-option");
    assert!(err.to_string().contains("is refused here"));
}

#[test]
fn defaults_false_drops_the_default_rules() {
    let tree = Tree::new();
    let config = parse(&format!(
        "working_directory = \"{}\"\ndefaults = false",
        tree.root.display()
    ));
    let policy = config.build(Some(tree.paths())).unwrap();
    // The seed's `file -C` refusal is gone: the host asked for no defaults.
    assert!(
        policy
            .validate(&CommandRequest::argv(["file", "-C"]))
            .is_ok()
    );
    assert_eq!(policy.rules().count(), 0);
    let paths = PathPolicy::builder().allow(&tree.root).build().unwrap();
    let mut with = ShellPolicyConfig::default();
    with.working_directory = Some(tree.root.clone());
    assert!(with.build(Some(paths)).unwrap().rules().count() > 0);
}

#[test]
fn policies_and_commands_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<agentcaps_shell::ShellPolicy>();
    send_sync::<agentcaps_shell::ValidatedCommand>();
    send_sync::<agentcaps_shell::ShellError>();
}
