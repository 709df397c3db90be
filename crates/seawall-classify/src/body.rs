//! The response body ClassifyLayer hands on.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::provider::QuotaWall;
use seawall_core::{Code, Evidence, Failure, Interrupted};
use seawall_internal::millis;
use tower::BoxError;

use crate::future::Reading;
use crate::grpc;
use crate::json_end::{Ending, JsonEnd};
use crate::transport::transport_failure;

pin_project! {
    /// The body of a response that passed [`ClassifyLayer`](crate::ClassifyLayer).
    ///
    /// Streams and unread bodies are the inner body, its frames untouched
    /// (a timeout its errors' chain names is the `timeout` failure, as on
    /// a checked body). One whose `content-length` is still on the answer
    /// (nothing decoded it) is counted as it passes: an end short of that
    /// length is a `truncated` error, bytes past it an interruption by a
    /// `protocol_violation`, never a whole answer. A checked
    /// unary body is the bytes that were read. A body that was read in part
    /// and then handed on (past the check cap, or not a JSON object) replays
    /// what was read and continues with the rest: nothing is lost. Past the
    /// cap, a body that ends before its JSON value closes ends with a
    /// `truncated` error, not as a whole answer; one whose value has
    /// closed ends as soon as the inner body goes quiet, as a checked
    /// answer does, whether or not its framing ever ends.
    pub struct ClassifiedBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B, length: Option<Length> },
        Read { data: Option<Bytes>, trailers: Option<HeaderMap> },
        Resumed { head: Option<Bytes>, rest: Pin<Box<Reading<B>>>, length: Option<Length> },
        Judged { head: Option<Bytes>, rest: Pin<Box<Reading<B>>>, passed: Passed, judge: Judge },
    }
}

/// What a body handed on before its verdict is judged by as it passes.
#[derive(Debug)]
enum Judge {
    /// A gRPC answer: its status comes in the trailers, after whole
    /// messages.
    Grpc(QuotaWall, Framing),
    /// A JSON answer past the check cap: whether its value closes, and
    /// that it stays within the ceiling (bytes).
    PastCap(JsonEnd, u64),
}

impl Judge {
    /// Whether what passed is a whole answer already: a JSON value past
    /// the cap that has closed, blanks at most after it (a gRPC answer is
    /// whole only at its trailers).
    fn whole(&self) -> bool {
        match self {
            Judge::Grpc(..) => false,
            Judge::PastCap(end, _) => end.ending() == Ending::Whole,
        }
    }

    /// The next frame of the rest, judged; never called once the body has
    /// ended (`passed.ended`).
    fn frame<E: Into<BoxError>>(
        &mut self,
        passed: &mut Passed,
        frame: Option<Result<Frame<Bytes>, E>>,
    ) -> Option<Result<Frame<Bytes>, BoxError>> {
        match self {
            Judge::Grpc(quota_wall, framing) => judge_grpc(passed, *quota_wall, framing, frame),
            Judge::PastCap(end, ceiling) => judge_past_cap(passed, end, *ceiling, frame),
        }
    }
}

/// Where a gRPC body is in its length-prefixed messages (a compression
/// flag, a 4-byte big-endian length, that many bytes), followed as the
/// bytes pass: only counted, never held, a prefix split across frames
/// kept the 4 bytes of its length at most.
#[derive(Debug, Default)]
struct Framing {
    /// The prefix's bytes seen so far (0 to 4: a fifth completes it).
    prefix_seen: usize,
    /// The length bytes of a prefix being read.
    length: [u8; 4],
    /// The bytes of the current message still to come.
    remaining: u64,
    /// The whole messages that have passed.
    messages: u64,
}

impl Framing {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.remaining > 0 {
                let taken = data
                    .len()
                    .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
                self.remaining -= taken as u64;
                data = &data[taken..];
                if self.remaining == 0 {
                    self.messages += 1;
                }
                continue;
            }
            let taken = data.len().min(5 - self.prefix_seen);
            for (at, &byte) in (self.prefix_seen..).zip(&data[..taken]) {
                // Byte 0 is the compression flag, no part of the length.
                if let Some(slot) = at.checked_sub(1) {
                    self.length[slot] = byte;
                }
            }
            self.prefix_seen += taken;
            data = &data[taken..];
            if self.prefix_seen == 5 {
                self.prefix_seen = 0;
                self.remaining = u64::from(u32::from_be_bytes(self.length));
                if self.remaining == 0 {
                    self.messages += 1;
                }
            }
        }
    }

    /// Whether every message begun has ended: trailers anywhere else cut
    /// the last one short.
    fn between_messages(&self) -> bool {
        self.prefix_seen == 0 && self.remaining == 0
    }
}

