//! The commit lands exactly what the command did: through no link it
//! replaced, with nothing it deleted left behind, with no change it did not
//! make, and over no edit made meanwhile by someone else.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::support::{Project, applied, refused_rule};

#[test]
fn a_directory_made_in_place_of_a_link_takes_the_files_and_the_links_target_is_untouched() {
    let project = Project::new();
    project.write("y/f", "old\n");
    std::os::unix::fs::symlink("y", project.root.join("x")).expect("x -> y");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "rm x; mkdir x; echo new > x/f; mkdir x/sub; echo deep > x/sub/g",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    let x = std::fs::symlink_metadata(project.root.join("x")).expect("x");
    assert!(x.is_dir(), "x is a directory now: {changes:#?}");
    assert_eq!(project.read("x/f").as_deref(), Some("new\n"));
    assert_eq!(project.read("x/sub/g").as_deref(), Some("deep\n"));
    assert_eq!(
        project.read("y/f").as_deref(),
        Some("old\n"),
        "the link's target is untouched"
    );
    assert!(!project.root.join("y/sub").exists());
    assert!(applied(&result, "x/f"), "{changes:#?}");
}

#[test]
fn everything_beneath_a_removed_directory_is_deleted_at_every_depth() {
    let project = Project::new();
    for (rel, text) in [
        ("d/top.txt", "top\n"),
        ("d/sub/old.txt", "old\n"),
        ("d/sub/deeper/older.txt", "older\n"),
        ("d/sub/deeper/deepest/oldest.txt", "oldest\n"),
    ] {
        project.write(rel, text);
    }
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "rm -rf d; mkdir -p d/sub/deeper; echo new > d/sub/new; ls -R d",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    assert_eq!(project.read("d/sub/new").as_deref(), Some("new\n"));
    for gone in [
        "d/top.txt",
        "d/sub/old.txt",
        "d/sub/deeper/older.txt",
        "d/sub/deeper/deepest",
    ] {
        assert!(
            std::fs::symlink_metadata(project.root.join(gone)).is_err(),
            "{gone} came back: {changes:#?}"
        );
    }
    // The real tree is what the command's view showed at its end.
    assert!(result.stdout.contains("new"), "{result:?}");
    assert!(!result.stdout.contains("old"), "{result:?}");
}

#[test]
fn a_file_only_opened_for_writing_touched_or_rewritten_with_its_own_bytes_is_no_change() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "exec 3<>README.md; exec 3>&-; touch src/main.rs; cp README.md /tmp/copy; \
         cp /tmp/copy README.md; printf 'fn main() {}\\n' > src/main.rs",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(
        changes.applied.is_empty() && changes.refused.is_empty(),
        "{changes:#?}"
    );
    assert_eq!(project.read("README.md").as_deref(), Some("hello\n"));
}

/// Runs `script` in the project while, `after` into the run, the host
/// writes `text` to `rel`.
fn with_host_edit(
    project: &Project,
    script: &str,
    after: Duration,
    rel: &str,
    text: &str,
) -> agentcaps_shell::RunResult {
    let policy = project.policy().build().expect("policy");
    let path = project.root.join(rel);
    let text = text.to_owned();
    let edit = std::thread::spawn(move || {
        std::thread::sleep(after);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("host edit");
    });
    let result = project.sh(&policy, script);
    edit.join().expect("host edit");
    result
}

#[test]
fn a_file_the_host_edits_while_the_command_runs_is_a_conflict_and_keeps_the_hosts_edit() {
    let project = Project::new();
    project.write("notes.txt", "first\n");
    let result = with_host_edit(
        &project,
        "echo mine > notes.txt; echo other > other.txt; sleep 2",
        Duration::from_millis(800),
        "notes.txt",
        "host\n",
    );
    assert_eq!(
        refused_rule(&result, "notes.txt").as_deref(),
        Some("conflict"),
        "{:#?}",
        result.changes
    );
    assert_eq!(project.read("notes.txt").as_deref(), Some("host\n"));
    assert!(applied(&result, "other.txt"), "{:#?}", result.changes);
    assert_eq!(project.read("other.txt").as_deref(), Some("other\n"));
}

