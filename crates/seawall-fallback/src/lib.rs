//! Change route when waiting would re-buy the same broken thing — once, and
//! only when it is safe.
//!
//! [`FallbackLayer`] sends a request to the primary service and, when the
//! primary's final failure is one another route can fix, once to a fallback
//! service:
//!
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
//!   seawall [`Failure`](seawall_core::Failure).
//! - **Sooner after silence**: the request carries
//!   [`OtherRoutes`](seawall_core::OtherRoutes), so a retry ladder below
//!   leaves a route after its first zero-byte timeout instead of spending a
//!   second attempt on it.
//! - **Only before content**: the layer looks only at the response future.
//!   A failure after content reached the caller arrives through the response
//!   body, which passes through untouched — by construction it never falls
//!   back, so the caller is never shown two answers.
//! - **Only once**: the fallback is one call; its failure is returned, with
//!   both attempts in its [`Receipt`](seawall_core::Receipt).
//! - **Only in time**: with a [`Deadline`](seawall_core::Deadline) in the
//!   request extensions, only when at least
//!   [`min_remaining`](FallbackLayer::min_remaining) is left.
//! - **Only to another route**: a fallback whose route is the primary's is
//!   a configuration error ([`SameRouteFallback`]), never a doomed call.
//!
//! The request body is recorded as the primary sends it
//! ([`ReplayBody`](seawall_core::replay::ReplayBody), up to
//! [`max_replay_bytes`](FallbackLayer::max_replay_bytes)), so both services
//! take `http::Request<ReplayBody<B>>`. A body over the cap is sent once:
//! no fallback, and the receipt's stop reason says `not_replayable`.
//!
//! Every response carries [`ServedBy`] in its extensions (and, opt-in, an
//! `x-seawall-served-by` header). A fallback's response or failure carries
//! the merged receipt: the primary's attempts, then the fallback's, with
//! `fallback = true`. Each fallback emits a `tracing` event (target
//! `seawall::fallback`, fields `from`, `to`, `cause`).
//!
//! ```
//! use std::time::Duration;
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use seawall_core::replay::ReplayBody;
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
//!     Ok::<_, Failure>(Response::new(Full::new(Bytes::from_static(b"hello"))))
//! });
//! let service = ServiceBuilder::new()
//!     .layer(
//!         FallbackLayer::new(other)
//!             .rewrite(|req: &mut Request| {
//!                 *req.uri_mut() = "https://other.example.com/v1/chat".parse().unwrap();
//!             })
//!             .min_remaining(Duration::from_secs(2)),
//!     )
//!     .service(primary);
//!
//! let request = http::Request::post("https://api.example.com/v1/chat")
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
//! # Differences from a generic fallback
//!
//! tower has no fallback layer (`steer` and `balance` pick a service
//! before the call, not after a failure). A generic fallback — an
//! `or_else` around the call — tries the other service on any error it is
//! given, needs a clone of the request made up front, and may run after
//! part of an answer was shown. This one moves only for failures another
//! route can fix (the classified [`Failure`](seawall_core::Failure)'s
//! scope), only before content, only once, only in time and only to
//! another route; it records the body as the primary sends it and merges
//! both attempts into one [`Receipt`](seawall_core::Receipt).
#![deny(missing_docs)]

mod error;
mod future;
mod layer;
mod rewrite;
mod service;

pub use error::SameRouteFallback;
pub use future::ResponseFuture;
pub use layer::FallbackLayer;
pub use rewrite::{Rewrite, Unchanged};
pub use service::{Fallback, SERVED_BY_HEADER, ServedBy};