/// What a body handed on before its verdict has passed to the caller: a
/// bad end after that is an interruption, never a replay.
#[derive(Debug)]
struct Passed {
    status: u16,
    frames: u64,
    bytes: u64,
    /// The content events that reached the caller: a body's data frames,
    /// a gRPC answer's whole messages (a frame may carry several, or a
    /// part of one, and a caller reads messages).
    events: u64,
    /// Whether the answer reached the caller at its head, content before
    /// any event: an HTTP body handed on unread, its bad end an
    /// interruption whatever had passed. A gRPC answer's caller has
    /// nothing before a whole message.
    seen_at_head: bool,
    ended: bool,
}

impl Passed {
    /// What passed once `head` (`events` content events) was handed on.
    fn new(status: u16, head: Option<&Bytes>, events: u64) -> Self {
        Passed {
            status,
            frames: u64::from(head.is_some()),
            bytes: head.map_or(0, |head| head.len() as u64),
            events,
            seen_at_head: false,
            ended: false,
        }
    }

    /// What passed of an HTTP answer handed on unread, `head` first: the
    /// answer reached the caller at its head.
    fn unread(status: u16, head: Option<&Bytes>) -> Self {
        Passed {
            seen_at_head: true,
            ..Passed::new(status, head, u64::from(head.is_some()))
        }
    }

    /// Whether nothing the caller reads as content has passed: a bad end
    /// is then the answer's own verdict, no interruption.
    fn before_content(&self) -> bool {
        !self.seen_at_head && self.events == 0
    }

    /// `data` handed on, `events` content events with it.
    fn count(&mut self, data: &Bytes, events: u64) {
        self.frames += 1;
        self.bytes += data.len() as u64;
        self.events += events;
    }

    /// `failure` (a `truncated`, an `answer_too_large`: its own code
    /// after content as before) with what was passed, recorded as an
    /// interruption once content reached the caller; the body ends with
    /// it.
    fn fail(&mut self, failure: Failure, what: &'static str) -> BoxError {
        if self.before_content() {
            return self.fail_before_content(failure, what);
        }
        let cause = failure.code();
        self.record(failure, cause, what)
    }

    /// `failure`, caused by `cause`, with the interruption of the content
    /// that passed; the body ends with it.
    fn record(&mut self, failure: Failure, cause: Code, what: &'static str) -> BoxError {
        let mut delivered = Interrupted::default();
        delivered.content_events = self.events;
        delivered.bytes = self.bytes;
        delivered.cause = Some(cause);
        self.end(failure.with_interrupted(delivered), true, cause, what)
    }

    /// `failure` as the answer's own verdict, nothing having reached the
    /// caller to interrupt (a gRPC answer handed on at its headers, ended
    /// before a whole message): what was passed is its evidence, and the
    /// body ends with it.
    fn fail_before_content(&mut self, failure: Failure, what: &'static str) -> BoxError {
        let code = failure.code();
        self.end(failure, false, code, what)
    }

    /// Ends the body with `failure`, what was passed its evidence.
    fn end(
        &mut self,
        failure: Failure,
        content_seen: bool,
        cause: Code,
        what: &'static str,
    ) -> BoxError {
        self.ended = true;
        let mut evidence = Evidence::default();
        evidence.status = Some(self.status);
        evidence.bytes = self.bytes;
        evidence.chunks = self.frames;
        evidence.content_seen = content_seen;
        let failure = failure.with_evidence(evidence);
        // The fields of every classified failure's event, and what this
        // one adds: what broke the body, and how much had passed.
        tracing::warn!(
            target: "seawall::classify",
            class = failure.class().as_str(),
            code = failure.code().as_str(),
            status = failure.status(),
            action = failure.action().as_str(),
            retry_after_ms = failure.retry_after().map(millis),
            cause = cause.as_str(),
            bytes = self.bytes,
            "{what}"
        );
        Box::new(failure)
    }

    /// The interruption `cause` amounts to once content passed; before,
    /// `cause` itself.
    fn interrupted(&mut self, cause: Failure, what: &'static str) -> BoxError {
        self.cut(cause, None, what)
    }

    /// The inner body's own error: once content passed, an interruption
    /// by what the error was (a reset, a decoder's refusal); before, the
    /// fault it is (a `REFUSED_STREAM` the refusal, nothing generated, a
    /// lost connection `transport`), as the held answer's read says.
    fn broken(&mut self, error: BoxError, what: &'static str) -> BoxError {
        let cause = Failure::find(&*error)
            .cloned()
            .or_else(|| transport_failure(&*error))
            .unwrap_or_else(|| Failure::new(Code::Transport).with_message(&error.to_string()));
        self.cut(cause, Some(error), what)
    }

