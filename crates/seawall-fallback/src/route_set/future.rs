//! The route set's response future and body: they keep the chosen member's
//! in-flight count until the answer is read, measure its latency (a call
//! given up on before its answer included), and mark it when it fails in
//! a way that condemns only it; a call that found every member cooling
//! down waits in it for the first back.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::{AnotherRoute, BoxError, Code, Deadline, Failure};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::route_set::choose::{Set, time_for_a_call};
use crate::route_set::service::{MemberRewrite, send};

/// A wait too long for an `Instant` to hold waits this long instead: about
/// thirty years, as tokio's own sleep takes for one.
const NO_END: Duration = Duration::from_secs(86_400 * 365 * 30);

/// One call's claim on its member: counted in flight from the call until
/// the response body ends or is dropped.
pub(crate) struct InFlight {
    set: Arc<Set>,
    index: usize,
    /// When the call was sent, until its outcome: a call dropped before
    /// it (its caller gave up: a timeout, a client gone) is measured as it
    /// is dropped, so a member that hangs stops drawing calls.
    unanswered: Option<Instant>,
    /// The call's future was polled: only then did the member have the
    /// call (a client's future sends nothing until it is polled).
    polled: bool,
}

impl InFlight {
    pub(crate) fn enter(set: Arc<Set>, index: usize) -> Self {
        set.enter(index);
        InFlight {
            set,
            index,
            unanswered: Some(Instant::now()),
            polled: false,
        }
    }

    /// The call's outcome came: how long it took. Its body, read or
    /// dropped after, is not measured again.
    fn answered(&mut self) -> Duration {
        self.unanswered
            .take()
            .map_or(Duration::ZERO, |started| started.elapsed())
    }

    /// The member answered.
    fn succeeded(&mut self) {
        let took = self.answered();
        self.set.measured(self.index, took);
    }

    /// The member's failure, named after the member, as the ladder above
    /// should see it: with [`AnotherRoute`] when it condemns only the
    /// member and another member can take the next attempt.
    fn failed(mut self, error: BoxError) -> BoxError {
        let took = self.answered();
        // A call refused here never reached the member: its few
        // microseconds are no latency of the member's, and would make an
        // unmeasured member look fast and draw more calls into refusals.
        if !Failure::find(&*error).is_some_and(Failure::is_refused_here) {
            self.set.measured(self.index, took);
        }
        let route = self.set.slots[self.index].member.route();
        let failure = match Failure::extract(error) {
            Ok(failure) => failure.with_route(route.clone()),
            // Not classified: nobody said another member would do better.
            Err(other) => return other,
        };
        if !failure.moves_route() {
            return Box::new(failure);
        }
        let another = self.set.failed_with(self.index, &failure);
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
        // Given up on before its outcome: the time it was kept waiting is
        // the member's latency as its caller saw it (as tower's `PeakEwma`
        // counts a cancelled call). Peak-sensitive, a long wait counts at
        // once. A cancel is no local refusal: the member had the call —
        // unless its future was never polled (dropped unpolled in a
        // `select!` whose other branch was ready, a task aborted): nothing
        // was sent, and its microsecond would make an unmeasured member
        // the fastest, or cut a measured one's estimate by a quarter.
        if let Some(started) = self.unanswered.take()
            && self.polled
        {
            self.set.measured(self.index, started.elapsed());
        }
        self.set.leave(self.index);
    }
}

pin_project! {
    /// The response future of [`RouteSet`](crate::RouteSet): the chosen
    /// member's call; a refusal when no member can take it; or, when every
    /// member is cooling down and the first back is worth waiting for, the
    /// wait for it and then the call.
    pub struct ResponseFuture<S, B, R>
    where
        S: Service<http::Request<B>>,
    {
        #[pin]
        state: State<S::Future>,
        // Boxed: only a call that found every member cooling pays for it.
        wait: Option<Pin<Box<Wait<S, B, R>>>>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Called {
            #[pin]
            future: F,
            in_flight: Option<InFlight>,
        },
        Refused {
            failure: Option<Failure>,
        },
        // Every member cooling: the wait (in `wait`), then the call.
        Waiting,
    }
}

impl<S, B, R> ResponseFuture<S, B, R>
where
    S: Service<http::Request<B>>,
{
    pub(crate) fn called(future: S::Future, in_flight: InFlight) -> Self {
        ResponseFuture {
            state: State::Called {
                future,
                in_flight: Some(in_flight),
            },
            wait: None,
        }
    }

    pub(crate) fn refused(failure: Failure) -> Self {
        ResponseFuture {
            state: State::Refused {
                failure: Some(failure),
            },
            wait: None,
        }
    }

    /// Waits `wait` for a member to come back, then calls `inner` (a clone
    /// of the set's service, made ready after the wait) with `request`.
    pub(crate) fn waiting(
        wait: Duration,
        inner: S,
        request: http::Request<B>,
        set: Arc<Set>,
        rewrite: Arc<R>,
    ) -> Self {
        ResponseFuture {
            state: State::Waiting,
            wait: Some(Box::pin(Wait {
                sleep: tokio::time::sleep(wait),
                woke: false,
                held: false,
                waits: 1,
                inner,
                request: Some(request),
                set,
                rewrite,
            })),
        }
    }
}

