//! Byte streams as the proxy sees them: a stream that counts what goes
//! through it (an upstream connection's bytes go into the log), and gives
//! back first the bytes read ahead of it (a tunnel's first bytes, read to
//! tell TLS from cleartext HTTP).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::log::Bytes;

/// A stream whose bytes are counted (what is read is `received`, what is
/// written is `sent`), with bytes read ahead of it given back first.
pub(crate) struct Wire<S> {
    inner: S,
    bytes: Option<Arc<Bytes>>,
    ahead: Vec<u8>,
    at: usize,
}

impl<S> Wire<S> {
    /// `inner`, counted into `bytes`.
    pub(crate) fn new(inner: S, bytes: Arc<Bytes>) -> Wire<S> {
        Wire {
            inner,
            bytes: Some(bytes),
            ahead: Vec::new(),
            at: 0,
        }
    }

    /// `inner`, not counted, `ahead` read from it already.
    pub(crate) fn ahead(ahead: Vec<u8>, inner: S) -> Wire<S> {
        Wire {
            inner,
            bytes: None,
            ahead,
            at: 0,
        }
    }

    fn sent(&self, polled: &Poll<io::Result<usize>>) {
        if let (Some(bytes), Poll::Ready(Ok(n))) = (&self.bytes, polled) {
            bytes.add_sent(*n);
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
        if let Some(bytes) = &this.bytes {
            bytes.add_received(buf.filled().len().saturating_sub(before));
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
