//! The routes of one layer: found by name without allocating, created on
//! first use, shared by every clone of the service.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use seawall_core::cools::Cools;
use seawall_core::{BoxError, Failure, RequestFacts, RouteId, ShownUri};

use crate::error::CircuitOpen;
use crate::policy::counts;
use crate::state::{Outcome, Policy, RouteBreaker, Ticket};

/// The head of a request, given to a user's route function.
///
/// Its `Debug` shows the method, the URI as [`ShownUri`] shows it (no
/// userinfo, no query: keys travel there) and the headers' names only:
/// their values carry the caller's keys.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct RequestHead<'a> {
    /// The request method.
    pub method: &'a http::Method,
    /// The request URI.
    pub uri: &'a http::Uri,
    /// The request headers.
    pub headers: &'a http::HeaderMap,
    /// The request extensions.
    pub extensions: &'a http::Extensions,
}

impl<'a> RequestHead<'a> {
    pub(crate) fn of<B>(request: &'a http::Request<B>) -> Self {
        RequestHead {
            method: request.method(),
            uri: request.uri(),
            headers: request.headers(),
            extensions: request.extensions(),
        }
    }

    /// The route seawall would use without a route function: the
    /// [`RouteId`] in the extensions, else the URI's authority.
    pub fn default_route(&self) -> RouteId {
        RouteId::of_head(self.extensions, self.uri)
    }
}

impl std::fmt::Debug for RequestHead<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHead")
            .field("method", self.method)
            .field("uri", &ShownUri(self.uri))
            .field("headers", &HeaderNames(self.headers))
            .finish_non_exhaustive()
    }
}

/// A header map shown by its names alone.
struct HeaderNames<'a>(&'a http::HeaderMap);

impl std::fmt::Debug for HeaderNames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

pub(crate) type RouteFn = Arc<dyn Fn(&RequestHead<'_>) -> RouteId + Send + Sync>;

/// The longest route name a request may create a breaker for, in bytes
/// (a longer one goes unguarded, as past the route limit).
pub(crate) const MAX_ROUTE_NAME: usize = seawall_core::MAX_KEPT_NAME;

pub(crate) struct Shared {
    pub(crate) policy: Arc<Policy>,
    pub(crate) max_routes: usize,
    /// Keyed by the breaker's own `RouteId` text: one copy of each name.
    routes: RwLock<HashMap<Arc<str>, Arc<RouteBreaker>>>,
    /// The first route's breaker, also in `routes`. A service that talks
    /// to one provider finds it with one atomic load and a name comparison,
    /// without the map's lock or hashing. Routes are never removed, so it
    /// stays the map's breaker for that name.
    first: OnceLock<Arc<RouteBreaker>>,
    /// The route limit was reached and said so.
    said_full: std::sync::atomic::AtomicBool,
    /// A route name longer than `MAX_ROUTE_NAME` was met and said so.
    said_long: std::sync::atomic::AtomicBool,
}

impl Shared {
    pub(crate) fn new(policy: Policy, max_routes: usize) -> Self {
        Shared {
            policy: Arc::new(policy),
            max_routes,
            routes: RwLock::new(HashMap::new()),
            first: OnceLock::new(),
            said_full: std::sync::atomic::AtomicBool::new(false),
            said_long: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The breaker of a route, created on first use. `None` once
    /// `max_routes` routes exist: a flood of distinct authorities must not
    /// grow memory without bound, so further routes go unguarded (and a
    /// warning says so); `None` too for a name longer than
    /// [`MAX_ROUTE_NAME`] unless `force`d. `callers_credentials` is asked
    /// only when the breaker is created, or when one made before any call
    /// (a probe's) meets its first call: whether the route's calls carry
    /// their callers' own credentials is the route's property, and a call
    /// to a known route pays no extension lookup for it. `None` from it: no
    /// call says yet.
    pub(crate) fn breaker(
        &self,
        name: &str,
        force: bool,
        callers_credentials: impl FnOnce() -> Option<bool>,
    ) -> Option<Arc<RouteBreaker>> {
        fn known<F: FnOnce() -> Option<bool>>(
            found: &Arc<RouteBreaker>,
            said: &mut Option<F>,
        ) -> Option<Arc<RouteBreaker>> {
            if let Some(said) = said.take() {
                found.named_by_call(said);
            }
            Some(Arc::clone(found))
        }
        let mut said = Some(callers_credentials);
        if let Some(first) = self.first.get()
            && first.route.as_str() == name
        {
            return known(first, &mut said);
        }
        {
            let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(found) = routes.get(name) {
                return known(found, &mut said);
            }
            // Full: an unguarded route's every call would take the write
            // lock (and log) to find out again.
            if self.full(routes.len(), force, name) {
                return None;
            }
        }
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = routes.get(name) {
            return known(found, &mut said);
        }
        if self.full(routes.len(), force, name) {
            return None;
        }
        let name: Arc<str> = name.into();
        let breaker = Arc::new(RouteBreaker::new(
            RouteId::new(Arc::clone(&name)),
            Arc::clone(&self.policy),
            said.take().and_then(|said| said()),
        ));
        routes.insert(name, Arc::clone(&breaker));
        // Set under the write lock: the first breaker created wins.
        let _ = self.first.set(Arc::clone(&breaker));
        Some(breaker)
    }

    /// Whether `routes` known routes leave `name` unguarded (`force`: a
    /// route that must be kept whatever the count or length, one the
    /// application names rather than a request). A name longer than
    /// [`MAX_ROUTE_NAME`] is unguarded whatever the count. Says so once
    /// each, the first time: a flood of distinct authorities must not
    /// become a flood of log lines.
    fn full(&self, routes: usize, force: bool, name: &str) -> bool {
        if force {
            return false;
        }
        if name.len() > MAX_ROUTE_NAME {
            if !self
                .said_long
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                // Not the name itself: it may be megabytes.
                tracing::warn!(
                    target: "seawall::breaker",
                    route_len = name.len(),
                    max_route_name = MAX_ROUTE_NAME,
                    "circuit breaker route name too long; this route and any further \
                     such one go unguarded (said once)"
                );
            }
            return true;
        }
        if routes < self.max_routes {
            return false;
        }
        if !self
            .said_full
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                target: "seawall::breaker",
                route = name,
                max_routes = self.max_routes,
                "circuit breaker route limit reached; this route and any further new one \
                 go unguarded (said once)"
            );
        }
        true
    }

    /// Every known route's breaker.
    pub(crate) fn all(&self) -> Vec<Arc<RouteBreaker>> {
        self.routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    pub(crate) fn existing(&self, name: &str) -> Option<Arc<RouteBreaker>> {
        self.routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }
}

/// One admitted call's claim on its route's breaker. The outcome is
/// recorded when the permit drops: a permit dropped without an outcome (a
/// dropped future or body) records nothing, gives a half-open trial's
/// place back, and gives a cooldown's probe back (the next call probes).
pub(crate) struct Permit {
    breaker: Arc<RouteBreaker>,
    /// `None` once the outcome is recorded.
    ticket: Option<Ticket>,
    /// The route's resets at admission (`RouteBreaker::learn`).
    resets: u64,
    /// The request's facts, as a layer above (the retry ladder) put them
    /// in its extensions: the model a limit kept per model cools alone
    /// (read at the failure, when the body is sent and names it).
    facts: Option<RequestFacts>,
}

/// Whether a cooldown with `a` left ends no earlier than one with `b`
/// left (`None`: until a reset).
fn ends_later(a: Option<Duration>, b: Option<Duration>) -> bool {
    match (a, b) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(a), Some(b)) => a >= b,
    }
}

