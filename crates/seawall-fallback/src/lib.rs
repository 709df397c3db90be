//! Change route when waiting would re-buy the same broken thing — along a
//! chain of other routes, one call each, and only when it is safe.
//!
//! [`FallbackLayer`] sends a request to the primary service and, when the
//! primary's final failure is one another route can fix, to the routes of
//! its chain ([`FallbackRoute`]s, each with its own service, request
//! rewrite and name), in order, one call each:
//!
//! - **The rewrite owns the route's credentials**: a route's
//!   [`rewrite`](FallbackRoute::rewrite) receives a copy of the primary's
//!   whole head, its key included, and nothing is removed behind its back
//!   (another region of the same provider takes the same key). A rewrite
//!   to another provider must set that provider's key or remove the
//!   primary's — or the primary's key goes there. A `Host` header the
//!   primary carried follows a rewrite that moves the request to another
//!   authority, unless the rewrite sets its own.
//! - **Only failures another route can fix**
//!   ([`Failure::moves_route`](seawall_core::Failure::moves_route), the
//!   [`Scope`](seawall_core::Scope) table): a transient failure whose
//!   action is [`Action::Retry`](seawall_core::Action::Retry) (the ladder
//!   below gave up) or [`Action::Failover`](seawall_core::Action::Failover)
//!   (circuit open, a route cooling down, a route that answers with
//!   silence), and the route's own permanent verdicts — a quota wall,
//!   rejected credentials, a model not on that deployment, a redirect —
//!   which condemn that account, key or host, not the request. Never for a
//!   request-scoped failure (context length, bad request, refusal, filter,
//!   malformed call), `cancelled` or `deadline_exceeded`, a transient one
//!   the provider said not to repeat, nor for an error that is not a
//!   seawall [`Failure`](seawall_core::Failure). So it needs `ClassifyLayer`
//!   below (under the retry ladder, if any): without one a 503 or a 429 is
//!   a response, and the layer hands it on as the answer.
//! - **Opt-in triggers**: a route can take a request-scoped failure it
//!   can fix where the others cannot, when the configuration says so —
//!   [`FallbackRoute::on`]`(Code::ContextTooLong)` for a route with a
//!   larger context window, `on(Code::Refused)` or
//!   `on(Code::ContentFiltered)` for a route the user chose for those
//!   ([`only_on`](FallbackRoute::only_on) keeps the route for its triggers
//!   alone). None is on by default. Once a request moved for a trigger,
//!   only routes that opted in to it are tried after.
//! - **In order, skipping cold routes**: the chain's routes are tried one
//!   after the other while the failure and the deadline allow. A route
//!   that [`RouteHealth`] (the breaker's route registry in the assembled
//!   stack) says is cooling down is skipped without a call — the receipt
//!   records it as `route_cooling_down`. A route already tried in this
//!   operation is not tried twice.
//! - **Waiting when every route is cooling down after a rate limit**: when
//!   no route is left and every route the operation went to is cooling
//!   down, the layer waits for the earliest of those cooling after a rate
//!   limit (its hint is when it answers again) if it comes back within the
//!   deadline (less [`min_remaining`](FallbackLayer::min_remaining)) and
//!   within [`max_wait`](FallbackLayer::max_wait), then calls it; when it
//!   comes back too late, it fails at once with seawall's refusal of that
//!   route ([`Failure::route_refusal`](seawall_core::Failure::route_refusal):
//!   `route_cooling_down`, [`cooled_by`](seawall_core::Failure::cooled_by)
//!   `rate_limited`), its `retry_after` the time until the route is back:
//!   a refusal, so a ladder above records no upstream attempt for it.
//!   A route behind a quota wall or rejected credentials is never waited
//!   for (the wall is there when its time runs out as much as before):
//!   when every route is walled so, or one is not cooling down at all, the
//!   layer fails at once with the last failure. Without a registry, the
//!   failures' own hints say when routes return.
//! - **Sooner after silence**: the request carries
//!   [`OtherRoutes`](seawall_core::OtherRoutes), so a retry ladder below
//!   leaves a route after its first zero-byte timeout instead of spending a
//!   second attempt on it.
//! - **Only before content**: the layer looks only at the response future.
//!   A failure after content reached the caller arrives through the response
//!   body, which passes through untouched — by construction it never falls
//!   back, so the caller is never shown two answers.
//! - **One call per route**: each route of the chain is one attempt, not a
//!   ladder; the last failure is returned with every attempt in its
//!   [`Receipt`](seawall_core::Receipt).
//! - **Only in time**: with a [`Deadline`](seawall_core::Deadline) in the
//!   request extensions, a route is called only when at least
//!   [`min_remaining`](FallbackLayer::min_remaining) is left.
//! - **Only to another route**: a fallback whose route is the primary's is
//!   a configuration error ([`SameRouteFallback`]), never a doomed call.
//!
//! The request body is recorded as the primary sends it
//! ([`ReplayBody`](seawall_core::recording::ReplayBody), up to
//! [`max_replay_bytes`](FallbackLayer::max_replay_bytes)), so every service
//! takes `http::Request<ReplayBody<B>>`. A body streamed in past the cap is
//! sent once: no fallback, and the receipt's stop reason says
//! `not_replayable` (a body whole in one frame is kept whatever its size).
//!
//! Every response carries [`ServedBy`] in its extensions (and, opt-in, an
//! `x-seawall-served-by` header). A response or failure after a move
//! carries the merged receipt: the primary's attempts, then each route's
//! in order (the first attempt after a wait has the wait as its `delay`),
//! with `fallback = true` when a route of the chain produced the outcome.
//! Each move emits a `tracing` event (target `seawall::fallback`, fields
//! `from`, `to`, `cause`) and opens one `fallback` span (a child of the
//! caller's current span) for its call, with the retry crate's field names:
//!
//! | field | value |
//! |---|---|
//! | `otel.kind` | `client` |
//! | `server.address`, `server.port` | the route moved to (its host and port, for a route named `host:port`) |
//! | `seawall.attempt` | the move's number in the operation, from 1 |
//! | `seawall.from` | the route left |
//! | `seawall.cause` | the code that made the request move |
//! | `seawall.delay_ms` | the wait for a cooling route before the call, else 0 |
//! | `error.type`, `otel.status_code` | the route's failure code, `ERROR`; `cancelled` without an error status when the caller stopped waiting for the call once sent (none while the route's service was not ready for it) |
//! | `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens` | the route's answer: a whole one's when it comes, a stream's when it ends (the span kept open until then) |
//! | `seawall.stream.bound` | the stream guard's bound that ended the route's stream (`first_content`, `idle`, `max_duration`, …), beside its `error.type` |
//!
//! ```
//! use std::time::Duration;
//! use bytes::Bytes;
//! use http::header::{AUTHORIZATION, HeaderValue};
//! use http_body_util::Full;
//! use seawall_core::recording::ReplayBody;
//! use seawall_core::{Code, Failure, Receipt, RouteId};
//! use seawall_fallback::{FallbackLayer, ServedBy};
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! type Request = http::Request<ReplayBody<Full<Bytes>>>;
//! type Response = http::Response<Full<Bytes>>;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let primary = tower::service_fn(|_req: Request| async {
//!     Err::<Response, _>(Failure::new(Code::CircuitOpen))
//! });
//! let other = tower::service_fn(|req: Request| async move {
//!     assert_eq!(req.uri().host(), Some("other.example.com"));
//!     assert_eq!(req.headers()[AUTHORIZATION], "Bearer sk-other");
//!     Ok::<_, Failure>(Response::new(Full::new(Bytes::from_static(b"hello"))))
//! });
//! let service = ServiceBuilder::new()
//!     .layer(
//!         FallbackLayer::new(other)
//!             .rewrite(|req: &mut Request| {
//!                 *req.uri_mut() = "https://other.example.com/v1/chat".parse().unwrap();
//!                 // The copy carries the primary's key: another provider
//!                 // gets its own.
//!                 let key = HeaderValue::from_static("Bearer sk-other");
//!                 req.headers_mut().insert(AUTHORIZATION, key);
//!             })
//!             .min_remaining(Duration::from_secs(2)),
//!     )
//!     .service(primary);
//!
//! let request = http::Request::post("https://api.example.com/v1/chat")
//!     .header(AUTHORIZATION, "Bearer sk-primary")
//!     .body(Full::new(Bytes::from_static(b"{}")))
//!     .unwrap();
//! let response = service.oneshot(request).await.unwrap();
//! let served = response.extensions().get::<ServedBy>().unwrap();
//! assert_eq!(served.route, RouteId::new("other.example.com"));
//! assert!(served.fallback);
//! let receipt = response.extensions().get::<Receipt>().unwrap();
//! assert_eq!(receipt.attempts.len(), 2);
//! assert!(receipt.fallback);
//! # }
//! ```
//!
//! A chain, with a large-context route kept for `context_too_long`:
//!
//! ```
//! # use bytes::Bytes;
//! # use http_body_util::Full;
//! # use seawall_core::recording::ReplayBody;
//! # use seawall_core::{Code, RouteId};
//! # use seawall_fallback::{FallbackLayer, FallbackRoute};
//! # type Request = http::Request<ReplayBody<Full<Bytes>>>;
//! # type Response = http::Response<Full<Bytes>>;
//! # type Route = tower::util::BoxCloneSyncService<Request, Response, seawall_core::BoxError>;
//! # fn attempt(_: &str) -> Route {
//! #     Route::new(tower::service_fn(|_: Request| async {
//! #         Ok::<_, seawall_core::BoxError>(Response::new(Full::new(Bytes::new())))
//! #     }))
//! # }
//! let layer = FallbackLayer::chain([
//!     FallbackRoute::new(attempt("backup-key")).route(RouteId::new("backup-key")),
//!     FallbackRoute::new(attempt("other-region")).route(RouteId::new("other-region")),
//! ])
//! .then(
//!     FallbackRoute::new(attempt("large-context"))
//!         .route(RouteId::new("large-context"))
//!         .only_on(Code::ContextTooLong),
//! );
//! assert_eq!(layer.routes().len(), 3);
//! ```
//!
//! # Differences from a generic fallback
//!
//! tower has no fallback layer (`steer` and `balance` pick a service
//! before the call, not after a failure). A generic fallback — an
//! `or_else` around the call — tries the other service on any error it is
//! given, needs a clone of the request made up front, and may run after
//! part of an answer was shown. This one moves only for failures another
//! route can fix (the classified [`Failure`](seawall_core::Failure)'s
//! scope, or a trigger the configuration opted in to), only before
//! content, one call per route, only in time and only to another route;
//! it skips routes that are cooling down and waits for one only when that
//! fits the deadline; it records the body as the primary sends it and
//! merges every attempt into one [`Receipt`](seawall_core::Receipt).
#![deny(missing_docs)]

mod error;
mod future;
mod layer;
mod rewrite;
pub mod route_set;
mod service;

pub use error::SameRouteFallback;
pub use future::ResponseFuture;
pub use layer::{Cooling, DEFAULT_MAX_WAIT, FallbackLayer, FallbackRoute, RouteHealth};
pub use rewrite::{Rewrite, Unchanged};
pub use route_set::{
    Member, MemberRewrite, MemberState, RouteSet, RouteSetBody, RouteSetError, RouteSetHandle,
    RouteSetLayer,
};
pub use service::{Fallback, SERVED_BY_HEADER, ServedBy};
