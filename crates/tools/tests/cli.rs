//! The `agentcaps` binary as a user runs it, driven by `data/cli_cases.toml`:
//! exit codes, the `--json` shape, and what reaches stdout.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    args: Vec<String>,
    exit: i32,
    decision: Option<String>,
    rule: Option<String>,
    #[serde(default = "yes")]
    json_output: bool,
    policy: Option<String>,
    stdin: Option<String>,
    stdout_contains: Option<String>,
    /// The case needs the tree's symbolic links.
    #[serde(default)]
    links: bool,
    /// What the case runs on Windows, where it differs.
    windows_args: Option<Vec<String>>,
    /// What it must print on Windows, where it differs.
    windows_stdout_contains: Option<String>,
    why: String,
}

fn yes() -> bool {
    true
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn agentcaps(dir: &std::path::Path, args: &[String], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentcaps"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentcaps");
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(stdin.unwrap_or("").as_bytes())
            .expect("stdin");
    }
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs the corpus cases that need the tree's links (`links`) or not.
fn run_corpus(links: bool) {
    let tree = common::Tree::new();
    let port = common::http_server();
    let closed = common::closed_port();
    let policy = tree.policy(&format!(
        "allowed_commands = [\"ls\", \"cat\", \"echo\", \"find\"]\npath_policy = true\n\n[egress]\nallowed_cidrs = [\"127.0.0.0/8\"]\ndenied_cidrs = [\"127.0.0.9/32\"]\nallowed_ports = [{port}, {closed}]\nallowed_methods = [\"GET\"]\n"
    ));
    let corpus: Corpus = toml::from_str(include_str!("data/cli_cases.toml")).expect("corpus");
    assert!(corpus.case.len() > 25, "the corpus lost its cases");
    let cases: Vec<&Case> = corpus.case.iter().filter(|c| c.links == links).collect();
    assert!(!cases.is_empty(), "no case to run");
    let windows = cfg!(windows);
    let mut failures = Vec::new();
    for case in cases {
        let case_args = match &case.windows_args {
            Some(args) if windows => args,
            _ => &case.args,
        };
        let stdout_contains = match &case.windows_stdout_contains {
            Some(text) if windows => Some(text),
            _ => case.stdout_contains.as_ref(),
        };
        let mut args: Vec<String> = case_args
            .iter()
            .map(|a| {
                tree.subst(a, port)
                    .replace("{closed}", &closed.to_string())
                    .replace("{policy}", &policy.display().to_string())
            })
            .collect();
        if case.policy.as_deref() == Some("none") {
            assert!(!args.iter().any(|a| a == "--policy"), "{}", case.name);
        }
        if case.json_output {
            // --json goes before a trailing `-- ARGV`.
            let at = args.iter().position(|a| a == "--").unwrap_or(args.len());
            args.insert(at, "--json".into());
        }
        let run = agentcaps(&tree.root, &args, case.stdin.as_deref());
        let mut wrong = Vec::new();
        if run.code != case.exit {
            wrong.push(format!("exit {}, expected {}", run.code, case.exit));
        }
        if case.json_output {
            match serde_json::from_str::<serde_json::Value>(run.stdout.trim()) {
                Ok(json) => {
                    for key in ["decision", "rule", "reason"] {
                        if json.get(key).is_none() {
                            wrong.push(format!("JSON lacks `{key}`"));
                        }
                    }
                    if let Some(decision) = &case.decision
                        && json["decision"] != decision.as_str()
                    {
                        wrong.push(format!(
                            "decision {}, expected {decision}",
                            json["decision"]
                        ));
                    }
                    match &case.rule {
                        Some(rule) if json["rule"] != rule.as_str() => {
                            wrong.push(format!("rule {}, expected {rule}", json["rule"]));
                        }
                        None if case.exit != 0 => wrong.push(format!(
                            "the row must pin its rule (this run: {})",
                            json["rule"]
                        )),
                        _ => {}
                    }
                    if let Some(needle) = stdout_contains
                        && !json.to_string().contains(needle.as_str())
                    {
                        wrong.push(format!("result lacks {needle:?}"));
                    }
                }
                Err(e) => wrong.push(format!("stdout is not one JSON object ({e})")),
            }
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{} ({}): {}\n    args: {args:?}\n    stdout: {}\n    stderr: {}",
                case.name,
                case.why,
                wrong.join("; "),
                run.stdout.trim(),
                run.stderr.trim()
            ));
        }
    }
    assert!(
        !tree.outside.join("evil.txt").exists(),
        "a patch wrote outside"
    );
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).expect("edit.txt"),
        "one\ntwo\nthree\n",
        "a dry run or refused patch changed a file"
    );
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn cli_corpus() {
    run_corpus(false);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine makes no symbolic links (its CreateSymbolicLink reports success and does nothing)"
)]
fn cli_corpus_through_links() {
    run_corpus(true);
}

