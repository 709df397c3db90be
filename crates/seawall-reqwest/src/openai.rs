//! The async-openai adapter: seawall under `async_openai::Client`.
//!
//! [`OpenAiService`] is the tower service to hand
//! [`Client::with_http_service`](async_openai::Client::with_http_service).
//! Each call builds the `reqwest::Request` **once** from async-openai's
//! [`HttpRequestFactory`], turns it into an `http::Request<reqwest::Body>`
//! and sends it through the service it wraps — a seawall stack over
//! [`ReqwestService`](crate::ReqwestService) — then hands async-openai a
//! `reqwest::Response` whose body streams the stack's body frame by frame.
//!
//! # One ladder
//!
//! - `with_http_service` replaces async-openai's default executor, and with
//!   it async-openai's own retry (`OpenAIRetry`); nothing of it runs
//!   underneath.
//! - The adapter calls the factory once per call; a retry or a fallback
//!   replays the request body from seawall's own
//!   [`ReplayBody`](seawall_core::recording::ReplayBody), byte for byte, up
//!   to a cap. A body whole in one frame (async-openai's JSON) is kept
//!   whatever its size; a streamed one (a multipart upload: a
//!   transcription's audio file) is recorded up to
//!   [1 MiB](seawall_core::recording::DEFAULT_MAX_REPLAY_BYTES) by default,
//!   and past that it is sent once, intact, and not retried or failed over
//!   (the receipt's stop reason is `not_replayable`), where async-openai's
//!   own retry would have built it again from the factory. For such
//!   uploads raise the cap: `RetryPolicy::max_replay_bytes` (through
//!   `Stack::retry_policy`, from the preset's policy) and
//!   `FallbackLayer::max_replay_bytes`; the recording holds that many
//!   bytes in memory for each call in flight.
//! - A failure before the response reaches async-openai as
//!   `OpenAIError::Boxed`; one in the body (an interruption, a verdict after
//!   content) as the body's error, which reqwest reports as a decode error
//!   (`is_decode()`, not `is_body()`) — a stream's as
//!   `OpenAIError::StreamError`, whose text is always `Transport error:
//!   error decoding response body` (nothing of seawall's failure), a unary
//!   answer's as `OpenAIError::Reqwest`. Over a stack with
//!   `ClassifyLayer` every response it gets is a 2xx (the classifier fails
//!   the rest). async-openai's retry (`OpenAIRetryLayer`, and
//!   `SimpleRetryPolicy`'s `should_retry`) retries only 429 and 5xx
//!   responses and `OpenAIError::Reqwest` connect errors, so even an
//!   `OpenAIRetryLayer` stacked above the adapter by mistake never fires:
//!   one ladder, seawall's. async-openai reads a stream in a task of its
//!   own and never sends it again.
//! - A stream asked for (`create_stream`: `"stream": true` in the body, or
//!   `Accept: text/event-stream`) and answered 2xx labelled JSON
//!   (`application/json` or any `+json` type, parameters and case
//!   ignored) — a server that ignores `"stream": true` and sends one whole
//!   JSON answer — fails as `OpenAIError::Boxed` of a permanent
//!   `protocol_violation` (in the [`Outcome`] too), the body unread.
//!   async-openai would read it as server-sent events, find no `data:`
//!   line and end the stream with no item and no error: an empty answer
//!   that looks complete, generated and billed all the same. Any other
//!   label (`text/plain`, none at all) streams as it comes: async-openai
//!   reads the events whatever the label says.
//! - Call `with_http_service` last: async-openai's
//!   `Client::with_http_client` puts its own executor (and its retry)
//!   back, and the stack is then bypassed. `Client::build(http, config)`
//!   starts with that executor too: follow it with `with_http_service`.
//!
//! # The verdict
//!
//! async-openai consumes the response (its extensions, where the
//! [`Receipt`] is, never reach the caller) and turns a stream's body error
//! into a string. [`Failure::find`] on the `OpenAIError` finds the failure
//! only for a unary answer's body failure (`OpenAIError::Reqwest`: the
//! source chain of reqwest's error reaches it). For a failure before the
//! response it finds nothing, as `OpenAIError::Boxed` is
//! `#[error(transparent)]` (on the boxed error inside
//! `OpenAIError::Boxed(e)`, `Failure::find(&*e)` does); for a stream's,
//! nothing is left to find. Run the call in [`scope`] instead: the
//! adapter fills the [`Outcome`] it returns, from the response head and
//! from the body as async-openai reads it (also from the task async-openai
//! spawns to read a stream).
//!
//! # Deadlines
//!
//! async-openai builds its request with no extensions, and none can be
//! given through it: a per-call [`Deadline`](seawall_core::Deadline) (or
//! [`AnswerBy`](seawall_core::AnswerBy)) cannot reach the stack through
//! the SDK. The stack's total deadline (`DeadlineLayer::new`) is then the
//! bound of every call on that client, and it bounds the response body
//! too: a stream still running when it passes fails with
//! `deadline_exceeded`. Size the total for the longest stream the client
//! will read, or build a separate client (over its own stack) for each
//! class of call: short unary calls, long streams.
//!
//! ```no_run
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use async_openai::{Client, config::OpenAIConfig};
//! use async_openai::types::chat::CreateChatCompletionRequestArgs;
//! use seawall::classify::ClassifyLayer;
//! use seawall::stack::Stack;
//! use seawall_reqwest::{OpenAiService, ReqwestService};
//!
//! // The stack first: `client()` and `ReqwestService::new` install ring as
//! // the process default crypto provider, which `with_config` needs.
//! let stack = Stack::interactive()
//!     .build(&ClassifyLayer::openai(), ReqwestService::new(seawall_reqwest::client()?));
//! let config = OpenAIConfig::new().with_api_base("http://127.0.0.1:8080/v1");
//! let client = Client::with_config(config).with_http_service(OpenAiService::new(stack));
//! // The same: `seawall_reqwest::openai_client(config, stack)`.
//!
//! let request = CreateChatCompletionRequestArgs::default()
//!     .model("gpt-x")
//!     .messages([async_openai::types::chat::ChatCompletionRequestUserMessage::from("hi").into()])
//!     .build()?;
//! let (result, outcome) = seawall_reqwest::scope(client.chat().create(request)).await;
//! match result {
//!     Ok(answer) => println!("{:?} in {} attempts", answer.choices[0].message.content, outcome.attempts()),
//!     Err(_) => println!("failed: {:?}", outcome.code()),
//! }
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use seawall_core::facts::OperationSlots;
use seawall_core::{BoxError, Class, Code, Failure, Receipt, RequestFacts};
use seawall_internal::headers::media_type;
use seawall_internal::json::is_json_media;
use tower_layer::Layer;
use tower_service::Service;

