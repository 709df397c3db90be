use std::sync::Arc;

use seawall_core::RouteId;
use seawall_internal::random::Random;
use tokio::time::Instant;
use tower_layer::Layer;

use crate::handle::BreakerHandle;
use crate::policy::{BreakDuration, Trip, TripRule};
use crate::service::Breaker;
use crate::shared::{RequestHead, RouteFn, Shared};
use crate::state::{MAX_TRIALS, Policy, Transition, TransitionFn};

/// Wraps a service in a per-route circuit breaker. See the
/// [crate docs](crate).
///
/// Every service the layer makes, and every clone of those, shares one set
/// of breakers. Configure first, then take the [`handle`](Self::handle):
/// each builder call starts a fresh set.
///
/// It needs `ClassifyLayer` (seawall-classify) below it: the breaker counts
/// the classified [`Failure`](seawall_core::Failure)s, and without a
/// classifier a 503 is a response like any other. A response with an error
/// status (anything but a 2xx or a 304) counts neither way, and the first
/// one warns (target `seawall::breaker`, once per process) that no
/// classifier is below.
#[derive(Clone)]
pub struct BreakerLayer {
    config: Config,
    shared: Arc<Shared>,
    /// Services key breakers by each request's `RouteId`, the route
    /// function aside ([`keyed_by_route_id`](Self::keyed_by_route_id)).
    by_route_id: bool,
    /// Services never gate their readiness, whatever
    /// [`gate_readiness`](Self::gate_readiness) says
    /// ([`ungated`](Self::ungated)): the gate is each service's, not the
    /// breakers', so services that send to many routes can share breakers
    /// with gated ones.
    ungated: bool,
}

#[derive(Clone)]
struct Config {
    trip: Trip,
    trials: u32,
    close_after: u32,
    break_duration: BreakDuration,
    rate_limited_counts: bool,
    gate_readiness: bool,
    max_routes: usize,
    route_fn: Option<RouteFn>,
    on_transition: Option<TransitionFn>,
    seed: Option<u64>,
}

impl Config {
    fn build(&self) -> Shared {
        let policy = Policy {
            trip: TripRule::from_trip(self.trip),
            trials: u64::from(self.trials).clamp(1, MAX_TRIALS),
            close_after: u64::from(self.close_after).clamp(1, MAX_TRIALS),
            break_duration: self.break_duration,
            rate_limited_counts: self.rate_limited_counts,
            epoch: Instant::now(),
            on_transition: self.on_transition.clone(),
            random: Random::from_seed(self.seed),
        };
        Shared::new(policy, self.max_routes.max(1))
    }
}

impl Default for BreakerLayer {
    fn default() -> Self {
        BreakerLayer::new()
    }
}

impl BreakerLayer {
    /// A breaker with the defaults: [`Trip::default`] (half the calls
    /// failing over 30 s, at least 20 calls), 3 half-open trials and 3
    /// successes to close, [`BreakDuration::default`] (5 s doubling to
    /// 5 min, 20 % jitter), `rate_limited` not counted, readiness not gated,
    /// at most 1024 routes.
    pub fn new() -> Self {
        let config = Config {
            trip: Trip::default(),
            trials: 3,
            close_after: 3,
            break_duration: BreakDuration::default(),
            rate_limited_counts: false,
            gate_readiness: false,
            max_routes: 1024,
            route_fn: None,
            on_transition: None,
            seed: None,
        };
        let shared = Arc::new(config.build());
        BreakerLayer {
            config,
            shared,
            by_route_id: false,
            ungated: false,
        }
    }

    fn with(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self.shared = Arc::new(self.config.build());
        self
    }

    /// Draws the break's jitter from a generator seeded with `seed`, for
    /// reproducible runs (tests, simulations). Without it the thread's
    /// generator is used.
    pub fn seed(self, seed: u64) -> Self {
        self.with(|c| c.seed = Some(seed))
    }

    /// What opens a closed breaker.
    pub fn trip(self, trip: Trip) -> Self {
        self.with(|c| c.trip = trip)
    }

