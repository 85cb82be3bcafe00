//! The tools on a Windows file system (CI runs this under Wine): the
//! spellings Windows reads as a blocked or protected entry — any case, a
//! trailing dot or space, a `:stream` suffix, an 8.3 short name — and the
//! spellings that name another drive, a device or a namespace are refused
//! by every tool that takes a path, and nothing is read or changed.
//!
//! Windows only: on Linux these names are other files, and the judge's
//! Windows readings are tested there by forcing them on (see
//! agentcaps-paths).
#![cfg(windows)]

mod common;

use agentcaps::Policy;
use agentcaps_tools::Toolbox;
use serde_json::{Value, json};

const POLICY: &str = "allowed_commands = [\"find\"]\npath_policy = true\n";

/// The secrets of the tree: none may appear in any answer.
const SECRETS: [&str; 3] = ["inside-secret", "PEM-KEY-SECRET", "outside secret"];

/// `tree.outside` as an agent could spell it: with its drive (`C:\...`),
/// in the verbatim namespace (`\\?\C:\...`), the device namespace
/// (`\\.\C:\...`), with forward slashes, and as an administrative share
/// (`\\localhost\C$\...`).
fn absolute_spellings(tree: &common::Tree) -> Vec<(String, &'static str)> {
    let verbatim = tree.outside.display().to_string();
    let drive = verbatim
        .strip_prefix(r"\\?\")
        .unwrap_or(&verbatim)
        .to_owned();
    let (letter, rest) = drive.split_once(":").expect("a drive letter");
    vec![
        (format!(r"{drive}\secret.txt"), "windows-drive"),
        (format!(r"{verbatim}\secret.txt"), "windows-namespace"),
        (format!(r"\\.\{drive}\secret.txt"), "windows-namespace"),
        (
            format!("//?/{}/secret.txt", drive.replace('\\', "/")),
            "windows-namespace",
        ),
        (
            format!(r"\\localhost\{letter}${rest}\secret.txt"),
            "windows-unc",
        ),
    ]
}

async fn refused(toolbox: &Toolbox, tool: &str, args: Value, rule: &str) -> Option<String> {
    let what = format!("{tool} {args}");
    match toolbox.call(tool, args).await {
        Ok(out) => Some(format!("{what}: allowed: {}", out.text)),
        Err(e) => {
            let text = e.to_model_text();
            if !e.is_refusal() || e.rule() != rule {
                Some(format!(
                    "{what}: rule `{}`, expected `{rule}`: {text}",
                    e.rule()
                ))
            } else {
                SECRETS
                    .iter()
                    .find(|s| text.contains(*s))
                    .map(|secret| format!("{what}: the refusal shows {secret:?}"))
            }
        }
    }
}

#[tokio::test]
async fn windows_spellings_of_secrets_and_protected_entries_are_refused() {
    let tree = common::Tree::new();
    let policy = Policy::load(&tree.policy(POLICY)).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let mut failures = Vec::new();

    // Reads of `.env` and `server.pem` as Windows opens them.
    let reads = [
        (".ENV", "blocked"),
        (".env.", "blocked"),
        (".env ", "blocked"),
        (".env::$DATA", "blocked"),
        (".env:x", "blocked"),
        ("SERVER.PEM", "blocked"),
        ("server.pem. .", "blocked"),
        (r"src\..\.Env", "blocked"),
        ("ENV~1", "windows-short-name"),
        ("SERVER~1.PEM", "windows-short-name"),
        ("CON", "windows-device"),
        (r"src\nul.txt", "windows-device"),
        (r"..\outside\secret.txt", "outside-roots"),
        (r"src\..\..\outside\secret.txt", "outside-roots"),
    ];
    let absolute = absolute_spellings(&tree);
    let all_reads = reads
        .iter()
        .map(|(path, rule)| ((*path).to_owned(), *rule))
        .chain(absolute.iter().cloned());
    for (path, rule) in all_reads {
        for tool in ["read_file", "file_info"] {
            failures.extend(refused(&toolbox, tool, json!({"path": path}), rule).await);
        }
        failures.extend(
            refused(
                &toolbox,
                "shell_command",
                json!({"argv": ["find", "SECRET", path]}),
                "path",
            )
            .await,
        );
    }

    // Writes into `.git` (its hooks and config run programs) and over
    // `.env`, as Windows opens them.
    let writes = [
        (r".GIT\hooks\pre-commit", "write-protected"),
        (r".git.\hooks\pre-commit", "write-protected"),
        (r".git::$INDEX_ALLOCATION\config", "write-protected"),
        (r".Git \config", "write-protected"),
        (r"GIT~1\config", "windows-short-name"),
        (".ENV", "blocked"),
        (".env.", "blocked"),
        ("AUX.txt", "windows-device"),
    ];
    for (path, rule) in writes {
        failures.extend(
            refused(
                &toolbox,
                "write_file",
                json!({"path": path, "content": "x", "overwrite": true}),
                rule,
            )
            .await,
        );
        failures.extend(refused(&toolbox, "create_directory", json!({"path": path}), rule).await);
    }
    failures.extend(
        refused(
            &toolbox,
            "edit_file",
            json!({"path": r".GIT\config", "old_text": "[core]", "new_text": "[core]\n\thooksPath = x"}),
            "write-protected",
        )
        .await,
    );
    failures.extend(
        refused(
            &toolbox,
            "move_file",
            json!({"from": "edit.txt", "to": r".git.\hooks\post-checkout"}),
            "write-protected",
        )
        .await,
    );

    // Reading many, and searching: the secret is reported refused or
    // skipped, never shown.
    let many = toolbox
        .call("read_many_files", json!({"paths": [".ENV", "src/lib.txt"]}))
        .await
        .expect("read_many_files answers");
    assert!(many.text.contains("needle here"), "{}", many.text);
    for glob in [".ENV*", "*.PEM", "SERVER.*", ".env.", "*"] {
        let found = toolbox
            .call(
                "search_files",
                json!({"pattern": "SECRET|secret|KEY|needle", "glob": glob}),
            )
            .await
            .expect("search_files answers");
        if glob == "*" {
            // The search reads the files it may.
            assert!(found.text.contains("needle here"), "{}", found.text);
        }
        failures.extend(
            SECRETS
                .iter()
                .filter(|s| found.text.contains(*s) || many.text.contains(*s))
                .map(|s| format!("glob {glob}: {s} shown")),
        );
    }

    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Nothing changed.
    assert_eq!(
        std::fs::read_to_string(tree.root.join(".env")).expect(".env"),
        "API_KEY=inside-secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join(".git/config")).expect(".git/config"),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).expect("edit.txt"),
        "one\ntwo\nthree\n"
    );
    let git: Vec<_> = std::fs::read_dir(tree.root.join(".git"))
        .expect(".git")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(git, ["config"], "something was written into .git");
    let outside: Vec<_> = std::fs::read_dir(&tree.outside)
        .expect("outside")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(outside, ["secret.txt"]);
}
