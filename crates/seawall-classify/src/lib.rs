//! `ClassifyLayer`: turns what a provider answered, or what the network did,
//! into one [`Failure`](seawall_core::Failure) every other seawall layer can act on.
//!
//! A call to an LLM provider fails in more ways than its status says. A 429
//! may be a two-second blip or a quota that resets tomorrow; a 400 may be a
//! prompt that is too long (retrying cannot help) or a malformed request; a
//! `200 OK` may hold no text at all, or a refusal. The layer reads just
//! enough to tell these apart:
//!
//! - **Non-2xx** responses become `Err(Failure)`. The error body is read up
//!   to a cap (64 KiB by default; the rest is never polled), for at most
//!   2 s once it keeps the reader waiting, and classified
//!   by the provider's table in [`seawall_core::provider`]: structure first
//!   (status, headers), declared error codes second, message text last.
//!   Retry hints come from the headers (and Gemini's `RetryInfo`); a hint
//!   past the quota wall makes a 429 `Permanent`/`quota_exhausted` with
//!   `reset_at`. A body nothing decoded (a `content-encoding` still on it,
//!   or bytes the decoder refused) is not read: the status and headers
//!   decide, and the failure's message says the body was not read.
//! - **2xx streams** (`text/event-stream`) are handed on untouched: the body
//!   is not polled here, unless no stream may come. The answer to a request
//!   for one whole answer (`"stream": false` or none, Gemini's
//!   `:generateContent`) is checked as one whatever its content type says
//!   (a JSON answer labelled `text/event-stream` is an answer, and is
//!   relabelled `application/json`; on a generation endpoint, text that
//!   opens like an event stream is a `protocol_violation`), and so is one
//!   from an endpoint that answers JSON (below). On a generation endpoint,
//!   a 2xx that is neither JSON nor an event stream is checked and fails
//!   `protocol_violation`.
//!   On an endpoint that answers JSON
//!   ([`answers_json`](seawall_core::provider::answers_json): embeddings,
//!   moderations, token counts), a 2xx that is not JSON, is an event
//!   stream or has no body fails the same way. Elsewhere anything that is
//!   not JSON is handed on. Only a body error
//!   whose chain names a timeout (a client's read timeout) becomes the
//!   `timeout` failure it is on a unary answer.
//! - **2xx unary JSON** answers from LLM providers are read (up to 8 MiB) and
//!   checked for 200-with-nothing-in-it (`empty_response`), refusals and
//!   content filters (`Policy`). A delivered answer carries its
//!   [`Finish`](seawall_core::Finish) in the response extensions, so a
//!   `length`/`max_tokens` cut is marked, never silently a success; an
//!   answer that names no finish at all was cut short (`truncated`), as
//!   a stream without one. It is transient (the caller may ask again:
//!   nothing was delivered), but seawall's layers surface it rather than
//!   retry it ([`Action::decide`](seawall_core::Action::decide), row 7):
//!   the cut answer was generated and billed, and a server that leaves
//!   out the finish does so on every answer.
//! - **gRPC** trailers-only errors (`grpc-status` in the headers) are
//!   classified with their `grpc-retry-pushback-ms`.
//! - **Errors** of the inner service are walked down their source chain:
//!   connection refused/reset and hyper protocol errors are
//!   `Transient`/`transport`, timeouts `timeout`; an HTTP/2 stream reset
//!   this side sent for a failed request body is `bad_request` (the
//!   caller's upload broke), as hyper's user error is over HTTP/1; a
//!   server's HTTP/2 reset or GOAWAY with `ENHANCE_YOUR_CALM` (it sheds
//!   this client's load) is `rate_limited`; tower's
//!   `LoadShed` refusal is `overloaded`; an error that already holds
//!   a `Failure` passes unchanged; anything else is `Permanent`/`unknown`
//!   (fail closed, see [`ClassifyLayer::unknown_errors`]).
//!
//! A 2xx JSON body longer than the check cap, or one that does not open with
//! a JSON object (Gemini's non-SSE `streamGenerateContent` sends an array
//! over time), is handed on unchecked as soon as that is known: what was
//! read first, then the rest of the body. Nothing is lost and a stream is
//! not held back until it ends. A JSON object past the cap is still
//! followed to its end, a depth count and nothing kept: a body delimited
//! only by its connection's close can be cut as cleanly as it can end, so
//! one that ends before its value closes ends with `truncated` (bytes after
//! the value, or a broken read, with `stream_interrupted`) instead of
//! looking whole. The caller has its bytes by then: never a replay.
//!
//! Put the layer inside retry, breaker and fallback (they decide from its
//! failures) and around the HTTP client, after any response decompression:
//! a compressed body cannot be read, so it classifies by status alone.
//!
//! Every classified failure emits one `tracing` event (target
//! `seawall::classify`) with the fields `class`, `code`, `status`, `action`
//! and, when it has a hint, `retry_after_ms`. A failure made in a body
//! already handed on (a gRPC status in the trailers after messages, a JSON
//! answer past the check cap that does not end whole, an answer handed on
//! unread that breaks its `content-length`, a body that broke after bytes
//! passed) adds what broke it, `cause`, and the `bytes` passed.
//!
//! ```
//! use bytes::Bytes;
//! use http::{Request, Response, StatusCode};
//! use http_body_util::Full;
//! use seawall_classify::ClassifyLayer;
//! use seawall_core::{Action, Class, Code, Failure};
//! use std::time::Duration;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let provider = service_fn(|_request: Request<()>| async {
//!     let body = r#"{"error":{"message":"Rate limit reached for gpt-x. Please try again in 1.574s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
//!     Response::builder()
//!         .status(StatusCode::TOO_MANY_REQUESTS)
//!         .header("content-type", "application/json")
//!         .body(Full::new(Bytes::from(body)))
//!         .map_err(tower::BoxError::from)
//! });
//! let service = ServiceBuilder::new()
//!     .layer(ClassifyLayer::openai())
//!     .service(provider);
//!
//! let error = service.oneshot(Request::new(())).await.unwrap_err();
//! let failure = Failure::find(&*error).unwrap();
//! assert_eq!(failure.class(), Class::Transient);
//! assert_eq!(failure.code(), Code::RateLimited);
//! assert_eq!(failure.action(), Action::Retry);
//! assert_eq!(failure.retry_after(), Some(Duration::from_millis(1574)));
//! # }
//! ```
//!
//! Users put their own rules in front of a provider's with
//! [`ClassifyLayer::with_rules`] (see [`response_rule`]), or classify a
//! service of their own with [`ClassifyLayer::new`] and a [`Classifier`].
//!
//! # Differences from tower and tower-http
//!
//! `tower::retry`'s policy and tower's other layers see a response as
//! `Ok` and only transport errors as `Err`; tower-http's
//! [`classify`](https://docs.rs/tower-http/latest/tower_http/classify/)
//! (used by its `Trace` layer) decides from the status or `grpc-status`
//! alone, without reading a body, and only for reporting. This layer
//! reads what a provider's status does not say — the error body, the
//! retry hints, a 2xx unary answer with no content or a refusal — and
//! turns it into an `Err` holding a [`Failure`](seawall_core::Failure)
//! whose class, code and action the retry, breaker and fallback layers
//! act on. (The `seawall` facade's `tower_http` module maps a `Failure` to
//! a tower-http failure class, for `Trace`.)
#![deny(missing_docs)]

mod body;
mod classifier;
pub mod encoding;
mod future;
mod grpc;
mod json_end;
mod layer;
mod provider;
mod service;
mod transport;
mod unary;

use std::time::SystemTime;

use http::response::Parts;
use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, QuotaWall};

pub use body::ClassifiedBody;
pub use classifier::{
    Checked, Classifier, Inspection, ResponseRule, SuccessContext, WithRules, response_rule,
};
pub use encoding::CanonicalEncodingLayer;
pub use future::ResponseFuture;
pub use layer::ClassifyLayer;
pub use provider::ProviderClassifier;
pub use service::Classify;
#[cfg(feature = "rustls")]
pub use transport::certificate_refused;
pub use transport::transport_failure;

/// The [`ErrorContext`] of a response head: its status, the retry hint of its
/// headers, `quota_wall` and the wall clock now. For classifiers that judge
/// a head themselves.
pub fn error_context(parts: &Parts, quota_wall: QuotaWall) -> ErrorContext {
    let now = SystemTime::now();
    ErrorContext {
        status: Some(parts.status.as_u16()),
        hint: RetryHint::for_status(parts.status.as_u16(), &parts.headers, now),
        quota_wall,
        now,
    }
}
