//! Commands' web traffic through the judging proxy, whole-process and
//! end to end: `curl` inside `agentcaps run` with `network = "proxy"`
//! against the same `curl` going direct and going through `tinyproxy` (a
//! small, widely used C forward proxy) on the host, same loopback server,
//! same run (the targets: through the proxy at least 0.8× direct, and at
//! least 1.0× tinyproxy).
//!
//! - `download_100mb`: one 100 MiB body written to curl's standard output
//!   (a pipe whose reader discards it: agentcaps's, past its output cap, or
//!   this bench's, going direct); the rate `curl` itself reports on its
//!   standard error (`%{speed_download}`: the transfer, not agentcaps's
//!   start-up).
//! - `keepalive_get`: 1000 GETs of a 64-byte body on one kept-alive
//!   connection (`curl URL?[1-1000]`); requests per second of the time
//!   `curl` reports for them (`%{time_total}` summed).
//!
//! Routes: `direct` (curl on the host, no agentcaps), `view_host` (curl in
//! the private view with the host's network: the development preset; what
//! the view costs without the proxy), `proxy` (plain `http://` forwarded by
//! the proxy) and `proxy_connect` (`curl -p`: a CONNECT tunnel, as HTTPS
//! goes), `tinyproxy` and `tinyproxy_connect` (the same two through
//! `tinyproxy` on the host, started by the bench on a free port of
//! loopback). The server is a thread per connection of this process,
//! writing from one buffer. Rounds are interleaved, who goes first
//! rotating; each figure is the median of per-round ratios against
//! `direct`, and the proxy's routes also against tinyproxy's same route.
//!
//! Needs `curl`, `tinyproxy` (`apt-get install tinyproxy`) and a kernel
//! that builds the view (user, mount and network namespaces). `cargo bench
//! -p agentcaps-tools --bench network_proxy` (`ROUNDS=N` to change the 9
//! rounds).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};

const BIG: usize = 100 * 1024 * 1024;
const SMALL_REQUESTS: usize = 1000;

fn agentcaps() -> PathBuf {
    std::env::var_os("AGENTCAPS_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_agentcaps")),
        PathBuf::from,
    )
}

/// Serves one kept-alive connection: `/big` answers [`BIG`] bytes, any
/// other path 64.
fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let piece = vec![b'x'; 1024 * 1024];
    let mut pending = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            }
            continue;
        };
        let head = String::from_utf8_lossy(&pending[..end]).into_owned();
        pending.drain(..end + 4);
        let big = head
            .split_whitespace()
            .nth(1)
            .is_some_and(|p| p.ends_with("/big"));
        let len = if big { BIG } else { 64 };
        let header = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
        if stream.write_all(header.as_bytes()).is_err() {
            return;
        }
        let mut left = len;
        while left > 0 {
            let n = left.min(piece.len());
            if stream.write_all(&piece[..n]).is_err() {
                return;
            }
            left -= n;
        }
    }
}