/// A command that prints a line, for the tests of `run`.
struct Probe {
    /// The program to allow.
    program: &'static str,
    argv: Vec<String>,
    /// What it prints.
    output: String,
}

/// A command printing `text`: `echo TEXT` on Unix. Windows has no `echo`
/// program (it is built into `cmd`): there `find TEXT greeting.txt` over a
/// file holding the line, and what it prints (a header, then the line) is
/// what the same program prints when run directly.
fn probe(tree: &common::Tree, text: &str) -> Probe {
    #[cfg(not(windows))]
    {
        let _ = tree;
        Probe {
            program: "echo",
            argv: vec!["echo".to_owned(), text.to_owned()],
            output: format!("{text}\n"),
        }
    }
    #[cfg(windows)]
    {
        std::fs::write(tree.root.join("greeting.txt"), format!("{text}\nother\n"))
            .expect("write greeting.txt");
        let argv = vec![
            "find".to_owned(),
            text.to_owned(),
            "greeting.txt".to_owned(),
        ];
        let system = std::env::var("SystemRoot").expect("SystemRoot is set on Windows");
        let direct = Command::new(std::path::Path::new(&system).join("system32\\find.exe"))
            .args(&argv[1..])
            .current_dir(&tree.root)
            .output()
            .expect("find runs");
        let output = String::from_utf8_lossy(&direct.stdout).into_owned();
        assert!(
            output.contains(text) && !output.contains("other"),
            "{output}"
        );
        Probe {
            program: "find",
            argv,
            output,
        }
    }
}

/// `check shell` says what the kernel would enforce, and agrees with what
/// `run` then reports for the same command.
#[test]
fn check_shell_reports_the_kernel_enforcement_that_run_achieves() {
    use agentcaps::shell::kernel;
    let tree = common::Tree::new();
    let probe = probe(&tree, "hi");
    let policy = tree.policy(&format!(
        "allowed_commands = [\"{}\"]\npath_policy = true\n",
        probe.program
    ));
    let policy = policy.display().to_string();
    let ask = |sub: &[&str]| {
        let mut args: Vec<String> = sub.iter().map(|s| s.to_string()).collect();
        args.extend(["--policy", &policy, "--json", "--"].map(String::from));
        args.extend(probe.argv.iter().cloned());
        let run = agentcaps(&tree.root, &args, None);
        assert_eq!(run.code, 0, "{sub:?}: {}{}", run.stdout, run.stderr);
        serde_json::from_str::<serde_json::Value>(run.stdout.trim()).expect("one JSON object")
    };
    let checked = ask(&["check", "shell"]);
    let predicted = checked["enforced"]
        .as_str()
        .expect("check shell reports `enforced`")
        .to_owned();
    let abi = kernel::kernel_abi();
    let expected = if abi >= kernel::FULL_ABI {
        "full".to_owned()
    } else if abi == 0 {
        "none".to_owned()
    } else {
        format!("partial (abi {abi})")
    };
    assert_eq!(
        predicted, expected,
        "the prediction does not follow the kernel's ABI"
    );
    let ran = ask(&["run"]);
    // The output is the result's, once; the reason is a sentence about the run.
    assert_eq!(ran["result"]["stdout"], probe.output.as_str(), "{ran}");
    let reason = ran["reason"].as_str().unwrap_or_default();
    assert!(
        !reason.contains("hi"),
        "the reason repeats the output: {ran}"
    );
    assert!(
        ran.to_string()
            .contains(&format!("\"enforced\":\"{predicted}\"")),
        "run achieved something other than check shell predicted ({predicted}): {ran}"
    );
}

