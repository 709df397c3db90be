use std::error::Error as StdError;
use std::fmt;
use std::time::{Duration, SystemTime};

use crate::{Action, Class, ClosedBy, Code, Evidence, Receipt, RouteId};

/// How many bytes of a provider's message a [`Failure`] keeps.
pub const MESSAGE_EXCERPT_BYTES: usize = 512;

/// How many bytes of a provider's word — an error's type or code, a finish
/// reason — are kept: the longest real one is a few dozen bytes
/// (`unsupported_country_region_territory`), and a server's megabyte-long
/// "code" would otherwise be copied into every failure, log line and span
/// that names it.
pub const PROVIDER_WORD_BYTES: usize = 64;

/// `word`, cut to [`PROVIDER_WORD_BYTES`] at a character boundary.
pub(crate) fn provider_word(word: impl Into<Box<str>>) -> Box<str> {
    let word = word.into();
    if word.len() <= PROVIDER_WORD_BYTES {
        word
    } else {
        excerpt(&word, PROVIDER_WORD_BYTES).into()
    }
}

/// A classified failure: the one error type every seawall layer produces and
/// reads.
///
/// It travels as a `tower::BoxError`; [`Failure::find`] digs it out of any
/// error chain, so a layer never needs to know which layer produced it.
///
/// ```
/// use seawall_core::{Action, Class, Code, Failure};
/// use std::time::Duration;
///
/// let failure = Failure::new(Code::RateLimited)
///     .with_status(429)
///     .with_retry_after(Duration::from_secs(2));
/// assert_eq!(failure.class(), Class::Transient);
/// assert_eq!(failure.action(), Action::Retry);
///
/// let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(failure);
/// let found = Failure::find(&*boxed).unwrap();
/// assert_eq!(found.code(), Code::RateLimited);
/// ```
#[derive(Debug, Clone)]
pub struct Failure {
    class: Class,
    code: Code,
    action: Option<Action>,
    /// The provider answered 2xx without generating anything (see
    /// [`Failure::with_nothing_generated`]).
    nothing_generated: bool,
    retry_after: Option<Duration>,
    reset_at: Option<SystemTime>,
    provider_type: Option<Box<str>>,
    provider_code: Option<Box<str>>,
    message: Option<Box<str>>,
    /// What few failures carry, boxed: a thin pointer keeps `Failure`
    /// (moved by value inside the layers' enums) from growing for them.
    rare: Option<Box<Rare>>,
    route: Option<RouteId>,
    evidence: Evidence,
    interrupted: Option<Box<Interrupted>>,
    receipt: Option<Box<Receipt>>,
}

/// What few failures carry.
#[derive(Clone, Default)]
struct Rare {
    /// A gRPC server's status details (see [`Failure::status_details`]).
    status_details: Option<Box<[u8]>>,
    /// The usage the provider reported for an answer that failed anyway
    /// (see [`Failure::usage`] and [`Failure::partial_usage`]).
    usage: Option<Reported>,
    /// The provider's id of the request that failed (see
    /// [`Failure::request_id`]).
    request_id: Option<Box<str>>,
    /// The request member the provider's error is about (see
    /// [`Failure::provider_param`]).
    provider_param: Option<Box<str>>,
    /// What cooled the route a refusal was made for (see
    /// [`Failure::cooled_by`]).
    cooled_by: Option<Code>,
    /// The upstream's headers that tell a client when and how much it may
    /// call again (see [`Failure::upstream_headers`]).
    upstream_headers: Option<http::HeaderMap>,
    /// A gRPC server's metadata beside its status (see
    /// [`Failure::status_metadata`]).
    status_metadata: Option<http::HeaderMap>,
    /// The HTTP/2 stream reset that broke the call (see
    /// [`Failure::stream_reset`]).
    stream_reset: Option<u32>,
    /// The client's error this failure was read from (see
    /// [`Failure::with_cause`]).
    cause: Option<std::sync::Arc<dyn StdError + Send + Sync>>,
}

/// A failed answer's usage, as far as the provider counted it: one slot
/// for both, since a whole count leaves no part to keep.
#[derive(Debug, Clone, Copy)]
enum Reported {
    /// The answer's whole count (see [`Failure::with_usage`]).
    Whole(crate::Usage),
    /// What a stream had counted when it broke (see
    /// [`Failure::with_partial_usage`]).
    Partial(crate::Usage),
}

/// The client's error is not printed: its text is not sanitised (see
/// [`Failure::with_cause`]).
impl fmt::Debug for Rare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rare")
            .field("status_details", &self.status_details)
            .field("usage", &self.usage)
            .field("request_id", &self.request_id)
            .field("provider_param", &self.provider_param)
            .field("cooled_by", &self.cooled_by)
            .field("stream_reset", &self.stream_reset)
            .field("upstream_headers", &self.upstream_headers)
            .field("status_metadata", &self.status_metadata)
            .field("cause", &self.cause.as_ref().map(|_| ".."))
            .finish()
    }
}

