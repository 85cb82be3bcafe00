//! The macOS Seatbelt profile, tested where no Mac is: its text
//! (snapshots), its well-formedness (an SBPL checker, itself tested
//! below), and its meaning, by evaluating it with Seatbelt's rule (the
//! last matching rule decides) for paths a command might touch.
#![cfg(feature = "runner")]
#![allow(missing_docs)]

#[path = "seatbelt/sbpl.rs"]
mod sbpl;

use std::path::Path;

use agentcaps_shell::kernel::KernelRules;
use agentcaps_shell::kernel::seatbelt::{self, profile};
use sbpl::{Expr, check, check_ere};

const PROJECT: &str = "/Users/dev/project";
const DOCS: &str = "/Users/dev/docs";

/// The built-in blocked and write-protected lists (they do not depend on
/// the root).
fn default_lists() -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let policy = agentcaps_paths::PathPolicy::builder()
        .allow(dir.path())
        .block("/Users/dev/project/private")
        .build()
        .unwrap();
    (
        policy.blocked().map(str::to_owned).collect(),
        policy.write_protected().map(str::to_owned).collect(),
    )
}

/// A writable project, read-only docs, `git` as the program.
fn project_rules() -> KernelRules {
    KernelRules::from_roots(Some([(PROJECT, true), (DOCS, false)])).with_program("/usr/bin/git")
}

fn project_profile(network: bool) -> String {
    let (blocked, protected) = default_lists();
    profile(
        &project_rules().with_network(network),
        blocked.iter().map(String::as_str),
        protected.iter().map(String::as_str),
    )
}

// ---- The checker itself -------------------------------------------------

