use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use http_body::Body;
use seawall_core::facts::OperationSlots;
use seawall_core::recording::{HeadCopy, ReplayBody};
use seawall_core::{BoxError, OtherRoutes, RequestFacts, RouteId};
use tower_service::Service;

use crate::error::SameRouteFallback;
use crate::future::{Plan, ResponseFuture};
use crate::layer::{FallbackRoute, Settings};
use crate::rewrite::Rewrite;

/// The response header that names the route that served the answer, when
/// [`FallbackLayer::served_by_header`](crate::FallbackLayer::served_by_header)
/// is on.
pub const SERVED_BY_HEADER: http::HeaderName = http::HeaderName::from_static("x-seawall-served-by");

/// Which route produced a response: in the extensions of every response of
/// a [`Fallback`] service.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServedBy {
    /// The route that answered: the member a route set chose, when the
    /// route is a route set.
    pub route: RouteId,
    /// True when it was the fallback.
    pub fallback: bool,
}

/// The service made by [`FallbackLayer`](crate::FallbackLayer).
///
/// # Readiness
///
/// The service is ready when its primary is. A primary whose readiness
/// fails (a tower `Buffer` whose worker died, a tonic `Channel` that
/// could not connect) is not this service's failure: returned from
/// `poll_ready`, it would have the caller discard the whole service,
/// and with it every route around the failing primary. It is the
/// primary failing the next call instead: `poll_ready` keeps the error
/// and says ready; `call` sends nothing to the primary and judges the
/// error as it judges an error the primary's call returned — the chain
/// takes it when a route takes such a failure (a `transport` one does
/// for an ordinary route), otherwise the call fails with it (as it is,
/// when no layer classified it). The failed primary is replaced by a
/// fresh clone of the one the layer was applied to, whose readiness the
/// next call waits for. A retry ladder ([`seawall-retry`]) returns its
/// service's readiness error as its own: it retries calls, and has no
/// other route to send one to.
///
/// [`seawall-retry`]: https://docs.rs/seawall-retry
pub struct Fallback<S, F, R> {
    pub(crate) primary: S,
    pub(crate) shared: Arc<Shared<S, F, R>>,
    /// The primary's readiness error, kept for the next call: see
    /// [Readiness](Fallback#readiness).
    pub(crate) unready: Option<BoxError>,
}

/// A service kept to be cloned when it is called: behind a lock, so what
/// holds it is `Sync` for any `Send` service. A service that is only
/// `Send` (tower's `BoxCloneService`, a hyper client boxed that way) made
/// every [`Fallback`] and its futures `!Send` through the shared `Arc`:
/// not spawnable, not an axum state. The lock is taken only when a
/// route fires, to clone it.
pub(crate) struct Spare<S>(std::sync::Mutex<S>);

impl<S> Spare<S> {
    pub(crate) fn new(service: S) -> Self {
        Spare(std::sync::Mutex::new(service))
    }

    /// A clone of the service, to call.
    pub(crate) fn clone_service(&self) -> S
    where
        S: Clone,
    {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// What every clone of a [`Fallback`] and every call shares: a call keeps
/// one reference to it, and clones a route's service only when it fires.
pub(crate) struct Shared<S, F, R> {
    /// A clone of the primary made when the layer was applied: called when
    /// the primary is the route the layer waited for.
    pub(crate) primary: Spare<S>,
    pub(crate) routes: Box<[FallbackRoute<F, R>]>,
    pub(crate) settings: Settings,
    /// The primary route of each request, without allocating for the usual one.
    pub(crate) primary_routes: OnceLock<RouteId>,
    /// Some route takes what condemns only the primary's route (a silent
    /// attempt, an open breaker): only then may a ladder below leave the
    /// primary sooner for it.
    pub(crate) takes_moves: bool,
}

/// Whether a route of `routes` takes what condemns a route: all of it,
/// or (opted in `only_on`) a code of that scope, a silent attempt's
/// timeout.
pub(crate) fn takes_moves<F, R>(routes: &[FallbackRoute<F, R>]) -> bool {
    routes.iter().any(|route| {
        !route.only_triggers
            || route
                .triggers
                .iter()
                .any(|code| seawall_core::Scope::of(*code) == seawall_core::Scope::Route)
    })
}

impl<S, F, R> Shared<S, F, R> {
    pub(crate) fn new(primary: S, routes: Box<[FallbackRoute<F, R>]>, settings: Settings) -> Self {
        let takes_moves = takes_moves(&routes);
        Shared {
            primary: Spare::new(primary),
            routes,
            settings,
            primary_routes: OnceLock::new(),
            takes_moves,
        }
    }

    /// A configured route that is the primary's.
    fn same_route(&self, primary: &RouteId) -> Option<&RouteId> {
        self.routes
            .iter()
            .filter_map(|route| route.route.as_ref())
            .find(|route| *route == primary)
    }
}

impl<S, F, R> Fallback<S, F, R> {
    seawall_core::define_inner_service_accessors!(primary: S, "the primary service");
}

impl<S: Clone, F, R> Clone for Fallback<S, F, R> {
    fn clone(&self) -> Self {
        Fallback {
            primary: self.primary.clone(),
            shared: Arc::clone(&self.shared),
            // A clone is a service not yet polled ready: its primary's
            // readiness is its own.
            unready: None,
        }
    }
}

impl<S: std::fmt::Debug, F, R> std::fmt::Debug for Fallback<S, F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("primary", &self.primary)
            .field("routes", &self.shared.routes)
            .field("settings", &self.shared.settings)
            .finish()
    }
}

