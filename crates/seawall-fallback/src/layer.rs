use std::sync::Arc;
use std::time::Duration;

use seawall_core::recording::DEFAULT_MAX_REPLAY_BYTES;
use seawall_core::{Code, RouteId};
use tower_layer::Layer;

use crate::rewrite::Unchanged;
use crate::service::{Fallback, Shared, Spare};

/// What a route health registry says of a route while it is cooling down:
/// the failure that cooled it, and the time left (`None`: until an
/// operator resets it).
pub type Cooling = (Code, Option<Duration>);

/// Where a [`Fallback`] asks whether a route is cooling down: the breaker's
/// route registry, typically (the assembled stack wires
/// `BreakerHandle::cooldown` in).
///
/// A route that is cooling down is skipped without a call; when every
/// route is cooling down, the fallback waits for the earliest to come back
/// if that fits (see [`FallbackLayer::max_wait`]). Any
/// `Fn(&RouteId) -> Option<Cooling>` is one.
pub trait RouteHealth: Send + Sync + 'static {
    /// The failure that cooled `route` and the time left, while it is
    /// cooling down; `None` when it may be called.
    fn cooling(&self, route: &RouteId) -> Option<Cooling>;
}

impl<F> RouteHealth for F
where
    F: Fn(&RouteId) -> Option<Cooling> + Send + Sync + 'static,
{
    fn cooling(&self, route: &RouteId) -> Option<Cooling> {
        self(route)
    }
}

/// One route of a fallback chain: its service (one attempt, no ladder of
/// its own), the rewrite of its copy of the request, its route name, and
/// the failures it opts in to beyond the route-scoped ones.
///
/// ```
/// # use seawall_core::{Code, RouteId};
/// # use seawall_fallback::FallbackRoute;
/// # let large_context = tower::service_fn(|_: ()| async { Ok::<(), std::convert::Infallible>(()) });
/// // A model with a larger context window, for requests too long for the
/// // primary's — and only for those.
/// let route = FallbackRoute::new(large_context)
///     .route(RouteId::new("large-context"))
///     .only_on(Code::ContextTooLong);
/// ```
pub struct FallbackRoute<F, R = Unchanged> {
    pub(crate) service: Spare<F>,
    pub(crate) rewrite: Arc<R>,
    pub(crate) route: Option<RouteId>,
    /// Request-scoped codes this route also takes (opt-in).
    pub(crate) triggers: Vec<Code>,
    /// Takes only its triggers, never an ordinary route-scoped move.
    pub(crate) only_triggers: bool,
}

impl<F: Clone, R> Clone for FallbackRoute<F, R> {
    fn clone(&self) -> Self {
        FallbackRoute {
            service: Spare::new(self.service.clone_service()),
            rewrite: Arc::clone(&self.rewrite),
            route: self.route.clone(),
            triggers: self.triggers.clone(),
            only_triggers: self.only_triggers,
        }
    }
}

impl<F, R> std::fmt::Debug for FallbackRoute<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackRoute")
            .field("route", &self.route)
            .field("triggers", &self.triggers)
            .field("only_triggers", &self.only_triggers)
            .finish_non_exhaustive()
    }
}

impl<F> FallbackRoute<F> {
    /// A route served by `service`, with the request unchanged and its
    /// route derived from the request.
    pub fn new(service: F) -> Self {
        FallbackRoute {
            service: Spare::new(service),
            rewrite: Arc::new(Unchanged),
            route: None,
            triggers: Vec::new(),
            only_triggers: false,
        }
    }
}

impl<F, R> FallbackRoute<F, R> {
    /// Rewrites this route's copy of the request (see
    /// [`Rewrite`](crate::Rewrite)).
    ///
    /// The rewrite receives the primary's whole head, **credentials
    /// included** (`authorization`, `x-api-key`, `api-key`, …): they are
    /// left to it, since another region of the same provider takes the
    /// same key. A rewrite to another provider must set that provider's
    /// key or remove the primary's, or the primary's key is sent there. A
    /// `Host` header the primary carried follows a rewrite that changes
    /// the URI's authority, unless the rewrite sets `Host` itself.
    pub fn rewrite<R2>(self, rewrite: R2) -> FallbackRoute<F, R2> {
        self.rewrite_shared(Arc::new(rewrite))
    }

    pub(crate) fn rewrite_shared<R2>(self, rewrite: Arc<R2>) -> FallbackRoute<F, R2> {
        FallbackRoute {
            service: self.service,
            rewrite,
            route: self.route,
            triggers: self.triggers,
            only_triggers: self.only_triggers,
        }
    }