impl RouteBreaker {
    /// The refusal of a call for `model` while it cools on its own, if it
    /// does. The route may be cooling too, for a cause of its own (refused
    /// credentials): the refusal says the one that ends later, so a ladder
    /// or a fallback does not take a model's short wait for the route's
    /// return. What [`Permit::admit`] refuses with, and
    /// [`BreakerHandle::model_cooldown`](crate::BreakerHandle::model_cooldown)
    /// reports.
    pub(crate) fn model_refusal(&self, model: &str) -> Option<CircuitOpen> {
        let (model, code, left) = self.model_cooling(model)?;
        let route = self.route.clone();
        Some(match self.cooling() {
            Some((code, route_left)) if ends_later(route_left, left) => {
                CircuitOpen::cooling(route, code, route_left)
            }
            _ => CircuitOpen::model_cooling(route, model, code, left),
        })
    }
}

impl Permit {
    /// Admits a call to `breaker`'s route, with the request's `facts` if
    /// a layer above put them in its extensions: its permit, or the
    /// refusal. A call for a model cooling on its own is refused before
    /// the route is asked (it takes no trial, no probe); while no model
    /// cools, the model is not read.
    pub(crate) fn admit<B>(
        breaker: &Arc<RouteBreaker>,
        request: &http::Request<B>,
    ) -> Result<Self, CircuitOpen> {
        let facts = request.extensions().get::<RequestFacts>();
        if breaker.models_cooling() {
            // The head's facts when no layer put any: a Gemini path names
            // its model. A model not known yet (a body not sent) goes:
            // calls for the route's other models must.
            let head;
            let facts = match facts {
                Some(facts) => facts,
                None => {
                    head = RequestFacts::from_head(request);
                    &head
                }
            };
            if let Some(refusal) = facts.model().and_then(|model| breaker.model_refusal(model)) {
                return Err(refusal);
            }
        }
        // The resets are read before the admission: a reset landing during
        // it leaves the call counted as admitted before the reset, and its
        // 401 (for the key the reset was made for) cools nothing. Read
        // after, that 401 cooled the route just reset.
        let resets = breaker.resets();
        let ticket = breaker.admit()?;
        Ok(Permit {
            breaker: Arc::clone(breaker),
            ticket: Some(ticket),
            resets,
            facts: facts.cloned(),
        })
    }

    pub(crate) fn succeed(mut self) {
        self.record(Outcome::Success);
    }

