use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use http_body::Body;
use seawall_core::replay::{ReplayBody, clone_head};
use seawall_core::{BoxError, RouteId};
use tower_service::Service;

use crate::error::SameRouteFallback;
use crate::future::{Plan, ResponseFuture};
use crate::layer::Settings;
use crate::rewrite::Rewrite;

/// The response header that names the route that served the answer, when
/// [`FallbackLayer::served_by_header`](crate::FallbackLayer::served_by_header)
/// is on.
pub const SERVED_BY_HEADER: http::HeaderName = http::HeaderName::from_static("x-seawall-served-by");

/// Which route produced a response: in the extensions of every response of
/// a [`Fallback`] service.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServedBy {
    /// The route that answered.
    pub route: RouteId,
    /// True when it was the fallback.
    pub fallback: bool,
}

/// The service made by [`FallbackLayer`](crate::FallbackLayer).
pub struct Fallback<S, F, R> {
    pub(crate) primary: S,
    pub(crate) shared: Arc<Shared<F, R>>,
}

/// What every clone of a [`Fallback`] and every call shares: a call keeps
/// one reference to it, and clones the fallback service only when it fires.
pub(crate) struct Shared<F, R> {
    pub(crate) fallback: F,
    pub(crate) settings: Settings<R>,
    /// The primary route of the first request, so that later requests to
    /// the same route share its name instead of allocating their own.
    // TODO(core): seawall-retry keeps the same cache; a `RouteId` cache in
    // seawall-core would serve both.
    primary_route: OnceLock<RouteId>,
}

impl<F, R> Shared<F, R> {
    pub(crate) fn new(fallback: F, settings: Settings<R>) -> Self {
        Shared {
            fallback,
            settings,
            primary_route: OnceLock::new(),
        }
    }

    /// The route a request goes to: [`RouteId::of_request`], without its
    /// allocation when the route is the one this service called first.
    fn route_of<B>(&self, request: &http::Request<B>) -> RouteId {
        let name = RouteId::name_of_request(request);
        match self.primary_route.get() {
            Some(known) if known.as_str() == name => known.clone(),
            Some(_) => RouteId::of_request(request),
            None => self
                .primary_route
                .get_or_init(|| RouteId::of_request(request))
                .clone(),
        }
    }
}

impl<S: Clone, F, R> Clone for Fallback<S, F, R> {
    fn clone(&self) -> Self {
        Fallback {
            primary: self.primary.clone(),
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<S: std::fmt::Debug, F: std::fmt::Debug, R> std::fmt::Debug for Fallback<S, F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("primary", &self.primary)
            .field("fallback", &self.shared.fallback)
            .field("settings", &self.shared.settings)
            .finish()
    }
}

impl<S, F, R, B, RB> Service<http::Request<B>> for Fallback<S, F, R>
where
    S: Service<http::Request<ReplayBody<B>>, Response = http::Response<RB>>,
    S::Error: Into<BoxError>,
    F: Service<http::Request<ReplayBody<B>>, Response = http::Response<RB>> + Clone,
    F::Error: Into<BoxError>,
    R: Rewrite<B>,
    B: Body,
{
    type Response = http::Response<RB>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, F, R, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.primary.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let settings = &self.shared.settings;
        let primary_route = self.shared.route_of(&request);
        if settings.route.as_ref() == Some(&primary_route) {
            return ResponseFuture::refused(SameRouteFallback::new(primary_route, None).into());
        }
        let request = request.map(|body| ReplayBody::recorded(body, settings.max_replay_bytes));
        // The primary sends the original handle; the kept copy starts from
        // the beginning of the recording, for the fallback.
        let kept = request
            .body()
            .replay()
            .map(|body| clone_head(&request, body));
        let plan = Plan {
            shared: Arc::clone(&self.shared),
            request: kept,
        };
        ResponseFuture::primary(self.primary.call(request), primary_route, plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::FallbackLayer;

    fn to(uri: &str) -> http::Request<()> {
        http::Request::get(uri).body(()).unwrap()
    }

    #[test]
    fn the_route_cache_never_names_another_route() {
        let shared = Shared::new((), FallbackLayer::new(()).settings);
        let first = shared.route_of(&to("https://a.example/v1"));
        assert_eq!(first.as_str(), "a.example");
        let again = shared.route_of(&to("https://a.example/v2"));
        assert_eq!(again, first);
        assert_eq!(
            shared.route_of(&to("https://b.example/v1")).as_str(),
            "b.example"
        );
        let mut named = to("https://a.example/v1");
        named.extensions_mut().insert(RouteId::new("primary"));
        assert_eq!(shared.route_of(&named).as_str(), "primary");
    }
}
