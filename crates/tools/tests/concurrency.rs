//! The file tools under concurrency, as MCP clients drive them (parallel
//! tool calls on one server, and two servers on one root): a write never
//! lands where it was not judged for, and two writes of one file never lose
//! one of them silently. Real processes, a real tree.
#![cfg(unix)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use agentcaps::Policy;
use agentcaps_tools::{ToolError, ToolOutput, Toolbox};
use serde_json::{Value, json};

const TRIES: usize = 200;

fn toolbox(tree: &common::Tree) -> Toolbox {
    let policy = Policy::load(&tree.policy("")).expect("policy");
    Toolbox::new(&policy, &tree.root).expect("toolbox")
}

/// One `agentcaps mcp` server on the tree's root, spoken to line by line.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(policy: &Path, root: &Path) -> Self {
        Self::spawn(Command::new(env!("CARGO_BIN_EXE_agentcaps")), policy, root)
    }

    /// A server at the lowest scheduling priority (`nice -n 19`): when the
    /// test's thread wakes, it runs first, whatever else the machine does.
    #[cfg(target_os = "linux")]
    fn start_niced(policy: &Path, root: &Path) -> Self {
        let mut nice = Command::new("nice");
        nice.args(["-n", "19", env!("CARGO_BIN_EXE_agentcaps")]);
        Self::spawn(nice, policy, root)
    }

    fn spawn(mut command: Command, policy: &Path, root: &Path) -> Self {
        let mut child = command
            .args(["mcp", "--policy"])
            .arg(policy)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn agentcaps mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Server {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        server.line(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        let init = server.receive();
        assert_eq!(init["id"], 0, "{init}");
        server.line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn line(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Sends a `tools/call` without waiting for its answer.
    fn send(&mut self, tool: &str, arguments: Value) {
        let id = self.next_id;
        self.next_id += 1;
        self.line(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// The next answer: `Ok(structured result)` or `Err(error text)`.
    fn outcome(&mut self) -> Result<Value, String> {
        let reply = self.receive();
        let result = &reply["result"];
        if result["isError"] == true {
            return Err(result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned());
        }
        Ok(result["structuredContent"].clone())
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        self.send(tool, arguments);
        self.outcome()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Content big enough that a write takes a while (the race's window).
fn big_content() -> String {
    "rustc-wrapper = \"/tmp/evil\"\n".repeat(16 * 1024)
}

fn fresh_x(root: &Path) {
    for dir in ["x", ".cargo"] {
        let _ = std::fs::remove_dir_all(root.join(dir));
    }
    std::fs::create_dir(root.join("x")).expect("mkdir x");
}

#[derive(Default, Debug)]
struct Tally {
    moved: usize,
    written: usize,
    refused_changed: usize,
}

impl Tally {
    fn count(&mut self, wrote: bool, moved: bool, write_error: Option<&str>) {
        self.written += usize::from(wrote);
        self.moved += usize::from(moved);
        self.refused_changed += usize::from(write_error.is_some_and(|e| e.contains("changed")));
    }

    /// Both calls won sometimes: the race was run, not one order only.
    fn assert_raced(&self) {
        assert!(self.moved > 0 && self.written > 0, "{self:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_racing_a_rename_to_cargo_never_lands_there_in_one_toolbox() {
    let tree = common::Tree::new();
    let tools = toolbox(&tree);
    let content = big_content();
    let mut tally = Tally::default();
    for attempt in 0..TRIES {
        fresh_x(&tree.root);
        let (wrote, moved) = tokio::join!(
            tools.call(
                "write_file",
                json!({"path": "x/config.toml", "content": content}),
            ),
            tools.call("move_file", json!({"from": "x", "to": ".cargo"})),
        );
        assert!(
            !tree.root.join(".cargo/config.toml").exists(),
            "try {attempt}: .cargo/config.toml landed (write: {:?}, move: {:?})",
            wrote.as_ref().map(|o| &o.text),
            moved.as_ref().map(|o| &o.text),
        );
        let error = wrote.as_ref().err().map(ToolError::rule);
        tally.count(wrote.is_ok(), moved.is_ok(), error);
    }
    tally.assert_raced();
}

/// What the other process did while the server wrote `x/config.toml`.
#[cfg(target_os = "linux")]
#[derive(Debug, PartialEq, Eq)]
enum Renamed {
    /// It renamed `x` to `.cargo` while only the write's temporary file was
    /// in it: the write's final rename comes after, into the moved
    /// directory.
    MidWrite,
    /// The write had finished (or not begun) when it looked: no race.
    NotMidWrite,
}

/// Whether the process `pid` is stopped (its state in `/proc`).
#[cfg(target_os = "linux")]
fn is_stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name in parentheses.
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next());
    matches!(state, Some("T" | "t"))
}

#[cfg(target_os = "linux")]
fn signal(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).expect("pid")).expect("pid");
    rustix::process::kill_process(pid, signal).expect("signal the server");
}

/// Watches `x` (inotify) for the write's temporary file; the moment it
/// is created, stops the server (`SIGSTOP`) and, if the write's final
/// name is still absent, renames `x` to `.cargo` before letting the
/// server go on (`SIGCONT`). The server is still writing the temporary
/// file's megabyte when it is stopped, so the window is held open by the
/// test, not left to the scheduler. Says whether the rename fell in the
/// middle of the write.
#[cfg(target_os = "linux")]
fn rename_mid_write(root: &Path, watch: &rustix::fd::OwnedFd, server: u32) -> Renamed {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::fs::inotify;
    use std::os::unix::ffi::OsStrExt;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut buffer = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let created = 'wait: loop {
        assert!(std::time::Instant::now() < deadline, "no write came");
        let mut fds = [PollFd::new(watch, PollFlags::IN)];
        let timeout = Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        if poll(&mut fds, Some(&timeout)).expect("poll inotify") == 0 {
            continue;
        }
        let mut events = inotify::Reader::new(watch, &mut buffer);
        loop {
            match events.next() {
                Ok(event) if event.events().contains(inotify::ReadFlags::CREATE) => {
                    break 'wait event.file_name().map(|n| n.to_owned());
                }
                Ok(_) => {}
                Err(rustix::io::Errno::AGAIN) => break,
                Err(error) => panic!("read inotify: {error}"),
            }
        }
    };
    signal(server, rustix::process::Signal::STOP);
    while !is_stopped(server) {
        std::thread::yield_now();
    }
    let x = root.join("x");
    let temporary_there = created.is_some_and(|name| {
        let name = std::ffi::OsStr::from_bytes(name.to_bytes());
        name != "config.toml" && x.join(name).exists()
    });
    let renamed = if temporary_there && !x.join("config.toml").exists() {
        std::fs::rename(&x, root.join(".cargo")).expect("rename x");
        Renamed::MidWrite
    } else {
        Renamed::NotMidWrite
    };
    signal(server, rustix::process::Signal::CONT);
    renamed
}

/// A fresh `x` and an inotify watch of what is created in it.
#[cfg(target_os = "linux")]
fn watched_fresh_x(root: &Path) -> rustix::fd::OwnedFd {
    use rustix::fs::inotify;
    fresh_x(root);
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
        .expect("inotify");
    inotify::add_watch(&watch, root.join("x"), inotify::WatchFlags::CREATE).expect("watch x");
    watch
}

/// How many renames in the middle of a write the test below sees happen.
#[cfg(target_os = "linux")]
const MID_WRITE: usize = 100;

/// At most this many tries for [`MID_WRITE`] mid-write renames (on a
/// freshly booted CI machine fewer than half the tries fell mid-write).
#[cfg(target_os = "linux")]
const MID_WRITE_TRIES: usize = 400;

#[cfg(target_os = "linux")]
#[test]
fn a_write_whose_directory_another_process_renames_to_cargo_mid_write_never_lands_there() {
    // A second process on the root (another server's client, a command)
    // renames the directory the server is writing into, at the moment the
    // write's temporary file is there and its final rename is still to
    // come (the server is stopped for that moment, so the timing is the
    // test's, not the scheduler's). The write was judged for `x/config.toml`; its rename lands in
    // what is now `.cargo`, so the server must find that out after the
    // rename and undo the write. (Without that last check, every try here
    // lands `.cargo/config.toml`.)
    let tree = common::Tree::new();
    let policy = tree.policy("");
    let mut writer = Server::start_niced(&policy, &tree.root);
    // Big enough that writing the temporary file takes far longer than
    // seeing it appear and renaming its directory.
    let content = "rustc-wrapper = \"/tmp/evil\"\n".repeat(64 * 1024);
    let write = json!({"path": "x/config.toml", "content": content});
    let mut mid_write = 0;
    let mut tries = 0;
    // Tries until MID_WRITE of them fell in the middle of the write, at
    // most MID_WRITE_TRIES.
    for attempt in 0..MID_WRITE_TRIES {
        if mid_write == MID_WRITE {
            break;
        }
        tries += 1;
        let watch = watched_fresh_x(&tree.root);
        writer.send("write_file", write.clone());
        let renamed = rename_mid_write(&tree.root, &watch, writer.child.id());
        let wrote = writer.outcome();
        if renamed == Renamed::NotMidWrite {
            continue;
        }
        mid_write += 1;
        assert!(
            !tree.root.join(".cargo/config.toml").exists(),
            "try {attempt}: .cargo/config.toml landed (write: {wrote:?})"
        );
        let error = wrote.expect_err("a write whose directory moved reports it");
        assert!(
            error.contains("moved or replaced"),
            "try {attempt}: {error}"
        );
        // Nothing of the write is left in the moved directory.
        let left: Vec<_> = std::fs::read_dir(tree.root.join(".cargo"))
            .expect(".cargo")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "try {attempt}: {left:?}");
    }
    eprintln!("{mid_write} mid-write renames in {tries} tries");
    // The race was run: the server (at the lowest priority) is stopped as
    // its temporary file is created, so many tries fall in the middle of
    // the write (nine in ten with three busy loops on two cores, fewer
    // than half on a freshly booted machine).
    assert_eq!(
        mid_write, MID_WRITE,
        "only {mid_write} of {MID_WRITE_TRIES} tries fell mid-write"
    );
}

/// A text file of many lines with `first` on the first and `last` on the
/// last: editing it takes long enough for two edits to overlap.
fn long_file(first: &str, last: &str) -> String {
    let middle: String = (0..1500).map(|i| format!("line {i}\n")).collect();
    format!("{first}\n{middle}{last}\n")
}

/// Two edits of one file, each of its own line: every edit reported done
/// is in the file; one that is not done was refused as a conflict.
fn check_edits(path: &Path, attempt: usize, outcomes: [(&str, Result<(), String>); 2]) -> usize {
    let text = std::fs::read_to_string(path).expect("read");
    let mut landed = 0;
    for (edit, outcome) in outcomes {
        match outcome {
            Ok(()) => {
                assert!(
                    text.contains(edit),
                    "try {attempt}: an edit reported done is lost: {edit}"
                );
                landed += 1;
            }
            Err(error) => assert!(
                error.contains("changed since it was read") && error.contains("read it again"),
                "try {attempt}: {error}"
            ),
        }
    }
    landed
}

fn edit(old: &str, new: &str) -> Value {
    json!({"path": "long.txt", "old_text": old, "new_text": new})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_edits_in_one_toolbox_both_land() {
    let tree = common::Tree::new();
    let tools = toolbox(&tree);
    let path = tree.root.join("long.txt");
    for attempt in 0..50 {
        std::fs::write(&path, long_file("first", "last")).expect("write");
        let (a, b) = tokio::join!(
            tools.call("edit_file", edit("first\n", "FIRST\n")),
            tools.call("edit_file", edit("last\n", "LAST\n")),
        );
        let done = |r: Result<ToolOutput, ToolError>| r.map(|_| ()).map_err(|e| e.to_model_text());
        let landed = check_edits(&path, attempt, [("FIRST\n", done(a)), ("LAST\n", done(b))]);
        // Writers of one file in one process wait for each other.
        assert_eq!(landed, 2, "try {attempt}");
    }
}

#[test]
fn concurrent_edits_across_two_servers_never_lose_one() {
    let tree = common::Tree::new();
    let policy = tree.policy("");
    let mut a = Server::start(&policy, &tree.root);
    let mut b = Server::start(&policy, &tree.root);
    let path = tree.root.join("long.txt");
    let mut refused = 0;
    for attempt in 0..50 {
        std::fs::write(&path, long_file("first", "last")).expect("write");
        a.send("edit_file", edit("first\n", "FIRST\n"));
        b.send("edit_file", edit("last\n", "LAST\n"));
        let done = |r: Result<Value, String>| r.map(|_| ());
        let (ra, rb) = (done(a.outcome()), done(b.outcome()));
        refused += 2 - check_edits(&path, attempt, [("FIRST\n", ra), ("LAST\n", rb)]);
    }
    eprintln!("{refused} of 100 edits refused as conflicts");
}

#[test]
fn a_patch_and_an_edit_across_two_servers_never_lose_one() {
    let tree = common::Tree::new();
    let policy = tree.policy("");
    let mut a = Server::start(&policy, &tree.root);
    let mut b = Server::start(&policy, &tree.root);
    let path = tree.root.join("long.txt");
    let patch = "--- a/long.txt\n+++ b/long.txt\n@@ -1,2 +1,2 @@\n-first\n+FIRST\n line 0\n";
    for attempt in 0..50 {
        std::fs::write(&path, long_file("first", "last")).expect("write");
        a.send("apply_patch", json!({"patch": patch}));
        b.send("edit_file", edit("last\n", "LAST\n"));
        let done = |r: Result<Value, String>| r.map(|_| ());
        let (ra, rb) = (done(a.outcome()), done(b.outcome()));
        check_edits(&path, attempt, [("FIRST\n", ra), ("LAST\n", rb)]);
    }
}

#[test]
fn a_file_changed_since_it_was_read_is_not_overwritten() {
    let tree = common::Tree::new();
    let policy = tree.policy("");
    let mut a = Server::start(&policy, &tree.root);
    let mut b = Server::start(&policy, &tree.root);
    a.call("read_file", json!({"path": "edit.txt"}))
        .expect("read");
    b.call(
        "edit_file",
        json!({"path": "edit.txt", "old_text": "two", "new_text": "TWO"}),
    )
    .expect("the other session edits");
    let error = a
        .call(
            "write_file",
            json!({"path": "edit.txt", "content": "mine\n", "overwrite": true}),
        )
        .expect_err("a write made from an old read is refused");
    assert!(error.contains("rule conflict"), "{error}");
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).expect("read"),
        "one\nTWO\nthree\n"
    );
    // Read again, the write lands; its own writes do not count as changes.
    a.call("read_file", json!({"path": "edit.txt"}))
        .expect("read");
    for content in ["mine\n", "mine again\n"] {
        a.call(
            "write_file",
            json!({"path": "edit.txt", "content": content, "overwrite": true}),
        )
        .expect("the write lands");
    }
    assert_eq!(
        std::fs::read_to_string(tree.root.join("edit.txt")).expect("read"),
        "mine again\n"
    );
}

#[tokio::test]
async fn moving_a_relative_link_where_it_would_point_outside_is_refused() {
    let tree = common::Tree::new();
    let tools = toolbox(&tree);
    let root = &tree.root;
    std::fs::create_dir_all(root.join("a/d")).expect("mkdir");
    // `a/d/l` leads to the root's `edit.txt`; from `d/l` it would lead to
    // the directory above the root.
    std::os::unix::fs::symlink("../../edit.txt", root.join("a/d/l")).expect("link");
    std::os::unix::fs::symlink("../edit.txt", root.join("a/top")).expect("link");
    let refused = [
        ("a/top", "top"), // a link moved shallower
        ("a/d", "d"),     // a link inside a moved directory
        ("a/d/l", "a/l"), // ... and moved on its own
    ];
    for (from, to) in refused {
        let err = tools
            .call("move_file", json!({"from": from, "to": to}))
            .await
            .expect_err(from);
        assert_eq!(err.rule(), "link-outside-roots", "{from}: {err}");
        assert!(root.join(from).symlink_metadata().is_ok(), "{from} stays");
        assert!(root.join(to).symlink_metadata().is_err(), "{to} not made");
    }
    // Deeper, where it still leads inside; an absolute link anywhere.
    std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
    tools
        .call("move_file", json!({"from": "a/d", "to": "a/b/d"}))
        .await
        .expect("still inside the root");
    std::os::unix::fs::symlink(tree.outside.join("secret.txt"), root.join("a/abs")).expect("link");
    tools
        .call("move_file", json!({"from": "a/abs", "to": "abs"}))
        .await
        .expect("an absolute link leads where it led");
}

#[tokio::test]
async fn edit_file_refuses_text_that_is_not_utf8_and_leaves_it_whole() {
    let tree = common::Tree::new();
    let tools = toolbox(&tree);
    let latin1 = b"caf\xe9\nna\xefve\nend\n";
    std::fs::write(tree.root.join("latin1.txt"), latin1).expect("write");
    let err = tools
        .call(
            "edit_file",
            json!({"path": "latin1.txt", "old_text": "end", "new_text": "END"}),
        )
        .await
        .expect_err("not UTF-8");
    assert_eq!(err.rule(), "not-text", "{err}");
    assert_eq!(
        std::fs::read(tree.root.join("latin1.txt")).expect("read"),
        latin1
    );
}

#[tokio::test]
async fn edit_file_counts_overlapping_occurrences() {
    let tree = common::Tree::new();
    let tools = toolbox(&tree);
    std::fs::write(tree.root.join("a.txt"), "aaa\n").expect("write");
    let err = tools
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_text": "aa", "new_text": "b"}),
        )
        .await
        .expect_err("two occurrences");
    assert_eq!(err.rule(), "edit-ambiguous", "{err}");
    assert!(err.to_string().contains("occurs 2 times"), "{err}");
}