/// How much delivered text is kept by default for
/// [`Interrupted::delivered_text`]: the stream guard's record and the
/// resume layer's copy of a continuation's text stop there (1 MiB, some
/// 250 000 tokens of English), so an endless stream costs bounded memory.
pub const DEFAULT_MAX_DELIVERED_TEXT: usize = 1 << 20;

/// What had been delivered when a stream was interrupted after content.
///
/// With it a caller can resume (prefill the delivered text) instead of
/// restarting and showing the user a second answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Interrupted {
    /// Content events delivered to the caller.
    pub content_events: u64,
    /// Body bytes delivered to the caller.
    pub bytes: u64,
    /// The delivered text, reconstructed from the protocol's deltas, when
    /// reconstruction is on: the first choice's (candidate's) where a
    /// stream carries several.
    pub delivered_text: Option<String>,
    /// True when `delivered_text` stopped at its cap and is only a prefix.
    pub text_capped: bool,
    /// What ended the stream, as its own code: the in-stream error's
    /// (`overloaded`, `rate_limited`, `bad_request`, …), `transport` for a
    /// reset, `idle_timeout` for a silent gap, `timeout` for another of
    /// the guard's waits, `answer_too_large` for an event past the guard's
    /// cap, `protocol_violation` for a broken event stream (from the
    /// classifier, for a body it handed on: `truncated` for one that ended
    /// short of its length); `None` for a clean end without the finish
    /// marker, and for the guard's `max_duration`: the caller's bound on
    /// the whole stream blames no route, as a deadline does not (the
    /// interruptions metric counts it as `timeout`). The failure's own
    /// code stays `stream_interrupted` (surface): this says whether the
    /// route is to blame, for a breaker.
    pub cause: Option<crate::Code>,
    /// Content events delivered that carried a tool or function call (or
    /// other content that is not text), with text beside it or not. A
    /// stream cut while one was in flight cannot be continued by text
    /// alone.
    pub tool_call_events: u64,
}

impl Failure {
    /// A failure with `code` and the code's default class.
    pub fn new(code: Code) -> Self {
        Failure::with_class(code.default_class(), code)
    }

    /// The `stream_interrupted` failure that `cause` amounts to once content
    /// reached the caller: the provider's type and code kept, the cause's
    /// own code leading the message. The caller adds the evidence and the
    /// [`Interrupted`] record (with `cause: Some(cause.code())`).
    pub fn interrupted_by(cause: &Failure) -> Failure {
        let mut failure = Failure::new(Code::StreamInterrupted);
        if let Some(ty) = cause.provider_type() {
            failure = failure.with_provider_type(ty);
        }
        if let Some(code) = cause.provider_code() {
            failure = failure.with_provider_code(code);
        }
        if let Some(param) = cause.provider_param() {
            failure = failure.with_provider_param(param);
        }
        if let Some(details) = cause.status_details() {
            failure = failure.with_status_details(details);
        }
        if let Some(metadata) = cause.status_metadata() {
            failure = failure.with_status_metadata(metadata);
        }
        // A provider's terminal failure that counted what it used (the
        // Responses API's `response.failed`): the count stands.
        if let Some(usage) = cause.usage() {
            failure = failure.with_usage(usage);
        }
        if let Some(reason) = cause.stream_reset() {
            failure = failure.with_stream_reset(reason);
        }
        let message = match cause.message() {
            Some(message) => format!("{}: {message}", cause.code()),
            None => cause.code().to_string(),
        };
        failure.with_message(&message)
    }

    /// A failure with an explicit class.
    pub fn with_class(class: Class, code: Code) -> Self {
        Failure {
            class,
            code,
            action: None,
            nothing_generated: false,
            retry_after: None,
            reset_at: None,
            provider_type: None,
            provider_code: None,
            message: None,
            rare: None,
            route: None,
            evidence: Evidence::default(),
            interrupted: None,
            receipt: None,
        }
    }

    /// The same failure under another name: `code`, with that code's
    /// default class and action (an action set before is dropped); all it
    /// carries — evidence, usage, request id, receipt, the provider's
    /// words — stays. For a layer that reads a failure as another (the
    /// ladder's window: a deadline that is, for the fallback, a timeout).
    pub fn with_code(mut self, code: Code) -> Self {
        self.class = code.default_class();
        self.code = code;
        self.action = None;
        self
    }

    /// Sets the HTTP status (in the evidence).
    pub fn with_status(mut self, status: u16) -> Self {
        self.evidence.status = Some(status);
        self
    }

    /// Sets the provider's hint of when to try again.
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// Sets when a quota is expected to reset.
    pub fn with_reset_at(mut self, at: SystemTime) -> Self {
        self.reset_at = Some(at);
        self
    }

    /// Sets the provider's own error type string (e.g. `rate_limit_error`),
    /// cut to [`PROVIDER_WORD_BYTES`].
    pub fn with_provider_type(mut self, ty: impl Into<Box<str>>) -> Self {
        self.provider_type = Some(provider_word(ty));
        self
    }