#[test]
fn a_file_the_command_only_opened_never_undoes_an_edit_the_host_made_meanwhile() {
    let project = Project::new();
    let result = with_host_edit(
        &project,
        "exec 3<>README.md; sleep 2; exec 3>&-",
        Duration::from_millis(800),
        "README.md",
        "edited by the host\n",
    );
    assert_eq!(
        project.read("README.md").as_deref(),
        Some("edited by the host\n"),
        "{:#?}",
        result.changes
    );
    assert!(!applied(&result, "README.md"), "{:#?}", result.changes);
}

#[test]
fn a_file_removed_with_its_directory_while_the_host_writes_into_it_is_a_conflict() {
    let project = Project::new();
    project.write("build/out/a.o", "a\n");
    let result = with_host_edit(
        &project,
        "rm -rf build; sleep 2",
        Duration::from_millis(800),
        "build/out/b.o",
        "the host's\n",
    );
    assert_eq!(
        refused_rule(&result, "build").as_deref(),
        Some("conflict"),
        "{:#?}",
        result.changes
    );
    assert_eq!(
        project.read("build/out/b.o").as_deref(),
        Some("the host's\n")
    );
    assert_eq!(project.read("build/out/a.o").as_deref(), Some("a\n"));
}

#[test]
fn two_runs_at_once_never_lose_each_others_commits() {
    let project = Project::new();
    project.write("shared.txt", "start\n");
    project.write("first.sh", "echo first > shared.txt; echo a > a.txt");
    project.write(
        "second.sh",
        "sleep 2; echo second > shared.txt; echo b > b.txt",
    );
    let policy = std::sync::Arc::new(project.policy().build().expect("policy"));
    let second = {
        let policy = std::sync::Arc::clone(&policy);
        std::thread::spawn(move || {
            crate::support::run(
                &policy,
                agentcaps_shell::CommandRequest::argv(["sh", "second.sh"]),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    let first = crate::support::run(
        &policy,
        agentcaps_shell::CommandRequest::argv(["sh", "first.sh"]),
    );
    let second = second.join().expect("second run");
    assert!(applied(&first, "shared.txt"), "{:#?}", first.changes);
    assert_eq!(
        refused_rule(&second, "shared.txt").as_deref(),
        Some("conflict"),
        "{:#?}",
        second.changes
    );
    assert_eq!(project.read("shared.txt").as_deref(), Some("first\n"));
    assert_eq!(project.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(project.read("b.txt").as_deref(), Some("b\n"));
}

#[test]
fn new_directories_land_with_the_mode_the_command_gave_them() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mkdir -m 0700 keys; echo k > keys/id; mkdir -m 0750 shared; mkdir -p -m 0711 a/b",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    let mode = |rel: &str| {
        std::fs::symlink_metadata(project.root.join(rel))
            .expect(rel)
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(mode("keys"), 0o700);
    assert_eq!(mode("shared"), 0o750);
    assert_eq!(mode("a/b"), 0o711);
    assert_eq!(project.read("keys/id").as_deref(), Some("k\n"));
}

#[test]
fn a_link_that_would_give_an_ordinary_file_a_protected_name_is_refused() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "mkdir cfg gh gh/workflows; printf '[build]\\nrustc-wrapper = \"./evil\"\\n' > cfg/config.toml; \
         ln -s cfg .cargo; echo 'on: push' > gh/workflows/ci.yml; ln -s gh .github; \
         mkdir hooks; ln -s ../hooks .git/hooks2; ln -s cfg .CARGO2; ln -s cfg .Cargo; \
         mkdir sub; printf 'gitdir: ../evil\\n' > sub/.git; ln -s cfg plain-link",
    );
    let changes = result.changes.as_ref().expect("changes");
    for link in [".cargo", ".github", ".Cargo"] {
        assert_eq!(
            refused_rule(&result, link).as_deref(),
            Some("write-protected"),
            "{link}: {changes:#?}"
        );
        assert!(
            std::fs::symlink_metadata(project.root.join(link)).is_err(),
            "{link} landed"
        );
    }
    assert_eq!(
        refused_rule(&result, "sub/.git").as_deref(),
        Some("write-protected"),
        "{changes:#?}"
    );
    assert!(!project.root.join("sub/.git").exists());
    // The ordinary names land; through no link are they protected files.
    assert!(applied(&result, "cfg/config.toml"), "{changes:#?}");
    assert!(applied(&result, "plain-link"), "{changes:#?}");
    assert!(applied(&result, ".CARGO2"), "{changes:#?}");
    assert!(!project.root.join(".cargo/config.toml").exists());
    assert!(!project.root.join(".github/workflows/ci.yml").exists());
}

#[test]
fn only_plain_links_into_the_runtime_leave_the_roots() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "ln -s /usr/bin/python3 py; ln -s /usr/../etc/passwd dotted; ln -s /etc/shadow shadow; \
         ln -s /home home-link; ln -s /usr/../root root-link; ln -s /proc/self/root proc-link",
    );
    assert!(applied(&result, "py"), "{:#?}", result.changes);
    for link in ["dotted", "shadow", "home-link", "root-link", "proc-link"] {
        assert!(
            matches!(
                refused_rule(&result, link).as_deref(),
                Some("link-outside-roots" | "blocked")
            ),
            "{link}: {:#?}",
            result.changes
        );
        assert!(std::fs::symlink_metadata(project.root.join(link)).is_err());
    }
}

