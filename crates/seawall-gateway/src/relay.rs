//! The answer on its way to the client: the provider's frames as they come,
//! one final error event if the stream breaks after content, and the
//! count of how each request ended.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use memchr::memmem::Finder;
use seawall::core::{BoxError, Code, Failure};
use seawall_internal::millis;

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
    pub(crate) fn snapshot(&self) -> Stats {
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

    pub(crate) fn refused(&self) {
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
    pub(crate) fn new(counters: Arc<Counters>, model: &str, wire: Wire, stream: bool) -> Tracker {
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

    pub(crate) fn answered(&mut self, served_by: &str, attempts: usize) {
        self.served_by = Some(served_by.to_owned());
        self.attempts = attempts;
    }

    pub(crate) fn end(&mut self, end: End, code: Option<&str>) {
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
            elapsed_ms = millis(self.started.elapsed()),
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
///
/// A provider's own in-stream error event (OpenAI `data: {"error":…}`,
/// Anthropic `event: error`) is held back until the next frame: when the
/// stream then fails, as it does, seawall's event replaces it (its message
/// quotes the provider's), so the client reads exactly one error, carrying
/// seawall's code. Any other frame releases it unchanged.
pub(crate) struct Relay {
    inner: UpstreamBody,
    wire: Wire,
    /// An event stream: failures end it with an event. Otherwise (a unary
    /// JSON body) a failure aborts the response.
    sse: bool,
    /// The last two bytes forwarded, to end a half-written event before
    /// the error event.
    tail: [u8; 2],
    /// Frames ready to go, in order.
    queue: VecDeque<Frame<Bytes>>,
    /// A provider error event, waiting to see how the stream ends.
    held: Option<Bytes>,
    tracker: Tracker,
    redactor: Arc<Redactor>,
    done: bool,
}

impl Relay {
    pub(crate) fn new(
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
            queue: VecDeque::new(),
            held: None,
            tracker,
            redactor,
            done: false,
        }
    }

    /// Queues `data` to be sent.
    fn send(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        match data.len() {
            1 => self.tail = [self.tail[1], data[0]],
            n => self.tail = [data[n - 2], data[n - 1]],
        }
        self.queue.push_back(Frame::data(data));
    }

    /// Sends the held provider error event after all: the stream went on.
    fn release(&mut self) {
        if let Some(held) = self.held.take() {
            self.send(held);
        }
    }

    /// Queues `data`, holding back a provider error event in it.
    fn pass(&mut self, data: Bytes) {
        self.release();
        let at_line_start = self.tail[1] == b'\n';
        let error_at = if self.sse {
            error_event_start(self.wire, &data, at_line_start)
        } else {
            None
        };
        match error_at {
            Some(start) => {
                self.send(data.slice(..start));
                self.held = Some(data.slice(start..));
            }
            _ => self.send(data),
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
            [b'\n', b'\n'] => {}
            [_, b'\n'] => out.extend_from_slice(b"\n"),
            _ => out.extend_from_slice(b"\n\n"),
        }
        out.extend_from_slice(&event);
        self.tracker.end(End::Interrupted, Some(code.as_str()));
        out.freeze()
    }
}

/// Where a provider's error event starts in `data`, if it carries one: an
/// OpenAI `data: {"error"` line, an Anthropic `event: error` line. Neither
/// can occur inside a JSON string (quotes and newlines are escaped there).
fn error_event_start(wire: Wire, data: &[u8], at_line_start: bool) -> Option<usize> {
    // Built once: a finder per frame costs more than the search.
    static OPENAI: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"data: {\"error\""));
    static ANTHROPIC: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"event: error\n"));
    let finder = match wire {
        Wire::OpenAi => &*OPENAI,
        Wire::Anthropic => &*ANTHROPIC,
    };
    finder.find_iter(data).find(|&start| {
        if start == 0 {
            at_line_start
        } else {
            data[start - 1] == b'\n'
        }
    })
}

impl Body for Relay {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        loop {
            if let Some(frame) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(frame)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.pass(data),
                    Err(frame) => {
                        this.release();
                        this.queue.push_back(frame);
                    }
                },
                Some(Err(err)) => {
                    this.done = true;
                    if this.sse {
                        // The held provider event, if any, is replaced.
                        this.held = None;
                        let event = this.final_event(&err);
                        this.queue.push_back(Frame::data(event));
                    } else {
                        let code = Failure::find(&*err).map_or(Code::Unknown, Failure::code);
                        this.tracker.end(End::Interrupted, Some(code.as_str()));
                        return Poll::Ready(Some(Err(err)));
                    }
                }
                None => {
                    this.done = true;
                    this.release();
                    this.tracker.end(End::Served, None);
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Never ends early on the inner body's word: the end is polled, so
        // it is counted.
        self.done && self.queue.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        // Unknown: with an exact length hyper stops polling after the last
        // byte, and the end would never be seen.
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_error_events_are_found_at_line_starts_only() {
        let openai = b"data: {\"choices\":[]}\n\ndata: {\"error\":{}}\n\n";
        assert_eq!(error_event_start(Wire::OpenAi, openai, true), Some(22));
        assert_eq!(
            error_event_start(Wire::OpenAi, b"data: {\"error\":{}}\n\n", false),
            None
        );
        let escaped = br#"data: {"delta":"data: {\"error\""}"#;
        assert_eq!(error_event_start(Wire::OpenAi, escaped, true), None);
        let anthropic = b"event: ping\ndata: {}\n\nevent: error\ndata: {}\n\n";
        assert_eq!(
            error_event_start(Wire::Anthropic, anthropic, true),
            Some(22)
        );
        assert_eq!(
            error_event_start(Wire::Anthropic, b"event: ping\n", true),
            None
        );
    }
}
