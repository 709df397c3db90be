//! The response body: the caller's one answer, continued across
//! interruptions.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame};
use pin_project_lite::pin_project;
use seawall_core::hint::RetryHint;
use seawall_core::provider::openai_responses::last_sequence_number;
use seawall_core::provider::{ErrorContext, Provider, classify_error};
use seawall_core::span::{SpanName, model_field, record_end};
use seawall_core::{
    BoxError, Class, ClosedBy, Code, Deadline, Failure, Receipt, RequestFacts, RouteId,
};
use seawall_stream::StreamReportHandle;
use serde_json::Value;
use tower_service::Service;

use crate::continuation::{
    AnthropicStyle, GeminiStyle, OpenAiStyle, Styles, continuation_with, never_resume, spend_budget,
};
use crate::future::Pending;
use crate::handoff::{AnsweredIn, Continuation};
use crate::layer::Config;
use crate::learned::Learned;
use crate::report::{ResumeRecord, Resumed};
use crate::service::ResumeRequestBody;
use crate::splice::{
    Alignment, Fix, Kind, align, align_in_place, align_prefill, carries_json_event, classify,
    classify_with, ends_at_boundary, last_boundary, last_boundary_since, names_a_response,
    names_member, response_id, rewrite, split_events,
};
use crate::translate::{Envelope, Speaker, can_translate};

pub(crate) const TARGET: &str = "seawall::resume";

/// How many frames after a first frame with a blank envelope are looked at
/// for one that says it.
const BLANK_FIRST_LOOKS: u8 = 4;

/// The most bytes of events held while a continuation lines up, per byte
/// of `max_head` (1 MiB by default): a continuation that sends events
/// without text, or restates the tail one short event at a time, is held
/// within it, then ends as misaligned.
const HELD_PER_HEAD: usize = 16;

/// The report's `gave_up` when the caller dropped the body while a
/// continuation had no outcome yet.
const CANCELLED: &str = Code::Cancelled.as_str();

pin_project! {
    /// The response body of [`Resume`](crate::Resume).
    ///
    /// For an answer that is not a 2xx event stream on a provider's generation
    /// endpoint, the inner body, untouched. For an event stream, the inner
    /// body's complete events as they arrive (an event cut by a frame boundary
    /// is held until its end), and, when the stream is interrupted in a way a
    /// continuation can fix, the continuation's events spliced in: its
    /// preamble dropped, the text it repeats trimmed. It ends like the last
    /// stream it read: `None` at its finish, or the interruption (with
    /// everything delivered across continuations) when it could not be
    /// resumed.
    pub struct ResumeBody<S, B, RB>
    where
        S: Service<Request<ResumeRequestBody<B>>>,
    {
        #[pin]
        kind: BodyKind<S, B, RB>,
    }
}

pin_project! {
    #[project = BodyKindProj]
    enum BodyKind<S, B, RB>
    where
        S: Service<Request<ResumeRequestBody<B>>>,
    {
        /// A body the layer cannot resume, pinned in place: every answer
        /// not resumed (unary completions, embeddings, GETs) passes here,
        /// and boxing it would cost each one an allocation. If it ends
        /// with an error, the report says why it was not resumed.
        Passthrough {
            #[pin]
            body: RB,
            unresumed: Option<(Resumed, &'static str)>,
        },
        /// Boxed: the state is large, and only an event stream carries it.
        Resuming { state: Box<State<S, B, RB>> },
    }
}

impl<S, B, RB> std::fmt::Debug for ResumeBody<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeBody")
            .field("resuming", &matches!(self.kind, BodyKind::Resuming { .. }))
            .finish_non_exhaustive()
    }
}

/// Where the current stream is in being spliced.
enum Segment {
    /// Complete events pass as they come.
    Pass,
    /// A continuation before its first content: nothing passes.
    Preamble,
    /// A continuation's first content, held until it lines up.
    Aligning {
        events: Vec<(Bytes, Kind)>,
        head: String,
        /// Bytes of the held events: events without text (pings, empty
        /// deltas, tool-call deltas) do not grow `head`, and are bounded
        /// here.
        held: usize,
    },
    /// A continuation whose events are rewritten to read as the rest of the
    /// original stream (Anthropic block index, Responses numbering, the
    /// OpenAI chat or Gemini envelope).
    Fixing,
    /// A continuation answered in another wire format, lined up: its text
    /// said again as the caller's format's text deltas.
    Translating,
}

enum Phase<F, B> {
    Live,
    Ready(Option<Box<Request<ResumeRequestBody<B>>>>),
    Calling(Pin<Box<F>>),
    Done,
}

struct State<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    config: Arc<Config>,
    /// How this answer's continuations ask: the layer's, or what a refusal
    /// taught the service for this route and model, until a model refuses
    /// its prefill or its last model turn.
    styles: Styles,
    /// The service's styles learned from refusals, looked up at the first
    /// resume (an answer never cut never takes its lock).
    learned: Arc<Learned>,
    /// The styles the service held for the request's route and model when
    /// this answer was first cut (the layer's, or what it learned): what a
    /// refusal on that route is learned onto, so a switch a fallback route
    /// made earlier in the answer is never learned under its key.
    own_styles: Styles,
    /// The request's own styles with its own format's refused turn
    /// replaced, to be learned once the request's own route answers a
    /// continuation asked in them.
    to_learn: Option<Styles>,
    /// The caller's wire format.
    provider: Provider,
    /// The wire format of the stream being read: the caller's, or a
    /// continuation's answered in another ([`AnsweredIn`]).
    protocol: Provider,
    /// The first frame the caller was shown with a JSON event in it
    /// (OpenAI chat, Gemini): the envelope (id, model, …) events said in
    /// its format take.
    first: Option<Bytes>,
    /// Frames still looked at for one whose envelope says something, when
    /// `first`'s is blank (Azure's first event, its prompt filter results,
    /// has an empty id): a few, not every frame of a stream that names
    /// none.
    blank_first_looks: u8,
    /// Says a continuation answered in another format in the caller's.
    speaker: Option<Speaker>,
    /// The decoder of a continuation answered in another format, one for
    /// its whole stream (what an event means may hang on one before it:
    /// an OpenAI refusal streamed, then ended with `stop`).
    foreign: Option<seawall_stream::protocol::Decoder>,
    /// The last finish that decoder read, said once the stream ended well
    /// if its guard's report names none.
    foreign_finish: Option<seawall_core::FinishKind>,
    /// The mark of the continuation in flight, as the routes were given it.
    asked: Option<Continuation>,
    service: S,
    head: Request<()>,
    original: Vec<Bytes>,
    original_json: Option<Option<Value>>,
    resumed: Resumed,
    body: Option<Pin<Box<RB>>>,
    report: Option<StreamReportHandle>,
    segment: Segment,
    /// The start of an event cut by a frame boundary.
    partial: BytesMut,
    /// A continuation's last event read ended with a CR (a blank line
    /// ended there, where an SSE reader dispatches it): an LF that starts
    /// the next frame is the rest of that CRLF, dropped as the scanner
    /// skips it, not a blank line read as an event of its own.
    skip_lf: bool,
    out: VecDeque<Bytes>,
    /// The last frame passed on, kept where continuations must be
    /// renumbered (Anthropic, Responses).
    tail: Option<Bytes>,
    /// The last frame passed on that says where the answer's text is
    /// (Responses: an event naming an output item), kept apart from
    /// `tail`: a `keepalive` after it (OpenAI sends them on long
    /// requests, and the guard's idle bound cuts after them) numbers the
    /// stream but names no place, and the place is learned from this.
    place: Option<Bytes>,
    fix: Option<Fix>,
    phase: Phase<S::Future, B>,
    /// The text the caller was shown before the current stream (and, as
    /// it is said, a continuation's answered in another format), kept up
    /// to the layer's `max_text`.
    delivered: String,
    /// `delivered` stopped at `max_text`: it is only a prefix of what the
    /// caller was shown, so no continuation can be built from it, and no
    /// event may say it as the caller's whole text.
    text_capped: bool,
    /// Bytes of the current stream's text trimmed as a repeat.
    trimmed: usize,
    /// Content events of the streams cut so far: each spent at least one
    /// token of the caller's output budget.
    spent: u64,
    resumes: u32,
    /// The first frame of a Responses API stream that names the response
    /// (`response.created`): a background response's stream is retrieved
    /// by its id, read from it only then (the event echoes the request's
    /// instructions and tools: no parse on the way).
    lifecycle: Option<Bytes>,
    /// Continuations the provider refused outright (a retrieval of a
    /// stream it did not keep, a prefill the model refuses): each was a
    /// way of asking, not a continuation, and gives its resume back.
    spare: u32,
    /// The continuation in flight retrieves the stored stream (a
    /// background response): its events are the original's own.
    retrieving: bool,
    /// The stored stream no longer continues the answer: the provider
    /// refused to retrieve it (not stored, expired), or a generated
    /// continuation took over (the response failed in the stream, or
    /// could not be retrieved by its id). The continuations are
    /// generated.
    no_retrieval: bool,
    /// The interruption being resumed.
    failure: Option<Failure>,
    final_error: Option<BoxError>,
    /// The span current when the answer reached the caller: each resume's
    /// span is its child (`Span::none()` without a subscriber).
    parent: tracing::Span,
    /// The span of the resume in flight, until its stream ends.
    span: tracing::Span,
}

