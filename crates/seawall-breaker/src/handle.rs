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
    /// until it ends: a week or more, no known return. A model cooling on
    /// its own leaves the route's cooldown `None`: see
    /// [`model_cooldown`](Self::model_cooldown) and
    /// [`models_cooling`](Self::models_cooling).
    pub fn cooldown(&self, route: &RouteId) -> Option<(Code, Option<Duration>)> {
        self.shared.existing(route.as_str())?.cooling()
    }

    /// The cooldown a call for `model` on a route meets, while it would be
    /// refused for one: the model's own (a limit the provider keeps per
    /// model cooled it alone), or the route's where that ends later (the
    /// one the refusal names, as [`cooldown`](Self::cooldown) gives it).
    /// `None` while no cooldown holds `model` back; the route's circuit
    /// may refuse the call all the same (open after failures, or
    /// isolated), which this does not read. A model's own cooldown has no
    /// probe: its time left runs to its end.
    ///
    /// ```
    /// use seawall_breaker::BreakerLayer;
    /// use seawall_core::RouteId;
    ///
    /// let handle = BreakerLayer::new().handle();
    /// let route = RouteId::new("api.openai.com");
    /// assert_eq!(handle.model_cooldown(&route, "gpt-4o"), None);
    /// ```
    pub fn model_cooldown(&self, route: &RouteId, model: &str) -> Option<(Code, Option<Duration>)> {
        let breaker = self.shared.existing(route.as_str())?;
        match breaker.model_refusal(model) {
            // A cooldown's refusal names what cooled it.
            Some(refusal) => refusal
                .cooled_by()
                .map(|code| (code, refusal.retry_after())),
            None => breaker.cooling(),
        }
    }

    /// The models cooling on their own on a route (each a limit the
    /// provider keeps per model), with what cooled each and its time left
    /// (`None`: until [`reset`](Self::reset)), sorted by model. The
    /// route's own cooldown is [`cooldown`](Self::cooldown)'s.
    pub fn models_cooling(&self, route: &RouteId) -> Vec<(String, Code, Option<Duration>)> {
        let Some(breaker) = self.shared.existing(route.as_str()) else {
            return Vec::new();
        };
        let mut models: Vec<_> = breaker
            .models_cooling_now()
            .into_iter()
            .map(|(model, code, left)| (model.to_string(), code, left))
            .collect();
        models.sort_by(|a, b| a.0.cmp(&b.0));
        models
    }

    /// Forces a route closed with a clean window, and ends its cooldown
    /// and its models' own.
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
