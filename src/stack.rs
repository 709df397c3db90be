//! The assembled stack, in the recommended order, with presets.
//!
//! ```text
//! Deadline(total) → Fallback → RetryBudget → Breaker → Deadline(per attempt) → StreamGuard → Classify → client
//! ```
//!
//! With a route set ([`Stack::build_with_route_set`]), the set sits between
//! the ladder and the breaker: each attempt picks a member.
//!
//! The order is the design: whichever layer runs first spends the clock the
//! next one needs.
//!
//! - **Deadline(total)** is outermost so that every attempt, every backoff
//!   and the fallback share one clock; nothing inside can make the
//!   operation longer than the caller asked.
//! - **Fallback** sits outside the retry ladder: it sees the ladder's final
//!   verdict (gave up on a transient failure, or promoted it to
//!   `Failover`) and spends what is left of the deadline on one attempt
//!   elsewhere — not a whole second ladder.
//! - **RetryBudget** outside **Breaker**: each attempt passes the breaker,
//!   so an open circuit ends the ladder at once (`circuit_open` is
//!   `Failover`; a route cooling after a quota wall or rejected keys is
//!   refused as `route_cooling_down`, `Surface`), and the breaker counts
//!   attempts, not operations.
//! - **Deadline(per attempt)** inside the ladder bounds one attempt and
//!   never outlives the operation's deadline.
//! - **StreamGuard** inside the per-attempt bound and the ladder: until the
//!   first content arrives the response is held back, so a stream that dies
//!   before content is still an attempt the ladder may retry; after that,
//!   failures come through the body and are never replayed.
//! - **Classify** next to the client, so every layer above it speaks one
//!   vocabulary; only tower-http's **Decompression** is further in, so
//!   what the classifier and the stream guard read is the answer itself.
//!
//! ```
//! use std::convert::Infallible;
//! use bytes::Bytes;
//! use http_body_util::Full;
//! use seawall::classify::ClassifyLayer;
//! use seawall::stack::Stack;
//! use tower::{ServiceExt, service_fn};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // Any client service will do; here, a canned OpenAI answer.
//! let client = service_fn(|_req: http::Request<_>| async {
//!     let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
//!     let response = http::Response::builder()
//!         .header("content-type", "application/json")
//!         .body(Full::new(Bytes::from_static(body.as_bytes())))
//!         .unwrap();
//!     Ok::<_, Infallible>(response)
//! });
//! let service = Stack::interactive().build(&ClassifyLayer::openai(), client);
//! let request = http::Request::post("http://api.example.com/v1/chat/completions")
//!     .body(Full::new(Bytes::from_static(b"{}")))
//!     .unwrap();
//! let response = service.oneshot(request).await.unwrap();
//! assert_eq!(response.status(), 200);
//! # }
//! ```

use std::time::Duration;

use seawall_breaker::{Breaker, BreakerLayer};
use seawall_classify::encoding::CanonicalEncoding;
use seawall_classify::{CanonicalEncodingLayer, Classify, ClassifyLayer};
use seawall_core::provider::QuotaWall;
use seawall_deadline::{DeadlineLayer, DeadlineService, WireTimeout};
use seawall_fallback::{Fallback, FallbackLayer, RouteSet, RouteSetLayer};
use seawall_retry::{Budget, RetryBudget, RetryBudgetLayer, RetryPolicy};
use seawall_stream::{StreamGuard, StreamGuardLayer};
use tower_http::decompression::{Decompression, DecompressionLayer};
use tower_layer::Layer;

/// The codings the attempt's decompression reads, as it writes them in
/// `accept-encoding` (so the request it asks with is left alone).
const DECODED: &str = "gzip,deflate,br";

/// One attempt: Breaker → Deadline(per attempt) → StreamGuard → Classify →
/// Decompression → client.
pub type AttemptStack<S, C> =
    Breaker<DeadlineService<StreamGuard<Classify<Decompression<CanonicalEncoding<S>>, C>>>>;

