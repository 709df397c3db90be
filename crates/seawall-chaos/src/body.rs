//! The response body: plays a plan's steps, counts what it hands to the
//! connection, and writes the ending into the journal row.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::conn::ConnControl;
use crate::journal::{Ending, Journal, Outcome};
use crate::plan::Step;
use crate::wire::{self, ArrayWriter, Ctx, Sent};

/// Why a body stopped early. hyper aborts the connection when a body fails.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyCut {
    /// `reset_after` / `reset_before_headers`.
    #[error("chaos: connection reset by fault")]
    Reset,
    /// The server is shutting down.
    #[error("chaos: server shutting down")]
    Shutdown,
}

/// The journal row a body reports to.
pub(crate) struct JournalLink {
    pub journal: Arc<Journal>,
    pub seq: u64,
    pub arrived: Instant,
}

/// A response body played from steps.
pub(crate) struct ChaosBody {
    steps: VecDeque<Step>,
    ctx: Option<Arc<Ctx>>,
    end: Outcome,
    exact_len: Option<u64>,
    link: Option<JournalLink>,
    conn: Option<Arc<ConnControl>>,
    shutdown: Option<CancellationToken>,
    shutdown_wait: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    sleep: Option<Pin<Box<Sleep>>>,
    /// The end of the stall being played, fixed when it starts.
    stall_until: Option<Instant>,
    bytes: u64,
    tokens: u32,
    /// The number of the last content token written (0 before the first).
    last_token: u32,
    ended: bool,
    /// Where a JSON-array stream stands, when the body is one.
    array: Option<ArrayWriter>,
}

impl ChaosBody {
    /// A body of fixed bytes, outside the journal (admin answers, refusals already journaled).
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        let len = bytes.len() as u64;
        let mut steps = VecDeque::with_capacity(1);
        if len > 0 {
            steps.push_back(Step::Bytes(bytes, 0));
        }
        ChaosBody {
            steps,
            ctx: None,
            end: Outcome::Completed,
            exact_len: Some(len),
            link: None,
            conn: None,
            shutdown: None,
            shutdown_wait: None,
            sleep: None,
            stall_until: None,
            bytes: 0,
            tokens: 0,
            last_token: 0,
            ended: len == 0,
            array: None,
        }
    }

    pub(crate) fn played(
        steps: VecDeque<Step>,
        ctx: Arc<Ctx>,
        end: Outcome,
        exact_len: Option<u64>,
        link: JournalLink,
        conn: Arc<ConnControl>,
        shutdown: CancellationToken,
    ) -> Self {
        let array = ctx.json_array.then(ArrayWriter::default);
        ChaosBody {
            array,
            steps,
            ctx: Some(ctx),
            end,
            exact_len,
            link: Some(link),
            conn: Some(conn),
            shutdown: Some(shutdown),
            shutdown_wait: None,
            sleep: None,
            stall_until: None,
            bytes: 0,
            tokens: 0,
            last_token: 0,
            ended: false,
        }
    }

    fn finish(&mut self, outcome: Outcome) {
        if self.ended {
            return;
        }
        self.ended = true;
        if let Some(link) = &self.link {
            link.journal.end(
                link.seq,
                Ending {
                    outcome,
                    bytes_written: self.bytes,
                    tokens_written: self.tokens,
                    elapsed: link.arrived.elapsed(),
                },
            );
        }
    }

    /// The content tokens written so far.
    fn sent(&self) -> Sent {
        Sent {
            count: self.tokens,
            last: self.last_token,
        }
    }

    /// Hands bytes to the connection; ends the row when they are the last.
    fn emit(&mut self, bytes: Bytes, tokens: u32) -> Poll<Option<Result<Frame<Bytes>, BodyCut>>> {
        // The array closes with the answer: only a body played to its
        // healthy end writes the `]`.
        let close = self.steps.is_empty() && self.end == Outcome::Completed;
        let bytes = match &mut self.array {
            Some(array) => Bytes::from(array.piece(&bytes, close)),
            None => bytes,
        };
        self.bytes += bytes.len() as u64;
        self.tokens += tokens;
        if self.steps.is_empty() {
            // Recorded before the client can see the end of the body.
            self.finish(self.end);
        }
        Poll::Ready(Some(Ok(Frame::data(bytes))))
    }

    /// Polls a sleep until `deadline`, arming it on first call; returns the deadline it fired at.
    fn poll_sleep(
        &mut self,
        cx: &mut Context<'_>,
        deadline: impl FnOnce() -> Instant,
    ) -> Poll<Instant> {
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline())));
        ready!(sleep.as_mut().poll(cx));
        let fired = sleep.deadline();
        self.sleep = None;
        Poll::Ready(fired)
    }

    /// Whether the server is shutting down; registers for the wake-up when not.
    fn poll_shutdown(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(token) = &self.shutdown else {
            return false;
        };
        let wait = self
            .shutdown_wait
            .get_or_insert_with(|| Box::pin(token.clone().cancelled_owned()));
        wait.as_mut().poll(cx).is_ready()
    }

    fn pending_or_shutdown(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyCut>>> {
        if self.poll_shutdown(cx) {
            self.finish(Outcome::ServerShutdown);
            return Poll::Ready(Some(Err(BodyCut::Shutdown)));
        }
        Poll::Pending
    }
}

