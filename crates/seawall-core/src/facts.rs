//! What a request is: the facts every layer needs to read its answer.
//!
//! Whether an answer is a stream cannot be read off the response alone: a
//! server that ignores `"stream": true`, a proxy that drops the content
//! type, or a captive portal answering HTML with `200` all send bodies
//! whose headers lie. The request says what was asked for, so
//! [`RequestFacts`] keeps it:
//!
//! - the [`Provider`] whose generation a POST to the path asks for
//!   ([`Provider::for_generation`]), or none for any other request;
//! - whether a stream was asked for — from the head at once (`Accept:
//!   text/event-stream`, Gemini's `:streamGenerateContent`), and from the
//!   body's `"stream"` member once the body has been sent;
//! - the model: the one the path names (Gemini's, Claude's on Vertex AI,
//!   an Azure OpenAI deployment), else the body's `"model"` member;
//! - whether any other success of the endpoint is one JSON body
//!   ([`answers_json`](crate::provider::answers_json): embeddings,
//!   moderations, token counts).
//!
//! The body facts come from the bytes the retry layer already records for
//! replay ([`ReplayBody`](crate::recording::ReplayBody)): no second buffering.
//! The recording fills a shared slot when the body ends, which is before
//! the response arrives for every HTTP/1 and HTTP/2 client that sends its
//! body first. Without a recording (no retry layer) the body facts are
//! unknown and the head decides alone.
//!
//! The retry layer puts one `RequestFacts` in the request extensions;
//! [`RequestFacts::of_request`] reads it back, or the head alone when no
//! layer put one there.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;

use crate::progress::Counters;
use crate::provider::Provider;
use crate::{Deadline, RouteId};
use seawall_internal::json::{Count, RequestMembers};

/// The most choices (OpenAI's `n`, Gemini's candidates) a request is
/// known to ask for ([`RequestFacts::choices_asked`]): a stream's reader
/// follows each of the first 64 in one bit of a word. A request for more
/// is known to ask for at least these.
pub const MAX_CHOICES: u8 = 64;

/// What a request asked for. See the [module docs](self).
///
/// Cheap to clone: the head facts are plain values, the body facts one
/// shared slot.
#[derive(Debug, Clone, Default)]
pub struct RequestFacts {
    provider: Option<Provider>,
    /// What the head says about streaming, if anything.
    head_stream: Option<bool>,
    /// Filled by the body recording when the body ends; the attempts'
    /// progress is counted there too.
    body: Option<Arc<OperationSlots>>,
    /// The caller's own word on the model ([`RequestFacts::with_model`]).
    told_model: Option<Arc<str>>,
    /// The model the path names ([`path_model`]): read again from each
    /// head the operation is sent to, never carried to another.
    path_model: Option<Arc<str>>,
    /// The request asks for the rest of an answer the caller already holds
    /// part of ([`RequestFacts::continuing`]).
    continues: bool,
    /// The request asks for Gemini's JSON-array stream ([`asks_json_array`]).
    json_array: bool,
    /// The endpoint answers JSON and nothing else
    /// ([`RequestFacts::answers_json`]).
    json_answer: bool,
    /// The request reads a stored generation ([`RequestFacts::reads_stored`]).
    stored: bool,
}

/// Whether a request to `uri` asks Gemini for its JSON-array stream:
/// `…:streamGenerateContent` without `alt=sse`, one JSON array written
/// over time. Any other answer that is an array is no answer.
pub fn asks_json_array(uri: &http::Uri) -> bool {
    uri.path().ends_with(":streamGenerateContent")
        && !uri
            .query()
            .is_some_and(|query| query.split('&').any(|pair| pair == "alt=sse"))
}

/// What the layers of one operation fill for each other, in one shared
/// allocation that travels with the [`RequestFacts`]: the facts of the
/// request body (filled by the body recording when the body ends) and the
/// [`Progress`](crate::Progress) of the attempt in flight (counted here when a per-attempt
/// bound starts an attempt, instead of in an allocation and an extension
/// of its own per attempt), what the layers below a retry ladder did
/// with its attempt in flight ([`CallBelow`]), and the operation's own
/// deadline ([`OperationSlots::for_operation`]).
///
/// [`Default`] gives slots that know no deadline.
#[derive(Debug, Default)]
pub struct OperationSlots {
    body: OnceLock<BodyFacts>,
    pub(crate) progress: Counters,
    below: Below,
    /// Whether the body handle of the latest sending (an attempt, a
    /// route's call) sent the body to its end: set by that handle, cleared
    /// when a recording hands out a handle for the next sending. What
    /// [`RequestFacts::attempt_sent_whole`] reads.
    attempt_sent_whole: AtomicBool,
    /// The recording whose handles say it (its address): the one that
    /// handed out the latest handle. Under a fallback a ladder records
    /// the fallback's handle again; the ladder's recording then speaks,
    /// and the fallback's handle, read by the ladder (ahead, or once for
    /// all its attempts), says nothing.
    sender: AtomicUsize,
    /// The deadline the operation's total bound cuts the response body
    /// at: a plain value set when the slots are made, so a layer close to
    /// the wire (the stream guard) knows it where the request's
    /// [`Deadline`] is narrowed to an attempt's bound or a fallback's
    /// reserve, at no cost of its own (no extension, no allocation).
    deadline: Option<Deadline>,
}

/// What a layer below a retry ladder did with the ladder's attempt in
/// flight, as [`RequestFacts::call_below`] reads it: the ladder reads it
/// only when its caller drops it, to count the cancelled attempt under the
/// route whose call was in flight — or none, when nothing was sent. A
/// fallback with no ladder above reads it the same way for a route's call.
///
/// A layer that chooses where an attempt goes (a route set, a fallback)
/// says it as it chooses ([`RequestFacts::call_held`],
/// [`RequestFacts::call_sent`]), and so does a nested ladder between its
/// calls and as it sends a retry; the outermost ladder clears it as it
/// sends each attempt ([`RequestFacts::attempt_sent`]). The deepest layer
/// speaks last (each says it before it calls the layer below), so a route
/// set under a fallback's route names its member, not the route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallBelow {
    /// No layer below said anything: the ladder's service took the call
    /// as it was sent, to the ladder's own route.
    Unrecorded,
    /// A layer below holds the call and sent nothing: a route set waiting
    /// for a member to come back, a fallback waiting for a route (or for
    /// its service's readiness), between a failed call and the next.
    Held,
    /// Sent to this route, whose call is in flight.
    Sent(RouteId),
}

