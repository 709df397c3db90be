//! The route set's configuration and its handle.

use std::sync::Arc;
use std::time::Duration;

use seawall_core::RouteId;
use tower_layer::Layer;

use crate::DEFAULT_MAX_WAIT;
use crate::rewrite::Unchanged;
use crate::route_set::choose::{Blocked, MAX_MEMBERS, Member, MemberState, Probe, Set, Settings};
use crate::route_set::error::RouteSetError;
use crate::route_set::service::RouteSet;

type Health = Arc<dyn Fn(&RouteId) -> Probe + Send + Sync>;

/// Spreads calls over equivalent members — deployments or API keys of one
/// model, one wire format — choosing one per call. See the
/// [module docs](crate::route_set).
///
/// Every service the layer makes, and every clone of those, shares one set
/// of member statistics. Configure first, then take the
/// [`handle`](Self::handle): each builder call starts a fresh set.
pub struct RouteSetLayer<R = Unchanged> {
    members: Arc<[Member]>,
    rewrite: Arc<R>,
    health: Option<Health>,
    avoid: Duration,
    decay: Duration,
    seed: Option<u64>,
    max_wait: Duration,
    set: Arc<Set>,
}

impl RouteSetLayer {
    /// A set of `members`: at least one, at most 64, each with its own
    /// route name. A member that fails in a way that condemns only it is
    /// demoted for 1 s; latency measured 10 s ago counts half.
    pub fn new(members: impl IntoIterator<Item = Member>) -> Result<Self, RouteSetError> {
        let members: Vec<Member> = members.into_iter().collect();
        if members.is_empty() {
            return Err(RouteSetError::Empty);
        }
        if members.len() > MAX_MEMBERS {
            return Err(RouteSetError::TooMany(members.len()));
        }
        for (index, member) in members.iter().enumerate() {
            if members[..index].iter().any(|m| m.route() == member.route()) {
                return Err(RouteSetError::Duplicate(member.route().clone()));
            }
        }
        let mut layer = RouteSetLayer {
            members: members.into(),
            rewrite: Arc::new(Unchanged),
            health: None,
            avoid: Duration::from_secs(1),
            decay: Duration::from_secs(10),
            seed: None,
            max_wait: DEFAULT_MAX_WAIT,
            set: Arc::new(Set::new(&[], None, &default_settings())),
        };
        layer.rebuild();
        Ok(layer)
    }
}

fn default_settings() -> Settings {
    Settings {
        avoid: Duration::from_secs(1),
        decay: Duration::from_secs(10),
        seed: None,
        max_wait: DEFAULT_MAX_WAIT,
    }
}

impl<R> RouteSetLayer<R> {
    fn rebuild(&mut self) {
        let settings = Settings {
            avoid: self.avoid,
            decay: self.decay,
            seed: self.seed,
            max_wait: self.max_wait,
        };
        self.set = Arc::new(Set::new(&self.members, self.health.as_deref(), &settings));
    }

    fn with(mut self, change: impl FnOnce(&mut Self)) -> Self {
        change(&mut self);
        self.rebuild();
        self
    }

    /// Reads each member's health before each choice: `health` is called
    /// once per member, with its route, and returns what says whether the
    /// route is refused now (cooling down, or its breaker open) and for how
    /// long. A refused member is never chosen. With a
    /// seawall-breaker `BreakerHandle` below the set:
    /// `.health(move |route| { let probe = handle.probe(route); move || probe.blocked() })`
    /// (seawall's `Stack::build_with_route_set` does it).
    ///
    /// Without it the set knows only what its own calls return: a member
    /// that failed is demoted for a while, not excluded.
    pub fn health<F, P>(self, health: F) -> Self
    where
        F: Fn(&RouteId) -> P + Send + Sync + 'static,
        P: Fn() -> Blocked + Send + Sync + 'static,
    {
        self.with(|layer| {
            layer.health = Some(Arc::new(move |route: &RouteId| -> Probe {
                Box::new(health(route))
            }));
        })
    }

    /// Changes each member's copy of the request after the member's own
    /// origin and headers: `rewrite(route, request)`, e.g. to put the
    /// member's deployment in the path. A model named in the body needs a
    /// layer inside the set that maps the body.
    pub fn rewrite<R2>(self, rewrite: R2) -> RouteSetLayer<R2> {
        RouteSetLayer {
            members: self.members,
            rewrite: Arc::new(rewrite),
            health: self.health,
            avoid: self.avoid,
            decay: self.decay,
            seed: self.seed,
            max_wait: self.max_wait,
            set: self.set,
        }
    }

