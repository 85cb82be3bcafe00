//! A read-only root or tool installation holds files, not channels: the
//! host's sockets, FIFOs and devices in it are unreachable from the view,
//! as in a writable root.

use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, Exit, RunResult};

use crate::support::{Project, run};

/// What the command tries on each special file of the directory it is
/// given: connect to the socket, write to the FIFO (without waiting for a
/// reader), read the device; then read an ordinary file.
const PROBE: &str = "\
import errno, os, socket, sys
ro = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(os.path.join(ro, 'agent.sock'))
    s.sendall(b'FROM-THE-VIEW')
    print('socket: connected', s.recv(64))
except OSError as e:
    print('socket:', errno.errorcode[e.errno])
try:
    fd = os.open(os.path.join(ro, 'pipe'), os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b'FROM-THE-VIEW')
    print('fifo: written')
except OSError as e:
    print('fifo:', errno.errorcode[e.errno])
try:
    with open(os.path.join(ro, 'zero'), 'rb') as f:
        print('device: read', len(f.read(4)))
except OSError as e:
    print('device:', errno.errorcode[e.errno])
print(open(os.path.join(ro, 'notes.txt')).read(), end='')
";

/// What the probe prints when nothing of the host is reached.
const UNREACHED: &str = "socket: ECONNREFUSED\nfifo: ENXIO\ndevice: EACCES\nnotes\n";

/// The host's ends of the special files planted in a directory: a
/// listener that counts connections (an agent's socket), a reader of the
/// FIFO, and a device node (`/dev/zero`'s).
struct HostEnds {
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    server: std::thread::JoinHandle<()>,
    reader: std::fs::File,
}

impl HostEnds {
    fn plant(dir: &Path) -> Self {
        std::fs::write(dir.join("notes.txt"), "notes\n").expect("notes");
        let listener =
            std::os::unix::net::UnixListener::bind(dir.join("agent.sock")).expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let server = std::thread::spawn({
            let accepted = Arc::clone(&accepted);
            let stop = Arc::clone(&stop);
            move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            accepted.fetch_add(1, Ordering::SeqCst);
                            let _ = std::io::Write::write_all(&mut stream, b"HOST-AGENT");
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                    }
                }
            }
        });
        let node = |name: &str, kind, dev| {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                dir.join(name),
                kind,
                rustix::fs::Mode::from_raw_mode(0o666),
                dev,
            )
            .expect("mknod (the tests run as root)");
        };
        node("pipe", rustix::fs::FileType::Fifo, 0);
        node(
            "zero",
            rustix::fs::FileType::CharacterDevice,
            rustix::fs::makedev(1, 5),
        );
        let reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(dir.join("pipe"))
            .expect("the host's reader");
        Self {
            accepted,
            stop,
            server,
            reader,
        }
    }

    /// Asserts that `result` reached none of the host's ends.
    fn assert_unreached(mut self, result: &RunResult) {
        self.stop.store(true, Ordering::SeqCst);
        self.server.join().expect("the listener");
        assert_eq!(result.exit, Exit::Code(0), "{result:?}");
        assert_eq!(result.stdout, UNREACHED, "{result:?}");
        assert_eq!(
            self.accepted.load(Ordering::SeqCst),
            0,
            "the host's listener was reached"
        );
        let mut carried = Vec::new();
        let _ = self.reader.read_to_end(&mut carried);
        assert!(carried.is_empty(), "the FIFO carried {carried:?}");
        crate::support::assert_full(result);
    }
}

#[test]
fn a_hosts_socket_fifo_and_device_in_a_read_only_root_are_unreachable() {
    let project = Project::new();
    let ro_dir = tempfile::tempdir().expect("read-only root");
    let ro = ro_dir.path().canonicalize().expect("canonical");
    let host = HostEnds::plant(&ro);
    std::fs::write(project.root.join("probe.py"), PROBE).expect("probe");
    let paths = PathPolicy::builder()
        .allow(&project.root)
        .allow_read_only(&ro)
        .build()
        .expect("paths");
    let policy = project
        .policy()
        .allow_command("python3")
        .path_policy(paths)
        .build()
        .expect("policy");
    let result = run(
        &policy,
        CommandRequest::argv(["python3", "probe.py", &ro.display().to_string()]),
    );
    host.assert_unreached(&result);
}

#[test]
fn a_hosts_socket_fifo_and_device_in_a_tool_installation_are_unreachable() {
    // A tool in a directory of its own (`…/opt/tool/bin/probe`, which the
    // view holds whole), with the host's channels beside it.
    let project = Project::new();
    let (_base, tool) = crate::support::tool_installation();
    std::fs::create_dir_all(tool.join("bin")).expect("mkdir");
    let host = HostEnds::plant(&tool);
    let probe = tool.join("bin/probe");
    // (Its own directory is where it looks: an argument naming it would
    // be refused as outside the roots.)
    let script = format!(
        "#!/usr/bin/python3\nimport sys\nsys.argv[1:] = [{:?}]\n{PROBE}",
        tool.display().to_string()
    );
    std::fs::write(&probe, script).expect("probe");
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let policy = project
        .policy()
        .allow_program(&probe)
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv([probe.display().to_string()]));
    host.assert_unreached(&result);
}

#[test]
fn a_hosts_socket_fifo_and_device_in_a_writable_root_are_unreachable_as_before() {
    // The same channels in the writable root: its overlay held them
    // before read-only roots were overlays too; this keeps it so.
    let project = Project::new();
    let host = HostEnds::plant(&project.root);
    std::fs::write(project.root.join("probe.py"), PROBE).expect("probe");
    let policy = project
        .policy()
        .allow_command("python3")
        .build()
        .expect("policy");
    let result = run(&policy, CommandRequest::argv(["python3", "probe.py", "."]));
    host.assert_unreached(&result);
}
