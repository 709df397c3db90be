use std::future::Future;
use std::mem;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::{Instant, Sleep, sleep};

use bytes::{Bytes, BytesMut};
use http::response::Parts;
use http::{HeaderMap, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::provider::{Provider, classify_error};
use seawall_core::{Code, Evidence, Failure, Progress, RequestFacts};
use seawall_internal::json::{is_json_media, opening, opens_event_stream};
use seawall_internal::millis;
use tower::BoxError;

use crate::body::Length;
use crate::classifier::{Classifier, Inspection, SuccessContext};
use crate::json_end::{Ending, JsonEnd};
use crate::layer::Settings;
use crate::transport::chain_message;
use crate::{ClassifiedBody, error_context, grpc, transport_failure};

pin_project! {
    /// The future of [`Classify`](crate::Classify): the inner call, then,
    /// for error responses and checked unary answers, the body read.
    pub struct ResponseFuture<F, C, B> {
        #[pin]
        inner: F,
        state: State<B>,
        classifier: Arc<C>,
        settings: Settings,
        started: Instant,
        // What the request asked for: decides what a 2xx body must be.
        facts: RequestFacts,
        // The attempt's progress, when a per-attempt deadline tracks it: a
        // slow body read here is bytes arriving, not a silent route.
        progress: Option<Progress>,
        // What the method says of the answer's body: a `HEAD`'s has none,
        // and only a `GET` or `HEAD` may be answered with a 304.
        method: RequestMethod,
    }
}

/// What a request's method says of its answer, kept in a byte: the
/// future holds only this of the method (an extension method's name is
/// an allocation, and the future is made for every call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestMethod {
    /// Its answer has no body, whatever its headers say of the body a
    /// `GET` would get; it may be conditional.
    Head,
    /// It may be conditional: a 304 says the caller's copy is current.
    Get,
    /// Any other: a 304 answers nothing it asked (RFC 9110 §15.4.5
    /// sends one only for a conditional `GET` or `HEAD`).
    Other,
}

impl RequestMethod {
    pub(crate) fn of(method: &http::Method) -> Self {
        if method == http::Method::HEAD {
            RequestMethod::Head
        } else if method == http::Method::GET {
            RequestMethod::Get
        } else {
            RequestMethod::Other
        }
    }
}

impl<F, C, B> ResponseFuture<F, C, B> {
    pub(crate) fn new(
        inner: F,
        classifier: Arc<C>,
        settings: Settings,
        started: Instant,
        facts: RequestFacts,
        progress: Option<Progress>,
        method: RequestMethod,
    ) -> Self {
        ResponseFuture {
            inner,
            state: State::Waiting,
            classifier,
            settings,
            started,
            facts,
            progress,
            method,
        }
    }
}

impl<F, C, B> std::fmt::Debug for ResponseFuture<F, C, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Waiting => "waiting",
            State::ReadingError(..) => "reading_error",
            State::CheckingSuccess(_) => "checking_success",
            State::AwaitingTrailers(_) => "awaiting_trailers",
            State::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

/// How long an error body may keep its reader waiting before what came of
/// it is judged: a provider writes its error whole with its head, and the
/// status and headers already say most of it. A body that trickles or
/// stops short of its end (a chunked body without its last chunk on a
/// connection kept open) kept the status from the verdict until the
/// attempt's bound, and a 429 became a timeout retried at once.
pub(crate) const ERROR_BODY_WAIT: Duration = Duration::from_secs(2);

enum State<B> {
    /// The inner service has not answered yet.
    Waiting,
    /// A non-2xx answer: its body is read up to `max_error_body`, for at
    /// most [`ERROR_BODY_WAIT`] once it keeps the reader waiting (the
    /// timer, boxed: made only for a body that does).
    ReadingError(Pin<Box<Reading<B>>>, Option<Pin<Box<Sleep>>>),
    /// A 2xx answer the classifier wants to check: read up to `max_success_body`.
    CheckingSuccess(Pin<Box<Reading<B>>>),
    /// A 2xx answer whose status comes in its trailers: held until its
    /// first whole message (or what ends it before one).
    AwaitingTrailers(Pin<Box<Reading<B>>>),
    Done,
}

