//! Credentials through the proxy, with real clients: the command holds a
//! placeholder; the bound HTTPS server on loopback (its CA trusted through
//! the policy's roots) sees the real value, put in by the proxy after it
//! ended TLS with its per-run CA; everywhere else the placeholder is
//! refused before anything is sent, or (a tunnel to an unbound host)
//! stays a worthless placeholder in an opaque tunnel that shows the
//! server's own certificate.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use agentcaps_egress::credentials::{Credential, Secret};
use agentcaps_egress::proxy::{Proxy, ProxyDecision};
use agentcaps_egress::{EgressPolicy, danger};

use crate::clients::curl;
use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Handler, Reply, Seen, Server, handler};
use crate::support::tls::TestCa;
use crate::{policy, url_of};

/// The real value: it must reach the bound server and nothing else.
pub const VALUE: &str = "ghp_RealValue0123456789abcdefABCDEF0123";

pub const BOUND: &str = "api.bound.test";
pub const OTHER: &str = "other.unbound.test";

/// A bound and an unbound HTTPS server, a proxy whose policy binds the
/// credential `api` to the first, and a CA bundle with the test CA and the
/// proxy's per-run CA.
pub struct World {
    /// Answers the names as long as the world lives.
    pub _dns: DnsServer,
    pub bound: Server,
    pub other: Server,
    pub proxy: Proxy,
    pub dir: tempfile::TempDir,
}

impl World {
    pub fn placeholder(&self) -> String {
        self.proxy
            .credentials()
            .expect("credentials")
            .credentials()
            .placeholder("api")
            .expect("placeholder")
            .to_owned()
    }

    pub fn bundle(&self) -> String {
        self.dir.path().join("bundle.pem").display().to_string()
    }

    pub fn test_ca_file(&self) -> String {
        self.dir.path().join("test-ca.pem").display().to_string()
    }

    pub fn bound_url(&self, path: &str) -> String {
        format!("https://{BOUND}:{}{path}", self.bound.port())
    }

    pub fn other_url(&self, path: &str) -> String {
        format!("https://{OTHER}:{}{path}", self.other.port())
    }

    /// Nothing the proxy logged holds the value.
    pub fn assert_log_clean(&self) {
        let log = format!("{:?}", self.proxy.log().entries());
        assert!(!log.contains(VALUE), "{log}");
    }
}

pub fn echo() -> Handler {
    handler(|seen: &Seen| Reply::ok(&format!("ok {}", seen.path)))
}

