//! One guarded stream: the scanner, the decoder, the counters, the one
//! timer and the frames held back until the first content event.
//!
//! The response future drives it until the first content event
//! ([`Stream::poll_hold`]), then hands the same box to the body, which
//! replays the held frames and continues live ([`Stream::poll_live`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use pin_project_lite::pin_project;
use seawall_core::finish::empty_answer;
use seawall_core::{
    AttemptSpans, BoxError, Class, ClosedBy, Code, Evidence, Failure, Finish, FinishKind,
    Interrupted, Progress, RequestFacts,
};
use tokio::time::{Instant, Sleep, sleep_until};

use super::{Config, Recognised};
use crate::json_array::{ArrayError, Splitter};
use crate::protocol::{Decoder, Reason, Signal};
use crate::report::{BOUND_FIELD, Bound, StreamReport, StreamReportHandle, trace};
use crate::sse::{Event, Item, ScanError, Scanner};
use seawall_core::provider::Provider;
use seawall_internal::json::Opening;

/// How long a stream that finished without content is read on for what
/// may still follow the finish ([`wait_after_empty_finish`]): OpenAI's
/// usage chunk (`stream_options.include_usage`), sent at once after the
/// finish and before `[DONE]`; on Gemini's wire, the end of the stream,
/// or content after all. A server that sends none of it costs this much,
/// not the idle bound.
const EMPTY_FINISH_WAIT: Duration = Duration::from_secs(2);

/// Why a stream stopped early.
#[derive(Debug)]
enum Cause {
    /// The provider sent an error event. Boxed, as the other failure
    /// here: a `Cause` lives in the stream's box and in every step read
    /// (`Option<Cause>`), and an inline `Failure` made each 200 bytes
    /// that a healthy stream copies and never fills.
    InStream(Box<Failure>),
    /// A finish or done marker before any content.
    FinishedEmpty,
    /// A clean EOF without the finish marker.
    Eof,
    /// The message finished after content with a verdict that is no
    /// success: a refusal or filter (policy) or a malformed call
    /// (model-fixable). Delivered, and never silently equal to success.
    PolicyFinish(Box<Failure>),
    /// The body failed (reset, broken pipe, protocol error).
    Transport(BoxError),
    Timeout(Bound),
    Scan(ScanError),
    /// Gemini's JSON-array stream broke its framing.
    Array(ArrayError),
    /// Event data that is not UTF-8 or not JSON: text may be lost in it.
    Undecodable(&'static str),
    /// A body the guard took for a stream (no event-stream content type,
    /// but a stream was asked for) that does not open like one.
    NotAStream,
    /// More bytes arrived before the first content event than the guard
    /// holds back, and none of them showed the model thinking (only
    /// keep-alives, events nobody reads, or progress such as a role delta
    /// that says the answer began and nothing of its work).
    HoldTooLarge,
}

/// What the events of a stream add up to.
#[derive(Debug)]
struct Tally {
    events: u64,
    content_events: u64,
    /// Content events that carry a tool or function call (or other
    /// content without text), with text beside it or not.
    tool_call_events: u64,
    /// Events that show the model working without content yet: role
    /// deltas, thinking, reasoning, block starts.
    progress_events: u64,
    keepalives: u64,
    /// When the stream first said something a decoder reads: anything but
    /// a keep-alive (a comment, a ping, a blank event) or an event nobody
    /// reads. The first-byte bound is met then, not at the first byte: a
    /// server that sends its head and then only keep-alives generates no
    /// more than one that sends nothing, and is failed over as soon.
    first_read: Option<Instant>,
    first_content: Option<Instant>,
    last_activity: Instant,
    /// When the model last showed its thinking ([`Signal::Thinking`]).
    last_thinking: Option<Instant>,
    finish: Option<Finish>,
    /// The delivered text, when reconstruction is on.
    text: Option<String>,
    text_cap: usize,
    text_capped: bool,
    stop: Option<Cause>,
    /// The request continues an answer the caller holds part of
    /// ([`RequestFacts::continues`]).
    continues: bool,
    /// A policy finish is the answer (`Config::deliver_policy`).
    deliver_policy: bool,
    /// When the message finished without content while what may follow
    /// the finish is still to come ([`EMPTY_FINISH_WAIT`]): the stop that
    /// finish is waits for it.
    empty_finish_at: Option<Instant>,
    /// Content after a finish takes the finish back (Gemini's; see
    /// `Tally::apply`).
    content_reopens: bool,
}

impl Tally {
    // Inlined into `judge`, its caller for every event: out of line the
    // call cost about a third of what the tally itself does.
    #[inline(always)]
    fn apply(&mut self, signal: Signal<'_>, now: Instant) {
        if self.stop.is_some() {
            return;
        }
        if !matches!(signal, Signal::KeepAlive | Signal::Other) {
            self.first_read.get_or_insert(now);
        }
        match signal {
            Signal::Content { text, finish, act } => {
                self.content_events += 1;
                self.first_content.get_or_insert(now);
                self.last_activity = now;
                if let Some(text) = &text {
                    self.append(text);
                }
                // A call in the same event as text (a Gemini chunk with a
                // text part and a function call) is still a call.
                if act || text.is_none() {
                    self.tool_call_events += 1;
                }
                if let Some(reason) = finish {
                    self.finish(reason);
                } else if self.content_reopens
                    && self
                        .finish
                        .as_ref()
                        .is_some_and(|f| f.kind.completes_task())
                {
                    // Gemini names a finish on chunks that are not the
                    // last: a code-execution round's code carries `STOP`
                    // and its result and the answer follow (Vertex AI
                    // once named it on every chunk). Content after a
                    // finish says the message goes on: a cut after it is
                    // a cut, not a whole answer. A finish that is a
                    // verdict (a filter, a cut at the token limit) stays.
                    self.finish = None;
                }
            }
            Signal::Progress => {
                self.progress_events += 1;
                self.last_activity = now;
            }
            Signal::Thinking => {
                self.progress_events += 1;
                self.last_activity = now;
                self.last_thinking = Some(now);
            }
            Signal::KeepAlive => self.keepalives += 1,
            Signal::Finish(reason) => {
                self.last_activity = now;
                self.finish(reason);
                self.stop_if_empty();
            }
            Signal::Error(failure) => self.stop = Some(Cause::InStream(failure)),
            Signal::Done => {
                // `[DONE]` or `message_stop` without a reason still closes
                // the message.
                if self.finish.is_none() {
                    self.finish(Reason {
                        kind: FinishKind::Other,
                        reason: "done".into(),
                    });
                }
                self.stop_if_empty();
            }
            Signal::Other => {}
            Signal::Undecodable(why) => self.stop = Some(Cause::Undecodable(why)),
        }
    }

    fn finish(&mut self, reason: Reason<'_>) {
        // A finish that is a verdict (a filter, a cut at the token limit)
        // is not taken back by a later one that completes the task: a
        // `stop` after `content_filter` is no whole answer.
        if reason.kind.completes_task()
            && self
                .finish
                .as_ref()
                .is_some_and(|f| !f.kind.completes_task())
        {
            return;
        }
        self.finish = Some(Finish::new(reason.kind, &reason.reason));
    }

    /// What the message amounts to if it finished without content: `None`
    /// when it is still an answer (cut by the token limit), else its
    /// failure.
    fn empty_verdict(&self) -> Option<Failure> {
        // A continuation that finishes at once says the answer the caller
        // holds was whole.
        if self.continues
            && self
                .finish
                .as_ref()
                .is_some_and(|f| f.kind == FinishKind::Complete)
        {
            return None;
        }
        empty_answer(self.finish.as_ref().map(|f| (f.kind, &*f.reason)))
            .filter(|failure| !(self.deliver_policy && failure.class() == Class::Policy))
    }

    /// A message that finished without content and is no answer stops the
    /// stream.
    fn stop_if_empty(&mut self) {
        if self.content_events == 0 && self.empty_verdict().is_some() {
            self.stop = Some(Cause::FinishedEmpty);
        }
    }