impl<F, C, B, E> Future for ResponseFuture<F, C, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
    C: Classifier,
{
    type Output = Result<Response<ClassifiedBody<B>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let classifier = &**this.classifier;
        let settings = *this.settings;
        let started = *this.started;
        let success_cx = SuccessContext::new(this.facts)
            .with_quota_wall(settings.quota_wall)
            .with_deliver_policy(settings.deliver_policy);
        loop {
            match mem::replace(this.state, State::Done) {
                State::Waiting => {
                    let response = match this.inner.as_mut().poll(cx) {
                        Poll::Pending => {
                            *this.state = State::Waiting;
                            return Poll::Pending;
                        }
                        Poll::Ready(Ok(response)) => response,
                        Poll::Ready(Err(error)) => {
                            let error = classify_inner_error(
                                classifier,
                                &settings,
                                error.into(),
                                |evidence| {
                                    evidence.elapsed = Some(started.elapsed());
                                },
                            );
                            return Poll::Ready(Err(error));
                        }
                    };
                    let (mut parts, body) = response.into_parts();
                    // A bound that passes while the body is read reports
                    // that the provider answered (a 2xx is billed).
                    if let Some(progress) = this.progress.as_ref() {
                        progress.set_status(parts.status.as_u16());
                    }
                    // No body by HTTP's own rules: a `HEAD`'s 2xx (its
                    // length and type are a `GET`'s) and a 304 to a `GET`
                    // or `HEAD` (the caller's copy is current, nothing to
                    // follow). Read for a check, the empty body was
                    // `empty_response`, retried and counted against the
                    // route.
                    let not_modified = parts.status == http::StatusCode::NOT_MODIFIED;
                    let method = *this.method;
                    if (method == RequestMethod::Head && parts.status.is_success())
                        || (not_modified && method != RequestMethod::Other)
                    {
                        // Its length is the `GET`'s, or there is none.
                        let body = ClassifiedBody::inner(body, None);
                        return Poll::Ready(Ok(Response::from_parts(parts, body)));
                    }
                    // A 304 answers only a conditional `GET` or `HEAD`
                    // (RFC 9110 §15.4.5). To a generation (a `POST`) it is
                    // no answer and no redirect to fix: a proxy's or
                    // cache's mistake, which the next attempt may not
                    // repeat. To any other request it goes the error path
                    // below with every other stray 3xx. Delivered, it was
                    // a success with no answer.
                    let inspection = if not_modified && this.facts.is_generation() {
                        Inspection::Fail(Failure::new(Code::ProtocolViolation).with_message(
                            "a 304 Not Modified to a generation request (a POST, never \
                             conditional)",
                        ))
                    } else if parts.status.is_success() {
                        classifier.inspect_success(&parts, &success_cx)
                    } else {
                        *this.state = State::ReadingError(
                            Reading::new(parts, body, this.progress.take()),
                            None,
                        );
                        continue;
                    };
                    match inspection {
                        Inspection::Deliver => {
                            // A trailers-only answer's details in an
                            // alphabet tonic does not read (it panics on
                            // them) are written again, as in trailers.
                            if grpc::head_has_status(&parts) {
                                grpc::readable_details(&mut parts.headers);
                            }
                            let body = ClassifiedBody::inner(body, Length::of(&parts));
                            return Poll::Ready(Ok(Response::from_parts(parts, body)));
                        }
                        Inspection::CheckBody => {
                            *this.state = State::CheckingSuccess(Reading::new(
                                parts,
                                body,
                                this.progress.take(),
                            ));
                        }
                        // A call that is still sending (a client or
                        // bidirectional stream) may have a server that
                        // speaks second: holding its answer back for a
                        // first message could wait for ever, so it is
                        // handed on at its headers, its trailers judged as
                        // they pass. A request sent whole is held, so a
                        // status before any message can still be retried.
                        Inspection::AwaitTrailers if this.facts.body_sent() == Some(false) => {
                            let body = ClassifiedBody::watching_trailers(
                                None,
                                Reading::unread(body),
                                parts.status.as_u16(),
                                settings.quota_wall,
                            );
                            return Poll::Ready(Ok(Response::from_parts(parts, body)));
                        }
                        Inspection::AwaitTrailers => {
                            *this.state = State::AwaitingTrailers(Reading::new(
                                parts,
                                body,
                                this.progress.take(),
                            ));
                        }
                        Inspection::Fail(mut failure) => {
                            let evidence = failure.evidence_mut();
                            evidence.status = Some(parts.status.as_u16());
                            evidence.elapsed = Some(started.elapsed());
                            return Poll::Ready(Err(report(failure)));
                        }
                    }
                }
                State::ReadingError(mut reading, mut wait) => {
                    if reading
                        .as_mut()
                        .poll_error_body(cx, settings.max_error_body)
                        .is_pending()
                    {
                        let timer = wait.get_or_insert_with(|| Box::pin(sleep(ERROR_BODY_WAIT)));
                        if timer.as_mut().poll(cx).is_pending() {
                            reading.as_mut().read().time_first_byte(started);
                            *this.state = State::ReadingError(reading, wait);
                            return Poll::Pending;
                        }
                        // What came by then is judged, the status first.
                    }
                    return Poll::Ready(Err(reading
                        .as_mut()
                        .read()
                        .error_failure(classifier, &settings, started, this.facts)));
                }
                State::CheckingSuccess(mut reading) => {
                    let read = match reading.as_mut().poll_success_body(
                        cx,
                        // Never read past what the answer may weigh at all.
                        settings
                            .max_success_body
                            .min(usize::try_from(settings.max_answer_body).unwrap_or(usize::MAX)),
                        this.facts,
                    ) {
                        Poll::Pending => {
                            reading.as_mut().read().time_first_byte(started);
                            *this.state = State::CheckingSuccess(reading);
                            return Poll::Pending;
                        }
                        Poll::Ready(read) => read,
                    };
                    return Poll::Ready(reading.finish_success(
                        read,
                        classifier,
                        &settings,
                        &success_cx,
                        started,
                    ));
                }
                State::AwaitingTrailers(mut reading) => {
                    let first = match reading
                        .as_mut()
                        .poll_first_message(cx, grpc::FIRST_MESSAGE_HOLD)
                    {
                        Poll::Pending => {
                            reading.as_mut().read().time_first_byte(started);
                            *this.state = State::AwaitingTrailers(reading);
                            return Poll::Pending;
                        }
                        Poll::Ready(first) => first,
                    };
                    return Poll::Ready(
                        reading.first_message(first, classifier, &settings, started),
                    );
                }
                State::Done => panic!("ResponseFuture polled after completion"),
            }
        }
    }
}

