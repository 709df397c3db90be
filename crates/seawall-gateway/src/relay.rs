//! The answer on its way to the client: the provider's frames as they come,
//! one final error event and a failed body if the stream breaks after
//! content, and the count of how each request ended.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use memchr::memchr2;
use seawall::core::provider::openai_responses::last_sequence_number;
use seawall::core::{BoxError, Code, Failure, MESSAGE_EXCERPT_BYTES};
use seawall_internal::json::{DONE_MARKER, UTF8_BOM, bom_so_far, is_blank, without_bom};
use seawall_internal::millis;
use seawall_internal::sse_field;

use crate::config::{Endpoint, Wire};
use crate::cut::Cut;
use crate::secret::{Redactor, may_end_at_cut};
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

    /// A client that went away before its request was whole: cancelled,
    /// as one that goes away later is, not a request refused.
    pub(crate) fn went_away(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.cancelled.fetch_add(1, Ordering::Relaxed);
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
    endpoint: Endpoint,
    stream: bool,
    served_by: Option<String>,
    attempts: usize,
    ended: bool,
}

impl Tracker {
    pub(crate) fn new(
        counters: Arc<Counters>,
        model: &str,
        endpoint: Endpoint,
        stream: bool,
    ) -> Tracker {
        counters.requests.fetch_add(1, Ordering::Relaxed);
        counters.in_flight.fetch_add(1, Ordering::Relaxed);
        Tracker {
            counters,
            started: Instant::now(),
            // A client's word: bounded here, and logged as a string value
            // (escaped), never as raw text that could forge a log line.
            model: seawall::core::excerpt(model, 64).to_owned(),
            endpoint,
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
            model = self.model.as_str(),
            wire = self.endpoint.wire().as_str(),
            endpoint = self.endpoint.path(),
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
/// any secret the gateway holds scrubbed out. The provider's message, an
/// excerpt, ends a failure's description, so a secret it echoed may end
/// it cut.
pub(crate) fn describe(failure: Option<&Failure>, err: &BoxError, redactor: &Redactor) -> String {
    match failure {
        Some(failure) => {
            let cut = failure
                .message()
                .is_some_and(|message| may_end_at_cut(message, MESSAGE_EXCERPT_BYTES));
            redactor.scrub(&format!("seawall: {failure}"), cut)
        }
        // The whole chain, bounded: a wrapper's own text names only its
        // part (`failed after 2 attempts`), the cause is its source's.
        None => redactor.scrub(
            &format!(
                "seawall: {}",
                seawall_internal::error::chain_text(&**err, MESSAGE_EXCERPT_BYTES)
            ),
            false,
        ),
    }
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

/// The response body: the provider's bytes pass through unchanged (but
/// for the events and the mark an SDK misreads, below); a body error after
/// content becomes one final error event (for an event stream), then the
/// body fails, so hyper ends the response without its last chunk: a
/// client whose SDK reads past an event it cannot decode (async-openai
/// parses the error event as a chat chunk, fails, and reads on) still
/// sees the answer broken, never a clean end.
///
/// An event stream is relayed whole events at a time: the bytes after the
/// last complete event (a blank line ends one; lines end with CRLF, LF or
/// CR) wait for the rest of it. When the stream ends, well or broken, an
/// event the upstream cut in half is dropped, as an SSE client would drop
/// it at an end (WHATWG HTML 9.2.6); relayed, then ended by seawall's
/// event, it would be dispatched as a broken one (an SDK parses its data
/// first, and raises that parse error instead of seawall's). A `[DONE]`
/// on a wire without that marker (Responses, Anthropic) is not relayed;
/// on the chat wire it is held until the upstream body ends well: the
/// stream guard may still fail the answer after it (a finish that is no
/// answer, a choice of several left unfinished), and an SDK stops reading
/// at `[DONE]`, so an error event after it would never be read and the
/// cut answer would pass for a whole one.
///
/// A provider's own in-stream error event never reaches the relay: the
/// stream guard, which decides that the body is an event stream, hands on
/// no error event (its failure carries what the provider said), so seawall's
/// event, quoting the provider's message scrubbed of keys, is the one error
/// the client reads.
///
/// On the OpenAI wire an event that the OpenAI SDKs would dispatch with no
/// data, or data of blanks only (a bare `event: ping`, an empty `data:`
/// heartbeat, a lone `id:`), is not relayed: seawall reads it as a
/// keep-alive, but openai-python and openai-node dispatch it and parse its
/// data as JSON, and `""` is none, so the answer failed mid-way. Comments
/// and blank lines go on, keeping proxies' idle timers alive: neither SDK
/// dispatches them, but once an `id` has gone by (openai-python keeps the
/// last one, as WHATWG says, and dispatches every blank line after it)
/// they are dropped too. Anthropic's SDK skips events it does not know:
/// Messages streams keep them all.
///
/// A UTF-8 byte order mark that opens an event stream is not relayed:
/// seawall's scanner skips it (WHATWG HTML 9.2.6), but the Python SDKs
/// split lines on `:` without it, so their first field was `\u{feff}data`
/// and the first event was lost.
///
/// An event stream's frames leave in batches when the upstream has several
/// ready at once (see `GATHER_TURNS`); their bytes and order are kept.
pub(crate) struct Relay {
    inner: UpstreamBody,
    endpoint: Endpoint,
    /// An event stream: failures end it with an event. Otherwise (a unary
    /// JSON body) a failure aborts the response.
    sse: bool,
    /// Where the event stream's lines and events end, across frames.
    lines: Lines,
    /// The body's first bytes while they may still be a byte order mark
    /// split across frames (event streams); `None` once past where a mark
    /// can be.
    head: Option<BytesMut>,
    /// An `id` field has been relayed on the OpenAI wire: openai-python
    /// now dispatches at every blank line, a comment's too.
    id_seen: bool,
    /// An event dropped at a frame's end ended with a CR: an LF that opens
    /// the next frame is its line end, not a blank line of the next event.
    orphan_lf: bool,
    /// The start of an event whose end has not come yet (event streams).
    partial: BytesMut,
    /// The last byte sent: a CR may still be waiting for its LF.
    last: u8,
    /// The last run of events sent, kept for a Responses API stream: its
    /// last `sequence_number` numbers seawall's final event.
    last_run: Bytes,
    /// Frames ready to go, in order.
    queue: VecDeque<Frame<Bytes>>,
    /// Turns the relay still gives the upstream's connection before it
    /// sends the frames it holds (event streams only).
    patience: u8,
    /// Sending the queue; read on once it is empty.
    emitting: bool,
    tracker: Tracker,
    redactor: Arc<Redactor>,
    /// Set once the shutdown grace period is over (event streams only).
    cut: Option<Arc<Cut>>,
    /// The chat stream's `[DONE]`, sent once the upstream body ended well.
    held_done: Option<Bytes>,
    done: bool,
    /// How the request ended, counted once the client has been handed the
    /// last frame: a client gone before the queued tail was sent was not
    /// served, but cancelled.
    ending: Option<(End, Option<&'static str>)>,
    /// How a stream that ended with the final error event fails once the
    /// event has been handed on.
    abort: Abort,
}

/// The body error that follows the final error event. hyper polls a body
/// again before it flushes what it holds, and a body error drops the
/// connection with whatever was not flushed: so the relay first gives the
/// connection one turn to write the event, then fails. A client that has
/// stopped reading (its socket full at that turn) may lose the event; it
/// still reads a broken body, never a clean end.
enum Abort {
    /// The stream ends well, or has failed already.
    No,
    /// The event goes, then the connection gets its turn.
    AfterATurn(BoxError),
    /// The turn was given.
    Now(BoxError),
}

/// Whether `event` (one whole event, its blank line included) is a
/// `[DONE]` marker as the OpenAI SDK reads one: its data (the first `data`
/// line's value starts it) starts with `[DONE]`, whatever other fields the
/// event has.
fn is_done_event(event: &[u8]) -> bool {
    if memchr::memmem::find(event, DONE_MARKER).is_none() {
        return false;
    }
    let first_data = event
        .split(|&b| b == b'\n' || b == b'\r')
        .map(sse_field::field)
        .find_map(|(name, value)| (name == b"data").then_some(value));
    first_data.is_some_and(seawall_internal::json::is_done_marker)
}

/// What the OpenAI SDKs' event decoders make of one whole event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dispatched {
    /// An event with data that holds more than blanks.
    Data,
    /// An event with no data, or blanks only: an `event`, `data`, `id` or
    /// `retry` field made openai-python dispatch it (openai-node: an
    /// `event` or a `data`), and `json.loads("")` raises.
    Empty,
    /// Nothing: comments, blank lines, fields neither SDK reads. Only
    /// openai-python, once it has seen an `id`, dispatches an empty event
    /// at the blank line.
    Nothing,
}

/// What the OpenAI SDKs make of `event` (one whole event). Stops at the
/// start of the first data line that holds something: an event that is
/// data costs the lines before it (none for a chat chunk, a Responses
/// event's name), never its data again.
fn dispatched(event: &[u8]) -> Dispatched {
    let mut fields = false;
    let mut at = 0;
    while at < event.len() {
        // A data line that opens with something: the event is data, known
        // without reading the line to its end (a chat chunk's JSON): a
        // line that opens `data:` is a data field whatever follows, and
        // its value's first byte is read off the rest of the event.
        if event[at..].starts_with(b"data:") {
            let (_, value) = sse_field::field(&event[at..]);
            if value.first().is_some_and(|&byte| !is_blank(byte)) {
                return Dispatched::Data;
            }
        }
        let end = memchr2(b'\n', b'\r', &event[at..]).map_or(event.len(), |found| at + found);
        let line = &event[at..end];
        at = end + 1;
        // A blank line, or a comment.
        if line.first().is_none_or(|&byte| byte == b':') {
            continue;
        }
        match sse_field::field(line) {
            (b"data", value) if value.iter().any(|&byte| !is_blank(byte)) => {
                return Dispatched::Data;
            }
            (b"data" | b"event" | b"id" | b"retry", _) => fields = true,
            _ => {}
        }
    }
    if fields {
        Dispatched::Empty
    } else {
        Dispatched::Nothing
    }
}

/// Whether a line of `event` (one whole event) may be an `id` field: one
/// starts with `id` (see [`Lines`]).
fn has_id_line(event: &[u8]) -> bool {
    event.starts_with(b"id")
        || memchr::memchr2_iter(b'\n', b'\r', event).any(|end| event[end + 1..].starts_with(b"id"))
}

/// Where an event stream's lines end (CRLF, LF or CR) and so where its
/// events end (a blank line), followed across frames.
#[derive(Debug, Clone, Copy)]
struct Lines {
    /// Nothing has come on the current line yet.
    blank: bool,
    /// The last byte was a CR: an LF right after it ends no other line.
    cr: bool,
    /// A line that starts with `id` (an `id` field, maybe) has begun.
    /// JSON holds no raw line end, so a data line's `"id"` is none. The
    /// start of a line split between `i` and `d` is missed here.
    id: bool,
}

impl Default for Lines {
    fn default() -> Self {
        Lines {
            blank: true,
            cr: false,
            id: false,
        }
    }
}

impl Lines {
    /// The offset just past the end of the next event that ends in
    /// `data[from..]`, if one does. An event ended by a blank line
    /// written CRLF ends past its LF when the LF is in `data`: the SDKs'
    /// decoders (OpenAI's, Anthropic's) end an event only at `\n\n`,
    /// `\r\r` or `\r\n\r\n`, so one sent without its last LF would
    /// wait for the next frame. Only a CR that ends `data` ends the event
    /// there, its LF going with what follows.
    fn next_event_end(&mut self, data: &[u8], from: usize) -> Option<usize> {
        let mut at = from;
        while at < data.len() {
            if std::mem::take(&mut self.cr) && data[at] == b'\n' {
                at += 1;
                continue;
            }
            // Each line start is here once, the first of the frame too.
            if self.blank && data[at..].starts_with(b"id") {
                self.id = true;
            }
            let Some(found) = memchr2(b'\n', b'\r', &data[at..]) else {
                self.blank = false;
                return None;
            };
            let blank = self.blank && found == 0;
            let end = at + found;
            self.blank = true;
            self.cr = data[end] == b'\r';
            at = end + 1;
            if blank {
                if self.cr && data.get(at) == Some(&b'\n') {
                    self.cr = false;
                    at += 1;
                }
                return Some(at);
            }
        }
        None
    }
}

impl Relay {
    pub(crate) fn new(
        inner: UpstreamBody,
        endpoint: Endpoint,
        sse: bool,
        tracker: Tracker,
        redactor: Arc<Redactor>,
    ) -> Relay {
        Relay {
            inner,
            endpoint,
            sse,
            lines: Lines::default(),
            head: sse.then(BytesMut::new),
            id_seen: false,
            orphan_lf: false,
            partial: BytesMut::new(),
            last: b'\n',
            last_run: Bytes::new(),
            queue: VecDeque::new(),
            patience: 0,
            emitting: false,
            tracker,
            redactor,
            cut: None,
            held_done: None,
            done: false,
            ending: None,
            abort: Abort::No,
        }
    }

    /// An event stream ends with the gateway's final error event when
    /// `cut` fires (the shutdown grace period is over), instead of being
    /// dropped mid-body with its connection. A whole JSON answer in
    /// transfer has no way to say so: its connection is cut.
    pub(crate) fn cut_by(mut self, cut: Arc<Cut>) -> Relay {
        if self.sse {
            self.cut = Some(cut);
        }
        self
    }

    /// Queues `data` to be sent.
    fn send(&mut self, data: Bytes) {
        if let Some(&last) = data.last() {
            self.last = last;
            // The last run that numbers its events: a keep-alive comment
            // sent after it numbers nothing.
            if self.endpoint == Endpoint::Responses
                && memchr::memmem::find(&data, b"\"sequence_number\"").is_some()
            {
                self.last_run = data.clone();
            }
            self.queue.push_back(Frame::data(data));
        }
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

    /// Queues the complete events of `data` (a run of them as one slice of
    /// it), keeping an unfinished event's start for the frame that ends it.
    fn pass(&mut self, data: Bytes) {
        if !self.sse {
            return self.send(data);
        }
        let Some(mut data) = self.past_bom(data) else {
            return;
        };
        if !data.is_empty() && std::mem::take(&mut self.orphan_lf) && data[0] == b'\n' {
            // The dropped event's LF: it goes with it, and ends no line.
            self.lines.cr = false;
            data = data.slice(1..);
        }
        // Looked for once a frame; only a frame that has one is relayed
        // event by event.
        let screen = memchr::memmem::find(&data, DONE_MARKER).is_some();
        // On the OpenAI wire each event is looked at, but the look stops
        // at the first data line that holds something (the first line of
        // a chat chunk, the second of a Responses event): runs of events
        // that all go still leave as one slice of the frame.
        let openai = self.endpoint.wire() == Wire::OpenAi;
        let mut from = 0;
        let mut sent = 0;
        while let Some(end) = self.lines.next_event_end(&data, from) {
            // Known once the event's lines have been walked: the next
            // event's first line counts too, which at worst drops one
            // keep-alive more.
            self.id_seen |= openai && self.lines.id;
            let dropped = if !self.partial.is_empty() {
                // The event begun in an earlier frame ends here.
                self.partial.extend_from_slice(&data[from..end]);
                let joined = self.partial.split().freeze();
                if openai && !self.id_seen {
                    // An `id` line split by the frames' edge.
                    self.id_seen = has_id_line(&joined);
                }
                sent = end;
                !self.send_event(joined)
            } else if screen || (openai && self.dispatches_nothing(&data[from..end])) {
                self.send(data.slice(sent..from));
                sent = end;
                !self.send_event(data.slice(from..end))
            } else {
                false
            };
            self.orphan_lf = dropped && end == data.len() && data[end - 1] == b'\r';
            from = end;
        }
        self.send(data.slice(sent..from));
        self.partial.extend_from_slice(&data[from..]);
    }

    /// `data` past a byte order mark that opens the body, held back while
    /// it may be the first bytes of one split across frames: `None` while
    /// all that came may still be one.
    fn past_bom(&mut self, data: Bytes) -> Option<Bytes> {
        let Some(head) = self.head.as_mut() else {
            return Some(data);
        };
        let data = if head.is_empty() {
            data
        } else {
            head.extend_from_slice(&data);
            head.split().freeze()
        };
        if data.len() < UTF8_BOM.len() && bom_so_far(&data) {
            head.extend_from_slice(&data);
            return None;
        }
        self.head = None;
        let mark = data.len() - without_bom(&data).len();
        Some(data.slice(mark..))
    }

    /// Whether an OpenAI SDK would read `event` (one whole event) as
    /// nothing, or as an event with no data to parse: dropped.
    fn dispatches_nothing(&self, event: &[u8]) -> bool {
        match dispatched(event) {
            Dispatched::Data => false,
            Dispatched::Empty => true,
            Dispatched::Nothing => self.id_seen,
        }
    }

    /// Queues one whole event, but for a `[DONE]` on a wire that has no
    /// such marker (the Responses API, Anthropic's): some servers end
    /// every stream with it, and the OpenAI SDK stops reading there, so a
    /// stream cut after it looked finished, seawall's final event unread
    /// behind it. The stream guard judged it nothing (no end, no content).
    /// On the OpenAI wire an event with no data to parse is dropped (see
    /// [`Relay`]). Whether the event is relayed (a held `[DONE]` is).
    fn send_event(&mut self, event: Bytes) -> bool {
        if self.endpoint.wire() == Wire::OpenAi && self.dispatches_nothing(&event) {
            return false;
        }
        if is_done_event(&event) {
            if !self.endpoint.has_no_done_marker() {
                self.held_done = Some(event);
                return true;
            }
            return false;
        }
        self.send(event);
        true
    }

    /// The stream ended well. An event still waiting for its blank line is
    /// dropped, as an SSE client drops it at an end (WHATWG HTML 9.2.6):
    /// relayed, a naive reader would take its half for an event.
    fn flush(&mut self) {
        self.partial.clear();
    }

    /// The last frame was handed on (or there was none left): the request
    /// ended as its upstream did.
    fn settle(&mut self) {
        if let Some((end, code)) = self.ending.take() {
            self.tracker.end(end, code);
        }
    }

    /// The event stream broke: an event cut in half is dropped, seawall's
    /// final error event is the last frame, and `err` fails the body after
    /// it.
    fn interrupt(&mut self, err: BoxError) {
        self.done = true;
        self.partial.clear();
        let event = self.final_event(&err);
        self.queue.push_back(Frame::data(event));
        self.abort = Abort::AfterATurn(err);
    }

    fn final_event(&mut self, err: &BoxError) -> Bytes {
        let failure = Failure::find(&**err);
        let message = describe(failure, err, &self.redactor);
        let code = failure.map_or(Code::StreamInterrupted, Failure::code);
        let mut error = WireError::gateway(StatusCode::BAD_GATEWAY, code, message);
        if let Some(failure) = failure {
            error = error.with_provider_words(failure, &self.redactor);
        }
        let next = last_sequence_number(&self.last_run).map_or(0, |n| n.saturating_add(1));
        let event = error.event(self.endpoint, next);
        let mut out = BytesMut::with_capacity(event.len() + 1);
        // What was sent ends an event; one ended by a CR gets its LF, for
        // clients that read lines by LF.
        if self.last == b'\r' {
            out.extend_from_slice(b"\n");
        }
        out.extend_from_slice(&event);
        self.ending = Some((End::Interrupted, Some(code.as_str())));
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
        loop {
            if this.emitting || this.done {
                if let Some(frame) = this.queue.pop_front() {
                    if this.done && this.queue.is_empty() {
                        this.settle();
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
                this.emitting = false;
                if this.done {
                    this.settle();
                    return match std::mem::replace(&mut this.abort, Abort::No) {
                        Abort::No => Poll::Ready(None),
                        Abort::AfterATurn(err) => {
                            this.abort = Abort::Now(err);
                            cx.waker().wake_by_ref();
                            Poll::Pending
                        }
                        Abort::Now(err) => Poll::Ready(Some(Err(err))),
                    };
                }
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    match frame.into_data() {
                        Ok(data) => this.pass(data),
                        Err(frame) => {
                            this.flush();
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
                    if this.sse {
                        this.interrupt(err);
                    } else {
                        this.done = true;
                        let code = Failure::find(&*err).map_or(Code::Unknown, Failure::code);
                        this.tracker.end(End::Interrupted, Some(code.as_str()));
                        return Poll::Ready(Some(Err(err)));
                    }
                }
                Poll::Ready(None) => {
                    this.done = true;
                    this.flush();
                    if let Some(done) = this.held_done.take() {
                        this.send(done);
                    }
                    this.ending = Some((End::Served, None));
                }
                Poll::Pending if this.queue.is_empty() => {
                    // Looked at only when the relay would sleep: once per
                    // wait, not per turn.
                    if !this.cut.as_ref().is_some_and(|cut| cut.poll(cx)) {
                        return Poll::Pending;
                    }
                    this.cut = None;
                    this.interrupt(Box::new(
                        Failure::new(Code::StreamInterrupted).with_message(
                            "the gateway is shutting down and its grace period for answers in \
                         flight is over",
                        ),
                    ));
                }
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
        // it is counted. A broken stream never ends: it fails.
        self.done && self.queue.is_empty() && matches!(self.abort, Abort::No)
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
    struct Script(VecDeque<Option<&'static [u8]>>);

    impl Script {
        fn new(script: &[Option<&'static str>]) -> Script {
            Script(script.iter().map(|s| s.map(str::as_bytes)).collect())
        }
    }

    impl Body for Script {
        type Data = Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            match self.0.pop_front() {
                Some(Some(b"!")) => Poll::Ready(Some(Err("upstream reset".into()))),
                Some(Some(bytes)) => Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(bytes))))),
                Some(None) => Poll::Pending,
                None => Poll::Ready(None),
            }
        }
    }

    fn relay(sse: bool, script: &[Option<&'static str>]) -> Relay {
        relay_at(Endpoint::ChatCompletions, sse, script)
    }

    fn relay_at(endpoint: Endpoint, sse: bool, script: &[Option<&'static str>]) -> Relay {
        relay_script(endpoint, sse, Script::new(script))
    }

    fn relay_script(endpoint: Endpoint, sse: bool, script: Script) -> Relay {
        let inner = script.boxed_unsync();
        let tracker = Tracker::new(Arc::default(), "m", endpoint, sse);
        Relay::new(inner, endpoint, sse, tracker, Arc::default())
    }

    struct Count(AtomicU64);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// What each poll of the relay gives: a frame's text, `~` for pending
    /// with the task woken to come back (a turn given to the upstream's
    /// connection, or to the client's to flush), `-` for pending until the
    /// upstream wakes it, `end` for a clean end, `failed` for a body error
    /// (the last poll either way).
    fn polls(mut relay: Relay) -> Vec<String> {
        let count = Arc::new(Count(AtomicU64::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let mut seen = Vec::new();
        for _ in 0..100 {
            let before = count.0.load(Ordering::Relaxed);
            match Pin::new(&mut relay).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    // Lossy: a byte order mark's first bytes alone are no
                    // UTF-8, and still show where they went.
                    let data = frame.into_data().unwrap();
                    seen.push(String::from_utf8_lossy(&data).into_owned())
                }
                Poll::Ready(Some(Err(_))) => {
                    seen.push("failed".into());
                    return seen;
                }
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
                Some("a\n\n"),
                None,
                Some("b\n\n"),
                None,
                None,
                None,
                Some("c\n\n"),
                None,
                None,
                None,
                Some("d\n\n"),
            ],
        ));
        assert_eq!(
            seen,
            [
                "-", "~", "~", "~", "a\n\n", "b\n\n", "~", "~", "c\n\n", "d\n\n", "end"
            ]
        );
    }

    /// The upstream ended while the relay still held its tail: a client
    /// that goes away before the tail is handed on was not served, and one
    /// handed the last frame was, before any poll for the end (hyper stops
    /// at `is_end_stream`). The same for the final error event, whose
    /// body fails after it: counted interrupted before the failure.
    #[test]
    fn a_request_ends_when_its_last_frame_is_handed_on() {
        fn relay_counted(script: &[Option<&'static str>]) -> (Relay, Arc<Counters>) {
            let counters = Arc::new(Counters::default());
            let inner = Script::new(script).boxed_unsync();
            let tracker = Tracker::new(Arc::clone(&counters), "m", Endpoint::ChatCompletions, true);
            let relay = Relay::new(
                inner,
                Endpoint::ChatCompletions,
                true,
                tracker,
                Arc::default(),
            );
            (relay, counters)
        }
        let waker = Waker::noop();
        let mut cx = Context::from_waker(waker);
        for (script, ended) in [
            (&[Some("a\n\n"), Some("b\n\n")][..], "served"),
            (&[Some("a\n\n"), Some("!")][..], "interrupted"),
        ] {
            let (mut relay, counters) = relay_counted(script);
            let first = Pin::new(&mut relay).poll_frame(&mut cx);
            assert!(matches!(first, Poll::Ready(Some(Ok(_)))), "{ended}");
            drop(relay);
            let stats = counters.snapshot();
            assert_eq!(
                (stats.cancelled, stats.served, stats.interrupted),
                (1, 0, 0),
                "{ended}"
            );

            // Both scripts leave two frames: the second is the last.
            let (mut relay, counters) = relay_counted(script);
            for _ in 0..2 {
                let frame = Pin::new(&mut relay).poll_frame(&mut cx);
                assert!(matches!(frame, Poll::Ready(Some(Ok(_)))), "{ended}");
            }
            // A broken stream's body fails after its last frame (a turn
            // for the connection to flush it first): not an end hyper may
            // take from `is_end_stream`.
            assert_eq!(relay.is_end_stream(), ended == "served", "{ended}");
            let stats = counters.snapshot();
            let counted = match ended {
                "served" => stats.served,
                _ => stats.interrupted,
            };
            assert_eq!((stats.cancelled, counted), (0, 1), "{ended}");
        }
    }

    #[test]
    fn a_batch_is_bounded() {
        let script: Vec<_> = std::iter::repeat_n(Some("x\n\n"), BATCH_FRAMES + 1).collect();
        let seen = polls(relay(true, &script));
        assert_eq!(seen.len(), BATCH_FRAMES + 2);
        assert!(seen[..BATCH_FRAMES + 1].iter().all(|s| s == "x\n\n"));
        let mut script = vec![Some("y\n\n"); 2];
        script.insert(1, None);
        let big: &'static str = format!("{}\n\n", "z".repeat(BATCH_BYTES)).leak();
        script.insert(0, Some(big));
        // The big frame fills the batch alone: it leaves at once.
        let seen = polls(relay(true, &script));
        assert_eq!(seen[0], big);
        assert_eq!(&seen[1..], ["~", "y\n\n", "y\n\n", "end"]);
    }

    /// A stream cut inside an event: the half event is never sent, so
    /// seawall's event follows a whole one and no client dispatches a
    /// broken event.
    #[test]
    fn a_break_drops_the_half_event_and_ends_with_one_error_event() {
        let seen = polls(relay(
            true,
            &[Some("data: a\n\n"), None, Some("data: {\"b"), Some("!")],
        ));
        assert_eq!(seen[..2], ["~", "data: a\n\n"]);
        assert!(seen[2].starts_with("data: {\"error\""), "{seen:?}");
        assert!(seen[2].contains("upstream reset"), "{seen:?}");
        // Then a turn for the connection to write it, and the body
        // fails: no clean end for a client to take the answer as whole.
        assert_eq!(seen[3..], ["~", "failed"]);
    }

    /// The Responses API's closing error event takes the number after the
    /// last one shown, a keep-alive comment in between or not.
    #[test]
    fn the_responses_error_event_follows_the_last_number() {
        let seen = polls(relay_at(
            Endpoint::Responses,
            true,
            &[
                Some(
                    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":7,\"delta\":\"a\"}\n\n",
                ),
                Some(": keep-alive\n\n"),
                Some("!"),
            ],
        ));
        let last = seen.iter().rev().nth(2).unwrap();
        assert!(last.contains("\"sequence_number\":8"), "{seen:?}");
    }

    /// Events the upstream splits over frames go out whole, the bytes
    /// unchanged; an event still waiting for its blank line at a clean end
    /// is dropped, as an SSE client drops it (it used to be relayed, half
    /// an event for a naive reader).
    #[test]
    fn events_split_over_frames_leave_whole() {
        let seen = polls(relay(
            true,
            &[
                Some("data: a\n"),
                Some("\ndata: b\r"),
                Some("\n\r"),
                Some("\ndata: c\n\ndata: d"),
            ],
        ));
        assert_eq!(seen.concat(), "data: a\n\ndata: b\r\n\r\ndata: c\n\nend");
        assert!(seen.contains(&"data: a\n\n".to_owned()), "{seen:?}");
    }

    /// `[DONE]` on a wire that has no such marker is relayed to no client:
    /// the OpenAI SDK stops at it, and seawall's final event behind it went
    /// unread (a cut Responses stream looked finished). On the chat wire
    /// it is the end marker and goes as sent.
    #[test]
    fn done_goes_only_where_it_is_the_end_marker() {
        let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"delta\":\"a\"}\n\n";
        for frames in [
            vec![Some(delta), Some("data: [DONE]\n\n"), Some("!")],
            vec![Some(&*format!("{delta}data: [DONE]\n\n").leak()), Some("!")],
            vec![
                Some(delta),
                Some("data: [DO"),
                Some("NE]\r\n\r\n"),
                Some("!"),
            ],
            vec![Some(delta), Some(": ping\ndata:[DONE] \n\n"), Some("!")],
        ] {
            let seen = polls(relay_at(Endpoint::Responses, true, &frames)).concat();
            assert!(!seen.contains("[DONE]"), "{seen}");
            assert!(seen.starts_with(delta), "{seen}");
            assert!(seen.contains("\"sequence_number\":4"), "{seen}");
        }
        // As the SDK reads it: data that starts with it, whatever the
        // other fields; data that only holds it is relayed.
        for done in [
            "id: 7\ndata: [DONE]\n\n",
            "event: done\ndata: [DONE] and more\n\n",
        ] {
            let seen = polls(relay_at(Endpoint::Messages, true, &[Some(done)])).concat();
            assert_eq!(seen, "end", "{done:?}");
        }
        for other in ["data: {\"x\":\"[DONE]\"}\n\n", "data:\ndata: [DONE]\n\n"] {
            let seen = polls(relay_at(Endpoint::Messages, true, &[Some(other)])).concat();
            assert_eq!(seen, format!("{other}end"));
        }
        let seen = polls(relay(true, &[Some("data: x\n\ndata: [DONE]\n\n")])).concat();
        assert_eq!(seen, "data: x\n\ndata: [DONE]\n\nend");
    }

    /// On the chat wire `[DONE]` goes only once the upstream body ended
    /// well: a failure after it (the guard's verdict on a finish that is
    /// no answer comes on the next poll) ends the stream with seawall's
    /// error event and no `[DONE]`, which an SDK would have stopped at.
    #[test]
    fn a_chat_streams_done_waits_for_a_clean_end() {
        let delta = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
        for frames in [
            vec![Some(delta), Some("data: [DONE]\n\n"), Some("!")],
            vec![
                Some(&*format!("{delta}data: [DONE]\n\n").leak()),
                None,
                Some("!"),
            ],
        ] {
            let seen: String = polls(relay_at(Endpoint::ChatCompletions, true, &frames))
                .into_iter()
                .filter(|turn| turn != "~" && turn != "-")
                .collect();
            assert!(!seen.contains("[DONE]"), "{seen}");
            assert!(seen.starts_with(delta), "{seen}");
            assert!(seen.contains("\"error\""), "{seen}");
        }
        let seen: String = polls(relay_at(
            Endpoint::ChatCompletions,
            true,
            &[Some(delta), None, Some("data: [DONE]\n\n")],
        ))
        .into_iter()
        .filter(|turn| turn != "~" && turn != "-")
        .collect();
        assert_eq!(seen, format!("{delta}data: [DONE]\n\nend"));
    }

    /// The relayed body, pending turns left out.
    fn body(relay: Relay) -> String {
        polls(relay)
            .into_iter()
            .filter(|turn| turn != "~" && turn != "-")
            .collect()
    }

    /// An event the OpenAI SDKs would dispatch with no data (a ping some
    /// servers send, an empty `data:` heartbeat) is relayed to no OpenAI
    /// client: openai-python's `json.loads("")` and openai-node's
    /// `JSON.parse("")` raised mid-answer. Every data event goes, in order.
    #[test]
    fn events_without_data_go_to_no_openai_client() {
        let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
        let finish =
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
        let done = "data: [DONE]\n\n";
        let answer = format!("{chunk}{finish}{done}end");
        for ping in [
            "event: ping\n\n",
            "event: ping\ndata:\n\n",
            "data:\n\n",
            "data: \t \r\n\r\n",
            "data\ndata: \n\n",
            "id: 7\n\n",
            "retry: 3000\r\r",
            ": a comment\nevent: ping\n\n",
        ] {
            // A frame an event, or all in one frame (the frame is cut
            // around the ping), or the ping split over frames.
            let seen = body(relay(
                true,
                &[Some(chunk), Some(ping), Some(finish), Some(done)],
            ));
            assert_eq!(seen, answer, "{ping:?}");
            let one: &'static str = format!("{chunk}{ping}{finish}{done}").leak();
            assert_eq!(body(relay(true, &[Some(one)])), answer, "{ping:?}");
            let (a, b) = ping.split_at(3);
            let split: &'static str = format!("{chunk}{a}").leak();
            let seen = body(relay(
                true,
                &[Some(split), Some(b), Some(finish), Some(done)],
            ));
            assert_eq!(seen, answer, "{ping:?}");
        }
        // The Responses API's SDK reads events the same way.
        let delta = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"delta\":\"a\"}\n\n";
        let seen = body(relay_at(
            Endpoint::Responses,
            true,
            &[Some(&*format!("event: ping\n\n{delta}data:\n\n").leak())],
        ));
        assert_eq!(seen, format!("{delta}end"));
        // Anthropic's SDK skips events it does not know: all go.
        let ping = "event: ping\n\nevent: ping\ndata:\n\n";
        let seen = body(relay_at(Endpoint::Messages, true, &[Some(ping)]));
        assert_eq!(seen, format!("{ping}end"));
    }

    /// Comments and blank lines keep proxies' idle timers alive and no
    /// OpenAI SDK dispatches them, until an `id` has gone by: then
    /// openai-python dispatches an empty event at every blank line.
    #[test]
    fn comments_go_until_an_id_has_gone_by() {
        let chunk = "data: {\"choices\":[]}\n\n";
        let keep_alive = ": keep-alive\n\n";
        let seen = body(relay(
            true,
            &[Some(keep_alive), Some(chunk), Some(keep_alive), Some("\n")],
        ));
        assert_eq!(seen, format!("{keep_alive}{chunk}{keep_alive}\nend"));
        let with_id = "id: 1\ndata: {\"choices\":[]}\n\n";
        for script in [
            &[Some(with_id), Some(keep_alive), Some("\n"), Some(chunk)][..],
            &[Some(&*format!("{with_id}{keep_alive}\n{chunk}").leak())][..],
            // The `id` split by the frames' edge.
            &[
                Some("data: {}\ni"),
                Some("d: 1\n\n"),
                Some(keep_alive),
                Some(chunk),
            ][..],
        ] {
            let seen = body(relay(true, script));
            assert!(!seen.contains("keep-alive"), "{seen:?}");
            assert!(seen.ends_with(&format!("\n\n{chunk}end")), "{seen:?}");
        }
    }

    /// An event dropped at a frame's end with a CR: the LF that opens the
    /// next frame goes with it, not as a blank line of its own.
    #[test]
    fn a_dropped_events_lf_goes_with_it() {
        let seen = body(relay(
            true,
            &[
                Some("data: a\r\r"),
                Some("\nevent: ping\r\r"),
                Some("\ndata: b\r\n\r\n"),
            ],
        ));
        // The LF after `a`'s CRs opened the dropped event's frame, and
        // went with it: `a` still ends at its `\r\r`.
        assert_eq!(seen, "data: a\r\rdata: b\r\n\r\nend");
    }

    /// A byte order mark that opens an event stream is not relayed, whole
    /// or split over frames: the Python SDKs read the first field as
    /// `\u{feff}data` and lost the first event. One that is not at the
    /// start, or the start of a mark that is none, goes as it came.
    #[test]
    fn an_opening_byte_order_mark_is_not_relayed() {
        let event: &[u8] = b"data: {\"choices\":[]}\n\n";
        let with_mark: &'static [u8] = [&UTF8_BOM[..], event].concat().leak();
        for endpoint in [Endpoint::ChatCompletions, Endpoint::Messages] {
            for script in [
                vec![Some(with_mark)],
                vec![Some(&UTF8_BOM[..1]), Some(&with_mark[1..])],
                vec![
                    Some(&UTF8_BOM[..1]),
                    None,
                    Some(&UTF8_BOM[1..]),
                    Some(event),
                ],
                vec![Some(&with_mark[..2]), Some(&with_mark[2..])],
                vec![Some(&b""[..]), Some(&UTF8_BOM[..]), Some(event)],
            ] {
                let seen = body(relay_script(endpoint, true, Script(script.into())));
                assert_eq!(seen.as_bytes(), [event, b"end"].concat(), "{endpoint:?}");
            }
        }
        let twice: &'static [u8] = [&UTF8_BOM[..], with_mark].concat().leak();
        let seen = body(relay_script(
            Endpoint::Messages,
            true,
            Script([Some(twice)].into()),
        ));
        assert!(seen.starts_with('\u{feff}'), "{seen:?}");
        // No mark after all: its first bytes go, as content.
        let seen = body(relay_script(
            Endpoint::Messages,
            true,
            Script([Some(&UTF8_BOM[..2]), Some(b"x\n\n")].into()),
        ));
        assert_eq!(seen, String::from_utf8_lossy(b"\xEF\xBBx\n\nend"));
        // A unary body is relayed as it came.
        let seen = body(relay_script(
            Endpoint::ChatCompletions,
            false,
            Script([Some(&UTF8_BOM[..]), Some(b"{}")].into()),
        ));
        assert_eq!(seen, "\u{feff}{}end");
    }

    #[test]
    fn a_unary_body_is_not_held() {
        let seen = polls(relay(false, &[Some("{"), None, Some("}")]));
        assert_eq!(seen, ["{", "-", "}", "end"]);
    }

    #[test]
    fn events_end_at_blank_lines_of_any_line_end() {
        let ends = |frames: &[&str]| {
            let mut lines = Lines::default();
            let mut found = Vec::new();
            for (i, frame) in frames.iter().enumerate() {
                let mut from = 0;
                while let Some(end) = lines.next_event_end(frame.as_bytes(), from) {
                    found.push((i, end));
                    from = end;
                }
            }
            found
        };
        assert_eq!(ends(&["data: a\n\ndata: b\n\n"]), [(0, 9), (0, 18)]);
        // A CRLF blank line ends with its LF when the LF has come.
        assert_eq!(ends(&["data: a\r\n\r\n"]), [(0, 11)]);
        assert_eq!(
            ends(&["data: a\r\n\r\ndata: b\r\n\r\n"]),
            [(0, 11), (0, 22)]
        );
        assert_eq!(
            ends(&["data: a\r\n\r", "\ndata: b\r\n\r\n"]),
            [(0, 10), (1, 12)]
        );
        assert_eq!(ends(&["data: a\r\rdata: b\r\r"]), [(0, 9), (0, 18)]);
        // Split anywhere, even between a CR and its LF.
        assert_eq!(ends(&["data: a\r", "\n", "\r", "\n"]), [(2, 1)]);
        assert_eq!(ends(&["data: a\n", "\n"]), [(1, 1)]);
        // A CRLF's LF ends no second line.
        assert!(ends(&["data: a\r\ndata: b\r\n"]).is_empty());
    }
}
