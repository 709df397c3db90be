//! What the loopback suites share: a real seawall-chaos server, the
//! assembled stack with short bounds, the request an application sends, and
//! a caller that reads the answer the way an application does.
//!
//! Every figure a test asserts comes from one of two places: the chaos
//! server's journal (what reached the provider) or what the caller read
//! (what reached the user).
#![allow(dead_code)] // each test file uses its own part of this module

pub(crate) mod grpc;
#[cfg(feature = "resume")]
pub(crate) mod resume;
pub(crate) mod route_set;
pub(crate) mod scripted;
pub(crate) mod spans;
pub(crate) mod timed;

use std::time::Duration;

use bytes::Bytes;
use http::HeaderValue;
use http_body::Body;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, Failure, Finish, Receipt, RouteId};
use seawall::fallback::{FallbackLayer, ServedBy};
use seawall::retry::{Backoff, Budget, RetryPolicy};
use seawall::stack::Stack;
use seawall::stream::{StreamGuardLayer, StreamReport, StreamReportHandle};
use seawall_chaos::{ChaosHandle, ChaosServer, FAULT_HEADER, Fault, JournalEntry};
use seawall_cli::app;
use seawall_cli::caller::{self, Delivery, NotAnAnswer};
use tower::{Service, ServiceExt};

/// The stream guard's first-byte bound in every suite.
pub(crate) const FIRST_BYTE: Duration = Duration::from_millis(200);
/// The stream guard's first-content bound.
pub(crate) const FIRST_CONTENT: Duration = Duration::from_millis(400);
/// The stream guard's idle bound.
pub(crate) const IDLE: Duration = Duration::from_millis(300);
/// The per-attempt bound.
pub(crate) const ATTEMPT: Duration = Duration::from_millis(1500);
/// The operation's deadline.
pub(crate) const TOTAL: Duration = Duration::from_secs(5);

/// The request the fallback route receives.
pub(crate) type FallbackRequest = http::Request<ReplayBody<Full<Bytes>>>;

/// The fallback route: one attempt, no ladder of its own.
pub(crate) type FallbackAttempt = seawall::stack::AttemptStack<
    Client<HttpConnector, ReplayBody<Full<Bytes>>>,
    seawall::classify::ProviderClassifier,
>;

/// A fresh client (its own connection pool), for any request body.
pub(crate) fn client<B>() -> Client<HttpConnector, B>
where
    B: Body + Send + 'static,
    B::Data: Send,
{
    Client::builder(TokioExecutor::new()).build_http()
}

/// A chaos server on a free loopback port.
pub(crate) async fn chaos() -> ChaosHandle {
    ChaosServer::builder()
        .start()
        .await
        .expect("chaos starts on loopback")
}

/// A JSON `POST` of `body` to `url`, for the in-process upstreams.
pub(crate) fn post_json(url: &str, body: &'static str) -> http::Request<Full<Bytes>> {
    http::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .expect("a request")
}

/// A chaos server whose first OpenAI calls get `faults`, in order (later
/// ones are healthy).
pub(crate) async fn chaos_scripted(faults: &[&str]) -> ChaosHandle {
    let chaos = chaos().await;
    chaos
        .script("openai", faults.iter().map(|text| fault(text)).collect())
        .expect("a script for the openai route");
    chaos
}

/// The interactive preset with every bound short, so a suite runs in
/// seconds: first byte 200 ms, first content 400 ms, idle 300 ms, attempt
/// 1.5 s, operation 5 s, backoff 5–20 ms, no retry budget limit.
pub(crate) fn short_stack() -> Stack {
    Stack::interactive()
        .total_deadline(TOTAL)
        .attempt_timeout(ATTEMPT)
        .retry_policy(
            RetryPolicy::interactive()
                .backoff(Backoff::exponential(
                    Duration::from_millis(5),
                    Duration::from_millis(20),
                ))
                .min_attempt_time(Duration::from_millis(100)),
        )
        .budget(Budget::unlimited())
        .stream_guard(
            StreamGuardLayer::interactive()
                .first_byte_timeout(FIRST_BYTE)
                .first_content_timeout(FIRST_CONTENT)
                .idle_timeout(IDLE),
        )
}