    /// The end `cause` makes, `error` (the inner body's) its source. The
    /// decision is here, not in each judge, so that no judge reports an
    /// interruption of content the caller never had: that reads as
    /// delivered (`content_seen` surfaces it, and gRPC's reading of a
    /// refusal or a lost connection as `UNAVAILABLE` is lost to it).
    fn cut(&mut self, cause: Failure, error: Option<BoxError>, what: &'static str) -> BoxError {
        if self.before_content() {
            let cause = match error {
                Some(error) => cause.with_cause(error),
                None => cause,
            };
            return self.fail_before_content(cause, what);
        }
        let code = cause.code();
        let mut failure = Failure::interrupted_by(&cause);
        if let Some(error) = error {
            failure = failure.with_cause(error);
        }
        self.record(failure, code, what)
    }
}

/// The `content-length` of an answer handed on unread, held to as its
/// bytes pass. Over HTTP/2 a stream reset with `NO_ERROR`, or a GOAWAY
/// with `NO_ERROR` that leaves the stream out, mid-body ends hyper's body
/// as cleanly as its last DATA frame would (h2 checks the length only at
/// the stream's end), and an answer cut in half was delivered, and
/// counted, as whole.
#[derive(Debug)]
pub(crate) struct Length {
    declared: u64,
    passed: Passed,
}

impl Length {
    /// The length `parts` declares for a body that has one: none for a
    /// status that has no body, nor beside a `transfer-encoding` (it
    /// frames the body, and HTTP/1 ignores the length then).
    pub(crate) fn of(parts: &http::response::Parts) -> Option<Length> {
        let status = parts.status.as_u16();
        if matches!(status, 204 | 205 | 304) {
            return None;
        }
        // The length first: a stream declares none, and costs one lookup.
        let declared = seawall_internal::headers::declared_length(&parts.headers)?;
        if parts.headers.contains_key(http::header::TRANSFER_ENCODING) {
            return None;
        }
        Some(Length {
            declared,
            passed: Passed::unread(status, None),
        })
    }

    /// The next frame of the body, held to the declared length.
    fn frame(
        &mut self,
        frame: Option<Result<Frame<Bytes>, BoxError>>,
    ) -> Option<Result<Frame<Bytes>, BoxError>> {
        const WHAT: &str = "answer handed on unread broke its content-length";
        match frame {
            Some(Ok(frame)) => {
                let Some(data) = frame.data_ref() else {
                    return Some(Ok(frame));
                };
                // A frame that would pass the length is not handed on.
                if self.passed.bytes + data.len() as u64 > self.declared {
                    let cause = Failure::new(Code::ProtocolViolation).with_message(&format!(
                        "the answer sent more than the {} bytes its content-length declared",
                        self.declared
                    ));
                    return Some(Err(self.passed.interrupted(cause, WHAT)));
                }
                self.passed.count(data, 1);
                Some(Ok(frame))
            }
            None if self.passed.bytes < self.declared => {
                let failure = Failure::new(Code::Truncated).with_message(&format!(
                    "the answer ended after {} of the {} bytes its content-length declared",
                    self.passed.bytes, self.declared
                ));
                Some(Err(self.passed.fail(failure, WHAT)))
            }
            other => other,
        }
    }

    /// Whether the declared length has passed, or the body has failed:
    /// only then may the inner body's word that it ended be taken.
    fn done(&self) -> bool {
        self.passed.ended || self.passed.bytes >= self.declared
    }
}