impl<S, B, RB> ResumeBody<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    /// `body` passed as it comes: not a stream the layer resumes.
    pub(crate) fn passthrough(body: RB) -> Self {
        ResumeBody {
            kind: BodyKind::Passthrough {
                body,
                unresumed: None,
            },
        }
    }

    /// A stream passed as it comes; an error it ends with was not resumed
    /// for `why` (in `resumed`'s report).
    pub(crate) fn unresumed(body: RB, resumed: Resumed, why: &'static str) -> Self {
        ResumeBody {
            kind: BodyKind::Passthrough {
                body,
                unresumed: Some((resumed, why)),
            },
        }
    }

    pub(crate) fn resuming(
        pending: Pending<S, ()>,
        original: Vec<Bytes>,
        resumed: Resumed,
        body: RB,
        report: Option<StreamReportHandle>,
        parent: tracing::Span,
    ) -> Self {
        ResumeBody {
            kind: BodyKind::Resuming {
                state: Box::new(State {
                    protocol: pending.provider,
                    provider: pending.provider,
                    first: None,
                    blank_first_looks: BLANK_FIRST_LOOKS,
                    speaker: None,
                    foreign: None,
                    foreign_finish: None,
                    asked: None,
                    styles: pending.config.styles,
                    learned: pending.learned,
                    own_styles: pending.config.styles,
                    to_learn: None,
                    config: pending.config,
                    service: pending.service,
                    head: pending.head,
                    original,
                    original_json: None,
                    resumed,
                    body: Some(Box::pin(body)),
                    report,
                    segment: Segment::Pass,
                    partial: BytesMut::new(),
                    skip_lf: false,
                    out: VecDeque::new(),
                    tail: None,
                    place: None,
                    fix: None,
                    phase: Phase::Live,
                    delivered: String::new(),
                    text_capped: false,
                    trimmed: 0,
                    spent: 0,
                    resumes: 0,
                    lifecycle: None,
                    spare: 0,
                    retrieving: false,
                    no_retrieval: false,
                    failure: None,
                    final_error: None,
                    parent,
                    span: tracing::Span::none(),
                }),
            },
        }
    }
}