/// [`CallBelow`] as the slots keep it: a state written with one atomic
/// store, and the route written only when a layer below sends (a route
/// set's member, a fallback's route), read only on a cancel. A ladder over
/// a plain service writes one byte per attempt and reads nothing.
#[derive(Debug, Default)]
struct Below {
    state: AtomicU8,
    /// The route of the last call a layer below sent; meaningful only
    /// while `state` is [`SENT`].
    route: Mutex<Option<RouteId>>,
}

const UNRECORDED: u8 = 0;
const HELD: u8 = 1;
const SENT: u8 = 2;

impl OperationSlots {
    /// Slots for an operation whose own deadline (the one its total bound
    /// cuts the response body at) is `deadline`: `None` when it has none.
    /// The layer that makes the slots (the outermost of a retry ladder, a
    /// fallback, a resume) passes the deadline as it receives the
    /// request, before it or anything below narrows it: the one
    /// [`AnswerBy::operation`](crate::AnswerBy::operation) kept when a
    /// total bound narrowed the request's [`Deadline`] to a caller's
    /// `AnswerBy`, else the request's `Deadline`
    /// ([`OperationSlots::of_request`]).
    pub fn for_operation(deadline: Option<Deadline>) -> Self {
        OperationSlots {
            deadline,
            ..OperationSlots::default()
        }
    }

    /// Slots for the operation of `request`, as it reaches the layer that
    /// makes them: [`OperationSlots::for_operation`] with the deadline a
    /// total bound kept beside a narrowed [`Deadline`]
    /// ([`AnswerBy::operation`](crate::AnswerBy::operation)), else the
    /// request's `Deadline`.
    pub fn of_request<B>(request: &http::Request<B>) -> Self {
        let deadline = crate::AnswerBy::operation(request).unwrap_or_else(|| Deadline::of(request));
        OperationSlots::for_operation(deadline)
    }

    /// The recording handed out a handle for another sending: nothing of
    /// it is sent yet ([`RequestFacts::attempt_sent_whole`]).
    /// `recording` speaks for the sendings from now on.
    pub(crate) fn sending_starts(&self, recording: usize) {
        self.sender.store(recording, Ordering::Release);
        self.attempt_sent_whole.store(false, Ordering::Release);
    }

    /// The handle of the sending in flight sent the body to its end.
    /// Said by a handle of `recording`: heard only from the recording
    /// that speaks for the sendings.
    pub(crate) fn sent_whole(&self, recording: usize) {
        if self.sender.load(Ordering::Acquire) == recording {
            self.attempt_sent_whole.store(true, Ordering::Release);
        }
    }

    /// Whether the body's facts are known already: a recording below
    /// another need not join its chunks to tell them again.
    pub(crate) fn has_body_facts(&self) -> bool {
        self.body.get().is_some()
    }

    /// The operation's own deadline these slots were made with
    /// ([`OperationSlots::for_operation`]), if any.
    pub fn deadline(&self) -> Option<Deadline> {
        self.deadline
    }

    /// Reads `body` (the whole request body) once; later calls are ignored.
    /// The model's name is kept as a view of `body` (a reference count),
    /// not a copy.
    pub fn fill(&self, body: &Bytes) {
        self.body.get_or_init(|| BodyFacts::parse(body));
    }

    fn get(&self) -> Option<&BodyFacts> {
        self.body.get()
    }

    fn route(&self) -> std::sync::MutexGuard<'_, Option<RouteId>> {
        // A panic while the route was written left a route or none: either
        // is a route to read.
        self.below
            .route
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The facts read from a JSON request body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct BodyFacts {
    /// The body was a JSON object whose members could be read: only then
    /// does a missing `"stream"` say anything (a compressed body, or one
    /// with a `"stream"` of another type, says nothing).
    read: bool,
    stream: Option<bool>,
    model: Option<Model>,
    background: bool,
    /// OpenAI's `n` and Gemini's `generationConfig.candidateCount`, as
    /// written: which counts is the provider's to say
    /// ([`RequestFacts::choices_asked`]).
    n: Count,
    candidate_count: Count,
}

/// The model's name: where it stands in the recorded body (no copy), or a
/// copy when the JSON escaped it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Model {
    In(Bytes, std::ops::Range<usize>),
    Unescaped(Box<str>),
}

impl Model {
    fn as_str(&self) -> Option<&str> {
        match self {
            Model::In(body, range) => std::str::from_utf8(body.get(range.clone())?).ok(),
            Model::Unescaped(name) => Some(name),
        }
    }
}

impl BodyFacts {
    /// Only these members are read; anything else, and a body that is
    /// not a JSON object (or not UTF-8, as JSON must be), gives no facts.
    fn parse(body: &Bytes) -> BodyFacts {
        let Ok(text) = std::str::from_utf8(body) else {
            return BodyFacts::default();
        };
        // A byte-order mark before the object (a file saved so and sent
        // as it is) is no part of it.
        let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
        let text = &text[bom..];
        // A member named twice takes its last value, as the provider
        // reads it (Python's `json`, Go's `encoding/json`) and as the
        // resume layer does: refusing the body would leave no facts, and
        // a background stream then looks like any other.
        let Ok(members) = RequestMembers::read_last_wins(text) else {
            return BodyFacts::default();
        };
        let model = match (members.model_span(text), &members.model) {
            (Some(span), _) => Some(Model::In(body.clone(), span.start + bom..span.end + bom)),
            (None, Some(name)) => Some(Model::Unescaped(name.0.as_ref().into())),
            (None, None) => None,
        };
        BodyFacts {
            read: true,
            stream: members.stream,
            model,
            background: members.background.0,
            n: members.n,
            candidate_count: members.candidate_count,
        }
    }
}

impl RequestFacts {
    /// The facts the head of `request` gives: the provider from the path,
    /// streaming from `Accept` and Gemini's path. Allocates only for a
    /// model the path names (Gemini's, Claude's on Vertex AI, an Azure
    /// OpenAI deployment).
    pub fn from_head<B>(request: &http::Request<B>) -> Self {
        RequestFacts::of_head(request.method(), request.uri(), request.headers())
    }