    /// The call's answer began. A half-open trial is judged by it (a
    /// success: no permit is left for the body); so is a cooldown's probe
    /// (the cooldown ends for every call), the rest of its permit going on
    /// to the body's end, as any call of a closed spell.
    ///
    /// Not held to the body's end: under the stream guard the answer comes
    /// at the first content, and a trial or probe that streams for minutes
    /// would keep every other call refused (with no time to wait for) long
    /// after the route recovered.
    pub(crate) fn answered(mut self) -> Option<Self> {
        let ticket = self.ticket?;
        if ticket.is_trial() {
            self.succeed();
            return None;
        }
        if ticket.is_probe() {
            self.breaker.settle_probe(self.resets, true);
            self.ticket = Some(ticket.without_probe());
        }
        Some(self)
    }

    /// Records an error: a failure when it carries a [`Failure`] about the
    /// route's health, nothing otherwise. An error that is not a `Failure`
    /// (no classifier below) is not counted: the breaker cannot tell a dead
    /// route from a caller's mistake.
    pub(crate) fn fail(mut self, error: &BoxError) {
        let Some(failure) = Failure::find(&**error) else {
            return;
        };
        // The caller's own account: nothing about the route for others.
        if self.breaker.callers_credentials() && failure.is_about_account() {
            return;
        }
        let probe = self.ticket.is_some_and(Ticket::is_probe);
        // A limit the provider keeps per model cools that model alone,
        // when the request names it; anything else, the route.
        let model = self
            .facts
            .as_ref()
            .and_then(RequestFacts::model)
            .filter(|_| failure.cools() == Cools::Model);
        match model {
            Some(model) => self.breaker.learn_model(model, failure, self.resets, probe),
            None => self.breaker.learn(failure, self.resets, probe),
        }
        if counts(failure, self.breaker.policy.rate_limited_counts) {
            self.record(Outcome::Failure);
        }
    }

    fn record(&mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            if ticket.is_probe() {
                self.breaker
                    .settle_probe(self.resets, outcome == Outcome::Success);
            }
            self.breaker.record(ticket, outcome);
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.record(Outcome::Neutral);
    }
}

#[cfg(test)]
mod tests {
    use seawall_internal::random::Random;
    use tokio::time::Instant;

    use super::*;
    use crate::policy::{BreakDuration, Trip, TripRule};

    fn shared(max_routes: usize) -> Shared {
        let policy = Policy {
            trip: TripRule::from_trip(Trip::default()),
            trials: 1,
            close_after: 1,
            break_duration: BreakDuration::default(),
            rate_limited_counts: false,
            epoch: Instant::now(),
            on_transition: None,
            random: Random::Thread,
        };
        Shared::new(policy, max_routes)
    }

    /// A request's route name of megabytes (a route function keyed by the
    /// body's model) is not kept: `max_routes` of them would pin gigabytes.
    #[test]
    fn a_too_long_route_name_goes_unguarded() {
        let shared = shared(1024);
        assert!(
            shared
                .breaker(&"m".repeat(1 << 20), false, || None)
                .is_none()
        );
        assert!(shared.all().is_empty());
        let longest = "m".repeat(MAX_ROUTE_NAME);
        assert!(shared.breaker(&longest, false, || None).is_some());
        assert!(
            shared
                .breaker(&"m".repeat(MAX_ROUTE_NAME + 1), false, || None)
                .is_none()
        );
        assert_eq!(shared.all().len(), 1);
    }

    /// A route the application names (a probe's, an isolation's) is kept
    /// whatever its length, and a request to it then finds it.
    #[test]
    fn a_forced_long_route_is_kept_and_found() {
        let shared = shared(1024);
        let name = "m".repeat(MAX_ROUTE_NAME + 1);
        let forced = shared.breaker(&name, true, || None).expect("forced");
        let found = shared.breaker(&name, false, || None).expect("found");
        assert!(Arc::ptr_eq(&forced, &found));
        // One copy of the name: the map's key is the breaker's own.
        let routes = shared.routes.read().unwrap();
        let (key, _) = routes.iter().next().unwrap();
        assert!(std::ptr::eq(key.as_ref(), forced.route.as_str()));
    }

    /// A route function's head, formatted (`{head:?}` in a log line),
    /// shows no key: not the bearer token, not the URI's query or userinfo.
    #[test]
    fn a_request_heads_debug_shows_no_key() {
        let request = http::Request::post(
            "https://user:sk-SECRET@generativelanguage.googleapis.com/v1beta/models/g:generateContent?key=SECRET&alt=sse",
        )
        .header(http::header::AUTHORIZATION, "Bearer sk-SECRET")
        .header("x-goog-api-key", "SECRET")
        .body(())
        .unwrap();
        let shown = format!("{:?}", RequestHead::of(&request));
        assert!(!shown.contains("SECRET"), "{shown}");
        for part in [
            "POST",
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent",
            "authorization",
            "x-goog-api-key",
        ] {
            assert!(shown.contains(part), "{part}: {shown}");
        }
    }
}
