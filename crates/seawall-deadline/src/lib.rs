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
//! Two attempt bounds with no retry ladder between them (a caller's and a
//! stack's) bound the same attempt: the inner one counts in the outer
//! one's [`Progress`](seawall_core::Progress), and when the outer, shorter
//! bound passes, the attempt fails with its `timeout` and the bytes that
//! arrived, not a `deadline_exceeded` the inner one read into the outer
//! one's deadline.
//!
//! The total deadline also bounds the response body: an operation ends when
//! its answer ends. The per-attempt bound covers only the response future:
//! the stream guard releases the response at first content, and a long,
//! healthy stream must not die because one attempt's bound was short.
//! It runs from the attempt's start, the request's sending included: a
//! client-streaming or bidirectional call whose server answers only once
//! the upload ends (a tonic handler reading the whole stream) fails at
//! the attempt's bound if the upload takes longer. Give such calls a
//! total deadline only. (The request's facts cannot yet tell a body still
//! being sent from one never read, as over a connection that hangs before
//! it is made, which the attempt's bound must still cut.)
//!
//! A deadline only shrinks: an earlier one already in the extensions (set by
//! the caller, or read from the wire with [`DeadlineLayer::from_incoming`])
//! is kept. With [`DeadlineLayer::propagate_grpc_timeout`] or
//! [`DeadlineLayer::propagate_header`] the remaining time of the operation
//! is written on the wire so the next hop stops when its caller does: a
//! per-attempt layer writes the operation's (what a total layer outside
//! left with [`DeadlineLayer::carry_to_attempts`], else the `Deadline` it
//! finds), never its own bound, and nothing where it knows of none.
//!
//! Nor does a layer that writes the header lengthen the caller's own bound
//! the request already carries in it: tonic's `set_timeout` is a
//! `grpc-timeout` header, and a tonic channel keeps no timer but that
//! header, so writing over it with a later time would lift the caller's
//! bound on both ends. A layer reads a well-formed value in the header it
//! writes as an operation deadline of its own and writes the earlier of
//! the two (a malformed one is replaced). A total layer counts it from when
//! the request entered it, as [`DeadlineLayer::read_incoming`] does, and
//! carries it to the attempts; an attempt under a total layer that carries
//! the operation's deadline counts it from when that layer took the
//! request, so each attempt of a retry tells the server what is left of
//! it. An attempt with no such layer outside counts it from its own start:
//! give the total layer [`read_incoming`](DeadlineLayer::read_incoming)
//! (or let it propagate the same header) so the retry plans within the
//! caller's bound too.
//!
//! A caller that stops waiting for an answer to *begin*, but reads a
//! stream that began for as long as it runs (an SDK's read timeout), puts
//! an [`AnswerBy`](seawall_core::AnswerBy) in the extensions: the total
//! bound narrows the `Deadline` the layers inside plan within to it and
//! fails the call with `deadline_exceeded` when no answer has begun by
//! then, while the body keeps the operation's own deadline (and so does
//! the wire).
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
//!
//! # Differences from `tower::timeout` and tower-http's `Timeout`
//!
//! - **One bound per call vs one deadline per operation**:
//!   `tower::timeout::Timeout` bounds one call to its inner service. Inside
//!   a retry it bounds each attempt and nothing bounds the sum; outside, it
//!   cancels the whole thing but the retry layer never learns how much time
//!   is left, and sleeps a backoff it cannot finish. Here the operation's
//!   end is a [`Deadline`](seawall_core::Deadline) in the request
//!   extensions, set once and only shrinking, which the retry and fallback
//!   layers read before they wait; a per-attempt bound fits inside it.
//! - **The body is bounded**: both tower's and tower-http's `Timeout` stop
//!   at the response head, and tower-http's `ResponseBodyTimeout` bounds
//!   the wait for each frame (keep-alives reset it), not the answer. The
//!   total deadline here also ends a streaming body.
//! - **Failures, not `Elapsed` or a status**: tower fails with an opaque
//!   `Elapsed`, tower-http answers with a status code (408 or one you
//!   choose). This layer fails with a seawall `Failure` a retry can act on:
//!   `timeout` with what arrived (retry, or fail over when nothing did),
//!   `deadline_exceeded` (surface).
//! - **On the wire**: the remaining time can be read from an incoming
//!   request and written on the outgoing one (`grpc-timeout` or a header of
//!   your choice), so the next hop stops when its caller does.
//!
//! Do not put tower-http's `TimeoutLayer` under seawall (between it and
//! the client): it answers with a response, 408 Request Timeout or the
//! status you choose, which the classifier reads as the provider's own
//! answer: retried, and counted against the route by a breaker. Bound the
//! attempt with this layer there, or each frame with tower-http's
//! `ResponseBodyTimeoutLayer`, whose error reads as `timeout`.
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