    /// How many trial calls a half-open breaker lets through at once
    /// (1 to 255). More than one, so a single flaky probe does not decide.
    pub fn half_open_trials(self, trials: u32) -> Self {
        self.with(|c| c.trials = trials)
    }

    /// How many successful trials close a half-open breaker (1 to 255).
    /// Any counted failure among the trials re-opens it.
    pub fn close_after(self, successes: u32) -> Self {
        self.with(|c| c.close_after = successes)
    }

    /// How long an open breaker waits before probing.
    pub fn break_duration(self, duration: BreakDuration) -> Self {
        self.with(|c| c.break_duration = duration)
    }

    /// Whether `rate_limited` failures count against the route (default
    /// no: a 429 says the caller is fast, not that the route is down).
    pub fn count_rate_limited(self, counts: bool) -> Self {
        self.with(|c| c.rate_limited_counts = counts)
    }

    /// Whether `poll_ready` waits while the last route this service called
    /// would refuse a call: its breaker open or isolated, the route cooling
    /// down, or half-open with every trial slot taken (default no:
    /// `poll_ready` is the inner service's). Turn it on under a balancer,
    /// so it picks another endpoint instead of one that would refuse. A
    /// retry ladder above bounds the wait for its retries by its own time,
    /// and by its `max_retry_after` (then a `timeout` that fails over).
    ///
    /// A waiting instance looks at its route again at least once a second,
    /// so a route forced closed by [`BreakerHandle::reset`] in the middle
    /// of its break or cooldown is ready within a second, not at the
    /// break's end.
    ///
    /// Once ready, an instance stays ready until it is called, as tower's
    /// `poll_ready` contract asks: if the route opens in between (another
    /// clone's failure), that call is refused, and the next `poll_ready`
    /// waits.
    ///
    /// `poll_ready` cannot know the next request's route: the gate is the
    /// route this instance called last. So it is for a service with one
    /// route per instance (a balancer's endpoint). Over a service that
    /// sends to many routes, a `Buffer` in front would hold every request
    /// — to healthy routes too — while the last one stays refused, and the
    /// first `poll_ready` of an operation has no bound but its caller's
    /// (the deadlines start in `call`).
    ///
    /// A call the breaker refuses is never sent, so what the inner
    /// service's `poll_ready` reserved for it (a `Buffer`'s slot, a
    /// `ConcurrencyLimit`'s permit) stays with this instance; with the gate
    /// closed it stays for the whole break. Put such limits above the
    /// breaker, or drop the instance after a refusal. Under a fallback
    /// (`Stack::build_with_fallback`), `poll_ready` asks the primary only:
    /// a gated primary would hold the caller for the break instead of
    /// letting the fallback answer — don't gate there. seawall's `Stack`
    /// does not: its fallback's primary and its route set's members are
    /// built from [`ungated`](Self::ungated).
    pub fn gate_readiness(self, gate: bool) -> Self {
        BreakerLayer {
            ungated: false,
            ..self.with(|c| c.gate_readiness = gate)
        }
    }

    /// The most routes tracked (default 1024). Calls to further routes go
    /// through unguarded, with a warning, so that memory stays bounded. So
    /// do calls to a route whose name is longer than 256 bytes (a route
    /// kept is kept for the process's life), unless a [`BreakerHandle`]
    /// made it (a probe's or an isolated route).
    pub fn max_routes(self, max: usize) -> Self {
        self.with(|c| c.max_routes = max)
    }