impl<S, B, RB> State<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
    RB: Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        loop {
            if let Some(bytes) = self.out.pop_front() {
                self.keep_tail(&bytes);
                return Poll::Ready(Some(Ok(Frame::data(bytes))));
            }
            match &mut self.phase {
                Phase::Done => return Poll::Ready(self.final_error.take().map(Err)),
                Phase::Live => {
                    let Some(body) = self.body.as_mut() else {
                        self.phase = Phase::Done;
                        continue;
                    };
                    let data = match ready!(body.as_mut().poll_frame(cx)) {
                        Some(Ok(frame)) => match frame.into_data() {
                            Ok(data) => data,
                            Err(frame) => return Poll::Ready(Some(Ok(frame))),
                        },
                        None => {
                            self.on_end();
                            continue;
                        }
                        Some(Err(error)) => {
                            self.on_error(error.into());
                            continue;
                        }
                    };
                    // The common frame: whole events, passed on as they came.
                    if matches!(self.segment, Segment::Pass)
                        && self.partial.is_empty()
                        && self.out.is_empty()
                        && ends_at_boundary(&data)
                    {
                        self.keep_tail(&data);
                        return Poll::Ready(Some(Ok(Frame::data(data))));
                    }
                    self.push(data);
                }
                Phase::Ready(request) => {
                    if let Err(error) = ready!(self.service.poll_ready(cx)) {
                        self.on_call_failed(error.into());
                        continue;
                    }
                    let request = request.take().expect("a request to send");
                    // The continuation's operation is the resume's child.
                    let service = &mut self.service;
                    let call = self.span.in_scope(|| service.call(*request));
                    self.phase = Phase::Calling(Box::pin(call));
                }
                Phase::Calling(call) => match ready!(self.span.in_scope(|| call.as_mut().poll(cx)))
                {
                    Ok(response) => self.on_continuation(response),
                    Err(error) => self.on_call_failed(error.into()),
                },
            }
        }
    }

    /// Keeps the last frame that numbers the answer's parts. A frame
    /// without them — a `ping` (Anthropic sends them while a stream
    /// stalls, right before an idle cut), a comment, a `message_delta` —
    /// would leave nothing to learn the open block from. In JSON text a
    /// quote is escaped, so the key's quoted name is found only as a key.
    #[inline]
    fn keep_tail(&mut self, bytes: &Bytes) {
        let key: &[u8] = match self.provider {
            Provider::Anthropic => b"\"index\"",
            Provider::OpenAiResponses => {
                if self.lifecycle.is_none() && names_a_response(bytes) {
                    self.lifecycle = Some(bytes.clone());
                }
                // Every event that is about an output item says its
                // `output_index` (a text delta, a content part, the item's
                // own `output_item.*`); a `keepalive`, a lifecycle event
                // does not. The sequence number is any event's.
                if memchr::memmem::find(bytes, b"\"output_index\"").is_some() {
                    self.place = Some(bytes.clone());
                }
                b"\"sequence_number\""
            }
            _ => {
                // The first frame with an event to learn the envelope from:
                // not a comment or keep-alive before it (OpenRouter's
                // `: OPENROUTER PROCESSING`); one whose envelope is blank
                // is replaced by the next few that say one.
                let names = |bytes: &[u8]| match self.provider {
                    Provider::OpenAi => names_member(bytes, "id"),
                    Provider::Gemini => names_member(bytes, "responseId"),
                    _ => true,
                };
                if self.first.is_none() {
                    if carries_json_event(bytes) {
                        self.first = Some(bytes.clone());
                        if names(bytes) {
                            self.blank_first_looks = 0;
                        }
                    }
                } else if self.blank_first_looks > 0 {
                    self.blank_first_looks -= 1;
                    if names(bytes) {
                        self.first = Some(bytes.clone());
                        self.blank_first_looks = 0;
                    }
                }
                return;
            }
        };
        if memchr::memmem::find(bytes, key).is_some() {
            self.tail = Some(bytes.clone());
        }
    }

    /// A continuation's event as the original stream would say it.
    fn fixed(&mut self, event: Bytes) -> Bytes {
        match self
            .fix
            .as_mut()
            .and_then(|fix| fix.apply(&event, &self.delivered))
        {
            Some(fixed) => fixed,
            None => event,
        }
    }

    /// Passes the complete events of `data`; holds an event cut by the
    /// frame's end.
    #[inline]
    fn push(&mut self, data: Bytes) {
        if !matches!(self.segment, Segment::Pass) {
            return self.push_spliced(data);
        }
        if self.partial.is_empty() {
            if ends_at_boundary(&data) {
                self.out.push_back(data);
                return;
            }
            match last_boundary(&data) {
                Some(end) => {
                    self.partial.extend_from_slice(&data[end..]);
                    self.out.push_back(data.slice(..end));
                }
                None => self.partial.extend_from_slice(&data),
            }
        } else {
            let searched = self.partial.len();
            self.partial.extend_from_slice(&data);
            if let Some(end) = last_boundary_since(&self.partial, searched) {
                self.out.push_back(self.partial.split_to(end).freeze());
            }
        }
    }

    /// A continuation's events: preamble dropped, head held until aligned.
    fn push_spliced(&mut self, mut data: Bytes) {
        if self.skip_lf && !data.is_empty() {
            self.skip_lf = false;
            if data[0] == b'\n' {
                data = data.slice(1..);
            }
        }
        let searched = self.partial.len();
        self.partial.extend_from_slice(&data);
        // No event ended in this frame: nothing to split, and the held
        // bytes are not copied again (a hostile endless line would cost
        // its length on every frame).
        if last_boundary_since(&self.partial, searched).is_none() {
            return;
        }
        let all = self.partial.split().freeze();
        let (events, rest) = split_events(&all);
        self.partial.extend_from_slice(&all[rest..]);
        self.skip_lf = rest == all.len() && all.ends_with(b"\r");
        for event in events {
            if matches!(self.phase, Phase::Done) {
                return;
            }
            match &mut self.segment {
                Segment::Pass => self.out.push_back(event),
                Segment::Fixing => {
                    let event = self.fixed(event);
                    self.out.push_back(event);
                }
                Segment::Translating => {
                    let kind = self.classify(&event);
                    self.translate(kind);
                }
                Segment::Preamble => match self.classify(&event) {
                    kind @ Kind::Content { .. } => {
                        self.segment = Segment::Aligning {
                            events: Vec::new(),
                            head: String::new(),
                            held: 0,
                        };
                        self.hold(event, kind);
                    }
                    // The model finished without more text (a cut just
                    // before the finish, or the budget spent): its finish
                    // and what follows end the original answer.
                    Kind::End if self.protocol != self.provider => {
                        self.segment = Segment::Translating;
                        self.translate(Kind::End);
                        if let Some(last) = self.resumed.lock().resumes.last_mut() {
                            last.spliced = true;
                        }
                    }
                    Kind::End => {
                        self.segment = if self.fix.is_some() {
                            Segment::Fixing
                        } else {
                            Segment::Pass
                        };
                        if let Some(fix) = self.fix.as_mut() {
                            if let Some(stop) = fix.close_open_block() {
                                self.out.push_back(stop);
                            }
                            if self.provider == Provider::OpenAiResponses {
                                fix.spliced_after(0);
                            }
                        }
                        let event = self.fixed(event);
                        self.out.push_back(event);
                        if let Some(last) = self.resumed.lock().resumes.last_mut() {
                            last.spliced = true;
                        }
                    }
                    Kind::Other => {}
                },
                Segment::Aligning { .. } => {
                    let kind = self.classify(&event);
                    self.hold(event, kind);
                }
            }
        }
    }

    fn hold(&mut self, event: Bytes, kind: Kind) {
        let Segment::Aligning { events, head, held } = &mut self.segment else {
            return;
        };
        *held += event.len();
        let complete = matches!(kind, Kind::Content { finish: true, .. } | Kind::End);
        if let Kind::Content {
            text: Some(text), ..
        } = &kind
        {
            head.push_str(text);
        }
        events.push((event, kind));
        self.try_align(complete);
    }

    /// Lines the held head up with the delivered text, when it can.
    fn try_align(&mut self, complete: bool) {
        let Segment::Aligning { head, held, events } = &mut self.segment else {
            return;
        };
        // A continuation that opens with a tool call (the text was whole
        // at the cut) repeats nothing: there is nothing to line up, and
        // holding the call whole would only fill the hold.
        let opens_with_act = head.is_empty()
            && matches!(events.first(), Some((_, Kind::Content { text: None, .. })));
        // A server continuing the final message in place was given the
        // delivered text right-stripped and generates only what follows
        // it: whatever resembles the tail is new text, and trimming it
        // would delete some (a word said again), all but the whitespace
        // it writes anew. How the continuation asked is the answering
        // format's (a route of another format continued with the same
        // styles).
        let in_place = self.protocol == Provider::OpenAi
            && self.styles.openai == OpenAiStyle::ContinueFinalMessage;
        // A model given its own turn last continues that turn: Claude
        // its prefill, Gemini its `model` turn (asked to continue in a
        // user turn after it, it writes a new reply instead).
        let prefill = match self.protocol {
            Provider::Anthropic => self.styles.anthropic == AnthropicStyle::Prefill,
            Provider::Gemini => self.styles.gemini == GeminiStyle::ModelTurn,
            _ => false,
        };
        let alignment = if opens_with_act {
            Some(Alignment::Trim(0))
        } else if head.len() > self.config.max_head
            || *held > self.config.max_head.saturating_mul(HELD_PER_HEAD)
        {
            Some(Alignment::Misaligned)
        } else if in_place {
            align_in_place(&self.delivered, head, complete)
        } else if prefill {
            align_prefill(&self.delivered, head, self.config.align_window, complete)
        } else {
            align(&self.delivered, head, self.config.align_window, complete)
        };
        let trim = match alignment {
            None => return,
            Some(Alignment::Misaligned) => return self.misaligned(),
            Some(Alignment::Trim(trim)) => trim,
        };
        let Segment::Aligning { events, head, .. } =
            std::mem::replace(&mut self.segment, Segment::Pass)
        else {
            return;
        };
        if self.protocol != self.provider {
            // Another format's events: the text they keep, said anew.
            self.segment = Segment::Translating;
            let mut left = trim;
            for (_, kind) in events {
                let kind = match kind {
                    Kind::Content {
                        text: Some(text),
                        finish,
                        act,
                    } if left > 0 => {
                        let keep = text[left.min(text.len())..].to_owned();
                        left = left.saturating_sub(text.len());
                        Kind::Content {
                            text: Some(keep),
                            finish,
                            act,
                        }
                    }
                    kind => kind,
                };
                self.translate(kind);
                if matches!(self.phase, Phase::Done) {
                    return;
                }
            }
            return self.spliced(trim, &head);
        }
        let mut edge = None;
        if let (Some(fix), Some((event, kind))) = (self.fix.as_mut(), events.first()) {
            let text = matches!(kind, Kind::Content { text: Some(_), .. });
            fix.first_content(event, text);
            // A block after the continued one: the continued one ends here.
            // Text after a block the caller saw closed: a block of its own.
            // Shown only once the continuation is spliced in.
            edge = match text {
                false => fix.close_open_block(),
                true => fix.text_after_a_closed_block(),
            };
        }
        let mut left = trim;
        let mut spliced = Vec::with_capacity(events.len());
        for (event, kind) in events {
            match kind {
                Kind::Content {
                    text: Some(text),
                    finish,
                    act,
                } if left > 0 => {
                    // An event that repeats only text the caller holds is
                    // dropped; one that carries a call (or the finish) too
                    // is kept with its text cut.
                    if left >= text.len() && !finish && !act {
                        left -= text.len();
                        continue;
                    }
                    let keep = &text[left.min(text.len())..];
                    left = left.saturating_sub(text.len());
                    match rewrite(self.provider, &event, keep) {
                        Some(event) => spliced.push(event),
                        None => return self.misaligned(),
                    }
                }
                _ => spliced.push(event),
            }
        }
        if let Some(fix) = self.fix.as_mut() {
            self.segment = Segment::Fixing;
            // Before the held events go: a short continuation's whole-text
            // events may be among them.
            if self.provider == Provider::OpenAiResponses {
                fix.spliced_after(trim);
            }
        }
        self.out.extend(edge);
        for event in spliced {
            let event = self.fixed(event);
            self.out.push_back(event);
        }
        self.spliced(trim, &head);
    }

    /// The continuation is spliced in, its first `trim` bytes of `head`
    /// dropped as a repeat.
    fn spliced(&mut self, trim: usize, head: &str) {
        self.trimmed = trim;
        let trimmed_chars = head[..trim].chars().count() as u64;
        self.span.record("seawall.trimmed_chars", trimmed_chars);
        if let Some(last) = self.resumed.lock().resumes.last_mut() {
            last.trimmed_chars = trimmed_chars;
            last.spliced = true;
        }
        tracing::debug!(target: TARGET, trimmed = trim, "continuation spliced in");
    }

    /// What a continuation's event means: read in the stream's format,
    /// with the stream's one decoder when it is another format's (which
    /// keeps the finish it read for the end).
    fn classify(&mut self, event: &[u8]) -> Kind {
        let Some(decoder) = self.foreign.as_mut() else {
            return classify(self.protocol, event);
        };
        let (kind, finish) = classify_with(decoder, event);
        if finish.is_some() {
            self.foreign_finish = finish;
        }
        kind
    }

    /// One event of a continuation answered in another format, `kind` its
    /// meaning (its text what is left of it once lined up): its text said
    /// in the caller's format (its finish was kept as it was read).
    /// Content that is not text (a tool call) cannot be said: the body
    /// ends with the interruption, everything said so far delivered.
    fn translate(&mut self, kind: Kind) {
        match kind {
            Kind::Content { act: true, .. } => self.give_up("another_format"),
            Kind::Content {
                text: Some(text), ..
            } => self.say(&text),
            _ => {}
        }
    }

    /// `text` as the caller's format's text delta, and delivered.
    fn say(&mut self, text: &str) {
        if text.is_empty() || self.speaker.is_none() {
            return;
        }
        let mut index = 0;
        if self.provider == Provider::Anthropic {
            let fix = self.fix.get_or_insert_with(Fix::default);
            // The caller saw the text block closed (a cut between its
            // stop and the finish): the text goes in a block of its own.
            if let Some(start) = fix.text_after_a_closed_block() {
                self.out.push_back(start);
            }
            index = fix.text_index();
        }
        if let Some(speaker) = self.speaker.as_mut() {
            self.out.push_back(speaker.text(text, index));
        }
        self.keep(text);
    }

    /// Adds `text` to what was delivered, up to `max_text` (as the guard
    /// keeps its own record): past it the caller is still shown the text,
    /// but no more of it is kept, and the record says it is a prefix. A
    /// continuation in another format is read by no guard of the caller's
    /// stream, so this is its only bound.
    fn keep(&mut self, text: &str) {
        if self.text_capped {
            return;
        }
        let room = self.config.max_text.saturating_sub(self.delivered.len());
        if text.len() <= room {
            self.delivered.push_str(text);
            return;
        }
        self.text_capped = true;
        self.delivered.push_str(seawall_core::excerpt(text, room));
    }

    /// A continuation answered in another format ended well: the caller's
    /// format's finish and end events, or, for a finish it has no word
    /// for, the interruption.
    fn end_translated(&mut self) {
        let report = self.report.as_ref().and_then(|r| r.get());
        let usage = report.and_then(|r| r.usage);
        // The guard read the whole stream: its finish first, then the
        // one this stream's decoder read, or the one it implies.
        let implied = self
            .foreign
            .as_ref()
            .and_then(|decoder| decoder.implied_finish().map(|reason| reason.kind));
        let kind = report
            .and_then(|r| r.finish_kind())
            .or(self.foreign_finish)
            .or(implied);
        // The Responses API's end events say the caller's whole text: a
        // prefix said there would read as the complete answer. The answer
        // ends as a text too long to keep does in the caller's own format:
        // with the interruption, the text kept marked as a prefix.
        if self.text_capped && self.speaker.as_ref().is_some_and(Speaker::says_whole_text) {
            return self.give_up("text_not_kept");
        }
        let said = match (self.speaker.as_mut(), kind) {
            (Some(speaker), Some(kind)) => speaker
                .finish(kind, usage, &self.delivered)
                .map(|said| (kind, said)),
            _ => None,
        };
        let Some((kind, (events, reason))) = said else {
            return self.give_up("another_format");
        };
        if let Some(stop) = self.fix.as_mut().and_then(Fix::close_open_block) {
            self.out.push_back(stop);
        }
        self.out.extend(events);
        let finish = seawall_core::Finish::new(kind, reason);
        record_end(&self.span, Some(&finish), usage, None);
        self.resumed.lock().finish = Some(finish);
        self.partial.clear();
        self.body = None;
        self.phase = Phase::Done;
    }

    /// The continuation cannot be lined up: end with the interruption.
    fn misaligned(&mut self) {
        tracing::debug!(target: TARGET, "continuation does not line up; ending with the interruption");
        self.segment = Segment::Pass;
        self.give_up("misaligned");
    }

    /// Why the layer gave up, in the report and on the resume's span, and
    /// said ([`say_not_resumed`]) in that span — or, when the first cut
    /// was refused and no resume opened one, in the span the answer is
    /// read in: `seawall.gave_up` is not a field of that span, and cannot
    /// be recorded on it.
    fn mark_gave_up(&self, reason: &'static str) {
        let route = {
            let mut report = self.resumed.lock();
            report.gave_up = Some(reason);
            report.resumes.last().and_then(|r| r.route.clone())
        };
        self.span.record("seawall.gave_up", reason);
        let route = route.unwrap_or_else(|| RouteId::of_request(&self.head));
        let current;
        let on = if !self.span.is_none() {
            &self.span
        } else if !self.parent.is_none() {
            &self.parent
        } else {
            current = tracing::Span::current();
            &current
        };
        say_not_resumed(
            reason,
            loses_answer(reason, self.resumes > 0),
            Some(&route),
            on,
        );
    }

    /// Ends the body with the interruption being resumed, everything
    /// delivered in its record.
    fn give_up(&mut self, reason: &'static str) {
        self.body = None;
        self.partial.clear();
        self.mark_gave_up(reason);
        if let Some(failure) = &self.failure {
            record_end(&self.span, None, None, Some(failure.code()));
        }
        if let Some(failure) = self.failure.take() {
            self.final_error = Some(Box::new(self.with_delivered(failure)));
        }
        self.phase = Phase::Done;
    }

    /// [`give_up`](Self::give_up), the interruption's message saying `why`.
    fn give_up_because(&mut self, reason: &'static str, why: &str) {
        if let Some(failure) = self.failure.take() {
            let message = match failure.message() {
                Some(message) => format!("{message}; {why}"),
                None => why.to_owned(),
            };
            self.failure = Some(failure.with_message(&message));
        }
        self.give_up(reason);
    }

    /// `failure` with everything delivered across continuations.
    fn with_delivered(&self, mut failure: Failure) -> Failure {
        if let Some(mut interrupted) = failure.interrupted().cloned() {
            interrupted.delivered_text = Some(self.delivered.clone());
            interrupted.text_capped |= self.text_capped;
            failure = failure.with_interrupted(interrupted);
        }
        failure
    }

    /// A Gemini stream's last event, which it ended cleanly without its
    /// blank line (or its line end): Google's reader takes it as an event
    /// when it reads whole, and so did the guard
    /// (`sse::at_end_of_stream`: its text is in what was delivered). It
    /// goes on as an event. One that reads as no JSON was cut by the end:
    /// the guard read none of it, and it is dropped.
    fn push_unended_gemini_event(&mut self) {
        if self.protocol != Provider::Gemini || self.partial.is_empty() {
            return;
        }
        let mut whole = std::mem::take(&mut self.partial);
        whole.extend_from_slice(b"\n\n");
        if events_read_whole(&whole) {
            self.push(whole.freeze());
        }
    }

    fn on_end(&mut self) {
        // A continuation answered in another format reads its last events
        // here, or would lose their text under a finish that calls the
        // answer complete (the caller's own format's stream passes its
        // held bytes on as they came).
        if self.protocol != self.provider {
            self.push_unended_gemini_event();
        }
        if matches!(self.segment, Segment::Preamble) {
            // A continuation that ends without one content event the layer
            // can read (another wire format, say) continued nothing: the
            // answer is still cut, never cleanly ended.
            return self.give_up("no_content");
        }
        self.try_align(true);
        if matches!(self.phase, Phase::Done) {
            return;
        }
        if self.protocol != self.provider {
            return self.end_translated();
        }
        if !self.partial.is_empty() {
            self.out.push_back(self.partial.split().freeze());
        }
        let report = self.report.as_ref().and_then(|r| r.get());
        let finish = report.and_then(|r| r.finish.clone());
        record_end(
            &self.span,
            finish.as_ref(),
            report.and_then(|r| r.usage),
            None,
        );
        self.resumed.lock().finish = finish;
        self.body = None;
        self.phase = Phase::Done;
    }

    /// Whether the body error `error` is an interruption to resume now.
    fn check(&mut self, error: &BoxError) -> Result<(), &'static str> {
        let failure = continuable(error)?;
        if !self.resumes_left() {
            return Err("max_resumes");
        }
        if let Some(deadline) = Deadline::of(&self.head)
            && (deadline.is_expired() || deadline.remaining() < self.config.min_remaining)
        {
            return Err("deadline");
        }
        // The stored stream's own events need no text to continue from
        // (a reasoning model cut while it thinks included), and carry a
        // tool call or a JSON answer on as they were — when only the
        // connection was cut. A response the provider failed in the
        // stream failed in storage too: it is continued, if at all, as a
        // generated continuation, within that one's limits.
        if connection_cut(failure) && self.retrievable() {
            return Ok(());
        }
        self.unresumable(failure)
    }

    /// Whether another continuation may be sent.
    fn resumes_left(&self) -> bool {
        self.resumes < self.config.max_resumes.saturating_add(self.spare)
    }

    /// Why the interruption `failure` cannot be continued by a generated
    /// request, if it cannot.
    fn unresumable(&mut self, failure: &Failure) -> Result<(), &'static str> {
        let interrupted = failure.interrupted().ok_or("not_resumable")?;
        // The guard handed a long hold on before any content (a model
        // thinking at length): there is no text to continue from.
        if interrupted.content_events == 0 {
            return Err("no_content");
        }
        if interrupted.tool_call_events > 0 {
            return Err("tool_call");
        }
        // A continuation is built from the whole delivered text: one that
        // passed the cap (said from another format) cannot be.
        if interrupted.text_capped || interrupted.delivered_text.is_none() || self.text_capped {
            return Err("text_not_kept");
        }
        let provider = self.provider;
        match self.original_json() {
            None => Err("not_json"),
            Some(json) => match never_resume(provider, json) {
                Some(reason) => Err(reason),
                None => Ok(()),
            },
        }
    }

    /// Whether the answer is a Responses API background response whose
    /// stream the provider keeps: then a continuation retrieves the rest of
    /// that very stream (`GET /v1/responses/{id}?stream=true&starting_after=N`,
    /// the API's documented resumption) instead of generating it again.
    fn retrievable(&mut self) -> bool {
        if self.provider != Provider::OpenAiResponses
            || self.no_retrieval
            || self.lifecycle.is_none()
        {
            return false;
        }
        self.original_json().is_some_and(|json| {
            json.get("background") == Some(&Value::Bool(true))
                && json.get("stream") == Some(&Value::Bool(true))
        })
    }

    /// The request that retrieves the stored stream after its event
    /// `after`, or `None` when the id cannot go in a path as it is.
    fn retrieval(&self, after: u64) -> Option<Request<ResumeRequestBody<B>>> {
        let id = response_id(self.lifecycle.as_ref()?)?;
        if !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
        {
            return None;
        }
        let uri = self.head.uri();
        let mut target = format!("{}/{id}?", uri.path().trim_end_matches('/'));
        if let Some(query) = uri.query().filter(|q| !q.is_empty()) {
            target.push_str(query);
            target.push('&');
        }
        target.push_str(&format!("stream=true&starting_after={after}"));
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = Some(target.parse().ok()?);
        let mut request = Request::new(ResumeRequestBody::continuation(Bytes::new()));
        *request.method_mut() = http::Method::GET;
        *request.uri_mut() = http::Uri::from_parts(parts).ok()?;
        *request.version_mut() = self.head.version();
        *request.headers_mut() = self.head.headers().clone();
        for name in [
            http::header::CONTENT_LENGTH,
            http::header::CONTENT_TYPE,
            http::header::TRANSFER_ENCODING,
        ] {
            request.headers_mut().remove(name);
        }
        self.config.strip_idempotency_keys(request.headers_mut());
        Some(request)
    }

    /// Whether the provider stores the Responses API answers of this
    /// request: `store` is true unless the request says `false`.
    fn stores_responses(&mut self) -> bool {
        self.provider == Provider::OpenAiResponses
            && self
                .original_json()
                .is_some_and(|json| json.get("store") != Some(&Value::Bool(false)))
    }

    /// The model the request names, as the layers below read it.
    fn model(&self) -> Option<&str> {
        self.head
            .extensions()
            .get::<RequestFacts>()
            .and_then(RequestFacts::model)
    }

    fn original_json(&mut self) -> Option<&Value> {
        let original = &self.original;
        self.original_json
            .get_or_insert_with(|| match original.as_slice() {
                [one] => serde_json::from_slice(one).ok(),
                chunks => serde_json::from_slice(&chunks.concat()).ok(),
            })
            .as_ref()
    }

    fn on_error(&mut self, error: BoxError) {
        // A Gemini stream's unended last event goes on before anything
        // continues it; the guard read no event of a stream cut any other
        // way (a reset).
        if Failure::find(&*error).is_some_and(|failure| failure.code() == Code::Truncated) {
            self.push_unended_gemini_event();
        }
        // What this stream showed, trimmed of its repeat, joins the rest.
        self.try_align(true);
        if matches!(self.phase, Phase::Done) {
            return;
        }
        self.partial.clear();
        let verdict = self.check(&error);
        let failure = Failure::find(&*error).cloned();
        // The stream this resume's span stands for ended with `error`.
        let usage = self
            .report
            .as_ref()
            .and_then(|r| r.get())
            .and_then(|r| r.usage);
        let code = failure.as_ref().map_or(Code::Unknown, Failure::code);
        record_end(&self.span, None, usage, Some(code));
        if let Some(interrupted) = failure.as_ref().and_then(Failure::interrupted) {
            self.spent += interrupted.content_events;
        }
        if let Some(text) = failure
            .as_ref()
            .and_then(Failure::interrupted)
            .and_then(|i| i.delivered_text.as_deref())
            && !matches!(self.segment, Segment::Preamble)
            // Text said in the caller's format was delivered as it was said.
            && self.protocol == self.provider
        {
            self.delivered
                .push_str(text.get(self.trimmed..).unwrap_or_default());
        }
        match (verdict, failure) {
            (Ok(()), Some(failure)) => {
                self.failure = Some(failure);
                self.resume();
            }
            (verdict, failure) => {
                let reason = verdict.err().unwrap_or("not_resumable");
                self.mark_gave_up(reason);
                self.final_error = Some(match failure {
                    Some(failure) if self.resumes > 0 => Box::new(self.with_delivered(failure)),
                    _ => error,
                });
                self.body = None;
                self.phase = Phase::Done;
            }
        }
    }

    /// The span of one resume, a child of the span the answer is read in,
    /// with the attempt spans' field names (OpenTelemetry's GenAI
    /// attributes); the continuation's operation is its child.
    fn resume_span(&self, cause: Code, delivered_chars: u64) -> tracing::Span {
        if self.parent.is_none() {
            return tracing::Span::none();
        }
        let operation = match self.provider {
            Provider::Gemini => "generate_content",
            _ => "chat",
        };
        let model = self.model();
        tracing::info_span!(
            target: TARGET,
            parent: &self.parent,
            "resume",
            otel.name = %SpanName { operation, model },
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = operation,
            gen_ai.provider.name = self
                .provider
                .genai_name(self.head.uri().host().unwrap_or_default()),
            gen_ai.request.model = model.map(model_field).as_deref(),
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
            error.type = tracing::field::Empty,
            seawall.resume = self.resumes,
            seawall.cause = cause.as_str(),
            seawall.delivered_chars = delivered_chars,
            seawall.trimmed_chars = tracing::field::Empty,
            seawall.gave_up = tracing::field::Empty,
        )
    }

    /// Sends the next continuation of the interruption in `self.failure`.
    fn resume(&mut self) {
        let Some(failure) = &self.failure else {
            return self.give_up("not_resumable");
        };
        if !self.resumes_left() {
            return self.give_up("max_resumes");
        }
        if Deadline::of(&self.head)
            .is_some_and(|d| d.is_expired() || d.remaining() < self.config.min_remaining)
        {
            return self.give_up("deadline");
        }
        let cause = failure
            .interrupted()
            .and_then(|i| i.cause)
            .unwrap_or(failure.code());
        // Only a cut connection leaves the rest in the stored stream: past
        // the cursor of a response the provider failed in the stream
        // (`response.failed`, an `error` event) is that same failure,
        // replayed at the cost of a request per resume.
        let cut = connection_cut(failure);
        if self.resumes == 0 {
            let route = RouteId::of_request(&self.head);
            self.styles = self.learned.styles(&route, self.model(), self.styles);
            self.own_styles = self.styles;
        }
        // What is queued for the caller but not yet taken (a continuation
        // cut while it was lining up, its held events flushed) is the
        // latest the caller will see: the next continuation follows it.
        let queued: Vec<Bytes> = self.out.iter().cloned().collect();
        for frame in &queued {
            self.keep_tail(frame);
        }
        let after = self.tail.as_deref().and_then(last_sequence_number);
        let retrieval = match after {
            Some(after) if cut && self.retrievable() => self.retrieval(after),
            _ => None,
        };
        self.retrieving = retrieval.is_some();
        let mut request = match retrieval {
            Some(request) => request,
            None => {
                // A generated continuation's events are spliced into the
                // stream and renumbered: past it, the original's stored
                // stream (its id, its numbering) is no longer what the
                // caller reads, and a later cut is continued as this one.
                self.no_retrieval = true;
                // Retrieval was the reason the limits of a generated
                // continuation were not checked.
                if let Some(failure) = self.failure.clone()
                    && let Err(reason) = self.unresumable(&failure)
                {
                    return self.give_up(reason);
                }
                match self.generated() {
                    Ok(request) => request,
                    Err(reason) => return self.give_up(reason),
                }
            }
        };
        *request.extensions_mut() = self.head.extensions().clone();
        // A continuation may rightly bring only a finish: the guard must
        // deliver it, not retry it as an empty answer.
        if let Some(facts) = request.extensions_mut().get_mut::<RequestFacts>() {
            *facts = facts.clone().continuing();
        }
        // A retrieved stream numbers its events itself; the tail stays for
        // the next retrieval's cursor.
        if !self.retrieving {
            // OpenAI chat and Gemini events each say the answer's id (and
            // creation time, model): a continuation's say the original's,
            // as text said from another format does. Learned once, at the
            // first resume: only events after a seam are rewritten.
            if self.fix.is_none() {
                let envelope = Envelope::of(self.provider, self.first.as_ref());
                if !envelope.is_empty() {
                    self.fix = Some(Fix::under(envelope));
                }
            }
            let stored = self.stores_responses();
            // Where the text is, from the last frame that said it, then
            // the numbering from the last frame of all (a keep-alive after
            // the text): learned in that order, each keeps what the
            // other said where it says nothing.
            let (place, tail) = (self.place.take(), self.tail.take());
            let same = |a: &Bytes, b: &Bytes| a.as_ptr() == b.as_ptr() && a.len() == b.len();
            let place = place.filter(|place| tail.as_ref().is_none_or(|tail| !same(place, tail)));
            let shown: Vec<Bytes> = place.into_iter().chain(tail).collect();
            if shown.is_empty() {
                // Nothing new was shown: the numbers stay, but the next
                // continuation's own are its own.
                if let Some(fix) = self.fix.as_mut() {
                    fix.next_continuation();
                }
            } else {
                let fix = self.fix.get_or_insert_with(Fix::default);
                for frame in &shown {
                    fix.learn(self.provider, frame);
                }
                // A stored continuation's terminal response keeps its own
                // id: that stored response holds the whole answer (the
                // question, the delivered text as an assistant item, the
                // rest), where the original holds only its cut part, if it
                // was kept at all. A caller chaining the next turn
                // (`previous_response_id`) from the id the stream ended
                // with chains from what it was shown. Unstored, neither
                // can be chained from: the answer keeps the one id it
                // opened with.
                if !stored {
                    fix.of_response(self.lifecycle.as_ref().and_then(response_id));
                }
            }
        }
        // A route that sends the operation elsewhere (another model,
        // another wire format) continues its own request from this.
        self.asked = (!self.retrieving).then(|| {
            Continuation::new(
                self.provider,
                Arc::from(self.delivered.as_str()),
                self.resumes.saturating_add(1),
                self.spent,
                self.styles,
            )
        });
        if let Some(asked) = &self.asked {
            request.extensions_mut().insert(asked.clone());
        }
        self.resumes += 1;
        let delivered_chars = self.delivered.chars().count() as u64;
        tracing::debug!(
            target: TARGET,
            attempt = self.resumes,
            delivered_chars,
            cause = %cause,
            "resuming an interrupted stream"
        );
        self.span = self.resume_span(cause, delivered_chars);
        self.resumed.lock().resumes.push(ResumeRecord {
            attempt: self.resumes,
            route: None,
            delivered_chars,
            cause,
            failed: None,
            spliced: false,
            retrieved: self.retrieving,
            trimmed_chars: 0,
            answered_in: None,
            receipt: None,
        });
        self.body = None;
        self.phase = Phase::Ready(Some(Box::new(request)));
    }

    /// The continuation asked of the model: the original request with the
    /// delivered text as the answer's start, its output budget lowered.
    fn generated(&mut self) -> Result<Request<ResumeRequestBody<B>>, &'static str> {
        let (provider, styles) = (self.provider, self.styles);
        let delivered = std::mem::take(&mut self.delivered);
        let next = self
            .original_json()
            .map(|json| continuation_with(provider, json, &delivered, &styles));
        self.delivered = delivered;
        let Some(Ok(mut next)) = next else {
            return Err("not_json");
        };
        if !spend_budget(provider, &mut next, self.spent) {
            // The original would have ended with `length` by now.
            return Err("max_tokens");
        }
        let bytes = Bytes::from(serde_json::to_vec(&next).expect("JSON values serialize"));
        let mut request = Request::new(ResumeRequestBody::continuation(bytes.clone()));
        *request.method_mut() = self.head.method().clone();
        *request.uri_mut() = self.head.uri().clone();
        *request.version_mut() = self.head.version();
        *request.headers_mut() = self.head.headers().clone();
        self.config.strip_idempotency_keys(request.headers_mut());
        request.headers_mut().insert(
            http::header::CONTENT_LENGTH,
            HeaderValue::from(bytes.len() as u64),
        );
        Ok(request)
    }

    fn on_continuation(&mut self, response: Response<RB>) {
        let receipt = response.extensions().get::<Receipt>();
        let route = receipt
            .and_then(|r| r.attempts.last().map(|a| a.route.clone()))
            .unwrap_or_else(|| RouteId::of_request(&self.head));
        // A retrieval reads what was generated: nothing is billed again.
        let receipt = receipt.cloned().map(|mut receipt| {
            if self.retrieving {
                for attempt in receipt.attempts.as_mut_slice() {
                    attempt.billed = false;
                }
            }
            receipt
        });
        let status = response.status();
        if !status.is_success() {
            if let Some(last) = self.resumed.lock().resumes.last_mut() {
                last.receipt = receipt;
            }
            // No classifier below said what this status means: the shared
            // status table does (a 404 for a response not kept is for
            // good, a 429 or a 5xx for now).
            let now = std::time::SystemTime::now();
            let cx = ErrorContext {
                status: Some(status.as_u16()),
                hint: RetryHint::for_status(status.as_u16(), response.headers(), now),
                quota_wall: self.config.quota_wall.unwrap_or_default(),
                now,
            };
            return self.on_call_failed(Box::new(classify_error(self.provider, &[], cx)));
        }
        seawall_core::span::record_address(&self.span, &route);
        let own_route = route == RouteId::of_request(&self.head);
        if let Some(last) = self.resumed.lock().resumes.last_mut() {
            last.route = Some(route);
            last.receipt = receipt;
            last.spliced = self.retrieving;
        }
        // A route of another wire format answered: read in its format,
        // said in the caller's — where the caller's format can be said.
        let answered = AnsweredIn::of(&response)
            .filter(|_| !self.retrieving)
            .unwrap_or(self.provider);
        // Only the request's own route answering in its own format took
        // the user turn its model is to be asked in; a fallback route's
        // answer says nothing of that model, and the switch stays pending.
        if own_route
            && answered == self.provider
            && let Some(styles) = self.to_learn.take()
        {
            let route = RouteId::of_request(&self.head);
            self.learned.learn(route, self.model(), styles);
        }
        self.protocol = answered;
        self.foreign = (answered != self.provider).then(|| {
            seawall_stream::protocol::Decoder::new(answered)
                .within_answer()
                .with_quota_wall(self.config.quota_wall.unwrap_or_default())
        });
        self.foreign_finish = None;
        self.speaker = None;
        if answered != self.provider {
            if let Some(last) = self.resumed.lock().resumes.last_mut() {
                last.answered_in = Some(answered);
            }
            if !can_translate(self.provider, answered) {
                return self.give_up("another_format");
            }
            let (first, lifecycle) = (self.first.clone(), self.lifecycle.clone());
            let (fix, provider) = (self.fix.clone(), self.provider);
            let original = self.original_json();
            let speaker = Speaker::new(
                provider,
                first.as_ref(),
                original,
                fix.as_ref(),
                lifecycle.as_ref(),
            );
            self.speaker = speaker;
            if self.speaker.is_none() {
                return self.give_up("another_format");
            }
        }
        self.report = response.extensions().get::<StreamReportHandle>().cloned();
        self.body = Some(Box::pin(response.into_body()));
        // The stored stream's events after the cursor are the rest of the
        // original, numbered and named as it was: they pass as they come.
        self.segment = if self.retrieving {
            Segment::Pass
        } else {
            Segment::Preamble
        };
        self.trimmed = 0;
        self.partial.clear();
        self.skip_lf = false;
        self.phase = Phase::Live;
    }

    /// A continuation failed before content: another, within the bounds.
    fn on_call_failed(&mut self, error: BoxError) {
        let failed = Failure::find(&*error);
        let code = failed.map_or(Code::Unknown, Failure::code);
        // The route whose failure this is: not the receipt's last attempt,
        // which may be a fallback's route skipped without a call (cooling
        // down) after the primary failed. The last attempt that called an
        // upstream where the failure names no route.
        let route = failed.and_then(Failure::route).cloned().or_else(|| {
            failed
                .and_then(Failure::receipt)
                .and_then(|r| r.attempts.iter().rev().find(|a| a.was_sent()))
                .map(|a| a.route.clone())
        });
        let route = route.unwrap_or_else(|| RouteId::of_request(&self.head));
        let own_route = route == RouteId::of_request(&self.head);
        // The way of asking that replaced a refused one failed too.
        self.to_learn = None;
        seawall_core::span::record_address(&self.span, &route);
        record_end(&self.span, None, None, Some(code));
        if let Some(last) = self.resumed.lock().resumes.last_mut() {
            last.failed = Some(code);
            last.route = Some(route);
            if let Some(receipt) = failed.and_then(Failure::receipt) {
                last.receipt = Some(receipt.clone());
            }
        }
        tracing::debug!(target: TARGET, code = %code, "continuation failed before content");
        // A route declined to build its own request's continuation, for a
        // reason the layer gives up for too (its budget spent, a request
        // never continued): the record says that reason, not the failure
        // the route answered with.
        if let Some(reason) = self.asked.as_ref().and_then(Continuation::declined) {
            return self.give_up(reason);
        }
        // The provider would not give the stored stream (not stored,
        // expired, retrieval unsupported by a compatible server): the
        // continuation is generated instead.
        if self.retrieving && failed.is_some_and(|failure| failure.class() != Class::Transient) {
            self.retrieving = false;
            self.no_retrieval = true;
            self.spare += 1;
            return self.resume();
        }
        // The retry budget pays for a resume as for a retry, and had no
        // token for this one: another would be refused alike.
        if code == Code::BudgetExhausted {
            return self.give_up_because(
                "budget",
                "not resumed: the retry budget had no token for a resume",
            );
        }
        // A request ending with the model's own turn is one some models
        // refuse with a 400: Claude 4.6 and later any prefill ("Prefilling
        // is not supported on Claude 4.6 and later models", the Messages
        // API guide), newer Gemini models a last `model` turn ("Requests
        // ending with a model turn are not supported unless the last part
        // is a function response", as reported in pipecat#5821). The same
        // request again would only be refused again: the next asks in a
        // user turn. So may a fallback route that continued its own
        // request in such a format.
        if code == Code::BadRequest {
            // The request's own model refused its own turn, on its own
            // route, in the caller's format.
            let own_refused = own_route && self.styles.ends_with_model_turn(self.provider);
            let sent = |provider: Provider| {
                self.provider == provider
                    || self
                        .asked
                        .as_ref()
                        .is_some_and(|asked| asked.ended_with_model_turn(provider))
            };
            let styles = [Provider::Anthropic, Provider::Gemini]
                .into_iter()
                .filter(|provider| sent(*provider))
                .fold(self.styles, Styles::asking_in_a_user_turn);
            if styles != self.styles {
                self.styles = styles;
                // The model the request names refused it on the request's
                // own route: so will it in the service's later answers,
                // once the user turn is taken (a 400 the user turn gets
                // too was about something else, and teaches nothing). A
                // fallback route's refusal is its own model's: only the
                // caller's format's switch is learned, onto the styles
                // the service held for the request.
                self.to_learn =
                    own_refused.then(|| self.own_styles.asking_in_a_user_turn(self.provider));
                self.spare += 1;
                return self.resume();
            }
        }
        // The ladder below already retried what time can fix; a verdict on
        // the continuation itself (too long for the context once the
        // delivered text is in it, refused, malformed, a dead key) would
        // only be given again to the same request.
        if let Some(failure) = failed.filter(|failure| failure.class() != Class::Transient) {
            // The interruption's own message says only how the first
            // stream broke: say why it was not continued.
            let why = format!("not resumed: the continuation failed with {failure}");
            return self.give_up_because("continuation_failed", &why);
        }
        self.resume();
    }
}