/// The route the fallback is tracked as, in receipts and the breaker.
pub(crate) fn fallback_route() -> RouteId {
    RouteId::new("fallback")
}

/// What an application asks.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    /// Whose wire format.
    pub provider: Provider,
    /// A streamed request?
    pub stream: bool,
    /// Tags the rows of this operation in the journal.
    pub id: String,
    /// The `x-chaos-fault` header (every attempt no script overrides).
    pub fault: Option<String>,
    /// The caller drops the body after this many content events.
    pub stop_after: Option<u64>,
}

/// The request an application sends to `base`: the CLI's own, so the
/// suites send what `seawall replay` sends.
pub(crate) fn request(base: &str, ask: &Ask) -> http::Request<Full<Bytes>> {
    app::request(
        base,
        ask.provider,
        ask.stream,
        &ask.id,
        ask.fault.as_deref(),
        &app::conversation(ask.provider, ask.stream),
    )
}

/// A fallback to another chaos server: the same request, healthy (the fault
/// header removed), sent to `fallback_base`, tracked as route `fallback`.
pub(crate) fn fallback_to(
    stack: &Stack,
    provider: Provider,
    fallback_base: &str,
) -> FallbackLayer<FallbackAttempt, impl Fn(&mut FallbackRequest) + Clone + Send + Sync + 'static> {
    let authority: http::uri::Authority = fallback_base
        .trim_start_matches("http://")
        .parse()
        .expect("a loopback authority");
    FallbackLayer::new(stack.attempt(&ClassifyLayer::for_provider(provider), client()))
        .route(fallback_route())
        .rewrite(move |req: &mut FallbackRequest| {
            req.headers_mut().remove(FAULT_HEADER);
            let mut parts = req.uri().clone().into_parts();
            parts.authority = Some(authority.clone());
            *req.uri_mut() = http::Uri::from_parts(parts).expect("same URI, other authority");
            if let Ok(host) = HeaderValue::from_str(authority.as_str()) {
                req.headers_mut().insert(http::header::HOST, host);
            }
        })
}

/// How an operation ended for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The body ended cleanly.
    Ok,
    /// The call failed before any content (the response future's error).
    FailedBeforeContent,
    /// The body failed after content reached the caller.
    FailedAfterContent,
    /// The caller stopped reading on purpose.
    Cancelled,
    /// A 2xx body the caller could not read as the provider's answer.
    Undecodable,
}

/// Everything the caller saw of one operation.
#[derive(Debug)]
pub(crate) struct Seen {
    /// How it ended.
    pub ending: Ending,
    /// The classified failure, when it failed.
    pub failure: Option<Failure>,
    /// An error that is not a seawall `Failure` (never expected).
    pub unclassified: Option<String>,
    /// The receipt: the response's on success, the failure's on error.
    pub receipt: Option<Receipt>,
    /// Who served the response, when one came.
    pub served_by: Option<ServedBy>,
    /// The text the caller was shown.
    pub text: String,
    /// Content events read (streams), 1 for a unary answer with text.
    pub content_events: u64,
    /// The finish reason the caller read on the wire.
    pub finish: Option<String>,
    /// The unary answer's finish as classified (response extensions).
    pub classified_finish: Option<Finish>,
    /// The stream guard's report, once the body ended.
    pub report: Option<StreamReport>,
}

impl Seen {
    fn delivered(ending: Ending, receipt: Option<Receipt>) -> Seen {
        Seen {
            ending,
            failure: None,
            unclassified: None,
            receipt,
            served_by: None,
            text: String::new(),
            content_events: 0,
            finish: None,
            classified_finish: None,
            report: None,
        }
    }

    fn failed(error: &BoxError, ending: Ending) -> Seen {
        let failure = Failure::find(&**error).cloned();
        let receipt = failure.as_ref().and_then(|f| f.receipt().cloned());
        Seen {
            unclassified: failure.is_none().then(|| error.to_string()),
            failure,
            ..Seen::delivered(ending, receipt)
        }
    }
}