pin_project! {
    /// A response whose body is being read, in one allocation with the
    /// body: the future, which every layer above moves whole, holds a
    /// pointer where it held some 350 bytes, and a body handed on after a
    /// read goes on in the allocation the read made. As a [`Body`], it is
    /// the rest of the inner body (what was read is taken out first).
    pub(crate) struct Reading<B> {
        read: Read,
        #[pin]
        body: B,
    }
}

/// A head with nothing in it (no allocation): what is left where one
/// was taken, never read.
fn no_parts() -> Parts {
    Response::new(()).into_parts().0
}

/// What a read keeps of a response besides its body.
struct Read {
    /// The attempt's progress, fed as bytes are read.
    progress: Option<Progress>,
    parts: Parts,
    buffer: Buffer,
    trailers: Option<HeaderMap>,
    /// Whether the body's first non-blank byte opened a JSON object.
    object_seen: bool,
    /// Bytes at the start of the buffer known to be blank (a byte-order
    /// mark, whitespace): the opening is looked for after them, so blanks
    /// sent a few at a time are read once, not once per frame.
    blank: usize,
    pulled: u64,
    chunks: u64,
    first_byte: FirstByte,
    /// Where the buffered answer is in its one JSON value, followed only
    /// when the body goes quiet (see `poll_success_body`), up to
    /// `scanned` bytes of the buffer.
    json_end: JsonEnd,
    scanned: usize,
    /// An error body's read refused by what was decoding it (no network
    /// failure): what it said, for the verdict's message.
    undecodable: Option<String>,
}

/// When a body's first byte came, as the time since the call began.
#[derive(Debug, Clone, Copy)]
enum FirstByte {
    /// Not yet.
    Awaited,
    /// In the poll under way: not timed yet (`Read::time_first_byte`).
    Came,
    /// This long after the call began.
    At(Duration),
}

/// How reading a 2xx body ended.
enum SuccessRead {
    /// The whole body is in the buffer.
    Whole,
    /// The body is not a checkable answer (not a JSON object): hand it on
    /// with what was read.
    Unchecked,
    /// A JSON object longer than the check cap: hand it on with what was
    /// read, following whether it closes.
    PastCap,
    /// The body failed mid-read.
    Failed(BoxError),
    /// A generation endpoint's 2xx body opens like neither an answer nor a
    /// stream: an HTML page from a proxy, binary, plain text.
    NotAnAnswer(u8),
}

impl<B> Reading<B> {
    fn new(parts: Parts, body: B, progress: Option<Progress>) -> Pin<Box<Self>> {
        Box::pin(Reading {
            read: Read::new(parts, progress),
            body,
        })
    }

    /// A body handed on unread, in the allocation a read would have made
    /// (the body of a response handed on after a read goes on in its
    /// read's).
    pub(crate) fn unread(body: B) -> Pin<Box<Self>> {
        Reading::new(no_parts(), body, None)
    }

    fn read(self: Pin<&mut Self>) -> &mut Read {
        self.project().read
    }
}

/// The rest of the inner body.
impl<B: Body> Body for Reading<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Read {
    fn new(parts: Parts, progress: Option<Progress>) -> Self {
        Read {
            progress,
            parts,
            buffer: Buffer::Empty,
            trailers: None,
            object_seen: false,
            blank: 0,
            pulled: 0,
            chunks: 0,
            first_byte: FirstByte::Awaited,
            json_end: JsonEnd::default(),
            scanned: 0,
            undecodable: None,
        }
    }

