//! One bounded retry ladder per operation.
//!
//! Retries nested inside retries multiply; three attempts at a 600 s
//! timeout is a 30-minute operation; a `Retry-After` of 48489 s must never
//! park a task until tomorrow. [`RetryBudgetLayer`] retries what the
//! inner layers classified as [`Action::Retry`](seawall_core::Action::Retry),
//! and two things more that ask nothing of the same route again: a failure
//! a route set below can take to another of its members (its
//! [`AnotherRoute`](seawall_core::AnotherRoute) signal, for a failure that
//! is the route's and came before any content, a permanent one included),
//! and a breaker's refusal of the only route while it cools down after a
//! rate limit, waited out for as long as the provider asked. Before every
//! retry it checks, in order:
//!
//! 1. **Promotion**: two consecutive identical route-shaped failures (zero
//!    bytes until a timeout), or one failure that took most of the time
//!    left, end the ladder with the failure turned into
//!    [`Action::Failover`](seawall_core::Action::Failover): asking the same
//!    route again re-buys the same broken thing.
//! 2. **Attempts**: `max_attempts` counts the first attempt (3 = one try and
//!    two retries). A route set's first move off a member and the first
//!    wait out of a route's cooldown (a breaker's refusal) are free, not
//!    attempts ([`RetryPolicy`]).
//! 3. **Replay**: the request body is recorded lazily up to
//!    `max_replay_bytes`; past that the operation runs once, intact (a
//!    body whole in one frame is kept whatever its size: a reference).
//! 4. **Delay**: exponential [`Backoff`] with [`Jitter`], or the failure's
//!    `Retry-After` hint when it is longer (a hint longer than
//!    `max_retry_after` stops the ladder, and so does one longer than the
//!    backoff's cap when a fallback can take the request; a hint of 0 is
//!    no reason to hurry). A hint is a floor: the operations one hint
//!    told come back spread above it, by a draw of up to a quarter of it
//!    (at most a second; none under [`Jitter::None`]), and those a
//!    breaker refused through one cooldown by the backoff after its end.
//!    What is drawn above a hint is cut to fit `max_retry_after` and the
//!    deadline, never a reason to stop.
//! 5. **Deadline**: `now + delay + min_attempt_time` must fit before the
//!    operation's [`Deadline`](seawall_core::Deadline) less the fallback
//!    reserve. A hint past the deadline stops at once, never sleeps. The
//!    attempts themselves run under that deadline less the reserve, so a
//!    per-attempt bound stops one there, as a `timeout` to fail over on.
//! 6. **Budget**: a token from the shared [`Budget`]. A retry granted
//!    but never sent (the operation was dropped during its backoff, or a
//!    breaker refused it while the route cools down) gives back what it
//!    withdrew: it put no load on the route.
//!
//! Whatever stops the ladder, the last failure is returned with a
//! [`Receipt`](seawall_core::Receipt) inside it
//! ([`Failure::receipt`](seawall_core::Failure::receipt)) saying every
//! attempt and the [`StopReason`](seawall_core::StopReason); on success the
//! receipt is in the response extensions. Errors that are not a
//! [`Failure`](seawall_core::Failure) are not tried again; they come back
//! with the operation's receipt attached
//! ([`Receipt::attach`](seawall_core::Receipt::attach);
//! [`Receipt::of_error`](seawall_core::Receipt::of_error) finds it). Such
//! an error displays as the original, which is its
//! [`source`](std::error::Error::source). Every
//! retry polls the inner service's readiness again.
//!
//! **It needs `ClassifyLayer` below.** The ladder judges classified
//! failures, never statuses: without a classifier a 503 or a 429 is a
//! response, delivered as the answer and never retried. The ladder
//! records it as its last attempt (stop `succeeded`) but credits the
//! budget nothing for it, and the first such response warns (target
//! `seawall::retry`, once per process) that no classifier is below.
//!
//! The inner service receives `http::Request<ReplayBody<B>>`
//! ([`ReplayBody`](seawall_core::recording::ReplayBody)). A ladder marks the
//! request; an inner ladder that finds the mark makes a single attempt
//! (unless [`RetryPolicy::allow_nested`]), so nesting costs `max_attempts`
//! calls, not the product. Such an inner ladder sets no idempotency key
//! either (a key of its own would be a new one on each of the outer
//! ladder's attempts), and warns once when its policy asked for one: set
//! [`RetryPolicy::idempotency_key`] on the outermost ladder.
//!
//! tracing: an `operation` span per operation and a debug event per
//! attempt with the fields `attempt`, `class`, `code`, `cooled_by` (a
//! refusal's, as on its span below), `delay_ms`, `retry_after_ms`,
//! `budget_tokens`, `stop_reason`.
//!
//! The last attempt's event says why the ladder stopped (`stop_reason`),
//! and it stays at debug, after retries as after one attempt: the failure
//! goes back to the caller with its receipt, and is the caller's to log.
//! A warning per failed operation would be a line per request all through
//! an outage; how often operations fail is for the metrics (below) to
//! count, and a fallback above warns as it moves. The ladder warns, once
//! per process each, only of what the deployment should fix: no
//! classifier below, a ladder nested under another.
//!
//! ## Spans
//!
//! Each operation opens one span and each attempt one child span (target
//! `seawall::retry`, level info), with OpenTelemetry's GenAI attribute
//! names, so `tracing-opentelemetry` exports them as client spans named
//! `"{operation} {model}"`:
//!
//! | span | field | value |
//! |---|---|---|
//! | both | `otel.name` | `"chat gpt-4o"` (`generate_content` for Gemini): see below |
//! | both | `otel.kind` | `client` |
//! | both | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model` | from [`RequestFacts`](seawall_core::RequestFacts); the model the path names, else the body's, read ahead or once sent (below) |
//! | both | `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` | a checked unary answer's; a stream's when its body ends (below); the usage of a billed answer that failed (refused, filtered, empty) too. On the operation's span the ladder records the operation's usage, the sum over its billed attempts so far ([`Receipt::usage`](seawall_core::Receipt::usage)), and each attempt's span its own; a streamed answer's usage is recorded when its body ends, its own on the attempt's span and, with the earlier billed attempts' added, on the operation's |
//! | both | `gen_ai.provider.name` | by the wire and the route's host ([`Provider::genai_name`](seawall_core::provider::Provider::genai_name)): `openai`, `anthropic`, `gcp.gemini`, `gcp.vertex_ai`, `azure.ai.openai`, … |
//! | both | `server.address`, `server.port` | the route's host and port (a route named `host:port`), else its name and no port |
//! | both | `error.type`, `otel.status_code` | the seawall code, `ERROR`; an operation its caller dropped says `cancelled` (on the attempt in flight too) with no error status |
//! | `operation` | `seawall.attempts`, `seawall.stop_reason` | the [`StopReason`](seawall_core::StopReason)'s name, `succeeded` on success; none for an operation its caller dropped (its `error.type` says `cancelled`) |
//! | `attempt` | `seawall.attempt`, `seawall.delay_ms`, `seawall.action`, `seawall.retry_after_ms` | |
//! | both | `seawall.stream.bound` | the stream guard's bound that ended a streamed attempt (`first_byte`, `first_content`, `idle`, `max_duration`, `after_empty_finish`: `seawall_stream::Bound`), beside its `error.type`; on the operation's span once the stream reached the caller |
//! | `attempt` | `seawall.cooled_by` | a refusal's (`route_cooling_down`): the code that cooled the route ([`Failure::cooled_by`](seawall_core::Failure::cooled_by)), `quota_exhausted`, `rate_limited`, `auth`, …; none on any other failure |
//!
//! An OpenTelemetry span's name is taken as it starts, and
//! `tracing-opentelemetry` starts a span when it is first entered, a child
//! is made, or its context is asked for (the `traceparent` feature): the
//! operation's span starts as its first attempt's is made, the attempt's
//! as the first call runs inside it, both before the request's body is
//! sent. So the model is learned before:
//!
//! - from the head, when the path names it (Gemini's, Claude's on Vertex
//!   AI, an Azure OpenAI deployment) or `RequestFacts::with_model` did;
//! - else, when a subscriber records the spans, from a body at hand: one
//!   recorded for replay whose rest is said by its size hint to fit in
//!   `max_replay_bytes` is read ahead into the recording, as far as it is
//!   ready without waiting (a body in memory, `Full` or `String`, whole),
//!   and the operation's and first attempt's spans start named
//!   `"chat gpt-4o"`. Nothing is read ahead when no subscriber records
//!   them. The read ahead changes nothing of what is sent: a body that
//!   sends more than its hint said is sent whole by the first attempt (and
//!   not again, as any body past the cap), and a body that fails as it is
//!   read ahead fails the first attempt with its own error (a
//!   `LengthLimitError` of a body over its limit stays one), as if the
//!   attempt had read it.
//!
//! A model the body names that was not at hand (an upload still
//! streaming, one of unknown or too large a size) is recorded as
//! `gen_ai.request.model` and `otel.name` on both spans when an attempt
//! that sent it ends, after they started: with the `traceparent` feature the
//! started OpenTelemetry spans are renamed `"chat gpt-4o"` through their
//! context; without it they are exported as `"chat"`, the model in their
//! `gen_ai.request.model` alone. A retry's span is named from its start.
//! A single attempt (`max_attempts` 1) reads its body for the same facts
//! (the model, a stream asked for) and names its spans the same way; its
//! recording replays nothing. A ladder that finds a caller's own
//! [`RequestFacts`](seawall_core::RequestFacts) without the operation's
//! slots keeps what they say and adds the body's.
//!
//! A streamed answer's finish, usage and an interruption after content
//! come after the headers: each attempt's request carries its spans
//! ([`AttemptSpans`](seawall_core::AttemptSpans)) down to the stream guard,
//! which keeps them in the body and records how the stream ended on them
//! ([`AttemptSpans::record_end`](seawall_core::AttemptSpans::record_end)),
//! so the attempt's span stays open until the body ends. A failure before
//! content stays on the attempt's span: the ladder judges it. The handle is
//! inserted only when a subscriber records the spans.
//!
//! With the `traceparent` feature each attempt's request also carries a
//! W3C `traceparent` (and `tracestate`, when there is one) from its span's
//! OpenTelemetry context, replacing the caller's, so the provider's traces
//! join the caller's trace: one span id per attempt, the caller's trace id.
//! It needs a `tracing-opentelemetry` layer recording the spans; without
//! one no header is added.
//!
//! With the `metrics` feature the ladder also records
//! `seawall_attempts_total`, `seawall_retries_total`,
//! `seawall_retry_budget_exhausted_total`,
//! `seawall_operation_duration_seconds` and, for unary answers,
//! `seawall_tokens_total` ([`seawall_core::metric_names`]). Under nested
//! ladders ([`RetryPolicy::allow_nested`]) each call's attempt is counted
//! once, by the ladder that saw it end; the operation's duration, and an
//! attempt its caller cancelled, by the outermost ladder alone.
//!
//! ```
//! use std::time::Duration;
//! use http::{Request, Response};
//! use seawall_core::recording::ReplayBody;
//! use seawall_core::{Code, Failure, Receipt, StopReason};
//! use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::sync::Arc;
//! use tower::{BoxError, ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! // An upstream that is overloaded once, then answers.
//! let calls = Arc::new(AtomicU32::new(0));
//! let upstream = service_fn(move |_req: Request<ReplayBody<String>>| {
//!     let n = calls.fetch_add(1, Ordering::SeqCst);
//!     async move {
//!         match n {
//!             0 => Err::<Response<()>, BoxError>(Box::new(Failure::new(Code::Overloaded).with_status(529))),
//!             _ => Ok(Response::new(())),
//!         }
//!     }
//! });
//! let svc = ServiceBuilder::new()
//!     .layer(RetryBudgetLayer::new(RetryPolicy::interactive(), Budget::grpc(10, 0.1)))
//!     .service(upstream);
//! let response = svc.oneshot(Request::new(String::from("{}"))).await.unwrap();
//! let receipt = response.extensions().get::<Receipt>().unwrap();
//! assert_eq!(receipt.attempts.len(), 2);
//! assert_eq!(receipt.attempts[0].code, Some(Code::Overloaded));
//! assert_eq!(receipt.stop, Some(StopReason::Succeeded));
//! # }
//! ```
//!
//! ## Differences from `tower::retry`
//!
//! `tower::retry::Retry` is a mechanism: its `Policy` is handed each raw
//! `Result` and a way to clone the request, and the rest is yours (tower
//! ships exponential backoff and `TpsBudget` as building blocks). This
//! layer is that policy written for LLM calls:
//!
//! - **Classification, not results**: it retries only a
//!   [`Failure`](seawall_core::Failure) the inner layers said to retry. A
//!   policy over the raw `Result` sees a 429 and cannot tell a two-second
//!   blip from a quota wall, or a 400 that can never pass.
//! - **A budget by failure kind**: the shared [`Budget`] can charge by
//!   what failed (the AWS quota charges a retry after a timeout double);
//!   `TpsBudget` (the ratio budget here) counts every retry alike.
//! - **Hints and the deadline**: the provider's `Retry-After` (or gRPC
//!   pushback) sets the least delay, and the operation's
//!   [`Deadline`](seawall_core::Deadline) decides before sleeping; a hint
//!   that cannot be honoured in time stops at once. `tower::retry` has no
//!   notion of either.
//! - **Body replay**: the body is recorded as it is first sent
//!   ([`ReplayBody`](seawall_core::recording::ReplayBody)), where
//!   `Policy::clone_request` needs a request that can be cloned before the
//!   call, which an `http::Request` with a streaming body cannot.
//! - **One ladder**: nested ladders make one attempt, repeated silent
//!   timeouts become a failover, and a receipt says what happened.
#![deny(missing_docs)]

mod backoff;
mod budget;
mod future;
mod layer;
mod metrics;
mod policy;
mod service;
mod template;
#[cfg(feature = "traceparent")]
mod traceparent;

pub use backoff::{Backoff, Jitter};
pub use budget::Budget;
pub use future::ResponseFuture;
pub use layer::RetryBudgetLayer;
pub use policy::RetryPolicy;
pub use service::RetryBudget;
