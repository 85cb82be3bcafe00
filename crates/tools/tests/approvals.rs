//! Approvals through the library: a [`Toolbox`] with a host [`Approver`].
//! The default refuses (naming `approval-unavailable`); a question is asked
//! only for a rule the policy lists; a "yes" lets exactly the refusal asked
//! about through; a slow approver is a timeout; each question is recorded.
#![allow(missing_docs)]
#![cfg(unix)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentcaps_tools::{Answer, AnswerFuture, Approver, Question, Stop, Toolbox};
use serde_json::json;

/// Answers from a script and keeps every question.
#[derive(Default)]
struct Scripted {
    answers: Mutex<Vec<Answer>>,
    questions: Mutex<Vec<Question>>,
    delay: Duration,
}

impl Scripted {
    fn new(answers: Vec<Answer>) -> Arc<Self> {
        Arc::new(Self {
            answers: Mutex::new(answers),
            ..Self::default()
        })
    }

    fn asked(&self) -> Vec<Question> {
        self.questions.lock().expect("lock").clone()
    }
}

impl Approver for Scripted {
    fn ask<'a>(&'a self, question: &'a Question) -> AnswerFuture<'a> {
        self.questions.lock().expect("lock").push(question.clone());
        let answer = {
            let mut answers = self.answers.lock().expect("lock");
            if answers.is_empty() {
                Answer::Decline
            } else {
                answers.remove(0)
            }
        };
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            answer
        })
    }

    fn who(&self) -> String {
        "scripted".to_owned()
    }
}

struct Project {
    _dir: tempfile::TempDir,
    toolbox: Toolbox,
}

fn project(approvals: &str) -> Project {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("names.txt"), "b\na\n").expect("write");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    let policy = agentcaps::Policy::from_toml(
        &format!("[files]\nallowed = [\".\"]\n[shell]\nworking_directory = \".\"\n{approvals}"),
        &root,
    )
    .expect("policy");
    let toolbox = Toolbox::new(&policy, &root).expect("toolbox");
    Project { _dir: dir, toolbox }
}

const ASK: &str = "[approvals]\nask = [\"not-allowed-program\"]\ntimeout_ms = 800\n";

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn the_default_approver_refuses_naming_approval_unavailable() {
    let p = project(ASK);
    let err = rt()
        .block_on(
            p.toolbox
                .call("shell_command", json!({"argv": ["sort", "names.txt"]})),
        )
        .expect_err("no one to ask");
    assert_eq!(err.rule(), "approval-unavailable");
    assert!(err.is_refusal());
    let text = err.to_model_text();
    assert!(text.contains("not-allowed-program"), "{text}");
    insta::assert_snapshot!("approval_unavailable", text);
}