    fn append(&mut self, delta: &str) {
        let Some(text) = &mut self.text else { return };
        if self.text_capped {
            return;
        }
        let room = self.text_cap - text.len();
        let delta = if delta.len() <= room {
            delta
        } else {
            self.text_capped = true;
            seawall_core::excerpt(delta, room)
        };
        // Grow by doubling from a first step that holds a few deltas, but
        // never past the cap.
        if text.capacity() - text.len() < delta.len() {
            let want = (text.len() * 2)
                .max(text.len() + delta.len())
                .max(FIRST_TEXT_CAPACITY)
                .min(self.text_cap);
            text.reserve_exact(want - text.len());
        }
        text.push_str(delta);
    }
}

/// Whether a body opens like an event stream, read on from the frames
/// before: its first non-blank byte (after a byte-order mark, split
/// across frames or not) starts a field line (`data`, `event`, `id`,
/// `retry`) or a comment. `None` while only blanks have arrived.
fn opens_like_event_stream(opening: &mut Opening, data: &[u8]) -> Option<bool> {
    let first = opening.feed(data)?;
    Some(seawall_internal::json::opens_event_stream(first))
}

/// What a finished stream adds to seawall's metrics.
/// `cause`: what broke a stream interrupted after content, in its own
/// terms (the report's code says only `stream_interrupted`): the
/// interruptions' `code` label.
/// `delivered`: bytes of the stream reached the caller (content, or a
/// hold handed on before it): a failure then is an interruption.
/// `bills`: the request bills ([`seawall_core::billable`]) or continues
/// an answer (a retrieval of a cut background stream): only then are the
/// usage's tokens counted.
#[cfg(feature = "metrics")]
fn record(
    report: &StreamReport,
    route: &seawall_core::RouteId,
    cause: Option<Code>,
    delivered: bool,
    bills: bool,
) {
    use seawall_core::metric_names::{
        STREAM_INTERRUPTIONS_TOTAL, TIME_TO_FIRST_BYTE_SECONDS, TIME_TO_FIRST_CONTENT_SECONDS,
    };
    if let Some(ttfb) = report.time_to_first_byte {
        metrics::histogram!(TIME_TO_FIRST_BYTE_SECONDS).record(ttfb.as_secs_f64());
    }
    if let Some(ttfc) = report.time_to_first_content {
        metrics::histogram!(TIME_TO_FIRST_CONTENT_SECONDS).record(ttfc.as_secs_f64());
    }
    // A caller that stopped reading (`cancelled`) broke nothing: no
    // interruption, as no failure on the attempt's span.
    if let Some(code) = report
        .code
        .filter(|&code| delivered && code != Code::Cancelled)
    {
        let code = cause
            .filter(|_| code == Code::StreamInterrupted)
            .unwrap_or(code);
        metrics::counter!(STREAM_INTERRUPTIONS_TOTAL, "route" => route.to_shared(), "code" => code.as_str())
            .increment(1);
    }
    // A stored answer read again (`GET …/responses/{id}?stream=true`, a
    // caller's) carries the usage of the work that made it, counted then:
    // counted again, the metric would bill it twice, unlike the receipt,
    // which leaves such an attempt out. A resume's retrieval of a cut
    // background stream bills (`bills`): the cut stream saw no usage
    // (only the terminal event carries it), and the receipt moves this
    // usage onto the cut attempt, so it is counted here, once.
    if let Some(usage) = report.usage.filter(|_| bills) {
        seawall_core::record::tokens(route, usage);
    }
}

/// The delivered text's first allocation: deltas are a few bytes each, so
/// starting at the first one's size would reallocate on every early event.
const FIRST_TEXT_CAPACITY: usize = 64;

/// What the service knows at call time.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) config: Arc<Config>,
    /// What the request asked for.
    pub(crate) facts: RequestFacts,
    /// How the response was recognised as a stream, once it arrived.
    pub(crate) recognised: Option<Recognised>,
    /// The request asks for Gemini's JSON-array stream.
    pub(crate) json_array: bool,
    /// Chosen from the request (or the layer's setting) at call time.
    pub(crate) provider: Provider,
    pub(crate) started: Instant,
    /// The attempt's shared progress, when a per-attempt deadline put one in
    /// the request extensions: it reads it to tell silence from slowness.
    pub(crate) progress: Option<Progress>,
    /// The attempt's spans, when a ladder recorded by a subscriber put them
    /// in the request: kept open until the stream ends, which they record.
    /// Boxed: only a call a subscriber records has them, and inline they
    /// made every call's future (moved by each layer above) and every
    /// stream's box 88 bytes larger.
    pub(crate) spans: Option<Box<AttemptSpans>>,
    /// The route, for metric labels.
    #[cfg(feature = "metrics")]
    pub(crate) route: seawall_core::RouteId,
    /// The request bills ([`seawall_core::billable`]) or continues an
    /// answer ([`RequestFacts::continues`]): its usage is counted in the
    /// token metric.
    #[cfg(feature = "metrics")]
    pub(crate) bills: bool,
    /// When the operation's deadline passes, the one its total bound cuts
    /// the response body at, if it has one (see `Track::operation_by`).
    pub(crate) operation_by: Option<Instant>,
    /// When a caller's wait for its answer to begin ends ([`AnswerBy`](seawall_core::AnswerBy)).
    pub(crate) answer_by: Option<Instant>,
    /// When this attempt's own bound ends (the [`Deadline`](seawall_core::Deadline)
    /// a per-attempt bound outside set), if one does.
    pub(crate) attempt_by: Option<Instant>,
    /// A `HEAD` request: its answer has no body, whatever its type says,
    /// so nothing to guard.
    pub(crate) head_request: bool,
}

/// How long before the caller's [`AnswerBy`](seawall_core::AnswerBy) a hold with something in it
/// is handed on: ahead of the deadline layer's bound at the same instant.
const RELEASE_LEAD: Duration = Duration::from_millis(50);

/// Everything a stream knows besides its body and timer.
#[derive(Debug)]
pub(crate) struct Track {
    config: Arc<Config>,
    progress: Option<Progress>,
    framing: Framing,
    decoder: Decoder,
    tally: Tally,
    status: u16,
    started: Instant,
    /// When the first body byte arrived, keep-alive or not: reported
    /// (time to first byte), never a bound ([`Tally::first_read`] is).
    first_byte: Option<Instant>,
    bytes: u64,
    /// Bytes received and never handed on: the error event that stopped
    /// the stream, and what came after it in its frame.
    withheld: u64,
    /// Where, in the frame just fed, the provider's own error event that
    /// stopped the stream begins: the frame is cut there, so its bytes are
    /// never handed on (the failure carries what it said) and no client
    /// reads it before seawall's verdict.
    error_at: Option<usize>,
    /// Where, in the frame just fed, the protocol's end event ends
    /// ([`Decoder::ended`]): the frame is cut there, and the stream ends
    /// with it. Bytes after the end are no part of the answer (text sent
    /// after `[DONE]` was added to it, and the caller got a different
    /// answer than an SDK reading the same stream), and a server that
    /// keeps the connection open after it holds nobody (a finished answer
    /// was held until the idle bound).
    end_at: Option<usize>,
    /// When the last frame read from the upstream was handed to the
    /// consumer, until the consumer polls again: the time between is the
    /// consumer's, not the upstream's silence (`credit_consumer`).
    handed_at: Option<Instant>,
    /// When the last data frame was read from the upstream.
    read_at: Option<Instant>,
    chunks: u64,
    /// Why the stream stops, found in a frame handed on before it: the
    /// live body yields it next.
    pending: Option<Cause>,
    handle: StreamReportHandle,
    reported: bool,
    /// The held frames were handed on before any content, at the hold cap
    /// or the caller's [`AnswerBy`](seawall_core::AnswerBy) (see [`Stream::poll_hold`]): from then
    /// on nothing is replayed.
    released: bool,
    /// When a hold that holds progress is handed on: the caller's
    /// [`AnswerBy`](seawall_core::AnswerBy) less [`RELEASE_LEAD`].
    release_by: Option<Instant>,
    /// When a hold of a model still thinking is handed on: the attempt's
    /// bound less [`RELEASE_LEAD`].
    think_release_by: Option<Instant>,
    /// The body was taken for a stream without its content type saying so,
    /// and how it opens is not known yet: what its frames so far opened
    /// with (a byte order mark's first bytes, blanks).
    opening_unchecked: Option<Opening>,
    spans: Option<Box<AttemptSpans>>,
    /// The bound whose passing the stream failed at, for the report.
    bound: Option<Bound>,
    #[cfg(feature = "metrics")]
    route: seawall_core::RouteId,
    /// The request bills: see [`Setup::bills`].
    #[cfg(feature = "metrics")]
    bills: bool,
    /// When the operation's deadline passes. The deadline layer that
    /// bounds the operation cuts the body there with `deadline_exceeded`
    /// and keeps this stream alive until its caller drops it: dropped
    /// unfinished once it passed, the stream was broken by the deadline,
    /// not given up by its caller (see `Drop`).
    operation_by: Option<Instant>,
    /// What broke the stream, in its own terms, for the metric's label.
    #[cfg(feature = "metrics")]
    cause: Option<Code>,
}

