//! A tunnel's bytes, moved both ways until each side has finished sending
//! (then the other side's sending half is shut), or until either fails.
//!
//! On Linux the kernel moves them: `splice` from one socket into a pipe
//! and from the pipe into the other socket, so the bytes never enter the
//! proxy's memory (on loopback that halves the copies a proxied byte
//! costs). Elsewhere, or when the client's stream is not a plain TCP or
//! UNIX socket, or no pipe can be made (out of descriptors), they are
//! copied through a buffer each way. The bytes are the same either way:
//! the relay only moves them, it never looks at them.

use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Buffer of each direction when copying.
const COPY_BUFFER: usize = 64 * 1024;

/// Relays between the client (its upgraded connection) and `upstream`.
pub(super) async fn relay(client: Upgraded, upstream: TcpStream) {
    #[cfg(target_os = "linux")]
    let (client, upstream) = match kernel::relay(client, upstream).await {
        Ok(()) => return,
        Err(unspliced) => unspliced,
    };
    copy(client, upstream).await;
}

/// Copies through a buffer each way.
async fn copy(client: Upgraded, mut upstream: TcpStream) {
    let mut client = TokioIo::new(client);
    let _ = tokio::io::copy_bidirectional_with_sizes(
        &mut client,
        &mut upstream,
        COPY_BUFFER,
        COPY_BUFFER,
    )
    .await;
}

#[cfg(target_os = "linux")]
mod kernel {
    //! `splice` through a pipe each way.

    use std::io;
    use std::os::fd::{AsFd, OwnedFd};

    use hyper::upgrade::Upgraded;
    use hyper_util::rt::TokioIo;
    use rustix::pipe::{PipeFlags, SpliceFlags};
    use tokio::io::{AsyncWriteExt, Interest};
    use tokio::net::{TcpStream, UnixStream};

    /// Asked of each pipe (the kernel may give less; the default is 64 KiB).
    const PIPE_SIZE: usize = 1024 * 1024;

    /// A stream socket registered with Tokio.
    pub(super) trait Socket: AsFd + Sync {
        fn ready_for(&self, interest: Interest) -> impl Future<Output = io::Result<()>> + Send;
        fn attempt<R>(
            &self,
            interest: Interest,
            f: impl FnOnce() -> io::Result<R>,
        ) -> io::Result<R>;
    }

    macro_rules! socket {
        ($t:ty) => {
            impl Socket for $t {
                async fn ready_for(&self, interest: Interest) -> io::Result<()> {
                    self.ready(interest).await.map(drop)
                }
                fn attempt<R>(
                    &self,
                    interest: Interest,
                    f: impl FnOnce() -> io::Result<R>,
                ) -> io::Result<R> {
                    self.try_io(interest, f)
                }
            }
        };
    }
    socket!(TcpStream);
    socket!(UnixStream);

    /// Relays with `splice` when the client is a TCP or UNIX socket and
    /// the pipes can be made; otherwise gives both back untouched.
    pub(super) async fn relay(
        client: Upgraded,
        upstream: TcpStream,
    ) -> Result<(), (Upgraded, TcpStream)> {
        let client = match client.downcast::<TokioIo<TcpStream>>() {
            Ok(parts) => return spliced(parts.io.into_inner(), parts.read_buf, upstream).await,
            Err(client) => client,
        };
        match client.downcast::<TokioIo<UnixStream>>() {
            Ok(parts) => spliced(parts.io.into_inner(), parts.read_buf, upstream).await,
            Err(client) => Err((client, upstream)),
        }
    }

    /// Both ways through a pipe each, after the bytes the client sent
    /// behind its `CONNECT` (already read by the proxy) have gone upstream.
    async fn spliced<S>(
        mut client: S,
        early: bytes::Bytes,
        mut upstream: TcpStream,
    ) -> Result<(), (Upgraded, TcpStream)>
    where
        S: Socket + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        if upstream.write_all(&early).await.is_err() {
            return Ok(());
        }
        if let (Ok(up), Ok(down)) = (Pipe::new(), Pipe::new()) {
            let _ = tokio::try_join!(
                one_way(&client, &upstream, &up),
                one_way(&upstream, &client, &down)
            );
        } else {
            // Out of descriptors: copy instead.
            let _ = tokio::io::copy_bidirectional_with_sizes(
                &mut client,
                &mut upstream,
                super::COPY_BUFFER,
                super::COPY_BUFFER,
            )
            .await;
        }
        Ok(())
    }

    struct Pipe {
        read: OwnedFd,
        write: OwnedFd,
        size: usize,
    }

    impl Pipe {
        fn new() -> io::Result<Pipe> {
            let (read, write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
            // A larger pipe moves more per call; the default serves too.
            let size = rustix::pipe::fcntl_setpipe_size(&write, PIPE_SIZE)
                .or_else(|_| rustix::pipe::fcntl_getpipe_size(&write))?;
            Ok(Pipe { read, write, size })
        }
    }

    /// `from` → pipe → `to` until `from` ends (then `to`'s sending half is
    /// shut). The pipe is emptied before it is filled again, so it is
    /// never full when filled nor empty when drained: a "would block" is
    /// always the socket's.
    async fn one_way(from: &impl Socket, to: &impl Socket, pipe: &Pipe) -> io::Result<()> {
        let flags = SpliceFlags::MOVE | SpliceFlags::NONBLOCK;
        loop {
            let filled = retry(from, Interest::READABLE, || {
                rustix::pipe::splice(from, None, &pipe.write, None, pipe.size, flags)
            })
            .await?;
            if filled == 0 {
                let _ = rustix::net::shutdown(to, rustix::net::Shutdown::Write);
                return Ok(());
            }
            let mut left = filled;
            while left > 0 {
                let moved = retry(to, Interest::WRITABLE, || {
                    rustix::pipe::splice(&pipe.read, None, to, None, left, flags)
                })
                .await?;
                if moved == 0 {
                    return Err(io::ErrorKind::WriteZero.into());
                }
                left -= moved;
            }
        }
    }

    /// Waits until `socket` is ready, then tries `f`; again on "would
    /// block" (which clears the readiness).
    async fn retry(
        socket: &impl Socket,
        interest: Interest,
        mut f: impl FnMut() -> rustix::io::Result<usize>,
    ) -> io::Result<usize> {
        loop {
            socket.ready_for(interest).await?;
            match socket.attempt(interest, || f().map_err(io::Error::from)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return done,
            }
        }
    }
}
