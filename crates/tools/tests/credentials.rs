//! Credentials end to end, with the real `agentcaps` binary and a command
//! in its private view (`network = "proxy"`): the command holds only a
//! placeholder — in its environment, and nowhere in its files, any
//! process's `/proc/*/environ`, `run --json` or stderr is the real value —
//! while the bound HTTPS server (a Python server on loopback whose test CA
//! the policy trusts through `root_certificates`, its name answered by a
//! DNS responder on loopback) sees the real value. `http_request` with
//! `credential` authenticates to the bound host and is refused elsewhere.
//!
//! Linux only: the private view is what keeps the value out of reach.
#![cfg(target_os = "linux")]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use agentcaps::Policy;
use agentcaps_tools::Toolbox;

const VALUE: &str = "ghp_ToolsValue0123456789abcdefABCDEF012";
const BOUND: &str = "api.bound.test";
const OTHER: &str = "other.unbound.test";

/// A DNS responder on loopback: `A` for the two test names (127.0.0.2),
/// no answer for anything else.
fn dns() -> u16 {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            let query = &buf[..n];
            let Some(reply) = answer(query) else { continue };
            let _ = socket.send_to(&reply, from);
        }
    });
    port
}

fn answer(query: &[u8]) -> Option<Vec<u8>> {
    let mut at = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*query.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(query.get(at..at + len)?).to_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*query.get(at)?, *query.get(at + 1)?]);
    let question_end = at + 4;
    let name = labels.join(".");
    let known = name == BOUND || name == OTHER;
    let mut reply = query.get(..question_end)?.to_vec();
    reply[2] = 0x81;
    reply[3] = if known { 0x80 } else { 0x83 };
    let a = known && qtype == 1;
    reply[6..8].copy_from_slice(&u16::from(a).to_be_bytes());
    reply[8..12].copy_from_slice(&[0, 0, 0, 0]);
    if a {
        reply.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 2]);
    }
    Some(reply)
}

