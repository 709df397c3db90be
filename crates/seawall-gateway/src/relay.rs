//! The answer on its way to the client: the provider's frames as they come,
//! one final error event if the stream breaks after content, and the
//! count of how each request ended.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
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

// An event stream's frames leave in batches. hyper's client hands a body
// over one frame per turn of its connection task, and hyper's server
// writes whatever it holds each time the body is pending: relayed as they
// come, a 64-token stream the upstream sent in five writes left in 66, and
// on loopback each send costs the sender the receiver's wake-up too. So
// after a frame the relay gives the connection up to `GATHER_TURNS` turns
// that bring nothing new before it sends what it holds (two: the
// connection often needs one turn to take the relay's demand and another
// to decode the next frame), and at most `BATCH_FRAMES` frames or
// `BATCH_BYTES` bytes wait (hyper's server writes up to 16 buffers in one
// call). A live stream's next token is milliseconds away: its frame waits
// two turns of this thread, microseconds, and leaves alone.
const GATHER_TURNS: u8 = 2;
const BATCH_FRAMES: usize = 16;
const BATCH_BYTES: usize = 64 * 1024;

/// The response body: frames pass through untouched; a body error after
/// content becomes one final error event (for an event stream) and a clean
/// end, never a silent EOF.
///
/// A provider's own in-stream error event (OpenAI `data: {"error":…}`,
/// Anthropic `event: error`) is held back until the next frame: when the
/// stream then fails, as it does, seawall's event replaces it (its message
/// quotes the provider's), so the client reads exactly one error, carrying
/// seawall's code. Any other frame releases it unchanged.
///
/// An event stream's frames leave in batches when the upstream has several
/// ready at once (see `GATHER_TURNS`); their bytes and order are kept.
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
    /// Turns the relay still gives the upstream's connection before it
    /// sends the frames it holds (event streams only).
    patience: u8,
    /// Sending the queue; read on once it is empty.
    emitting: bool,
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
            patience: 0,
            emitting: false,
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

    /// Whether the frames held make a full batch. Counted when asked: a
    /// batch is at most `BATCH_FRAMES` frames long.
    fn batch_full(&self) -> bool {
        let bytes: usize = self
            .queue
            .iter()
            .filter_map(Frame::data_ref)
            .map(Bytes::len)
            .sum();
        self.queue.len() >= BATCH_FRAMES || bytes >= BATCH_BYTES
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
            if this.emitting || this.done {
                if let Some(frame) = this.queue.pop_front() {
                    return Poll::Ready(Some(Ok(frame)));
                }
                this.emitting = false;
                if this.done {
                    return Poll::Ready(None);
                }
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    match frame.into_data() {
                        Ok(data) => this.pass(data),
                        Err(frame) => {
                            this.release();
                            this.queue.push_back(frame);
                        }
                    }
                    if this.sse {
                        this.patience = GATHER_TURNS;
                    }
                    if !this.sse || this.batch_full() {
                        this.emitting = true;
                    }
                }
                Poll::Ready(Some(Err(err))) => {
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
                Poll::Ready(None) => {
                    this.done = true;
                    this.release();
                    this.tracker.end(End::Served, None);
                }
                Poll::Pending if this.queue.is_empty() => return Poll::Pending,
                Poll::Pending if this.patience > 0 => {
                    // Give the upstream's connection task a turn (this
                    // task is polled again after it) to hand over what it
                    // has already read.
                    this.patience -= 1;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Pending => this.emitting = true,
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
    use std::task::Waker;

    use http_body_util::BodyExt;

    use super::*;

    /// An upstream body that plays a script: `Some(bytes)` a ready frame
    /// (`"!"` a body error), `None` a pending turn.
    struct Script(VecDeque<Option<&'static str>>);

    impl Body for Script {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            match self.0.pop_front() {
                Some(Some("!")) => Poll::Ready(Some(Err("upstream reset".into()))),
                Some(Some(text)) => {
                    Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(text.as_bytes())))))
                }
                Some(None) => Poll::Pending,
                None => Poll::Ready(None),
            }
        }
    }

    fn relay(sse: bool, script: &[Option<&'static str>]) -> Relay {
        let inner = Script(script.iter().copied().collect()).boxed_unsync();
        let tracker = Tracker::new(Arc::default(), "m", Wire::OpenAi, sse);
        Relay::new(inner, Wire::OpenAi, sse, tracker, Arc::default())
    }

    struct Count(AtomicU64);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What each poll of the relay gives: a frame's text, `~` for pending
    /// with the task woken to come back (a turn given to the upstream's
    /// connection), `-` for pending until the upstream wakes it, `end` for
    /// the end.
    fn polls(mut relay: Relay) -> Vec<String> {
        let count = Arc::new(Count(AtomicU64::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let mut seen = Vec::new();
        for _ in 0..100 {
            let before = count.0.load(Ordering::Relaxed);
            match Pin::new(&mut relay).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    seen.push(String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap())
                }
                Poll::Ready(Some(Err(err))) => panic!("relay failed: {err}"),
                Poll::Ready(None) => {
                    seen.push("end".into());
                    return seen;
                }
                Poll::Pending if count.0.load(Ordering::Relaxed) > before => seen.push("~".into()),
                Poll::Pending => seen.push("-".into()),
            }
        }
        panic!("the relay never ended: {seen:?}");
    }

    #[test]
    fn an_event_streams_ready_frames_leave_together() {
        // Frames the connection hands over a turn or two apart gather;
        // once two turns in a row have brought nothing, what is held
        // leaves; the end sends everything.
        let seen = polls(relay(
            true,
            &[
                None,
                Some("a"),
                None,
                Some("b"),
                None,
                None,
                None,
                Some("c"),
                None,
                None,
                None,
                Some("d"),
            ],
        ));
        assert_eq!(
            seen,
            ["-", "~", "~", "~", "a", "b", "~", "~", "c", "d", "end"]
        );
    }

    #[test]
    fn a_batch_is_bounded() {
        let script: Vec<_> = std::iter::repeat_n(Some("x"), BATCH_FRAMES + 1).collect();
        let seen = polls(relay(true, &script));
        assert_eq!(seen.len(), BATCH_FRAMES + 2);
        assert!(seen[..BATCH_FRAMES + 1].iter().all(|s| s == "x"));
        let mut script = vec![Some("y"); 2];
        script.insert(1, None);
        let big: &'static str = "z".repeat(BATCH_BYTES).leak();
        script.insert(0, Some(big));
        // The big frame fills the batch alone: it leaves at once.
        let seen = polls(relay(true, &script));
        assert_eq!(seen[0], big);
        assert_eq!(&seen[1..], ["~", "y", "y", "end"]);
    }

    #[test]
    fn a_break_in_a_batch_keeps_its_frames_and_ends_with_one_error_event() {
        let seen = polls(relay(
            true,
            &[Some("data: a\n\n"), None, Some("data: b"), Some("!")],
        ));
        assert_eq!(seen[..3], ["~", "data: a\n\n", "data: b"]);
        assert!(seen[3].starts_with("\n\ndata: {\"error\""), "{seen:?}");
        assert!(seen[3].contains("upstream reset"), "{seen:?}");
        assert_eq!(seen[4..], ["end"]);
    }

    #[test]
    fn a_unary_body_is_not_held() {
        let seen = polls(relay(false, &[Some("{"), None, Some("}")]));
        assert_eq!(seen, ["{", "-", "}", "end"]);
    }

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
