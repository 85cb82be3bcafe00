//! Secrets are absent in the view, whatever the command does.

use agentcaps_shell::Exit;

use crate::support::Project;

#[test]
fn an_interpreter_finds_no_secret_anywhere_in_the_root() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "cat .env; cat config/.env.local; ls -a secrets; cat secrets/key.txt; grep -r SECRET= . ; echo done",
    );
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert!(!result.stdout.contains("hunter2"), "{}", result.stdout);
    for secret in ["local-secret", "in-a-blocked-dir"] {
        assert!(!result.stdout.contains(secret), "{}", result.stdout);
    }
    // What grep did find is the script itself (which names the pattern).
    assert!(
        result
            .stdout
            .lines()
            .filter(|l| l.contains("SECRET="))
            .all(|l| l.starts_with("./run.sh:")),
        "{}",
        result.stdout
    );
    assert!(result.stdout.contains("done"));
    assert!(
        result.stderr.contains(".env: No such file or directory"),
        "{}",
        result.stderr
    );
    assert_eq!(
        result.enforced.to_string(),
        "full",
        "{:?}",
        result.enforced_reason
    );
}
