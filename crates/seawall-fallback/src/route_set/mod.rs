//! Route sets: many equivalent routes behind one service, one chosen per
//! attempt.
//!
//! A route set is N deployments or API keys of one model, speaking one
//! wire format — three OpenAI keys, two Azure deployments, one key per
//! region — behind one `tower::Service`. [`RouteSetLayer`] sits **inside
//! the retry ladder**, above the breaker: each attempt of the one ladder
//! picks a member.
//!
//! ```text
//! Deadline(total) → RetryBudget → RouteSet → Breaker → Deadline(per attempt) → StreamGuard → Classify → client
//! ```
//!
//! - **Each member is a route**: a [`Member`] carries its own
//!   [`RouteId`](seawall_core::RouteId) — two keys on one host are two
//!   routes — and what its requests change: the origin (scheme and
//!   authority), headers such as the key, and an optional
//!   [`rewrite`](RouteSetLayer::rewrite) (a deployment in the path). The
//!   route set puts the member's `RouteId` in the request's extensions, so
//!   the breaker below keeps one breaker and one cooldown per member.
//! - **A member with a key of its own sends only its own**: a member that
//!   sets a credential header ([`Member::header`]: `authorization`,
//!   `x-api-key`, `api-key`, `x-goog-api-key`, `proxy-authorization`,
//!   `cookie`) has every other one the request came with removed, so the
//!   caller's key (async-openai sends `Authorization: Bearer
//!   $OPENAI_API_KEY` on every request) never reaches the Azure deployment
//!   an OpenAI member's 401 moved the attempt to. The caller's
//!   `OpenAI-Organization` and `OpenAI-Project` headers and a `key` query
//!   parameter (a Gemini key) are removed too. A member that sets none
//!   sends the caller's: the caller's key is then meant for every such
//!   member.
//! - **Power of two choices**: two members drawn at random, the one with
//!   the lower cost — in-flight calls (plus one) times recent latency
//!   (peak-sensitive, fading with age so a member found slow is tried
//!   again, `latency_half_life`). A member never measured costs nothing,
//!   so a new one is tried. A call its caller gives up on before the
//!   answer (a timeout, a client gone) counts the time it waited, as
//!   tower's `PeakEwma` counts it: a member that takes calls and never
//!   answers stops drawing them (a call dropped before it was ever polled
//!   sent nothing, and is no sample). The draw comes from a seedable generator
//!   ([`seed`](RouteSetLayer::seed)).
//! - **Never a refused member**: with [`health`](RouteSetLayer::health)
//!   (the breaker's per-route probe; `Stack::build_with_route_set` wires
//!   it), a member cooling down — a quota wall until its reset, a rate
//!   limit for its hint, rejected credentials for a minute — or whose
//!   breaker is open is not chosen: no attempt, no local
//!   refusal spent from the ladder.
//! - **Every member cooling down: the call waits for the first back** when
//!   a member cools after a rate limit (its hint is when it answers again)
//!   and comes back within [`max_wait`](RouteSetLayer::max_wait) (60 s)
//!   and a second before the request's
//!   [`Deadline`](seawall_core::Deadline): the wait is the call's own,
//!   inside the set, so the ladder above sees one attempt — the call made
//!   after it. No refusal spends an attempt or a retry-budget token (a
//!   burst refused through one cooldown would drain the budget), and the
//!   receipt lists only calls that reached a member. The calls refused
//!   through one cooldown come back spread by up to a quarter of their
//!   wait (at most a second), not in the instant it ends. Otherwise —
//!   a return past the deadline or `max_wait`, members behind a quota wall,
//!   rejected keys, open breakers — the call fails at once with the set's
//!   own refusal of the member that comes back first, as its breaker
//!   would refuse it: `route_cooling_down` naming what cooled it
//!   ([`Failure::cooled_by`](seawall_core::Failure::cooled_by):
//!   `rate_limited`, `quota_exhausted`, `auth`; permanent after a wall or
//!   rejected keys), or `circuit_open`, carrying the time left. A refusal
//!   called no one: the ladder above records no call for it.
//! - **A failure that condemns only the member moves the next attempt**:
//!   a route-scoped failure before content
//!   ([`Failure::moves_route`](seawall_core::Failure::moves_route)) demotes
//!   the member (chosen only when no other can be, for
//!   [`demote_after_failure`](RouteSetLayer::demote_after_failure)), and
//!   while another member can be tried the failure goes up wrapped in
//!   [`AnotherRoute`](seawall_core::AnotherRoute): the ladder does not end
//!   on it. A quota wall, a 401, a model missing from a deployment, an
//!   open circuit or a zero-byte timeout moves the next attempt at once; a
//!   brief 503 is retried after the usual backoff, on another member.
//!   [`Action::decide`](seawall_core::Action::decide) is untouched: the
//!   member's failure keeps its class, code and action, and with one
//!   member (or none left) the ladder sees exactly what it sees without a
//!   set. A request-scoped failure (context length, bad request, refusal)
//!   or anything after content never moves.
//! - **The choice is recorded**: the response carries the member's
//!   `RouteId` in its extensions and a failure names its member, so the
//!   ladder's [`Receipt`](seawall_core::Receipt) lists the member of every
//!   attempt, and the set tells the ladder which member a call went to
//!   ([`CallBelow`](seawall_core::facts::CallBelow)): an attempt its
//!   caller gave up on is counted `cancelled` under that member, and a
//!   call given up on while it waited for a member to come back is no
//!   attempt at all. The member is counted in flight until its response body ends
//!   or is dropped ([`RouteSetBody`]).
//!
//! Attempts, the deadline, the retry budget and body replay stay the
//! ladder's, never past the operation's deadline. The move off a member
//! that failed for the first time in the operation is the set's, not one
//! of the ladder's attempts (as a fallback chain's hop is not): three
//! members each rate-limited for 2 s under a three-attempt ladder are each
//! tried once, and the ladder still has the attempt that waits for the
//! first back. A set of `n` members makes at most `max_attempts + n` calls
//! per operation, each move or retry still paid from the retry budget.
//!
//! tracing: target `seawall::route_set`; a trace event per choice (field
//! `route`), a debug event per member failure (`route`, `code`,
//! `another`), when every member is refused and the call waits (`route`,
//! `wait_ms`) and when it fails (`route`, `code`, `retry_after_ms`).
//!
//! ```
//! use bytes::Bytes;
//! use http::header::{AUTHORIZATION, HeaderValue};
//! use http_body_util::Full;
//! use seawall_core::{Code, Failure, RouteId};
//! use seawall_fallback::{Member, RouteSetLayer};
//! use tower::{ServiceBuilder, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let members = [
//!     Member::new("key-a").header(AUTHORIZATION, HeaderValue::from_static("Bearer a")),
//!     Member::new("key-b").header(AUTHORIZATION, HeaderValue::from_static("Bearer b")),
//! ];
//! let set = RouteSetLayer::new(members).unwrap().seed(7);
//! // Key A's credentials are rejected; key B answers.
//! let provider = tower::service_fn(|req: http::Request<()>| async move {
//!     match req.headers()[AUTHORIZATION].as_bytes() {
//!         b"Bearer a" => Err(Failure::new(Code::Auth).with_status(401)),
//!         _ => Ok(http::Response::new(Full::new(Bytes::from_static(b"hi")))),
//!     }
//! });
//! let service = ServiceBuilder::new().layer(set).service(provider);
//! for _ in 0..4 {
//!     let request = http::Request::post("https://api.example.com/v1/chat").body(()).unwrap();
//!     match service.clone().oneshot(request).await {
//!         Ok(response) => {
//!             let route = response.extensions().get::<RouteId>().unwrap();
//!             assert_eq!(route.as_str(), "key-b");
//!         }
//!         // Key A, chosen once: the failure names it and says another
//!         // member can take the next attempt.
//!         Err(error) => {
//!             let failure = Failure::find(&*error).unwrap();
//!             assert_eq!(failure.route().unwrap().as_str(), "key-a");
//!             assert!(error.is::<seawall_core::AnotherRoute>());
//!         }
//!     }
//! }
//! # }
//! ```
//!
//! # Differences from `tower::balance::p2c`
//!
//! tower's `Balance` is power of two choices too, and the choice here is
//! the same algorithm on the same kind of load (tower's `PeakEwma` times
//! pending requests). It is not used, because:
//!
//! - **It chooses in `poll_ready`, before the request exists**, among the
//!   services that are ready, and a member leaves its ready set only by
//!   being not ready or by failing *readiness*. Here the choice must be
//!   made per request, after the breaker's cooldowns — learnt from
//!   responses, not readiness — exclude members, and it must be known to
//!   the call: the member's `RouteId` goes in the request for the breaker
//!   below and in the response for the receipt. `Balance`'s future is its
//!   member's, with no word of which one answered.
//! - **A failed response says nothing to it**: a 401 or a quota wall from
//!   one endpoint is an `Err` passed up, and the same endpoint stays in
//!   the ready set. Here it demotes the member and tells the ladder another
//!   member can take the next attempt ([`AnotherRoute`](seawall_core::AnotherRoute)).
//! - **It is not `Clone`**: its members live in a `ReadyCache` owned by one
//!   `Balance`, so sharing it between the ladder's attempts and the
//!   caller's clones takes a `Buffer` (a task and a channel on every call).
//!   A route set's clones share one member table of atomics.
//! - **Members are services, discovered**: `Balance` takes a `Discover`
//!   stream of services; a route set's members are rewrites of one request
//!   to one inner stack (one connection pool, one breaker registry), fixed
//!   when it is built.
//! - **Seedable and cheap**: one draw from seawall's seedable generator
//!   per choice, one bit mask of the eligible members; choosing among
//!   eight takes tens of nanoseconds (`benches/route_set.rs`).

mod choose;
mod error;
mod future;
mod layer;
mod service;

pub use choose::{Blocked, MAX_MEMBERS, Member, MemberState};
pub use error::RouteSetError;
pub use future::{ResponseFuture, RouteSetBody};
pub use layer::{RouteSetHandle, RouteSetLayer};
pub use service::{MemberRewrite, RouteSet};
