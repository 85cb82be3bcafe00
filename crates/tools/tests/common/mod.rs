//! Shared support for the tools' integration tests: a temporary tree with
//! an allowed root, a directory outside it, links that lead out, and a
//! loopback HTTP server.
#![allow(dead_code, unreachable_pub)]

pub mod registry;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// `top/root` (allowed), `top/outside` (not), links between them.
pub struct Tree {
    _tmp: tempfile::TempDir,
    pub top: PathBuf,
    pub root: PathBuf,
    pub outside: PathBuf,
}

impl Tree {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let top = std::fs::canonicalize(tmp.path()).expect("canonicalize");
        let root = top.join("root");
        let outside = top.join("outside");
        for dir in [root.join("src/deep"), root.join(".git"), outside.clone()] {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let files: [(&Path, &str, &str); 8] = [
            (&outside, "secret.txt", "outside secret\n"),
            (&root, "src/lib.txt", "alpha\nneedle here\nomega\n"),
            (&root, "src/deep/more.txt", "another needle\n"),
            (&root, "edit.txt", "one\ntwo\nthree\n"),
            (&root, ".env", "API_KEY=inside-secret\n"),
            (&root, ".git/config", "[core]\n"),
            (&root, "binary.bin", "a\0b"),
            (&root, "server.pem", "PEM-KEY-SECRET\n"),
        ];
        for (dir, name, content) in files {
            std::fs::write(dir.join(name), content).expect("write");
        }
        let links = [
            (outside.clone(), "escape"),
            (outside.join("secret.txt"), "secret-link.txt"),
            (outside.join("new.txt"), "dangling"),
            (root.join("src"), "src-link"),
        ];
        for (target, name) in links {
            // On Windows the links are made where the system can: making
            // one needs a privilege there, and Wine 8 makes none (its
            // `CreateSymbolicLink` reports success and does nothing). The
            // tests that need them are ignored on Windows, saying so.
            #[cfg(windows)]
            let _ = try_symlink(&target, &root.join(name));
            #[cfg(not(windows))]
            symlink(&target, &root.join(name));
        }
        Self {
            _tmp: tmp,
            top,
            root,
            outside,
        }
    }

    /// Writes `top/policy.toml`: `[files] allowed = ["root"]` plus `extra`.
    /// `agentcaps run --json --policy POLICY -- ARGV` from the root (the
    /// command runs in the policy's working directory): the run's result,
    /// after checking that it ran.
    pub fn run_json(&self, policy: &Path, argv: &[&str]) -> serde_json::Value {
        self.run_json_with(policy, argv, &[])
    }

    /// [`Tree::run_json`] with `env` added to agentcaps' environment.
    pub fn run_json_with(
        &self,
        policy: &Path,
        argv: &[&str],
        env: &[(&str, &Path)],
    ) -> serde_json::Value {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentcaps"))
            .args(["run", "--json", "--policy"])
            .arg(policy)
            .arg("--")
            .args(argv)
            .current_dir(&self.root)
            .envs(env.iter().copied())
            .output()
            .expect("agentcaps runs");
        let json = json_of(&out);
        assert_eq!(json["ran"], true, "{json}");
        json["result"].clone()
    }

    pub fn policy(&self, extra: &str) -> PathBuf {
        let path = self.top.join("policy.toml");
        let text = format!(
            "[files]\nallowed = [\"root\"]\nmax_read_bytes = 65536\n\n[shell]\nworking_directory = \"root\"\n{extra}\n"
        );
        std::fs::write(&path, text).expect("write policy");
        path
    }

    /// [`Tree::subst`] for JSON text: the paths are written as JSON string
    /// contents (a Windows path's backslashes escaped).
    pub fn subst_json(&self, text: &str, port: u16) -> String {
        let json = |path: &Path| {
            let quoted = serde_json::to_string(&path.display().to_string()).expect("json");
            quoted[1..quoted.len() - 1].to_owned()
        };
        text.replace("{root}", &json(&self.root))
            .replace("{outside}", &json(&self.outside))
            .replace("{top}", &json(&self.top))
            .replace("{port}", &port.to_string())
    }

    /// Replaces `{root}`, `{outside}`, `{top}` and `{port}` in `text`.
    pub fn subst(&self, text: &str, port: u16) -> String {
        text.replace("{root}", &self.root.display().to_string())
            .replace("{outside}", &self.outside.display().to_string())
            .replace("{top}", &self.top.display().to_string())
            .replace("{port}", &port.to_string())
    }
}

/// The JSON object `agentcaps --json` printed (a panic with what it
/// printed when it is not one).
pub fn json_of(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A symbolic link at `link` to `target`, on any platform (on Windows a
/// directory link when `target` is a directory, a file link otherwise).
pub fn symlink(target: &Path, link: &Path) {
    try_symlink(target, link).expect("symlink");
}

/// [`symlink`], reporting failure.
pub fn try_symlink(target: &Path, link: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::symlink(target, link);
    #[cfg(windows)]
    return if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    };
}

/// A loopback HTTP/1.1 server answering every request with 200 and
/// `hello from loopback`; serves at most 200 connections, then stops.
pub fn http_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = "hello from loopback\n";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// A loopback port with nothing listening (bound, then closed).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("addr").port()
}

/// A DNS server on loopback (UDP) answering every A query with 127.0.0.1
/// and every other query with no records; returns its port.
pub fn dns_server() -> u16 {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind dns");
    let port = socket.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((len, peer)) = socket.recv_from(&mut buf) {
            let query = &buf[..len];
            // The question: the name's labels, then type and class.
            let mut at = 12;
            while at < len && query[at] != 0 {
                at += 1 + usize::from(query[at]);
            }
            let Some(question) = query.get(12..at + 5) else {
                continue;
            };
            let is_a = query.get(at + 1..at + 3) == Some(&[0, 1]);
            let mut reply = query[..2].to_vec();
            reply.extend_from_slice(&[0x81, 0x80, 0, 1, 0, u8::from(is_a), 0, 0, 0, 0]);
            reply.extend_from_slice(question);
            if is_a {
                reply.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 127, 0, 0, 1]);
            }
            let _ = socket.send_to(&reply, peer);
        }
    });
    port
}
