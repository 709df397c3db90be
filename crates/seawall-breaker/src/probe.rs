//! One route's health, read without a lookup: for a layer that chooses
//! among routes before each call (a route set).

use std::sync::Arc;
use std::time::Duration;

use seawall_core::{Code, RouteId};

use crate::handle::BreakerHandle;
use crate::state::{BreakerState, RouteBreaker};

/// A cheap, shared view of one route's breaker: whether a call to the
/// route would be refused now, read from its atomics (no lock, no map, no
/// allocation). Obtained from [`BreakerHandle::probe`]; cheap to clone.
#[derive(Clone)]
pub struct RouteProbe {
    breaker: Arc<RouteBreaker>,
}

impl RouteProbe {
    /// The route this probe reads.
    pub fn route(&self) -> &RouteId {
        &self.breaker.route
    }

    /// Why a call to the route would be refused now, and for how long
    /// (`None`: until reset by the handle), or `None` when it would be let
    /// through:
    ///
    /// - cooling down: the code that cooled it (`quota_exhausted`,
    ///   `rate_limited`, `auth`) and the time left; after the cooldown's
    ///   end, while the one call probing the route is out, the same code
    ///   and a short time to look again;
    /// - open before its probe time: `circuit_open` and the time to the
    ///   probe; isolated by the handle: `circuit_open`, until reset;
    /// - half-open with every trial out: `circuit_open` and a short time
    ///   to look again (a slot frees when a trial's answer begins), as the
    ///   call itself would be refused.
    ///
    /// A breaker open past its probe time, or half-open with a trial's
    /// slot free, lets a call through (it is a trial); so does a cooldown
    /// past its end with no probe out (the call is its probe).
    pub fn blocked(&self) -> Option<(Code, Option<Duration>)> {
        if let Some(cooling) = self.breaker.cooling() {
            return Some(cooling);
        }
        match self.breaker.state() {
            BreakerState::Isolated => Some((Code::CircuitOpen, None)),
            BreakerState::Open => self
                .breaker
                .open_for()
                .filter(|left| !left.is_zero())
                .map(|left| (Code::CircuitOpen, Some(left))),
            BreakerState::HalfOpen if self.breaker.trials_full() => {
                Some((Code::CircuitOpen, Some(crate::service::TRIALS_RECHECK)))
            }
            BreakerState::Closed | BreakerState::HalfOpen => None,
        }
    }

    /// The route's breaker state.
    pub fn state(&self) -> BreakerState {
        self.breaker.state()
    }
}

impl std::fmt::Debug for RouteProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteProbe")
            .field("route", &self.breaker.route)
            .field("blocked", &self.blocked())
            .finish()
    }
}

impl BreakerHandle {
    /// A probe of `route`'s health, for a layer that chooses among routes
    /// before each call. Creates the route's breaker when it has none yet
    /// (also past the route limit), so the probe and the calls share it.
    pub fn probe(&self, route: &RouteId) -> RouteProbe {
        let breaker = self
            .shared
            // Whose credentials its calls carry, its first call says.
            .breaker(route.as_str(), true, || None)
            .expect("a forced breaker always exists");
        RouteProbe { breaker }
    }
}
