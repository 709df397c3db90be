//! The route set's service: one member per call.

use std::sync::Arc;
use std::task::{Context, Poll};

use seawall_core::{BoxError, Deadline, RequestFacts, RouteId};
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
    S: Service<http::Request<B>, Response = http::Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    R: MemberRewrite<B>,
{
    type Response = http::Response<crate::RouteSetBody<RB>>;
    type Error = BoxError;
    type Future = ResponseFuture<S, B, R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let earliest = match self.set.choose() {
            Ok(index) => {
                let (future, in_flight) =
                    send(&mut self.inner, &self.set, &*self.rewrite, index, request);
                return ResponseFuture::called(future, in_flight);
            }
            Err(earliest) => earliest,
        };
        // A ladder above whose caller gives up from here until a member
        // is sent the call has no attempt of it to count.
        if let Some(facts) = request.extensions().get::<RequestFacts>() {
            facts.call_held();
        }
        // Every member refused: nothing is sent now. What `poll_ready`
        // reserved below (a `Buffer`'s slot, a `ConcurrencyLimit`'s permit)
        // is given back by dropping the instance that holds it: kept, the
        // wait below would hold it while it waits for one — with a limit
        // of one, for the permit it holds itself.
        let fresh = self.inner.clone();
        drop(std::mem::replace(&mut self.inner, fresh));
        // Wait for the first back when it is worth it and fits, on a clone
        // of the service (made ready after the wait); else fail now.
        match self.set.wait_for(&earliest, Deadline::of(&request)) {
            Some(wait) => ResponseFuture::waiting(
                wait,
                self.inner.clone(),
                request,
                Arc::clone(&self.set),
                Arc::clone(&self.rewrite),
            ),
            None => ResponseFuture::refused(self.set.refusal(earliest)),
        }
    }
}

/// Points `request` at member `index` and calls `inner` with it: the call's
/// future, and its claim on the member.
pub(crate) fn send<S, R, B>(
    inner: &mut S,
    set: &Arc<Set>,
    rewrite: &R,
    index: usize,
    mut request: http::Request<B>,
) -> (S::Future, InFlight)
where
    S: Service<http::Request<B>>,
    R: MemberRewrite<B>,
{
    let member = &set.slots[index].member;
    member.apply(&mut request);
    rewrite.rewrite(member.route(), &mut request);
    request.extensions_mut().insert(member.route().clone());
    tracing::trace!(
        target: "seawall::route_set",
        route = member.route().as_str(),
        "member chosen"
    );
    // Said before the call, so a layer below that chooses again speaks
    // after it: a ladder above whose caller gives up counts the cancelled
    // attempt under this member.
    if let Some(facts) = request.extensions().get::<RequestFacts>() {
        facts.call_sent(member.route());
    }
    let in_flight = InFlight::enter(Arc::clone(set), index);
    (inner.call(request), in_flight)
}