tokio::task_local! {
    static OUTCOME: Outcome;
}

/// Runs `future` (calls through [`OpenAiService`]) and returns its output
/// with the [`Outcome`] of the last call made in it.
///
/// ```no_run
/// # async fn f(client: async_openai::Client<async_openai::config::OpenAIConfig>,
/// #            request: async_openai::types::chat::CreateChatCompletionRequest) {
/// let (result, outcome) = seawall_reqwest::scope(client.chat().create(request)).await;
/// if result.is_err() {
///     let failure = outcome.failure().expect("seawall's verdict");
///     eprintln!("{} ({}) after {} attempts", failure.code(), failure.class(), outcome.attempts());
/// }
/// # }
/// ```
///
/// A stream is read after `create_stream` returns: read it inside the scope,
/// or keep the `Outcome` and look once the stream has ended — the adapter
/// keeps filling it as the body is read.
///
/// The scope is a task-local, read when the adapter is called: a call made
/// in another task is outside it (a `tokio::spawn` inside the scope, or a
/// `tower::buffer::Buffer` above the adapter, whose worker task makes the
/// calls). Put such layers under the adapter, or scope inside the task.
pub async fn scope<F: Future>(future: F) -> (F::Output, Outcome) {
    let outcome = Outcome::default();
    let output = OUTCOME.scope(outcome.clone(), future).await;
    (output, outcome)
}

/// What seawall made of a call made through async-openai: its
/// [`Failure`] (code, class, delivered text) and its [`Receipt`].
///
/// Cheap to clone; clones share the state. Filled by [`OpenAiService`] for
/// calls made inside [`scope`]; with several calls in one scope it
/// describes the last one to start, whatever an earlier one's stream does
/// after that.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    calls: u32,
    answered: bool,
    ended: bool,
    receipt: Option<Receipt>,
    failure: Option<Failure>,
    error: Option<String>,
}

impl Outcome {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn current() -> Option<Outcome> {
        OUTCOME.try_with(Outcome::clone).ok()
    }

    /// Starts describing a new call, and hands that call its [`Call`].
    fn begin(&self) -> Call {
        let mut state = self.lock();
        let calls = state.calls + 1;
        *state = State {
            calls,
            ..State::default()
        };
        Call {
            outcome: self.clone(),
            number: calls,
        }
    }