/// Judges the frames of a gRPC answer: its status comes in the trailers,
/// which must come between messages.
///
/// Before a whole message has passed (an answer handed on at its headers:
/// a call still sending), its end is judged as a held answer's is: a
/// failed status is that status's verdict, nothing generated (a quota's
/// `RESOURCE_EXHAUSTED` is the quota, not billed, its reset kept for the
/// breaker), a broken end the fault it is — no interruption of content
/// the caller never had. The caller gets it from the body all the same:
/// the request, sent as it was made, is not sent again.
fn judge_grpc<E: Into<BoxError>>(
    passed: &mut Passed,
    quota_wall: QuotaWall,
    framing: &mut Framing,
    frame: Option<Result<Frame<Bytes>, E>>,
) -> Option<Result<Frame<Bytes>, BoxError>> {
    const WHAT: &str = "gRPC status failed after messages";
    // The end `cause` makes: an interruption once a whole message has
    // passed, the answer's own verdict before (`Passed` decides; the
    // event says which).
    let said = |framing: &Framing, what| match framing.messages {
        0 => "gRPC answer failed before any message",
        _ => what,
    };
    let ended_by = |passed: &mut Passed, framing: &Framing, cause: Failure, what| {
        passed.interrupted(cause, said(framing, what))
    };
    let frame = match frame {
        None => {
            let cause = Failure::new(Code::ProtocolViolation)
                .with_message("the gRPC answer ended without a grpc-status");
            return Some(Err(ended_by(passed, framing, cause, WHAT)));
        }
        // A reset after messages is an interruption, as for any answer
        // handed on: the caller and the breaker get seawall's verdict.
        // Before one it is the fault it is (a refusal, a lost connection).
        Some(Err(error)) => {
            let what = said(framing, "gRPC answer broke after messages");
            return Some(Err(passed.broken(error.into(), what)));
        }
        Some(Ok(frame)) => frame,
    };
    let mut frame = frame;
    if let Some(data) = frame.data_ref() {
        let before = framing.messages;
        framing.feed(data);
        passed.count(data, framing.messages - before);
        return Some(Ok(frame));
    }
    let Some(trailers) = frame.trailers_mut() else {
        return Some(Ok(frame));
    };
    match grpc::trailers_status(passed.status, trailers, quota_wall) {
        // A client drops the part of a message the trailers cut short
        // and reads the OK as the whole answer (tonic does): the end of a
        // stream was lost without a word, and counted a success.
        grpc::Status::Ok if !framing.between_messages() => {
            let cause = Failure::new(Code::ProtocolViolation)
                .with_message("the gRPC answer's OK trailers came inside a message");
            Some(Err(ended_by(
                passed,
                framing,
                cause,
                "gRPC message cut short by OK trailers",
            )))
        }
        grpc::Status::Ok => {
            // Only trailers that reach the caller's client need to be
            // readable to it.
            grpc::readable_details(trailers);
            passed.ended = true;
            Some(Ok(frame))
        }
        grpc::Status::Failed(cause) => {
            // Before any whole message: nothing was generated, whatever
            // HTTP's 200 says.
            let cause = match framing.messages {
                0 => cause.with_nothing_generated(),
                _ => cause,
            };
            Some(Err(ended_by(passed, framing, cause, WHAT)))
        }
        grpc::Status::Absent => {
            let cause = Failure::new(Code::ProtocolViolation)
                .with_message("the gRPC trailers carry no grpc-status");
            Some(Err(ended_by(passed, framing, cause, WHAT)))
        }
    }
}

/// Follows the frames of a JSON answer handed on past the check cap: a
/// body that ends before its value closes is `truncated`, bytes after the
/// value a `protocol_violation`, a broken read an interruption, and a body
/// that grows past `ceiling` bytes `answer_too_large` (a caller reads a
/// whole answer into memory: a small compressed body may decode to
/// gigabytes).
fn judge_past_cap<E: Into<BoxError>>(
    passed: &mut Passed,
    end: &mut JsonEnd,
    ceiling: u64,
    frame: Option<Result<Frame<Bytes>, E>>,
) -> Option<Result<Frame<Bytes>, BoxError>> {
    const WHAT: &str = "JSON answer past the check cap ended badly";
    let frame = match frame {
        None => {
            passed.ended = true;
            return match end.ending() {
                Ending::Whole => None,
                Ending::Cut => {
                    let failure = Failure::new(Code::Truncated).with_message(
                        "the JSON answer ended before its value closed (past the check cap)",
                    );
                    Some(Err(passed.fail(failure, WHAT)))
                }
                Ending::Trailing => {
                    let cause = Failure::new(Code::ProtocolViolation)
                        .with_message("bytes after the JSON answer's value");
                    Some(Err(passed.interrupted(cause, WHAT)))
                }
            };
        }
        Some(Err(error)) => return Some(Err(passed.broken(error.into(), WHAT))),
        Some(Ok(frame)) => frame,
    };
    if let Some(data) = frame.data_ref() {
        passed.count(data, 1);
        if passed.bytes > ceiling {
            let failure = answer_too_large(ceiling);
            return Some(Err(passed.fail(failure, WHAT)));
        }
        end.feed(data);
    }
    Some(Ok(frame))
}

/// A JSON answer longer than `ceiling`, the layer's `max_answer_body`:
/// checked before it was handed on, or past the check cap after.
pub(crate) fn answer_too_large(ceiling: u64) -> Failure {
    Failure::new(Code::AnswerTooLarge).with_message(&format!(
        "the JSON answer grew past {ceiling} bytes (ClassifyLayer::max_answer_body)"
    ))
}

