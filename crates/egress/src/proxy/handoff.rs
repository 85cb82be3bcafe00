//! A listener handed over on the proxy's UNIX socket: the first hop out of
//! a private network view, without a relay.
//!
//! A command in a private view reaches the proxy at `127.0.0.1:PORT` of
//! the view's own network. Rather than relay each connection's bytes from
//! there to the UNIX socket (a second hop: every byte and every request
//! passed on once more), the view's first process listens on that port
//! itself and hands the *listening socket* to the proxy: a connection to
//! the UNIX socket whose first byte is `0` and which carries the socket's
//! descriptor (`SCM_RIGHTS`). The proxy answers `+` and from then on
//! accepts the command's connections itself, for as long as that UNIX
//! connection stays open (the view's first process holds it until the
//! command ends); when it closes, the listener is closed. It answers `-`
//! and closes when what came is not a listening TCP socket bound to a
//! loopback address, or when it already holds [`MAX_HANDED_OVER`]
//! listeners.
//!
//! Anything else on the UNIX socket is a client's HTTP (no request starts
//! with a `0` byte). A handed-over listener gives whoever sent it nothing
//! it did not have: its connections are judged like any other.
//!
//! Linux only: private views are Linux's (and the checks of what came use
//! `SO_DOMAIN`, `SO_ACCEPTCONN` and `MSG_CMSG_CLOEXEC`, which macOS lacks).

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SocketType,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, Interest};
use tokio::net::{TcpListener, UnixStream};

use super::Shared;

/// The first byte of a hand-over (an HTTP request never starts with it).
pub const HANDOFF: u8 = 0;

/// The answer to a hand-over the proxy took.
pub const TAKEN: u8 = b'+';

/// The answer to a hand-over it refused.
pub const REFUSED: u8 = b'-';

/// Listeners one proxy holds at once (a view hands over one).
pub const MAX_HANDED_OVER: usize = 8;

/// Does this UNIX connection begin with a hand-over? Peeks at its first
/// byte without taking it (`None`: it closed or failed before sending one).
pub(super) async fn starts_with_handoff(stream: &UnixStream) -> Option<bool> {
    let mut first = [0u8; 1];
    loop {
        stream.readable().await.ok()?;
        let peeked = stream.try_io(Interest::READABLE, || {
            rustix::net::recv(stream, &mut first, RecvFlags::PEEK | RecvFlags::DONTWAIT)
                .map(|(n, _)| n)
                .map_err(std::io::Error::from)
        });
        match peeked {
            Ok(0) => return None,
            Ok(_) => return Some(first[0] == HANDOFF),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
    }
}

/// Takes the hand-over that `stream` begins with, then serves the
/// listener until `stream` closes.
pub(super) async fn take(shared: Arc<Shared>, mut stream: UnixStream) {
    let (listener, held) = match receive(&stream).await.and_then(|fd| adopt(&shared, fd)) {
        Ok(adopted) => adopted,
        Err(_) => {
            let _ = stream.write_all(&[REFUSED]).await;
            return;
        }
    };
    if stream.write_all(&[TAKEN]).await.is_err() {
        return;
    }
    let serving = super::accept_loop(shared, listener);
    let closed = async {
        // Whatever else comes on it means nothing; its end ends the listener.
        let mut sink = [0u8; 64];
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        () = serving => {}
        () = closed => {}
    }
    drop(held);
}

/// One of the [`MAX_HANDED_OVER`] slots, freed when dropped.
struct HeldSlot(Arc<Shared>);

impl HeldSlot {
    /// A free slot, if there is one.
    fn take(shared: &Arc<Shared>) -> Option<HeldSlot> {
        shared
            .handed_over
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_HANDED_OVER).then_some(n + 1)
            })
            .ok()
            .map(|_| HeldSlot(shared.clone()))
    }
}

impl Drop for HeldSlot {
    fn drop(&mut self) {
        self.0.handed_over.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Receives the `0` byte and the one descriptor it carries.
async fn receive(stream: &UnixStream) -> std::io::Result<OwnedFd> {
    loop {
        stream.readable().await?;
        let received = stream.try_io(Interest::READABLE, || {
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut byte = [0u8; 1];
            let message = rustix::net::recvmsg(
                stream,
                &mut [IoSliceMut::new(&mut byte)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
            )?;
            let mut fds: Vec<OwnedFd> = Vec::new();
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(received) = message {
                    fds.extend(received);
                }
            }
            // More than one, or none: not a hand-over (extra ones are closed
            // as they drop).
            if message.bytes != 1 || byte[0] != HANDOFF || fds.len() != 1 {
                return Err(invalid("a hand-over is one 0 byte carrying one descriptor"));
            }
            Ok(fds.remove(0))
        });
        match received {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => return other,
        }
    }
}

/// Checks that `fd` is a listening TCP socket bound to a loopback address,
/// and takes a slot for it.
fn adopt(shared: &Arc<Shared>, fd: OwnedFd) -> std::io::Result<(TcpListener, HeldSlot)> {
    let domain = rustix::net::sockopt::socket_domain(fd.as_fd())?;
    if domain != AddressFamily::INET && domain != AddressFamily::INET6 {
        return Err(invalid("not an IP socket"));
    }
    if rustix::net::sockopt::socket_type(fd.as_fd())? != SocketType::STREAM {
        return Err(invalid("not a stream socket"));
    }
    if !rustix::net::sockopt::socket_acceptconn(fd.as_fd())? {
        return Err(invalid("not listening"));
    }
    let listener = std::net::TcpListener::from(fd);
    let local: SocketAddr = listener.local_addr()?;
    if !local.ip().is_loopback() {
        return Err(invalid("not bound to a loopback address"));
    }
    listener.set_nonblocking(true)?;
    let held = HeldSlot::take(shared).ok_or_else(|| invalid("too many listeners handed over"))?;
    Ok((TcpListener::from_std(listener)?, held))
}

fn invalid(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned())
}