    /// The response's head, for the response handed on; what is left in
    /// its place is never read.
    fn take_parts(&mut self) -> Parts {
        mem::replace(&mut self.parts, no_parts())
    }

    /// What was read and the head, for a response whose body goes on in
    /// this allocation: the read is over, so the attempt's progress is
    /// let go as it was when the read was dropped.
    fn hand_on(&mut self) -> (Bytes, Parts) {
        self.progress = None;
        (self.buffer.take(), self.take_parts())
    }

    /// Whether the buffer holds one whole JSON value, blanks at most after
    /// it: followed from where it was last looked at, so a body that goes
    /// quiet often is scanned once.
    fn holds_a_whole_value(&mut self) -> bool {
        let all = self.buffer.as_slice();
        // A byte order mark before the value is no part of it.
        if self.scanned == 0 && all.starts_with(&seawall_internal::json::UTF8_BOM) {
            self.scanned = seawall_internal::json::UTF8_BOM.len();
        }
        self.json_end.feed(&all[self.scanned..]);
        self.scanned = all.len();
        self.json_end.ending() == Ending::Whole
    }

    fn count(&mut self, data: &Bytes) {
        if let Some(progress) = &self.progress {
            progress.add_bytes(data.len() as u64);
        }
        self.pulled += data.len() as u64;
        self.chunks += 1;
        if matches!(self.first_byte, FirstByte::Awaited) && !data.is_empty() {
            self.first_byte = FirstByte::Came;
        }
    }

    /// Times the first byte, if it came in this poll: the future is about
    /// to wait, and the clock would run on. One that comes in the poll that
    /// concludes is timed with the conclusion's own reading of the clock
    /// (`fill`), so a body read whole at once reads the clock for it only
    /// if it fails.
    fn time_first_byte(&mut self, started: Instant) {
        if let FirstByte::Came = self.first_byte {
            self.first_byte = FirstByte::At(started.elapsed());
        }
    }

    /// The failure this answer came to, with what was read as its evidence,
    /// the provider's id of the request (its `x-request-id` or
    /// `request-id`, what the provider's support asks for) and its
    /// rate-limit headers (`Failure::with_upstream_headers`: a proxy
    /// passes them on as it passes a success's), reported. Only a failure
    /// comes here: a success pays nothing for them.
    fn conclude(&self, failure: Failure, started: Instant) -> BoxError {
        let failure = failure.with_upstream_headers(&self.parts.headers);
        let mut failure = match seawall_core::request_id_of(&self.parts.headers) {
            Some(id) => failure.with_request_id(id),
            None => failure,
        };
        self.fill(failure.evidence_mut(), started);
        report(failure)
    }

    fn fill(&self, evidence: &mut Evidence, started: Instant) {
        evidence.status = Some(self.parts.status.as_u16());
        evidence.bytes = self.pulled;
        evidence.chunks = self.chunks;
        let elapsed = started.elapsed();
        evidence.time_to_first_byte = match self.first_byte {
            FirstByte::Awaited => None,
            FirstByte::Came => Some(elapsed),
            FirstByte::At(at) => Some(at),
        };
        evidence.elapsed = Some(elapsed);
    }

    fn error_failure<C: Classifier>(
        &mut self,
        classifier: &C,
        settings: &Settings,
        started: Instant,
        facts: &RequestFacts,
    ) -> BoxError {
        // A status in the trailers of a non-2xx gRPC answer is the call's:
        // tonic (`infer_grpc_status`) reads the trailers' `grpc-status`
        // first, the HTTP status only without one. Judged as if the head
        // carried it, a 503 that said INVALID_ARGUMENT is not retried.
        if let Some(trailers) = &self.trailers {
            grpc::status_into_head(&mut self.parts.headers, trailers);
        }
        let cx = error_context(&self.parts, settings.quota_wall);
        // An error body nothing decoded (a coding the decompression does
        // not know: zstd, `gzip, br`, `compress`; or bytes its decoder
        // refused) is no text: read as JSON or text, it gave hints it
        // never held, or lost the ones it did without a word. The status
        // and headers decide, and the message says the body was not read.
        let unread = match crate::provider::undecoded_encoding(&self.parts) {
            Some(coding) if self.pulled > 0 => {
                Some(format!("error body encoded ({coding}), not read"))
            }
            _ => self
                .undecodable
                .as_ref()
                .map(|error| format!("error body could not be decoded ({error}), not read")),
        };
        let body = match unread {
            Some(_) => &[][..],
            None => self.buffer.as_slice(),
        };
        let failure = classifier
            .classify_response_for(&self.parts, body, cx, facts)
            .unwrap_or_else(|| classify_error(Provider::Http, body, cx));
        let failure = match unread {
            Some(unread) => {
                let message = match failure.message() {
                    // The note first: a long message is cut at its end.
                    Some(message) => format!("{unread}; {message}"),
                    None => unread,
                };
                failure.with_message(&message)
            }
            None => failure,
        };
        self.conclude(failure, started)
    }
}