pub async fn world(configure: impl FnOnce(Credential) -> Credential, bound: Handler) -> World {
    let dns = DnsServer::start().await;
    let ca = TestCa::new();
    let bound = Server::start_tls("127.0.0.2:0", bound, ca.leaf(&[BOUND])).await;
    let other = Server::start_tls("127.0.0.3:0", echo(), ca.leaf(&[OTHER])).await;
    dns.set(BOUND, vec![Rec::ip("127.0.0.2")]);
    dns.set(OTHER, vec![Rec::ip("127.0.0.3")]);
    let mut config = policy(
        &dns,
        &["127.0.0.2/32", "127.0.0.3/32"],
        &[bound.port(), other.port()],
    );
    config.allowed_methods = vec!["GET".into(), "POST".into(), "HEAD".into()];
    let mut policy: EgressPolicy = config.build().unwrap();
    danger::trust_root_certificates_pem(&mut policy, ca.pem().as_bytes(), "test-ca.pem").unwrap();
    let credential = Credential::new("api", Secret::new(VALUE.to_owned()), &[BOUND.to_owned()])
        .unwrap()
        .with_env("API_TOKEN")
        .unwrap();
    policy.add_credential(configure(credential)).unwrap();
    let proxy = Proxy::bind(policy, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let session = proxy.credentials().expect("a proxy with credentials");
    let mut bundle = std::fs::File::create(dir.path().join("bundle.pem")).unwrap();
    write!(bundle, "{}{}", ca.pem(), session.ca_certificate_pem()).unwrap();
    std::fs::write(dir.path().join("test-ca.pem"), ca.pem()).unwrap();
    World {
        _dns: dns,
        bound,
        other,
        proxy,
        dir,
    }
}

fn authorization(seen: &Seen) -> String {
    seen.headers
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default()
}

fn base64(data: &[u8]) -> String {
    let out = std::process::Command::new("base64")
        .arg("-w0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(data)?;
            child.wait_with_output()
        })
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn curl_with_the_placeholder_reaches_the_bound_host_with_the_value() {
    let w = world(|c| c, echo()).await;
    let p = w.placeholder();
    assert_ne!(p, VALUE);
    assert_eq!(p.len(), VALUE.len());
    assert!(p.starts_with("ghp_"));
    let bearer = format!("Authorization: Bearer {p}");
    let out = curl(
        &url_of(&w.proxy),
        &[
            "--cacert",
            &w.bundle(),
            "-H",
            &bearer,
            &w.bound_url("/user"),
        ],
    )
    .await;
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ok /user"),
        "{}",
        out.stderr
    );
    let seen = w.bound.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(authorization(&seen[0]), format!("Bearer {VALUE}"));
    assert_eq!(seen[0].sni.as_deref(), Some(BOUND));
    let entries = w.proxy.log().entries();
    let used: Vec<_> = entries.iter().filter(|e| e.credential.is_some()).collect();
    assert_eq!(used.len(), 1, "{entries:#?}");
    assert_eq!(
        (
            used[0].decision,
            used[0].credential.as_deref(),
            used[0].status
        ),
        (ProxyDecision::Allow, Some("api"), Some(200))
    );
    assert!(!out.stderr.contains(VALUE) && !out.stdout.contains(VALUE));
    w.assert_log_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn basic_auth_with_the_placeholder_is_decoded_swapped_and_re_encoded() {
    let w = world(|c| c, echo()).await;
    let p = w.placeholder();
    let user = format!("x-access-token:{p}");
    let out = curl(
        &url_of(&w.proxy),
        &["--cacert", &w.bundle(), "-u", &user, &w.bound_url("/basic")],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = w.bound.seen();
    let expected = format!(
        "Basic {}",
        base64(format!("x-access-token:{VALUE}").as_bytes())
    );
    assert_eq!(authorization(&seen[0]), expected);
    w.assert_log_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_tunnel_to_an_unbound_host_stays_opaque_and_never_gets_the_value() {
    let w = world(|c| c, echo()).await;
    let p = w.placeholder();
    let bearer = format!("Authorization: Bearer {p}");
    // Only the test CA trusted: the server's own certificate is what curl
    // sees (the proxy's CA would fail this).
    let out = curl(
        &url_of(&w.proxy),
        &[
            "--cacert",
            &w.test_ca_file(),
            "-H",
            &bearer,
            &w.other_url("/x"),
        ],
    )
    .await;
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ok /x"),
        "{}",
        out.stderr
    );
    let seen = w.other.seen();
    assert_eq!(authorization(&seen[0]), format!("Bearer {p}"));
    // And the bound host is not reachable with only the test CA: its TLS
    // is the proxy's.
    let out = curl(
        &url_of(&w.proxy),
        &["--cacert", &w.test_ca_file(), &w.bound_url("/x")],
    )
    .await;
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(w.bound.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn the_placeholder_in_cleartext_is_refused_and_nothing_is_sent() {
    let dns = DnsServer::start().await;
    let plain = Server::start("127.0.0.2:0", echo()).await;
    dns.set(BOUND, vec![Rec::ip("127.0.0.2")]);
    let mut policy: EgressPolicy = policy(&dns, &["127.0.0.2/32"], &[plain.port()])
        .build()
        .unwrap();
    let credential =
        Credential::new("api", Secret::new(VALUE.to_owned()), &[BOUND.to_owned()]).unwrap();
    policy.add_credential(credential).unwrap();
    let proxy = Proxy::bind(policy, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let p = proxy
        .credentials()
        .unwrap()
        .credentials()
        .placeholder("api")
        .unwrap()
        .to_owned();
    let bearer = format!("Authorization: Bearer {p}");
    let url = format!("http://{BOUND}:{}/x", plain.port());
    // Forwarded, and inside a tunnel (`-p`).
    for tunnel in [false, true] {
        let mut args = vec![
            "-i",
            "--suppress-connect-headers",
            "-H",
            bearer.as_str(),
            url.as_str(),
        ];
        if tunnel {
            args.insert(0, "-p");
        }
        let out = curl(&url_of(&proxy), &args).await;
        assert!(
            out.stdout.starts_with("HTTP/1.1 403"),
            "tunnel {tunnel}: {} {} {:#?}",
            out.stdout,
            out.stderr,
            proxy.log().entries()
        );
        assert!(
            out.stdout.contains("credential-cleartext"),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("`api`"), "{}", out.stdout);
    }
    assert_eq!(plain.hits(), 0);
    let refused: Vec<_> = proxy
        .log()
        .entries()
        .into_iter()
        .filter(|e| e.rule == "credential-cleartext")
        .collect();
    assert_eq!(refused.len(), 2);
    assert!(
        refused
            .iter()
            .all(|e| e.credential.as_deref() == Some("api")
                && e.address.is_none()
                && e.decision == ProxyDecision::Deny)
    );
    // Without a placeholder the same request goes through.
    let out = curl(&url_of(&proxy), &[url.as_str()]).await;
    assert_eq!(out.stdout, "ok /x");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives curl, which this Windows (Wine) has not")]
async fn a_method_path_or_host_outside_the_binding_is_refused_before_anything_is_sent() {
    let w = world(
        |c| {
            c.with_methods(&["GET".into()])
                .unwrap()
                .with_paths(&["/repos/acme/**".into()])
                .unwrap()
        },
        echo(),
    )
    .await;
    let p = w.placeholder();
    let bearer = format!("Authorization: Bearer {p}");
    let proxy = url_of(&w.proxy);
    let bundle = w.bundle();
    let inside = w.bound_url("/repos/acme/x");
    let elsewhere = w.bound_url("/repos/other/x");
    let escape = w.bound_url("/repos/acme/%2e%2e/other");
    let host_other = format!("Host: {OTHER}");
    for args in [
        vec!["-X", "POST", "-d", "x", inside.as_str()],
        vec![elsewhere.as_str()],
        vec!["--path-as-is", escape.as_str()],
        vec!["-H", host_other.as_str(), inside.as_str()],
    ] {
        let mut all = vec![
            "-i",
            "--suppress-connect-headers",
            "--cacert",
            bundle.as_str(),
            "-H",
            bearer.as_str(),
        ];
        all.extend(args.iter().copied());
        let out = curl(&proxy, &all).await;
        assert!(
            out.stdout.starts_with("HTTP/1.1 403"),
            "{args:?}: {}",
            out.stdout
        );
        assert!(out.stdout.contains("credential-unbound"), "{}", out.stdout);
    }
    assert_eq!(w.bound.hits(), 0);
    let refused = w
        .proxy
        .log()
        .entries()
        .into_iter()
        .filter(|e| e.rule == "credential-unbound")
        .count();
    assert_eq!(refused, 4);
    // Inside the binding it goes.
    let out = curl(&proxy, &["--cacert", &bundle, "-H", &bearer, &inside]).await;
    assert_eq!(out.stdout, "ok /repos/acme/x", "{}", out.stderr);
    assert_eq!(authorization(&w.bound.seen()[0]), format!("Bearer {VALUE}"));
    w.assert_log_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives python3, which this Windows (Wine) has not")]
async fn python_urllib_with_the_placeholder_and_the_bundle_authenticates() {
    let w = world(|c| c, echo()).await;
    let p = w.placeholder();
    let script = r#"
import os, urllib.request
req = urllib.request.Request(os.environ["URL"], headers={"Authorization": "token " + os.environ["API_TOKEN"]})
print(urllib.request.urlopen(req, timeout=20).read().decode())
"#;
    let env = w.proxy.credentials().unwrap().environment(&w.bundle());
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new("python3")
            .args(["-c", script])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", w.dir.path())
            .envs(env)
            .env("HTTPS_PROXY", url_of(&w.proxy))
            .env("URL", w.bound_url("/py"))
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.trim(),
        "ok /py",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(authorization(&w.bound.seen()[0]), format!("token {VALUE}"));
    assert!(!p.is_empty());
    w.assert_log_clean();
}

/// `git http-backend` as a CGI behind the bound server: answers only a
/// request carrying the real value.
fn git_backend(root: &Path) -> Handler {
    let root = root.to_path_buf();
    handler(move |seen: &Seen| {
        if authorization(seen) != format!("Bearer {VALUE}") {
            return Reply {
                status: 401,
                headers: vec![("www-authenticate".into(), "Bearer".into())],
                body: b"no".to_vec(),
            };
        }
        let (path, query) = seen.path.split_once('?').unwrap_or((&seen.path, ""));
        let content_type = seen
            .headers
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("").to_owned())
            .unwrap_or_default();
        let mut child = std::process::Command::new("git")
            .arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GIT_PROJECT_ROOT", &root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("REMOTE_USER", "agent")
            .env("REQUEST_METHOD", seen.method.as_str())
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("CONTENT_TYPE", content_type)
            .env("CONTENT_LENGTH", seen.body.len().to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&seen.body).unwrap();
        let out = child.wait_with_output().unwrap();
        let split = out
            .stdout
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|i| (i, 4))
            .or_else(|| {
                out.stdout
                    .windows(2)
                    .position(|w| w == b"\n\n")
                    .map(|i| (i, 2))
            })
            .unwrap();
        let head = String::from_utf8_lossy(&out.stdout[..split.0]).into_owned();
        let mut reply = Reply {
            status: 200,
            headers: Vec::new(),
            body: out.stdout[split.0 + split.1..].to_vec(),
        };
        for line in head.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if name.eq_ignore_ascii_case("status") {
                reply.status = value.trim()[..3].parse().unwrap();
            } else {
                reply
                    .headers
                    .push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        reply
    })
}

fn git(dir: &Path, env: &[(String, String)], proxy: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("HTTPS_PROXY", proxy)
        .envs(env.iter().cloned())
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(
    windows,
    ignore = "drives git http-backend, which this Windows (Wine) has not"
)]
async fn git_clone_and_push_authenticate_through_extra_header() {
    let repos = tempfile::tempdir().unwrap();
    let origin = repos.path().join("repo.git");
    let status = std::process::Command::new("git")
        .args(["init", "-q", "--bare", "-b", "main"])
        .arg(&origin)
        .status()
        .unwrap();
    assert!(status.success());
    std::process::Command::new("git")
        .args(["config", "http.receivepack", "true"])
        .current_dir(&origin)
        .status()
        .unwrap();
    let w = world(|c| c, git_backend(repos.path())).await;
    let env = w.proxy.credentials().unwrap().environment(&w.bundle());
    assert!(env.iter().any(
        |(k, v)| k == "GIT_CONFIG_KEY_0" && v == &format!("http.https://{BOUND}/.extraHeader")
    ));
    let proxy = url_of(&w.proxy);
    let work = tempfile::tempdir().unwrap();
    // The server is on a port other than 443: git matches `extraHeader`
    // keys by the exact port, so the port-qualified key is set too (for
    // each port the policy allows).
    let url = w.bound_url("/repo.git");
    let port_key = format!("http.https://{BOUND}:{}/.extraHeader", w.bound.port());
    let (key, _) = env
        .iter()
        .find(|(_, v)| v == &port_key)
        .expect("the port's key");
    let index = key.strip_prefix("GIT_CONFIG_KEY_").unwrap();
    let header = &env
        .iter()
        .find(|(k, _)| k == &format!("GIT_CONFIG_VALUE_{index}"))
        .unwrap()
        .1;
    assert!(header.starts_with("Authorization: Bearer ghp_") && !header.contains(VALUE));
    let out = tokio::task::block_in_place(|| {
        git(work.path(), &env, &proxy, &["clone", "-q", &url, "clone"])
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let clone = work.path().join("clone");
    std::fs::write(clone.join("README"), "hello\n").unwrap();
    let steps: &[&[&str]] = &[
        &["add", "README"],
        &[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@b",
            "commit",
            "-qm",
            "first",
        ],
        &["push", "-q", "origin", "HEAD:main"],
    ];
    for args in steps {
        let out = tokio::task::block_in_place(|| git(&clone, &env, &proxy, args));
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!String::from_utf8_lossy(&out.stderr).contains(VALUE));
    }
    let log = std::process::Command::new("git")
        .args(["log", "--format=%s", "main"])
        .current_dir(&origin)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "first");
    assert!(
        w.bound
            .seen()
            .iter()
            .all(|s| authorization(s) == format!("Bearer {VALUE}"))
    );
    w.assert_log_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives pip, which this Windows (Wine) has not")]
async fn pip_with_the_placeholder_in_the_index_url_authenticates() {
    use crate::pip::{WHEEL, build_wheel, index, pip_download};
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("out")).unwrap();
    let (wheel, hash) = build_wheel(dir.path());
    let wanted = format!("Basic {}", base64(format!("agent:{VALUE}").as_bytes()));
    let served = handler(move |seen: &Seen| {
        if authorization(seen) != wanted {
            return Reply {
                status: 401,
                headers: vec![("www-authenticate".into(), "Basic realm=\"index\"".into())],
                body: b"no".to_vec(),
            };
        }
        index(&seen.path, &hash, &wheel)
    });
    let w = world(|c| c, served).await;
    let p = w.placeholder();
    let url = format!("https://agent:{p}@{BOUND}:{}/simple/", w.bound.port());
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        pip_download()
            .arg("--proxy")
            .arg(url_of(&w.proxy))
            .arg("-d")
            .arg(dir.path().join("out"))
            .env("PIP_CONFIG_FILE", "/dev/null")
            .env("PIP_INDEX_URL", &url)
            // The variables a view sets (the test process has its own).
            .envs(w.proxy.credentials().unwrap().environment(&w.bundle()))
            .env_remove("PIP_EXTRA_INDEX_URL")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("pip finished in time")
    .expect("pip runs");
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Vec<_> = w
        .bound
        .seen()
        .iter()
        .map(|s| (s.path.clone(), authorization(s)))
        .collect();
    assert!(
        out.status.success(),
        "{stderr}\n{seen:?}\n{:#?}",
        w.proxy.log().entries()
    );
    assert!(dir.path().join("out").join(WHEEL).exists());
    assert!(!stderr.contains(VALUE));
    assert!(
        w.bound
            .seen()
            .iter()
            .all(|s| authorization(s).starts_with("Basic "))
    );
    w.assert_log_clean();
}
