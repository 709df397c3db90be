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
    pub(crate) fallback: F,
    pub(crate) settings: Settings<R>,
}

impl<S: Clone, F: Clone, R> Clone for Fallback<S, F, R> {
    fn clone(&self) -> Self {
        Fallback {
            primary: self.primary.clone(),
            fallback: self.fallback.clone(),
            settings: self.settings.clone(),
        }
    }
}

impl<S: std::fmt::Debug, F: std::fmt::Debug, R> std::fmt::Debug for Fallback<S, F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallback")
            .field("primary", &self.primary)
            .field("fallback", &self.fallback)
            .field("settings", &self.settings)
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
        let primary_route = RouteId::of_request(&request);
        if self.settings.route.as_ref() == Some(&primary_route) {
            return ResponseFuture::refused(SameRouteFallback::new(primary_route, None).into());
        }
        let request =
            request.map(|body| ReplayBody::recorded(body, self.settings.max_replay_bytes));
        // The primary sends the original handle; the kept copy starts from
        // the beginning of the recording, for the fallback.
        let kept = request
            .body()
            .replay()
            .map(|body| clone_head(&request, body));
        let plan = Plan {
            fallback: self.fallback.clone(),
            settings: self.settings.clone(),
            request: kept,
        };
        ResponseFuture::primary(self.primary.call(request), primary_route, plan)
    }
}
