use std::sync::Arc;
use std::time::Duration;

use seawall_core::RouteId;
use seawall_core::replay::DEFAULT_MAX_REPLAY_BYTES;
use tower_layer::Layer;

use crate::rewrite::Unchanged;
use crate::service::{Fallback, Shared};

/// Fails over to `fallback` once when the primary's failure allows it. See
/// the [crate docs](crate).
pub struct FallbackLayer<F, R = Unchanged> {
    pub(crate) fallback: F,
    pub(crate) settings: Settings<R>,
}

impl<F: Clone, R> Clone for FallbackLayer<F, R> {
    fn clone(&self) -> Self {
        FallbackLayer {
            fallback: self.fallback.clone(),
            settings: self.settings.clone(),
        }
    }
}

impl<F, R> std::fmt::Debug for FallbackLayer<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackLayer")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Settings<R> {
    pub(crate) rewrite: Arc<R>,
    pub(crate) route: Option<RouteId>,
    pub(crate) min_remaining: Duration,
    pub(crate) max_replay_bytes: usize,
    pub(crate) served_by_header: bool,
}

impl<R> std::fmt::Debug for Settings<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("route", &self.route)
            .field("min_remaining", &self.min_remaining)
            .field("max_replay_bytes", &self.max_replay_bytes)
            .field("served_by_header", &self.served_by_header)
            .finish_non_exhaustive()
    }
}

impl<R> Clone for Settings<R> {
    fn clone(&self) -> Self {
        Settings {
            rewrite: Arc::clone(&self.rewrite),
            route: self.route.clone(),
            min_remaining: self.min_remaining,
            max_replay_bytes: self.max_replay_bytes,
            served_by_header: self.served_by_header,
        }
    }
}

impl<F> FallbackLayer<F> {
    /// Falls back to `fallback`, with the request unchanged, its route
    /// derived from the request, a minimum of 1 s left on the deadline, and
    /// request bodies recorded up to 1 MiB.
    pub fn new(fallback: F) -> Self {
        FallbackLayer {
            fallback,
            settings: Settings {
                rewrite: Arc::new(Unchanged),
                route: None,
                min_remaining: Duration::from_secs(1),
                max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
                served_by_header: false,
            },
        }
    }
}

impl<F, R> FallbackLayer<F, R> {
    /// Rewrites the fallback's copy of the request (see
    /// [`Rewrite`](crate::Rewrite)).
    pub fn rewrite<R2>(self, rewrite: R2) -> FallbackLayer<F, R2> {
        let Settings {
            route,
            min_remaining,
            max_replay_bytes,
            served_by_header,
            ..
        } = self.settings;
        FallbackLayer {
            fallback: self.fallback,
            settings: Settings {
                rewrite: Arc::new(rewrite),
                route,
                min_remaining,
                max_replay_bytes,
                served_by_header,
            },
        }
    }

    /// The fallback's route. It is put in the fallback request's extensions
    /// (so a breaker inside the fallback service tracks it), and a request
    /// whose own route is the same is refused with
    /// [`SameRouteFallback`](crate::SameRouteFallback) before any call.
    /// Without it, the route is derived from the rewritten request.
    pub fn route(mut self, route: RouteId) -> Self {
        self.settings.route = Some(route);
        self
    }

    /// Falls back only while at least this much is left of the request's
    /// [`Deadline`](seawall_core::Deadline) (default 1 s). A request without
    /// a deadline has no such limit.
    pub fn min_remaining(mut self, min: Duration) -> Self {
        self.settings.min_remaining = min;
        self
    }

    /// How much of the deadline must be left for the fallback to fire: what
    /// [`min_remaining`](Self::min_remaining) set. A ladder below can keep
    /// this much in reserve.
    pub fn required_remaining(&self) -> Duration {
        self.settings.min_remaining
    }

    /// The most request-body bytes recorded for the fallback (default
    /// 1 MiB). Past it the body is sent once and there is no fallback.
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
}

impl<S, F: Clone, R> Layer<S> for FallbackLayer<F, R> {
    type Service = Fallback<S, F, R>;

    fn layer(&self, primary: S) -> Self::Service {
        Fallback {
            primary,
            shared: Arc::new(Shared::new(self.fallback.clone(), self.settings.clone())),
        }
    }
}