impl Track {
    pub(crate) fn new(setup: Setup, status: u16, handle: StreamReportHandle) -> Self {
        let Setup {
            config,
            provider,
            started,
            progress,
            recognised,
            spans,
            facts,
            json_array: _,
            #[cfg(feature = "metrics")]
            route,
            #[cfg(feature = "metrics")]
            bills,
            operation_by,
            answer_by,
            attempt_by,
            head_request: _,
        } = setup;
        Track {
            framing: match recognised {
                Some(Recognised::JsonArray) => Framing::JsonArray(Splitter::new(config.max_event)),
                _ => Framing::Sse(Scanner::new(config.max_line, config.max_event)),
            },
            decoder: Decoder::for_stream(
                provider,
                config.quota_wall.unwrap_or_default(),
                // The choices the body asked for, read on the wire it
                // asked them on: a stream cut before one of them showed
                // up, with no end marker, is cut, not whole.
                facts
                    .choices_asked()
                    .filter(|_| facts.provider() == Some(provider)),
            ),
            tally: Tally {
                events: 0,
                content_events: 0,
                tool_call_events: 0,
                progress_events: 0,
                keepalives: 0,
                first_read: None,
                first_content: None,
                last_activity: started,
                last_thinking: None,
                finish: None,
                text: config.max_text.map(|_| String::new()),
                text_cap: config.max_text.unwrap_or(0),
                text_capped: false,
                stop: None,
                continues: facts.continues(),
                deliver_policy: config.deliver_policy,
                empty_finish_at: None,
                content_reopens: provider == Provider::Gemini,
            },
            config,
            progress,
            status,
            started,
            first_byte: None,
            bytes: 0,
            withheld: 0,
            error_at: None,
            end_at: None,
            handed_at: None,
            read_at: None,
            chunks: 0,
            pending: None,
            handle,
            reported: false,
            // A background response runs to its end whoever reads it:
            // held back and failed, it would be asked for again and run
            // twice, the first one's id (in its first event) thrown away.
            // So it is handed on as it comes, never replayed.
            released: facts.background_stream(),
            release_by: answer_by.map(|at| at.checked_sub(RELEASE_LEAD).unwrap_or(at)),
            think_release_by: attempt_by.map(|at| at.checked_sub(RELEASE_LEAD).unwrap_or(at)),
            // Only a body not declared an event stream must show it is one.
            opening_unchecked: (recognised == Some(Recognised::Requested)).then(Opening::default),
            spans,
            bound: None,
            #[cfg(feature = "metrics")]
            route,
            #[cfg(feature = "metrics")]
            bills,
            operation_by,
            #[cfg(feature = "metrics")]
            cause: None,
        }
    }

    /// When the hold is handed on though no content came: while held, once
    /// something the caller would read is in it (thinking, a role delta,
    /// `message_start`) and the caller has a wait for its answer to begin.
    ///
    /// Also, before the attempt's own bound, once the hold shows a model
    /// still thinking (its last thought within the idle bound of then):
    /// cut there, the attempt would be asked again, to think and be billed
    /// as long again.
    fn release_at(&self) -> Option<Instant> {
        // Not while an empty finish waits for what follows it: there is no
        // answer to hand on, and its verdict comes within the wait.
        let holding = self.tally.first_content.is_none()
            && !self.released
            && self.tally.empty_finish_at.is_none();
        if !holding {
            return None;
        }
        let for_caller = (self.tally.progress_events > 0)
            .then_some(self.release_by)
            .flatten();
        let thinking = |at: &Instant| {
            self.tally
                .last_thinking
                .is_some_and(|thought| thought + self.config.idle > *at)
        };
        let for_attempt = self.think_release_by.filter(thinking);
        match (for_caller, for_attempt) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn release_due(&self, now: Instant) -> bool {
        self.release_at().is_some_and(|at| now >= at)
    }

    /// Hands the hold on at the caller's [`AnswerBy`](seawall_core::AnswerBy)
    /// or the attempt's bound ([`Track::release_at`]), and says so: from
    /// here a failure is the caller's to see.
    fn release_before_bound(&mut self) {
        self.released = true;
        tracing::debug!(
            target: "seawall::stream",
            progress_events = self.tally.progress_events,
            thinking = self.tally.last_thinking.is_some(),
            bytes = self.bytes,
            "hold handed on before the caller's AnswerBy or the attempt's bound, no content yet"
        );
    }

    /// Moves the idle bound on by the time the consumer held the stream
    /// since a frame was handed to it at `handed`: a caller, or hyper
    /// writing to a client that reads slowly, that does not poll for a
    /// while stops the guard reading, and that wait was charged as the
    /// upstream's silence: a healthy stream was cut `idle_timeout` on its
    /// next ping (and a breaker counted it against the route). Only the
    /// idle bound, after content: the total bounds and `max_duration` run
    /// on.
    fn credit_consumer(&mut self, handed: Instant) {
        if self.tally.first_content.is_none() {
            return;
        }
        let now = Instant::now();
        let held = now.saturating_duration_since(handed);
        self.tally.last_activity = (self.tally.last_activity + held).min(now);
    }

    /// The protocol's end arrived ([`Decoder::ended`]): the body is not
    /// read past it.
    fn protocol_ended(&self) -> bool {
        self.decoder.ended()
    }

    fn content_seen(&self) -> bool {
        self.tally.content_events > 0
    }

    /// The stream showed the provider at work on this request: content,
    /// a progress event (Anthropic's `message_start`, an OpenAI role or
    /// usage chunk, the Responses API's `response.created`, a Gemini chunk
    /// without parts), thinking, or a finish. An error the provider sends
    /// before any of these refused the request before generating, as a
    /// 4xx or 5xx head would have: nothing billed, whatever the 200 says.
    /// Anthropic bills the input once `message_start` has been sent, and
    /// an error after it stays billed; keep-alives and events no decoder
    /// reads (`ping`, comments) say nothing either way. Counting any
    /// progress, not only the events that name usage, errs toward billed:
    /// a receipt that counts a charge the provider waived is corrected by
    /// its invoice, one that drops a charge hides it.
    fn generation_shown(&self) -> bool {
        self.content_seen()
            || self.released
            || self.tally.progress_events > 0
            || self.tally.finish.is_some()
    }

    /// Bytes of the stream reached the caller: content, or the hold handed
    /// on at its cap. A failure after that is an interruption.
    fn delivered(&self) -> bool {
        self.content_seen() || self.released
    }

    /// The stream carries an answer to release: content, or a finish that
    /// makes a message without content an answer (cut by the token limit).
    fn answered(&self) -> bool {
        self.content_seen() || (self.message_complete() && self.tally.empty_verdict().is_none())
    }

    /// The finish arrived, and the framing around the events is closed
    /// (the JSON array's `]`; an event stream has nothing to close). Of
    /// several choices, one that first showed up after the others finished
    /// is still being written: no whole message (Gemini has no end marker
    /// to say so at); nor is one whose asked choice never showed up before
    /// a stream that has an end marker ended without it.
    fn message_complete(&self) -> bool {
        self.tally.finish.is_some()
            && self.framing.closed()
            && !self.decoder.choice_unfinished()
            && !self.decoder.asked_choice_missing()
    }

    /// Scans one data frame; returns why the stream must stop, if it must.
    /// When the provider's own error event stops it, where that event
    /// begins in the frame is left in `error_at`.
    fn feed(&mut self, data: &[u8], now: Instant) -> Option<Cause> {
        self.chunks += 1;
        self.bytes += data.len() as u64;
        if !data.is_empty() {
            self.first_byte.get_or_insert(now);
        }
        if let Some(opening) = &mut self.opening_unchecked {
            match opens_like_event_stream(opening, data) {
                Some(true) => self.opening_unchecked = None,
                Some(false) => return Some(Cause::NotAStream),
                None => {}
            }
        }
        let Track {
            framing,
            decoder,
            tally,
            progress,
            bytes,
            ..
        } = self;
        let content_before = tally.content_events;
        let read_before = tally.first_read.is_some();
        let mut error_at = None;
        let mut end_at = None;
        let mut marker_at = None;
        let mut on_item = |item: Item<'_>| {
            let (start, end) = match item {
                Item::Event(event) => (event.start, event.end),
                Item::Comment(_) => (0, 0),
                // No event, but what it turns out to be (a raw error body)
                // is cut from where it began.
                Item::Stray { start, .. } => (start, 0),
            };
            if !judge(tally, decoder, item, now) {
                return;
            }
            // Only `Signal::Error` stops with `InStream`, and nothing had
            // stopped before this item.
            if matches!(tally.stop, Some(Cause::InStream(_))) {
                error_at = Some(start);
            } else if decoder.ended() {
                end_at = Some(if decoder.ends_before() { start } else { end });
                marker_at = decoder.ended_by_marker().then_some(start);
            }
        };
        let scanned = match framing {
            Framing::Sse(scanner) => scanner.feed(data, &mut on_item).map_err(Cause::Scan),
            // Each element is one event of the protocol.
            Framing::JsonArray(splitter) => splitter
                .feed_located(data, |element, start, end| {
                    let event = Event {
                        name: b"",
                        data: element,
                        start,
                        end,
                    };
                    on_item(Item::Event(event))
                })
                .map_err(Cause::Array),
        };
        if let Some(progress) = progress {
            // Keep-alives are no answer's bytes: until the stream says
            // something, an attempt's bound outside reads it as silent
            // (route-shaped), as the guard's own first-byte bound does.
            // The bytes before count once it does.
            match (read_before, tally.first_read.is_some()) {
                (true, _) => progress.add_bytes(data.len() as u64),
                (false, true) => progress.add_bytes(*bytes),
                (false, false) => {}
            }
            progress.add_content_events(tally.content_events - content_before);
        }
        if let Err(cause) = scanned {
            tally.stop.get_or_insert(cause);
        }
        // The end marker of a stream that ends badly (a filter after
        // content, a choice cut short, no finish at all) is not handed on:
        // an SDK stops reading at `[DONE]` and would never read the
        // verdict that follows it. Without the marker it reads on, and
        // meets the error.
        if let Some(at) = marker_at
            && (self.tally.stop.is_some() || self.end_verdict().is_some())
        {
            end_at = Some(at);
        }
        if let Some(at) = error_at {
            self.withheld += (data.len() - at) as u64;
            self.error_at = Some(at);
        }
        if let Some(at) = end_at {
            self.withheld += (data.len() - at) as u64;
            self.end_at = Some(at);
        }
        self.tally.stop.take()
    }