#[test]
fn an_extended_attribute_only_change_is_listed_never_dropped_silently() {
    let project = Project::new();
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "/usr/bin/python3 -c \"import os; os.setxattr('README.md', 'user.note', b'set in the view')\"",
    );
    assert_eq!(
        refused_rule(&result, "README.md").as_deref(),
        Some("xattr"),
        "{result:#?}"
    );
    assert_eq!(project.read("README.md").as_deref(), Some("hello\n"));
}

#[test]
fn a_write_under_an_ordinary_name_that_a_host_link_makes_a_protected_one_is_refused() {
    let project = Project::new();
    // The real tree already holds the links: `.cargo -> cfg` (to a
    // directory that exists), `.github -> gh` (dangling: the command makes
    // the directory), and a protected file as a link to an ordinary one.
    project.write("cfg/keep.txt", "kept\n");
    std::os::unix::fs::symlink("cfg", project.root.join(".cargo")).expect(".cargo -> cfg");
    std::os::unix::fs::symlink("gh", project.root.join(".github")).expect(".github -> gh");
    project.write("tools/.keep", "");
    std::os::unix::fs::symlink(
        "../hooks.toml",
        project.root.join("tools/rust-toolchain.toml"),
    )
    .expect("rust-toolchain.toml -> ../hooks.toml");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(
        &policy,
        "printf '[build]\\nrustc-wrapper = \"/tmp/evil\"\\n' > cfg/config.toml; \
         mkdir -p gh/workflows; echo 'on: push' > gh/workflows/ci.yml; \
         echo '[toolchain]' > hooks.toml; echo ordinary > cfg/notes.txt",
    );
    let changes = result.changes.as_ref().expect("changes");
    // (The new `gh/workflows` is `.github/workflows`: refused whole.)
    for (refused, path, protected) in [
        ("cfg/config.toml", "cfg/config.toml", ".cargo/config.toml"),
        (
            "gh/workflows",
            "gh/workflows/ci.yml",
            ".github/workflows/ci.yml",
        ),
        ("hooks.toml", "hooks.toml", "tools/rust-toolchain.toml"),
    ] {
        assert_eq!(
            refused_rule(&result, refused).as_deref(),
            Some("write-protected"),
            "{path} is {protected}: {changes:#?}"
        );
        assert!(
            !project.root.join(path).exists(),
            "{path} landed, so {protected} did: {changes:#?}"
        );
    }
    let reason = &changes
        .refused
        .iter()
        .find(|c| c.path == "cfg/config.toml")
        .expect("refused")
        .reason;
    assert!(
        reason.contains(".cargo"),
        "the refusal names the link: {reason}"
    );
    // What no guarded name reaches lands as usual.
    assert_eq!(project.read("cfg/notes.txt").as_deref(), Some("ordinary\n"));
    assert!(applied(&result, "cfg/notes.txt"), "{changes:#?}");
}

