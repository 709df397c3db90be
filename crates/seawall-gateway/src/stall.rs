//! A client connection whose writes wait for the client only so long.
//!
//! hyper polls an answer's body only while the connection can take its
//! bytes. A client that stops reading (a zero TCP window) or vanished
//! without closing (a laptop shut, a mobile handoff) is never noticed
//! then, once the kernel's buffers toward it are full: the body is never
//! polled again, so neither the stream guard's idle bound nor the
//! operation's deadline (timers inside it) ever fire, and the answer's
//! task, its upstream connection and its retries are held until shutdown.
//! [`StallBound`] fails a write that has waited past its bound for room;
//! hyper closes the connection, which drops the answer (the upstream call
//! is cancelled, counted `cancelled`). A client that vanished while its
//! answer trickles in slower than the buffers fill is only found when they
//! are full (or by TCP's own retransmission timeout).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `io` whose writes (and flushes) fail with `TimedOut` once one has
/// waited `bound` for the client to take bytes. Reads pass through.
#[derive(Debug)]
pub(crate) struct StallBound<T> {
    io: T,
    bound: Duration,
    /// Armed when a write waits; dropped when one goes through. Boxed:
    /// made only for a client that makes the connection wait.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl<T> StallBound<T> {
    pub(crate) fn new(io: T, bound: Duration) -> Self {
        StallBound {
            io,
            bound,
            waiting: None,
        }
    }

    /// What a write that returned `poll` amounts to: a wait past the bound
    /// is the client's stall.
    fn bounded<R>(
        &mut self,
        poll: Poll<io::Result<R>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.waiting = None;
            return poll;
        }
        let bound = self.bound;
        let waiting = self
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(bound)));
        ready!(waiting.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client took no bytes for {bound:?}"),
        )))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for StallBound<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for StallBound<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.bounded(poll, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.bounded(poll, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.bounded(poll, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A peer that never reads: the write fails at the bound, not before,
    /// on the paused clock.
    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_fails_at_the_bound() {
        let (near, _far) = tokio::io::duplex(16);
        let mut bounded = StallBound::new(near, Duration::from_secs(60));
        bounded.write_all(&[0; 16]).await.unwrap();
        let started = tokio::time::Instant::now();
        let error = bounded.write_all(&[0; 1]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(60));
    }

    /// A peer that reads slowly but reads: each wait is its own, and none
    /// reaches the bound.
    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_is_not_a_stall() {
        use tokio::io::AsyncReadExt;
        let (near, mut far) = tokio::io::duplex(16);
        let reader = tokio::spawn(async move {
            let mut buf = [0; 16];
            let mut read = 0;
            while read < 160 {
                tokio::time::sleep(Duration::from_secs(50)).await;
                read += far.read(&mut buf).await.unwrap();
            }
            read
        });
        let mut bounded = StallBound::new(near, Duration::from_secs(60));
        bounded.write_all(&[0; 160]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 160);
    }
}