    /// When the timer must wake: the next bound, or the hold's release.
    fn wake(&self) -> Instant {
        let (at, _) = self.deadline();
        self.release_at().map_or(at, |release| release.min(at))
    }

    /// The next instant a bound expires, and which bound it is. Only
    /// content and progress move the idle bound; keep-alives do not, nor
    /// do they meet the first-byte bound ([`Tally::first_read`]).
    fn deadline(&self) -> (Instant, Bound) {
        let config = &self.config;
        let (at, bound) = match (self.tally.first_read, self.tally.first_content) {
            (None, _) => (
                self.started + config.first_byte.min(config.first_content),
                Bound::FirstByte,
            ),
            (Some(_), None) => {
                let first_content = self.started + config.first_content;
                match self.tally.last_thinking {
                    // A model still thinking is not cut at the first-content
                    // bound (cut, it would be asked again and think, and be
                    // billed, as long again): it has the idle bound between
                    // its thoughts instead, as it will between its answer's
                    // events. A role delta or a block start alone does not
                    // do this: "headers and then nothing" stays a timeout.
                    Some(at) if at + config.idle > first_content => (at + config.idle, Bound::Idle),
                    _ => (first_content, Bound::FirstContent),
                }
            }
            (Some(_), Some(_)) => (self.tally.last_activity + config.idle, Bound::Idle),
        };
        let (at, bound) = match self.tally.empty_finish_at {
            Some(finished) if finished + EMPTY_FINISH_WAIT < at => {
                (finished + EMPTY_FINISH_WAIT, Bound::AfterEmptyFinish)
            }
            _ => (at, bound),
        };
        match config.max_duration {
            Some(max) if self.started + max < at => (self.started + max, Bound::MaxDuration),
            _ => (at, bound),
        }
    }

    /// The failure the finish amounts to once content was delivered, if the
    /// finish is a refusal, a filter, a malformed call or the provider's
    /// abort.
    fn finish_verdict(&self) -> Option<Failure> {
        if !self.content_seen() {
            return None;
        }
        let finish = self.tally.finish.as_ref()?;
        let verdict = finish.kind.failure()?.with_provider_code(&*finish.reason);
        (!(self.tally.deliver_policy && verdict.class() == Class::Policy)).then_some(verdict)
    }

    /// A clean EOF: `None` (and reported) when the finish marker came, or
    /// EOF is the finish; otherwise why the stream ends badly.
    ///
    /// An event EOF ended instead of a blank line counts where the
    /// provider's SDK reads it ([`crate::sse::at_end_of_stream`]: Gemini's);
    /// elsewhere only an error it holds counts, as why the stream ended.
    fn end_of_stream(&mut self, now: Instant) -> Option<Cause> {
        if let Framing::Sse(scanner) = &mut self.framing {
            let Track { tally, decoder, .. } = self;
            // A scan error here (a cap) leaves the stream as it stood.
            let provider = decoder.provider();
            let cut_line = scanner.mid_line();
            if let Ok(Some(event)) = scanner.end(provider, |item| {
                judge(tally, decoder, item, now);
            }) && tally.stop.is_none()
                && !decoder.ended()
            {
                tally.apply(decoder.undispatched(event), now);
            }
            // Google's reader takes a last line no line end closed as an
            // event; one that reads as no JSON was cut by the end (a
            // connection closed mid-event, as a reset mid-event is), not
            // sent broken: the stream ends where it stood, a cut.
            if cut_line && matches!(tally.stop, Some(Cause::Undecodable(_))) {
                tally.stop = None;
            }
            if let Some(cause) = self.tally.stop.take() {
                return Some(cause);
            }
        }
        if let Some(cause) = self.end_verdict() {
            return Some(cause);
        }
        self.report(None, ClosedBy::Them, now, self.decoder.usage());
        None
    }