impl http_body::Body for ChaosBody {
    type Data = Bytes;
    type Error = BodyCut;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyCut>>> {
        let this = &mut *self;
        loop {
            if this.ended && this.steps.is_empty() {
                return Poll::Ready(None);
            }
            let Some(step) = this.steps.front_mut() else {
                this.finish(this.end);
                return Poll::Ready(None);
            };
            match step {
                Step::Bytes(..) => {
                    let Some(Step::Bytes(bytes, tokens)) = this.steps.pop_front() else {
                        unreachable!("front is Bytes");
                    };
                    return this.emit(bytes, tokens);
                }
                Step::Tokens {
                    next,
                    last,
                    delay,
                    finish_on_last,
                } => {
                    let (i, is_last, delay, finish) =
                        (*next, *next == *last, *delay, *finish_on_last);
                    if i > 1
                        && !delay.is_zero()
                        && this.poll_sleep(cx, || Instant::now() + delay).is_pending()
                    {
                        return this.pending_or_shutdown(cx);
                    }
                    let ctx = this.ctx.as_ref().expect("played bodies have a context");
                    let finish = if is_last { finish } else { None };
                    let frame = wire::token(ctx, i, finish, this.sent());
                    this.last_token = i;
                    if is_last {
                        this.steps.pop_front();
                    } else if let Some(Step::Tokens { next, .. }) = this.steps.front_mut() {
                        *next += 1;
                    }
                    return this.emit(frame, 1);
                }
                Step::Finish(finish) => {
                    let finish = *finish;
                    this.steps.pop_front();
                    let ctx = this.ctx.as_ref().expect("played bodies have a context");
                    let frame = wire::finish(ctx, finish, this.sent());
                    return this.emit(frame, 0);
                }
                Step::Sleep(length) => {
                    let length = *length;
                    if this.poll_sleep(cx, || Instant::now() + length).is_pending() {
                        return this.pending_or_shutdown(cx);
                    }
                    this.steps.pop_front();
                }
                Step::Stall { length, ping_every } => {
                    let (length, ping_every) = (*length, *ping_every);
                    // The stall's end is fixed when it starts; pings fall inside it.
                    let until = *this
                        .stall_until
                        .get_or_insert_with(|| Instant::now() + length);
                    let fired = match this.poll_sleep(cx, || match ping_every {
                        Some(every) => (Instant::now() + every).min(until),
                        None => until,
                    }) {
                        Poll::Ready(fired) => fired,
                        Poll::Pending => return this.pending_or_shutdown(cx),
                    };
                    if fired >= until {
                        this.stall_until = None;
                        this.steps.pop_front();
                    } else {
                        let ctx = this.ctx.as_ref().expect("played bodies have a context");
                        let ping = wire::ping(ctx);
                        return this.emit(ping, 0);
                    }
                }
                Step::Reset => {
                    let conn = this.conn.as_ref().expect("played bodies have a connection");
                    // Only once hyper has flushed every byte before the reset does the
                    // connection die, so the client gets exactly the promised tokens.
                    if conn.request_reset(cx.waker()) {
                        this.steps.pop_front();
                        this.finish(Outcome::CutByFault);
                        return Poll::Ready(Some(Err(BodyCut::Reset)));
                    }
                    return this.pending_or_shutdown(cx);
                }
                Step::Hang => return this.pending_or_shutdown(cx),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended && self.steps.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        match self.exact_len {
            Some(len) => SizeHint::with_exact(len),
            None => SizeHint::default(),
        }
    }
}

impl Drop for ChaosBody {
    fn drop(&mut self) {
        // Dropped before its end: hyper gave up on the connection because the client left.
        self.finish(Outcome::ClientDisconnected);
    }
}