/// With `require_kernel_enforcement`, `check shell` refuses exactly when the
/// kernel could not enforce everything.
#[test]
fn check_shell_refuses_when_required_enforcement_is_out_of_reach() {
    use agentcaps::shell::kernel;
    let tree = common::Tree::new();
    let probe = probe(&tree, "hi");
    let policy = tree.policy(&format!(
        "allowed_commands = [\"{}\"]\npath_policy = true\nrequire_kernel_enforcement = true\n",
        probe.program
    ));
    let mut args: Vec<String> = [
        "check",
        "shell",
        "--policy",
        &policy.display().to_string(),
        "--json",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(probe.argv.iter().cloned());
    let run = agentcaps(&tree.root, &args, None);
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    if kernel::kernel_abi() >= kernel::FULL_ABI {
        assert_eq!(
            (run.code, json["enforced"].as_str()),
            (0, Some("full")),
            "{json}"
        );
    } else {
        assert_eq!(run.code, 3, "{json}");
        assert_eq!(json["rule"], "require-kernel-enforcement", "{json}");
    }
}

#[test]
fn text_mode_prints_the_child_output_and_the_refusal() {
    let tree = common::Tree::new();
    let probe = probe(&tree, "hi there");
    let policy = tree.policy(&format!("allowed_commands = [\"{}\"]\n", probe.program));
    let policy = policy.display().to_string();
    let mut args: Vec<String> = vec!["run".into(), "--policy".into(), policy.clone(), "--".into()];
    args.extend(probe.argv.iter().cloned());
    let ran = agentcaps(&tree.root, &args, None);
    assert_eq!(
        (ran.code, ran.stdout.as_str()),
        (0, probe.output.as_str()),
        "{}",
        ran.stderr
    );
    let refused = agentcaps(
        &tree.root,
        &[
            "check".into(),
            "path".into(),
            "--policy".into(),
            policy,
            "../outside/secret.txt".into(),
        ],
        None,
    );
    assert_eq!(refused.code, 3);
    assert!(
        refused.stdout.contains("deny") || refused.stderr.contains("deny"),
        "{}{}",
        refused.stdout,
        refused.stderr
    );
}

#[test]
fn patch_applies_from_a_file_and_strips_git_prefixes() {
    let tree = common::Tree::new();
    let policy = tree.policy("").display().to_string();
    let patch = tree.top.join("change.patch");
    std::fs::write(
        &patch,
        "diff --git a/edit.txt b/edit.txt\n--- a/edit.txt\n+++ b/edit.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
    )
    .unwrap();
    let run = agentcaps(
        &tree.root,
        &[
            "patch".into(),
            "--policy".into(),
            policy,
            patch.display().to_string(),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).unwrap(),
        "one\nTWO\nthree\n"
    );
}

#[test]
fn policy_file_errors_name_the_key_and_line() {
    let tree = common::Tree::new();
    let bad = tree.top.join("bad.toml");
    std::fs::write(&bad, "[files]\nallowed = [\"root\"]\nbloked = [\"x\"]\n").unwrap();
    let run = agentcaps(
        &tree.root,
        &[
            "check".into(),
            "path".into(),
            "--json".into(),
            "--policy".into(),
            bad.display().to_string(),
            "x".into(),
        ],
        None,
    );
    assert_eq!(run.code, 2);
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("files.bloked") && reason.contains("line 3"),
        "{reason}"
    );
}

#[test]
fn policy_file_errors_name_the_file_and_the_line() {
    let tree = common::Tree::new();
    let bad = tree.top.join("methods.toml");
    std::fs::write(
        &bad,
        "[files]\nallowed = [\"root\"]\n\n[egress]\nallowed_methods = [\"GET\", \"FETCH\"]\n",
    )
    .unwrap();
    let args: Vec<String> = ["check", "policy", "--json", "--policy"]
        .iter()
        .map(|s| s.to_string())
        .chain([bad.display().to_string()])
        .collect();
    let run = agentcaps(&tree.root, &args, None);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("methods.toml") && reason.contains("line 5") && reason.contains("FETCH"),
        "{reason}"
    );
}