    /// [`from_head`](Self::from_head), for a request taken apart.
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        RequestFacts::of_head(&parts.method, &parts.uri, &parts.headers)
    }

    fn of_head(method: &http::Method, uri: &http::Uri, headers: &http::HeaderMap) -> Self {
        let path = uri.path();
        // Every generation is a POST; a GET of the same path lists what
        // was stored (`GET /v1/chat/completions`), an answer of another
        // shape.
        let provider = Provider::for_generation(method, path);
        let head_stream = if path.ends_with(":streamGenerateContent") {
            Some(true)
        } else if path.ends_with(":generateContent") {
            Some(false)
        } else if accepts_event_stream(headers) {
            Some(true)
        } else {
            None
        };
        let path_model = provider.and_then(|provider| path_model(provider, path).map(Arc::from));
        RequestFacts {
            provider,
            head_stream,
            body: None,
            told_model: None,
            path_model,
            continues: false,
            json_array: provider == Some(Provider::Gemini) && asks_json_array(uri),
            json_answer: crate::provider::answers_json(method, path),
            stored: crate::provider::reads_stored(method, path),
        }
    }

    /// Whether the request reads or acts on a generation the provider
    /// stored ([`reads_stored`](crate::provider::reads_stored): a `GET` of
    /// a stored response, a cancel): its answer is that object as it is,
    /// whatever status it records.
    pub fn reads_stored(&self) -> bool {
        self.stored
    }

    /// Whether the request calls an endpoint, no generation, whose every
    /// success is one JSON body ([`answers_json`](crate::provider::answers_json):
    /// embeddings, moderations, token counts): a 2xx there that is not
    /// JSON or has no body is no answer, as on a generation endpoint.
    pub fn answers_json(&self) -> bool {
        self.json_answer
    }

    /// Whether the request asks for Gemini's JSON-array stream
    /// ([`asks_json_array`]).
    pub fn asks_json_array(&self) -> bool {
        self.json_array
    }

    /// These facts, naming `model` before the body is read (a caller that
    /// knows it, or a gateway that parsed the body itself): spans are then
    /// named after it from their start.
    pub fn with_model(mut self, model: impl Into<Arc<str>>) -> Self {
        self.told_model = Some(model.into());
        self
    }

    /// These facts, for a request that asks for the rest of an answer whose
    /// content the caller already holds (a resumed stream's continuation).
    /// Such an answer may rightly bring no more content: a model that
    /// finishes at once with a complete finish (`stop`, `end_turn`) says the
    /// answer it was given was whole. The stream guard delivers that finish
    /// instead of calling the answer `empty_response`.
    pub fn continuing(mut self) -> Self {
        self.continues = true;
        self
    }

    /// Whether the body asks for a stream of a background response
    /// (`"background": true, "stream": true`, the Responses API): the
    /// provider runs it to its end whoever reads, so once it answered, a
    /// second request would run a second one, billed, beside the first.
    pub fn background_stream(&self) -> bool {
        self.body
            .as_ref()
            .and_then(|body| body.get())
            .is_some_and(|body| body.background)
            && self.stream_requested() == Some(true)
    }

    /// Whether the body asks for a background response (`"background":
    /// true`, the Responses API): `None` until a recording read the body.
    /// Only a background response may answer with one still `queued` or
    /// `in_progress`.
    pub fn background_requested(&self) -> Option<bool> {
        self.body
            .as_ref()
            .and_then(|body| body.get())
            .filter(|body| body.read)
            .map(|body| body.background)
    }

    /// Whether the request continues an answer ([`continuing`](Self::continuing)).
    pub fn continues(&self) -> bool {
        self.continues
    }

    /// The model named before the body was read, if any: the caller's
    /// ([`with_model`](Self::with_model)), else the path's.
    pub fn head_model(&self) -> Option<&str> {
        self.told_model.as_deref().or(self.path_model.as_deref())
    }

    /// These facts for `request`, the same operation sent to another
    /// endpoint (a fallback route's rewrite, another provider's request
    /// built for it): what the head says (the provider, streaming, the
    /// model the path names, Gemini's JSON-array stream) is read from the
    /// new head; what the body said, the operation's slots and a
    /// continuation are kept. A layer that moves a request to another
    /// endpoint calls it: read against the old head, an Anthropic answer
    /// was checked as an OpenAI one.
    ///
    /// Whether the operation streams is the operation's, not its
    /// endpoint's: when the new head does not say, what the old head
    /// said holds. A Gemini request says it in its path alone, and its
    /// body never does, so its stream moved to an Anthropic or OpenAI
    /// endpoint whose head says nothing would otherwise be read by the
    /// kept body's word (no `stream` member: a unary answer), and the
    /// fallback's stream failed as a protocol violation, billed.
    pub fn moved_to<B>(&self, request: &http::Request<B>) -> Self {
        let mut head = RequestFacts::from_head(request);
        head.head_stream = head.head_stream.or(self.head_stream);
        // The same provider's endpoint elsewhere: the model the caller
        // named still holds, unless the new path names the one it serves.
        // The old path's model does not: an Azure deployment's name is no
        // model of the OpenAI route a fallback moved the operation to.
        let told_model = (head.provider == self.provider && head.path_model.is_none())
            .then(|| self.told_model.clone())
            .flatten();
        RequestFacts {
            body: self.body.clone(),
            continues: self.continues,
            told_model,
            ..head
        }
    }

    /// The facts in `request`'s extensions, or those of its head when no
    /// layer put any there.
    pub fn of_request<B>(request: &http::Request<B>) -> Self {
        match request.extensions().get::<RequestFacts>() {
            Some(facts) => facts.clone(),
            None => RequestFacts::from_head(request),
        }
    }

    /// These facts, with the body's to come from `slots` (and the
    /// attempts' progress counted there).
    pub fn with_slots(mut self, slots: Arc<OperationSlots>) -> Self {
        self.body = Some(slots);
        self
    }

    /// The operation's shared slots, when a recording fills them.
    pub(crate) fn slots(&self) -> Option<&Arc<OperationSlots>> {
        self.body.as_ref()
    }

    /// The operation's own deadline, as the layer that made its slots
    /// received it ([`OperationSlots::for_operation`]): `None` without
    /// slots, or when the operation has no deadline. Unlike the request's
    /// [`Deadline`], never narrowed to an attempt's bound, a fallback's
    /// reserve or a caller's [`AnswerBy`](crate::AnswerBy).
    pub fn operation_deadline(&self) -> Option<Deadline> {
        self.body.as_deref().and_then(OperationSlots::deadline)
    }

    /// The outermost retry ladder sends an attempt: what a layer below
    /// said of the attempt before is no longer so ([`CallBelow`]). Zeroed
    /// here, by the ladder, not where the attempt's progress is zeroed
    /// (the per-attempt bound, below a route set, which would erase the
    /// member the set just named). One atomic store; nothing without
    /// slots.
    pub fn attempt_sent(&self) {
        if let Some(slots) = &self.body {
            slots.below.state.store(UNRECORDED, Ordering::Release);
        }
    }

    /// A layer below the ladder holds the attempt's call and sends
    /// nothing for now ([`CallBelow::Held`]).
    pub fn call_held(&self) {
        if let Some(slots) = &self.body {
            slots.below.state.store(HELD, Ordering::Release);
        }
    }

    /// A layer below the ladder sends the attempt's call to `route`
    /// ([`CallBelow::Sent`]). Says it before calling on, so a layer further
    /// down that chooses again speaks after it. The route is copied (a
    /// reference count) only when it is not the one already kept: a retry
    /// on the same member copies nothing.
    pub fn call_sent(&self, route: &RouteId) {
        let Some(slots) = &self.body else { return };
        {
            let mut kept = slots.route();
            if kept.as_ref() != Some(route) {
                *kept = Some(route.clone());
            }
        }
        slots.below.state.store(SENT, Ordering::Release);
    }

    /// What the layers below the ladder did with its attempt in flight
    /// (see [`CallBelow`]): [`CallBelow::Unrecorded`] without slots (no
    /// recording: a ladder of one attempt with nothing above that made
    /// them), as when no layer below chose.
    pub fn call_below(&self) -> CallBelow {
        let Some(slots) = &self.body else {
            return CallBelow::Unrecorded;
        };
        match slots.below.state.load(Ordering::Acquire) {
            HELD => CallBelow::Held,
            SENT => match slots.route().clone() {
                Some(route) => CallBelow::Sent(route),
                None => CallBelow::Unrecorded,
            },
            _ => CallBelow::Unrecorded,
        }
    }

    /// The provider whose generation endpoint the request calls, if any.
    pub fn provider(&self) -> Option<Provider> {
        self.provider
    }

    /// True when the request calls a provider's generation endpoint, whose
    /// every 2xx answer must be an answer in that provider's shape.
    pub fn is_generation(&self) -> bool {
        self.provider.is_some()
    }

    /// True when a generation asked for a unary answer, as its head or
    /// body says: its 2xx is one JSON answer whatever its content type
    /// claims (a server that labels a JSON answer `text/event-stream`),
    /// and an event stream is no answer the caller's client can read.
    pub fn unary_requested(&self) -> bool {
        self.is_generation() && self.stream_requested() == Some(false)
    }

    /// Whether the request's body has been sent to its end, as the
    /// recording under a retry ladder knows it: `Some(true)` once it ended
    /// within the recording's cap, `Some(false)` while it is still being
    /// sent (a gRPC client or bidirectional stream) or after it outgrew the
    /// cap (it cannot be sent again anyway), `None` when no recording
    /// reports it.
    pub fn body_sent(&self) -> Option<bool> {
        Some(self.body.as_ref()?.get().is_some())
    }

    /// Whether the body of the sending in flight, or of the last one (an
    /// attempt, a fallback's call to a route), went to its end: the
    /// recording's handle for that sending says so as it sends the last
    /// byte (or the end), and the recording clears it as it hands out the
    /// handle for the next. Unlike [`body_sent`](Self::body_sent), which is
    /// the operation's (the body read once, by any sending or a read
    /// ahead), this is the one sending's: an attempt that never wrote its
    /// body (a connect that never finished) after one that did reads
    /// `false`. `false` when no recording reports it.
    pub fn attempt_sent_whole(&self) -> bool {
        self.body
            .as_ref()
            .is_some_and(|slots| slots.attempt_sent_whole.load(Ordering::Acquire))
    }

    /// Whether a stream was asked for: `Some(true)` or `Some(false)` when
    /// the head or the body says so, `None` when nothing says (the body is
    /// not recorded, not sent yet, could not be read, or has no
    /// `"stream"` member). A JSON body without `"stream"` on an endpoint
    /// where streaming is opt-in (OpenAI, Anthropic) asked for a unary
    /// answer; one that could not be read (compressed, a `"stream"` of
    /// another type) asked for nothing known.
    pub fn stream_requested(&self) -> Option<bool> {
        if self.head_stream.is_some() {
            return self.head_stream;
        }
        let body = self.body.as_ref()?.get()?;
        match (body.stream, self.provider) {
            (Some(stream), _) => Some(stream),
            (None, Some(Provider::OpenAi | Provider::OpenAiResponses | Provider::Anthropic))
                if body.read =>
            {
                Some(false)
            }
            (None, _) => None,
        }
    }

    /// How many choices the request asks for, when it asks for several:
    /// OpenAI's `"n"` (chat and legacy completions), Gemini's
    /// `generationConfig.candidateCount` (or `generation_config.
    /// candidate_count`, which Google's proto3 JSON reading takes too),
    /// the last of a member named twice. A whole number: an integer, one
    /// written with a zero fraction (`2.0`), or for Gemini a string
    /// holding one (`"2"`, as proto3 JSON reads an integer), as the
    /// resume layer counts choices; capped at [`MAX_CHOICES`] (the
    /// choices a stream's reader follows).
    ///
    /// `None` when it asks for one, or says nothing a provider would
    /// serve several choices for: the member missing, `0` or `1`, a
    /// fraction, a negative number, one past `u64`, another type; a body
    /// not recorded, not yet sent or not readable; and every other wire
    /// (the Responses API and Anthropic's ask for one answer only).
    pub fn choices_asked(&self) -> Option<u8> {
        let body = self.body.as_ref()?.get()?;
        let count = match self.provider? {
            Provider::OpenAi => body.n.whole(false),
            Provider::Gemini => body.candidate_count.whole(true),
            Provider::OpenAiResponses | Provider::Anthropic | Provider::Http => None,
        }?;
        (count > 1).then(|| count.min(u64::from(MAX_CHOICES)) as u8)
    }

    /// The model: named before the body was read, else the one the body
    /// names once it has been read.
    pub fn model(&self) -> Option<&str> {
        if let Some(model) = self.head_model() {
            return Some(model);
        }
        self.body.as_ref()?.get()?.model.as_ref()?.as_str()
    }
}

