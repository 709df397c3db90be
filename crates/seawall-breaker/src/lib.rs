//! A per-route circuit breaker for calls to LLM providers.
//!
//! A retry loop has no memory that the last twelve calls to a provider
//! failed; a breaker is that memory. [`BreakerLayer`] keeps one breaker per
//! route ([`RouteId`](seawall_core::RouteId): the one in the request
//! extensions, else the URI authority, or your own [`route_with`]
//! function), shared by every clone of the service.
//!
//! - **Closed**: calls go through. Only failures that say something about
//!   the route count: `provider_unavailable`, `overloaded`, `transport`,
//!   `timeout`, `first_byte_timeout`, `idle_timeout`, `empty_response`,
//!   `protocol_violation`, and a `stream_interrupted` whose cause (the
//!   [`Interrupted`](seawall_core::Interrupted) record's) is one of those:
//!   a reset, an overload, a silent gap (`rate_limited` when
//!   [`count_rate_limited`] is on), and a `truncated` stream the provider
//!   ended cleanly after content but before its finish marker (an answer
//!   the token limit cut is an answer, not a failure). An `overloaded`
//!   that no route said — a call tower's `LoadShed` refused on this side,
//!   unsent (closed by us, with no status) — does not count: a burst past
//!   a local limit is not the route's. A 400, a refusal, a cancellation, the
//!   operation's own `deadline_exceeded`, an error that is not a seawall
//!   [`Failure`](seawall_core::Failure) or a response with an error status
//!   (no classifier below turned it into a failure) count neither way. By [`Trip`] the
//!   breaker opens on a failure ratio over a sliding window with a minimum
//!   of calls (the default), or on a run of consecutive failures.
//! - **Open**: calls fail at once, without touching the inner service, with
//!   [`BreakerError::Open`]: the route and the time until the next probe.
//!   [`BreakerError`] is a `std::error::Error` whose source is a transient
//!   `circuit_open` [`Failure`](seawall_core::Failure) (action `failover`)
//!   with that route and `retry_after`, or the inner service's own error:
//!   boxed by a layer above or by `?`, [`Failure::find`] and
//!   [`Failure::extract`] see through it. [`BreakerError::into_box`]
//!   flattens it instead (the refusal's `Failure`, or the inner error's own
//!   box).
//! - **Half-open**: after the break, up to [`half_open_trials`] trial calls
//!   go through at once; [`close_after`] successes close the breaker, any
//!   counted failure re-opens it with a longer break (doubling, capped,
//!   jittered: [`BreakDuration`]). A trial is judged by its answer (under
//!   the stream guard, its first content), not held to its body's end: a
//!   trial streaming for minutes would keep every other call refused long
//!   after the route came back.
//!
//! - **Cooling down**: besides rates of failure, a route remembers what it
//!   said last about itself ([`Failure::cooldown`](seawall_core::Failure::cooldown)):
//!   a quota wall until its reset, a rate limit for its hint, rejected
//!   credentials for a minute (or until [`BreakerHandle::reset`]). Each is kept on tokio's
//!   clock from when it was learnt (a `reset_at` wall-clock time is
//!   converted then, so the paused clock drives cooldowns in tests).
//!   Meanwhile calls to the route are refused locally, without a call,
//!   with a `route_cooling_down` failure carrying the time left and the
//!   code that cooled it: transient (action `failover`) after a rate
//!   limit, permanent as its cause after a quota wall or rejected
//!   credentials (action `surface` on this route; the fallback still
//!   moves on it, its scope being the route's)
//!   ([`CircuitOpen::cooled_by`]): the next hundred requests go straight to
//!   a fallback instead of each meeting the wall.
//!   [`BreakerHandle::cooldown`] lists it; [`BreakerHandle::reset`] ends it.
//!
//!   **One model's limit cools that model**: a rate limit or quota wall
//!   the provider keeps per model ([`Failure::cools`](seawall_core::Failure::cools):
//!   Gemini's `…PerModel…` quotas, OpenAI's "Rate limit reached for
//!   gpt-4o in organization …"), for a request that names its model
//!   ([`RequestFacts::model`](seawall_core::RequestFacts::model), from the
//!   facts a layer above, the retry ladder, put in the request), refuses
//!   only the calls for that model on the route, the same way; calls for
//!   the route's other models go. The account's walls (OpenAI's
//!   `insufficient_quota`, a 402, a spend cap), rejected credentials,
//!   a limit whose evidence names no model, and a request naming none
//!   cool the whole route, as above. The rate of failures stays the
//!   route's. A model's cooldown ends for every caller at its end (no
//!   probe: the route's other calls show the route is there), and ends at
//!   [`BreakerHandle::reset`]. Its refusal names the model
//!   ([`CircuitOpen::model`], and its text: "model X cooling down on
//!   route R after …"). [`BreakerHandle::cooldown`] stays the route's
//!   own; [`BreakerHandle::model_cooldown`] gives the one a call for a
//!   model meets (the model's, or the route's where that ends later), and
//!   [`BreakerHandle::models_cooling`] lists a route's models cooling on
//!   their own. A route keeps at most
//!   [`MAX_MODELS_COOLING`] models cooling on their own; past them a
//!   model's wall cools the whole route. A call whose model is not known
//!   when it is admitted (an OpenAI body not yet sent, on a first attempt
//!   the retry ladder did not read ahead) is admitted: it may meet its
//!   model's wall once more, which cools that model again. While no
//!   model cools, an admission reads one more atomic word and no model;
//!   an admitted call keeps the request's facts (reference counts, no
//!   allocation) for its failure to name the model.
//!
//!   **At a wall's end, one probe**: after a quota wall or rejected keys,
//!   the first call admitted after the end goes to the route; every other
//!   call meanwhile is refused locally as before (`route_cooling_down`,
//!   the same code that cooled it, permanent), with a short time to look
//!   again (100 ms), so a fallback moves on — fifty callers waiting out a
//!   wall send one call, not fifty. The probe's answer (its response, as a
//!   half-open trial's) ends the cooldown for every caller; the same wall
//!   again cools the route again, for the new cooldown it names; any other
//!   failure, or a probe whose caller drops it, gives the probe back and
//!   the next call probes. A caller alone sees no difference: its next
//!   call after the end is the probe. A rate limit's cooldown ends for
//!   every caller at once: each waited it out as the provider asked, and
//!   holding them for a probe's answer (a whole generation) would spend
//!   their retry ladders' attempts on refusals while the route is healthy.
//!
//! The outcome of a streamed answer is known only at its end, so the
//! response body is wrapped in a [`BreakerBody`] that records it there: a
//! provider that drops every stream half-way trips the breaker (counted by
//! the calls of a closed spell; a trial was judged by its answer). The
//! end is the body's last frame when the body says so (`is_end_stream`):
//! the stream guard does on the frame that ends the protocol, so a reader
//! that stops at `[DONE]` and drops the body (async-openai) has read a
//! success. A future dropped before its answer records nothing and gives
//! back its half-open place.
//!
//! A body dropped before its end is judged by what is below the breaker:
//!
//! - **Under a stream guard** (its [`UsageSlot`](seawall_core::UsageSlot)
//!   in the response extensions says a reader of the protocol is below),
//!   the guard ends the body at the protocol's end, so a body dropped
//!   before it is a caller that left before the answer was whole: it
//!   records nothing.
//! - **With no stream guard below** (a deadline or a body timeout alone,
//!   or a response the guard let through unread), nothing marks the
//!   protocol's end: the body ends with the connection, and an SDK stops
//!   reading at `data: [DONE]` before that. A body dropped after it
//!   delivered data, with no error, while no read of it was waiting on
//!   the route, records a success: the route answered. Counted as nothing
//!   instead, healthy streams would leave the window to the stalls a bound
//!   below cuts (each an `idle_timeout` failure), and a route with a few
//!   stalls among many good streams would trip. A body dropped while a
//!   read waited (the caller's own timeout gave up on a silence), or
//!   before any data, records nothing: that says nothing of the route
//!   either way. A stream the provider cut cleanly half-way reads as a
//!   success here too, when its reader stops at the cut: only a reader
//!   of the protocol knows an answer was not whole, so put the stream
//!   guard below to count those.
//!
//! The success path takes no lock and allocates nothing: each service clone
//! keeps the breaker of the last route it called, and a breaker's state and
//! window are atomics (one word for the state machine, one per window
//! bucket). The breaker's refusal allocates nothing either: it is a value
//! until something boxes it or reads its `Failure`. In the assembled stack
//! that is at once: the retry layer right above boxes every error and reads
//! the `Failure` through the chain ([`Failure::extract`]), so there a
//! refused call does allocate.
//!
//! The breaker takes what comes back to it for its route's answer: its
//! place is below a fallback or a route set (as `seawall::stack::Stack`
//! puts it), never above one, where a backup's answer and a backup's
//! refused key would count as its primary's. The model a per-model limit
//! names is read from the request's facts, which a retry ladder above
//! (one of a single attempt too) fills from the body; with no ladder
//! above, only a model the path names is known.
//!
//! [`route_with`]: BreakerLayer::route_with
//! [`Failure::find`]: seawall_core::Failure::find
//! [`Failure::extract`]: seawall_core::Failure::extract
//! [`count_rate_limited`]: BreakerLayer::count_rate_limited
//! [`half_open_trials`]: BreakerLayer::half_open_trials
//! [`close_after`]: BreakerLayer::close_after
//!
//! ```
//! use std::time::Duration;
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use seawall_breaker::{BreakerLayer, BreakerState, Trip};
//! use seawall_core::{Code, Failure, RouteId};
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let layer = BreakerLayer::new().trip(Trip::Consecutive { failures: 2 });
//! let handle = layer.handle();
//! let provider = tower::service_fn(|_req: http::Request<()>| async {
//!     Err::<http::Response<Full<Bytes>>, _>(Failure::new(Code::Overloaded))
//! });
//! let service = ServiceBuilder::new().layer(layer).service(provider);
//!
//! for _ in 0..2 {
//!     let request = http::Request::get("https://api.example.com/v1/chat").body(()).unwrap();
//!     let error = service.clone().oneshot(request).await.unwrap_err().into_box();
//!     assert_eq!(Failure::find(&*error).unwrap().code(), Code::Overloaded);
//! }
//! let route = RouteId::new("api.example.com");
//! assert_eq!(handle.state(&route), BreakerState::Open);
//!
//! // Now the route is refused without being called.
//! let request = http::Request::get("https://api.example.com/v1/chat").body(()).unwrap();
//! let error = service.clone().oneshot(request).await.unwrap_err();
//! let refusal = error.as_open().expect("refused by the breaker");
//! assert_eq!(refusal.route(), &route);
//! assert!(refusal.retry_after().unwrap() <= Duration::from_secs(5));
//!
//! // What the layers above see: a `circuit_open` failure, action failover.
//! let failure = Failure::downcast(error.into_box()).unwrap();
//! assert_eq!(failure.code(), Code::CircuitOpen);
//! assert_eq!(failure.route(), Some(&route));
//! # }
//! ```
//!
//! # Differences from a generic circuit breaker
//!
//! tower has no circuit breaker; general-purpose ones (failsafe, the
//! breakers of resilience crates) keep one state per wrapped service and
//! count whichever results a predicate you give them calls failures.
//!
//! - **Per route**: one layer keeps a breaker per
//!   [`RouteId`](seawall_core::RouteId), so one service talking to several
//!   routes trips only the broken one.
//! - **Only failures that blame the route count**, read from the
//!   classified [`Failure`](seawall_core::Failure): a 400, a refusal or the
//!   caller's own deadline neither opens nor closes it. So it needs
//!   `ClassifyLayer` below: without one, a response with an error status
//!   (a raw 503) counts neither way, and the first says so in a warning.
//! - **Streams end later**: the outcome is recorded when the body ends,
//!   so a provider that drops every stream half-way trips it.
//! - **What the route said**: a quota wall, a rate limit's hint or
//!   rejected credentials cool the route down without a failure count.
//! - **A refusal others can act on**: a `circuit_open` or
//!   `route_cooling_down` failure with the time to wait (action
//!   `failover`; a cooldown after a quota wall or rejected credentials is
//!   permanent, as its cause), for the fallback and retry layers above; or, with
//!   [`gate_readiness`](BreakerLayer::gate_readiness), tower's way: not
//!   ready while the last route is open.
#![deny(missing_docs)]

mod body;
mod error;
mod future;
mod handle;
mod layer;
mod models;
mod policy;
mod probe;
mod service;
mod shared;
mod state;

pub use body::BreakerBody;
pub use error::{BreakerError, CircuitOpen};
pub use future::ResponseFuture;
pub use handle::BreakerHandle;
pub use layer::BreakerLayer;
pub use models::MAX_MODELS_COOLING;
pub use policy::{BreakDuration, Trip};
pub use probe::RouteProbe;
pub use service::Breaker;
pub use shared::RequestHead;
pub use state::{BreakerState, Transition};