/// A body error handed on unjudged (a stream's): a timeout its chain
/// names (a client's read timeout, a socket's) is the `timeout` failure
/// it is on a unary answer, not a bare error a layer above (the stream
/// guard) can only call `transport`. Anything else is handed on as it
/// is, its own type kept for whoever reads it (tonic maps h2's errors
/// itself).
fn named(error: BoxError) -> BoxError {
    if Failure::find(&*error).is_some() {
        return error;
    }
    match transport_failure(&*error) {
        Some(failure) if failure.code() == Code::Timeout => Box::new(failure.with_cause(error)),
        _ => error,
    }
}

impl<B> ClassifiedBody<B> {
    /// A body handed on unread; `length`, when it has one to hold to
    /// ([`Length::of`]).
    pub(crate) fn inner(body: B, length: Option<Length>) -> Self {
        ClassifiedBody {
            kind: Kind::Inner { body, length },
        }
    }

    pub(crate) fn read(data: Bytes, trailers: Option<HeaderMap>) -> Self {
        ClassifiedBody {
            kind: Kind::Read {
                data: (!data.is_empty()).then_some(data),
                trailers,
            },
        }
    }

    /// A gRPC answer whose first message, `head`, was read before it was
    /// handed on (`None`: handed on at its headers, nothing read): the
    /// trailers that end it are judged as they pass.
    pub(crate) fn watching_trailers(
        head: Option<Bytes>,
        rest: Pin<Box<Reading<B>>>,
        status: u16,
        quota_wall: QuotaWall,
    ) -> Self {
        let mut framing = Framing::default();
        framing.feed(head.as_deref().unwrap_or_default());
        ClassifiedBody {
            kind: Kind::Judged {
                passed: Passed::new(status, head.as_ref(), framing.messages),
                judge: Judge::Grpc(quota_wall, framing),
                head,
                rest,
            },
        }
    }

    /// A JSON answer read up to the check cap (`head`, its opening brace
    /// first) and handed on: whether its value closes is followed to the
    /// end.
    pub(crate) fn past_cap(
        head: Bytes,
        rest: Pin<Box<Reading<B>>>,
        status: u16,
        ceiling: u64,
    ) -> Self {
        let mut end = JsonEnd::default();
        end.feed(seawall_internal::json::without_bom(&head));
        ClassifiedBody {
            kind: Kind::Judged {
                passed: Passed::new(status, Some(&head), 1),
                judge: Judge::PastCap(end, ceiling),
                head: Some(head),
                rest,
            },
        }
    }

    /// A body read in part (`head`) and handed on unchecked; `length` as
    /// for [`inner`](Self::inner), the head already passed.
    pub(crate) fn resumed(head: Bytes, rest: Pin<Box<Reading<B>>>, length: Option<Length>) -> Self {
        let length = length.map(|mut length| {
            length.passed = Passed::unread(length.passed.status, Some(&head));
            length
        });
        ClassifiedBody {
            kind: Kind::Resumed {
                head: (!head.is_empty()).then_some(head),
                rest,
                length,
            },
        }
    }
}

/// Names the variant and the bytes held, without asking the inner body to
/// be `Debug`.
impl<B> fmt::Debug for ClassifiedBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, held) = match &self.kind {
            Kind::Inner { .. } => ("inner", None),
            Kind::Read { data, .. } => ("read", data.as_ref().map(Bytes::len)),
            Kind::Resumed { head, .. } => ("resumed", head.as_ref().map(Bytes::len)),
            Kind::Judged {
                head,
                judge: Judge::Grpc(..),
                ..
            } => ("watching_trailers", head.as_ref().map(Bytes::len)),
            Kind::Judged {
                head,
                judge: Judge::PastCap(..),
                ..
            } => ("past_cap", head.as_ref().map(Bytes::len)),
        };
        f.debug_struct("ClassifiedBody")
            .field("kind", &kind)
            .field("held", &held.unwrap_or(0))
            .finish()
    }
}

