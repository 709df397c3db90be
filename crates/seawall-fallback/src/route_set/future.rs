//! The route set's response future and body: they keep the chosen member's
//! in-flight count until the answer is read, measure its latency, and mark
//! it when it fails in a way that condemns only it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::{AnotherRoute, BoxError, Failure};
use tokio::time::Instant;

use crate::route_set::choose::Set;

/// One call's claim on its member: counted in flight from the call until
/// the response body ends or is dropped.
pub(crate) struct InFlight {
    set: Arc<Set>,
    index: usize,
}

impl InFlight {
    pub(crate) fn enter(set: Arc<Set>, index: usize) -> Self {
        set.enter(index);
        InFlight { set, index }
    }

    /// The member's failure, named after the member, as the ladder above
    /// should see it: with [`AnotherRoute`] when it condemns only the
    /// member and another member can take the next attempt.
    fn failed(&self, error: BoxError) -> BoxError {
        let route = self.set.slots[self.index].member.route();
        let failure = match Failure::extract(error) {
            Ok(failure) => failure.with_route(route.clone()),
            // Not classified: nobody said another member would do better.
            Err(other) => return other,
        };
        if !failure.moves_route() {
            return Box::new(failure);
        }
        let another = self.set.failed(self.index);
        tracing::debug!(
            target: "seawall::route_set",
            route = route.as_str(),
            code = failure.code().as_str(),
            another,
            "member failed"
        );
        if another {
            Box::new(AnotherRoute::new(failure))
        } else {
            Box::new(failure)
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.set.leave(self.index);
    }
}

pin_project! {
    /// The response future of [`RouteSet`](crate::RouteSet).
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Called {
            #[pin]
            future: F,
            in_flight: Option<InFlight>,
            started: Instant,
        },
        Refused {
            failure: Option<Failure>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn called(future: F, in_flight: InFlight) -> Self {
        ResponseFuture {
            state: State::Called {
                future,
                in_flight: Some(in_flight),
                started: Instant::now(),
            },
        }
    }

    pub(crate) fn refused(failure: Failure) -> Self {
        ResponseFuture {
            state: State::Refused {
                failure: Some(failure),
            },
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (state, route) = match &self.state {
            State::Called { in_flight, .. } => (
                "called",
                in_flight
                    .as_ref()
                    .map(|c| c.set.slots[c.index].member.route().clone()),
            ),
            State::Refused { .. } => ("refused", None),
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("route", &route)
            .finish()
    }
}

impl<F, E, RB> Future for ResponseFuture<F>
where
    F: Future<Output = Result<http::Response<RB>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<http::Response<RouteSetBody<RB>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Refused { failure } => Poll::Ready(Err(Box::new(
                failure.take().expect("a refused future is polled once"),
            ))),
            StateProj::Called {
                future,
                in_flight,
                started,
            } => {
                let result = ready!(future.poll(cx));
                let in_flight = in_flight.take().expect("a called future is polled once");
                in_flight.set.measured(in_flight.index, started.elapsed());
                match result {
                    Ok(mut response) => {
                        let route = in_flight.set.slots[in_flight.index].member.route();
                        // The member that answered, for the receipt.
                        response.extensions_mut().insert(route.clone());
                        Poll::Ready(Ok(response.map(|body| RouteSetBody {
                            inner: body,
                            in_flight: Some(in_flight),
                        })))
                    }
                    Err(error) => Poll::Ready(Err(in_flight.failed(error.into()))),
                }
            }
        }
    }
}

pin_project! {
    /// The body of a route set's response: the answer, passed through as
    /// it is; the member counts it in flight until it ends or is dropped.
    pub struct RouteSetBody<B> {
        #[pin]
        inner: B,
        in_flight: Option<InFlight>,
    }
}

impl<B> RouteSetBody<B> {
    /// The answer's own body.
    pub fn into_inner(self) -> B {
        self.inner
    }
}

impl<B: std::fmt::Debug> std::fmt::Debug for RouteSetBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteSetBody")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<B: Body> Body for RouteSetBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if !matches!(frame, Some(Ok(_))) {
            // The end, or an error: no longer in flight.
            this.in_flight.take();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