    /// Sets the provider's own error code string (e.g. `insufficient_quota`),
    /// cut to [`PROVIDER_WORD_BYTES`].
    pub fn with_provider_code(mut self, code: impl Into<Box<str>>) -> Self {
        self.provider_code = Some(provider_word(code));
        self
    }

    /// Sets the request member the provider's error is about, as it named
    /// it (OpenAI's `param`, e.g. `messages` on a context that is too
    /// long), cut to [`PROVIDER_WORD_BYTES`]. Kept where few failures
    /// carry one: the error is handed on in the provider's shape.
    pub fn with_provider_param(mut self, param: impl Into<Box<str>>) -> Self {
        self.rare.get_or_insert_default().provider_param = Some(provider_word(param));
        self
    }

    /// Keeps a gRPC server's status details as it sent them: the decoded
    /// `grpc-status-details-bin`, a serialized `google.rpc.Status` (what
    /// tonic's `Status::details` holds), so they can be handed on to the
    /// caller (`seawall::tonic`).
    pub fn with_status_details(mut self, details: impl Into<Box<[u8]>>) -> Self {
        self.rare.get_or_insert_default().status_details = Some(details.into());
        self
    }

    /// Keeps the metadata a gRPC server sent beside its status: every
    /// field of `map` (the trailers, or the head of a trailers-only
    /// answer) but `grpc-status`, `grpc-message` and
    /// `grpc-status-details-bin`, which the failure carries in its own
    /// words — what tonic keeps as `Status::metadata` (a request id, a
    /// `grpc-retry-pushback-ms` for the caller's own logic), so the
    /// caller's `Status` has it with seawall as without (`seawall::tonic`).
    ///
    /// At most [`STATUS_METADATA_BYTES`](Failure::STATUS_METADATA_BYTES)
    /// of names and values: a field that would pass them is left out.
    /// Nothing is allocated when nothing is kept.
    ///
    /// Not [`with_upstream_headers`](Self::with_upstream_headers): those
    /// are an allow-list a proxy passes on to its own clients; this is
    /// whatever the server sent, for the caller of this one call.
    pub fn with_status_metadata(mut self, map: &http::HeaderMap) -> Self {
        let mut room = Self::STATUS_METADATA_BYTES;
        let mut kept: Option<http::HeaderMap> = None;
        for (name, value) in map {
            let size = name.as_str().len() + value.len();
            if size > room || Self::STATUS_FIELDS.contains(&name.as_str()) {
                continue;
            }
            room -= size;
            kept.get_or_insert_default()
                .append(name.clone(), value.clone());
        }
        if let Some(kept) = kept {
            self.rare.get_or_insert_default().status_metadata = Some(kept);
        }
        self
    }

    /// How many bytes of names and values of a gRPC server's metadata
    /// [`with_status_metadata`](Self::with_status_metadata) keeps: 8 KiB,
    /// far above a few request ids and hints, and a bound on what a server
    /// that sends megabytes of trailers makes every failure (and every
    /// clone of it, in a receipt, a retry's record) carry.
    pub const STATUS_METADATA_BYTES: usize = 8 * 1024;