impl<B> Body for ClassifiedBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        // The unjudged bodies (a stream's) hand their frames on, their
        // errors `named`, held to their length where they declare one.
        let (poll, length) = match self.project().kind.project() {
            KindProj::Inner { length, .. } | KindProj::Resumed { length, .. }
                if length.as_ref().is_some_and(|length| length.passed.ended) =>
            {
                return Poll::Ready(None);
            }
            KindProj::Inner { body, length } => (body.poll_frame(cx), length),
            KindProj::Read { data, trailers } => {
                let frame = match data.take() {
                    Some(data) => Some(Frame::data(data)),
                    None => trailers.take().map(Frame::trailers),
                };
                return Poll::Ready(frame.map(Ok));
            }
            KindProj::Resumed { head, rest, length } => match head.take() {
                Some(head) => return Poll::Ready(Some(Ok(Frame::data(head)))),
                None => (rest.as_mut().poll_frame(cx), length),
            },
            KindProj::Judged {
                head,
                rest,
                passed,
                judge,
            } => {
                if let Some(head) = head.take() {
                    return Poll::Ready(Some(Ok(Frame::data(head))));
                }
                if passed.ended {
                    return Poll::Ready(None);
                }
                let frame = match rest.as_mut().poll_frame(cx) {
                    Poll::Ready(frame) => frame,
                    // Past the cap as below it (the checked read's rule):
                    // the value has closed and the body goes quiet without
                    // ending, a framing that promised more than it sent (a
                    // length one byte long, a chunked body without its
                    // last chunk, a close-delimited body on a connection
                    // kept open). The answer is whole by its own
                    // structure; waiting for an end that never comes
                    // failed it at the deadline, every byte delivered.
                    Poll::Pending if judge.whole() => {
                        passed.ended = true;
                        return Poll::Ready(None);
                    }
                    Poll::Pending => return Poll::Pending,
                };
                return Poll::Ready(judge.frame(passed, frame));
            }
        };
        let frame = ready!(poll).map(|result| result.map_err(|error| named(error.into())));
        Poll::Ready(match length {
            Some(length) => length.frame(frame),
            None => frame,
        })
    }

    fn is_end_stream(&self) -> bool {
        // An end before the declared length must be polled: it is where
        // the cut is reported.
        let held = |length: &Option<Length>| length.as_ref().is_none_or(Length::done);
        match &self.kind {
            Kind::Inner { body, length } => body.is_end_stream() && held(length),
            Kind::Read { data, trailers } => data.is_none() && trailers.is_none(),
            Kind::Resumed { head, rest, length } => {
                head.is_none() && rest.is_end_stream() && held(length)
            }
            // The end must be polled: it is where the status, or whether
            // the value closed, is judged.
            Kind::Judged { head, passed, .. } => head.is_none() && passed.ended,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body, .. } => body.size_hint(),
            Kind::Read { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Resumed { head, rest, .. } => {
                let rest = rest.size_hint();
                let mut hint = with_head(head.as_ref(), &rest);
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper.saturating_add(held(head.as_ref())));
                }
                hint
            }
            // No upper bound, whatever the rest's: a server relaying an
            // exact size stops polling after the last byte, and the end,
            // where the verdict is (a value cut short or followed by more
            // bytes, a gRPC status), was never read, nor its outcome
            // reported. The stream guard's body says as little.
            Kind::Judged { head, rest, .. } => with_head(head.as_ref(), &rest.size_hint()),
        }
    }
}

/// The bytes a replayed `head` still holds.
fn held(head: Option<&Bytes>) -> u64 {
    head.map_or(0, |head| head.len() as u64)
}