    /// Derives each request's route with `route_of` instead of
    /// [`RouteId::of_request`], e.g. to give each model of a provider its
    /// own breaker from a header or an extension.
    ///
    /// A route derived from what the caller writes (a header, the body's
    /// model) is the caller's to name: a name longer than 256 bytes goes
    /// unguarded, with one warning, as a route past
    /// [`max_routes`](Self::max_routes) does.
    ///
    /// A layer that picks the route itself and reads its breaker by the
    /// route's `RouteId` (a route set, through a [`RouteProbe`]) cannot
    /// know what `route_of` makes of a request: under it, the layer from
    /// [`keyed_by_route_id`](Self::keyed_by_route_id) counts the calls
    /// where the probe reads (seawall's `Stack::build_with_route_set`
    /// does so).
    ///
    /// [`RouteProbe`]: crate::RouteProbe
    pub fn route_with<F>(self, route_of: F) -> Self
    where
        F: Fn(&RequestHead<'_>) -> RouteId + Send + Sync + 'static,
    {
        self.with(|c| c.route_fn = Some(Arc::new(route_of)))
    }

    /// Calls `callback` on every state change, besides the `tracing` event
    /// (target `seawall::breaker`, fields `route`, `from`, `to`). It runs
    /// inline on the thread that made the change: keep it short.
    ///
    /// A panic in it is caught (the change stands, and the call that made
    /// it goes on) and said as a warning on the same target, with the
    /// fields `route`, `from`, `to` and `panic` (what it said). The panic
    /// hook still runs first; under `panic = "abort"` nothing is caught.
    pub fn on_transition<F>(self, callback: F) -> Self
    where
        F: Fn(&Transition<'_>) + Send + Sync + 'static,
    {
        self.with(|c| c.on_transition = Some(Arc::new(callback)))
    }

    /// This layer's breakers (the same: both layers' handles read and
    /// force them), with each call's breaker found by the request's
    /// [`RouteId`] ([`RouteId::of_request`]) even when a route function is
    /// set ([`route_with`](Self::route_with)).
    ///
    /// For a layer below one that chooses the route and reads its breaker
    /// by that `RouteId` ([`BreakerHandle::probe`]), as a route set does
    /// for each member: calls keyed by the route function would be
    /// counted in breakers the probe never reads, so a member could be
    /// open without the set seeing it, and every operation would spend an
    /// attempt on its refusal. Requests without a `RouteId` are keyed by
    /// their URI's authority.
    ///
    /// A further builder call makes a fresh set of breakers, as always,
    /// and keeps this keying.
    pub fn keyed_by_route_id(&self) -> BreakerLayer {
        BreakerLayer {
            by_route_id: true,
            ..self.clone()
        }
    }

    /// This layer without readiness gating, over the same breakers: for
    /// services that send to many routes beside a gated balancer's
    /// endpoints, as a route set's members or a fallback's primary are
    /// (seawall's `Stack::build_with_route_set` and
    /// `Stack::build_with_fallback` use it). The gate is for one route per
    /// instance: gated, such a service waits in `poll_ready` for whichever
    /// route it called last, though the next request goes elsewhere.
    ///
    /// A further builder call makes a fresh set of breakers, as always,
    /// and stays ungated, unless it is
    /// [`gate_readiness`](Self::gate_readiness).
    pub fn ungated(&self) -> BreakerLayer {
        BreakerLayer {
            ungated: true,
            ..self.clone()
        }
    }

    /// A handle to read and force the state of this layer's breakers.
    pub fn handle(&self) -> BreakerHandle {
        BreakerHandle {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S> Layer<S> for BreakerLayer {
    type Service = Breaker<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let route_fn = match self.by_route_id {
            true => None,
            false => self.config.route_fn.clone(),
        };
        let gate_readiness = self.config.gate_readiness && !self.ungated;
        Breaker::new(inner, Arc::clone(&self.shared), route_fn, gate_readiness)
    }
}

impl std::fmt::Debug for BreakerLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerLayer")
            .field("trip", &self.config.trip)
            .field("half_open_trials", &self.config.trials)
            .field("close_after", &self.config.close_after)
            .field("break_duration", &self.config.break_duration)
            .field("rate_limited_counts", &self.config.rate_limited_counts)
            .field(
                "gate_readiness",
                &(self.config.gate_readiness && !self.ungated),
            )
            .field("max_routes", &self.config.max_routes)
            .field("route_fn", &self.config.route_fn.is_some())
            .field("keyed_by_route_id", &self.by_route_id)
            .finish_non_exhaustive()
    }
}