impl<B> Reading<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    /// Reads until the body ends, fails, or `cap` bytes are kept. Past the
    /// cap the body is not polled again: it is dropped with the future.
    fn poll_error_body(self: Pin<&mut Self>, cx: &mut Context<'_>, cap: usize) -> Poll<()> {
        let this = self.project();
        let (mut body, read) = (this.body, this.read);
        loop {
            let room = cap.saturating_sub(read.buffer.len());
            if room == 0 {
                return Poll::Ready(());
            }
            match ready!(body.as_mut().poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        read.count(&data);
                        if data.len() <= room {
                            read.buffer.push(data);
                        } else {
                            read.buffer.push(Bytes::copy_from_slice(&data[..room]));
                        }
                    }
                    // Kept: a gRPC status in them is the call's.
                    Err(frame) => read.trailers = frame.into_trailers().ok(),
                },
                // A failed read classifies by what arrived: the status at
                // least. An error that is no network failure is a decoder
                // refusing the bytes (a corrupt gzip, raw deflate labelled
                // `deflate`): what it gave before is no text to read.
                Some(Err(error)) => {
                    let error = error.into();
                    if Failure::find(&*error).is_none() && transport_failure(&*error).is_none() {
                        read.undecodable = Some(error.to_string());
                    }
                    return Poll::Ready(());
                }
                None => return Poll::Ready(()),
            }
        }
    }

    fn poll_success_body(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        cap: usize,
        facts: &RequestFacts,
    ) -> Poll<SuccessRead> {
        let this = self.project();
        let (mut body, read) = (this.body, this.read);
        loop {
            let polled = match body.as_mut().poll_frame(cx) {
                Poll::Ready(polled) => polled,
                // The answer's object has closed and the body goes quiet
                // without ending: a framing that promised more than it
                // sent (a length one byte long, a chunked body without
                // its last chunk, a close-delimited body on a connection
                // kept open). The answer is whole by its own structure;
                // waiting for an end that never comes discarded it at the
                // attempt's bound and asked for it again. A well-framed
                // body seldom pauses there (its end comes with its last
                // bytes), and then only ends a moment sooner.
                Poll::Pending if read.object_seen && read.holds_a_whole_value() => {
                    return Poll::Ready(SuccessRead::Whole);
                }
                Poll::Pending => return Poll::Pending,
            };
            match polled {
                None => return Poll::Ready(SuccessRead::Whole),
                Some(Err(error)) => return Poll::Ready(SuccessRead::Failed(error.into())),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        read.count(&data);
                        read.buffer.push(data);
                        if !read.object_seen {
                            // A unary answer is an object; an array is a
                            // stream of objects (Gemini without `alt=sse`)
                            // and must not be held back until it ends.
                            let all = read.buffer.as_slice();
                            let first = match read.blank {
                                0 => opening(all),
                                blank => all[blank..]
                                    .iter()
                                    .copied()
                                    .find(|byte| !byte.is_ascii_whitespace()),
                            };
                            match first {
                                Some(b'{') => {
                                    read.object_seen = true;
                                    relabel(b'{', &mut read.parts, facts);
                                }
                                Some(first) => {
                                    if !is_answer_opening(first, &read.parts, facts) {
                                        return Poll::Ready(SuccessRead::NotAnAnswer(first));
                                    }
                                    relabel(first, &mut read.parts, facts);
                                    return Poll::Ready(SuccessRead::Unchecked);
                                }
                                // The first bytes of a byte order mark:
                                // the rest of it is still to come.
                                None if read.blank == 0
                                    && seawall_internal::json::bom_so_far(all) => {}
                                None => read.blank = read.buffer.len(),
                            }
                        }
                        if read.buffer.len() > cap {
                            return Poll::Ready(SuccessRead::PastCap);
                        }
                    }
                    Err(frame) => {
                        if let Ok(trailers) = frame.into_trailers() {
                            read.trailers = Some(trailers);
                        }
                    }
                },
            }
        }
    }

    fn finish_success<C: Classifier>(
        mut self: Pin<Box<Self>>,
        outcome: SuccessRead,
        classifier: &C,
        settings: &Settings,
        success_cx: &SuccessContext<'_>,
        started: Instant,
    ) -> Result<Response<ClassifiedBody<B>>, BoxError> {
        let read = self.as_mut().read();
        match outcome {
            // A bound below the check cap holds there too (the read stops
            // at it): the answer is never begun past it.
            SuccessRead::PastCap if read.buffer.len() as u64 > settings.max_answer_body => {
                let failure = crate::body::answer_too_large(settings.max_answer_body);
                Err(read.conclude(failure, started))
            }
            SuccessRead::NotAnAnswer(first) => {
                let (endpoint, what) = if !success_cx.facts.is_generation() {
                    ("an endpoint that answers JSON", "not JSON")
                } else if opens_event_stream(first) {
                    (
                        "a generation endpoint",
                        "neither JSON nor an event stream where one may come (a request for \
                         one whole answer, or a JSON label)",
                    )
                } else {
                    ("a generation endpoint", "neither JSON nor an event stream")
                };
                let failure = Failure::new(Code::ProtocolViolation).with_message(&format!(
                    "the 2xx answer of {endpoint} is {what} (content type {:?}, first byte {:?})",
                    read.parts
                        .headers
                        .get(http::header::CONTENT_TYPE)
                        .map_or("none", |v| v.to_str().unwrap_or("unreadable")),
                    char::from(first),
                ));
                Err(read.conclude(failure, started))
            }
            SuccessRead::Whole => {
                let checked =
                    classifier.check_success(&read.parts, read.buffer.as_slice(), success_cx);
                match checked.delivered() {
                    Ok((finish, usage)) => {
                        let mut parts = read.take_parts();
                        if let Some(finish) = finish {
                            parts.extensions.insert(finish);
                        }
                        if let Some(usage) = usage {
                            parts.extensions.insert(usage);
                        }
                        let body = read.buffer.take();
                        // Delivered when its JSON closed, before a framing
                        // that never ended: the server's length is not the
                        // body's, and a server relaying it would abort.
                        if declares_other_length(&parts.headers, body.len()) {
                            parts.headers.remove(http::header::CONTENT_LENGTH);
                        }
                        let body = ClassifiedBody::read(body, read.trailers.take());
                        Ok(Response::from_parts(parts, body))
                    }
                    Err(failure) => Err(read.conclude(*failure, started)),
                }
            }
            SuccessRead::Unchecked => {
                tracing::debug!(
                    target: "seawall::classify",
                    bytes = read.pulled,
                    "2xx body handed on unchecked: not a JSON object"
                );
                let length = Length::of(&read.parts);
                let (head, parts) = read.hand_on();
                let body = ClassifiedBody::resumed(head, self, length);
                Ok(Response::from_parts(parts, body))
            }
            SuccessRead::PastCap => {
                tracing::debug!(
                    target: "seawall::classify",
                    bytes = read.pulled,
                    "2xx body handed on unchecked: longer than the check cap"
                );
                let status = read.parts.status.as_u16();
                let (head, parts) = read.hand_on();
                let body = ClassifiedBody::past_cap(head, self, status, settings.max_answer_body);
                Ok(Response::from_parts(parts, body))
            }
            SuccessRead::Failed(error) => Err(read_failure(classifier, settings, error, |e| {
                read.fill(e, started)
            })),
        }
    }
}