    /// The fields that carry a gRPC status itself, which the failure
    /// keeps in its own words (code, message, details).
    const STATUS_FIELDS: [&'static str; 3] =
        ["grpc-status", "grpc-message", "grpc-status-details-bin"];

    /// Keeps the token usage the provider reported for an answer that
    /// failed anyway (an Anthropic stream whose finish counted the prompt
    /// of an empty answer): billed, though nothing was delivered. The
    /// receipt's attempt carries it.
    pub fn with_usage(mut self, usage: crate::Usage) -> Self {
        self.rare.get_or_insert_default().usage = Some(Reported::Whole(usage));
        self
    }

    /// Keeps the part of the token usage a billed stream had reported when
    /// it failed before its finish brought the whole count: Anthropic's
    /// `message_start` counts the input (its cache reads with it) and a
    /// connection reset before the first delta leaves the output unsaid;
    /// Gemini's chunks count as they go. A floor of what the attempt was
    /// billed, not its whole: [`usage`](Self::usage) stays `None`, and the
    /// receipt's attempt carries it as not whole
    /// ([`Attempt::usage_is_whole`](crate::Attempt::usage_is_whole)).
    /// Replaces a whole count set before, as [`with_usage`](Self::with_usage)
    /// replaces a part.
    pub fn with_partial_usage(mut self, usage: crate::Usage) -> Self {
        self.rare.get_or_insert_default().usage = Some(Reported::Partial(usage));
        self
    }

    /// Marks a failure after which the provider cannot have generated
    /// anything: one it answered 2xx without generating (a gRPC status in
    /// the response head, trailers-only, or in trailers before any
    /// message: every gRPC answer is HTTP 200, so the status alone would
    /// bill a refusal, a quota's `RESOURCE_EXHAUSTED` or a draining
    /// server's `UNAVAILABLE`, as a generation), or one before the request
    /// reached it (the connection was never made, the server refused the
    /// stream unprocessed).
    pub fn with_nothing_generated(mut self) -> Self {
        self.nothing_generated = true;
        self
    }

    /// Whether the failure says the provider generated nothing
    /// ([`with_nothing_generated`](Self::with_nothing_generated)): neither
    /// [billed](Self::billed) nor possibly billed.
    pub fn nothing_generated(&self) -> bool {
        self.nothing_generated
    }

    /// Keeps the provider's id of the request that failed (its
    /// `x-request-id` or `request-id` header, [`request_id_of`]): what its
    /// support asks for, and what a client SDK shows beside the error.
    pub fn with_request_id(mut self, id: &str) -> Self {
        self.rare.get_or_insert_default().request_id = Some(id.into());
        self
    }

    /// Keeps, of the headers of the upstream's failed answer, those that
    /// tell a client when and how much it may call again
    /// ([`UPSTREAM_HEADERS_KEPT`](Failure::UPSTREAM_HEADERS_KEPT)), so a
    /// proxy passes them on with the failure as it passes a success's
    /// headers. Never a credential or a cookie: only names on that list,
    /// at most 32 of them, each value at most 256 bytes. Nothing is
    /// allocated when none of them is there.
    pub fn with_upstream_headers(mut self, headers: &http::HeaderMap) -> Self {
        const MOST: usize = 32;
        const LONGEST_VALUE: usize = 256;
        let mut kept: Option<http::HeaderMap> = None;
        for (name, value) in headers {
            if value.len() > LONGEST_VALUE || !Self::keeps_upstream_header(name.as_str()) {
                continue;
            }
            let kept = kept.get_or_insert_default();
            if kept.len() >= MOST {
                break;
            }
            kept.append(name.clone(), value.clone());
        }
        if let Some(kept) = kept {
            self.rare.get_or_insert_default().upstream_headers = Some(kept);
        }
        self
    }

    /// The names (exact, or a prefix ending in `-`) of the upstream
    /// headers [`with_upstream_headers`](Self::with_upstream_headers)
    /// keeps: the rate-limit headers of OpenAI and the servers that copy
    /// it (`x-ratelimit-*`), Anthropic's (`anthropic-ratelimit-*`),
    /// OpenAI's `retry-after-ms` (its SDKs read it before `retry-after`)
    /// and `openai-processing-ms`. `retry-after` itself is not among them:
    /// it is read into [`retry_after`](Self::retry_after).
    pub const UPSTREAM_HEADERS_KEPT: [&'static str; 4] = [
        "x-ratelimit-",
        "anthropic-ratelimit-",
        "retry-after-ms",
        "openai-processing-ms",
    ];

    /// Whether `name` (lower case, as `http` keeps it) is on
    /// [`UPSTREAM_HEADERS_KEPT`](Self::UPSTREAM_HEADERS_KEPT).
    fn keeps_upstream_header(name: &str) -> bool {
        Self::UPSTREAM_HEADERS_KEPT
            .iter()
            .any(|kept| match kept.strip_suffix('-') {
                Some(_) => name.len() > kept.len() && name.starts_with(kept),
                None => name == *kept,
            })
    }

    /// Names what cooled the route a local refusal
    /// (`route_cooling_down`) was made for: the failure the route met
    /// (`quota_exhausted`, `auth`, `rate_limited`), which a proxy answers
    /// its client with as the route answered it.
    pub fn with_cooled_by(mut self, code: Code) -> Self {
        self.rare.get_or_insert_default().cooled_by = Some(code);
        self
    }

    /// Keeps the error code of the HTTP/2 stream reset (RST_STREAM) that
    /// broke the call: gRPC reads a status from it (`CANCEL` is
    /// `CANCELLED`, `ENHANCE_YOUR_CALM` `RESOURCE_EXHAUSTED`), where
    /// seawall's code says only `transport`.
    pub fn with_stream_reset(mut self, reason: u32) -> Self {
        self.rare.get_or_insert_default().stream_reset = Some(reason);
        self
    }

    /// Keeps the client's error this failure was read from (a
    /// `hyper::Error`, a `reqwest::Error`, tower's `Elapsed`, the caller's
    /// own type), for a caller to downcast through [`Failure::cause`].
    ///
    /// It is kept apart from the error's [`source`](StdError::source)
    /// chain, on purpose: its text is the client's, not sanitised (a
    /// request URL with its `?key=`, which [`Failure::with_message`]
    /// strips), and a printer of a whole chain (`anyhow`'s `{:#}`, a
    /// tracing layer) or a `Debug` of the failure would show it; and tonic,
    /// which maps a client's error to a `Status` by walking the chain,
    /// would map the client's error and drop seawall's verdict.
    pub fn with_cause(mut self, cause: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        self.rare.get_or_insert_default().cause = Some(cause.into().into());
        self
    }

    /// Keeps an excerpt (at most [`MESSAGE_EXCERPT_BYTES`], cut at a
    /// character boundary) of the provider's message, every URL in it
    /// without its userinfo and query: an HTTP client's error names the URL
    /// it failed on, and keys travel there (Gemini's `?key=`).
    pub fn with_message(mut self, message: &str) -> Self {
        let shown = crate::text::without_url_secrets(message);
        self.message = Some(excerpt(&shown, MESSAGE_EXCERPT_BYTES).into());
        self
    }

    /// Sets the route the failing attempt went to.
    pub fn with_route(mut self, route: RouteId) -> Self {
        self.route = Some(route);
        self
    }

    /// Replaces the evidence, keeping a status already set when the new
    /// evidence has none.
    pub fn with_evidence(mut self, mut evidence: Evidence) -> Self {
        if evidence.status.is_none() {
            evidence.status = self.evidence.status;
        }
        self.evidence = evidence;
        self
    }

    /// Overrides the action the table would derive. Used by layers that
    /// know more than one failure shows, e.g. the retry layer promoting
    /// repeated zero-byte timeouts to [`Action::Failover`].
    pub fn with_action(mut self, action: Action) -> Self {
        self.action = Some(action);
        self
    }

    /// Attaches what was delivered before an interruption.
    pub fn with_interrupted(mut self, interrupted: Interrupted) -> Self {
        self.interrupted = Some(Box::new(interrupted));
        self
    }

    /// Attaches the operation's receipt.
    pub fn with_receipt(mut self, receipt: Receipt) -> Self {
        self.receipt = Some(Box::new(receipt));
        self
    }

    /// The failure's class.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The failure's stable code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// What to do: an explicit override, else [`Action::decide`].
    pub fn action(&self) -> Action {
        self.action
            .unwrap_or_else(|| Action::decide(self.class, self.code, &self.evidence))
    }

    /// The provider's hint of when to try again, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// When an exhausted quota is expected to reset, if known.
    pub fn reset_at(&self) -> Option<SystemTime> {
        self.reset_at
    }

    /// The HTTP status, if a response arrived.
    pub fn status(&self) -> Option<u16> {
        self.evidence.status
    }

    /// Whether the provider billed the attempt that ended in this failure:
    /// it answered 2xx (an empty or broken answer, a stream that failed
    /// before content) and did not refuse before generating (see
    /// [`with_nothing_generated`](Self::with_nothing_generated)).
    pub fn billed(&self) -> bool {
        !self.nothing_generated && self.status().is_some_and(|s| (200..300).contains(&s))
    }

    /// The provider's own error type string.
    pub fn provider_type(&self) -> Option<&str> {
        self.provider_type.as_deref()
    }

    /// The provider's own error code string.
    pub fn provider_code(&self) -> Option<&str> {
        self.provider_code.as_deref()
    }

    /// The request member the provider's error is about (see
    /// [`with_provider_param`](Self::with_provider_param)).
    pub fn provider_param(&self) -> Option<&str> {
        self.rare.as_ref()?.provider_param.as_deref()
    }

    /// A bounded excerpt of the provider's message.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// A gRPC server's status details, decoded, as it sent them (see
    /// [`with_status_details`](Self::with_status_details)).
    pub fn status_details(&self) -> Option<&[u8]> {
        self.rare.as_ref()?.status_details.as_deref()
    }

    /// The usage the provider reported for this failed answer, if it did
    /// (see [`with_usage`](Self::with_usage)).
    pub fn usage(&self) -> Option<crate::Usage> {
        match self.rare.as_ref()?.usage? {
            Reported::Whole(usage) => Some(usage),
            Reported::Partial(_) => None,
        }
    }

    /// The part of its usage a billed stream had reported when it failed
    /// before its whole count, if that is all that is known (see
    /// [`with_partial_usage`](Self::with_partial_usage)).
    pub fn partial_usage(&self) -> Option<crate::Usage> {
        match self.rare.as_ref()?.usage? {
            Reported::Partial(usage) => Some(usage),
            Reported::Whole(_) => None,
        }
    }

    /// The provider's id of the request that failed, if its answer named
    /// one (see [`with_request_id`](Self::with_request_id)).
    pub fn request_id(&self) -> Option<&str> {
        self.rare.as_ref()?.request_id.as_deref()
    }

    /// The upstream's headers kept with this failure
    /// ([`with_upstream_headers`](Self::with_upstream_headers)): its
    /// rate-limit headers and the like, for a proxy to pass on with its
    /// answer. `None` when the answer carried none of them.
    pub fn upstream_headers(&self) -> Option<&http::HeaderMap> {
        self.rare.as_ref()?.upstream_headers.as_ref()
    }

    /// The metadata a gRPC server sent beside its status, its status
    /// fields left out (see
    /// [`with_status_metadata`](Self::with_status_metadata)); `None` when
    /// it sent none.
    pub fn status_metadata(&self) -> Option<&http::HeaderMap> {
        self.rare.as_ref()?.status_metadata.as_ref()
    }

    /// The client's error this failure was read from, when classification
    /// kept it ([`Failure::with_cause`]): downcast it, or walk its own
    /// chain, to reach the client's types. Not sanitised.
    pub fn cause(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.rare.as_ref()?.cause.as_deref()
    }

    /// What cooled the route this local refusal was made for, if it is
    /// one (see [`with_cooled_by`](Self::with_cooled_by)).
    pub fn cooled_by(&self) -> Option<Code> {
        self.rare.as_ref()?.cooled_by
    }

    /// The error code of the HTTP/2 stream reset that broke the call, if
    /// one did (see [`with_stream_reset`](Self::with_stream_reset)).
    pub fn stream_reset(&self) -> Option<u32> {
        self.rare.as_ref()?.stream_reset
    }

    /// The route the failing attempt went to.
    pub fn route(&self) -> Option<&RouteId> {
        self.route.as_ref()
    }

    /// What the transport saw.
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// Mutable access to the evidence, for layers that add what they saw.
    pub fn evidence_mut(&mut self) -> &mut Evidence {
        &mut self.evidence
    }

    /// What had been delivered before an interruption after content.
    pub fn interrupted(&self) -> Option<&Interrupted> {
        self.interrupted.as_deref()
    }

    /// The operation's receipt, when a retry or fallback layer attached one.
    pub fn receipt(&self) -> Option<&Receipt> {
        self.receipt.as_deref()
    }

    /// Mutable access to the receipt slot.
    pub fn receipt_mut(&mut self) -> &mut Option<Box<Receipt>> {
        &mut self.receipt
    }

    /// True when this failure is the shape of a route that accepts
    /// connections and does not generate: a timeout (or a breaker refusal)
    /// before a single body byte arrived.
    pub fn is_route_shaped(&self) -> bool {
        matches!(
            self.code,
            Code::Timeout | Code::FirstByteTimeout | Code::CircuitOpen
        ) && self.evidence.nothing_arrived()
    }

    /// True when the call was refused on this side and reached no route: a
    /// breaker's refusal ([`Code::is_refusal`]: its breaker open, its route
    /// cooling down), or an `overloaded` closed by us with no status — tower's
    /// `LoadShed` over a local concurrency or rate limit refused it unsent,
    /// as the classifier reads it. It says nothing of the route: a breaker
    /// does not count it, and a route set neither demotes nor times the
    /// member it chose (they share the local limit: one burst past it
    /// would otherwise condemn every member). A provider's own overload (a
    /// 529, a 503) carries its status and is no refusal.
    pub fn is_refused_here(&self) -> bool {
        self.code.is_refusal()
            || (self.code == Code::Overloaded
                && self.evidence.closed_by == Some(ClosedBy::Us)
                && self.evidence.status.is_none())
    }

    /// Finds a `Failure` in an error or anywhere in its source chain,
    /// through the payload of an `io::Error` too (`io::Error::source`
    /// skips it): a body read through an `AsyncRead` bridge (tokio-util's
    /// `StreamReader`) carries the body's failure there, and read past it
    /// the verdict was lost to `unknown`.
    pub fn find<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a Failure> {
        seawall_internal::error::links(error).find_map(|link| link.downcast_ref::<Failure>())
    }

    /// Takes the `Failure` out of a boxed error when the box holds one
    /// directly, giving the box back otherwise.
    pub fn downcast(
        error: Box<dyn StdError + Send + Sync>,
    ) -> Result<Failure, Box<dyn StdError + Send + Sync>> {
        error.downcast::<Failure>().map(|boxed| *boxed)
    }

    /// Takes an owned `Failure` out of a boxed error: the box's own when it
    /// holds one directly (no copy), else a clone of the first one
    /// [`Failure::find`] sees in its source chain (the wrappers are
    /// dropped); the box back, untouched, when there is none.
    pub fn extract(
        error: Box<dyn StdError + Send + Sync>,
    ) -> Result<Failure, Box<dyn StdError + Send + Sync>> {
        Failure::downcast(error).or_else(|other| match Failure::find(&*other) {
            Some(found) => Ok(found.clone()),
            None => Err(other),
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}", self.code, self.class)?;
        if let Some(status) = self.evidence.status {
            write!(f, ", status {status}")?;
        }
        if let Some(route) = &self.route {
            write!(f, ", route {route}")?;
        }
        f.write_str(")")?;
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

impl StdError for Failure {}

/// The longest request id kept: ids are tens of bytes (`req_…`); a header
/// longer than this is no id worth carrying in every failure.
const MAX_REQUEST_ID_BYTES: usize = 128;

/// The provider's id of a request, from its answer's headers: OpenAI's
/// (and most compatible servers') `x-request-id`, Anthropic's
/// `request-id`. Only visible ASCII of at most 128 bytes is an id.
pub fn request_id_of(headers: &http::HeaderMap) -> Option<&str> {
    ["x-request-id", "request-id"].iter().find_map(|name| {
        let value = headers.get(*name)?.as_bytes();
        let visible = !value.is_empty()
            && value.len() <= MAX_REQUEST_ID_BYTES
            && value.iter().all(|b| b.is_ascii_graphic());
        visible.then(|| std::str::from_utf8(value).ok()).flatten()
    })
}

pub use seawall_internal::excerpt;

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure carried in an io error's payload (an `AsyncRead` bridge
    /// over a body) is found there.
    #[test]
    fn a_failure_in_an_io_errors_payload_is_found() {
        let failure = Failure::new(Code::Overloaded);
        let wrapped = std::io::Error::other(std::io::Error::other(failure));
        assert_eq!(
            Failure::find(&wrapped).map(Failure::code),
            Some(Code::Overloaded)
        );
    }

    /// Refused here: a breaker's refusal, or a local shed (closed by us, no
    /// status). A provider's overload, or one of unknown origin, reached
    /// the route.
    #[test]
    fn refused_here_is_a_breakers_refusal_or_a_local_shed() {
        let shed = |closed_by, status: Option<u16>| {
            let mut failure = Failure::new(Code::Overloaded);
            failure.evidence_mut().closed_by = closed_by;
            failure.evidence_mut().status = status;
            failure
        };
        assert!(Failure::new(Code::CircuitOpen).is_refused_here());
        assert!(Failure::new(Code::RouteCoolingDown).is_refused_here());
        assert!(shed(Some(ClosedBy::Us), None).is_refused_here());
        assert!(!shed(Some(ClosedBy::Us), Some(503)).is_refused_here());
        assert!(!shed(Some(ClosedBy::Them), None).is_refused_here());
        assert!(!shed(None, Some(529)).is_refused_here());
        let mut timeout = Failure::new(Code::Timeout);
        timeout.evidence_mut().closed_by = Some(ClosedBy::Us);
        assert!(!timeout.is_refused_here());
    }

    /// A server's megabyte-long error type or code is kept to a word's
    /// length, cut on a character boundary; real ones are kept whole.
    #[test]
    fn provider_words_are_bounded() {
        let long = "é".repeat(1 << 19);
        let failure = Failure::new(Code::Unknown)
            .with_provider_type(long.clone())
            .with_provider_code(long.as_str())
            .with_provider_param(long.as_str());
        for word in [
            failure.provider_type(),
            failure.provider_code(),
            failure.provider_param(),
        ] {
            let word = word.unwrap();
            assert_eq!(word.len(), PROVIDER_WORD_BYTES);
            assert!(word.chars().all(|c| c == 'é'));
        }
        let real = "unsupported_country_region_territory";
        let failure = Failure::new(Code::Auth).with_provider_code(real);
        assert_eq!(failure.provider_code(), Some(real));
        let finish = crate::Finish::new(crate::FinishKind::Other, &long);
        assert!(
            finish.reason.len() <= PROVIDER_WORD_BYTES,
            "{}",
            finish.reason.len()
        );
    }

    /// `x-request-id` first, then `request-id`; only a visible-ASCII value
    /// of at most 128 bytes is an id.
    #[test]
    fn a_request_id_is_read_from_either_header() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(request_id_of(&headers), None);
        headers.insert(
            "request-id",
            "req_011CSHoEeqs5C35K2UUqR7Fy".parse().unwrap(),
        );
        assert_eq!(
            request_id_of(&headers),
            Some("req_011CSHoEeqs5C35K2UUqR7Fy")
        );
        headers.insert("x-request-id", "req_abc".parse().unwrap());
        assert_eq!(request_id_of(&headers), Some("req_abc"));
        for bad in ["a b", "", &"x".repeat(129)] {
            headers.insert("x-request-id", bad.parse().unwrap());
            headers.remove("request-id");
            assert_eq!(request_id_of(&headers), None, "{bad:?}");
        }
        let failure = Failure::new(Code::BadRequest).with_request_id("req_1");
        assert_eq!(failure.clone().request_id(), Some("req_1"));
        assert_eq!(Failure::new(Code::BadRequest).request_id(), None);
    }

    #[derive(Debug)]
    struct Wrapper(Box<dyn StdError + Send + Sync>);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("wrapped")
        }
    }
    impl StdError for Wrapper {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.0)
        }
    }

    #[test]
    fn find_walks_the_source_chain() {
        let inner = Box::new(Failure::new(Code::Overloaded).with_status(529));
        let outer: Box<dyn StdError + Send + Sync> = Box::new(Wrapper(Wrapper(inner).into()));
        let found = Failure::find(&*outer).expect("found through two wrappers");
        assert_eq!(found.code(), Code::Overloaded);
        assert_eq!(found.status(), Some(529));

        let plain: Box<dyn StdError + Send + Sync> = "not ours".into();
        assert!(Failure::find(&*plain).is_none());
    }

    #[test]
    fn extract_takes_the_box_clones_from_the_chain_or_gives_the_box_back() {
        let direct: Box<dyn StdError + Send + Sync> =
            Box::new(Failure::new(Code::RateLimited).with_status(429));
        let taken = Failure::extract(direct).expect("held directly");
        assert_eq!(
            (taken.code(), taken.status()),
            (Code::RateLimited, Some(429))
        );

        let inner = Box::new(Failure::new(Code::Overloaded).with_status(529));
        let wrapped: Box<dyn StdError + Send + Sync> = Box::new(Wrapper(Wrapper(inner).into()));
        let cloned = Failure::extract(wrapped).expect("found through two wrappers");
        assert_eq!(
            (cloned.code(), cloned.status()),
            (Code::Overloaded, Some(529))
        );

        let plain: Box<dyn StdError + Send + Sync> = "not ours".into();
        let back = Failure::extract(plain).expect_err("no failure anywhere");
        assert_eq!(back.to_string(), "not ours");
    }

    #[test]
    fn message_is_bounded_at_a_char_boundary() {
        let long = "é".repeat(1000);
        let failure = Failure::new(Code::BadRequest).with_message(&long);
        let kept = failure.message().unwrap();
        assert!(kept.len() <= MESSAGE_EXCERPT_BYTES);
        assert!(kept.len() >= MESSAGE_EXCERPT_BYTES - 1);
        assert!(kept.chars().all(|c| c == 'é'));
    }

    #[test]
    fn action_override_wins_and_route_shape_needs_silence() {
        let timeout = Failure::new(Code::Timeout);
        assert_eq!(timeout.action(), Action::Retry);
        assert!(timeout.is_route_shaped());
        let promoted = timeout.clone().with_action(Action::Failover);
        assert_eq!(promoted.action(), Action::Failover);

        let evidence = Evidence {
            bytes: 40,
            ..Evidence::default()
        };
        let spoke = Failure::new(Code::Timeout).with_evidence(evidence);
        assert!(!spoke.is_route_shaped());
    }

    #[test]
    fn display_names_code_class_and_status() {
        let failure = Failure::new(Code::ContextTooLong)
            .with_status(400)
            .with_message("maximum context length is 8192 tokens");
        assert_eq!(
            failure.to_string(),
            "context_too_long (permanent, status 400): maximum context length is 8192 tokens"
        );
    }

    /// Only the allow-listed headers of a failed answer are kept: its
    /// rate limits, never a credential or a cookie; none, no allocation.
    #[test]
    fn a_failure_keeps_only_the_upstreams_rate_limit_headers() {
        let headers: http::HeaderMap = [
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6s"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("retry-after-ms", "1500"),
            ("openai-processing-ms", "12"),
            ("retry-after", "2"),
            ("set-cookie", "s=1"),
            ("authorization", "Bearer sk-x"),
            ("x-api-key", "sk-x"),
            ("x-ratelimit-", "no name past the prefix"),
            ("retry-after-msx", "1"),
            ("content-type", "application/json"),
        ]
        .into_iter()
        .map(|(n, v)| {
            (
                http::HeaderName::from_static(n),
                http::HeaderValue::from_static(v),
            )
        })
        .collect();
        let failure = Failure::new(Code::RateLimited).with_upstream_headers(&headers);
        let kept = failure.upstream_headers().expect("kept");
        let mut names: Vec<_> = kept.keys().map(http::HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "anthropic-ratelimit-requests-remaining",
                "openai-processing-ms",
                "retry-after-ms",
                "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-tokens",
            ]
        );
        assert_eq!(kept["x-ratelimit-reset-tokens"], "6s");
        let none = Failure::new(Code::RateLimited).with_upstream_headers(&http::HeaderMap::new());
        assert!(none.upstream_headers().is_none());
        assert!(none.rare.is_none(), "nothing allocated");
    }

    /// A gRPC server's metadata is kept beside its status, the status's
    /// own fields left out, up to its bound; none, no allocation.
    #[test]
    fn a_failure_keeps_a_grpc_servers_metadata_within_its_bound() {
        let mut map = http::HeaderMap::new();
        for (name, value) in [
            ("grpc-status", "5"),
            ("grpc-message", "no such order"),
            ("grpc-status-details-bin", "CAU"),
            ("x-request-id", "r-1"),
            ("grpc-retry-pushback-ms", "400"),
        ] {
            map.insert(name, http::HeaderValue::from_static(value));
        }
        let big = "x".repeat(Failure::STATUS_METADATA_BYTES);
        map.insert("x-big", big.parse().unwrap());
        map.append("x-request-id", http::HeaderValue::from_static("r-2"));
        let failure = Failure::new(Code::NotFound).with_status_metadata(&map);
        let kept = failure.status_metadata().expect("kept");
        let mut names: Vec<_> = kept.keys().map(http::HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["grpc-retry-pushback-ms", "x-request-id"]);
        let ids: Vec<_> = kept.get_all("x-request-id").iter().collect();
        assert_eq!(ids, ["r-1", "r-2"]);
        // An interruption by the status keeps it, as it keeps the details.
        let interrupted = Failure::interrupted_by(&failure);
        assert_eq!(interrupted.status_metadata(), Some(kept));

        let only_status: http::HeaderMap = [(
            http::HeaderName::from_static("grpc-status"),
            http::HeaderValue::from_static("5"),
        )]
        .into_iter()
        .collect();
        let none = Failure::new(Code::NotFound).with_status_metadata(&only_status);
        assert!(none.status_metadata().is_none());
        assert!(none.rare.is_none(), "nothing allocated");
    }
}