impl<S, B, R> std::fmt::Debug for ResponseFuture<S, B, R>
where
    S: Service<http::Request<B>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (state, route) = match &self.state {
            State::Called { in_flight, .. } => (
                "called",
                in_flight
                    .as_ref()
                    .map(|c| c.set.slots[c.index].member.route().clone()),
            ),
            State::Refused { .. } => ("refused", None),
            State::Waiting => ("waiting", None),
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("route", &route)
            .finish()
    }
}

impl<S, B, R, RB> Future for ResponseFuture<S, B, R>
where
    S: Service<http::Request<B>, Response = http::Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    R: MemberRewrite<B>,
{
    type Output = Result<http::Response<RouteSetBody<RB>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
                StateProj::Refused { failure } => {
                    return Poll::Ready(Err(Box::new(
                        failure.take().expect("a refused future is polled once"),
                    )));
                }
                StateProj::Waiting => {
                    let wait = this.wait.as_mut().expect("a waiting future has its wait");
                    let sent = ready!(wait.as_mut().poll_send(cx));
                    *this.wait = None;
                    let (future, in_flight) = sent?;
                    this.state.set(State::Called {
                        future,
                        in_flight: Some(in_flight),
                    });
                }
                StateProj::Called { future, in_flight } => {
                    if let Some(in_flight) = in_flight.as_mut() {
                        in_flight.polled = true;
                    }
                    let result = ready!(future.poll(cx));
                    let mut in_flight = in_flight.take().expect("a called future is polled once");
                    return match result {
                        Ok(mut response) => {
                            in_flight.succeeded();
                            let route = in_flight.set.slots[in_flight.index].member.route();
                            // The member that answered, for the receipt.
                            response.extensions_mut().insert(route.clone());
                            Poll::Ready(Ok(response.map(|body| RouteSetBody {
                                inner: body,
                                in_flight: Some(in_flight),
                            })))
                        }
                        Err(error) => Poll::Ready(Err(in_flight.failed(error.into()))),
                    };
                }
            }
        }
    }
}

pin_project! {
    /// A call that found every member refused, waiting for the first back
    /// (see `Set::wait_for`). The wait is the call's own: the ladder above
    /// sees one attempt, the call made after it, and no refusal spends its
    /// attempts or its retry budget.
    struct Wait<S, B, R> {
        #[pin]
        sleep: Sleep,
        // The sleep ended; the service's readiness is awaited.
        woke: bool,
        // The service kept the call waiting for its readiness after the
        // sleep: the time the wait left for the call may be gone.
        held: bool,
        // Waits made, this one included: at most one per member.
        waits: usize,
        inner: S,
        request: Option<http::Request<B>>,
        set: Arc<Set>,
        rewrite: Arc<R>,
    }
}

impl<S, B, R> Wait<S, B, R>
where
    S: Service<http::Request<B>> + Clone,
    S::Error: Into<BoxError>,
    R: MemberRewrite<B>,
{
    /// Sleeps, waits for the service to be ready, and calls the member
    /// chosen then; waits again if every member is still refused and that
    /// fits, else fails with the set's refusal.
    fn poll_send(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(S::Future, InFlight), BoxError>> {
        let mut this = self.project();
        loop {
            if !*this.woke {
                ready!(this.sleep.as_mut().poll(cx));
                *this.woke = true;
                *this.held = false;
            }
            match this.inner.poll_ready(cx) {
                Poll::Ready(ready) => ready.map_err(Into::into)?,
                Poll::Pending => {
                    *this.held = true;
                    return Poll::Pending;
                }
            }
            let request = this.request.take().expect("a wait sends once");
            // A call sent with too little time left cannot finish and may
            // be billed: the deadline has taken the call.
            if *this.held && !time_for_a_call(Deadline::of(&request)) {
                return Poll::Ready(Err(Box::new(
                    Failure::new(Code::DeadlineExceeded).with_message(
                        "the service was not ready for the call in time after the wait for a member",
                    ),
                )));
            }
            let earliest = match this.set.choose() {
                Ok(index) => {
                    let rewrite: &R = this.rewrite;
                    return Poll::Ready(Ok(send(this.inner, this.set, rewrite, index, request)));
                }
                Err(earliest) => earliest,
            };
            // Cooled again meanwhile (another call met a fresh limit).
            let again = (*this.waits < this.set.slots.len())
                .then(|| this.set.wait_for(&earliest, Deadline::of(&request)))
                .flatten();
            let Some(wait) = again else {
                return Poll::Ready(Err(Box::new(this.set.refusal(earliest))));
            };
            *this.waits += 1;
            *this.request = Some(request);
            *this.woke = false;
            // Ready, but not called: the readiness is given back for the
            // wait (see `RouteSet::call`).
            *this.inner = this.inner.clone();
            // As `tokio::time::sleep` does for the first wait: a wait past
            // what an `Instant` holds (no deadline, `max_wait` unbounded, a
            // member that names no end) is a sleep with no end, not a panic.
            let now = Instant::now();
            let at = now.checked_add(wait).unwrap_or_else(|| now + NO_END);
            this.sleep.as_mut().reset(at);
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