/// The whole stack without a fallback.
pub type Seawall<S, C> = DeadlineService<RetryBudget<AttemptStack<S, C>>>;

/// The whole stack with a fallback service `F` (usually another
/// [`AttemptStack`]) and its request rewrite `R`.
pub type SeawallWithFallback<S, C, F, R> =
    DeadlineService<Fallback<RetryBudget<AttemptStack<S, C>>, F, R>>;

/// The whole stack over a route set: one ladder whose every attempt goes
/// to one member of the set (see [`Stack::build_with_route_set`]).
pub type SeawallWithRouteSet<S, C, R> =
    DeadlineService<RetryBudget<RouteSet<AttemptStack<S, C>, R>>>;

/// The settings of the assembled stack. Start from a preset and override
/// any knob; the layers themselves are the seawall crates' own, so each
/// knob is documented there.
///
/// Clones of a `Stack` (and every service built from it) share the retry
/// budget and the breaker state, so a primary and a fallback built from one
/// `Stack` are tracked route by route in one breaker.
#[derive(Debug, Clone)]
pub struct Stack {
    total: Duration,
    per_attempt: Duration,
    retry: RetryPolicy,
    budget: Budget,
    breaker: BreakerLayer,
    guard: StreamGuardLayer,
    /// How each attempt tells the server its remaining time, if it does.
    propagate: Option<WireTimeout>,
    /// Seeds the ladder's jitter, for reproducible runs.
    seed: Option<u64>,
}

impl Stack {
    /// A person is waiting: 60 s for the operation, 20 s per attempt, three
    /// attempts with 250 ms–8 s full-jitter backoff, a 20 % retry budget
    /// (at least 10 retries a second), the interactive stream guard (first
    /// byte 15 s, first content 60 s, idle 30 s).
    ///
    /// The per-attempt bound covers the wait for a stream's first content
    /// too, so here it is the tighter of the two: an attempt whose first
    /// content takes longer than 20 s ends as `timeout` and the ladder
    /// tries again (the guard's 60 s applies when this stack's per-attempt
    /// bound is raised) — unless the model is still streaming its
    /// thinking then: its hold is handed on just before the bound, and
    /// the stream goes on live within the 60 s (asked again, it would
    /// think, and be billed, as long again). For a model that thinks
    /// before it writes, start from [`Stack::reasoning`].
    ///
    /// **Not fleet-safe as shipped.** Measured with `seawall fleet`
    /// (README, "At fleet scale"): when many low-rate clients share a
    /// provider that browns out, the ratio budget's floor (10 retries a
    /// second for 10 s) never binds for a client making one call a
    /// second, and 429s do not count for the default breaker, so the
    /// fleet amplifies the load as a naive retry loop does. For many
    /// clients of one provider, give it a token-bucket budget
    /// ([`Budget::grpc`], e.g. `Budget::grpc(5, 0.2)`) and a breaker that
    /// trips on a few failures in a row and counts rate limits
    /// ([`BreakerLayer::count_rate_limited`]); `seawall_fleet::stacks`
    /// has the configuration the fleet run measures
    /// (`fleet_budget`, `fleet_breaker`).
    pub fn interactive() -> Self {
        Stack {
            total: Duration::from_secs(60),
            per_attempt: Duration::from_secs(20),
            retry: RetryPolicy::interactive(),
            budget: Budget::ratio(0.2, 10, Duration::from_secs(10)),
            breaker: BreakerLayer::new(),
            guard: StreamGuardLayer::interactive(),
            propagate: None,
            seed: None,
        }
    }

    /// Nobody is waiting: 10 min for the operation, 2 min per attempt, six
    /// attempts with 500 ms–30 s backoff, the interactive stream guard.
    pub fn batch() -> Self {
        Stack {
            total: Duration::from_secs(600),
            per_attempt: Duration::from_secs(120),
            retry: RetryPolicy::batch(),
            ..Stack::interactive()
        }
    }