impl<S, F, R, B, RB> Service<http::Request<B>> for Fallback<S, F, R>
where
    S: Service<http::Request<ReplayBody<B>>, Response = http::Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    F: Service<http::Request<ReplayBody<B>>, Response = http::Response<RB>> + Clone,
    F::Error: Into<BoxError>,
    R: Rewrite<B>,
    B: Body,
{
    type Response = http::Response<RB>;
    type Error = BoxError;
    type Future = ResponseFuture<S, F, R, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if self.unready.is_some() {
            return Poll::Ready(Ok(()));
        }
        match self.primary.poll_ready(cx) {
            Poll::Ready(Err(error)) => self.primary_unready(error.into()),
            ready => ready.map_err(Into::into),
        }
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let unready = self.unready.take();
        let settings = &self.shared.settings;
        let primary_route = RouteId::of_request_sharing(&request, &self.shared.primary_routes);
        if let Some(same) = self.shared.same_route(&primary_route) {
            return ResponseFuture::refused(SameRouteFallback::new(same.clone(), None).into());
        }
        // Whether the primary's request bills, as its ladder reads it: an
        // attempt recorded here for a route without a ladder is billed
        // only then (a token count, a `GET`, answered 2xx, is free).
        let bills = seawall_core::billable(request.method(), request.uri().path());
        let ladder_above = request
            .extensions()
            .get::<seawall_core::recording::OuterLadder>()
            .is_some();
        // Facts a layer above made with the operation's slots (a ladder, a
        // resume), which its recording fills; a caller's own facts
        // (`RequestFacts::with_model`) have none and read no body.
        let slots_above = request
            .extensions()
            .get::<RequestFacts>()
            .is_some_and(|facts| facts.body_sent().is_some());
        // The operation's own deadline, as this layer receives it, for the
        // slots made here (read by the stream guard): a ladder below
        // narrows the `Deadline` to its reserve's window.
        let slots = (!slots_above).then(|| OperationSlots::of_request(&request));
        let (mut parts, body) = request.into_parts();
        // The recording tells both routes what the body asked for, and
        // which route's call sent it whole.
        let body = ReplayBody::recorded_for(&mut parts, body, settings.max_replay_bytes, slots);
        // A ladder below may move on sooner: this layer has another route
        // for it. Not when no route would take it (a chain of routes only
        // for a context overflow): the primary keeps its retries.
        if self.shared.takes_moves {
            parts.extensions.insert(OtherRoutes);
        }
        let mut request = http::Request::from_parts(parts, body);
        // The primary sends the original handle; the kept copy starts from
        // the beginning of the recording, for the fallback.
        let kept = request
            .body()
            .replay()
            .map(|body| HeadCopy::of(&mut request, body));
        let plan = Plan {
            shared: Arc::clone(&self.shared),
            request: kept,
            bills,
            ladder_above,
        };
        match unready {
            None => ResponseFuture::primary(self.primary.call(request), primary_route, plan),
            Some(error) => ResponseFuture::primary_unready(error, primary_route, plan),
        }
    }
}

impl<S: Clone, F, R> Fallback<S, F, R> {
    /// The primary's readiness failed: the error is the next call's (see
    /// [Readiness](Fallback#readiness)), and a fresh primary replaces the
    /// failed one, which is never polled or called again.
    #[cold]
    fn primary_unready(&mut self, error: BoxError) -> Poll<Result<(), BoxError>> {
        tracing::debug!(
            target: "seawall::fallback",
            error = %error,
            "the primary is not ready: its error is the next call's"
        );
        self.primary = self.shared.primary.clone_service();
        self.unready = Some(error);
        Poll::Ready(Ok(()))
    }
}