/// Whether `headers` carry a `content-length` other than `len` (or one
/// that is no number): one lookup, where `declared_length` and a second
/// for whether there is one at all took two.
fn declares_other_length(headers: &HeaderMap, len: usize) -> bool {
    headers
        .get(http::header::CONTENT_LENGTH)
        .is_some_and(|value| {
            // Read as `declared_length` reads it.
            let declared = value.to_str().ok().and_then(|v| v.trim().parse().ok());
            declared != Some(len as u64)
        })
}

/// Whether a 2xx body that does not open a JSON object may still be an
/// answer, handed on unread: anything, except on a generation endpoint,
/// where only an event stream or Gemini's JSON array stream is (an array
/// where none was asked for, `[{"error":…}]` or `[]`, was handed on
/// unread and called an answer), and on an endpoint that answers JSON
/// ([`RequestFacts::answers_json`]), where only an array is.
fn is_answer_opening(first: u8, parts: &Parts, facts: &RequestFacts) -> bool {
    match facts.provider() {
        None => !facts.answers_json() || first == b'[',
        Some(_) => {
            (opens_event_stream(first) && may_stream(parts, facts))
                || (first == b'[' && facts.asks_json_array())
        }
    }
}

/// Whether the answer may be an event stream: one was asked for, or
/// nothing says (then a JSON label says it is none). A request for one
/// whole answer gets one: text that opens like a stream there is a
/// proxy's page, never handed on as an answer.
fn may_stream(parts: &Parts, facts: &RequestFacts) -> bool {
    match facts.stream_requested() {
        Some(asked) => asked,
        None => !crate::provider::media_type(parts).is_some_and(is_json_media),
    }
}