impl<S, B, RB> Drop for State<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    /// The caller dropped the body before it ended: a continuation being
    /// sent, awaited, or lined up was cancelled — unless the caller held
    /// the answer's finish already (it stopped reading at `[DONE]`).
    fn drop(&mut self) {
        if self.resumes > 0 && !matches!(self.phase, Phase::Done) && !self.finished_on_drop() {
            self.cancelled();
        }
    }
}

impl<S, B, RB> State<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    /// The body was dropped with a continuation in the caller's own
    /// format spliced in and everything it said passed on (Rust OpenAI
    /// clients drop the body once they read `[DONE]`, before its end is
    /// polled): the stream guard, whose body is dropped first so it
    /// writes its report, judges that drop finished when the finish was
    /// read, and so does the breaker. What the end would have recorded
    /// ([`State::on_end`]: the finish, the usage, on the report and the
    /// resume's span) is recorded then; true when it was. A continuation
    /// still lining up, or with events held back, showed the caller no
    /// finish: nothing is recorded, whatever its guard read.
    #[cold]
    fn finished_on_drop(&mut self) -> bool {
        let passed_on = matches!(self.phase, Phase::Live)
            && matches!(self.segment, Segment::Pass | Segment::Fixing)
            && self.protocol == self.provider
            && self.body.is_some()
            && self.out.is_empty()
            && self.partial.is_empty();
        if !passed_on
            || !self
                .resumed
                .lock()
                .resumes
                .last()
                .is_some_and(|last| last.spliced)
        {
            return false;
        }
        self.body = None;
        let Some(report) = self.report.as_ref().and_then(|r| r.get()) else {
            return false;
        };
        if report.code.is_some() || report.finish.is_none() {
            return false;
        }
        let finish = report.finish.clone();
        record_end(&self.span, finish.as_ref(), report.usage, None);
        self.resumed.lock().finish = finish;
        self.phase = Phase::Done;
        true
    }

    /// The body was dropped before it ended. A continuation with no
    /// outcome yet (not answered, or answered but not lined up) is
    /// recorded `cancelled`, the receipt of an answer that came kept, and
    /// so is its resume's span, with no error status: a caller who stops
    /// waiting broke nothing. A continuation already spliced in answered,
    /// and stays so. Never panics or waits: the report's lock recovers
    /// from poisoning.
    #[cold]
    fn cancelled(&mut self) {
        let unanswered = {
            let mut report = self.resumed.lock();
            match report.resumes.last_mut() {
                Some(last) if last.failed.is_none() && !last.spliced => {
                    last.failed = Some(Code::Cancelled);
                    report.gave_up.get_or_insert(CANCELLED);
                    true
                }
                _ => false,
            }
        };
        if unanswered {
            self.span.record("seawall.gave_up", CANCELLED);
            record_end(&self.span, None, None, Some(Code::Cancelled));
            tracing::debug!(target: TARGET, "body dropped while a continuation had no outcome");
        }
    }
}