/// Sends `request` through `service` and reads the answer as an
/// application does.
pub(crate) async fn call<S, B>(service: S, request: http::Request<Full<Bytes>>, ask: &Ask) -> Seen
where
    S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>, Error = BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let response = match service.oneshot(request).await {
        Ok(response) => response,
        Err(error) => return Seen::failed(&error, Ending::FailedBeforeContent),
    };
    let receipt = response.extensions().get::<Receipt>().cloned();
    let served_by = response.extensions().get::<ServedBy>().cloned();
    let classified_finish = response.extensions().get::<Finish>().cloned();
    let report = response.extensions().get::<StreamReportHandle>().cloned();
    let read = Read::from(if ask.stream {
        caller::read_stream(
            None,
            response.into_body(),
            ask.provider,
            ask.stop_after,
            |_| {},
        )
        .await
    } else {
        caller::read_unary(response.into_body(), ask.provider).await
    });
    let mut seen = match &read.error {
        Some(ReadError::Body(error)) => {
            let mut seen = Seen::failed(error, Ending::FailedAfterContent);
            // The ladder resolved at first content: its receipt is the response's.
            seen.receipt = seen.receipt.or(receipt);
            seen
        }
        Some(ReadError::Undecodable) => Seen::delivered(Ending::Undecodable, receipt),
        None if read.cancelled => Seen::delivered(Ending::Cancelled, receipt),
        None => Seen::delivered(Ending::Ok, receipt),
    };
    seen.served_by = served_by;
    seen.text = read.text;
    seen.content_events = read.content_events;
    seen.finish = read.finish;
    seen.classified_finish = classified_finish;
    seen.report = report.and_then(|r| r.get().cloned());
    seen
}

/// Why reading a body stopped early.
#[derive(Debug)]
enum ReadError {
    /// The body failed.
    Body(BoxError),
    /// A 2xx unary body that is not the provider's JSON answer.
    Undecodable,
}

/// What the caller read from a body: the CLI's own caller, so the suite
/// measures what `seawall replay` and `seawall chat` show.
struct Read {
    text: String,
    content_events: u64,
    finish: Option<String>,
    error: Option<ReadError>,
    cancelled: bool,
}

impl From<Delivery> for Read {
    fn from(delivery: Delivery) -> Read {
        let error = delivery.error.map(|error| {
            if error.is::<NotAnAnswer>() {
                ReadError::Undecodable
            } else {
                ReadError::Body(error)
            }
        });
        Read {
            text: delivery.text,
            content_events: delivery.content_events,
            finish: delivery.finish,
            error,
            cancelled: delivery.cancelled,
        }
    }
}

/// The rows of one operation, once none is still in flight (a disconnect
/// is noticed by the server a moment after the client leaves).
pub(crate) async fn settled_rows(chaos: &ChaosHandle, id: &str) -> Vec<JournalEntry> {
    chaos
        .settled_journal(Duration::from_secs(3), |row| {
            row.request_id.as_deref() == Some(id)
        })
        .await
}

/// Parses a fault written in header syntax.
pub(crate) fn fault(text: &str) -> Fault {
    text.parse()
        .unwrap_or_else(|e| panic!("fault `{text}`: {e}"))
}

/// Runs `ask` through `stack` against `primary` (and a fallback route on
/// `fallback`, when given).
pub(crate) async fn through_stack(
    stack: &Stack,
    primary: &ChaosHandle,
    fallback: Option<&ChaosHandle>,
    ask: &Ask,
) -> Seen {
    let fallback_base = fallback.map(ChaosHandle::base_url);
    through_base(stack, &primary.base_url(), fallback_base.as_deref(), ask).await
}

/// Runs `ask` through `stack` against the chaos server at `primary_base`
/// (and a fallback route to `fallback_base`, when given), each with a
/// client of its own.
pub(crate) async fn through_base(
    stack: &Stack,
    primary_base: &str,
    fallback_base: Option<&str>,
    ask: &Ask,
) -> Seen {
    let classify = ClassifyLayer::for_provider(ask.provider);
    let request = request(primary_base, ask);
    match fallback_base {
        Some(other) => {
            let layer = fallback_to(stack, ask.provider, other);
            let service = stack.build_with_fallback(&classify, client(), layer);
            call(service, request, ask).await
        }
        None => {
            let service = stack.build(&classify, client());
            call(service, request, ask).await
        }
    }
}
