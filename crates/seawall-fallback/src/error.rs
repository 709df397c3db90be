use seawall_core::{BoxError, RouteId};

/// The fallback's route is the primary's: failing over would only call the
/// same broken thing again, so the layer refuses instead.
///
/// Returned at call time, before the primary is called when the fallback's
/// route was set with [`FallbackLayer::route`](crate::FallbackLayer::route)
/// (the primary's route is only known per request), or when the fallback
/// would fire when the fallback's route is derived from the rewritten
/// request. In that second case the primary's error is its
/// [`source`](std::error::Error::source), so
/// [`Failure::find`](seawall_core::Failure::find) still finds the primary's
/// failure.
#[derive(Debug, thiserror::Error)]
#[error("fallback route {route} is the primary's route: a fallback must change route")]
pub struct SameRouteFallback {
    route: RouteId,
    #[source]
    primary: Option<BoxError>,
}

impl SameRouteFallback {
    pub(crate) fn new(route: RouteId, primary: Option<BoxError>) -> Self {
        SameRouteFallback { route, primary }
    }

    /// The stable code of this error: `"fallback_same_route"`.
    pub const fn code(&self) -> &'static str {
        "fallback_same_route"
    }

    /// The route both the primary and the fallback would use.
    pub fn route(&self) -> &RouteId {
        &self.route
    }
}
