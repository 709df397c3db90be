use std::sync::Arc;

use std::time::Duration;

use seawall_core::{Code, RouteId};

use crate::shared::Shared;
use crate::state::BreakerState;

/// Manual control of a layer's breakers: read a route's state, force it
/// open (isolate) or closed (reset).
///
/// Obtained from [`BreakerLayer::handle`](crate::BreakerLayer::handle);
/// cheap to clone.
#[derive(Clone)]
pub struct BreakerHandle {
    pub(crate) shared: Arc<Shared>,
}

impl BreakerHandle {
    /// The state of a route's breaker; `Closed` for a route never called.
    pub fn state(&self, route: &RouteId) -> BreakerState {
        self.shared
            .existing(route.as_str())
            .map_or(BreakerState::Closed, |breaker| breaker.state())
    }

    /// Forces a route open: every call fails at once with `circuit_open`
    /// and no probe is sent until [`BreakerHandle::reset`]. Works for a
    /// route not called yet (and past the route limit).
    pub fn isolate(&self, route: &RouteId) {
        if let Some(breaker) = self.shared.breaker(route.as_str(), true, || None) {
            breaker.isolate();
        }
    }

    /// The failure that cooled a route down and the time left (`None`:
    /// until [`reset`](Self::reset)), while it is cooling down. After its
    /// end, while the one call probing the route is out, the time left is
    /// a short time to look again; `None` once the probe was answered, or
    /// while the next call would be the probe. A cooldown learnt from a
    /// hint at [`MAX_RETRY_HINT`](seawall_core::hint::MAX_RETRY_HINT)
    /// (every longer hint is clamped to it) reports exactly that much left
    /// until it ends: a week or more, no known return.
    pub fn cooldown(&self, route: &RouteId) -> Option<(Code, Option<Duration>)> {
        self.shared.existing(route.as_str())?.cooling()
    }

    /// Forces a route closed with a clean window, and ends its cooldown.
    pub fn reset(&self, route: &RouteId) {
        if let Some(breaker) = self.shared.existing(route.as_str()) {
            breaker.reset();
        }
    }

    /// Every route seen so far and its state.
    pub fn routes(&self) -> Vec<(RouteId, BreakerState)> {
        let mut routes: Vec<_> = self
            .shared
            .all()
            .iter()
            .map(|breaker| (breaker.route.clone(), breaker.state()))
            .collect();
        routes.sort_by(|a, b| a.0.cmp(&b.0));
        routes
    }
}

impl std::fmt::Debug for BreakerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerHandle")
            .field("routes", &self.routes())
            .finish()
    }
}
