//! The escape probe: a program that tries, by itself, to do what a confined
//! command must not (and what it may), and reports what the kernel said.
//!
//! Each operation is one argument `VERB:OPERAND`; the probe runs them in
//! order and prints one line per operation, `probe: <op> ok` or
//! `probe: <op> err <errno>`, never stopping at a failure:
//!
//! | op | what it does |
//! |---|---|
//! | `read:PATH` | open PATH and read from it |
//! | `list:DIR` | list DIR |
//! | `write:PATH` | create or truncate PATH and write to it |
//! | `mkdir:PATH` | create directory PATH |
//! | `remove:PATH` | unlink PATH |
//! | `rename:FROM>TO` | rename FROM to TO |
//! | `link:FROM>TO` | hard-link FROM as TO |
//! | `symlink:TARGET>LINK` | create symlink LINK pointing at TARGET |
//! | `exec:PATH ARG…` | run PATH with the space-separated ARGs, wait, succeed on exit 0 |
//! | `connect:ADDR` | TCP connect to ADDR |
//! | `bind:ADDR` | TCP bind ADDR |
//! | `signal:PID` | send SIGTERM to PID |
//! | `abstract:NAME` | connect to the abstract UNIX socket NAME |
//! | `unix:PATH` | connect to the UNIX socket at PATH |
//! | `udp:ADDR` | send a UDP datagram to ADDR |
//!
//! Shared by the shell crate's kernel tests (which run their own test
//! binary as the probe) and the `escape_probe` binary of the tests package.

use std::io::{Read, Write};

/// One parsed operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    Read(String),
    List(String),
    Write(String),
    Mkdir(String),
    Remove(String),
    Rename(String, String),
    Link(String, String),
    Symlink(String, String),
    Exec(String),
    Connect(String),
    Bind(String),
    Signal(i32),
    Abstract(String),
    Unix(String),
    Udp(String),
}

/// Parses `VERB:OPERAND`.
pub(crate) fn parse(text: &str) -> Result<Op, String> {
    let (verb, operand) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}`: expected VERB:OPERAND"))?;
    let pair = || {
        operand
            .split_once('>')
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
            .ok_or_else(|| format!("`{text}`: expected FROM>TO"))
    };
    let one = operand.to_owned();
    Ok(match verb {
        "read" => Op::Read(one),
        "list" => Op::List(one),
        "write" => Op::Write(one),
        "mkdir" => Op::Mkdir(one),
        "remove" => Op::Remove(one),
        "rename" => pair().map(|(a, b)| Op::Rename(a, b))?,
        "link" => pair().map(|(a, b)| Op::Link(a, b))?,
        "symlink" => pair().map(|(a, b)| Op::Symlink(a, b))?,
        "exec" => Op::Exec(one),
        "connect" => Op::Connect(one),
        "bind" => Op::Bind(one),
        "signal" => Op::Signal(
            operand
                .parse()
                .map_err(|_| format!("`{text}`: not a pid"))?,
        ),
        "abstract" => Op::Abstract(one),
        "unix" => Op::Unix(one),
        "udp" => Op::Udp(one),
        _ => return Err(format!("`{text}`: unknown verb `{verb}`")),
    })
}

/// Runs one operation; the OS error number on failure (`-1` for a failure
/// without one, e.g. a program that ran but exited non-zero).
pub(crate) fn run(op: &Op) -> Result<(), i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(-1);
    match op {
        Op::Read(path) => {
            let mut byte = [0u8; 1];
            std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut byte))
                .map(drop)
                .map_err(errno)
        }
        Op::List(dir) => std::fs::read_dir(dir)
            .and_then(|mut entries| entries.try_for_each(|e| e.map(drop)))
            .map_err(errno),
        Op::Write(path) => std::fs::File::create(path)
            .and_then(|mut f| f.write_all(b"written by escape_probe\n"))
            .map_err(errno),
        Op::Mkdir(path) => std::fs::create_dir(path).map_err(errno),
        Op::Remove(path) => std::fs::remove_file(path).map_err(errno),
        Op::Rename(from, to) => std::fs::rename(from, to).map_err(errno),
        Op::Link(from, to) => std::fs::hard_link(from, to).map_err(errno),
        Op::Symlink(target, link) => std::os::unix::fs::symlink(target, link).map_err(errno),
        Op::Exec(line) => {
            let mut words = line.split(' ').filter(|w| !w.is_empty());
            let program = words.next().unwrap_or_default();
            match std::process::Command::new(program)
                .args(words)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
            {
                Ok(status) if status.success() => Ok(()),
                Ok(_) => Err(-1),
                Err(e) => Err(errno(e)),
            }
        }
        Op::Connect(addr) => std::net::TcpStream::connect(addr.as_str())
            .map(drop)
            .map_err(errno),
        Op::Bind(addr) => std::net::TcpListener::bind(addr.as_str())
            .map(drop)
            .map_err(errno),
        Op::Signal(pid) => {
            let pid = rustix::process::Pid::from_raw(*pid).ok_or(-1)?;
            rustix::process::kill_process(pid, rustix::process::Signal::TERM)
                .map_err(|e| e.raw_os_error())
        }
        Op::Abstract(name) => {
            use std::os::linux::net::SocketAddrExt;
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
                .and_then(|addr| std::os::unix::net::UnixStream::connect_addr(&addr))
                .map(drop)
                .map_err(errno)
        }
        Op::Unix(path) => std::os::unix::net::UnixStream::connect(path)
            .map(drop)
            .map_err(errno),
        Op::Udp(addr) => std::net::UdpSocket::bind("127.0.0.1:0")
            .and_then(|socket| socket.send_to(b"escape_probe", addr.as_str()))
            .map(drop)
            .map_err(errno),
    }
}

/// Runs every argument as an operation and prints one result line each.
/// Returns the process exit code: 0 when every operation was parsed, 2
/// otherwise (results say which operations the kernel stopped).
pub(crate) fn main_with(args: impl IntoIterator<Item = String>) -> i32 {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut code = 0;
    for arg in args {
        let line = match parse(&arg) {
            Ok(op) => match run(&op) {
                Ok(()) => format!("probe: {arg} ok"),
                Err(errno) => format!("probe: {arg} err {errno}"),
            },
            Err(message) => {
                code = 2;
                format!("probe: {arg} bad {message}")
            }
        };
        if writeln!(out, "{line}").is_err() {
            return 3;
        }
    }
    code
}