    /// Calls made through the adapter in this scope.
    pub fn calls(&self) -> u32 {
        self.lock().calls
    }

    /// seawall's failure, when the call failed: before the response (the
    /// ladder's verdict) or in its body (an interruption, with what was
    /// delivered).
    pub fn failure(&self) -> Option<Failure> {
        self.lock().failure.clone()
    }

    /// The failure's code.
    pub fn code(&self) -> Option<Code> {
        self.lock().failure.as_ref().map(Failure::code)
    }

    /// An error that is not a seawall [`Failure`]: async-openai's own
    /// (building the request) or one from a stack without `ClassifyLayer`.
    /// Its whole chain's text, each error's then its source's, joined by
    /// `: `: a wrapper's own text (the receipt a ladder attached) names
    /// only its part.
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    /// The text delivered before an interruption, as the stream guard
    /// reconstructed it.
    pub fn delivered_text(&self) -> Option<String> {
        let state = self.lock();
        let interrupted = state.failure.as_ref()?.interrupted()?;
        interrupted.delivered_text.clone()
    }

    /// The receipt: the failure's, else the one on an error that is no
    /// failure ([`Receipt::of_error`]), else the response's.
    pub fn receipt(&self) -> Option<Receipt> {
        let state = self.lock();
        state
            .failure
            .as_ref()
            .and_then(Failure::receipt)
            .or(state.receipt.as_ref())
            .cloned()
    }

    /// Upstream attempts, by the receipt (0 without one).
    pub fn attempts(&self) -> usize {
        self.receipt().map_or(0, |receipt| receipt.attempts.len())
    }

    /// True when a response came back and nothing failed since: no
    /// failure before the response, none in its body so far.
    pub fn is_ok(&self) -> bool {
        let state = self.lock();
        state.answered && state.failure.is_none() && state.error.is_none()
    }

    /// True once the body was read to its end without an error.
    /// (async-openai stops reading a stream at `data: [DONE]`, which may be
    /// just before the end: use [`Outcome::is_ok`] and the finish reason
    /// async-openai reports to judge an answer.)
    pub fn body_ended(&self) -> bool {
        self.lock().ended
    }
}

/// One call's hold on the [`Outcome`] of its scope.
///
/// What a call reports counts only while it is the last call to have
/// started: a stream async-openai still reads in its own task may fail, or
/// end, after a later call of the same scope began, and that must not be
/// read as the later call's verdict.
#[derive(Debug, Clone)]
struct Call {
    outcome: Outcome,
    /// The call's number in the scope ([`Outcome::calls`] when it began).
    number: u32,
}

impl Call {
    /// The scope's state, unless a later call began since this one.
    fn state(&self) -> Option<MutexGuard<'_, State>> {
        let state = self.outcome.lock();
        (state.calls == self.number).then_some(state)
    }

    fn answered(&self, receipt: Option<Receipt>) {
        if let Some(mut state) = self.state() {
            state.answered = true;
            state.receipt = receipt;
        }
    }

    fn failed(&self, error: &(dyn std::error::Error + 'static)) {
        if let Some(mut state) = self.state() {
            match Failure::find(error) {
                Some(failure) => state.failure = Some(failure.clone()),
                None => {
                    state.error = Some(chain_text(error));
                    // The attempts made before an error of another kind
                    // were made, and billed, all the same. One with no
                    // receipt of its own (a body error after the answer,
                    // from a stack that did not classify it) keeps the
                    // head's: the answered attempt stays on the record.
                    if let Some(receipt) = Receipt::of_error(error) {
                        state.receipt = Some(receipt.clone());
                    }
                }
            }
        }
    }

    fn ended(&self) {
        if let Some(mut state) = self.state() {
            state.ended = true;
        }
    }
}

/// The most of an error's chain [`Outcome::error`] says, in bytes.
const CHAIN_TEXT_BYTES: usize = 4096;

/// `error`'s text, then each source's, joined by `: `, as `anyhow`'s
/// `{:#}` prints a chain.
fn chain_text(error: &(dyn std::error::Error + 'static)) -> String {
    seawall_internal::error::chain_text(error, CHAIN_TEXT_BYTES)
}

/// The service for `async_openai::Client::with_http_service`, over `S`: a
/// seawall stack taking `http::Request<reqwest::Body>`. See the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct OpenAiService<S> {
    inner: S,
}

