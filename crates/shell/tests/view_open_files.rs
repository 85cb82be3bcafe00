//! A command's many files commit under the usual soft limit of open files
//! (1024): the commit holds one descriptor per directory, not per file.
//! Its own test binary, since the limit is the whole process's.
#![cfg(all(target_os = "linux", feature = "landlock"))]

#[path = "view/support.rs"]
#[allow(
    dead_code,
    reason = "the view suite's support; this binary uses a part"
)]
mod support;

use support::Project;

#[test]
fn thirty_two_thousand_files_commit_with_the_soft_limit_of_open_files_at_1024() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = Some(1024);
    setrlimit(Resource::Nofile, limit).expect("lower the soft limit");
    let project = Project::new();
    let policy = project
        .policy()
        .timeout(std::time::Duration::from_secs(300))
        .build()
        .expect("policy");
    let result = project.sh(
        &policy,
        "/usr/bin/python3 -c \"import os\nfor i in range(32):\n os.makedirs(f'out/d{i}')\n for j in range(1000): open(f'out/d{i}/f{j}', 'w').close()\"; \
         echo changed >> README.md",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{:?}", changes.refused.first());
    assert_eq!(changes.applied.len(), 1 + 32 + 32_000 + 1);
    assert_eq!(
        std::fs::read_dir(project.root.join("out/d31"))
            .expect("d31")
            .count(),
        1000
    );
    assert_eq!(
        project.read("README.md").as_deref(),
        Some("hello\nchanged\n")
    );
}