#[test]
fn check_policy_prints_the_effective_policy_with_origins() {
    let tree = common::Tree::new();
    let policy = tree.policy("allowed_commands = [\"ls\"]\n");
    let args: Vec<String> = ["check", "policy", "--policy"]
        .iter()
        .map(|s| s.to_string())
        .chain([policy.display().to_string()])
        .collect();
    let run = agentcaps(&tree.root, &args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let origin = policy.display().to_string();
    for needle in [
        "[files]".to_owned(),
        "[shell]".to_owned(),
        "[egress]".to_owned(),
        "[patch]".to_owned(),
        format!("\"ls\",  # {origin}:"),
        "max_redirects = 5  # built-in".to_owned(),
    ] {
        assert!(
            run.stdout.contains(&needle),
            "lacks {needle:?}:\n{}",
            run.stdout
        );
    }
}

#[test]
fn check_policy_lists_credentials_by_name_source_and_hosts_never_by_value() {
    let tree = common::Tree::new();
    let value = "ghp_CheckPolicyValue0123456789abcdefABCD";
    std::fs::write(tree.top.join("token"), format!("{value}\n")).unwrap();
    let policy = tree.policy(
        "\n[credentials.github]\nfrom_file = \"token\"\nhosts = [\"github.com\", \"api.github.com\"]\n",
    );
    let args: Vec<String> = ["check", "policy", "--json", "--policy"]
        .iter()
        .map(|s| s.to_string())
        .chain([policy.display().to_string()])
        .collect();
    let run = agentcaps(&tree.root, &args, None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains(value) && !run.stderr.contains(value));
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    let listed = &json["credentials"][0];
    assert_eq!(listed["name"], "github", "{json}");
    assert_eq!(
        listed["hosts"],
        serde_json::json!(["github.com", "api.github.com"])
    );
    assert!(
        listed["source"]
            .as_str()
            .unwrap_or_default()
            .starts_with("from_file = ")
    );
    // A missing source is an error at load, with the file and line.
    std::fs::remove_file(tree.top.join("token")).unwrap();
    let run = agentcaps(&tree.root, &args, None);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    let reason = json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("policy.toml") && reason.contains("credentials.github.from_file"),
        "{reason}"
    );
}

#[test]
fn the_built_in_default_refuses_to_start_in_the_root_directory() {
    // `/`: on Windows the root of the current drive.
    let run = agentcaps(std::path::Path::new("/"), &["mcp".into()], None);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("--policy") && run.stdout.is_empty(),
        "{}",
        run.stderr
    );
}

