//! The connection under hyper: a `TcpStream` that can be killed with a real
//! TCP reset, on cue from a response body.

use std::io;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::journal::lock;

/// Shared between a connection's socket and the bodies answered on it.
#[derive(Debug, Default)]
pub(crate) struct ConnControl {
    /// Once set, the socket refuses every read and write and resets on drop.
    killed: AtomicBool,
    /// A body waits for the socket to be flushed before the reset.
    reset_requested: AtomicBool,
    pending: Mutex<PendingReset>,
}

#[derive(Debug, Default)]
struct PendingReset {
    flushed: bool,
    waker: Option<Waker>,
}

impl ConnControl {
    /// Kills the connection now: no byte more goes out, and the close is a reset.
    pub(crate) fn kill(&self) {
        self.killed.store(true, Ordering::Release);
    }

    fn killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Asks for a reset once everything written so far is on the socket. Returns
    /// `true` (and kills the connection) when that is already the case; otherwise
    /// `waker` is woken when it is.
    pub(crate) fn request_reset(&self, waker: &Waker) -> bool {
        let mut pending = lock(&self.pending);
        if pending.flushed {
            self.kill();
            return true;
        }
        self.reset_requested.store(true, Ordering::Release);
        match &pending.waker {
            Some(w) if w.will_wake(waker) => {}
            _ => pending.waker = Some(waker.clone()),
        }
        false
    }

    /// hyper flushes the socket only after writing its whole buffer, so a flush
    /// after a reset request means the bytes before the reset are out.
    fn on_flushed(&self) {
        if !self.reset_requested.load(Ordering::Acquire) {
            return;
        }
        let mut pending = lock(&self.pending);
        pending.flushed = true;
        if let Some(waker) = pending.waker.take() {
            waker.wake();
        }
    }
}

fn reset_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "chaos: connection reset by fault",
    )
}

/// A TCP stream that obeys its [`ConnControl`].
pub(crate) struct ChaosIo {
    tcp: TcpStream,
    control: std::sync::Arc<ConnControl>,
}

impl ChaosIo {
    pub(crate) fn new(tcp: TcpStream, control: std::sync::Arc<ConnControl>) -> Self {
        ChaosIo { tcp, control }
    }
}

impl AsyncRead for ChaosIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.control.killed() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for ChaosIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.control.killed() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.control.killed() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.control.killed() {
            return Poll::Ready(Err(reset_error()));
        }
        let flushed = Pin::new(&mut self.tcp).poll_flush(cx);
        if let Poll::Ready(Ok(())) = flushed {
            self.control.on_flushed();
        }
        flushed
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.control.killed() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

impl Drop for ChaosIo {
    fn drop(&mut self) {
        if self.control.killed() {
            // SO_LINGER 0: close() sends RST instead of FIN, the abrupt close a
            // crashed or cut-off upstream produces. Best effort: the socket closes anyway.
            let _ = self.tcp.set_zero_linger();
        }
    }
}