/// The test CA (PEM) and a leaf for both names, written into `dir`.
fn certificates(dir: &Path) -> PathBuf {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tools test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = rcgen::CertifiedIssuer::self_signed(params, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec![BOUND.to_owned(), OTHER.to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("leaf.pem"), leaf.pem()).unwrap();
    std::fs::write(dir.join("leaf.key"), key.serialize_pem()).unwrap();
    dir.join("seen.log")
}

/// Serves the files under `argv[4]` only to a request whose
/// `Authorization` is one of the lines of `argv[5]` (401, with cargo's
/// challenge, otherwise), and answers `ok PATH` for any other path; logs
/// host, path and `Authorization` of every request.
const SERVER: &str = r#"
import http.server, os, ssl, sys
log = open(sys.argv[3], "a")
files = sys.argv[4]
wanted = [line.rstrip("\n") for line in open(sys.argv[5])]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        auth = self.headers.get("Authorization")
        log.write("%s %s %s\n" % (self.headers.get("Host"), self.path, auth))
        log.flush()
        path = self.path.split("?")[0]
        file = os.path.join(files, path.lstrip("/"))
        status = 200
        if ".." not in path and os.path.isfile(file):
            if auth in wanted:
                body = open(file, "rb").read()
            else:
                status, body = 401, b"unauthorized"
        else:
            body = ("ok " + self.path).encode()
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Cargo login_url="https://login.invalid/"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), H)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[1], sys.argv[2])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
/// The HTTPS server, killed when dropped.
struct Https {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Https {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Https {
    /// Serves the files of `dir/srv` to requests authorised as one of
    /// `wanted` says.
    fn start(dir: &Path, wanted: &[String]) -> Https {
        let log = certificates(dir);
        let srv = dir.join("srv");
        std::fs::create_dir_all(&srv).unwrap();
        std::fs::write(dir.join("wanted"), wanted.join("\n") + "\n").unwrap();
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .arg(dir.join("leaf.pem"))
            .arg(dir.join("leaf.key"))
            .arg(&log)
            .arg(&srv)
            .arg(dir.join("wanted"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server's port");
        Https { child, port, log }
    }

    fn seen(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// A tree whose policy binds the credential `api` (read from a file
/// outside every root) to the bound name; `commands` allowed.
fn setup(commands: &str) -> (common::Tree, Https, PathBuf) {
    setup_with(&format!("allowed_commands = [{commands}]"), &[], "")
}

/// [`setup`] with `shell` for the shell section's keys, the server's files
/// served to `wanted`, and more of the policy after the credential `api`.
fn setup_with(shell: &str, wanted: &[String], extra: &str) -> (common::Tree, Https, PathBuf) {
    let tree = common::Tree::new();
    let server = Https::start(&tree.top, wanted);
    let dns = dns();
    std::fs::write(tree.top.join("token"), format!("{VALUE}\n")).unwrap();
    let policy = tree.policy(&format!(
        "{shell}\nnetwork = \"proxy\"\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\ndns_servers = [\"127.0.0.1:{dns}\"]\nroot_certificates = [\"ca.pem\"]\n\n[credentials.api]\nfrom_file = \"token\"\nenv = \"API_TOKEN\"\nhosts = [\"{BOUND}\"]\n{extra}",
        port = server.port
    ));
    (tree, server, policy)
}

const FETCH: &str = r#"
import os, sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["API_TOKEN"]})
try:
    print(urllib.request.urlopen(req, timeout=20).read().decode())
except Exception as e:
    print("failed:", e)
"#;

/// Looks for the value (given rot13'd, so neither this script nor its
/// arguments hold it) in every process's environment and every file of
/// the view outside the runtime directories; prints what holds it, and
/// whether the CA bundle holds a private key.
const SEARCH: &str = r#"
import codecs, os, sys
value = codecs.decode(sys.argv[1], "rot13").encode()
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if value in open("/proc/%s/environ" % pid, "rb").read():
                found.append("environ " + pid)
        except OSError:
            pass
skip = ("/proc", "/sys", "/dev", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for name in files:
        path = os.path.join(top, name)
        try:
            if os.path.islink(path) or os.path.getsize(path) > 4 << 20:
                continue
            if value in open(path, "rb").read():
                found.append(path)
        except OSError:
            pass
bundle = open(os.environ["SSL_CERT_FILE"], "rb").read()
print("found", found, "key", b"PRIVATE KEY" in bundle, "certs", bundle.count(b"BEGIN CERTIFICATE") > 1)
"#;

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => char::from((c as u8 - b'a' + 13) % 26 + b'a'),
            'A'..='Z' => char::from((c as u8 - b'A' + 13) % 26 + b'A'),
            other => other,
        })
        .collect()
}

#[test]
fn a_command_holds_only_the_placeholder_and_the_bound_server_gets_the_value() {
    let (tree, server, policy) = setup("\"env\", \"python3\", \"git\"");
    std::fs::write(tree.root.join("fetch.py"), FETCH).unwrap();
    // The shell's own git setting stays beside the credentials' header.
    let git = tree.run_json(&policy, &["git", "config", "--get", "safe.bareRepository"]);
    assert_eq!(git["stdout"], "explicit\n", "{git}");
    std::fs::write(tree.root.join("search.py"), SEARCH).unwrap();

    let env = tree.run_json(&policy, &["env"]);
    assert_eq!(env["exit_code"], 0, "{env}");
    let stdout = env["stdout"].as_str().unwrap_or_default();
    let placeholder = stdout
        .lines()
        .find_map(|l| l.strip_prefix("API_TOKEN="))
        .unwrap_or_else(|| panic!("no API_TOKEN in {stdout}"));
    assert_eq!(placeholder.len(), VALUE.len());
    assert!(placeholder.starts_with("ghp_") && placeholder != VALUE);
    for var in [
        "SSL_CERT_FILE",
        "CURL_CA_BUNDLE",
        "REQUESTS_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "GIT_SSL_CAINFO",
        "CARGO_HTTP_CAINFO",
        "PIP_CERT",
        "npm_config_cafile",
    ] {
        assert!(
            stdout.contains(&format!("{var}=/etc/agentcaps/ca-bundle.pem")),
            "{var}: {stdout}"
        );
    }
    assert!(
        stdout.contains(&format!("=http.https://{BOUND}/.extraHeader\n")),
        "{stdout}"
    );
    assert!(!env.to_string().contains(VALUE), "{env}");

    let url = format!("https://{BOUND}:{}/user", server.port);
    let fetched = tree.run_json(&policy, &["python3", "fetch.py", &url]);
    assert_eq!(fetched["stdout"], "ok /user\n", "{fetched}");
    assert!(
        server.seen().contains(&format!("/user Bearer {VALUE}")),
        "{}",
        server.seen()
    );
    let connections = fetched["connections"].as_array().expect("connections");
    assert!(
        connections.iter().all(|c| c["decision"] == "allow"),
        "{fetched}"
    );
    assert!(!fetched.to_string().contains(VALUE), "{fetched}");

    // The same placeholder toward a host it is not bound to: an opaque
    // tunnel (the server's own certificate, which the bundle's test CA
    // verifies), and only the placeholder arrives.
    let other = format!("https://{OTHER}:{}/elsewhere", server.port);
    let fetched = tree.run_json(&policy, &["python3", "fetch.py", &other]);
    assert_eq!(fetched["stdout"], "ok /elsewhere\n", "{fetched}");
    let seen = server.seen();
    let line = seen.lines().find(|l| l.contains("/elsewhere")).unwrap();
    // That run's placeholder: the value's shape, new for every run.
    let sent = line.rsplit(' ').next().unwrap_or_default();
    assert!(line.contains(" Bearer ghp_"), "{line}");
    assert_eq!(sent.len(), VALUE.len(), "{line}");
    assert!(sent != VALUE && sent != placeholder, "{line}");
    assert!(
        !seen
            .lines()
            .any(|l| l.contains("/elsewhere") && l.contains(VALUE))
    );

    let searched = tree.run_json(&policy, &["python3", "search.py", &rot13(VALUE)]);
    assert_eq!(
        searched["stdout"], "found [] key False certs True\n",
        "{searched}"
    );
    assert!(!searched.to_string().contains(VALUE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_with_a_credential_authenticates_to_the_bound_host_only() {
    let (tree, server, policy) = setup("\"env\"");
    let policy = Policy::load(&policy).expect("policy");
    let toolbox = Toolbox::new(&policy, &tree.root).expect("toolbox");
    let url = format!("https://{BOUND}:{}/tool", server.port);
    let out = toolbox
        .call(
            "http_request",
            serde_json::json!({"url": url, "credential": "api"}),
        )
        .await
        .expect("allowed");
    assert_eq!(out.structured["status"], 200, "{}", out.structured);
    assert!(server.seen().contains(&format!("/tool Bearer {VALUE}")));
    assert!(!out.structured.to_string().contains(VALUE));
    // Elsewhere: refused before anything is sent, naming the credential.
    let other = format!("https://{OTHER}:{}/tool-elsewhere", server.port);
    let refused = toolbox
        .call(
            "http_request",
            serde_json::json!({"url": other, "credential": "api"}),
        )
        .await
        .expect_err("refused");
    let text = refused.to_model_text();
    assert_eq!(refused.rule(), "credential-unbound", "{text}");
    assert!(text.contains("`api`") && !text.contains(VALUE), "{text}");
    // Cleartext to the bound host: refused too.
    let plain = format!("http://{BOUND}:{}/tool-plain", server.port);
    let refused = toolbox
        .call(
            "http_request",
            serde_json::json!({"url": plain, "credential": "api"}),
        )
        .await
        .expect_err("refused");
    assert_eq!(refused.rule(), "credential-cleartext");
    assert!(!server.seen().contains("tool-elsewhere") && !server.seen().contains("tool-plain"));
    // An unknown name is an error, never a request without it.
    let unknown = toolbox
        .call(
            "http_request",
            serde_json::json!({"url": url, "credential": "nope"}),
        )
        .await
        .expect_err("unknown credential");
    assert!(unknown.to_model_text().contains("nope"));
    let _ = std::io::stdout().flush();
}

/// npm's token: the prefix up to `_` is kept in its placeholder.
const NPM_VALUE: &str = "npm_NpmValue0123456789abcdefABCDEF0123";
/// cargo's registry token (sent bare, without `Bearer`).
const CARGO_VALUE: &str = "cio_CargoValue0123456789abcdefABCDEF01";

/// It ran in the full view, succeeded, every request allowed, and no
/// real value is anywhere in its result.
fn assert_clean_success(result: &serde_json::Value) {
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(result["enforced"], "full", "{result}");
    let connections = result["connections"].as_array().expect("connections");
    assert!(!connections.is_empty(), "{result}");
    assert!(
        connections.iter().all(|c| c["decision"] == "allow"),
        "{result}"
    );
    let text = result.to_string();
    for value in [VALUE, NPM_VALUE, CARGO_VALUE] {
        assert!(!text.contains(value), "{result}");
    }
}

#[test]
fn npm_and_cargo_authenticate_with_placeholders_under_the_development_preset() {
    // The registry serves its files only to the real values.
    let wanted = [format!("Bearer {NPM_VALUE}"), CARGO_VALUE.to_owned()];
    let extra = format!(
        "\n[credentials.npm]\nfrom_file = \"npm-token\"\nenv = \"NPM_TOKEN\"\nhosts = [\"{BOUND}\"]\n\n[credentials.cargo]\nfrom_file = \"cargo-token\"\nenv = \"CARGO_REGISTRIES_LOOP_TOKEN\"\nhosts = [\"{BOUND}\"]\n"
    );
    let (tree, server, policy) = setup_with("preset = \"development\"", &wanted, &extra);
    std::fs::write(tree.top.join("npm-token"), NPM_VALUE).unwrap();
    std::fs::write(tree.top.join("cargo-token"), CARGO_VALUE).unwrap();
    let base = format!("https://{BOUND}:{}", server.port);
    common::registry::cargo_and_npm(&tree.top.join("srv"), &base, true);

    // npm: the project's `.npmrc` names the token by its variable, which
    // holds the placeholder.
    std::fs::write(
        tree.root.join(".npmrc"),
        format!("//{BOUND}:{}/:_authToken=${{NPM_TOKEN}}\n", server.port),
    )
    .unwrap();
    let registry_url = format!("{base}/npm/");
    let viewed = tree.run_json(
        &policy,
        &[
            "npm",
            "view",
            "leftpad",
            "description",
            "--registry",
            &registry_url,
            "--fetch-retries=0",
        ],
    );
    assert_clean_success(&viewed);
    assert_eq!(viewed["stdout"], "pads on the left\n", "{viewed}");
    assert!(
        server
            .seen()
            .contains(&format!("/npm/leftpad Bearer {NPM_VALUE}")),
        "{}",
        server.seen()
    );

    // cargo: a sparse registry with `auth-required`, its token in
    // `CARGO_REGISTRIES_LOOP_TOKEN` (read by the `cargo:token` provider,
    // which cargo wants named for such a registry).
    let project = tree.root.join("proj");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(tree.root.join(".cargo")).unwrap();
    std::fs::write(
        tree.root.join(".cargo/config.toml"),
        format!(
            "[registries.loop]\nindex = \"sparse+{base}/index/\"\ncredential-provider = \"cargo:token\"\n"
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"proj\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ntiny = { version = \"0.1\", registry = \"loop\" }\n",
    )
    .unwrap();
    std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
    let fetched = tree.run_json(
        &policy,
        &["cargo", "fetch", "--manifest-path", "proj/Cargo.toml"],
    );
    assert_clean_success(&fetched);
    assert!(
        fetched["stderr"]
            .as_str()
            .unwrap_or_default()
            .contains("Downloaded tiny v0.1.0"),
        "{fetched}"
    );
    let seen = server.seen();
    for path in ["/index/ti/ny/tiny", "/dl/tiny-0.1.0.crate"] {
        assert!(seen.contains(&format!("{path} {CARGO_VALUE}")), "{seen}");
    }
    // The server never saw a value where it was not due, nor a
    // placeholder authorised.
    assert!(!seen.contains(VALUE), "{seen}");
}

/// Fetches `$1` with the placeholder as a bearer token (curl: without
/// the view a command reads only the runtime and its roots, not a Python
/// manager's shims in a home directory).
const CURL_FETCH: &str =
    "curl -sS --max-time 20 -H \"Authorization: Bearer $API_TOKEN\" \"$1\" || echo failed\n";

/// What a command without its view can reach of the credentials: the
/// value (given rot13'd) in its own environment, the bundle for writing,
/// the credential's file (named in the file `$2`: the argument checks
/// would refuse its path) and its parent's `/proc` entry; one word
/// each.
const PROBE: &str = r#"value=$(printf %s "$1" | tr 'A-Za-z' 'N-ZA-Mn-za-m')
reach() { if "$@" >/dev/null 2>&1; then echo open; else echo denied; fi; }
if grep -qaF "$value" /proc/self/environ; then self=True; else self=False; fi
echo self $self bundle $(reach sh -c ': >> "$SSL_CERT_FILE"') token $(reach cat "$(cat "$2")") parent $(reach cat /proc/$PPID/environ)
"#;

/// Runs `argv` in this process with the policy at `policy`: this test
/// binary registers no view helper, so the command runs without its view,
/// with Landlock alone.
fn run_without_view(policy: &Path, argv: &[&str]) -> agentcaps::shell::RunResult {
    let shell = Policy::load(policy)
        .expect("policy")
        .shell_policy()
        .expect("shell policy");
    let command = shell
        .validate(&agentcaps::shell::CommandRequest::argv(
            argv.iter().copied(),
        ))
        .expect("valid");
    shell.run_blocking(command).expect("ran")
}

#[test]
fn without_the_view_landlock_keeps_the_value_out_and_the_bound_host_still_authenticates() {
    let (tree, server, policy) = setup("\"env\", \"bash\"");
    std::fs::write(tree.root.join("fetch.sh"), CURL_FETCH).unwrap();
    std::fs::write(tree.root.join("probe.sh"), PROBE).unwrap();

    let env = run_without_view(&policy, &["env"]);
    let reason = env.enforced_reason.clone().unwrap_or_default();
    assert!(
        env.enforced.to_string().starts_with("partial") && reason.contains("no view helper"),
        "{env:?}"
    );
    assert!(!reason.contains("credentials are not offered"), "{reason}");
    let placeholder = env
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("API_TOKEN="))
        .unwrap_or_else(|| panic!("no API_TOKEN in {env:?}"));
    assert!(placeholder.starts_with("ghp_") && placeholder.len() == VALUE.len());
    assert_ne!(placeholder, VALUE);
    let bundle = env
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SSL_CERT_FILE="))
        .unwrap_or_else(|| panic!("no bundle in {env:?}"))
        .to_owned();
    assert!(!format!("{env:?}").contains(VALUE));

    let url = format!("https://{BOUND}:{}/fallback", server.port);
    let fetched = run_without_view(&policy, &["bash", "fetch.sh", &url]);
    assert_eq!(fetched.stdout, "ok /fallback", "{fetched:?}");
    assert!(
        server.seen().contains(&format!("/fallback Bearer {VALUE}")),
        "{}",
        server.seen()
    );
    assert!(!format!("{fetched:?}").contains(VALUE));

    std::fs::write(
        tree.root.join("token-path"),
        tree.top.join("token").as_os_str().as_encoded_bytes(),
    )
    .unwrap();
    let probed = run_without_view(&policy, &["bash", "probe.sh", &rot13(VALUE), "token-path"]);
    assert_eq!(
        probed.stdout, "self False bundle denied token denied parent denied\n",
        "{probed:?}"
    );
    // The bundle is gone with the run.
    assert!(!Path::new(&bundle).exists(), "{bundle}");
}

#[test]
fn without_the_view_and_a_root_holding_proc_no_credential_is_offered() {
    let (tree, server, policy) = setup("\"env\", \"bash\"");
    let text = std::fs::read_to_string(&policy)
        .unwrap()
        .replace("allowed = [\"root\"]", "allowed = [\"root\", \"/proc\"]");
    std::fs::write(&policy, text).unwrap();
    std::fs::write(tree.root.join("fetch.sh"), CURL_FETCH).unwrap();
    let env = run_without_view(&policy, &["env"]);
    let reason = env.enforced_reason.clone().unwrap_or_default();
    assert!(reason.contains("credentials are not offered"), "{reason}");
    assert!(!env.stdout.contains("API_TOKEN=") && !env.stdout.contains("SSL_CERT_FILE="));
    let url = format!("https://{BOUND}:{}/unsafe", server.port);
    let fetched = run_without_view(&policy, &["bash", "fetch.sh", &url]);
    assert_eq!(fetched.stdout, "failed\n", "{fetched:?}");
    assert!(!server.seen().contains("/unsafe"), "{}", server.seen());
}