/// A loopback server on 127.0.0.2; its port.
fn server() -> u16 {
    let listener = TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

#[derive(Clone, Copy, PartialEq)]
enum Route {
    Direct,
    ViewHost,
    Proxy,
    ProxyConnect,
    Tinyproxy,
    TinyproxyConnect,
}

const ROUTES: [(&str, Route); 6] = [
    ("direct", Route::Direct),
    ("view_host", Route::ViewHost),
    ("proxy", Route::Proxy),
    ("proxy_connect", Route::ProxyConnect),
    ("tinyproxy", Route::Tinyproxy),
    ("tinyproxy_connect", Route::TinyproxyConnect),
];

/// The proxy's routes and tinyproxy's same route (indices into [`ROUTES`]).
const VERSUS: [(usize, usize); 2] = [(2, 4), (3, 5)];

struct Setup {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    tinyproxy: Tinyproxy,
}

/// `tinyproxy` in the foreground on a free port of 127.0.0.1, killed on
/// drop.
struct Tinyproxy {
    child: std::process::Child,
    port: u16,
}

impl Tinyproxy {
    fn start(dir: &std::path::Path) -> Tinyproxy {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        // No `ConnectPort` line: CONNECT to any port (the server's).
        let config = dir.join("tinyproxy.conf");
        let text = format!(
            "Port {port}\nListen 127.0.0.1\nTimeout 600\nMaxClients 100\nLogLevel Critical\nAllow 127.0.0.1\nDisableViaHeader Yes\n"
        );
        std::fs::write(&config, text).expect("tinyproxy config");
        let mut child = Command::new("tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tinyproxy runs (apt-get install tinyproxy)");
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Tinyproxy { child, port };
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("tinyproxy did not listen on {port}");
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Setup {
    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn policy(&self, route: Route) -> PathBuf {
        let (name, network) = match route {
            Route::ViewHost => ("host.toml", "network = \"host\"\npreset = \"development\""),
            _ => ("proxy.toml", "network = \"proxy\""),
        };
        let path = self.dir.path().join(name);
        let text = format!(
            "[files]\nallowed = [{root:?}]\n\n[shell]\nworking_directory = {root:?}\nallowed_commands = [\"curl\"]\n{network}\n\n[egress]\nallowed_cidrs = [\"127.0.0.2/32\"]\nallowed_ports = [{port}]\n",
            root = self.root().display().to_string(),
            port = self.port,
        );
        std::fs::write(&path, text).expect("policy");
        path
    }

    /// Runs curl with `args` by `route`; its standard output and error.
    fn curl(&self, route: Route, args: &[&str]) -> (String, String) {
        let mut argv: Vec<&str> = vec!["curl", "-sS"];
        if matches!(route, Route::ProxyConnect | Route::TinyproxyConnect) {
            argv.push("-p");
        }
        let tinyproxy = format!("http://127.0.0.1:{}", self.tinyproxy.port);
        if matches!(route, Route::Tinyproxy | Route::TinyproxyConnect) {
            argv.extend_from_slice(&["--proxy", &tinyproxy]);
        }
        argv.extend_from_slice(args);
        if matches!(
            route,
            Route::Direct | Route::Tinyproxy | Route::TinyproxyConnect
        ) {
            let mut child = Command::new("curl")
                .args(&argv[1..])
                .env_remove("http_proxy")
                .env_remove("HTTP_PROXY")
                .current_dir(self.root())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("curl runs (is it installed?)");
            // Read as agentcaps reads a command's output: the first MiB
            // kept, the rest read and dropped.
            let stdout = child.stdout.take().expect("stdout");
            let kept = std::thread::spawn(move || keep_first_mib(stdout));
            let mut stderr = String::new();
            let _ = child
                .stderr
                .take()
                .expect("stderr")
                .read_to_string(&mut stderr);
            let status = child.wait().expect("curl ends");
            assert!(status.success(), "{stderr}");
            return (kept.join().expect("reader"), stderr);
        }
        let out = Command::new(&self.bin)
            .args(["run", "--json", "--policy"])
            .arg(self.policy(route))
            .arg("--")
            .args(&argv)
            .current_dir(self.root())
            .output()
            .expect("agentcaps runs");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
        let result = &json["result"];
        assert_eq!(result["exit_code"], 0, "{json}");
        if route != Route::ViewHost {
            assert_eq!(result["enforced"], "full", "{json}");
            assert!(
                result["connections"]
                    .as_array()
                    .is_some_and(|c| !c.is_empty()),
                "nothing went through the proxy: {json}"
            );
        }
        let text = |name: &str| result[name].as_str().unwrap_or_default().to_owned();
        (text("stdout"), text("stderr"))
    }

    /// MiB per second of one 100 MiB download, as curl measured it.
    fn download(&self, route: Route) -> f64 {
        let url = format!("http://127.0.0.2:{}/big", self.port);
        let (_, out) = self.curl(
            route,
            &["-w", "%{stderr}%{size_download} %{speed_download}", &url],
        );
        let mut fields = out.split_whitespace();
        let size: usize = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        assert_eq!(size, BIG, "{out}");
        let speed: f64 = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
        speed / (1024.0 * 1024.0)
    }

    /// Requests per second of [`SMALL_REQUESTS`] kept-alive GETs, from the
    /// times curl measured for them.
    fn small(&self, route: Route) -> f64 {
        let url = format!("http://127.0.0.2:{}/small?[1-{SMALL_REQUESTS}]", self.port);
        let (out, _) = self.curl(route, &["-w", " %{time_total}\\n", &url]);
        let times: Vec<f64> = out
            .lines()
            .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
            .collect();
        assert_eq!(times.len(), SMALL_REQUESTS, "{out}");
        SMALL_REQUESTS as f64 / times.iter().sum::<f64>()
    }
}

/// Reads `from` to its end, keeping the first MiB.
fn keep_first_mib(mut from: impl Read) -> String {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        let room = (1usize << 20).saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not run
    // benches without it: only build.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let dir = tempfile::tempdir().expect("tempdir");
    let tinyproxy = Tinyproxy::start(dir.path());
    let setup = Setup {
        bin: agentcaps(),
        dir,
        port: server(),
        tinyproxy,
    };
    std::fs::create_dir(setup.root()).expect("root");
    for (what, unit, measure) in [
        (
            "download_100mb",
            "MiB/s",
            Setup::download as fn(&Setup, Route) -> f64,
        ),
        ("keepalive_get", "req/s", Setup::small),
    ] {
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); ROUTES.len()];
        for round in 0..rounds {
            for k in 0..ROUTES.len() {
                let i = (k + round) % ROUTES.len();
                rates[i].push(measure(&setup, ROUTES[i].1));
            }
        }
        let mut line = format!(
            "{what} ({rounds} rounds): direct {:.0} {unit}",
            median(rates[0].clone())
        );
        for i in 1..ROUTES.len() {
            let ratios = rates[i].iter().zip(&rates[0]).map(|(r, d)| r / d).collect();
            line.push_str(&format!(
                "; {} {:.0} {unit} ({:.2}x)",
                ROUTES[i].0,
                median(rates[i].clone()),
                median(ratios)
            ));
        }
        for (ours, theirs) in VERSUS {
            let ratios = rates[ours]
                .iter()
                .zip(&rates[theirs])
                .map(|(o, t)| o / t)
                .collect();
            line.push_str(&format!(
                "; {} vs {} {:.2}x",
                ROUTES[ours].0,
                ROUTES[theirs].0,
                median(ratios)
            ));
        }
        println!("{line}");
    }
}