    /// What follows a frame about to be handed on: `stop`, the failure it
    /// carries, closes the body next; a frame that ended the protocol has
    /// the stream's end judged at once, and a clean end sets `ended`. A
    /// reader that stops at the end marker and drops the body (the
    /// OpenAI SDKs stop at `[DONE]`; async-openai drops the body there)
    /// then finds it ended (`is_end_stream`) on that frame, the answer
    /// reported and a breaker above counting it a success, where judging
    /// the end on the next poll left a body dropped half-read.
    /// `now` is when the frame was read.
    fn after_frame(&mut self, stop: Option<Cause>, ended: &mut bool, now: Instant) {
        self.pending = match stop {
            // A bound that passed on the very frame that ended the
            // protocol came too late to matter: the answer is whole (and
            // `close` would have said so a poll later).
            None | Some(Cause::Timeout(_)) if self.protocol_ended() => {
                let cause = self.end_of_stream(now);
                *ended = cause.is_none();
                cause
            }
            stop => stop,
        };
    }

    /// Why the stream, ended where it stands, fails, if it does: the
    /// finish it has without one of its own is set first (a streamed
    /// refusal's; on plain HTTP, the end itself after content).
    fn end_verdict(&mut self) -> Option<Cause> {
        if self.tally.finish.is_none()
            && let Some(reason) = self.decoder.implied_finish()
        {
            // A streamed refusal that ends without a reason is still a
            // refusal, not an empty or cut answer to retry.
            self.tally.finish(reason);
            if !self.content_seen() && self.tally.empty_verdict().is_some() {
                return Some(Cause::FinishedEmpty);
            }
        }
        if self.tally.finish.is_none()
            && self.decoder.provider().eof_finishes()
            && self.content_seen()
        {
            self.tally.finish(Reason {
                kind: FinishKind::Complete,
                reason: "eof".into(),
            });
        }
        if !(self.message_complete() && self.answered()) {
            return Some(Cause::Eof);
        }
        self.finish_verdict()
            .map(|verdict| Cause::PolicyFinish(Box::new(verdict)))
    }

    /// Ends the live body on `cause`: a failure, unless the message was
    /// already complete and the cause is only the connection going away
    /// (or going quiet) after it.
    fn close(&mut self, cause: Cause) -> Option<Result<Frame<Bytes>, BoxError>> {
        let now = Instant::now();
        // After a finish that makes an answer: a message that finished
        // empty, its usage still to come, is no answer the connection
        // may end cleanly.
        let after_finish = matches!(cause, Cause::Transport(_) | Cause::Timeout(_))
            && self.message_complete()
            && self.answered();
        let verdict = after_finish.then(|| self.finish_verdict()).flatten();
        match cause {
            _ if let Some(verdict) = verdict => Some(Err(Box::new(
                self.fail(Cause::PolicyFinish(Box::new(verdict)), now),
            ))),
            Cause::Transport(_) if after_finish => {
                self.report(None, ClosedBy::Them, now, self.decoder.usage());
                None
            }
            Cause::Timeout(_) if after_finish => {
                self.report(None, ClosedBy::Us, now, self.decoder.usage());
                None
            }
            cause => Some(Err(Box::new(self.fail(cause, now)))),
        }
    }

    /// The failure `cause` amounts to, with complete evidence, and the
    /// report written.
    fn fail(&mut self, cause: Cause, now: Instant) -> Failure {
        // Taken before the empty finish below stands in for the cause: the
        // wait after it is still the bound that ended the stream.
        if let Cause::Timeout(bound) = cause {
            self.bound = Some(bound);
        }
        // A message that finished empty is that, whatever ended the wait
        // after its finish (the wait's bound, the end, the connection, a
        // broken or unreadable event, a transient error event): a filter
        // stays a filter, never a failure to send again. Only the
        // provider's own policy or model verdict says more.
        let cause = match cause {
            Cause::InStream(failure)
                if matches!(failure.class(), Class::Policy | Class::ModelFixable) =>
            {
                Cause::InStream(failure)
            }
            _ if self.tally.empty_finish_at.is_some() && !self.content_seen() => {
                Cause::FinishedEmpty
            }
            cause => cause,
        };
        let content = self.delivered();
        let generation_shown = self.generation_shown();
        let underlying = underlying_code(&cause);
        // The record names no cause for the caller's own bound (a breaker
        // would count it against the route), but the interruption metric
        // still says what cut the stream: the bound, `timeout`.
        #[cfg(feature = "metrics")]
        let counted_cause = underlying
            .or(matches!(cause, Cause::Timeout(Bound::MaxDuration)).then_some(Code::Timeout));
        // A bound that passed with nothing read but keep-alives is the
        // silence of a route that does not generate: its evidence is that
        // of a stream that sent nothing, so the ladder fails over as it
        // would there (`Failure::is_route_shaped`). The report keeps what
        // arrived.
        let silent =
            matches!(cause, Cause::Timeout(_)) && !content && self.tally.first_read.is_none();
        let config = &self.config;
        let (failure, closed_by) = match cause {
            // Unless the provider's failure counted usage of its own.
            Cause::InStream(failure) if !generation_shown && failure.usage().is_none() => {
                ((*failure).with_nothing_generated(), ClosedBy::Them)
            }
            Cause::InStream(failure) if !content => (*failure, ClosedBy::Them),
            // A policy or model verdict stays what it is after content.
            Cause::InStream(failure)
                if matches!(failure.class(), Class::Policy | Class::ModelFixable) =>
            {
                (*failure, ClosedBy::Them)
            }
            Cause::InStream(failure) => (Failure::interrupted_by(&failure), ClosedBy::Them),
            Cause::FinishedEmpty => (
                self.tally
                    .empty_verdict()
                    .unwrap_or_else(|| Failure::new(Code::EmptyResponse)),
                ClosedBy::Them,
            ),
            // A provider's abort after content is an interruption, as an
            // error event there would be; a refusal or filter stays itself.
            Cause::PolicyFinish(verdict) if verdict.class() == Class::Transient => {
                (Failure::interrupted_by(&verdict), ClosedBy::Them)
            }
            Cause::PolicyFinish(verdict) => (*verdict, ClosedBy::Them),
            Cause::Eof if content => (Failure::new(Code::Truncated), ClosedBy::Them),
            Cause::Eof => (Failure::new(Code::EmptyResponse), ClosedBy::Them),
            // A body error that is already classified (a layer below knew
            // more) keeps its verdict before content.
            Cause::Transport(error) => match Failure::find(&*error) {
                Some(failure) if !content => (failure.clone(), ClosedBy::Them),
                Some(failure) => (Failure::interrupted_by(failure), ClosedBy::Them),
                None => (
                    Failure::new(after(content, Code::Transport)).with_message(&error.to_string()),
                    ClosedBy::Them,
                ),
            },
            Cause::Timeout(bound) => {
                let (code, limit) = match bound {
                    // Armed at the nearer of the two bounds (`deadline`).
                    Bound::FirstByte => (
                        Code::FirstByteTimeout,
                        config.first_byte.min(config.first_content),
                    ),
                    // Before content, unless the hold was handed on.
                    Bound::FirstContent => (after(content, Code::Timeout), config.first_content),
                    // Before content, a model that stopped thinking.
                    Bound::Idle => (after(content, Code::Timeout), config.idle),
                    Bound::MaxDuration => (
                        after(content, Code::Timeout),
                        config.max_duration.unwrap_or_default(),
                    ),
                    // Read as the empty finish it waited after (above).
                    Bound::AfterEmptyFinish => (after(content, Code::Timeout), EMPTY_FINISH_WAIT),
                };
                let mut message = format!("{} bound of {limit:?} passed", bound.as_str());
                if silent && self.bytes > 0 {
                    message.push_str("; only keep-alives arrived");
                }
                (Failure::new(code).with_message(&message), ClosedBy::Us)
            }
            // The stable name of what broke leads the message.
            Cause::Scan(error) => (
                Failure::new(after(content, framing_code(&cause)))
                    .with_message(&format!("{}: {error}", error.as_str())),
                ClosedBy::Us,
            ),
            Cause::Array(error) => (
                Failure::new(after(content, framing_code(&cause)))
                    .with_message(&format!("{}: {error}", error.as_str())),
                ClosedBy::Us,
            ),
            Cause::Undecodable(why) => (
                Failure::new(after(content, Code::ProtocolViolation))
                    .with_message(&format!("sse_undecodable_event: {why}")),
                ClosedBy::Us,
            ),
            Cause::NotAStream => (
                Failure::new(Code::ProtocolViolation).with_message(
                    "sse_not_a_stream: a stream was asked for and the body is not an event stream",
                ),
                ClosedBy::Us,
            ),
            Cause::HoldTooLarge => (
                Failure::new(Code::ProtocolViolation).with_message(&format!(
                    "sse_hold_too_large: more than {} bytes before the first content event",
                    config.max_held
                )),
                ClosedBy::Us,
            ),
        };
        let mut evidence = Evidence::default();
        evidence.status = Some(self.status);
        if !silent {
            evidence.bytes = self.bytes;
            evidence.chunks = self.chunks;
            evidence.events = self.tally.events;
            evidence.time_to_first_byte = self.first_byte.map(|at| at - self.started);
        }
        evidence.content_events = self.tally.content_events;
        evidence.elapsed = Some(now - self.started);
        evidence.finish_seen = self.tally.finish.is_some();
        evidence.content_seen = self.content_seen();
        evidence.closed_by = Some(closed_by);
        let mut failure = failure.with_evidence(evidence);
        // Only a finished message's usage is its whole count (Anthropic
        // reports the output at the end), unless the provider's own
        // terminal failure counted it (kept on the failure). A billed
        // stream cut before its finish keeps what it had counted as a
        // part: Anthropic's `message_start` bills the input (its cache
        // reads with it) before the first delta, and dropped, the receipt
        // would count nothing of it.
        // The provider's own terminal failure counted the usage: its whole
        // count, finished or not.
        let counted = failure.usage().is_some();
        if failure.usage().is_none()
            && let Some(usage) = self.decoder.usage()
        {
            if self.tally.finish.is_some() {
                failure = failure.with_usage(usage);
            } else if failure.billed() {
                failure = failure.with_partial_usage(usage);
            }
        }
        if content {
            let mut delivered = Interrupted::default();
            delivered.content_events = self.tally.content_events;
            delivered.bytes = self.bytes - self.withheld;
            delivered.delivered_text = self.tally.text.take();
            delivered.text_capped = self.tally.text_capped;
            delivered.cause = underlying;
            delivered.tool_call_events = self.tally.tool_call_events;
            failure = failure.with_interrupted(delivered);
        }
        #[cfg(feature = "metrics")]
        {
            self.cause = counted_cause;
        }
        // Once delivered, the attempt is an answer in the receipt, its
        // usage what the stream reported (marked not whole when it did not
        // finish); before, the receipt's attempt is this failure's, its
        // whole count or its part.
        let (usage, whole) = if self.delivered() {
            let whole = counted || self.tally.finish.is_some();
            (self.decoder.usage(), whole)
        } else {
            let whole = failure.usage().is_some();
            (failure.usage().or(failure.partial_usage()), whole)
        };
        self.report_counted(Some(failure.code()), closed_by, now, usage, whole);
        failure
    }