impl<S> OpenAiService<S> {
    /// The adapter over `inner`.
    ///
    /// Installs ring as the process default crypto provider, unless one is
    /// installed ([`install_crypto_provider`](crate::install_crypto_provider)):
    /// async-openai's `Client::with_config` and `Client::new` build a
    /// `reqwest::Client` that panics without one. That helps only a client
    /// built **after** this call; in
    /// `Client::with_config(config).with_http_service(OpenAiService::new(stack))`
    /// `with_config` runs first, and it is the stack's own constructors
    /// ([`ReqwestService::new`](crate::ReqwestService::new),
    /// [`client`](crate::client)) that installed it. [`openai_client`]
    /// does not depend on that.
    pub fn new(inner: S) -> Self {
        crate::install_crypto_provider();
        OpenAiService { inner }
    }

    seawall_core::define_inner_service_accessors!();
}

/// An async-openai client for `config` whose calls run through `stack`
/// (wrapped in [`OpenAiService`]): async-openai's documented
/// `Client::with_config(config).with_http_service(..)`, with ring installed
/// as the process default crypto provider first
/// ([`install_crypto_provider`](crate::install_crypto_provider)), whatever
/// `stack` is built on.
///
/// `with_config` builds a `reqwest::Client` with reqwest's own TLS, which
/// panics in a process with no default provider. async-openai uses that
/// client only to build requests: [`OpenAiService`] sends them, through
/// the stack.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use async_openai::config::OpenAIConfig;
/// use seawall::classify::ClassifyLayer;
/// use seawall::stack::Stack;
/// use seawall_reqwest::ReqwestService;
///
/// let stack = Stack::interactive()
///     .build(&ClassifyLayer::openai(), ReqwestService::new(seawall_reqwest::client()?));
/// let config = OpenAIConfig::new().with_api_base("http://127.0.0.1:8080/v1");
/// let client = seawall_reqwest::openai_client(config, stack);
/// # let _ = client;
/// # Ok(()) }
/// ```
pub fn openai_client<C, S, RB>(config: C, stack: S) -> async_openai::Client<C>
where
    C: async_openai::config::Config,
    S: Service<http::Request<reqwest::Body>, Response = http::Response<RB>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    RB: Body<Data = Bytes> + Send + Sync + 'static,
    RB::Error: Into<BoxError>,
{
    crate::install_crypto_provider();
    async_openai::Client::with_config(config).with_http_service(OpenAiService::new(stack))
}

/// The [`Layer`] of [`OpenAiService`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiLayer;

impl<S> Layer<S> for OpenAiLayer {
    type Service = OpenAiService<S>;

    fn layer(&self, inner: S) -> OpenAiService<S> {
        OpenAiService::new(inner)
    }
}

impl<S, RB> Service<HttpRequestFactory> for OpenAiService<S>
where
    S: Service<http::Request<reqwest::Body>, Response = http::Response<RB>>
        + Clone
        + Send
        + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    RB: Body<Data = Bytes> + Send + Sync + 'static,
    RB::Error: Into<BoxError>,
{
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        self.inner.poll_ready(cx).map_err(|error| {
            let error: BoxError = error.into();
            // No call follows a failed readiness: this call's outcome is
            // said here, or the scope would still hold the last call's.
            if let Some(outcome) = Outcome::current() {
                outcome.begin().failed(&*error);
            }
            OpenAIError::Boxed(error)
        })
    }

    fn call(&mut self, factory: HttpRequestFactory) -> ResponseFuture {
        // The ready service goes with the call; a clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let outcome = Outcome::current().map(|outcome| outcome.begin());
        let future = async move {
            let (request, asked) = match build_once(&factory).await {
                Ok(built) => built,
                Err(error) => {
                    if let Some(outcome) = &outcome {
                        outcome.failed(&error);
                    }
                    return Err(error);
                }
            };
            match inner.call(request).await {
                Ok(response) => {
                    let receipt = response.extensions().get::<Receipt>().cloned();
                    if let Some(outcome) = &outcome {
                        outcome.answered(receipt.clone());
                    }
                    if let Some(failure) = asked.refuses(&response, receipt) {
                        // Dropped unread: its bytes are no stream async-openai
                        // can read, and the failure says what it was.
                        drop(response);
                        if let Some(outcome) = &outcome {
                            outcome.failed(&failure);
                        }
                        return Err(OpenAIError::Boxed(Box::new(failure)));
                    }
                    let response =
                        response.map(|body| reqwest::Body::wrap(OutcomeBody { body, outcome }));
                    Ok(reqwest::Response::from(response))
                }
                Err(error) => {
                    let error: BoxError = error.into();
                    if let Some(outcome) = &outcome {
                        outcome.failed(&*error);
                    }
                    Err(OpenAIError::Boxed(error))
                }
            }
        };
        ResponseFuture {
            inner: Box::pin(future),
        }
    }
}