#[test]
fn defaults_false_is_reported_loudly() {
    let tree = common::Tree::new();
    let file = tree.top.join("weak.toml");
    std::fs::write(&file, "[files]\nallowed = [\"root\"]\ndefaults = false\n").unwrap();
    let run = agentcaps(
        &tree.root,
        &[
            "check".into(),
            "policy".into(),
            "--policy".into(),
            file.display().to_string(),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("WARNING")
            && run.stderr.contains("defaults = false")
            && run.stderr.contains("line 3"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_explains_exit_codes_and_the_default_policy() {
    let tree = common::Tree::new();
    let run = agentcaps(&tree.root, &["--help".into()], None);
    assert_eq!(run.code, 0);
    for needle in [
        "check",
        "run",
        "fetch",
        "patch",
        "mcp",
        "Exit codes",
        "3 refused",
        "built-in default",
    ] {
        assert!(
            run.stdout.contains(needle),
            "--help lacks {needle:?}:\n{}",
            run.stdout
        );
    }
}

/// A patch over `max_patch_bytes` is refused by its size (exit 3), even when
/// the cut at the bound falls inside a character, and nothing is written.
#[test]
fn an_oversized_patch_is_refused_by_its_size() {
    let tree = common::Tree::new();
    let path = tree.top.join("small-patches.toml");
    std::fs::write(
        &path,
        "[files]\nallowed = [\"root\"]\n\n[patch]\nmax_patch_bytes = 100\n",
    )
    .expect("write policy");
    let before = std::fs::read(tree.root.join("edit.txt")).expect("edit.txt");
    let patch = format!(
        "--- a/edit.txt\n+++ b/edit.txt\n@@ -1 +1 @@\n-one\n+{}\n",
        "é".repeat(200)
    );
    let args: Vec<String> = [
        "patch",
        "--json",
        "--policy",
        &path.display().to_string(),
        "-",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = agentcaps(&tree.root, &args, Some(&patch));
    let json: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("json");
    assert_eq!(
        (run.code, json["rule"].as_str()),
        (3, Some("max-patch-bytes")),
        "{json}"
    );
    assert_eq!(
        std::fs::read(tree.root.join("edit.txt")).expect("edit.txt"),
        before
    );
}

/// Text output says on stderr when the body was cut at
/// `max_response_bytes` (what arrived is still printed).
#[test]
fn fetch_says_on_stderr_when_the_body_was_cut() {
    let tree = common::Tree::new();
    let port = common::http_server();
    let policy = tree.policy(&format!(
        "[egress]\nallowed_cidrs = [\"127.0.0.0/8\"]\nallowed_ports = [{port}]\nmax_response_bytes = 5\n"
    ));
    let args: Vec<String> = [
        "fetch",
        "--policy",
        &policy.display().to_string(),
        &format!("http://127.0.0.1:{port}/"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let run = agentcaps(&tree.root, &args, None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.trim_end(), "hello");
    assert!(
        run.stderr.contains("cut at max_response_bytes"),
        "{}",
        run.stderr
    );
}

/// How many processes run `sleep MARKER` (their command line exactly).
#[cfg(target_os = "linux")]
fn sleeps(marker: &str) -> usize {
    let cmdline = format!("sleep\0{marker}\0");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|found| found.as_slice() == cmdline.as_bytes())
        .count()
}

/// Where no view can be built (here: no user namespace may be made), the
/// command runs Landlock-only under the reaper: killing `agentcaps run`
/// still kills the command and what it detached with `setsid` within a
/// second, and the result says the view is not there.
#[cfg(target_os = "linux")]
#[test]
fn without_a_view_killing_agentcaps_kills_the_command_and_its_detached_within_a_second() {
    let tree = common::Tree::new();
    let policy = tree.policy("allowed_commands = [\"sh\"]\npath_policy = true\n");
    std::fs::write(
        tree.root.join("run.sh"),
        "setsid sleep 987675 &\nsleep 987675\n",
    )
    .expect("script");
    let mut child = Command::new("unshare")
        .args(["--user", "--map-root-user", "sh", "-c"])
        .arg("echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_agentcaps"))
        .current_dir(&tree.root)
        .args(["run", "--policy"])
        .arg(&policy)
        .args(["--", "sh", "run.sh"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("unshare (util-linux) runs");
    let sleepers = || sleeps("987675");
    let started = std::time::Instant::now();
    while sleepers() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // `unshare` and `sh` exec'd: the child is agentcaps itself.
    let killed = Command::new("kill")
        .arg("-KILL")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(killed.success());
    let _ = child.wait();
    let at = std::time::Instant::now();
    while sleepers() > 0 {
        assert!(
            at.elapsed() < std::time::Duration::from_secs(1),
            "{} sleeps outlived agentcaps by more than a second",
            sleepers()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Killing `agentcaps run` (as an MCP client stopping its server does)
/// kills the command's view and everything in it within a second, for
/// `SIGKILL` as for `SIGTERM`.
#[cfg(target_os = "linux")]
#[test]
fn killing_agentcaps_kills_the_view_within_a_second() {
    for (signal, marker) in [("-KILL", "987671"), ("-TERM", "987672")] {
        let tree = common::Tree::new();
        let policy = tree.policy("allowed_commands = [\"sleep\"]\npath_policy = true\n");
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentcaps"))
            .current_dir(&tree.root)
            .args(["run", "--policy"])
            .arg(&policy)
            .args(["--", "sleep", marker])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("agentcaps");
        let running = || sleeps(marker) > 0;
        let started = std::time::Instant::now();
        while !running() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the command never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let killed = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()
            .expect("kill");
        assert!(killed.success());
        let _ = child.wait();
        let at = std::time::Instant::now();
        while running() {
            assert!(
                at.elapsed() < std::time::Duration::from_secs(1),
                "the command outlived agentcaps ({signal}) by more than a second"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