    /// This route's name. It is put in its request's extensions (so a
    /// breaker inside its service tracks it), it is what the route health
    /// is asked about, and a request whose own route is the same is
    /// refused with [`SameRouteFallback`](crate::SameRouteFallback) before
    /// any call. Without it, the route is derived from the rewritten
    /// request.
    pub fn route(mut self, route: RouteId) -> Self {
        self.route = Some(route);
        self
    }

    /// Opts this route in to a request-scoped failure that it can fix
    /// where the others cannot: `context_too_long` for a route with a
    /// larger context window, `refused` or `content_filtered` for a route
    /// the user chose for those (a policy decision: never a default). The
    /// route still takes the ordinary route-scoped moves; see
    /// [`only_on`](Self::only_on). Nothing moves after content, on
    /// `cancelled` or `deadline_exceeded`, nor on a transient failure the
    /// provider said not to repeat (`x-should-retry: false`), whatever is
    /// opted in.
    ///
    /// Once a request moved for such a failure, only routes that opted in
    /// to it are tried after (the others would fail the same way).
    pub fn on(mut self, code: Code) -> Self {
        if !self.triggers.contains(&code) {
            self.triggers.push(code);
        }
        self
    }

    /// As [`on`](Self::on), and this route takes nothing else: it is not
    /// used for ordinary route-scoped failures.
    pub fn only_on(mut self, code: Code) -> Self {
        self.only_triggers = true;
        self.on(code)
    }
}

/// Fails over along a chain of other routes — each one attempt, in order —
/// when the primary's failure allows it. See the [crate docs](crate).
pub struct FallbackLayer<F, R = Unchanged> {
    pub(crate) routes: Vec<FallbackRoute<F, R>>,
    pub(crate) settings: Settings,
}

impl<F: Clone, R> Clone for FallbackLayer<F, R> {
    fn clone(&self) -> Self {
        FallbackLayer {
            routes: self.routes.clone(),
            settings: self.settings.clone(),
        }
    }
}

impl<F, R> std::fmt::Debug for FallbackLayer<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackLayer")
            .field("routes", &self.routes)
            .field("settings", &self.settings)
            .finish()
    }
}

#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) min_remaining: Duration,
    pub(crate) max_replay_bytes: usize,
    pub(crate) served_by_header: bool,
    pub(crate) max_wait: Duration,
    pub(crate) health: Option<Arc<dyn RouteHealth>>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("min_remaining", &self.min_remaining)
            .field("max_replay_bytes", &self.max_replay_bytes)
            .field("served_by_header", &self.served_by_header)
            .field("max_wait", &self.max_wait)
            .field("health", &self.health.is_some())
            .finish()
    }
}

/// The longest wait for a cooling route by default: as long as the retry
/// ladder's longest `Retry-After` sleep.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(60);

impl<F> FallbackLayer<F> {
    /// Falls back to `fallback`, with the request unchanged, its route
    /// derived from the request, a minimum of 1 s left on the deadline, and
    /// request bodies recorded up to 1 MiB.
    pub fn new(fallback: F) -> Self {
        FallbackLayer::chain([FallbackRoute::new(fallback)])
    }
}

impl<F, R> FallbackLayer<F, R> {
    /// Falls back along `routes`, in order: each one attempt, tried while
    /// the deadline allows, skipping a route that is cooling down. Other
    /// settings as [`new`](FallbackLayer::new).
    ///
    /// An empty chain is no error, unlike an empty
    /// [`RouteSetLayer`](crate::route_set::RouteSetLayer): routes may follow
    /// with [`then`](Self::then), and until one does there is nothing to
    /// fall back to: the primary's failure is returned (with its receipt),
    /// after the wait [`max_wait`](Self::max_wait) allows for a primary
    /// cooling down after a rate limit, as when every route is cooling
    /// down.
    pub fn chain(routes: impl IntoIterator<Item = FallbackRoute<F, R>>) -> Self {
        FallbackLayer {
            routes: routes.into_iter().collect(),
            settings: Settings {
                min_remaining: Duration::from_secs(1),
                max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
                served_by_header: false,
                max_wait: DEFAULT_MAX_WAIT,
                health: None,
            },
        }
    }

    /// Adds `route` at the end of the chain.
    pub fn then(mut self, route: FallbackRoute<F, R>) -> Self {
        self.routes.push(route);
        self
    }

    /// The routes of the chain, in order.
    pub fn routes(&self) -> &[FallbackRoute<F, R>] {
        &self.routes
    }