/// The model `path` names for a generation of `provider`, the one that
/// serves it whatever the body says:
/// - Gemini's, the last segment before the verb: `/models/{model}:verb`,
///   `/tunedModels/{model}:verb`, Vertex AI's `/endpoints/{id}:verb`;
/// - Claude's on Vertex AI, the same way (`…/publishers/anthropic/models/
///   {model}:streamRawPredict`), whose body names no model;
/// - an Azure OpenAI deployment's name (`/openai/deployments/{name}/…`):
///   Azure serves the deployment's model and does not read the body's
///   `model`, which the body often leaves out. The deployment's name is
///   the user's alias of a model, the one name Azure answers to.
fn path_model(provider: Provider, path: &str) -> Option<&str> {
    let model = match provider {
        Provider::Gemini => verb_subject(path),
        Provider::Anthropic => path
            .strip_suffix(":rawPredict")
            .or_else(|| path.strip_suffix(":streamRawPredict"))?
            .rsplit_once('/')
            .map(|(_, model)| model),
        // From the end, as the provider was read: a substring search of
        // every OpenAI path for `/deployments/` cost ~100 instructions a
        // request (callgrind, the stack bench).
        Provider::OpenAi | Provider::OpenAiResponses => {
            let path = path.strip_suffix('/').unwrap_or(path);
            let endpoint = path
                .strip_suffix("/chat/completions")
                .or_else(|| path.strip_suffix("/completions"))
                .or_else(|| path.strip_suffix("/responses"))?;
            let (before, name) = endpoint.rsplit_once('/')?;
            before.ends_with("/deployments").then_some(name)
        }
        Provider::Http => None,
    }?;
    (!model.is_empty()).then_some(model)
}