    /// How long a member that failed in a way that condemns only it
    /// (a route-scoped failure before content) is chosen only when no
    /// other member can be (default 1 s). What the member said of its own
    /// future — a quota wall, a rate limit's hint, rejected credentials —
    /// is the breaker's to remember ([`health`](Self::health)).
    pub fn demote_after_failure(self, demote: Duration) -> Self {
        self.with(|layer| layer.avoid = demote)
    }

    /// How fast a measured latency fades: after `half_life` it counts
    /// half, after twice that a third (default 10 s), so a member found
    /// slow is tried again once in a while.
    pub fn latency_half_life(self, half_life: Duration) -> Self {
        self.with(|layer| layer.decay = half_life)
    }

    /// How long a call that finds every member cooling down after a rate
    /// limit waits, at most, for the first back (default
    /// [`DEFAULT_MAX_WAIT`](crate::DEFAULT_MAX_WAIT), 60 s, as a fallback
    /// chain's and the retry ladder's `max_retry_after`); never past the request's
    /// [`Deadline`](seawall_core::Deadline), and leaving a second before
    /// it for the call. The wait is the call's, inside the set: no attempt
    /// of the ladder above is spent on the refusal, no retry budget, and
    /// the receipt lists only the call made after it. A longer wait, a
    /// member walled or with rejected keys, an open breaker: the call
    /// fails at once with the set's refusal of the member back first
    /// (`route_cooling_down` naming what cooled it, or `circuit_open`),
    /// carrying the time left. `Duration::ZERO` never waits.
    pub fn max_wait(self, max: Duration) -> Self {
        self.with(|layer| layer.max_wait = max)
    }

    /// Draws the choices from a generator seeded with `seed`, for
    /// reproducible runs. Without it the thread's generator is used.
    pub fn seed(self, seed: u64) -> Self {
        self.with(|layer| layer.seed = Some(seed))
    }

    /// The members' routes, in order.
    pub fn routes(&self) -> impl Iterator<Item = &RouteId> {
        self.members.iter().map(Member::route)
    }

    /// A handle to read the members' state.
    pub fn handle(&self) -> RouteSetHandle {
        RouteSetHandle {
            set: Arc::clone(&self.set),
        }
    }
}

impl<R> Clone for RouteSetLayer<R> {
    fn clone(&self) -> Self {
        RouteSetLayer {
            members: Arc::clone(&self.members),
            rewrite: Arc::clone(&self.rewrite),
            health: self.health.clone(),
            avoid: self.avoid,
            decay: self.decay,
            seed: self.seed,
            max_wait: self.max_wait,
            set: Arc::clone(&self.set),
        }
    }
}

impl<R> std::fmt::Debug for RouteSetLayer<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteSetLayer")
            .field("members", &self.members)
            .field("health", &self.health.is_some())
            .field("demote_after_failure", &self.avoid)
            .field("latency_half_life", &self.decay)
            .field("seed", &self.seed)
            .field("max_wait", &self.max_wait)
            .finish_non_exhaustive()
    }
}

impl<S, R> Layer<S> for RouteSetLayer<R> {
    type Service = RouteSet<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        RouteSet::new(inner, Arc::clone(&self.set), Arc::clone(&self.rewrite))
    }
}

/// Reads a route set's members: in-flight calls, latency, choices, and
/// why the breaker refuses one. Obtained from
/// [`RouteSetLayer::handle`]; cheap to clone. Resetting a member's
/// cooldown is the breaker handle's job (one registry of route health).
#[derive(Clone)]
pub struct RouteSetHandle {
    set: Arc<Set>,
}

impl RouteSetHandle {
    pub(crate) fn of(set: Arc<Set>) -> Self {
        RouteSetHandle { set }
    }

    /// Every member, in the set's order.
    pub fn members(&self) -> Vec<MemberState> {
        self.set.snapshot()
    }

    /// Chooses a member as the next call would, without calling it (it
    /// counts as a choice): the member's route, or `None` when no member
    /// can take a call now.
    pub fn choose(&self) -> Option<RouteId> {
        let index = self.set.choose().ok()?;
        Some(self.set.slots[index].member.route().clone())
    }
}

impl std::fmt::Debug for RouteSetHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteSetHandle")
            .field("members", &self.members())
            .finish()
    }
}
