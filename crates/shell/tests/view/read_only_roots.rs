//! A read-only root holds files, not channels: the host's sockets, FIFOs
//! and devices in it are unreachable from the view, as in a writable root.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentcaps_paths::PathPolicy;
use agentcaps_shell::{CommandRequest, Exit};

use crate::support::{Project, run};

/// What the command tries on each special file of the read-only root:
/// connect to the socket, write to the FIFO (without waiting for a
/// reader), read the device.
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

#[test]
fn a_hosts_socket_fifo_and_device_in_a_read_only_root_are_unreachable() {
    let project = Project::new();
    let ro_dir = tempfile::tempdir().expect("read-only root");
    let ro = ro_dir.path().canonicalize().expect("canonical");
    std::fs::write(ro.join("notes.txt"), "read-only notes\n").expect("notes");
    // A listener on the host (an agent's socket), counting connections.
    let listener = std::os::unix::net::UnixListener::bind(ro.join("agent.sock")).expect("bind");
    let accepted = Arc::new(AtomicUsize::new(0));
    listener.set_nonblocking(true).expect("nonblocking");
    let stop = Arc::new(AtomicUsize::new(0));
    let server = std::thread::spawn({
        let accepted = Arc::clone(&accepted);
        let stop = Arc::clone(&stop);
        move || {
            while stop.load(Ordering::SeqCst) == 0 {
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
    // A FIFO with a reader on the host, and a device node (`/dev/zero`'s).
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ro.join("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .expect("mkfifo");
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(ro.join("pipe"))
        .expect("the host's reader");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ro.join("zero"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    )
    .expect("mknod (the tests run as root)");
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
    stop.store(1, Ordering::SeqCst);
    server.join().expect("the listener");
    assert_eq!(result.exit, Exit::Code(0), "{result:?}");
    assert_eq!(
        result.stdout, "socket: ECONNREFUSED\nfifo: ENXIO\ndevice: EACCES\nread-only notes\n",
        "{result:?}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the host's listener was reached"
    );
    let mut carried = Vec::new();
    let _ = reader.read_to_end(&mut carried);
    assert!(carried.is_empty(), "the FIFO carried {carried:?}");
    crate::support::assert_full(&result);
}
