//! The proxy's port inside a view: `127.0.0.1:PORT` of the view's own
//! network, listened on by the view's first process and handed to the
//! network proxy, which accepts the command's connections itself (no
//! relay between them: one hop out, not two).
//!
//! The hand-over is the proxy socket's protocol (see
//! [`NetworkProxy::serve`](crate::NetworkProxy::serve)): on a new
//! connection to the proxy's UNIX socket, one `0` byte carrying the
//! listening socket (`SCM_RIGHTS`); the proxy answers `+` when it took it.
//! The connection stays open while the view lives (it closes when the
//! view's first process exits, and the proxy then closes the listener).
//! The socket is reached on the host before the view's root replaces the
//! host's: the command never sees it.

use std::io::{self, Read as _};
use std::mem::MaybeUninit;
use std::net::TcpListener;
use std::os::fd::{AsFd as _, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

/// The first byte of a hand-over.
pub(super) const HANDOFF: u8 = 0;

/// The answer of the side that took what was handed over.
pub(super) const TAKEN: u8 = b'+';

/// How long the proxy has to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// Connects to `socket`, sends one `0` byte carrying `fd`, and waits for
/// the `+` that says the other side took it: the hand-over of this
/// module, and of the names layer's descriptor to the runner. Returns the
/// connection, which the other side may watch for the sender's end.
pub(super) fn send_descriptor(fd: BorrowedFd<'_>, socket: &Path) -> io::Result<UnixStream> {
    let mut stream = UnixStream::connect(socket)?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [fd];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    rustix::net::sendmsg(
        &stream,
        &[io::IoSlice::new(&[HANDOFF])],
        &mut control,
        SendFlags::empty(),
    )?;
    stream.set_read_timeout(Some(ANSWER_WITHIN))?;
    let mut answer = [0u8; 1];
    stream.read_exact(&mut answer)?;
    if answer[0] != TAKEN {
        return Err(io::Error::other("the descriptor handed over was not taken"));
    }
    Ok(stream)
}

/// The connection the hand-over was made on, held for the life of this
/// process (the view's first process).
static HELD: OnceLock<UnixStream> = OnceLock::new();

/// Listens on `127.0.0.1:port` (the view's loopback must be up) and hands
/// the listener to the proxy at `socket`; this process keeps no copy.
pub(crate) fn hand_over(port: u16, socket: &Path) -> io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let stream = send_descriptor(listener.as_fd(), socket)
        .map_err(|e| io::Error::new(e.kind(), format!("the network proxy: {e}")))?;
    HELD.set(stream)
        .map_err(|_| io::Error::other("a listener was handed over already"))?;
    Ok(())
}