/// An answer labelled as what its first byte and the request say it is:
///
/// - an event stream a stream was asked for, labelled JSON (some
///   OpenAI-compatible servers label every answer so): so the stream guard
///   reads it and a client reads it as a stream. Refused instead, the same
///   label on every attempt failed each one, each billed;
/// - a JSON answer to a request for one whole answer, labelled an event
///   stream (checked as the unary answer it is,
///   `RequestFacts::unary_requested`): so the stream guard above leaves it
///   to this check whatever it reads of the request later, and the
///   caller's client reads it as JSON.
fn relabel(first: u8, parts: &mut Parts, facts: &RequestFacts) {
    // What the request asked for first: the label is looked up only when
    // it could be wrong (a stream's first byte where a stream was asked
    // for, an object where one whole answer was), not on every answer.
    let (label, mislabelled): (_, fn(&[u8]) -> bool) =
        if opens_event_stream(first) && facts.stream_requested() == Some(true) {
            ("text/event-stream", is_json_media)
        } else if first == b'{' && facts.unary_requested() {
            ("application/json", |media| {
                media.eq_ignore_ascii_case(b"text/event-stream")
            })
        } else {
            return;
        };
    if !crate::provider::media_type(parts).is_some_and(mislabelled) {
        return;
    }
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(label),
    );
}

impl<B> Reading<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    /// Reads a gRPC answer up to its first whole message (its prefix says
    /// how long; one whose prefix and bytes pass `cap` goes on at its
    /// prefix), or to what ends it before one: trailers, an error, the end.
    /// An empty DATA frame (a body ended by one) delivers nothing.
    fn poll_first_message(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        cap: usize,
    ) -> Poll<FirstRead> {
        let this = self.project();
        let (mut body, read) = (this.body, this.read);
        loop {
            let frame = match ready!(body.as_mut().poll_frame(cx)) {
                None => return Poll::Ready(FirstRead::Ended),
                Some(Err(error)) => return Poll::Ready(FirstRead::Failed(error.into())),
                Some(Ok(frame)) => frame,
            };
            match frame.into_data() {
                Ok(data) if data.is_empty() => {}
                Ok(data) => {
                    read.count(&data);
                    read.buffer.push(data);
                    if grpc::first_message_ready(read.buffer.as_slice(), cap) {
                        return Poll::Ready(FirstRead::Message);
                    }
                    // A message over several frames is joined into room
                    // for all of it, not grown frame by frame.
                    if let Some(whole) = grpc::message_length(read.buffer.as_slice()) {
                        read.buffer.reserve_total(whole);
                    }
                }
                Err(frame) => {
                    return Poll::Ready(FirstRead::Trailers(
                        frame.into_trailers().unwrap_or_default(),
                    ));
                }
            }
        }
    }

    /// The answer, once its first message is whole: the response resolves
    /// (the body then watches the trailers). Before one — trailers, an
    /// error, the end, also inside a first message cut short — nothing
    /// reached the caller: the trailers' status decides, or the answer is
    /// broken, and either can still be retried.
    fn first_message<C: Classifier>(
        mut self: Pin<Box<Self>>,
        first: FirstRead,
        classifier: &C,
        settings: &Settings,
        started: Instant,
    ) -> Result<Response<ClassifiedBody<B>>, BoxError> {
        let read = self.as_mut().read();
        let status = read.parts.status.as_u16();
        let cut_short = read.buffer.len() > 0;
        let broken = |read: &Read, message: &str| {
            let mut failure = Failure::new(Code::ProtocolViolation).with_message(message);
            read.fill(failure.evidence_mut(), started);
            Err(report(failure))
        };
        match first {
            FirstRead::Message => {
                let (first, parts) = read.hand_on();
                let body = ClassifiedBody::watching_trailers(
                    Some(first),
                    self,
                    status,
                    settings.quota_wall,
                );
                Ok(Response::from_parts(parts, body))
            }
            FirstRead::Failed(error) => Err(read_failure(classifier, settings, error, |e| {
                read.fill(e, started)
            })),
            FirstRead::Ended if cut_short => broken(
                read,
                "the gRPC answer ended inside its first message, without a grpc-status",
            ),
            FirstRead::Ended => broken(read, "the gRPC answer ended without a grpc-status"),
            FirstRead::Trailers(mut trailers) => {
                match grpc::trailers_status(status, &trailers, settings.quota_wall) {
                    // No whole message came before it: nothing was
                    // generated, whatever HTTP's 200 says.
                    grpc::Status::Failed(failure) => {
                        Err(read.conclude(failure.with_nothing_generated(), started))
                    }
                    grpc::Status::Ok if cut_short => broken(
                        read,
                        "the gRPC answer's trailers came inside its first message",
                    ),
                    grpc::Status::Ok => {
                        grpc::readable_details(&mut trailers);
                        let body = ClassifiedBody::read(Bytes::new(), Some(trailers));
                        Ok(Response::from_parts(read.take_parts(), body))
                    }
                    grpc::Status::Absent => broken(read, "the gRPC trailers carry no grpc-status"),
                }
            }
        }
    }
}