/// A hint whose lower bound is `rest`'s plus what `head` still holds, and
/// no upper bound.
fn with_head(head: Option<&Bytes>, rest: &SizeHint) -> SizeHint {
    let mut hint = SizeHint::new();
    hint.set_lower(rest.lower().saturating_add(held(head)));
    hint
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use seawall_test::trace::Recorder;

    use super::ClassifiedBody;
    use crate::future::Reading;

    /// A body that sends `frames`, then goes quiet for good: a framing
    /// that promised more than it sent.
    struct Quiet(Vec<Bytes>);

    impl http_body::Body for Quiet {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            match self.0.is_empty() {
                true => std::task::Poll::Pending,
                false => std::task::Poll::Ready(Some(Ok(http_body::Frame::data(self.0.remove(0))))),
            }
        }
    }

    /// Past the check cap as below it: a value that closed, the body then
    /// quiet, is a whole answer; one still open waits for its end.
    #[tokio::test(start_paused = true)]
    async fn a_closed_value_past_the_cap_ends_when_the_body_goes_quiet() {
        let head = Bytes::from_static(b"{\"data\":[");
        let rest = || {
            Reading::unread(Quiet(vec![
                Bytes::from_static(b"1,2"),
                Bytes::from_static(b"]} \n"),
            ]))
        };
        let body = ClassifiedBody::past_cap(head.clone(), rest(), 200, 1 << 20);
        let whole = tokio::time::timeout(std::time::Duration::from_secs(1), body.collect())
            .await
            .expect("a closed value ends once the body goes quiet")
            .expect("a whole answer");
        assert_eq!(whole.to_bytes(), Bytes::from_static(b"{\"data\":[1,2]} \n"));

        let open = Reading::unread(Quiet(vec![Bytes::from_static(b"1,2]")]));
        let body = ClassifiedBody::past_cap(head, open, 200, 1 << 20);
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), body.collect()).await;
        assert!(
            waited.is_err(),
            "an open value is no whole answer: {waited:?}"
        );
    }

    /// A failure made in the body (here a JSON answer past the check cap
    /// that ends before its value closes) is a classified failure: its
    /// event has the fields every such event has, and what broke it.
    #[tokio::test]
    async fn a_failure_made_in_the_body_has_the_classified_fields() {
        let recorder = Recorder::new();
        let _guard = recorder.install();
        let rest = Reading::unread(Full::new(Bytes::from_static(b"\"more\"")));
        let body = ClassifiedBody::past_cap(Bytes::from_static(b"{\"text\":"), rest, 200, 1 << 20);
        body.collect().await.expect_err("the value never closes");
        let events = recorder.events();
        assert_eq!(events.len(), 1, "{events:?}");
        // `retry_after_ms` too when there is a hint; a cut answer has none.
        for name in ["class", "code", "status", "action", "cause", "bytes"] {
            assert!(events[0].fields.has(name), "no {name}: {events:?}");
        }
    }

    /// A body that sends `frames` and ends.
    struct Frames(Vec<http_body::Frame<Bytes>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            std::task::Poll::Ready((!self.0.is_empty()).then(|| Ok(self.0.remove(0))))
        }
    }

    /// How a gRPC answer handed on at its headers ends after `frames`.
    async fn grpc_end(frames: Vec<http_body::Frame<Bytes>>) -> seawall_core::Failure {
        let body = ClassifiedBody::watching_trailers(
            None,
            Reading::unread(Frames(frames)),
            200,
            seawall_core::provider::QuotaWall::default(),
        );
        let error = body.collect().await.expect_err("a bad end");
        seawall_core::Failure::find(&*error)
            .expect("classified")
            .clone()
    }

    fn trailers(fields: &[(&'static str, &'static str)]) -> http_body::Frame<Bytes> {
        let map = fields
            .iter()
            .map(|(name, value)| {
                (
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from_static(value),
                )
            })
            .collect();
        http_body::Frame::trailers(map)
    }

    /// A serving health status as one gRPC message: flag, length, protobuf.
    const MESSAGE: &[u8] = b"\0\0\0\0\x02\x08\x01";

    /// Before a whole message reached the caller, a gRPC answer handed on
    /// at its headers ends with its own verdict, as a held one does: a
    /// failed status is that status, nothing generated; a broken end the
    /// fault it is. Neither is an interruption of content never
    /// delivered. After a message, the same ends are interruptions.
    #[tokio::test]
    async fn a_grpc_answer_handed_on_at_its_headers_fails_as_itself_before_a_message() {
        use seawall_core::Code;

        let unavailable = grpc_end(vec![trailers(&[("grpc-status", "14")])]).await;
        assert_eq!(unavailable.code(), Code::ProviderUnavailable);
        assert!(!unavailable.billed(), "{unavailable:?}");
        assert!(unavailable.interrupted().is_none());
        assert!(!unavailable.evidence().content_seen);

        let half = http_body::Frame::data(Bytes::from_static(&MESSAGE[..6]));
        for (frames, what) in [
            (vec![], "no trailers"),
            (vec![trailers(&[("x-other", "1")])], "no grpc-status"),
            (
                vec![half, trailers(&[("grpc-status", "0")])],
                "OK inside a message",
            ),
        ] {
            let broken = grpc_end(frames).await;
            assert_eq!(broken.code(), Code::ProtocolViolation, "{what}: {broken:?}");
            assert!(broken.interrupted().is_none(), "{what}");
        }

        let message = || http_body::Frame::data(Bytes::from_static(MESSAGE));
        for frames in [
            vec![message(), trailers(&[("grpc-status", "14")])],
            vec![message()],
            vec![message(), trailers(&[("x-other", "1")])],
        ] {
            let cut = grpc_end(frames).await;
            assert_eq!(cut.code(), Code::StreamInterrupted, "{cut:?}");
            assert_eq!(cut.interrupted().map(|i| i.content_events), Some(1));
            assert!(cut.evidence().content_seen);
        }
    }

    /// A gRPC interruption counts the messages that reached the caller,
    /// its content events, not the DATA frames that carried them: three
    /// messages in one frame are three, one message over several frames
    /// one.
    #[tokio::test]
    async fn a_grpc_interruption_counts_messages_not_frames() {
        let three = [MESSAGE, MESSAGE, MESSAGE].concat();
        let cut = grpc_end(vec![
            http_body::Frame::data(Bytes::from(three)),
            trailers(&[("grpc-status", "14")]),
        ])
        .await;
        let delivered = cut.interrupted().expect("an interruption");
        assert_eq!(delivered.content_events, 3, "{cut:?}");
        assert_eq!(delivered.bytes, 3 * MESSAGE.len() as u64);
        // The frames are still the evidence's chunks.
        assert_eq!(cut.evidence().chunks, 1);

        let mut split: Vec<_> = MESSAGE
            .iter()
            .map(|byte| http_body::Frame::data(Bytes::copy_from_slice(&[*byte])))
            .collect();
        split.push(trailers(&[("grpc-status", "14")]));
        let cut = grpc_end(split).await;
        assert_eq!(
            cut.interrupted().map(|i| i.content_events),
            Some(1),
            "{cut:?}"
        );
        assert_eq!(cut.evidence().chunks, MESSAGE.len() as u64);

        // A head read before the answer was handed on is its first message.
        let body = ClassifiedBody::watching_trailers(
            Some(Bytes::from([MESSAGE, MESSAGE].concat())),
            Reading::unread(Frames(vec![trailers(&[("grpc-status", "14")])])),
            200,
            seawall_core::provider::QuotaWall::default(),
        );
        let error = body.collect().await.expect_err("a bad end");
        let cut = seawall_core::Failure::find(&*error).expect("classified");
        assert_eq!(
            cut.interrupted().map(|i| i.content_events),
            Some(2),
            "{cut:?}"
        );
    }

    /// A body that sends `frames`, then fails with `error` (a reset, a
    /// lost connection).
    struct Breaks(Vec<http_body::Frame<Bytes>>, Option<std::io::ErrorKind>);

    impl http_body::Body for Breaks {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            std::task::Poll::Ready(match self.0.is_empty() {
                false => Some(Ok(self.0.remove(0))),
                true => self.1.take().map(|kind| Err(kind.into())),
            })
        }
    }

    /// How a gRPC answer handed on at its headers breaks after `frames`.
    async fn grpc_broken(frames: Vec<http_body::Frame<Bytes>>) -> seawall_core::Failure {
        let body = ClassifiedBody::watching_trailers(
            None,
            Reading::unread(Breaks(frames, Some(std::io::ErrorKind::ConnectionReset))),
            200,
            seawall_core::provider::QuotaWall::default(),
        );
        let error = body.collect().await.expect_err("broken");
        seawall_core::Failure::find(&*error)
            .expect("classified")
            .clone()
    }

    /// A gRPC answer handed on at its headers (a call still sending) that
    /// breaks before a whole message reached the caller is the fault it
    /// is, as the held answer's read says: `transport`, no interruption,
    /// no content seen, the error kept as its source. After a message it
    /// is an interruption by that fault.
    #[tokio::test]
    async fn a_grpc_answer_broken_before_a_message_is_the_fault_not_an_interruption() {
        use seawall_core::Code;

        let half = || http_body::Frame::data(Bytes::from_static(&MESSAGE[..6]));
        for (frames, what) in [(vec![], "at once"), (vec![half()], "inside a message")] {
            let broken = grpc_broken(frames).await;
            assert_eq!(broken.code(), Code::Transport, "{what}: {broken:?}");
            assert!(broken.interrupted().is_none(), "{what}: {broken:?}");
            assert!(!broken.evidence().content_seen, "{what}");
            assert_eq!(broken.evidence().status, Some(200), "{what}");
            let source = broken.cause().expect("the reset kept");
            let reset = source
                .downcast_ref::<std::io::Error>()
                .map(std::io::Error::kind);
            assert_eq!(reset, Some(std::io::ErrorKind::ConnectionReset), "{what}");
        }

        let message = http_body::Frame::data(Bytes::from_static(MESSAGE));
        let cut = grpc_broken(vec![message, half()]).await;
        assert_eq!(cut.code(), Code::StreamInterrupted, "{cut:?}");
        let delivered = cut.interrupted().expect("an interruption");
        assert_eq!(delivered.content_events, 1);
        assert_eq!(delivered.cause, Some(Code::Transport));
        assert!(cut.evidence().content_seen);
    }
}
