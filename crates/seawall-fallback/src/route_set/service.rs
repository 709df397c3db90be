//! The route set's service: one member per call.

use std::sync::Arc;
use std::task::{Context, Poll};

use seawall_core::{BoxError, RouteId};
use tower_service::Service;

use crate::RouteSetHandle;
use crate::rewrite::Unchanged;
use crate::route_set::choose::Set;
use crate::route_set::future::{InFlight, ResponseFuture};

/// Changes a member's copy of the request, after the member's own origin
/// and headers: see [`RouteSetLayer::rewrite`](crate::RouteSetLayer::rewrite).
pub trait MemberRewrite<B> {
    /// Rewrites `request` for the member named `route`.
    fn rewrite(&self, route: &RouteId, request: &mut http::Request<B>);
}

impl<B> MemberRewrite<B> for Unchanged {
    fn rewrite(&self, _: &RouteId, _: &mut http::Request<B>) {}
}

impl<B, F> MemberRewrite<B> for F
where
    F: Fn(&RouteId, &mut http::Request<B>),
{
    fn rewrite(&self, route: &RouteId, request: &mut http::Request<B>) {
        self(route, request)
    }
}

/// The service made by [`RouteSetLayer`](crate::RouteSetLayer): each call
/// goes to one member, chosen then.
pub struct RouteSet<S, R = Unchanged> {
    inner: S,
    set: Arc<Set>,
    rewrite: Arc<R>,
}

impl<S, R> RouteSet<S, R> {
    pub(crate) fn new(inner: S, set: Arc<Set>, rewrite: Arc<R>) -> Self {
        RouteSet {
            inner,
            set,
            rewrite,
        }
    }

    seawall_core::define_inner_service_accessors!();

    /// A handle to read the state of the set this service chooses from:
    /// the live one, whatever was configured after a handle was taken from
    /// the layer (seawall's `Stack::build_with_route_set` configures the
    /// set it is given anew).
    pub fn handle(&self) -> RouteSetHandle {
        RouteSetHandle::of(Arc::clone(&self.set))
    }
}

impl<S: Clone, R> Clone for RouteSet<S, R> {
    fn clone(&self) -> Self {
        RouteSet {
            inner: self.inner.clone(),
            set: Arc::clone(&self.set),
            rewrite: Arc::clone(&self.rewrite),
        }
    }
}

impl<S: std::fmt::Debug, R> std::fmt::Debug for RouteSet<S, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let routes: Vec<&RouteId> = self.set.slots.iter().map(|s| s.member.route()).collect();
        f.debug_struct("RouteSet")
            .field("inner", &self.inner)
            .field("members", &routes)
            .finish()
    }
}

impl<S, R, B, RB> Service<http::Request<B>> for RouteSet<S, R>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    S::Error: Into<BoxError>,
    R: MemberRewrite<B>,
{
    type Response = http::Response<crate::RouteSetBody<RB>>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let index = match self.set.choose() {
            Ok(index) => index,
            Err(earliest) => return ResponseFuture::refused(self.set.refusal(earliest)),
        };
        let member = &self.set.slots[index].member;
        member.apply(&mut request);
        self.rewrite.rewrite(member.route(), &mut request);
        request.extensions_mut().insert(member.route().clone());
        tracing::trace!(
            target: "seawall::route_set",
            route = member.route().as_str(),
            "member chosen"
        );
        let in_flight = InFlight::enter(Arc::clone(&self.set), index);
        ResponseFuture::called(self.inner.call(request), in_flight)
    }
}