/// How a gRPC answer's reading up to its first message ended.
enum FirstRead {
    /// The first message is whole in the buffer, or its start if it is
    /// longer than the hold.
    Message,
    Trailers(HeaderMap),
    Failed(BoxError),
    Ended,
}

/// An error met reading a 2xx answer before anything was delivered: the
/// route accepted the request and its answer broke while read (a reset, a
/// decoder that found garbage), so an error nobody recognises here is the
/// answer's fault (`protocol_violation`, retried), not a reason to fail
/// closed.
fn read_failure<C: Classifier>(
    classifier: &C,
    settings: &Settings,
    error: BoxError,
    evidence: impl FnOnce(&mut Evidence),
) -> BoxError {
    let recognised = Failure::find(&*error).is_some()
        || transport_failure(&*error).is_some()
        || tonic_status_failure(&*error, settings).is_some()
        || classifier.classify_error(&*error).is_some();
    if !recognised {
        let mut failure = Failure::new(Code::ProtocolViolation)
            .with_message(&format!(
                "the 2xx answer broke while read: {}",
                chain_message(&*error)
            ))
            .with_cause(error);
        evidence(failure.evidence_mut());
        return report(failure);
    }
    classify_inner_error(classifier, settings, error, evidence)
}

/// Turns an error of the inner service or of a body read into a failure:
/// one that already holds a `Failure` passes unchanged; else the classifier,
/// then the transport rules, then `unknown` with the configured class.
pub(crate) fn classify_inner_error<C: Classifier>(
    classifier: &C,
    settings: &Settings,
    error: BoxError,
    evidence: impl FnOnce(&mut Evidence),
) -> BoxError {
    if Failure::find(&*error).is_some() {
        return error;
    }
    let failure = classifier
        .classify_error(&*error)
        .or_else(|| tonic_status_failure(&*error, settings))
        .or_else(|| transport_failure(&*error))
        .unwrap_or_else(|| {
            // The whole chain: a wrapper's words alone ("signing
            // middleware failed") hide why, and the cause is reachable
            // only through `Failure::cause`, which logs do not print.
            Failure::with_class(settings.unknown_errors, Code::Unknown)
                .with_message(&chain_message(&*error))
        });
    // The client's own error stays reachable under the verdict.
    let mut failure = failure.with_cause(error);
    evidence(failure.evidence_mut());
    report(failure)
}

/// A `tonic::Status` from a client layer below, read as the same status
/// on the wire (feature `tonic`).
fn tonic_status_failure(
    error: &(dyn std::error::Error + 'static),
    settings: &Settings,
) -> Option<Failure> {
    #[cfg(feature = "tonic")]
    return grpc::tonic_status_failure(error, settings.quota_wall);
    #[cfg(not(feature = "tonic"))]
    {
        let _ = (error, settings);
        None
    }
}

/// Emits the one event per classified failure and boxes it.
fn report(failure: Failure) -> BoxError {
    tracing::warn!(
        target: "seawall::classify",
        class = failure.class().as_str(),
        code = failure.code().as_str(),
        status = failure.status(),
        action = failure.action().as_str(),
        retry_after_ms = failure.retry_after().map(millis),
        "classified failure"
    );
    Box::new(failure)
}

/// Bytes read from a body: one chunk kept as is (the common case), more
/// chunks joined once.
enum Buffer {
    Empty,
    One(Bytes),
    Many(BytesMut),
}

impl Buffer {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Buffer::Empty => &[],
            Buffer::One(bytes) => bytes,
            Buffer::Many(bytes) => bytes,
        }
    }

    fn push(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        *self = match mem::replace(self, Buffer::Empty) {
            Buffer::Empty => Buffer::One(data),
            Buffer::One(first) => {
                let mut joined = BytesMut::with_capacity(first.len() + data.len());
                joined.extend_from_slice(&first);
                joined.extend_from_slice(&data);
                Buffer::Many(joined)
            }
            Buffer::Many(mut joined) => {
                joined.extend_from_slice(&data);
                Buffer::Many(joined)
            }
        };
    }

    /// Makes room for `total` bytes in all, once more than one frame is
    /// joined.
    fn reserve_total(&mut self, total: usize) {
        if let Buffer::Many(joined) = self {
            joined.reserve(total.saturating_sub(joined.len()));
        }
    }

    /// What was read, the buffer left empty.
    fn take(&mut self) -> Bytes {
        mem::replace(self, Buffer::Empty).into_bytes()
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Buffer::Empty => Bytes::new(),
            Buffer::One(bytes) => bytes,
            Buffer::Many(bytes) => bytes.freeze(),
        }
    }
}
