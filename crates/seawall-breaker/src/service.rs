use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{BoxError, RouteId};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::error::BreakerError;
use crate::future::ResponseFuture;
use crate::shared::{Permit, RequestHead, RouteFn, Shared};
use crate::state::{BreakerState, RouteBreaker};

/// How often readiness gating looks again at an isolated route, which has
/// no probe time of its own (nor has a cooldown until a reset); and the
/// longest a gate sleeps at all. A reset wakes nobody, so a gate that
/// slept to the probe time (up to the break's cap of minutes) or to a
/// cooldown's end would keep its route out of a balancer's rotation that
/// long after an operator reset it. A waiting instance's wake-up a
/// second is all it costs, and only while it waits; a waker list that
/// `reset` notified would need a lock and memory for every waiting
/// instance, dropped ones included.
const ISOLATED_RECHECK: Duration = Duration::from_secs(1);

/// How often readiness gating looks again at a half-open route whose trial
/// slots are all taken: a trial frees its slot when its answer begins.
pub(crate) const TRIALS_RECHECK: Duration = Duration::from_millis(100);

/// The service made by [`BreakerLayer`](crate::BreakerLayer).
///
/// Every clone shares the layer's breakers. Each clone also keeps the
/// breaker of the last route it called, so a service that talks to one
/// route finds its breaker without touching the shared map.
pub struct Breaker<S> {
    inner: S,
    shared: Arc<Shared>,
    /// The layer's route function, unless the layer was keyed by
    /// `RouteId`; `None`: each request's `RouteId` names its route.
    route_fn: Option<RouteFn>,
    last: Option<Arc<RouteBreaker>>,
    /// `poll_ready` waits while `last` would refuse a call. The layer's,
    /// not the breakers': services over the same breakers may differ.
    gate_readiness: bool,
    gate: Option<Pin<Box<Sleep>>>,
    /// `poll_ready` said ready and no call has been made since: the gate
    /// stays open until one is. tower's contract: once ready, repeated
    /// `poll_ready` calls stay ready until a request is dispatched, even
    /// if the route opened meanwhile (another clone's failure); that call
    /// is then refused, as without the gate.
    readied: bool,
}

impl<S> Breaker<S> {
    pub(crate) fn new(
        inner: S,
        shared: Arc<Shared>,
        route_fn: Option<RouteFn>,
        gate_readiness: bool,
    ) -> Self {
        Breaker {
            inner,
            shared,
            route_fn,
            last: None,
            gate_readiness,
            gate: None,
            readied: false,
        }
    }

    seawall_core::define_inner_service_accessors!();

    /// Points `last` at the breaker of the request's route (`None`: the
    /// route is over the limit and goes unguarded).
    fn find_breaker<B>(&mut self, request: &http::Request<B>) {
        let derived: Option<RouteId> = self
            .route_fn
            .as_ref()
            .map(|route_of| route_of(&RequestHead::of(request)));
        let name = match &derived {
            Some(route) => route.as_str(),
            None => RouteId::name_of_request(request),
        };
        if self
            .last
            .as_ref()
            .is_none_or(|last| last.route.as_str() != name)
        {
            let callers_credentials = || {
                Some(
                    request
                        .extensions()
                        .get::<seawall_core::CallerCredentials>()
                        .is_some(),
                )
            };
            self.last = self.shared.breaker(name, false, callers_credentials);
        }
    }

    /// With readiness gating on: how long until the last route called may
    /// take a call again, if it may not now — open, isolated, cooling down
    /// after a rate limit (its hint is when it answers again; after it,
    /// while another call probes the route, a short time to look again),
    /// or half-open with every trial slot taken. A cooldown after a quota wall or
    /// rejected credentials is as permanent as its cause
    /// ([`Cooldown::worth_waiting`](seawall_core::Cooldown::worth_waiting)):
    /// the service is ready, and the call is refused at once, not waited
    /// for. So is a cooldown learnt from a hint at the clamp (its time
    /// left is [`MAX_RETRY_HINT`]): "a week or more" names no return.
    fn gated_for(&self) -> Option<Duration> {
        let last = self.last.as_ref()?;
        if let Some((cause, left)) = last.cooling()
            && seawall_core::Cooldown::worth_waiting(cause)
            && left.is_none_or(|left| left < MAX_RETRY_HINT)
        {
            return Some(left.unwrap_or(ISOLATED_RECHECK));
        }
        match last.state() {
            BreakerState::Isolated => Some(ISOLATED_RECHECK),
            BreakerState::Open => last.open_for().filter(|wait| !wait.is_zero()),
            BreakerState::HalfOpen if last.trials_full() => Some(TRIALS_RECHECK),
            BreakerState::Closed | BreakerState::HalfOpen => None,
        }
    }
}

impl<S: Clone> Clone for Breaker<S> {
    fn clone(&self) -> Self {
        Breaker {
            inner: self.inner.clone(),
            shared: Arc::clone(&self.shared),
            route_fn: self.route_fn.clone(),
            last: self.last.clone(),
            gate_readiness: self.gate_readiness,
            gate: None,
            readied: false,
        }
    }
}

impl<S: std::fmt::Debug> std::fmt::Debug for Breaker<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Breaker")
            .field("inner", &self.inner)
            .field("last_route", &self.last.as_ref().map(|b| &b.route))
            .finish()
    }
}

impl<S, B, RB> Service<http::Request<B>> for Breaker<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    S::Error: Into<BoxError>,
    RB: http_body::Body,
{
    type Response = http::Response<crate::BreakerBody<RB>>;
    type Error = BreakerError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if self.gate_readiness
            && !self.readied
            && let Some(wait) = self.gated_for()
        {
            let until = Instant::now() + wait.min(ISOLATED_RECHECK);
            let gate = self
                .gate
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
            // Move the gate only when it fired or the route opens earlier:
            // re-arming on every poll would let spurious wake-ups push an
            // isolated route's recheck forward for ever.
            if gate.is_elapsed() || until < gate.deadline() {
                gate.as_mut().reset(until);
            }
            if gate.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        let ready = self
            .inner
            .poll_ready(cx)
            .map_err(|error| BreakerError::Inner(error.into()));
        self.readied = matches!(ready, Poll::Ready(Ok(())));
        ready
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        self.readied = false;
        self.find_breaker(&request);
        // Borrowed, not cloned: only an admitted call takes a reference
        // (its permit's), so a refusal touches no reference count but the
        // route's.
        let Some(breaker) = &self.last else {
            return ResponseFuture::called(self.inner.call(request), None);
        };
        match Permit::admit(breaker, &request) {
            Ok(permit) => ResponseFuture::called(self.inner.call(request), Some(permit)),
            Err(refusal) => ResponseFuture::refused(refusal),
        }
    }
}