/// The last segment of `…/{subject}:verb`.
fn verb_subject(path: &str) -> Option<&str> {
    let (before, _verb) = path.rsplit_once(':')?;
    Some(before.rsplit_once('/')?.1)
}

/// `Accept` lists `text/event-stream` (parameters and case ignored).
fn accepts_event_stream(headers: &http::HeaderMap) -> bool {
    headers.get_all(http::header::ACCEPT).iter().any(|value| {
        value.as_bytes().split(|&b| b == b',').any(|item| {
            let media = item.split(|&b| b == b';').next().unwrap_or_default();
            media
                .trim_ascii()
                .eq_ignore_ascii_case(b"text/event-stream")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slots keep the operation's own deadline: the one a total bound
    /// kept beside a `Deadline` it narrowed to a caller's `AnswerBy`, else
    /// the request's `Deadline`; none when the kept one says the
    /// operation has none, or without slots.
    #[tokio::test(start_paused = true)]
    async fn slots_keep_the_operations_deadline() {
        let operation = Deadline::after(std::time::Duration::from_secs(5));
        let narrowed = Deadline::after(std::time::Duration::from_secs(1));
        let mut request = http::Request::new(());
        assert_eq!(OperationSlots::of_request(&request).deadline(), None);
        request.extensions_mut().insert(operation);
        assert_eq!(
            OperationSlots::of_request(&request).deadline(),
            Some(operation)
        );
        request.extensions_mut().insert(narrowed);
        crate::AnswerBy::keep_operation(&mut request, Some(operation));
        let slots = Arc::new(OperationSlots::of_request(&request));
        assert_eq!(slots.deadline(), Some(operation));
        let facts = RequestFacts::default().with_slots(slots);
        assert_eq!(facts.operation_deadline(), Some(operation));
        crate::AnswerBy::keep_operation(&mut request, None);
        assert_eq!(OperationSlots::of_request(&request).deadline(), None);
        assert_eq!(RequestFacts::default().operation_deadline(), None);
        assert_eq!(OperationSlots::default().deadline(), None);
    }

    fn request(path: &str, accept: Option<&str>) -> http::Request<()> {
        let mut builder = http::Request::post(format!("http://api.example{path}"));
        if let Some(accept) = accept {
            builder = builder.header("accept", accept);
        }
        builder.body(()).unwrap()
    }

    /// Facts moved to another endpoint read its head and keep what the
    /// body said; the caller's model holds on the same provider's
    /// endpoint only.
    #[test]
    fn moved_facts_read_the_new_head() {
        let slot = Arc::new(OperationSlots::default());
        let facts = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .with_slots(slot.clone())
            .with_model("the-callers-name");
        slot.fill(&Bytes::from_static(br#"{"model":"gpt-x","stream":false}"#));
        let elsewhere = facts.moved_to(&request("/openai/v1/chat/completions", None));
        assert_eq!(elsewhere.provider(), Some(Provider::OpenAi));
        assert_eq!(elsewhere.head_model(), Some("the-callers-name"));
        let anthropic = facts.moved_to(&request("/v1/messages", None));
        assert_eq!(anthropic.provider(), Some(Provider::Anthropic));
        assert_eq!(anthropic.head_model(), None);
        assert_eq!(anthropic.model(), Some("gpt-x"), "the body's, read once");
        assert_eq!(anthropic.stream_requested(), Some(false), "the body's word");
        let gemini = facts.moved_to(&request(
            "/v1beta/models/gemini-x:streamGenerateContent",
            None,
        ));
        assert_eq!(gemini.provider(), Some(Provider::Gemini));
        assert_eq!(gemini.model(), Some("gemini-x"));
        assert_eq!(gemini.stream_requested(), Some(true));
        assert!(gemini.asks_json_array());
        // A path's model is that path's: an Azure deployment's name is no
        // model of the OpenAI endpoint the operation moved to.
        let azure = RequestFacts::from_head(&request(
            "/openai/deployments/prod-east/chat/completions",
            None,
        ))
        .with_slots(slot.clone());
        assert_eq!(azure.model(), Some("prod-east"));
        let moved = azure.moved_to(&request("/v1/chat/completions", None));
        assert_eq!(moved.head_model(), None);
        assert_eq!(moved.model(), Some("gpt-x"), "the body's");
        // The caller's model holds on the same provider's endpoint until
        // a path names the one it serves.
        let told = RequestFacts::from_head(&request(
            "/v1beta/models/gemini-pro:streamGenerateContent",
            None,
        ))
        .with_model("the-callers-name");
        let flash = told.moved_to(&request(
            "/v1beta/models/gemini-flash:streamGenerateContent",
            None,
        ));
        assert_eq!(flash.model(), Some("gemini-flash"));
        let told = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .with_model("the-callers-name");
        let deployment = told.moved_to(&request("/openai/deployments/east/chat/completions", None));
        assert_eq!(deployment.model(), Some("east"));
    }

    /// A Gemini request streams by its path alone; moved to an endpoint
    /// whose head says nothing, it still streams (or still does not).
    #[test]
    fn a_moved_operation_keeps_what_its_head_said_of_streaming() {
        for (path, streams) in [
            ("/v1beta/models/g:streamGenerateContent?alt=sse", true),
            ("/v1beta/models/g:generateContent", false),
        ] {
            let slot = Arc::new(OperationSlots::default());
            let facts = RequestFacts::from_head(&request(path, None)).with_slots(slot.clone());
            slot.fill(&Bytes::from_static(
                br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}"#,
            ));
            for to in ["/v1/messages", "/v1/chat/completions", "/v1/responses"] {
                let moved = facts.moved_to(&request(to, None));
                assert_eq!(moved.stream_requested(), Some(streams), "{path} → {to}");
            }
            // The new head's own word wins.
            let unary = facts.moved_to(&request("/v1beta/models/g:generateContent", None));
            assert_eq!(unary.stream_requested(), Some(false));
            let accepts = facts.moved_to(&request("/v1/messages", Some("text/event-stream")));
            assert_eq!(accepts.stream_requested(), Some(true));
        }
    }

    #[test]
    fn the_head_names_provider_and_stream() {
        let cases = [
            ("/v1/chat/completions", None, Some(Provider::OpenAi), None),
            (
                "/v1/chat/completions",
                Some("application/json, Text/Event-Stream; q=0.9"),
                Some(Provider::OpenAi),
                Some(true),
            ),
            ("/v1/responses", None, Some(Provider::OpenAiResponses), None),
            ("/v1/messages", None, Some(Provider::Anthropic), None),
            (
                "/v1beta/models/g:streamGenerateContent?alt=sse",
                None,
                Some(Provider::Gemini),
                Some(true),
            ),
            (
                "/v1beta/models/g:generateContent",
                None,
                Some(Provider::Gemini),
                Some(false),
            ),
            ("/v1/embeddings", Some("application/json"), None, None),
            // OpenAI resources whose paths end like a generation's.
            ("/v1/threads/thread_abc/messages", None, None, None),
            ("/v1/chat/completions/chatcmpl-1/messages", None, None, None),
            (
                "/anthropic/v1/messages",
                None,
                Some(Provider::Anthropic),
                None,
            ),
        ];
        for (path, accept, provider, stream) in cases {
            let facts = RequestFacts::from_head(&request(path, accept));
            assert_eq!(facts.provider(), provider, "{path}");
            assert_eq!(facts.stream_requested(), stream, "{path} {accept:?}");
            assert_eq!(facts.is_generation(), provider.is_some());
        }
        // Listing stored completions is no generation.
        let list = http::Request::get("http://api.example/v1/chat/completions")
            .body(())
            .unwrap();
        assert_eq!(RequestFacts::from_head(&list).provider(), None);
    }

    /// The endpoints whose every success is one JSON body, and some whose
    /// success may be anything else.
    #[test]
    fn the_head_says_whether_only_json_answers() {
        for (path, json) in [
            ("/v1/embeddings", true),
            ("/openai/deployments/d/embeddings/", true),
            ("/v1/moderations", true),
            ("/v1/messages/count_tokens", true),
            ("/v1/responses/input_tokens", true),
            ("/v1beta/models/text-embedding-004:embedContent", true),
            ("/v1beta/models/text-embedding-004:batchEmbedContents", true),
            ("/v1beta/models/g:countTokens", true),
            ("/v1/audio/speech", false),
            ("/v1/audio/transcriptions", false),
            ("/v1/images/generations", false),
            ("/v1/files", false),
            // A generation is judged as one, not as this.
            ("/v1/chat/completions", false),
            ("/v1beta/models/g:generateContent", false),
        ] {
            let facts = RequestFacts::from_head(&request(path, None));
            assert_eq!(facts.answers_json(), json, "{path}");
        }
        let get = http::Request::get("http://api.example/v1/embeddings")
            .body(())
            .unwrap();
        assert!(!RequestFacts::from_head(&get).answers_json());
        assert!(!RequestFacts::default().answers_json());
        // The endpoint's, read again from a moved request's head.
        let moved = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .moved_to(&request("/v1/embeddings", None));
        assert!(moved.answers_json());
    }

    #[test]
    fn the_body_fills_stream_and_model_once_sent() {
        let slot = Arc::new(OperationSlots::default());
        let facts = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .with_slots(slot.clone());
        assert_eq!(facts.stream_requested(), None, "not sent yet");
        assert_eq!(facts.model(), None);
        slot.fill(&Bytes::from_static(
            br#"{"messages":[{"role":"user","content":"x"}],"model":"gpt-\u0078","stream":true}"#,
        ));
        assert_eq!(facts.stream_requested(), Some(true));
        assert_eq!(facts.model(), Some("gpt-x"));
        // Filled once: a replayed body does not change the facts.
        slot.fill(&Bytes::from_static(br#"{"model":"other","stream":false}"#));
        assert_eq!(facts.model(), Some("gpt-x"));
    }

    #[test]
    fn an_unescaped_model_is_a_view_of_the_body() {
        let slot = Arc::new(OperationSlots::default());
        let facts = RequestFacts::default().with_slots(slot.clone());
        slot.fill(&Bytes::from_static(
            br#"{"model": "claude-x", "stream": false}"#,
        ));
        assert_eq!(facts.model(), Some("claude-x"));
        assert!(matches!(
            slot.get().and_then(|f| f.model.as_ref()),
            Some(Model::In(..))
        ));
    }

    #[test]
    fn a_body_without_stream_asked_for_a_unary_answer_where_streaming_is_opt_in() {
        for (path, expected) in [
            ("/v1/chat/completions", Some(false)),
            ("/v1/messages", Some(false)),
            ("/v1/responses", Some(false)),
            ("/v1/embeddings", None),
        ] {
            let slot = Arc::new(OperationSlots::default());
            let facts = RequestFacts::from_head(&request(path, None)).with_slots(slot.clone());
            slot.fill(&Bytes::from_static(br#"{"model":"m"}"#));
            assert_eq!(facts.stream_requested(), expected, "{path}");
        }
    }

    #[test]
    fn a_body_that_is_not_a_json_object_gives_no_facts() {
        let gzip = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03];
        // A member named twice is no such body: its last value is read
        // (`a_member_named_twice_takes_its_last_value`).
        for body in [
            &b"not json"[..],
            b"[1,2]",
            b"[\"m\",true]",
            b"{\"model\":\"m\",\"stream\":true,\"other\":\"\xff\"}",
            b"{\"stream\":\"yes\"}",
            b"",
            b"{\"model\":",
            &gzip,
        ] {
            // Where streaming is opt-in too: a body that could not be read
            // says nothing of it, and nothing of a background response.
            for path in ["/v1/embeddings", "/v1/chat/completions", "/v1/responses"] {
                let slot = Arc::new(OperationSlots::default());
                let facts = RequestFacts::from_head(&request(path, None)).with_slots(slot.clone());
                slot.fill(&Bytes::copy_from_slice(body));
                assert_eq!(facts.stream_requested(), None, "{path} {body:?}");
                assert_eq!(facts.background_requested(), None, "{path} {body:?}");
                assert_eq!(facts.model(), None);
            }
        }
    }

    /// A member named twice takes its last value, as the provider reads
    /// it (Python's `json`, Go's `encoding/json`): a background stream so
    /// named is one still, never held and asked for a second time.
    #[test]
    fn a_member_named_twice_takes_its_last_value() {
        let read = |path: &str, body: &'static str| {
            let slot = Arc::new(OperationSlots::default());
            let facts = RequestFacts::from_head(&request(path, None)).with_slots(slot.clone());
            slot.fill(&Bytes::from_static(body.as_bytes()));
            facts
        };
        let facts = read(
            "/v1/responses",
            r#"{"model":"o3-pro","input":"x","background":true,"stream":false,"stream":true}"#,
        );
        assert!(facts.background_stream());
        assert_eq!(facts.background_requested(), Some(true));
        assert_eq!(facts.stream_requested(), Some(true));
        assert_eq!(facts.model(), Some("o3-pro"));
        let facts = read("/v1/chat/completions", r#"{"model":"a","model":"b"}"#);
        assert_eq!(facts.model(), Some("b"));
        let facts = read(
            "/v1/responses",
            r#"{"background":true,"stream":true,"background":false}"#,
        );
        assert!(!facts.background_stream());
        assert_eq!(facts.background_requested(), Some(false));
        // Only the last value's type counts: an earlier one of another
        // type is dropped with it.
        let facts = read(
            "/v1/chat/completions",
            r#"{"model":7,"stream":"yes","model":"m","stream":true}"#,
        );
        assert_eq!(facts.model(), Some("m"));
        assert_eq!(facts.stream_requested(), Some(true));
        let facts = read(
            "/v1/chat/completions",
            r#"{"model":"m","stream":true,"stream":"yes"}"#,
        );
        assert_eq!(facts.stream_requested(), None);
        assert_eq!(facts.model(), None);
    }

    /// The choices asked for: OpenAI's `n`, Gemini's candidate count
    /// nested in its generation config, each on its own wire only; one
    /// choice, or a count no provider serves several for, is no claim.
    #[test]
    fn the_body_says_how_many_choices_it_asks_for() {
        const GEMINI: &str = "/v1beta/models/gemini-x:streamGenerateContent";
        let asked = |path: &str, body: &str| {
            let slot = Arc::new(OperationSlots::default());
            let facts = RequestFacts::from_head(&request(path, None)).with_slots(slot.clone());
            assert_eq!(facts.choices_asked(), None, "not sent yet");
            slot.fill(&Bytes::copy_from_slice(body.as_bytes()));
            facts.choices_asked()
        };
        let chat = |body: &str| asked("/v1/chat/completions", body);
        let gemini = |body: &str| asked(GEMINI, body);
        for (body, expected) in [
            (r#"{"model":"m","n":2,"stream":true}"#, Some(2)),
            (r#"{"n":3}"#, Some(3)),
            (r#"{"n":2.0}"#, Some(2)),
            (r#"{"n":64}"#, Some(64)),
            (r#"{"n":128}"#, Some(MAX_CHOICES)),
            (r#"{"n":18446744073709551615}"#, Some(MAX_CHOICES)),
            // Named twice, the last counts, whatever the first was.
            (r#"{"n":1,"n":2}"#, Some(2)),
            (r#"{"n":"x","n":4}"#, Some(4)),
            (r#"{"n":2,"n":1}"#, None),
            (r#"{"n":2,"n":null}"#, None),
            (r#"{"model":"m"}"#, None),
            (r#"{"n":1}"#, None),
            (r#"{"n":0}"#, None),
            (r#"{"n":-2}"#, None),
            (r#"{"n":2.5}"#, None),
            (r#"{"n":1e30}"#, None),
            (r#"{"n":99999999999999999999999}"#, None),
            // OpenAI refuses a string `n`.
            (r#"{"n":"2"}"#, None),
            (r#"{"n":true}"#, None),
            (r#"{"n":[2]}"#, None),
            (r#"{"n":{"n":2}}"#, None),
            // Not at the top: a message's member, Gemini's spelling.
            (r#"{"messages":[{"n":2}],"metadata":{"n":3}}"#, None),
            (r#"{"generationConfig":{"candidateCount":2}}"#, None),
        ] {
            assert_eq!(chat(body), expected, "{body}");
        }
        for (body, expected) in [
            (
                r#"{"contents":[],"generationConfig":{"temperature":1,"candidateCount":2}}"#,
                Some(2),
            ),
            (r#"{"generation_config":{"candidate_count":3}}"#, Some(3)),
            (r#"{"generationConfig":{"candidate_count":3}}"#, Some(3)),
            // proto3 JSON reads an integer from a string too.
            (r#"{"generationConfig":{"candidateCount":"4"}}"#, Some(4)),
            (r#"{"generationConfig":{"candidateCount":"2.0"}}"#, Some(2)),
            (r#"{"generationConfig":{"candidateCount":2.0}}"#, Some(2)),
            (r#"{"generationConfig":{"candidateCount":100}}"#, Some(64)),
            (
                r#"{"generationConfig":{"candidateCount":1,"candidateCount":3}}"#,
                Some(3),
            ),
            // The last config counts whole: one without a count asks for
            // one.
            (
                r#"{"generationConfig":{"candidateCount":3},"generationConfig":{"topK":1}}"#,
                None,
            ),
            (r#"{"generationConfig":{"candidateCount":1}}"#, None),
            (r#"{"generationConfig":{"candidateCount":0}}"#, None),
            (r#"{"generationConfig":{"candidateCount":"two"}}"#, None),
            (r#"{"generationConfig":{"candidateCount":2.5}}"#, None),
            (r#"{"generationConfig":{"candidateCount":[2]}}"#, None),
            (r#"{"generationConfig":null}"#, None),
            (r#"{"generationConfig":[{"candidateCount":2}]}"#, None),
            (r#"{"generationConfig":"candidateCount"}"#, None),
            // Not at the top, nor OpenAI's member.
            (r#"{"candidateCount":2}"#, None),
            (r#"{"n":2}"#, None),
        ] {
            assert_eq!(gemini(body), expected, "{body}");
        }
        // A count of the wrong type costs the body's other facts nothing.
        let slot = Arc::new(OperationSlots::default());
        let facts = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .with_slots(slot.clone());
        slot.fill(&Bytes::from_static(
            br#"{"model":"g","n":{"x":[1]},"generationConfig":[],"stream":true}"#,
        ));
        assert_eq!(facts.stream_requested(), Some(true));
        assert_eq!(facts.model(), Some("g"));
        assert_eq!(facts.choices_asked(), None);
        // No such member on the other wires: nothing is claimed there.
        for path in ["/v1/responses", "/v1/messages", "/v1/embeddings"] {
            let body = r#"{"n":2,"generationConfig":{"candidateCount":2}}"#;
            assert_eq!(asked(path, body), None, "{path}");
        }
    }

    #[test]
    fn a_byte_order_mark_before_the_body_is_passed_over() {
        let slot = Arc::new(OperationSlots::default());
        let facts = RequestFacts::from_head(&request("/v1/chat/completions", None))
            .with_slots(slot.clone());
        slot.fill(&Bytes::from_static(
            "\u{feff}{\"model\":\"gpt-x\",\"stream\":true}".as_bytes(),
        ));
        assert_eq!(facts.stream_requested(), Some(true));
        assert_eq!(facts.model(), Some("gpt-x"));
    }

    #[test]
    fn the_path_names_the_model_where_the_provider_puts_it_there() {
        let facts = RequestFacts::from_head(&request(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            None,
        ));
        assert_eq!(facts.model(), Some("gemini-2.5-flash"));
        assert_eq!(facts.head_model(), Some("gemini-2.5-flash"));
        // A tuned model, Vertex AI's publisher model and its endpoint.
        for (path, model) in [
            ("/v1beta/tunedModels/my-tuned:generateContent", "my-tuned"),
            (
                "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent",
                "gemini-2.0-flash",
            ),
            (
                "/v1/projects/p/locations/us-central1/endpoints/1234:generateContent",
                "1234",
            ),
            // Claude on Vertex AI: its body names no model.
            (
                "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict",
                "claude-sonnet-4@20250514",
            ),
            (
                "/v1/projects/p/locations/global/publishers/anthropic/models/claude-x:rawPredict",
                "claude-x",
            ),
            // An Azure OpenAI deployment, whatever the body says.
            (
                "/openai/deployments/prod-east/chat/completions",
                "prod-east",
            ),
            ("/openai/deployments/legacy/completions", "legacy"),
            ("/apim/openai/deployments/east/chat/completions/", "east"),
            ("/openai/deployments/r/responses", "r"),
        ] {
            let facts = RequestFacts::from_head(&request(path, None));
            assert_eq!(facts.head_model(), Some(model), "{path}");
        }
        // Paths of these providers that name no model.
        for path in [
            "/v1/messages",
            "/v1/chat/completions",
            "/openai/deployments//chat/completions",
            "/openai/v1/responses",
        ] {
            let facts = RequestFacts::from_head(&request(path, None));
            assert!(facts.provider().is_some(), "{path}");
            assert_eq!(facts.head_model(), None, "{path}");
        }
        let told =
            RequestFacts::from_head(&request("/v1/chat/completions", None)).with_model("gpt-x");
        assert_eq!(told.head_model(), Some("gpt-x"));
    }

    /// What a layer below said of the attempt in flight, as the ladder
    /// reads it on a cancel; cleared by the next attempt; nothing kept
    /// without slots.
    #[test]
    fn the_call_below_is_the_last_word_of_the_attempt() {
        let slots = Arc::new(OperationSlots::default());
        let facts = RequestFacts::default().with_slots(slots);
        assert_eq!(facts.call_below(), CallBelow::Unrecorded);
        facts.call_held();
        assert_eq!(facts.call_below(), CallBelow::Held);
        // A fallback sends to its route, a route set under it to a member.
        facts.call_sent(&RouteId::new("spare"));
        facts.call_sent(&RouteId::new("key-a"));
        assert_eq!(facts.call_below(), CallBelow::Sent(RouteId::new("key-a")));
        // The same operation's facts elsewhere share the slots.
        let moved = facts.moved_to(&request("/v1/messages", None));
        assert_eq!(moved.call_below(), CallBelow::Sent(RouteId::new("key-a")));
        facts.attempt_sent();
        assert_eq!(moved.call_below(), CallBelow::Unrecorded);
        facts.call_held();
        facts.call_sent(&RouteId::new("key-a"));
        assert_eq!(facts.call_below(), CallBelow::Sent(RouteId::new("key-a")));

        let bare = RequestFacts::default();
        bare.call_sent(&RouteId::new("key-a"));
        assert_eq!(bare.call_below(), CallBelow::Unrecorded);
    }

    #[test]
    fn the_extension_wins_over_the_head() {
        let mut request = request("/v1/embeddings", None);
        let slot = Arc::new(OperationSlots::default());
        slot.fill(&Bytes::from_static(br#"{"stream":true}"#));
        request
            .extensions_mut()
            .insert(RequestFacts::default().with_slots(slot));
        assert_eq!(
            RequestFacts::of_request(&request).stream_requested(),
            Some(true)
        );
    }
}
