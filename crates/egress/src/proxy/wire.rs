//! Byte streams as the proxy sees them: a stream that counts what goes
//! through it (an upstream connection's bytes go into the log), and gives
//! back first the bytes read ahead of it (a tunnel's first bytes, read to
//! tell TLS from cleartext HTTP); and a client's stream that notes whether
//! it sent bytes the proxy has not answered yet.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::log::Bytes;

/// A stream whose bytes are counted (what is read is `received`, what is
/// written is `sent`), with bytes read ahead of it given back first; or a
/// client's stream that notes whether bytes came in since the proxy last
/// wrote to it.
pub(crate) struct Wire<S> {
    inner: S,
    bytes: Option<Arc<Bytes>>,
    ahead: Vec<u8>,
    at: usize,
    unanswered: Option<Arc<AtomicBool>>,
}

impl<S> Wire<S> {
    /// `inner`, counted into `bytes`.
    pub(crate) fn new(inner: S, bytes: Arc<Bytes>) -> Wire<S> {
        Wire {
            inner,
            bytes: Some(bytes),
            ahead: Vec::new(),
            at: 0,
            unanswered: None,
        }
    }

    /// `inner`, not counted, `ahead` read from it already.
    pub(crate) fn ahead(ahead: Vec<u8>, inner: S) -> Wire<S> {
        Wire {
            inner,
            bytes: None,
            ahead,
            at: 0,
            unanswered: None,
        }
    }

    /// `inner`, and a flag it keeps: bytes came in since the last write.
    /// When the header-read timeout closes a client's connection, that
    /// tells a request head begun and never finished (listed) from a
    /// connection that sat idle, new or after its last answer (not a
    /// request).
    pub(crate) fn heard(inner: S) -> (Wire<S>, Arc<AtomicBool>) {
        let unanswered = Arc::new(AtomicBool::new(false));
        let wire = Wire {
            inner,
            bytes: None,
            ahead: Vec::new(),
            at: 0,
            unanswered: Some(unanswered.clone()),
        };
        (wire, unanswered)
    }

    fn sent(&self, polled: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = polled {
            if let Some(bytes) = &self.bytes {
                bytes.add_sent(*n);
            }
            if let Some(unanswered) = self.unanswered.as_ref().filter(|_| *n > 0) {
                unanswered.store(false, Ordering::Relaxed);
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Wire<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(rest) = this.ahead.get(this.at..).filter(|r| !r.is_empty()) {
            let n = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        let n = buf.filled().len().saturating_sub(before);
        if let Some(bytes) = &this.bytes {
            bytes.add_received(n);
        }
        if let Some(unanswered) = this.unanswered.as_ref().filter(|_| n > 0) {
            unanswered.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Wire<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.sent(&polled);
        polled
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.sent(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