    /// A model that thinks before it writes: 22 min for the operation,
    /// 11 min per attempt, a short ladder (two attempts: a third attempt
    /// of a ten-minute think rarely fits), the reasoning stream guard
    /// (first content may take 10 min). Two whole attempts fit the
    /// operation: with a fallback the ladder keeps one attempt's bound in
    /// reserve for it (at most half the operation), and the primary still
    /// has its own whole attempt.
    pub fn reasoning() -> Self {
        Stack {
            total: Duration::from_secs(1320),
            per_attempt: Duration::from_secs(660),
            retry: RetryPolicy::interactive().max_attempts(2),
            guard: StreamGuardLayer::reasoning(),
            ..Stack::interactive()
        }
    }

    /// The operation's deadline.
    pub fn total_deadline(mut self, total: Duration) -> Self {
        self.total = total;
        self
    }

    /// The bound on one attempt (never past the operation's deadline).
    pub fn attempt_timeout(mut self, per_attempt: Duration) -> Self {
        self.per_attempt = per_attempt;
        self
    }

    /// The retry ladder. Its [`max_retry_after`](RetryPolicy::max_retry_after),
    /// where longer than the default quota wall, raises the wall of a
    /// classifier that has the default (see [`Stack::attempt`]): a rate
    /// limit's hint the ladder may wait is waited, not judged a wall.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The retry budget, shared by every service built from this stack.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.budget = budget;
        self
    }

    /// The breaker, shared by every service built from this stack; seeded
    /// with the stack's [`seed`](Self::seed) when one was given before
    /// (which makes its state anew: take its handle from
    /// [`breaker_layer`](Self::breaker_layer) after).
    ///
    /// A breaker that gates readiness ([`BreakerLayer::gate_readiness`],
    /// for a balancer's endpoints, one route each) gates what
    /// [`build`](Self::build) and [`attempt`](Self::attempt) make; the
    /// stack ungates it over the same breakers where one instance sends
    /// to many routes: a fallback's primary
    /// ([`build_with_fallback`](Self::build_with_fallback)) and a route
    /// set's members ([`build_with_route_set`](Self::build_with_route_set)).
    pub fn breaker(mut self, breaker: BreakerLayer) -> Self {
        self.breaker = match self.seed {
            Some(seed) => breaker.seed(seed),
            None => breaker,
        };
        self
    }

    /// The stream guard.
    pub fn stream_guard(mut self, guard: StreamGuardLayer) -> Self {
        self.guard = guard;
        self
    }

    /// Each attempt tells the server the time it has left, as `wire` says
    /// (`WireTimeout::grpc()` for gRPC's `grpc-timeout`): what is left of
    /// the operation when the attempt starts. Not the attempt's own bound:
    /// it covers the wait for the answer to begin, where a gRPC deadline
    /// ends the whole call, a stream that began in time included. A value the
    /// request already carries there is the caller's own bound (tonic's
    /// `Request::set_timeout` writes one): the operation's deadline is the
    /// earlier of it and the stack's. Off by default; without it a
    /// `grpc-timeout` the request carries still bounds the operation, and
    /// each attempt rewrites it with what is left of the operation (never
    /// the caller's whole value again, on a retry); a request without one
    /// gets none.
    pub fn propagate_deadline(mut self, wire: WireTimeout) -> Self {
        self.propagate = Some(wire);
        self
    }

    /// Opt in to resuming interrupted streams: the same stack with a
    /// [`ResumeLayer`](seawall_resume::ResumeLayer) inside the total
    /// deadline, outside the fallback and the ladder.
    #[cfg(feature = "resume")]
    pub fn resume(self, layer: seawall_resume::ResumeLayer) -> crate::resume::Resuming {
        crate::resume::Resuming::new(self, layer)
    }

    /// Draws every random choice of the stack — the ladder's backoff jitter
    /// and the breaker's break jitter — from generators seeded with `seed`:
    /// the same seed, the same run (tests, the fleet simulation).
    ///
    /// Seeding the breaker makes its state anew: take its handle after
    /// this ([`breaker_layer`](Self::breaker_layer)), not from a layer
    /// given to [`breaker`](Self::breaker) before.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self.breaker = self.breaker.seed(seed);
        self
    }

    /// The breaker layer, e.g. for its [`handle`](BreakerLayer::handle).
    pub fn breaker_layer(&self) -> &BreakerLayer {
        &self.breaker
    }

    /// One attempt around `client`: Breaker → Deadline(per attempt) →
    /// StreamGuard → Classify → Decompression. This is also what a fallback
    /// route should be: one attempt, no ladder of its own.
    ///
    /// The classifier's quota wall, where it is the default (60 s), is
    /// raised to the ladder's longer
    /// [`max_retry_after`](RetryPolicy::max_retry_after), and the stream
    /// guard judges in-stream errors against the same wall: with
    /// `max_retry_after(300 s)`, OpenAI's "try again in 4m" is a rate
    /// limit the ladder waits out, not a `quota_exhausted` it returns at
    /// once. A wall the classifier was given is kept.
    ///
    /// Decompression (tower-http's, gzip, deflate and br) sits innermost,
    /// so the classifier and the stream guard read decoded bytes; it asks
    /// for compressed answers with `Accept-Encoding` when the request names
    /// no encoding of its own. Not for zstd: its decoder here takes any
    /// window a frame asks for, up to 128 MiB per response (RFC 9659 bounds
    /// the content coding's at 8 MB, but nothing here enforces it). Under it,
    /// [`CanonicalEncodingLayer`] writes the answer's coding the way the
    /// decompression matches it (`GZIP` and `x-gzip` as `gzip`). An
    /// encoding it does not know reaches the classifier still encoded: a
    /// 2xx answer fails as `protocol_violation`, never as a misread
    /// answer; an error answer (as one whose bytes the decoder refused) is
    /// judged by its status and headers alone, its body not read for
    /// hints, and its failure's message says so. A caller's
    /// own `Accept-Encoding` that asks for another coding (`zstd`, `*`) is
    /// replaced by the decompression's list: the caller reads decoded bytes
    /// either way, and an answer nothing here decodes would fail on every
    /// attempt, each billed.
    pub fn attempt<S, C: Clone>(
        &self,
        classify: &ClassifyLayer<C>,
        client: S,
    ) -> AttemptStack<S, C> {
        self.attempt_through(&self.breaker, classify, client)
    }

    /// [`Stack::attempt`] with `breaker` in place of the stack's layer (one
    /// reading the same breakers).
    fn attempt_through<S, C: Clone>(
        &self,
        breaker: &BreakerLayer,
        classify: &ClassifyLayer<C>,
        client: S,
    ) -> AttemptStack<S, C> {
        let decoded = DecompressionLayer::new().no_zstd().layer(
            CanonicalEncodingLayer::new()
                .asking_only_for(DECODED)
                .layer(client),
        );
        let quota_wall = self.quota_wall(classify);
        let classified = classify.clone().quota_wall(quota_wall).layer(decoded);
        // An error inside a stream meets the classifier's quota wall, so a
        // rate limit's hint means one thing whether it came in a 429 or
        // an error event; a threshold the guard was given stays its own.
        let guarded = self
            .guard
            .clone()
            .quota_wall_or(quota_wall)
            .layer(classified);
        let mut bound = DeadlineLayer::per_attempt(self.per_attempt);
        bound = match &self.propagate {
            Some(wire) => bound.propagate(wire.clone()),
            // The caller's own `grpc-timeout` (read for the operation's
            // deadline) is rewritten per attempt with what is left of the
            // operation, never sent whole again.
            None => bound.refresh(WireTimeout::grpc()),
        };
        let bounded = bound.layer(guarded);
        breaker.layer(bounded)
    }

    /// The quota wall the stack's attempts judge a rate limit's hint
    /// against: `classify`'s, raised to the ladder's
    /// [`max_retry_after`](RetryPolicy::max_retry_after) where that is
    /// longer and the classifier's is the default
    /// ([`QuotaWall::DEFAULT_THRESHOLD`]).
    ///
    /// The two are one question, how long a wait is worth waiting: with a
    /// wall below the ladder's bound, a hint between the two (OpenAI's
    /// "try again in 4m" under `max_retry_after(300 s)`) is judged a wall,
    /// which the ladder never waits, and raising the bound did nothing. A
    /// wall the classifier was given (any other threshold) is the
    /// caller's word and kept: hints past it are walls to schedule, and
    /// the ladder's bound still holds for every other hint (a 503's
    /// `Retry-After`, a gRPC pushback). A wall set explicitly to the
    /// default, 60 s, reads as the default: the classifier does not say
    /// which it was.
    pub(crate) fn quota_wall<C>(&self, classify: &ClassifyLayer<C>) -> Duration {
        let own = classify.get_quota_wall();
        if own == QuotaWall::DEFAULT_THRESHOLD {
            // Below the clamp: a hint at it is "a week or more", a wall
            // whatever the ladder's bound (the ladder never sleeps it).
            let below_clamp =
                seawall_core::hint::MAX_RETRY_HINT.saturating_sub(Duration::from_nanos(1));
            own.max(self.retry.get_max_retry_after().min(below_clamp))
        } else {
            own
        }
    }

    /// The ladder's retry policy.
    #[cfg(feature = "resume")]
    pub(crate) fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The operation's deadline: the stack's total, or the caller's own
    /// bound on the wire where it is earlier — in the wire the stack
    /// propagates, else gRPC's `grpc-timeout` (tonic's `set_timeout` writes
    /// it whether or not the stack propagates one; only a gRPC caller sends
    /// it).
    pub(crate) fn total_deadline_layer(&self) -> DeadlineLayer {
        let wire = self.propagate.clone().unwrap_or_else(WireTimeout::grpc);
        let total = DeadlineLayer::new(self.total).read_incoming(wire);
        // The attempts write what is left of the operation, not the window
        // a fallback reserve narrows them to.
        match self.propagate {
            Some(_) => total.carry_to_attempts(),
            None => total,
        }
    }

    /// The whole stack around `client`, without a fallback.
    pub fn build<S, C: Clone>(&self, classify: &ClassifyLayer<C>, client: S) -> Seawall<S, C> {
        let ladder = self.ladder().layer(self.attempt(classify, client));
        self.total_deadline_layer().layer(ladder)
    }

    /// The whole stack around `client`, failing over along `fallback`'s
    /// chain (typically [`Stack::attempt`]s of other clients, each with a
    /// rewrite to its route).
    ///
    /// The fallback asks this stack's breaker which routes are cooling
    /// down (unless it was given its own
    /// [`health`](FallbackLayer::health)): it skips them without a call,
    /// and when every route is cooling down it waits for the first back
    /// if that fits the deadline. It asks by each route's `RouteId`: with
    /// a route function ([`BreakerLayer::route_with`]) the breakers are
    /// keyed by what that function gives, which the fallback cannot name,
    /// so it does not see them cool; the breaker still refuses such a
    /// route's calls without sending them, and the fallback moves on from
    /// that refusal as from any other.
    ///
    /// The ladder keeps time in reserve for the fallback: one attempt's
    /// bound, at least the fallback's
    /// [`get_min_remaining`](FallbackLayer::get_min_remaining), at most
    /// half the operation — when a route of the chain takes a route's
    /// failures ([`takes_route_failures`](FallbackLayer::takes_route_failures));
    /// none for a chain that fires only on failures that come at once. Without it a ladder of slow transient failures
    /// could spend the deadline to the end, and the fallback configured for
    /// exactly that case would find no time left to fire.
    ///
    /// The primary's breaker does not gate its readiness, even when this
    /// stack's does ([`BreakerLayer::gate_readiness`]): the fallback asks
    /// only the primary whether it is ready, and a gated primary would
    /// hold the caller for its route's break instead of letting the
    /// fallback answer. It reads the same breakers
    /// ([`BreakerLayer::ungated`]).
    pub fn build_with_fallback<S: Clone, C: Clone, F: Clone, R>(
        &self,
        classify: &ClassifyLayer<C>,
        client: S,
        fallback: FallbackLayer<F, R>,
    ) -> SeawallWithFallback<S, C, F, R> {
        // Nothing kept for a chain that takes no route's failure: it fires
        // only after failures that come at once (a context overflow), and
        // a reserve would only cut the primary's last attempt short.
        let reserve = if fallback.takes_route_failures() {
            self.per_attempt
                .max(fallback.get_min_remaining())
                .min(self.total / 2)
        } else {
            Duration::ZERO
        };
        let policy = self.retry.clone().fallback_reserve(reserve);
        let mut ladder = RetryBudgetLayer::new(policy, self.budget.clone());
        if let Some(seed) = self.seed {
            ladder = ladder.seed(seed);
        }
        // The fallback asks only the primary whether it is ready: gated,
        // it would hold the caller for a break the fallback is there for.
        let primary = ladder.layer(self.attempt_through(&self.breaker.ungated(), classify, client));
        let handle = self.breaker.handle();
        let fallback =
            fallback.health_or(move |route: &seawall_core::RouteId| handle.cooldown(route));
        self.total_deadline_layer().layer(fallback.layer(primary))
    }

    /// The whole stack around `client`, each attempt of the ladder sent to
    /// one member of `route_set`: Deadline(total) → RetryBudget → RouteSet
    /// → [`Stack::attempt`].
    ///
    /// The set reads this stack's breaker (one breaker and one cooldown per
    /// member, by the member's `RouteId`), so a member cooling down or with
    /// its breaker open is never chosen, and [`Stack::seed`] seeds its
    /// choices too. The set's calls are counted there: by the member's
    /// `RouteId` even when the breaker has a route function
    /// ([`BreakerLayer::route_with`]), which the set cannot apply to a
    /// member (it needs the request) and which would count them in
    /// breakers the set never reads ([`BreakerLayer::keyed_by_route_id`]).
    /// A failure that condemns only the member moves the next attempt to
    /// another member while one can be tried (see
    /// [`seawall_fallback::route_set`]).
    ///
    /// The members' breaker does not gate its readiness, even when this
    /// stack's does ([`BreakerLayer::gate_readiness`], for one route per
    /// instance): the set's instances send to every member, and a gate on
    /// the member called last would hold the next attempt, bound for a
    /// healthy member, until that one's cooldown or break is over. It reads
    /// the same breakers ([`BreakerLayer::ungated`]); the set itself skips
    /// a member that would refuse.
    ///
    /// Configuring the set makes it anew: a handle taken from `route_set`
    /// before this call reads a set nothing calls. Take it from the
    /// service: `service.get_ref().get_ref().handle()` (the total
    /// deadline, then the ladder, then the set).
    pub fn build_with_route_set<S, C: Clone, R>(
        &self,
        classify: &ClassifyLayer<C>,
        client: S,
        route_set: RouteSetLayer<R>,
    ) -> SeawallWithRouteSet<S, C, R> {
        let handle = self.breaker.handle();
        let mut route_set = route_set.health(move |route| {
            let probe = handle.probe(route);
            move || probe.blocked()
        });
        if let Some(seed) = self.seed {
            route_set = route_set.seed(seed);
        }
        // The set's instances send to every member: a readiness gate (for
        // one route per instance) would hold the move to a healthy member
        // while the member called last cools down.
        let keyed = self.breaker.keyed_by_route_id().ungated();
        let members = route_set.layer(self.attempt_through(&keyed, classify, client));
        self.total_deadline_layer()
            .layer(self.ladder().layer(members))
    }

    fn ladder(&self) -> RetryBudgetLayer {
        let ladder = RetryBudgetLayer::new(self.retry.clone(), self.budget.clone());
        match self.seed {
            Some(seed) => ladder.seed(seed),
            None => ladder,
        }
    }
}