#[test]
fn a_host_link_the_command_removed_makes_no_name_protected_any_more() {
    let project = Project::new();
    project.write("cfg/keep.txt", "kept\n");
    project.write("tools/keep.txt", "kept\n");
    std::os::unix::fs::symlink("cfg", project.root.join(".cargo")).expect(".cargo -> cfg");
    std::os::unix::fs::symlink("../gh", project.root.join("tools/.github"))
        .expect("tools/.github -> ../gh");
    let policy = project.policy().build().expect("policy");
    // `.cargo` removed, `tools` (holding the other link) removed whole:
    // once committed nothing makes `cfg` or `gh` a guarded name.
    let result = project.sh(
        &policy,
        "rm .cargo; rm -rf tools; printf '[build]\\njobs = 2\\n' > cfg/config.toml; \
         mkdir -p gh/workflows; echo 'on: push' > gh/workflows/ci.yml",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    assert!(std::fs::symlink_metadata(project.root.join(".cargo")).is_err());
    assert!(std::fs::symlink_metadata(project.root.join("tools")).is_err());
    assert_eq!(
        project.read("cfg/config.toml").as_deref(),
        Some("[build]\njobs = 2\n")
    );
    assert_eq!(
        project.read("gh/workflows/ci.yml").as_deref(),
        Some("on: push\n")
    );
    // A link the command keeps still guards (only the removed ones go).
    std::os::unix::fs::symlink("cfg", project.root.join(".cargo")).expect(".cargo -> cfg again");
    let result = project.sh(
        &policy,
        "rm -rf gh; printf '[build]\\nrustc-wrapper = \"/tmp/evil\"\\n' > cfg/config.toml",
    );
    assert_eq!(
        refused_rule(&result, "cfg/config.toml").as_deref(),
        Some("write-protected"),
        "{result:#?}"
    );
    assert_eq!(
        project.read("cfg/config.toml").as_deref(),
        Some("[build]\njobs = 2\n")
    );
}

#[test]
fn a_removed_host_link_whose_removal_fails_takes_the_commit_with_it() {
    // At whichever step the commit fails, `cfg/config.toml` never lands
    // while `.cargo -> cfg` stays (it would be cargo's config).
    for step in 1..30 {
        let project = Project::new();
        project.write("cfg/keep.txt", "kept\n");
        std::os::unix::fs::symlink("cfg", project.root.join(".cargo")).expect(".cargo -> cfg");
        let policy = project
            .policy()
            .fail_commit_at(step)
            .build()
            .expect("policy");
        let result = project.sh(
            &policy,
            "rm .cargo; printf '[build]\\njobs = 2\\n' > cfg/config.toml; echo x > other.txt",
        );
        let changes = result.changes.as_ref().expect("changes");
        let link = std::fs::symlink_metadata(project.root.join(".cargo")).is_ok();
        let config = project.root.join("cfg/config.toml").exists();
        assert!(!(link && config), "step {step}: {changes:#?}");
        if changes.refused.is_empty() {
            assert!(step > 3, "the commit takes more steps");
            assert!(config && !link);
            return;
        }
    }
    panic!("the commit never succeeded");
}

#[test]
fn a_file_becomes_a_directory_and_directories_become_a_file_and_a_link() {
    let project = Project::new();
    project.write("f", "a file\n");
    project.write("d/a", "old a\n");
    project.write("d/sub/b", "old b\n");
    project.write("e/x", "old x\n");
    let policy = project
        .policy()
        .allow_command("ln")
        .build()
        .expect("policy");
    let result = project.sh(
        &policy,
        "rm f; mkdir f; echo in > f/inner; rm -rf d; echo now-a-file > d; \
         rm -rf e; ln -s README.md e; echo other > other.txt",
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    assert_eq!(project.read("f/inner").as_deref(), Some("in\n"));
    assert_eq!(project.read("d").as_deref(), Some("now-a-file\n"));
    assert_eq!(
        std::fs::read_link(project.root.join("e")).expect("e is a link"),
        std::path::Path::new("README.md")
    );
    assert_eq!(project.read("other.txt").as_deref(), Some("other\n"));
    for (path, action) in [("f", "create"), ("d", "modify"), ("e", "link")] {
        assert_eq!(
            crate::support::applied_action(changes, path),
            Some(action),
            "{path}: {changes:#?}"
        );
    }
}

#[test]
fn a_removed_tree_holding_names_that_are_not_utf8_is_removed_whole() {
    use std::os::unix::ffi::OsStrExt;
    let project = Project::new();
    let odd = std::ffi::OsStr::from_bytes(b"\xff.bin");
    let deep = project
        .root
        .join("t/deep")
        .join(std::ffi::OsStr::from_bytes(b"\xfe"));
    std::fs::create_dir_all(&deep).expect("deep");
    std::fs::write(project.root.join("t").join(odd), "odd\n").expect("odd");
    std::fs::write(deep.join("x"), "x\n").expect("x");
    project.write("t/plain.txt", "plain\n");
    let policy = project.policy().build().expect("policy");
    let result = project.sh(&policy, "rm -rf t; echo y > kept.txt");
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    assert!(
        std::fs::symlink_metadata(project.root.join("t")).is_err(),
        "t is gone: {changes:#?}"
    );
    assert_eq!(project.read("kept.txt").as_deref(), Some("y\n"));
    // Nothing was left beside it.
    let names: Vec<_> = std::fs::read_dir(&project.root)
        .expect("root")
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with(".agentcaps"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// The variable that marks this test binary's re-run for one measurement.
const MEASURING: &str = "AGENTCAPS_TEST_MEASURING";

/// A line of `/proc/self/status` in KiB (`VmHWM`, `VmRSS`).
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a figure in KiB")
}

#[test]
fn a_150_mb_file_opened_for_writing_costs_the_commit_bounded_memory() {
    const NAME: &str = "commits::a_150_mb_file_opened_for_writing_costs_the_commit_bounded_memory";
    if std::env::var_os(MEASURING).is_none() {
        // Measured alone, in a process of its own: the peak is this run's.
        let (status, text) = crate::support::rerun(NAME, MEASURING, "1");
        assert!(status.success(), "{text}");
        assert!(text.contains("1 passed"), "the re-run ran no test: {text}");
        for line in text.lines().filter(|l| l.starts_with("peak resident set")) {
            eprintln!("{line}");
        }
        return;
    }
    use std::io::Write;
    let project = Project::new();
    let mut big = std::fs::File::create(project.root.join("big.bin")).expect("big");
    let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    for _ in 0..150 {
        big.write_all(&chunk).expect("write");
    }
    drop(big);
    let policy = project.policy().build().expect("policy");
    // Warm up (the first run loads what every run needs), then reset the
    // peak to what is resident now.
    project.sh(&policy, "echo warm > warm.txt");
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak");
    let baseline = status_kib("VmRSS");
    let result = project.sh(
        &policy,
        "exec 3<>big.bin; exec 3>&-; echo opened > done.txt",
    );
    let peak = status_kib("VmHWM");
    let changes = result.changes.as_ref().expect("changes");
    assert!(applied(&result, "done.txt"), "{changes:#?}");
    assert!(
        changes.applied.iter().all(|c| c.path != "big.bin")
            && changes.refused.iter().all(|c| c.path != "big.bin"),
        "opening it is no change: {changes:#?}"
    );
    let above = peak.saturating_sub(baseline);
    eprintln!("peak resident set {peak} KiB, baseline {baseline} KiB: {above} KiB above");
    assert!(above < 64 * 1024, "{above} KiB above the baseline");
}

#[test]
fn entries_whose_own_names_are_not_utf8_are_deleted_alone() {
    use std::os::unix::ffi::OsStrExt;
    let project = Project::new();
    let name = |bytes: &[u8]| std::ffi::OsStr::from_bytes(bytes).to_owned();
    let odd_file = project.root.join(name(b"\xff.bin"));
    let odd_dir = project.root.join("sub").join(name(b"\xfe"));
    std::fs::write(&odd_file, "odd\n").expect("odd file");
    std::fs::create_dir_all(odd_dir.join("inner")).expect("odd dir");
    std::fs::write(odd_dir.join("inner/x"), "x\n").expect("x");
    project.write("sub/plain.txt", "plain\n");
    let result = project.python(
        "import os, shutil\nos.remove(b'\\xff.bin')\nshutil.rmtree(b'sub/\\xfe')\nopen('kept.txt', 'w').write('y\\n')\n",
        &[],
    );
    let changes = result.changes.as_ref().expect("changes");
    assert!(changes.refused.is_empty(), "{changes:#?}");
    assert!(
        std::fs::symlink_metadata(&odd_file).is_err(),
        "the file is gone: {changes:#?}"
    );
    assert!(
        std::fs::symlink_metadata(&odd_dir).is_err(),
        "the directory is gone: {changes:#?}"
    );
    assert_eq!(project.read("sub/plain.txt").as_deref(), Some("plain\n"));
    assert_eq!(project.read("kept.txt").as_deref(), Some("y\n"));
    let mut deleted: Vec<&str> = changes
        .applied
        .iter()
        .filter(|c| c.action == agentcaps_shell::ChangeAction::Delete)
        .map(|c| c.path.as_str())
        .collect();
    deleted.sort_unstable();
    assert_eq!(deleted, ["sub/\u{fffd}", "\u{fffd}.bin"], "{changes:#?}");
}

#[test]
fn a_command_cannot_make_a_directory_named_like_the_write_backs_own() {
    // A later commit removes left-over `.agentcaps-commit-*` directories;
    // one the command made would be taken for one (and what it holds
    // with it), so none lands, at any depth, as a directory, file or link.
    let project = Project::new();
    let result = project.python(
        "import os\n\
         os.makedirs('.agentcaps-commit-1-0/sub')\n\
         open('.agentcaps-commit-1-0/sub/f', 'w').write('x\\n')\n\
         os.makedirs('deep')\n\
         open('deep/.agentcaps-commit-2-0', 'w').write('x\\n')\n\
         os.symlink('deep', '.agentcaps-commit-3-0')\n\
         open('kept.txt', 'w').write('y\\n')\n",
        &[],
    );
    let changes = result.changes.as_ref().expect("changes");
    let mut refused: Vec<(&str, &str)> = changes
        .refused
        .iter()
        .map(|c| (c.path.as_str(), c.rule.as_str()))
        .collect();
    refused.sort_unstable();
    assert_eq!(
        refused,
        [
            (".agentcaps-commit-1-0", "write-protected"),
            (".agentcaps-commit-3-0", "write-protected"),
            ("deep/.agentcaps-commit-2-0", "write-protected"),
        ],
        "{changes:#?}"
    );
    for name in [
        ".agentcaps-commit-1-0",
        ".agentcaps-commit-3-0",
        "deep/.agentcaps-commit-2-0",
    ] {
        assert!(
            std::fs::symlink_metadata(project.root.join(name)).is_err(),
            "{name} landed: {changes:#?}"
        );
    }
    assert_eq!(project.read("kept.txt").as_deref(), Some("y\n"));
}

/// A tree made one directory at a time below `top` (relative to the
/// project): 25 names of 200 bytes, 5 025 bytes in all, beyond `PATH_MAX`.
const DEEP_PY: &str = r#"import os
def deep(top, leaf, text):
    fd = os.open(top, os.O_RDONLY)
    for _ in range(25):
        try:
            os.mkdir('d' * 200, dir_fd=fd)
        except FileExistsError:
            pass
        nfd = os.open('d' * 200, os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    f = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=fd)
    os.write(f, text)
    os.close(f)
    os.close(fd)
"#;

/// The deep leaf `name` below `top` in the real tree, read by handle.
fn read_deep(project: &Project, top: &str, name: &str) -> Option<Vec<u8>> {
    let mut path = project.root.join(top);
    for _ in 0..25 {
        path.push("d".repeat(200));
    }
    agentcaps_paths::long_path::read(&path.join(name)).ok()
}

#[test]
fn changes_beyond_path_max_land_and_are_judged_like_any_other() {
    let project = Project::new();
    std::fs::create_dir_all(project.root.join("old")).expect("old");
    // The host's own deep tree, which the command removes whole.
    let host = std::process::Command::new("python3")
        .current_dir(&project.root)
        .args([
            "-c",
            &format!("{DEEP_PY}deep('old', 'gone.txt', b'old\\n')"),
        ])
        .status()
        .expect("python3");
    assert!(host.success());
    assert_eq!(
        read_deep(&project, "old", "gone.txt").as_deref(),
        Some(&b"old\n"[..])
    );
    let result = project.python(
        &format!(
            "{DEEP_PY}import shutil\n\
             os.mkdir('new')\n\
             deep('new', 'leaf.txt', b'deep\\n')\n\
             deep('new', '.env', b'SECRET=1\\n')\n\
             open('ordinary.txt', 'w').write('ok\\n')\n\
             shutil.rmtree('old')\n"
        ),
        &[],
    );
    let changes = result.changes.as_ref().expect("changes");
    // The deep file landed; only the blocked name beside it was refused.
    assert_eq!(
        read_deep(&project, "new", "leaf.txt").as_deref(),
        Some(&b"deep\n"[..])
    );
    assert_eq!(read_deep(&project, "new", ".env"), None, "{changes:#?}");
    assert_eq!(changes.refused.len(), 1, "{changes:#?}");
    assert!(changes.refused[0].path.ends_with("/.env"), "{changes:#?}");
    assert_eq!(changes.refused[0].rule, "blocked");
    assert_eq!(project.read("ordinary.txt").as_deref(), Some("ok\n"));
    // The removed deep tree is gone to the bottom.
    assert!(
        std::fs::symlink_metadata(project.root.join("old")).is_err(),
        "{changes:#?}"
    );
    assert!(applied(&result, "ordinary.txt"), "{changes:#?}");
}
