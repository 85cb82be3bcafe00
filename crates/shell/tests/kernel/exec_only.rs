//! The execute-only wall on its own (Landlock, no view): a program asked to
//! run nothing but itself cannot execute another file, its `#!`
//! interpreter still starts it, and the reuse of domains across commands
//! neither carries the wall over to a command that may start programs nor
//! drops it from one that may not.

use std::path::Path;

use agentcaps_shell::kernel::{Enforcement, KernelRules, spawn_confined};

use crate::support::Tree;

/// Runs `program` with `args` under `rules` (for `program`, execute-only
/// or not); its exit code, standard output and standard error.
async fn run(
    rules: &KernelRules,
    program: &Path,
    args: &[&str],
    exec_only: bool,
) -> (Option<i32>, String, String) {
    let rules = rules
        .clone()
        .with_program(program)
        .with_exec_only_program(exec_only);
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let (child, enforced) = spawn_confined(&mut cmd, &rules).expect("spawned");
    assert_eq!(enforced, Enforcement::Full);
    let output = child.wait_with_output().await.expect("waited");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_program_held_to_itself_cannot_execute_another_and_one_that_is_not_can() {
    crate::assert_landlock_here();
    let tree = Tree::new();
    let rules = tree.rules();
    let sh = Path::new("/bin/sh");
    let script = ["-c", "/bin/true; echo $?"];
    let (code, out, err) = run(&rules, sh, &script, true).await;
    assert_eq!((code, out.as_str()), (Some(0), "126\n"), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    // The same shell under the same rules without the wall runs it.
    let (_, out, err) = run(&rules, sh, &script, false).await;
    assert_eq!(out, "0\n", "{err}");
    // And once more with it: the domain reused for these rules still holds
    // the wall (the key tells the two apart).
    let (_, out, _) = run(&rules, sh, &script, true).await;
    assert_eq!(out, "126\n");
}

#[tokio::test]
async fn a_script_runs_through_its_interpreter_but_starts_nothing() {
    crate::assert_landlock_here();
    let tree = Tree::new();
    let script = tree.write.join("tool.sh");
    std::fs::write(&script, "#!/bin/sh\necho started\n/bin/true\necho $?\n").expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let (code, out, err) = run(&tree.rules(), &script, &[], true).await;
    assert_eq!((code, out.as_str()), (Some(0), "started\n126\n"), "{err}");
    let (_, out, err) = run(&tree.rules(), &script, &[], false).await;
    assert_eq!(out, "started\n0\n", "{err}");
}

#[tokio::test]
async fn another_program_is_not_executable_even_when_the_domain_grants_its_directory() {
    // The writable root grants execution beneath it to the first domain;
    // the wall, nested, still refuses the copy of `true` kept there.
    crate::assert_landlock_here();
    let tree = Tree::new();
    std::fs::copy("/bin/true", tree.write.join("true")).expect("copy");
    let target = tree.write.join("true").display().to_string();
    let line = format!("{target}; echo $?");
    let (_, out, _) = run(&tree.rules(), Path::new("/bin/sh"), &["-c", &line], true).await;
    assert_eq!(out, "126\n");
    let (_, out, _) = run(&tree.rules(), Path::new("/bin/sh"), &["-c", &line], false).await;
    assert_eq!(out, "0\n");
}