/// The interruption in the body error `error`, when it is one a
/// continuation can fix; else why not (`not_resumable`, `finished`).
fn continuable(error: &BoxError) -> Result<&Failure, &'static str> {
    let failure = Failure::find(&**error).ok_or("not_resumable")?;
    let interrupted = failure.interrupted().ok_or("not_resumable")?;
    let fixable = match failure.code() {
        Code::Truncated => true,
        Code::StreamInterrupted => match interrupted.cause {
            Some(Code::Transport | Code::IdleTimeout) => true,
            // The connection's own timeout (a client's read timeout, a
            // socket's), as a reset is; not one of the guard's bounds
            // (the stream past its `max_duration`), which it closes.
            Some(Code::Timeout) => failure.evidence().closed_by == Some(ClosedBy::Them),
            Some(Code::ProtocolViolation) | None => false,
            Some(cause) => cause.default_class() == Class::Transient,
        },
        _ => false,
    };
    if !fixable {
        return Err("not_resumable");
    }
    // The caller already holds the answer's finish (the guard judges a
    // server's `abort` finish, or an error after the finish, only at the
    // end): a continuation spliced in after it shows a second finish, and
    // is billed.
    if failure.evidence().finish_seen {
        return Err("finished");
    }
    Ok(failure)
}

/// Whether the interruption `failure` (one [`continuable`] accepted) cut
/// only the connection the answer was read over — a reset, a clean end
/// short of the finish, an idle gap the guard closed, the connection's own
/// timeout — and not the response: a background response generated on,
/// and its stored stream holds the rest. An error the provider declared in
/// the stream (`response.failed`, an `error` event: `server_error`,
/// `overloaded`, a `vector_store_timeout` too, which reads as a timeout
/// closed by them) failed the response itself, and its stored stream
/// holds that failure after any cursor. The guard names such an error's
/// code as the cause and keeps its declared type or code (and a failed
/// response that declared neither is `provider_unavailable`, no
/// connection's cause).
fn connection_cut(failure: &Failure) -> bool {
    let declared = failure.provider_type().is_some() || failure.provider_code().is_some();
    match failure.code() {
        // The stream ended cleanly without its finish: the connection, or
        // whatever relayed it, stopped; the provider names no failure.
        Code::Truncated => true,
        Code::StreamInterrupted => {
            !declared
                && matches!(
                    failure.interrupted().and_then(|i| i.cause),
                    Some(Code::Transport | Code::IdleTimeout | Code::Timeout | Code::Truncated)
                )
        }
        _ => false,
    }
}

