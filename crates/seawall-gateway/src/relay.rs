//! The answer on its way to the client: the provider's frames as they come,
//! one final error event if the stream breaks after content, and the
//! count of how each request ended.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use seawall::core::{BoxError, Code, Failure};

use crate::config::Wire;
use crate::secret::Redactor;
use crate::upstream::UpstreamBody;
use crate::wire_error::WireError;

/// How the gateway's requests have ended so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Requests that reached a route handler.
    pub requests: u64,
    /// Answers delivered to their end.
    pub served: u64,
    /// Failures before any content, answered with an error status.
    pub failed: u64,
    /// Streams that broke after content (ended with the final error event).
    pub interrupted: u64,
    /// Requests whose client went away first; the upstream call was
    /// dropped. Never a route failure.
    pub cancelled: u64,
    /// Requests the gateway refused itself: 400, 401, 404, 413.
    pub refused: u64,
    /// Requests still running.
    pub in_flight: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    requests: AtomicU64,
    served: AtomicU64,
    failed: AtomicU64,
    interrupted: AtomicU64,
    cancelled: AtomicU64,
    refused: AtomicU64,
    in_flight: AtomicU64,
}

impl Counters {
    pub fn snapshot(&self) -> Stats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Stats {
            requests: get(&self.requests),
            served: get(&self.served),
            failed: get(&self.failed),
            interrupted: get(&self.interrupted),
            cancelled: get(&self.cancelled),
            refused: get(&self.refused),
            in_flight: get(&self.in_flight),
        }
    }

    pub fn refused(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.refused.fetch_add(1, Ordering::Relaxed);
    }
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Served,
    Failed,
    Interrupted,
}

/// One request in flight. Dropped before [`Tracker::end`], it counts as
/// `cancelled`: the client went away and the upstream call went with it.
#[derive(Debug)]
pub(crate) struct Tracker {
    counters: Arc<Counters>,
    started: Instant,
    model: String,
    wire: Wire,
    stream: bool,
    served_by: Option<String>,
    attempts: usize,
    ended: bool,
}

impl Tracker {
    pub fn new(counters: Arc<Counters>, model: &str, wire: Wire, stream: bool) -> Tracker {
        counters.requests.fetch_add(1, Ordering::Relaxed);
        counters.in_flight.fetch_add(1, Ordering::Relaxed);
        Tracker {
            counters,
            started: Instant::now(),
            model: model.to_owned(),
            wire,
            stream,
            served_by: None,
            attempts: 0,
            ended: false,
        }
    }

    pub fn answered(&mut self, served_by: &str, attempts: usize) {
        self.served_by = Some(served_by.to_owned());
        self.attempts = attempts;
    }

    pub fn end(&mut self, end: End, code: Option<&str>) {
        if self.ended {
            return;
        }
        self.ended = true;
        let counter = match end {
            End::Served => &self.counters.served,
            End::Failed => &self.counters.failed,
            End::Interrupted => &self.counters.interrupted,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let outcome = match end {
            End::Served => "served",
            End::Failed => "failed",
            End::Interrupted => "interrupted",
        };
        self.log(outcome, code);
    }

    fn log(&self, outcome: &str, code: Option<&str>) {
        tracing::info!(
            target: "seawall::gateway",
            model = %self.model,
            wire = self.wire.as_str(),
            stream = self.stream,
            outcome,
            code = code.unwrap_or("-"),
            served_by = self.served_by.as_deref().unwrap_or("-"),
            attempts = self.attempts,
            elapsed_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "request ended"
        );
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        if !self.ended {
            self.counters.cancelled.fetch_add(1, Ordering::Relaxed);
            self.log("cancelled", Some(Code::Cancelled.as_str()));
        }
        self.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The message a client sees for a failure: seawall's description, with
/// any secret the gateway holds scrubbed out.
pub(crate) fn describe(failure: Option<&Failure>, err: &BoxError, redactor: &Redactor) -> String {
    let text = match failure {
        Some(failure) => format!("seawall: {failure}"),
        None => format!("seawall: {err}"),
    };
    redactor.scrub(&text)
}

/// The response body: frames pass through untouched; a body error after
/// content becomes one final error event (for an event stream) and a clean
/// end, never a silent EOF.
pub(crate) struct Relay {
    inner: UpstreamBody,
    wire: Wire,
    /// An event stream: failures end it with an event. Otherwise (a unary
    /// JSON body) a failure aborts the response.
    sse: bool,
    /// The last two bytes forwarded, to end a half-written event before
    /// the error event.
    tail: [u8; 2],
    tracker: Tracker,
    redactor: Arc<Redactor>,
    done: bool,
}

impl Relay {
    pub fn new(
        inner: UpstreamBody,
        wire: Wire,
        sse: bool,
        tracker: Tracker,
        redactor: Arc<Redactor>,
    ) -> Relay {
        Relay {
            inner,
            wire,
            sse,
            tail: *b"\n\n",
            tracker,
            redactor,
            done: false,
        }
    }

    fn remember(&mut self, data: &Bytes) {
        match data.len() {
            0 => {}
            1 => self.tail = [self.tail[1], data[0]],
            n => self.tail = [data[n - 2], data[n - 1]],
        }
    }

    fn final_event(&mut self, err: &BoxError) -> Bytes {
        let failure = Failure::find(&**err);
        let message = describe(failure, err, &self.redactor);
        let code = failure.map_or(Code::StreamInterrupted, Failure::code);
        let error = WireError::gateway(StatusCode::BAD_GATEWAY, code, message);
        let event = error.event(self.wire);
        let mut out = BytesMut::with_capacity(event.len() + 2);
        match self.tail {
            [_, b'\n'] if self.tail[0] == b'\n' => {}
            [_, b'\n'] => out.extend_from_slice(b"\n"),
            _ => out.extend_from_slice(b"\n\n"),
        }
        out.extend_from_slice(&event);
        self.tracker.end(End::Interrupted, Some(code.as_str()));
        out.freeze()
    }
}

impl Body for Relay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.remember(data);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(err))) => {
                this.done = true;
                if this.sse {
                    let event = this.final_event(&err);
                    Poll::Ready(Some(Ok(Frame::data(event))))
                } else {
                    let code = Failure::find(&*err).map_or(Code::Unknown, Failure::code);
                    this.tracker.end(End::Interrupted, Some(code.as_str()));
                    Poll::Ready(Some(Err(err)))
                }
            }
            Poll::Ready(None) => {
                this.done = true;
                this.tracker.end(End::Served, None);
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Never ends early on the inner body's word: the end is polled, so
        // it is counted.
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown: with an exact length hyper stops polling after the last
        // byte, and the end would never be seen.
        SizeHint::default()
    }
}
