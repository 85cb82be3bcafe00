//! A real package client through the proxy: `pip download` from a loopback
//! stand-in of a PyPI simple index, its name answered by the test DNS
//! server (pip never resolves it: the proxy does, and judges the answer).

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentcaps_egress::proxy::{ProxyDecision, ProxyKind};

use crate::support::dns::{DnsServer, Rec};
use crate::support::http::{Reply, Server, handler};
use crate::{policy, proxy, url_of};

pub const WHEEL: &str = "demo_pkg-1.0-py3-none-any.whl";

/// The Python that has pip: the CI virtualenv (`.ci/run` makes it), else
/// `python3`.
pub fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyvenv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// Builds a minimal pure-Python wheel in `dir`; returns its bytes and
/// SHA-256.
pub fn build_wheel(dir: &Path) -> (Vec<u8>, String) {
    let script = r#"
import hashlib, sys, zipfile
path = sys.argv[1]
files = {
    "demo_pkg/__init__.py": "VALUE = 1\n",
    "demo_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
    "demo_pkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: agentcaps-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = "".join(f"{name},,\n" for name in files) + "demo_pkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(path, "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr("demo_pkg-1.0.dist-info/RECORD", record)
print(hashlib.sha256(open(path, "rb").read()).hexdigest())
"#;
    let path = dir.join(WHEEL);
    let out = std::process::Command::new(python())
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (std::fs::read(&path).unwrap(), hash)
}

/// `python -m pip download demo-pkg==1.0` without dependencies, binaries
/// only, no cache, no prompt, no retry.
pub fn pip_download() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python());
    command
        .args(["-m", "pip", "download", "demo-pkg==1.0", "--no-deps"])
        .args([
            "--only-binary=:all:",
            "--no-cache-dir",
            "--disable-pip-version-check",
        ])
        .args(["--no-input", "--retries", "0", "--timeout", "15"]);
    command
}

/// The index's answer at `path`: the simple page for `demo-pkg`, the
/// wheel, or `404`.
pub fn index(path: &str, hash: &str, wheel: &[u8]) -> Reply {
    match path {
        "/simple/demo-pkg/" => Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/html".into())],
            body: format!(
                "<!DOCTYPE html><html><body><a href=\"/files/{WHEEL}#sha256={hash}\">{WHEEL}</a></body></html>"
            )
            .into_bytes(),
        },
        p if p == format!("/files/{WHEEL}") => Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/octet-stream".into())],
            body: wheel.to_vec(),
        },
        _ => Reply {
            status: 404,
            headers: Vec::new(),
            body: b"not found".to_vec(),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(windows, ignore = "drives pip, which this Windows (Wine) has not")]
async fn pip_download_works_through_the_proxy() {
    let dir = std::env::temp_dir().join(format!("agentcaps-proxy-pip-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("out")).unwrap();
    let (wheel, hash) = build_wheel(&dir);
    let served = wheel.clone();
    let index = Server::start(
        "127.0.0.2:0",
        handler(move |seen| index(&seen.path, &hash, &served)),
    )
    .await;
    let dns = DnsServer::start().await;
    dns.set("pypi.example.com", vec![Rec::ip("127.0.0.2")]);
    let p = index.port();
    let proxy = proxy(&policy(&dns, &["127.0.0.2/32"], &[p])).await;
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        pip_download()
            .arg("--index-url")
            .arg(format!("http://pypi.example.com:{p}/simple/"))
            .args(["--trusted-host", "pypi.example.com"])
            .arg("--proxy")
            .arg(url_of(&proxy))
            .arg("-d")
            .arg(dir.join("out"))
            .env("PIP_CONFIG_FILE", "/dev/null")
            .env_remove("PIP_INDEX_URL")
            .env_remove("PIP_EXTRA_INDEX_URL")
            .env_remove("http_proxy")
            .env_remove("HTTP_PROXY")
            .env_remove("https_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("all_proxy")
            .env_remove("ALL_PROXY")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("pip finished in time")
    .expect("python3 runs");
    let downloaded = std::fs::read(dir.join("out").join(WHEEL));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "pip failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(downloaded.expect("the wheel was saved"), wheel);
    let entries = proxy.log().entries();
    assert!(entries.len() >= 2, "{entries:#?}");
    for entry in &entries {
        assert_eq!(
            (
                entry.kind,
                entry.decision,
                entry.host.as_str(),
                entry.address
            ),
            (
                ProxyKind::Http,
                ProxyDecision::Allow,
                "pypi.example.com",
                Some(index.addr)
            ),
        );
    }
    let paths: Vec<String> = index.seen().iter().map(|s| s.path.clone()).collect();
    assert!(paths.contains(&format!("/files/{WHEEL}")), "{paths:?}");
}