#[test]
fn nothing_is_asked_without_the_rule_in_ask() {
    let p = project("");
    let person = Scripted::new(vec![Answer::Approve { remember: false }]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let err = rt()
        .block_on(toolbox.call("shell_command", json!({"argv": ["sort", "names.txt"]})))
        .expect_err("refused");
    assert_eq!(err.rule(), "not-allowed-program");
    assert!(person.asked().is_empty());
    // A listed rule, but a refusal under another one: not asked either.
    let p = project(ASK);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let err = rt()
        .block_on(toolbox.call("shell_command", json!({"command": "cat names.txt | sort"})))
        .expect_err("refused");
    assert_eq!(err.rule(), "shell-operator");
    let err = rt()
        .block_on(toolbox.call("shell_command", json!({"argv": ["cat", "/etc/passwd"]})))
        .expect_err("refused");
    assert_eq!(err.rule(), "path");
    assert!(person.asked().is_empty());
}

#[test]
fn a_question_names_the_exact_action_and_its_digest() {
    let p = project(ASK);
    let person = Scripted::new(vec![
        Answer::Approve { remember: false },
        Answer::Approve { remember: false },
        Answer::Approve { remember: false },
    ]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    for args in [
        json!({"argv": ["sort", "names.txt"]}),
        json!({"command": "sort names.txt", "cwd": "."}),
        json!({"argv": ["sort", "names.txt"], "cwd": "sub"}),
    ] {
        let _ = rt.block_on(toolbox.call("shell_command", args));
    }
    let asked = person.asked();
    assert_eq!(asked.len(), 3);
    let q = &asked[0];
    assert_eq!((q.tool, q.rule), ("shell_command", "not-allowed-program"));
    assert!(q.action.summary.contains("`sort names.txt`"), "{q:?}");
    assert_eq!(q.action.digest.len(), 64);
    assert_eq!(q.timeout, Duration::from_millis(800));
    assert!(!q.may_remember);
    // The same argv in the same directory, however spelled, is one action;
    // in another directory it is another.
    assert_eq!(asked[0].action.digest, asked[1].action.digest);
    assert_ne!(asked[0].action.digest, asked[2].action.digest);
}

#[test]
fn a_yes_covers_the_refusal_asked_about_and_nothing_else() {
    let p = project("[approvals]\nask = [\"not-allowed-program\"]\n");
    // `env` approved as a program is still a launcher; `sort` approved
    // with a file outside the root is still a path refusal.
    let person = Scripted::new(vec![
        Answer::Approve { remember: true },
        Answer::Approve { remember: true },
    ]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    let err = rt
        .block_on(toolbox.call(
            "shell_command",
            json!({"argv": ["env", "cat", "names.txt"]}),
        ))
        .expect_err("launcher");
    assert_eq!(err.rule(), "launcher", "{err}");
    let err = rt
        .block_on(toolbox.call("shell_command", json!({"argv": ["sort", "/etc/passwd"]})))
        .expect_err("outside");
    assert_eq!(err.rule(), "path", "{err}");
    assert_eq!(person.asked().len(), 2);
}

#[test]
fn a_slow_answer_is_a_timeout_at_the_policys_time() {
    let p = project(ASK);
    let person = Arc::new(Scripted {
        answers: Mutex::new(vec![Answer::Approve { remember: false }]),
        delay: Duration::from_secs(5),
        ..Scripted::default()
    });
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let started = Instant::now();
    let err = rt()
        .block_on(toolbox.call("shell_command", json!({"argv": ["sort", "names.txt"]})))
        .expect_err("timed out");
    let took = started.elapsed();
    assert_eq!(err.rule(), "not-allowed-program");
    assert!(err.to_model_text().contains("no answer in time"), "{err}");
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(4),
        "{took:?}"
    );
}

#[test]
fn the_record_has_one_entry_per_question() {
    let p = project("[approvals]\nask = [\"not-allowed-program\"]\nremember = \"session\"\n");
    let person = Scripted::new(vec![Answer::Approve { remember: true }, Answer::Cancel]);
    let rt = rt();
    let call = |argv: serde_json::Value| {
        rt.block_on(p.toolbox.call_recorded_with(
            "shell_command",
            json!({ "argv": argv }),
            &Stop::default(),
            person.as_ref(),
        ))
    };
    let (first, record) = call(json!(["sort", "names.txt"]));
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(record.decision, "allow");
    let answers: Vec<_> = record
        .approvals
        .iter()
        .map(|a| (a.answer, a.client.as_str()))
        .collect();
    assert_eq!(answers, [("approved-session", "scripted")]);
    let (again, record) = call(json!(["sort", "names.txt"]));
    assert!(again.is_ok());
    assert_eq!(record.approvals[0].answer, "remembered");
    let (other, record) = call(json!(["sort", "-r", "names.txt"]));
    assert_eq!(other.expect_err("cancelled").rule(), "not-allowed-program");
    assert_eq!(
        (record.decision, record.rule),
        ("deny", "not-allowed-program")
    );
    assert_eq!(record.approvals[0].answer, "cancelled");
    assert_eq!(person.asked().len(), 2);
    // The call-log line carries the digest, never the arguments.
    let line = agentcaps_tools::CallLog::approval_line(&record.approvals[0]);
    assert!(
        line.contains("\"event\":\"approval\"") && !line.contains("names.txt"),
        "{line}"
    );
}

#[test]
fn refusal_texts_of_answers() {
    let p = project(ASK);
    let rt = rt();
    for (name, answer) in [
        ("approval_declined", Answer::Decline),
        ("approval_cancelled", Answer::Cancel),
    ] {
        let toolbox = p.toolbox.clone().with_approver(Scripted::new(vec![answer]));
        let err = rt
            .block_on(toolbox.call("shell_command", json!({"argv": ["sort", "names.txt"]})))
            .expect_err(name);
        insta::assert_snapshot!(name, err.to_model_text());
    }
}

#[test]
fn a_question_cannot_be_dressed_up_by_the_agent() {
    // Terminal escapes, a carriage return and bidi overrides in argv would
    // let an agent make the person read another action than the one asked.
    let p = project(ASK);
    let person = Scripted::new(vec![Answer::Decline]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let sneaky = "names.txt\r\u{1b}[2K\u{1b}[1Arun `cat notes.txt`\u{202e}txt.\u{2066}";
    let _ = rt().block_on(toolbox.call("shell_command", json!({"argv": ["sort", sneaky]})));
    let asked = person.asked();
    assert_eq!(asked.len(), 1);
    let text = asked[0].text();
    for c in ['\r', '\u{1b}', '\u{202e}', '\u{2066}'] {
        assert!(!text.contains(c), "{c:?} reaches the person: {text:?}");
    }
    assert!(
        text.contains("\\u{1b}") && text.contains("\\u{202e}"),
        "{text}"
    );
    // The digest is still of the exact words.
    assert_eq!(asked[0].action.digest.len(), 64);
}

#[test]
fn a_new_session_remembers_no_approval_of_another() {
    let p = project("[approvals]\nask = [\"not-allowed-program\"]\nremember = \"session\"\n");
    let person = Scripted::new(vec![Answer::Approve { remember: true }]);
    let first = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    let args = || json!({"argv": ["sort", "names.txt"]});
    assert!(rt.block_on(first.call("shell_command", args())).is_ok());
    // Its clones share the session: not asked again.
    assert!(
        rt.block_on(first.clone().call("shell_command", args()))
            .is_ok()
    );
    assert_eq!(person.asked().len(), 1);
    // Another session is asked (and the script now declines).
    let other = first.new_session();
    let err = rt
        .block_on(other.call("shell_command", args()))
        .expect_err("asked again and declined");
    assert!(err.to_model_text().contains("declined"), "{err}");
    assert_eq!(person.asked().len(), 2);
}

/// A project whose policy asks about `rules`, with a git directory.
fn asking(rules: &str) -> (Project, std::path::PathBuf) {
    let p = project(&format!(
        "[approvals]\nask = [{rules}]\nremember = \"session\"\n"
    ));
    let root = p.toolbox.base().to_path_buf();
    std::fs::create_dir_all(root.join(".git/hooks")).expect("hooks");
    (p, root)
}

#[test]
fn an_unknown_option_is_asked_about_and_reaches_the_program() {
    let (p, _) = asking("\"unknown-option\"");
    let person = Scripted::new(vec![Answer::Approve { remember: true }, Answer::Decline]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    let call = |argv: serde_json::Value| {
        rt.block_on(toolbox.call("shell_command", json!({ "argv": argv })))
    };
    // The real `wc` gets the option and says it does not know it: the
    // command ran, with its argv as approved.
    let ran = call(json!(["wc", "--frobnicate", "names.txt"])).expect("approved");
    let stderr = ran.structured["stderr"].as_str().unwrap_or_default();
    assert!(stderr.contains("frobnicate"), "{}", ran.structured);
    let asked = person.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].rule, "unknown-option");
    assert!(
        asked[0]
            .action
            .summary
            .contains("`wc --frobnicate names.txt`"),
        "{:?}",
        asked[0]
    );
    // Remembered for the session: not asked again.
    assert!(call(json!(["wc", "--frobnicate", "names.txt"])).is_ok());
    assert_eq!(person.asked().len(), 1);
    // Another option is another action: asked (and declined).
    let err = call(json!(["wc", "--other", "names.txt"])).expect_err("declined");
    assert!(err.to_model_text().contains("declined"), "{err}");
    assert_eq!(person.asked().len(), 2);
    // Approved, the option still leaves the next word judged as a file.
    let person = Scripted::new(vec![Answer::Approve { remember: false }]);
    let toolbox = p.toolbox.new_session().with_approver(person.clone());
    let err = rt
        .block_on(toolbox.call(
            "shell_command",
            json!({"argv": ["wc", "--frobnicate", "/etc/passwd"]}),
        ))
        .expect_err("outside");
    assert_eq!(err.rule(), "path", "{err}");
}

#[test]
fn an_option_a_yes_could_not_let_through_is_not_asked() {
    let (p, _) = asking("\"unknown-option\"");
    let person = Scripted::new(vec![Answer::Approve { remember: false }]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    for argv in [
        // A value attached, a cluster: never waivable.
        json!(["wc", "--frobnicate=names.txt", "names.txt"]),
        json!(["wc", "-lZ", "names.txt"]),
        // Given twice: a waiver would not let it through, so a yes could
        // not help and nothing is asked.
        json!(["wc", "--frobnicate", "--", "--frobnicate", "names.txt"]),
    ] {
        let err = rt
            .block_on(toolbox.call("shell_command", json!({ "argv": argv })))
            .expect_err("refused");
        assert_eq!(err.rule(), "unknown-option", "{err}");
    }
    assert!(person.asked().is_empty(), "{:?}", person.asked());
}

#[test]
fn a_protected_write_is_asked_about_for_its_exact_location() {
    let (p, root) = asking("\"write-protected\"");
    let person = Scripted::new(vec![
        Answer::Approve { remember: true },
        Answer::Decline,
        Answer::Approve { remember: false },
    ]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    let write = |path: &str, content: &str| {
        rt.block_on(toolbox.call(
            "write_file",
            json!({"path": path, "content": content, "overwrite": true}),
        ))
    };
    write(".git/hooks/pre-commit", "#!/bin/sh\necho approved\n").expect("approved");
    assert_eq!(
        std::fs::read_to_string(root.join(".git/hooks/pre-commit")).expect("landed"),
        "#!/bin/sh\necho approved\n"
    );
    let asked = person.asked();
    assert_eq!(
        (asked[0].tool, asked[0].rule),
        ("write_file", "write-protected")
    );
    assert_eq!(asked[0].action.kind, "path");
    assert_eq!(
        asked[0].action.summary,
        format!("write {}", root.join(".git/hooks/pre-commit").display())
    );
    // Remembered: the same location again is not asked (`./` spelled or not).
    write("./.git/hooks/pre-commit", "#!/bin/sh\necho again\n").expect("remembered");
    assert_eq!(person.asked().len(), 1);
    // Another file under the same protected glob is another action.
    let err = write(".git/hooks/post-checkout", "x").expect_err("declined");
    assert_eq!(err.rule(), "write-protected");
    assert!(err.to_model_text().contains("declined"), "{err}");
    assert!(!root.join(".git/hooks/post-checkout").exists());
    // edit_file asks about its path too.
    let edited = rt.block_on(toolbox.call(
        "edit_file",
        json!({"path": ".git/hooks/pre-commit", "old_text": "again", "new_text": "edited"}),
    ));
    assert!(edited.is_ok(), "{edited:?}");
    assert_eq!(
        person.asked().len(),
        2,
        "the remembered location is not asked again"
    );
    // A dry run writes nothing, so it asks nothing.
    let dry = rt.block_on(toolbox.call(
        "edit_file",
        json!({"path": ".git/hooks/post-checkout", "old_text": "a", "new_text": "b", "dry_run": true}),
    ));
    assert_eq!(dry.expect_err("refused").rule(), "write-protected");
    assert_eq!(person.asked().len(), 2);
    let _ = write;
}

#[test]
fn a_protected_write_of_another_path_or_a_blocked_one_is_not_asked() {
    let (p, root) = asking("\"write-protected\"");
    let person = Scripted::new(vec![Answer::Approve { remember: false }; 4]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    // A symbolic link to a protected file is judged where it lands: the
    // question names the real location, not the spelling.
    std::os::unix::fs::symlink(".git/hooks", root.join("hooks")).expect("link");
    let written = rt.block_on(toolbox.call(
        "write_file",
        json!({"path": "hooks/pre-push", "content": "x"}),
    ));
    let asked = person.asked();
    assert_eq!(asked.len(), 1, "{written:?}");
    assert_eq!(
        asked[0].action.summary,
        format!("write {}", root.join(".git/hooks/pre-push").display())
    );
    // A blocked file (a secret) is never asked about.
    let err = rt
        .block_on(toolbox.call("write_file", json!({"path": ".env", "content": "x"})))
        .expect_err("blocked");
    assert_eq!(err.rule(), "blocked", "{err}");
    assert_eq!(person.asked().len(), 1, "{:?}", person.asked());
}

#[test]
fn without_the_rule_listed_a_protected_write_is_refused_unasked() {
    let (p, root) = asking("\"not-allowed-program\"");
    let person = Scripted::new(vec![Answer::Approve { remember: false }]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let err = rt()
        .block_on(toolbox.call(
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "x"}),
        ))
        .expect_err("refused");
    assert_eq!(err.rule(), "write-protected");
    assert!(person.asked().is_empty());
    assert!(!root.join(".git/hooks/pre-commit").exists());
}

mod common;

/// A project whose `http_request` may reach only `allowed.example.com`,
/// with every name resolved to a loopback web server by a loopback DNS
/// server.
fn web(remember: &str) -> (Project, u16) {
    let port = common::http_server();
    let dns = common::dns_server();
    let p = project(&format!(
        "[egress]\nallowed_domains = [\"allowed.example.com\"]\nallowed_cidrs = [\"127.0.0.0/8\"]\n\
         allowed_ports = [{port}]\ndns_servers = [\"127.0.0.1:{dns}\"]\n\
         [approvals]\nask = [\"name.not-allowed\"]\nremember = \"{remember}\"\n"
    ));
    (p, port)
}

#[test]
fn a_request_to_a_host_not_listed_is_asked_about_by_method_and_url() {
    let (p, port) = web("session");
    let person = Scripted::new(vec![Answer::Approve { remember: true }, Answer::Decline]);
    let toolbox = p.toolbox.clone().with_approver(person.clone());
    let rt = rt();
    let get = |url: String| rt.block_on(toolbox.call("http_request", json!({ "url": url })));
    let url = format!("http://other.example.com:{port}/page");
    let got = get(url.clone()).expect("approved");
    assert_eq!(got.structured["status"], 200, "{}", got.structured);
    let asked = person.asked();
    assert_eq!(
        (asked[0].tool, asked[0].rule),
        ("http_request", "name.not-allowed")
    );
    assert_eq!(asked[0].action.kind, "request");
    assert_eq!(asked[0].action.summary, format!("send GET {url}"));
    // Remembered: the same request is not asked again.
    assert!(get(url).is_ok());
    assert_eq!(person.asked().len(), 1);
    // Another URL of the same host is another action: asked, declined.
    let err = get(format!("http://other.example.com:{port}/else")).expect_err("declined");
    assert_eq!(err.rule(), "name.not-allowed");
    assert!(err.to_model_text().contains("declined"), "{err}");
    assert_eq!(person.asked().len(), 2);
    // The listed host needs no question.
    assert!(get(format!("http://allowed.example.com:{port}/")).is_ok());
    assert_eq!(person.asked().len(), 2);
}

#[test]
fn without_a_person_a_request_to_a_host_not_listed_names_approval_unavailable() {
    let (p, port) = web("once");
    let err = rt()
        .block_on(p.toolbox.call(
            "http_request",
            json!({"url": format!("http://other.example.com:{port}/")}),
        ))
        .expect_err("no one to ask");
    assert_eq!(err.rule(), "approval-unavailable");
    assert!(err.to_model_text().contains("name.not-allowed"), "{err}");
}