    /// Rewrites every route's copy of the request with `rewrite` (see
    /// [`Rewrite`](crate::Rewrite)); give each route of a chain its own
    /// with [`FallbackRoute::rewrite`]. Like that one, it receives the
    /// primary's whole head, credentials included: a rewrite to another
    /// provider sets or removes them.
    pub fn rewrite<R2>(self, rewrite: R2) -> FallbackLayer<F, R2> {
        let rewrite = Arc::new(rewrite);
        FallbackLayer {
            routes: self
                .routes
                .into_iter()
                .map(|route| route.rewrite_shared(Arc::clone(&rewrite)))
                .collect(),
            settings: self.settings,
        }
    }

    /// The last route's name (the only one's, for a layer made by
    /// [`new`](Self::new)): see [`FallbackRoute::route`].
    pub fn route(mut self, route: RouteId) -> Self {
        if let Some(last) = self.routes.last_mut() {
            last.route = Some(route);
        }
        self
    }

    /// Opts the last route in to a request-scoped failure: see
    /// [`FallbackRoute::on`].
    pub fn on(mut self, code: Code) -> Self {
        if let Some(last) = self.routes.pop() {
            self.routes.push(last.on(code));
        }
        self
    }

    /// Falls back only while at least this much is left of the request's
    /// [`Deadline`](seawall_core::Deadline) (default 1 s). A request without
    /// a deadline has no such limit.
    pub fn min_remaining(mut self, min: Duration) -> Self {
        self.settings.min_remaining = min;
        self
    }

    /// Whether some route takes what condemns only the primary's route (a
    /// rate limit, an outage, a silent attempt): only then can a ladder's
    /// slow transient failures end in this fallback, and only then is time
    /// kept in reserve for it worth anything. A chain only for a context
    /// overflow (`only_on(ContextTooLong)`) fires after a failure that
    /// comes at once.
    pub fn takes_route_failures(&self) -> bool {
        crate::service::takes_moves(&self.routes)
    }

    /// How much of the deadline must be left for the fallback to fire: what
    /// [`min_remaining`](Self::min_remaining) set. A ladder below can keep
    /// this much in reserve.
    pub fn get_min_remaining(&self) -> Duration {
        self.settings.min_remaining
    }

    /// The most request-body bytes recorded for the fallback (default
    /// 1 MiB). Past it the body is sent once and there is no fallback.
    /// A body that comes whole in one frame (built in memory: an SDK's JSON)
    /// is kept whatever its size: keeping it is a reference, not a copy.
    pub fn max_replay_bytes(mut self, max: usize) -> Self {
        self.settings.max_replay_bytes = max;
        self
    }

    /// Also labels responses with an `x-seawall-served-by` header:
    /// `<route>`, or `<route>; fallback` (default off).
    pub fn served_by_header(mut self, on: bool) -> Self {
        self.settings.served_by_header = on;
        self
    }

    /// Where to ask whether a route is cooling down (default: nowhere —
    /// a cooling route's own breaker refuses it, and only the failures
    /// seen say when it comes back).
    pub fn health(mut self, health: impl RouteHealth) -> Self {
        self.settings.health = Some(Arc::new(health));
        self
    }

    /// Sets [`health`](Self::health) unless it was set.
    pub fn health_or(self, health: impl RouteHealth) -> Self {
        match self.settings.health {
            Some(_) => self,
            None => self.health(health),
        }
    }

    /// The longest the layer waits when every route is cooling down
    /// (default [`DEFAULT_MAX_WAIT`]): it waits for the earliest route
    /// cooling after a rate limit to come back when that is within this
    /// and within the deadline (less [`min_remaining`](Self::min_remaining));
    /// otherwise it fails at once with seawall's refusal of that route
    /// (`route_cooling_down`, [`cooled_by`](seawall_core::Failure::cooled_by)
    /// `rate_limited`), carrying its return time as `retry_after`. Routes behind a quota
    /// wall or rejected credentials are not waited for, nor a route whose
    /// failure's hint, or whose registry's time left, is at
    /// [`MAX_RETRY_HINT`](seawall_core::hint::MAX_RETRY_HINT), which
    /// every longer hint is clamped to and so names no return: when no
    /// route is cooling after a rate limit, it fails at once with the last
    /// failure.
    /// Zero never waits.
    pub fn max_wait(mut self, max: Duration) -> Self {
        self.settings.max_wait = max;
        self
    }
}

impl<S: Clone, F: Clone, R> Layer<S> for FallbackLayer<F, R> {
    type Service = Fallback<S, F, R>;

    fn layer(&self, primary: S) -> Self::Service {
        Fallback {
            primary: primary.clone(),
            shared: Arc::new(Shared::new(
                primary,
                self.routes.clone().into_boxed_slice(),
                self.settings.clone(),
            )),
            unready: None,
        }
    }
}