/// The one build of a call's request, as an `http::Request`, and what it
/// asked for.
async fn build_once(
    factory: &HttpRequestFactory,
) -> Result<(http::Request<reqwest::Body>, Asked), OpenAIError> {
    let request = factory.build().await?;
    // A body whole in memory (async-openai's JSON) is shared, not copied:
    // it is read only if the answer turns out not to be a stream.
    let body = request
        .try_clone()
        .and_then(|mut copy| copy.body_mut().take());
    let request = http::Request::try_from(request).map_err(OpenAIError::Reqwest)?;
    let asked = Asked {
        head: RequestFacts::from_head(&request),
        body,
    };
    Ok((request, asked))
}

/// What a call's request asked for, read only when its answer needs it.
struct Asked {
    /// The facts of the request's head (`Accept: text/event-stream`).
    head: RequestFacts,
    /// The request body, when it was whole in memory.
    body: Option<reqwest::Body>,
}

impl Asked {
    /// Whether the request asked for a stream, as seawall's
    /// [`RequestFacts`] read its head and its body's top-level `"stream"`.
    fn stream(self) -> bool {
        if self.head.stream_requested() == Some(true) {
            return true;
        }
        let Some(body) = self.body.as_ref().and_then(reqwest::Body::as_bytes) else {
            return false;
        };
        let slots = Arc::new(OperationSlots::default());
        slots.fill(&Bytes::copy_from_slice(body));
        self.head.with_slots(slots).stream_requested() == Some(true)
    }

    /// The failure of a 2xx answer labelled JSON to a request for a
    /// stream, or `None` for any other answer.
    ///
    /// async-openai reads a stream's body as server-sent events whatever
    /// it is: a whole JSON answer (a server that ignores `"stream": true`)
    /// holds no `data:` line, so it would read no event and end the stream
    /// cleanly — an empty answer that looks complete, generated and billed
    /// all the same. Only a JSON label says so: async-openai never reads
    /// the label, so an event stream labelled `text/plain` or not at all
    /// streams as well as one labelled `text/event-stream`, and refusing
    /// it would drop an answer generated and billed. An event stream a
    /// server labelled JSON is no such answer either: `ClassifyLayer`
    /// under a retry ladder (any `Stack`), which reads the request's
    /// `"stream"`, relabels it `text/event-stream` by its first byte before
    /// it gets here.
    fn refuses<B>(self, response: &http::Response<B>, receipt: Option<Receipt>) -> Option<Failure> {
        if !response.status().is_success() {
            return None;
        }
        // The shared readings, the classifier's own: what it hands on as
        // JSON is what is refused here.
        let media = media_type(response.headers()).filter(|media| is_json_media(media))?;
        // The body is read only here, once the answer is labelled JSON.
        if !self.stream() {
            return None;
        }
        // Permanent: a server that ignores `"stream": true` answers every
        // attempt the same way.
        let failure = Failure::with_class(Class::Permanent, Code::ProtocolViolation)
            .with_status(response.status().as_u16())
            .with_message(&format!(
                "a stream was asked for and the {} answer is `{}`, not text/event-stream: \
                 the server ignored the request for a stream, and async-openai would read \
                 no event from it (call `create` for one whole answer)",
                response.status().as_u16(),
                String::from_utf8_lossy(media)
            ));
        Some(match receipt {
            Some(receipt) => failure.with_receipt(receipt),
            None => failure,
        })
    }
}

type Boxed = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

/// The future of [`OpenAiService`] (boxed: it awaits async-openai's
/// request factory, whose future has no name).
pub struct ResponseFuture {
    inner: Boxed,
}

impl std::fmt::Debug for ResponseFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}

impl Future for ResponseFuture {
    type Output = Result<reqwest::Response, OpenAIError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

pin_project_lite::pin_project! {
    /// The stack's body under async-openai, telling the [`Outcome`] how
    /// it ends.
    struct OutcomeBody<B> {
        #[pin]
        body: B,
        outcome: Option<Call>,
    }
}

impl<B> Body for OutcomeBody<B>
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
        let this = self.project();
        let poll = this.body.poll_frame(cx);
        if let (Poll::Ready(None), Some(outcome)) = (&poll, this.outcome.as_ref()) {
            outcome.ended();
        }
        poll.map(|frame| {
            frame.map(|result| {
                result.map_err(|error| {
                    let error: BoxError = error.into();
                    if let Some(outcome) = this.outcome.as_ref() {
                        outcome.failed(&*error);
                    }
                    error
                })
            })
        })
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