    /// Reports how the stream ended, with `usage` as the receipt counts it
    /// (the metrics and the spans read the report): what the stream
    /// reported once it was delivered (the receipt's answer, marked not
    /// whole when it did not finish); before, the failure's own: a
    /// finished message's, the provider's terminal failure's, or the part
    /// a billed stream had counted when it failed (not whole: the report
    /// has no finish), never that of a failure not billed.
    fn report(
        &mut self,
        code: Option<Code>,
        closed_by: ClosedBy,
        now: Instant,
        usage: Option<seawall_core::Usage>,
    ) {
        let whole = self.tally.finish.is_some();
        self.report_counted(code, closed_by, now, usage, whole);
    }

    /// [`report`](Self::report), saying whether `usage` is the provider's
    /// whole count: a finished message's, or the one its own terminal
    /// failure (a Responses `response.failed`) counted, finished or not.
    fn report_counted(
        &mut self,
        code: Option<Code>,
        closed_by: ClosedBy,
        now: Instant,
        usage: Option<seawall_core::Usage>,
        whole: bool,
    ) {
        if self.reported {
            return;
        }
        self.reported = true;
        let report = StreamReport {
            provider: self.decoder.provider(),
            status: self.status,
            code,
            finish: self.tally.finish.take(),
            content_events: self.tally.content_events,
            events: self.tally.events,
            keepalives: self.tally.keepalives,
            bytes: self.bytes,
            chunks: self.chunks,
            time_to_first_byte: self.first_byte.map(|at| at - self.started),
            time_to_first_content: self.tally.first_content.map(|at| at - self.started),
            elapsed: now - self.started,
            closed_by,
            usage_whole: whole && usage.is_some(),
            usage,
            bound: self.bound,
        };
        match &self.spans {
            Some(spans) => {
                let released = report.code.is_none() || report.content_events > 0 || self.released;
                spans.record_end(report.finish.as_ref(), report.usage, report.code, released);
                // Beside `error.type`, which says only `timeout` or
                // `stream_interrupted`, on the spans that get it.
                if let Some(bound) = report.bound {
                    spans.attempt().record(BOUND_FIELD, bound.as_str());
                    if released {
                        spans.operation().record(BOUND_FIELD, bound.as_str());
                    }
                }
                spans.attempt().in_scope(|| trace(&report));
            }
            None => trace(&report),
        }
        #[cfg(feature = "metrics")]
        record(
            &report,
            &self.route,
            self.cause,
            self.delivered(),
            self.bills,
        );
        self.handle.set(report);
    }

    /// Bytes held in buffers: the scanner's (or splitter's) and the
    /// delivered text.
    fn buffered(&self) -> usize {
        self.framing.buffered() + self.tally.text.as_ref().map_or(0, String::capacity)
    }
}

/// How the events of a stream are framed.
#[derive(Debug)]
enum Framing {
    /// An event stream.
    Sse(Scanner),
    /// Gemini's JSON array, an element per event.
    JsonArray(Splitter),
}

impl Framing {
    /// Whether the framing is closed: always for an event stream, after
    /// the `]` for a JSON array.
    fn closed(&self) -> bool {
        match self {
            Framing::Sse(_) => true,
            Framing::JsonArray(splitter) => splitter.is_closed(),
        }
    }

    fn buffered(&self) -> usize {
        match self {
            Framing::Sse(scanner) => scanner.buffered(),
            Framing::JsonArray(splitter) => splitter.buffered(),
        }
    }
}

impl Drop for Track {
    /// A stream nobody reads to its end was closed by us. What it had
    /// already come to is its end, read or not: a stop found in a frame
    /// handed on (the provider's error event after it), a finish that is
    /// a refusal or filter. Otherwise it finished if the message was
    /// complete, else it was `cancelled` — never a provider failure —
    /// or, delivered and past the operation's deadline, cut by that
    /// deadline (`deadline_exceeded`).
    fn drop(&mut self) {
        if self.reported {
            return;
        }
        if let Some(cause) = self.pending.take() {
            self.close(cause);
            return;
        }
        let now = Instant::now();
        // Dropped while an empty finish waited for what follows it: the
        // empty (or filtered) answer it is, not a success.
        if self.tally.empty_finish_at.is_some() && !self.content_seen() {
            self.fail(Cause::FinishedEmpty, now);
        } else if !self.message_complete() {
            // Past the operation's deadline, a delivered stream was cut by
            // it: the caller read `deadline_exceeded` mid-answer from the
            // deadline layer around this body, and the broken answer is
            // an interruption (counted, the span's error), as the guard's
            // own `max_duration` cut is. A caller that stops reading for
            // its own reasons after the deadline passed cannot be told
            // from one the deadline cut, and need not be: the answer could
            // no longer finish, so it is broken either way. Before the
            // deadline, or before anything was handed on (the ladder and
            // the deadline layer record that one), it is the caller's
            // `cancelled`.
            let code = if self.delivered() && self.operation_by.is_some_and(|at| now >= at) {
                Code::DeadlineExceeded
            } else {
                Code::Cancelled
            };
            self.report(Some(code), ClosedBy::Us, now, self.decoder.usage());
        } else if let Some(verdict) = self.finish_verdict() {
            self.fail(Cause::PolicyFinish(Box::new(verdict)), now);
        } else {
            self.report(None, ClosedBy::Us, now, self.decoder.usage());
        }
    }
}