#[test]
fn the_checker_accepts_a_well_formed_profile() {
    let text = r#"(version 1)
; a comment
(deny default)
(allow file-read* (subpath "/usr") (literal "/dev/null"))
(allow file-write* (require-all (subpath "/tmp/x") (require-not (regex #"^/tmp/x/\.git(/.*)?$"))))
(allow signal (target same-sandbox))
(allow mach-lookup (global-name "com.apple.system.logger"))
(allow network-outbound (remote ip "localhost:*"))
"#;
    let forms = check(text).unwrap();
    assert_eq!(forms.len(), 7);
    assert_eq!(
        forms[2],
        Expr::List(vec![
            Expr::Symbol("allow".into()),
            Expr::Symbol("file-read*".into()),
            Expr::List(vec![
                Expr::Symbol("subpath".into()),
                Expr::Str("/usr".into())
            ]),
            Expr::List(vec![
                Expr::Symbol("literal".into()),
                Expr::Str("/dev/null".into())
            ]),
        ])
    );
}

#[test]
fn the_checker_refuses_what_seatbelt_would() {
    let bad = [
        ("(version 1)\n(deny default", "unclosed"),
        ("(version 1)\n(deny default))", "unbalanced"),
        ("(deny default)", "version 1"),
        ("(version 2)\n(deny default)", "version 1"),
        ("(version 1)\n(allow file-read* (subpath \"/usr))", "string"),
        (
            "(version 1)\n(allow file-reed* (subpath \"/usr\"))",
            "unknown operation",
        ),
        (
            "(version 1)\n(allow file-read* (subdir \"/usr\"))",
            "unknown filter",
        ),
        (
            "(version 1)\n(allow file-read* (subpath \"/a\" \"/b\"))",
            "takes 1",
        ),
        (
            "(version 1)\n(allow file-read* (subpath \"usr\"))",
            "absolute",
        ),
        ("(version 1)\n(allow file-read* (regex \"^/a\"))", "takes #"),
        (
            "(version 1)\n(allow file-read* (regex #\"^/a(?:b)$\"))",
            "(?",
        ),
        (
            "(version 1)\n(allow file-read* (regex #\"^/a\\d$\"))",
            "ERE escape",
        ),
        (
            "(version 1)\n(allow file-read* (regex #\"^/a(b$\"))",
            "unclosed `(`",
        ),
        (
            "(version 1)\n(allow file-read* (regex #\"^/a[b$\"))",
            "unclosed `[`",
        ),
        (
            "(version 1)\n(allow file-read* (regex #\"*a\"))",
            "quantifier",
        ),
        (
            "(version 1)\n(allow file-read* (literal \"/a\\q\"))",
            "escape",
        ),
        (
            "(version 1)\n(allow (subpath \"/usr\"))",
            "without an operation",
        ),
        ("(version 1)\n(deny default (subpath \"/usr\"))", "default"),
        ("(version 1)\n(permit file-read*)", "allow or deny"),
        (
            "(version 1)\n(allow signal (target everyone))",
            "does not take",
        ),
        ("(version 1)\n(allow file-read* {subpath})", "not a symbol"),
    ];
    for (text, says) in bad {
        let err = check(text).expect_err(text);
        assert!(err.contains(says), "{text:?}: {err}");
    }
}

#[test]
fn the_ere_check_knows_posix_from_perl() {
    for good in [
        r"^(/.*)?/\.env[^/]*(/.*)?$",
        r"^/a[]x]b$",
        r"^/a(x|y)+$",
        r"^/a\*$",
    ] {
        check_ere(good).unwrap_or_else(|e| panic!("{good}: {e}"));
    }
    for bad in [r"^/a\w$", r"^/a.*?$", r"(?i)^/a$", r"^/a)$", r"^/a\"] {
        assert!(check_ere(bad).is_err(), "{bad}");
    }
}

// ---- The profiles -------------------------------------------------------

#[test]
fn a_project_profile_is_well_formed_and_stable() {
    let text = project_profile(false);
    check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    insta::assert_snapshot!("project_no_network", text);
}

#[test]
fn a_profile_with_network_is_well_formed_and_stable() {
    let text = project_profile(true);
    check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    insta::assert_snapshot!("project_network", text);
}

#[test]
fn a_profile_without_a_path_policy_restricts_only_the_rest() {
    let rules = KernelRules::from_roots(None::<[(&str, bool); 0]>).with_program("/bin/ls");
    let text = profile(&rules, [], []);
    check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    insta::assert_snapshot!("no_path_policy", text);
    let model = Model::new(&text);
    assert!(model.allows("file-read-data", "/Users/dev/anything"));
    assert!(!model.allows("network-outbound", ""));
}

#[test]
fn odd_names_are_quoted_not_interpreted() {
    let rules = KernelRules::from_roots(Some([(r#"/Users/dev/a "q" \ b)"#, true)]));
    let text = profile(&rules, ["**/x\"y(*", "/Users/dev/a \"q\" \\ b)/z"], []);
    check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let model = Model::new(&text);
    let root = r#"/Users/dev/a "q" \ b)"#;
    assert!(model.allows("file-write-data", &format!("{root}/f")));
    assert!(!model.allows("file-read-data", &format!("{root}/z/f")));
    assert!(!model.allows("file-read-data", &format!("{root}/x\"y(abc")));
}

// ---- What developer tools need, checked statically -----------------------

/// Every string and regex literal of a profile, and the number of filters.
fn literals(forms: &[Expr]) -> (Vec<String>, usize) {
    fn walk(expr: &Expr, out: &mut Vec<String>, filters: &mut usize, depth: usize) {
        match expr {
            Expr::Str(s) | Expr::Regex(s) => out.push(s.clone()),
            Expr::List(items) => {
                if depth > 0 {
                    *filters += 1;
                }
                for item in items {
                    walk(item, out, filters, depth + 1);
                }
            }
            Expr::Symbol(_) | Expr::Number(_) => {}
        }
    }
    let (mut out, mut filters) = (Vec::new(), 0);
    for form in forms {
        walk(form, &mut out, &mut filters, 0);
    }
    (out, filters)
}

/// The static checks every generated profile passes: the operations and
/// services developer tools need are there (with the network ones when
/// `networked`), every path is in its `/private/...` form, no string is
/// a kilobyte long, and the rule count stays small.
fn check_needs(text: &str, networked: bool, resolver: bool) {
    let forms = check(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for needed in [
        "(allow process-info* (target same-sandbox))",
        "(allow signal (target same-sandbox))",
        "(allow file-read-metadata)\n",
        "file-map-executable",
        "(allow pseudo-tty)",
        "(allow ipc-posix-sem)",
        "(allow ipc-posix-shm-read* (ipc-posix-name-prefix \"apple.cfprefs.\"))",
        "(allow user-preference-read)",
        "(literal \"/dev/dtracehelper\")",
        "(regex #\"^/dev/fd/[0-9]+$\")",
        "(literal \"/dev/ptmx\")",
    ] {
        assert!(text.contains(needed), "missing {needed:?}:\n{text}");
    }
    let services = [
        "com.apple.system.opendirectoryd.libinfo",
        "com.apple.cfprefsd.daemon",
        "com.apple.cfprefsd.agent",
        "com.apple.bsd.dirhelper",
        "com.apple.system.logger",
    ];
    let network = [
        "com.apple.SecurityServer",
        "com.apple.trustd.agent",
        "com.apple.ocspd",
        "com.apple.SystemConfiguration.configd",
        "com.apple.SystemConfiguration.DNSConfiguration",
    ];
    for service in services {
        assert!(
            text.contains(&format!("(global-name \"{service}\")")),
            "{service}"
        );
    }
    for service in network {
        assert_eq!(
            text.contains(&format!("(global-name \"{service}\")")),
            networked,
            "{service}"
        );
    }
    assert_eq!(
        text.contains("(global-name \"com.apple.dnssd.service\")"),
        resolver
    );
    assert_eq!(
        text.contains("(allow network-outbound (literal \"/private/var/run/mDNSResponder\"))"),
        resolver
    );
    let (strings, filters) = literals(&forms);
    for s in &strings {
        assert!(s.len() < 1024, "a string of {} bytes: {s}", s.len());
        // A regex names its path after `^`; a string is the path itself.
        let path = s.trim_start_matches('^');
        for link in ["/tmp", "/var", "/etc"] {
            let beneath = path.starts_with(&format!("{link}/"))
                || path.starts_with(&format!("{link}(/"))
                || path.starts_with(&format!("{link}\\/"));
            assert!(!beneath, "{s} names {link} without /private");
        }
    }
    assert!(filters < 1000, "{filters} filters");
}

#[test]
fn every_profile_gives_what_developer_tools_need() {
    let (blocked, protected) = default_lists();
    let lists = || {
        (
            blocked.iter().map(String::as_str),
            protected.iter().map(String::as_str),
        )
    };
    let tmp = Path::new("/private/var/folders/xy/abc/T/agentcaps-tmp-1");
    for (rules, networked, resolver) in [
        (project_rules(), false, false),
        (project_rules().with_network(true), true, true),
        (project_rules().with_connect_port(41234), true, false),
    ] {
        let (b, p) = lists();
        check_needs(
            &seatbelt::profile_with_tmp(&rules, Some(tmp), b, p),
            networked,
            resolver,
        );
        let (b, p) = lists();
        check_needs(&profile(&rules, b, p), networked, resolver);
    }
    let bare = KernelRules::from_roots(None::<[(&str, bool); 0]>).with_program("/bin/ls");
    let text = profile(&bare, [], []);
    check(&text).unwrap();
    for needed in [
        "(allow ipc-posix-sem)",
        "(allow pseudo-tty)",
        "com.apple.bsd.dirhelper",
    ] {
        assert!(text.contains(needed), "{needed}");
    }
}

#[test]
fn the_static_checks_catch_what_they_look_for() {
    let (blocked, protected) = default_lists();
    let text = profile(
        &project_rules(),
        blocked.iter().map(String::as_str),
        protected.iter().map(String::as_str),
    );
    // Each change below breaks one check; the checks must notice.
    let broken = [
        text.replace("(allow ipc-posix-sem)\n", ""),
        text.replace("com.apple.bsd.dirhelper", "com.apple.other"),
        text.replace("/private/etc/passwd", "/etc/passwd"),
        text.replace(
            "(allow pseudo-tty)",
            &format!("(allow file-read* (literal \"/{}\"))", "a".repeat(1100)),
        ),
    ];
    for bad in broken {
        let caught = std::panic::catch_unwind(|| check_needs(&bad, false, false));
        assert!(caught.is_err(), "not caught:\n{bad}");
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "the /private rewriting reads the roots as Unix paths (`/tmp/work`), which Windows takes as relative to a drive; the profile only ever runs on macOS"
)]
fn paths_through_the_top_links_are_written_beneath_private() {
    let rules = KernelRules::from_roots(Some([("/tmp/work", true), ("/var/data", false)]))
        .with_program("/usr/bin/cc");
    let text = seatbelt::profile_with_tmp(
        &rules,
        Some(Path::new("/var/folders/xy/T/agentcaps-tmp-1")),
        ["/etc/secret", "/tmp/work/**/*.key"],
        [],
    );
    check_needs(&text, false, false);
    let model = Model::new(&text);
    assert!(model.allows("file-write-data", "/private/tmp/work/a.c"));
    assert!(model.allows("file-read-data", "/private/var/data/x"));
    assert!(!model.allows("file-write-data", "/private/var/data/x"));
    assert!(model.allows(
        "file-write-create",
        "/private/var/folders/xy/T/agentcaps-tmp-1/cc1.s"
    ));
    assert!(!model.allows("file-write-create", "/private/var/folders/xy/T/other"));
    assert!(!model.allows("file-read-data", "/private/etc/secret/x"));
    assert!(!model.allows("file-read-data", "/private/tmp/work/sub/server.key"));
}

#[test]
fn a_blocked_entry_too_long_for_a_string_denies_the_roots_whole() {
    let long = format!("**/{}*", "n".repeat(400));
    let text = profile(&project_rules(), [long.as_str()], []);
    check_needs(&text, false, false);
    let model = Model::new(&text);
    assert!(!model.allows("file-read-data", "/Users/dev/project/src/main.rs"));
    assert!(!model.allows("file-write-data", "/Users/dev/project/src/main.rs"));
    assert!(!model.allows("file-read-data", "/Users/dev/docs/guide.md"));
    // The runtime stays readable: programs still start, and fail on the
    // roots with EPERM.
    assert!(model.allows("file-read-data", "/usr/lib/libSystem.B.dylib"));
}

#[test]
fn the_private_tmpdir_is_made_for_the_run_and_removed_after_it() {
    let base = tempfile::tempdir().unwrap();
    let tmp = seatbelt::PrivateTmp::create_in(base.path()).unwrap();
    let path = tmp.path().to_path_buf();
    assert!(path.starts_with(base.path().canonicalize().unwrap()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
    let other = seatbelt::PrivateTmp::create_in(base.path()).unwrap();
    assert_ne!(other.path(), path);
    assert_eq!(tmp.env(), ("TMPDIR".into(), path.clone().into_os_string()));
    std::fs::create_dir(path.join("cc-dir")).unwrap();
    std::fs::write(path.join("cc-dir/a.o"), "x").unwrap();
    drop(tmp);
    assert!(!path.exists());
    assert!(other.path().exists());
}

// ---- What the profile means ---------------------------------------------

#[test]
fn reads_are_limited_to_the_runtime_the_program_and_the_roots() {
    let model = Model::new(&project_profile(false));
    for path in [
        "/usr/lib/libSystem.B.dylib",
        "/System/Library/Frameworks/Foundation.framework/Foundation",
        "/usr/bin/git",
        "/private/etc/passwd",
        "/Users/dev/project/src/main.rs",
        "/Users/dev/docs/guide.md",
    ] {
        assert!(model.allows("file-read-data", path), "{path}");
    }
    for path in [
        "/Users/dev/.ssh/config",
        "/Users/dev/.zsh_history",
        "/Users/other/notes",
        "/private/etc/sudoers",
        "/private/var/folders/xy/secret",
        "/Library/Keychains/System.keychain",
    ] {
        assert!(!model.allows("file-read-data", path), "{path}");
    }
    for device in ["/dev/null", "/dev/urandom", "/dev/tty"] {
        assert!(model.allows("file-read-data", device), "{device}");
    }
    assert!(!model.allows("file-read-data", "/dev/disk0"));
    // The directories above a root can be looked at, not listed.
    assert!(model.allows("file-read-metadata", "/Users/dev"));
    assert!(!model.allows("file-read-data", "/Users/dev"));
    assert!(!model.allows("process-exec", "/Users/other/tool"));
    assert!(model.allows("process-exec", "/Users/dev/project/target/debug/app"));
}

#[test]
fn blocked_entries_are_denied_inside_the_roots_at_any_depth() {
    let model = Model::new(&project_profile(false));
    for path in [
        "/Users/dev/project/.env",
        "/Users/dev/project/api/.env.local",
        "/Users/dev/project/.env/inner",
        "/Users/dev/project/certs/server.pem",
        "/Users/dev/project/id_rsa",
        "/Users/dev/project/.ssh/known_hosts",
        "/Users/dev/docs/.aws/credentials",
        "/Users/dev/project/private/notes",
        "/Users/dev/project/.ENV",
        "/Users/dev/project/Key.PEM",
    ] {
        assert!(!model.allows("file-read-data", path), "read {path}");
        assert!(!model.allows("file-write-data", path), "write {path}");
    }
    for path in ["/Users/dev/project/env", "/Users/dev/project/x.env"] {
        assert!(model.allows("file-read-data", path), "{path}");
    }
}

#[test]
fn writes_only_beneath_writable_roots_minus_protected_names() {
    let model = Model::new(&project_profile(false));
    for path in [
        "/Users/dev/project/src/main.rs",
        "/Users/dev/project/.git/objects/ab/cdef",
        "/dev/null",
    ] {
        assert!(model.allows("file-write-data", path), "{path}");
    }
    for path in [
        "/Users/dev/docs/guide.md",
        "/Users/dev/.zshrc",
        "/usr/local/bin/tool",
        "/Users/dev/project/.git/hooks/pre-commit",
        "/Users/dev/project/.git/config",
        "/Users/dev/project/.envrc",
        "/Users/dev/project/sub/.vscode/tasks.json",
        "/Users/dev/project/.github/workflows/ci.yml",
        "/Users/dev/project/.cargo/config.toml",
        "/Users/dev/project/.ENVRC",
        "/Users/dev/project/.Git/Hooks/post-checkout",
    ] {
        assert!(!model.allows("file-write-data", path), "{path}");
        assert!(!model.allows("file-write-create", path), "{path}");
    }
    // Protected for writing, still readable (git reads its own config).
    assert!(model.allows("file-read-data", "/Users/dev/project/.git/config"));
}

#[test]
fn network_is_denied_unless_the_policy_gives_it() {
    let closed = Model::new(&project_profile(false));
    let open = Model::new(&project_profile(true));
    for op in ["network-outbound", "network-bind", "network-inbound"] {
        assert!(!closed.allows(op, ""), "{op}");
        assert!(open.allows(op, ""), "{op}");
    }
}

#[test]
fn the_proxy_port_is_the_only_way_out() {
    let (blocked, protected) = default_lists();
    let rules = project_rules().with_connect_port(41234);
    let text = profile(
        &rules,
        blocked.iter().map(String::as_str),
        protected.iter().map(String::as_str),
    );
    check(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        text.contains("(allow network-outbound (remote tcp \"localhost:41234\"))"),
        "{text}"
    );
    let model = Model::new(&text);
    assert!(!model.allows("network-bind", ""));
    assert!(!model.allows("network-inbound", ""));
}

#[test]
fn a_rejected_profile_is_recognised_and_an_ordinary_failure_is_not() {
    use agentcaps_shell::Exit;
    let said = "sandbox-exec: unbound variable: fil-read*\n";
    assert_eq!(
        seatbelt::rejection(Exit::Code(seatbelt::REJECTED_EXIT), said).as_deref(),
        Some("unbound variable: fil-read*")
    );
    assert_eq!(seatbelt::rejection(Exit::Code(1), said), None);
    assert_eq!(
        seatbelt::rejection(Exit::Code(seatbelt::REJECTED_EXIT), "usage: cmd\n"),
        None
    );
}

/// Seatbelt's decision for one operation on one path, by its rule: the
/// last rule whose operation and filters match decides.
struct Model {
    rules: Vec<(bool, Vec<String>, Vec<Expr>)>,
}

impl Model {
    fn new(text: &str) -> Self {
        let forms = check(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let rules = forms
            .into_iter()
            .skip(1)
            .map(|form| {
                let Expr::List(items) = form else {
                    unreachable!("checked")
                };
                let allow = items[0] == Expr::Symbol("allow".into());
                let mut ops = Vec::new();
                let mut filters = Vec::new();
                for item in items.into_iter().skip(1) {
                    match item {
                        Expr::Symbol(op) => ops.push(op),
                        filter => filters.push(filter),
                    }
                }
                (allow, ops, filters)
            })
            .collect();
        Model { rules }
    }

    fn allows(&self, operation: &str, path: &str) -> bool {
        let mut decision = false;
        for (allow, ops, filters) in &self.rules {
            let op_matches = ops.iter().any(|op| covers(op, operation));
            let filter_matches = filters.is_empty() || filters.iter().any(|f| matches(f, path));
            if op_matches && filter_matches {
                decision = *allow;
            }
        }
        decision
    }
}

fn covers(rule: &str, operation: &str) -> bool {
    rule == "default"
        || rule == operation
        || rule
            .strip_suffix('*')
            .is_some_and(|family| operation.starts_with(family))
}

fn matches(filter: &Expr, path: &str) -> bool {
    let Expr::List(items) = filter else {
        return false;
    };
    match (&items[0], items.get(1)) {
        (Expr::Symbol(name), Some(Expr::Str(p))) if name == "literal" => path == p,
        (Expr::Symbol(name), Some(Expr::Str(p))) if name == "subpath" => {
            path == p || path.starts_with(&format!("{}/", p.trim_end_matches('/')))
        }
        (Expr::Symbol(name), Some(Expr::Regex(r))) if name == "regex" => {
            // The ERE subset the profiles use reads the same in Rust's
            // regex syntax, once the literal's `\"` is a plain `"`.
            regex::Regex::new(&r.replace("\\\"", "\""))
                .unwrap_or_else(|e| panic!("{r}: {e}"))
                .is_match(path)
        }
        // Filters on other things than paths (services, targets) never
        // match a path.
        _ => false,
    }
}
