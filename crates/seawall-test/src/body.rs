//! Response bodies that play a script, always ready (no timers): what a
//! provider's answer looks like to the layer under test.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::BoxError;

/// Scripted frames (or errors), in order; ends when the script does.
#[derive(Debug, Default)]
pub struct Script(pub VecDeque<Result<Frame<Bytes>, BoxError>>);

impl Script {
    /// The data frames `chunks`, then the end.
    pub fn data<I, T>(chunks: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<Bytes>,
    {
        Script(
            chunks
                .into_iter()
                .map(|c| Ok(Frame::data(c.into())))
                .collect(),
        )
    }

    /// Data frames and errors, in order.
    pub fn items<I>(items: I) -> Self
    where
        I: IntoIterator<Item = Result<Bytes, BoxError>>,
    {
        Script(
            items
                .into_iter()
                .map(|item| item.map(Frame::data))
                .collect(),
        )
    }
}

impl Body for Script {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        Poll::Ready(self.0.pop_front())
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }
}

/// A body made of given chunks (or I/O errors), counting what was pulled.
/// After the last chunk it ends, or stays pending forever when
/// [`then_pending`](Chunks::then_pending).
#[derive(Debug)]
pub struct Chunks {
    items: VecDeque<Result<Bytes, io::Error>>,
    then_pending: bool,
    /// Data bytes pulled so far.
    pub pulled: Arc<AtomicU64>,
    /// Times the body was polled.
    pub polls: Arc<AtomicU64>,
}

impl Chunks {
    /// The chunks, then the end.
    pub fn new<I, T>(chunks: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<Bytes>,
    {
        Chunks {
            items: chunks.into_iter().map(|c| Ok(c.into())).collect(),
            then_pending: false,
            pulled: Arc::default(),
            polls: Arc::default(),
        }
    }

    /// An I/O error of `kind` after the chunks.
    pub fn then_error(mut self, kind: io::ErrorKind) -> Self {
        self.items.push_back(Err(io::Error::from(kind)));
        self
    }

    /// Pending forever after the chunks instead of ending.
    pub fn then_pending(mut self) -> Self {
        self.then_pending = true;
        self
    }
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.polls.fetch_add(1, Ordering::SeqCst);
        match self.items.pop_front() {
            Some(Ok(data)) => {
                self.pulled.fetch_add(data.len() as u64, Ordering::SeqCst);
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            Some(Err(error)) => Poll::Ready(Some(Err(error))),
            None if self.then_pending => Poll::Pending,
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.items.is_empty() && !self.then_pending
    }

    fn size_hint(&self) -> SizeHint {
        let known: u64 = self
            .items
            .iter()
            .map(|c| c.as_ref().map_or(0, |b| b.len() as u64))
            .sum();
        if self.then_pending {
            let mut hint = SizeHint::new();
            hint.set_lower(known);
            hint
        } else {
            SizeHint::with_exact(known)
        }
    }
}

/// An endless-looking body: an optional head, `count` copies of one frame,
/// an optional tail, counting the frame bytes pulled. Holds one frame in
/// memory however many it yields.
#[derive(Debug)]
pub struct Repeat {
    head: Option<Bytes>,
    frame: Bytes,
    remaining: u64,
    tail: Option<Bytes>,
    /// Bytes of the repeated frame pulled so far.
    pub pulled: Arc<AtomicU64>,
}

impl Repeat {
    /// `frame`, `count` times.
    pub fn new(frame: Bytes, count: u64) -> Self {
        Repeat {
            head: None,
            frame,
            remaining: count,
            tail: None,
            pulled: Arc::default(),
        }
    }

    /// `head` before the frames (nothing when empty).
    pub fn head(mut self, head: &str) -> Self {
        self.head = Some(Bytes::copy_from_slice(head.as_bytes())).filter(|b| !b.is_empty());
        self
    }

    /// `tail` after the frames (nothing when empty).
    pub fn tail(mut self, tail: &str) -> Self {
        self.tail = Some(Bytes::copy_from_slice(tail.as_bytes())).filter(|b| !b.is_empty());
        self
    }
}

impl Body for Repeat {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(head) = self.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        if self.remaining > 0 {
            self.remaining -= 1;
            self.pulled
                .fetch_add(self.frame.len() as u64, Ordering::SeqCst);
            return Poll::Ready(Some(Ok(Frame::data(self.frame.clone()))));
        }
        Poll::Ready(self.tail.take().map(|tail| Ok(Frame::data(tail))))
    }
}

/// `body` saying `hint` as its size, whatever it sends: a body whose hint
/// understates it (hostile, or a stale length) for what trusts the hint.
#[derive(Debug)]
pub struct Hinted<B> {
    body: B,
    hint: SizeHint,
}

impl<B> Hinted<B> {
    /// `body`, its size said to be `hint`.
    pub fn new(body: B, hint: SizeHint) -> Self {
        Hinted { body, hint }
    }
}

impl<B: Body + Unpin> Body for Hinted<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn size_hint(&self) -> SizeHint {
        self.hint
    }
}