/// Whether giving an answer up for `reason` lost what could have been
/// continued: a limit stopped it (`max_resumes`, the deadline, the retry
/// budget, the text or request too long to keep, the request not yet
/// sent whole), or a continuation sent for it (`continued`) failed, could
/// not be lined up, or answered with nothing the caller's format can say.
/// Every other reason is the request's or the stream's own nature (a tool
/// call in flight, structured output, a cut after the finish, not an
/// interruption at all, …): nothing was lost that the layer could keep.
fn loses_answer(reason: &str, continued: bool) -> bool {
    match reason {
        "text_not_kept"
        | "replay_cap"
        | "request_unsent"
        | "max_resumes"
        | "deadline"
        | "budget"
        | "misaligned"
        | "continuation_failed" => true,
        // The first answer in another format, or cut before content, is
        // none the layer continues; a continuation's is a failed one.
        "another_format" | "no_content" => continued,
        _ => false,
    }
}

/// Says, in the span `on`, why an interruption was not resumed: a
/// warning where that lost the answer ([`loses_answer`]), else at debug.
fn say_not_resumed(reason: &'static str, loses: bool, route: Option<&RouteId>, on: &tracing::Span) {
    let route = route.map(RouteId::as_str);
    if loses {
        tracing::warn!(target: TARGET, parent: on, reason, route, "interrupted answer lost: not resumed");
    } else {
        tracing::debug!(target: TARGET, parent: on, reason, route, "interruption not resumed");
    }
}