/// Judges one item of the stream into `tally`; false when it no longer
/// counts (after a stop or the protocol's end: the same stream gives the
/// same counts however it is framed).
fn judge(tally: &mut Tally, decoder: &mut Decoder, item: Item<'_>, now: Instant) -> bool {
    if tally.stop.is_some() || decoder.ended() {
        return false;
    }
    if matches!(item, Item::Event(_)) {
        tally.events += 1;
    }
    let signal = decoder.decode(item);
    // The end marker with a choice cut short (`Decoder::choice_unfinished`):
    // as a stream that ended without its finish (`truncated` after
    // content), with no finish made up for it: none came, and a
    // continuation can carry the answer on.
    if matches!(signal, Signal::Done) && decoder.choice_unfinished() {
        tally.stop = Some(Cause::Eof);
        return true;
    }
    tally.apply(signal, now);
    wait_after_empty_finish(tally, decoder, now);
    // So a `[DONE]` where the protocol has none of its own.
    if decoder.ended() && decoder.choice_unfinished() && tally.stop.is_none() {
        tally.stop = Some(Cause::Eof);
    }
    true
}

/// A message that finished without content stops the stream only once
/// nothing more can follow, or [`EMPTY_FINISH_WAIT`] passed:
///
/// - on OpenAI's wire, its usage (`stream_options.include_usage`: a chunk
///   after the finish) or `[DONE]`: the failure then carries what the
///   empty answer was billed;
/// - on Gemini's, the end of the stream: Gemini's finish is no end marker
///   (content after it takes it back, `Tally::apply`), and a proxy that
///   opens its stream with an empty `STOP` chunk sends the answer after.
///
/// Content after the finish (another choice's, or Gemini's) makes it an
/// answer after all.
fn wait_after_empty_finish(tally: &mut Tally, decoder: &Decoder, now: Instant) {
    if tally.content_events > 0 {
        tally.empty_finish_at = None;
        return;
    }
    let waiting = !decoder.ended()
        && match decoder.provider() {
            Provider::OpenAi => decoder.usage().is_none(),
            Provider::Gemini => true,
            _ => false,
        };
    match tally.stop {
        Some(Cause::FinishedEmpty) if waiting => {
            tally.stop = None;
            tally.empty_finish_at.get_or_insert(now);
        }
        None if tally.empty_finish_at.is_some() && !waiting => {
            tally.stop = Some(Cause::FinishedEmpty);
        }
        _ => {}
    }
}

/// After content, transport trouble is an interruption of what the caller
/// is reading.
fn after(content: bool, code: Code) -> Code {
    if content {
        Code::StreamInterrupted
    } else {
        code
    }
}

/// What a cause amounts to in its own terms, for the interruption record.
fn underlying_code(cause: &Cause) -> Option<Code> {
    match cause {
        Cause::InStream(failure) => Some(failure.code()),
        Cause::Transport(error) => {
            Some(Failure::find(&**error).map_or(Code::Transport, Failure::code))
        }
        Cause::Timeout(Bound::Idle) => Some(Code::IdleTimeout),
        // The caller's own bound on the whole stream, as a deadline is:
        // a healthy route with long answers passes it, so it names no
        // cause a breaker would count against the route.
        Cause::Timeout(Bound::MaxDuration) => None,
        Cause::Timeout(_) => Some(Code::Timeout),
        Cause::Scan(_) | Cause::Array(_) => Some(framing_code(cause)),
        Cause::HoldTooLarge | Cause::Undecodable(_) | Cause::NotAStream => {
            Some(Code::ProtocolViolation)
        }
        Cause::PolicyFinish(verdict) if verdict.class() == Class::Transient => Some(verdict.code()),
        Cause::FinishedEmpty | Cause::Eof | Cause::PolicyFinish(_) => None,
    }
}

/// What the framing's refusal is: a `data:` line, event or element past
/// our own cap is `answer_too_large` (the answer is well-formed, only
/// larger than we were set to hold: asking again brings it again); a line
/// past it that is no data (an endless comment, a line that is no field)
/// is no answer's part, and that and anything else a broken body,
/// `protocol_violation`.
fn framing_code(cause: &Cause) -> Code {
    match cause {
        Cause::Scan(ScanError::LineTooLong { .. } | ScanError::EventTooLarge { .. })
        | Cause::Array(ArrayError::ElementTooLarge { .. }) => Code::AnswerTooLarge,
        _ => Code::ProtocolViolation,
    }
}

/// What a held frame counts against the hold's cap: its bytes, and at
/// least what holding it costs (its place in the queue), so that a flood
/// of tiny frames (a byte of comment each) is bounded by the cap as bytes
/// are, not only by the first-content bound.
fn held_cost(frame: &Frame<Bytes>) -> usize {
    const PER_FRAME: usize = 64;
    frame.data_ref().map_or(0, Bytes::len).max(PER_FRAME)
}

/// The frames held back until the first content event, in order. Content
/// usually comes in the first frame, so that one is kept inline and only a
/// longer hold allocates. Kept as its bytes: a `Frame` (its trailers'
/// variant) is three times their size, in a box every stream copies.
#[derive(Debug, Default)]
struct Held {
    first: Option<Bytes>,
    rest: VecDeque<Frame<Bytes>>,
}

impl Held {
    fn push_back(&mut self, frame: Frame<Bytes>) {
        if self.first.is_none() && self.rest.is_empty() {
            match frame.into_data() {
                Ok(data) => self.first = Some(data),
                Err(frame) => self.rest.push_back(frame),
            }
        } else {
            self.rest.push_back(frame);
        }
    }

