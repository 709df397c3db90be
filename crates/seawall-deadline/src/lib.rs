//! One clock for an operation: a deadline set once, before the first
//! attempt, and per-attempt bounds that fit inside it.
//!
//! Three attempts at a 600 s timeout is a 30-minute operation nobody asked
//! for. [`DeadlineLayer::new`] fixes the operation's end once, as a
//! [`seawall_core::Deadline`] in the request extensions, where the retry
//! layer reads it before every retry and the fallback layer before failing
//! over. [`DeadlineLayer::per_attempt`], placed inside the retry layer,
//! bounds one attempt to `min(now + d, operation deadline)`.
//!
//! What fails, and how:
//!
//! | layer | when | failure | action |
//! |-------|------|---------|--------|
//! | `new(total)` | the operation deadline passes while waiting for the response | `deadline_exceeded` | `Surface` |
//! | `new(total)` | the operation deadline passes while the body streams | body error `deadline_exceeded`, evidence `content_seen` once bytes were delivered | `Surface` |
//! | `per_attempt(d)` | the attempt's own bound fires first | `timeout` with evidence (elapsed, bytes from [`Progress`](seawall_core::Progress)) | `Retry` (the retry layer promotes route-shaped repeats to `Failover`) |
//! | `per_attempt(d)` | the operation deadline is the earlier bound and fires | `deadline_exceeded` | `Surface` |
//! | either | the deadline already passed on entry | the same, at once, without calling the inner service | |
//!
//! The total deadline also bounds the response body: an operation ends when
//! its answer ends. The per-attempt bound covers only the response future:
//! the stream guard releases the response at first content, and a long,
//! healthy stream must not die because one attempt's bound was short.
//!
//! A deadline only shrinks: an earlier one already in the extensions (set by
//! the caller, or read from the wire with [`DeadlineLayer::from_incoming`])
//! is kept. With [`DeadlineLayer::propagate_grpc_timeout`] or
//! [`DeadlineLayer::propagate_header`] the remaining time is written on the
//! wire so the next hop stops when its caller does.
//!
//! Cost on the success path: one clock read, and one timer that is only
//! registered when the inner future (or the body) is not ready at once.
//! Under the total deadline the body reads the clock once per data frame,
//! so a body whose frames are always ready still ends at the deadline.
//!
//! ```
//! use std::time::Duration;
//! use http::{Request, Response};
//! use seawall_core::{Code, Failure};
//! use seawall_deadline::DeadlineLayer;
//! use tower::{ServiceBuilder, ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let slow = service_fn(|_req: Request<()>| async {
//!     tokio::time::sleep(Duration::from_secs(60)).await;
//!     Ok::<_, std::convert::Infallible>(Response::new(()))
//! });
//! let svc = ServiceBuilder::new()
//!     .layer(DeadlineLayer::new(Duration::from_secs(10)))
//!     .service(slow);
//! let err = svc.oneshot(Request::new(())).await.unwrap_err();
//! let failure = Failure::find(&*err).unwrap();
//! assert_eq!(failure.code(), Code::DeadlineExceeded);
//! # }
//! ```
#![deny(missing_docs)]

mod body;
mod future;
mod layer;
mod service;
mod wire;

pub use body::DeadlineBody;
pub use future::ResponseFuture;
pub use layer::DeadlineLayer;
pub use service::DeadlineService;
pub use wire::{WireTimeout, format_grpc_timeout, parse_grpc_timeout};