/// Whether every event in `bytes` (whole events) reads as the guard reads
/// an event before it counts it ([`undecodable`](seawall_stream::protocol::undecodable)).
fn events_read_whole(bytes: &[u8]) -> bool {
    let mut whole = true;
    let scanned = seawall_stream::sse::Scanner::default().feed(bytes, |item| {
        if let seawall_stream::sse::Item::Event(event) = item {
            whole &= seawall_stream::protocol::undecodable(event.data).is_none();
        }
    });
    whole && scanned.is_ok()
}

impl<S, B, RB> Body for ResumeBody<S, B, RB>
where
    S: Service<Request<ResumeRequestBody<B>>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
    RB: Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.project().kind.project() {
            BodyKindProj::Passthrough { body, unresumed } => {
                let frame = ready!(body.poll_frame(cx)).map(|r| r.map_err(Into::into));
                if let Some(Err(error)) = &frame
                    && let Some((resumed, why)) = unresumed.take()
                {
                    resumed.lock().gave_up = Some(why);
                    // Only an interruption the layer would have continued
                    // was lost to `why`.
                    let loses = loses_answer(why, false) && continuable(error).is_ok();
                    say_not_resumed(why, loses, None, &tracing::Span::current());
                }
                Poll::Ready(frame)
            }
            BodyKindProj::Resuming { state } => state.poll(cx),
        }
    }

    /// A body passed through keeps its own hint (an exact length lets a
    /// server send `Content-Length`); one being resumed has no length
    /// anyone knows.
    fn size_hint(&self) -> http_body::SizeHint {
        match &self.kind {
            BodyKind::Passthrough { body, .. } => body.size_hint(),
            BodyKind::Resuming { .. } => http_body::SizeHint::default(),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            BodyKind::Passthrough { body, .. } => body.is_end_stream(),
            BodyKind::Resuming { state } => {
                matches!(state.phase, Phase::Done)
                    && state.out.is_empty()
                    && state.final_error.is_none()
            }
        }
    }
}