    fn pop_front(&mut self) -> Option<Frame<Bytes>> {
        match self.first.take() {
            Some(data) => Some(Frame::data(data)),
            None => self.rest.pop_front(),
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

/// One step of reading the body.
enum Step {
    /// A frame, why the stream must stop after it, if it must, and when
    /// it was read: what the frame decides is judged at that instant (a
    /// clock read costs as much as judging a small event).
    Frame(Frame<Bytes>, Option<Cause>, Instant),
    /// Clean EOF.
    End,
    Fail(Cause),
    /// The hold is due to be handed on ([`Track::release_at`]).
    Release,
}

pin_project! {
    /// The body, its timer and its track, boxed once per stream so the
    /// response future can hand it to the response body.
    pub(crate) struct Stream<B> {
        #[pin]
        body: B,
        #[pin]
        timer: Sleep,
        armed: Instant,
        held: Held,
        held_bytes: usize,
        ended: bool,
        track: Track,
    }
}

impl<B> Stream<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    /// The stream of `body`, its track made from `setup` in place: built
    /// apart and moved in, the track (most of the box) was copied twice.
    pub(crate) fn new(
        body: B,
        setup: Setup,
        status: u16,
        handle: StreamReportHandle,
    ) -> Pin<Box<Self>> {
        // The first bound, as `Track::deadline` reads it before anything
        // was read.
        let config = &setup.config;
        let first = setup.started + config.first_byte.min(config.first_content);
        let at = match config.max_duration {
            Some(max) if setup.started + max < first => setup.started + max,
            _ => first,
        };
        let stream = Box::pin(Stream {
            body,
            timer: sleep_until(at),
            armed: at,
            held: Held::default(),
            held_bytes: 0,
            ended: false,
            track: Track::new(setup, status, handle),
        });
        debug_assert!(stream.track.deadline().0 == at);
        stream
    }

    fn poll_step(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Step> {
        let mut this = self.project();
        match this.body.poll_frame(cx) {
            Poll::Ready(Some(Ok(mut frame))) => {
                let now = Instant::now();
                this.track.read_at = Some(now);
                let mut stop = match frame.data_ref() {
                    Some(data) => this.track.feed(data, now),
                    None => None,
                };
                if let Some(at) = this.track.error_at.take() {
                    // Nothing before the error event in this frame.
                    if at == 0
                        && let Some(cause) = stop
                    {
                        return Poll::Ready(Step::Fail(cause));
                    }
                    if let Some(data) = frame.data_mut() {
                        data.truncate(at);
                    }
                }
                if let Some(at) = this.track.end_at.take()
                    && let Some(data) = frame.data_mut()
                {
                    data.truncate(at);
                }
                // A body that is always ready never lets the timer fire:
                // check the bound here too.
                let (at, bound) = this.track.deadline();
                if stop.is_none() && now >= at {
                    stop = Some(Cause::Timeout(bound));
                }
                return Poll::Ready(Step::Frame(frame, stop, now));
            }
            Poll::Ready(Some(Err(error))) => {
                return Poll::Ready(Step::Fail(Cause::Transport(error.into())));
            }
            Poll::Ready(None) => return Poll::Ready(Step::End),
            Poll::Pending => {}
        }
        // The timer is moved only to an earlier bound. Content moves the
        // idle bound later on every event; the timer then fires early, at
        // the bound it was armed for, and is armed again for the later one
        // (one reset per idle period, not one per event: a reset takes the
        // timer wheel's lock).
        let wake = this.track.wake();
        if wake < *this.armed {
            this.timer.as_mut().reset(wake);
            *this.armed = wake;
        }
        loop {
            ready!(this.timer.as_mut().poll(cx));
            if this.track.release_due(Instant::now()) {
                return Poll::Ready(Step::Release);
            }
            let (at, bound) = this.track.deadline();
            if at <= *this.armed {
                return Poll::Ready(Step::Fail(Cause::Timeout(bound)));
            }
            let wake = this.track.wake();
            this.timer.as_mut().reset(wake);
            *this.armed = wake;
        }
    }

    /// Reads until the first content event (`Ok`) or a failure before it.
    pub(crate) fn poll_hold(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Failure>> {
        // Nothing is held of a stream handed on from its start (a
        // background response's).
        if self.track.released {
            return Poll::Ready(Ok(()));
        }
        loop {
            let step = ready!(self.as_mut().poll_step(cx));
            let this = self.as_mut().project();
            match step {
                Step::Frame(frame, stop, now) => {
                    // An empty data frame holds nothing to hand on.
                    if !frame.data_ref().is_some_and(Bytes::is_empty) {
                        *this.held_bytes += held_cost(&frame);
                        this.held.push_back(frame);
                    }
                    if this.track.answered() {
                        this.track.after_frame(stop, this.ended, now);
                        return Poll::Ready(Ok(()));
                    }
                    if let Some(cause) = stop {
                        return Poll::Ready(Err(this.track.fail(cause, now)));
                    }
                    // The end marker without content: as a clean end of
                    // the body would be.
                    if this.track.protocol_ended() {
                        let Some(cause) = this.track.end_of_stream(now) else {
                            *this.ended = true;
                            return Poll::Ready(Ok(()));
                        };
                        return Poll::Ready(Err(this.track.fail(cause, now)));
                    }
                    // After an empty finish, more than the hold takes is
                    // no answer coming: the empty finish it is.
                    if *this.held_bytes > this.track.config.max_held
                        && this.track.tally.empty_finish_at.is_some()
                    {
                        return Poll::Ready(Err(this.track.fail(Cause::FinishedEmpty, now)));
                    }
                    if *this.held_bytes > this.track.config.max_held {
                        // A model that works long before it writes (a
                        // reasoning stream of tens of thousands of thinking
                        // deltas) is handed on rather than failed: failing
                        // it would lose the work, and the same request
                        // would fill the hold again. Nothing is replayed
                        // from here on. Only thinking shows that work: a
                        // role delta or `message_start` and then megabytes
                        // of keep-alives is a server that is not working,
                        // and handed on it made the later timeout an
                        // interruption never retried.
                        if this.track.tally.last_thinking.is_none() {
                            return Poll::Ready(Err(this.track.fail(Cause::HoldTooLarge, now)));
                        }
                        this.track.released = true;
                        return Poll::Ready(Ok(()));
                    }
                    if this.track.release_due(now) {
                        this.track.release_before_bound();
                        return Poll::Ready(Ok(()));
                    }
                }
                // The caller stops waiting for its answer to begin: what
                // the provider sent so far (thinking, a role delta) is
                // handed on, as the caller would read it straight from the
                // provider, rather than the wait ending in a timeout with
                // the work lost. Nothing is replayed from here on.
                Step::Release => {
                    this.track.release_before_bound();
                    return Poll::Ready(Ok(()));
                }
                Step::End => {
                    // Without content a clean end is never a success (but
                    // for a refusal delivered as the answer, its reason
                    // implied by the end); the stream's end still decides
                    // which failure it is.
                    // `None`: the end made the message an answer (and is
                    // reported).
                    let now = Instant::now();
                    let Some(cause) = this.track.end_of_stream(now) else {
                        *this.ended = true;
                        return Poll::Ready(Ok(()));
                    };
                    return Poll::Ready(Err(this.track.fail(cause, now)));
                }
                Step::Fail(cause) => {
                    return Poll::Ready(Err(this.track.fail(cause, Instant::now())));
                }
            }
        }
    }

    /// Replays the held frames, then reads live.
    pub(crate) fn poll_live(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.as_mut().project();
        // Back from the consumer: the time it held the stream since the
        // last frame was handed on is not the upstream's silence. Once the
        // stream ended no bound is asked again: no clock read for it.
        if let Some(handed) = this.track.handed_at.take()
            && !*this.ended
        {
            this.track.credit_consumer(handed);
        }
        if let Some(frame) = this.held.pop_front() {
            *this.held_bytes -= held_cost(&frame);
            this.track.handed_at = this.track.read_at;
            return Poll::Ready(Some(Ok(frame)));
        }
        if *this.ended {
            return Poll::Ready(None);
        }
        if let Some(cause) = this.track.pending.take() {
            *this.ended = true;
            return Poll::Ready(this.track.close(cause));
        }
        // The protocol's end came: the body is not read past it, and the
        // stream ends as at a clean end of the body.
        if this.track.protocol_ended() {
            *this.ended = true;
            return Poll::Ready(match this.track.end_of_stream(Instant::now()) {
                None => None,
                Some(cause) => this.track.close(cause),
            });
        }
        let step = ready!(self.as_mut().poll_step(cx));
        let this = self.project();
        match step {
            Step::Frame(frame, stop, now) => {
                this.track.after_frame(stop, this.ended, now);
                this.track.handed_at = this.track.read_at;
                Poll::Ready(Some(Ok(frame)))
            }
            Step::End => {
                *this.ended = true;
                match this.track.end_of_stream(Instant::now()) {
                    None => Poll::Ready(None),
                    Some(cause) => Poll::Ready(this.track.close(cause)),
                }
            }
            Step::Fail(cause) => {
                *this.ended = true;
                Poll::Ready(this.track.close(cause))
            }
            // Only a hold is released, and a live body holds nothing: read
            // on at once.
            Step::Release => {
                this.track.released = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }

    /// True once the live body has nothing more to yield.
    pub(crate) fn is_end_stream(&self) -> bool {
        self.ended && self.held.is_empty() && self.track.pending.is_none()
    }

    /// Bytes this stream holds: frames held back, the scanner's buffers and
    /// the delivered text.
    pub(crate) fn buffered(&self) -> usize {
        self.held_bytes + self.track.buffered()
    }
}

/// The bounds of a duration setter: longer than a year is no bound, and
/// could overflow the clock.
pub(crate) const MAX_BOUND: Duration = Duration::from_secs(365 * 24 * 3600);
