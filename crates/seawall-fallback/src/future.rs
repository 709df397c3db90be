use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::header::HOST;
use pin_project_lite::pin_project;
use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::recording::{HeadCopy, ReplayBody};
use seawall_core::{
    Action, Attempt, AttemptSpans, BoxError, Code, Cooldown, Deadline, Failure, Finish, Receipt,
    RequestFacts, RouteId, StopReason, Usage,
};
use seawall_internal::{headers, millis};
use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::error::SameRouteFallback;
use crate::layer::{Cooling, FallbackRoute};
use crate::rewrite::Rewrite;
use crate::service::{SERVED_BY_HEADER, ServedBy, Shared};

type Req<B> = http::Request<ReplayBody<B>>;

/// The request's head as the primary got it, and a handle on its body.
pub(crate) type Kept<B> = HeadCopy<ReplayBody<B>>;

/// What a fallback needs, kept while the primary runs.
pub(crate) struct Plan<S, F, R, B> {
    /// The routes (a route's service is cloned only when it is called) and
    /// the settings.
    pub(crate) shared: Arc<Shared<S, F, R>>,
    /// The request's head and a handle on its recorded body; `None` when the
    /// body could not be recorded.
    pub(crate) request: Option<Kept<B>>,
    /// The primary's request asks for work the provider bills
    /// ([`billable`](seawall_core::billable)).
    pub(crate) bills: bool,
    /// A retry ladder above sent the request
    /// ([`OuterLadder`](seawall_core::recording::OuterLadder)): a call its
    /// caller dropped is the ladder's to count.
    pub(crate) ladder_above: bool,
}

impl<S, F, R, B> Plan<S, F, R, B> {
    /// The operation's request facts (the body's are shared by every
    /// route's request: the same recording fills them), read only when a
    /// call failed.
    fn facts(&self) -> Option<&RequestFacts> {
        self.request.as_ref().and_then(HeadCopy::facts)
    }
}

pin_project! {
    /// The response future of [`Fallback`](crate::Fallback): the primary's
    /// call, then the chain's routes one call each, in order, while the
    /// failure and the deadline allow.
    pub struct ResponseFuture<S, F, R, B>
    where
        S: Service<Req<B>>,
        F: Service<Req<B>>,
    {
        #[pin]
        state: State<
            S::Future,
            Pin<Box<Sending<S, Req<B>, S::Future>>>,
            Sending<F, Req<B>, F::Future>,
        >,
        primary_route: Option<RouteId>,
        plan: Option<Plan<S, F, R, B>>,
        walk: Option<Box<Walk>>,
        header: bool,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<PF, AF, FF> {
        Refused { error: Option<BoxError> },
        Primary { #[pin] future: PF },
        // The primary's readiness failed: its failure, for this call.
        Unready { error: Option<BoxError> },
        // The primary again, after waiting for it to come back.
        Again { future: AF },
        Route { #[pin] future: FF },
        Waiting { sleep: Pin<Box<Sleep>> },
    }
}

pin_project! {
    /// A move's call: the service's readiness, then the call. As tower's
    /// `Oneshot`, but it says when the call is made: a caller that gives
    /// up before then sent nothing, and no attempt of it is cancelled.
    #[project = SendingProj]
    enum Sending<Svc, Request, Fut> {
        Unready { service: Svc, request: Option<Request> },
        Called { #[pin] future: Fut },
    }
}

impl<Svc, T> Sending<Svc, http::Request<T>, Svc::Future>
where
    Svc: Service<http::Request<T>>,
{
    fn new(service: Svc, request: http::Request<T>) -> Self {
        Sending::Unready {
            service,
            request: Some(request),
        }
    }

    /// Waits for the service, calls it (then sets `sent`), and waits for
    /// the answer. `says`: the route to name as the one the call went to
    /// ([`RequestFacts::call_sent`]), to a ladder above or to this layer's
    /// own count of a cancel; said before the call so a layer below that
    /// chooses again (a route set) speaks after.
    fn poll_send(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        (sent, says): (&mut bool, Option<&RouteId>),
    ) -> Poll<Result<Svc::Response, Svc::Error>> {
        loop {
            match self.as_mut().project() {
                SendingProj::Unready { service, request } => {
                    ready!(service.poll_ready(cx))?;
                    let request = request.take().expect("a call is sent once");
                    if let Some(route) = says
                        && let Some(facts) = request.extensions().get::<RequestFacts>()
                    {
                        facts.call_sent(route);
                    }
                    let future = service.call(request);
                    *sent = true;
                    self.set(Sending::Called { future });
                }
                SendingProj::Called { future } => return future.poll(cx),
            }
        }
    }
}

/// Which service a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Primary,
    Route(usize),
}

/// When a cooling route comes back, and what cooled it.
#[derive(Debug, Clone, Copy)]
struct Back {
    code: Code,
    /// `None`: not before an operator resets it, or at no time known (a
    /// hint at the clamp).
    at: Option<Instant>,
}

impl Back {
    fn of((code, left): Cooling, now: Instant) -> Self {
        Back {
            code,
            // A wait past what the clock holds is no wait that ends; nor
            // is a hint at the clamp, "a week or more" (a breaker cooling
            // a route after a 30-day `Retry-After` says so for as long as
            // it cools it), as in `from_failure`.
            at: left
                .filter(|&left| left < MAX_RETRY_HINT)
                .and_then(|left| now.checked_add(left)),
        }
    }

    /// What a failure itself says of its route, without a registry. A
    /// local refusal (`route_cooling_down`) is read as what cooled its
    /// route (`cooled_by`), as a registry reports it: a quota wall behind
    /// it is no return to wait for, a rate limit is.
    fn from_failure(failure: &Failure, now: Instant) -> Option<Self> {
        let code = failure.cooled_by().unwrap_or(failure.code());
        match (code, failure.retry_after()) {
            (Code::Auth, _) => Some(Back {
                code: Code::Auth,
                at: None,
            }),
            (
                code @ (Code::RateLimited
                | Code::QuotaExhausted
                | Code::RouteCoolingDown
                | Code::CircuitOpen
                | Code::Overloaded
                | Code::ProviderUnavailable),
                Some(after),
            ) => Some(Back {
                code,
                // A hint at the clamp (`MAX_RETRY_HINT`) is "a week or
                // more": the parsers cut every longer wait to it (a 30-day
                // quota wall reads as 7 days), so it names no return. Read
                // as the operator's wait (`None`), the route stays out for
                // the whole operation: never the earliest back, never
                // waited for however long `max_wait` is. A later instant
                // (`now + hint`) would be waited out, under a long enough
                // `max_wait`, as if the route were back then.
                at: (after < MAX_RETRY_HINT)
                    .then(|| now.checked_add(after))
                    .flatten(),
            }),
            _ => None,
        }
    }
}

/// A route called or skipped in this operation.
#[derive(Debug)]
struct Visit {
    route: RouteId,
    target: Target,
    back: Option<Back>,
    /// The route's own answer left the request fit for it again: it was
    /// skipped without a call, or its failure was the route's, not the
    /// request's (`moves`). A route that answered "context too long" is
    /// never waited for to be asked the same again.
    open: bool,
}

/// The chain's progress, made when the primary fails and a route takes
/// the failure: boxed, so a call the primary answers pays nothing for it.
#[derive(Debug)]
struct Walk {
    primary: RouteId,
    /// Every attempt so far: the primary's, then each route's.
    receipt: Receipt,
    /// The next route of the chain to consider.
    next: usize,
    /// The call in flight.
    current: Option<(Target, RouteId)>,
    /// The call in flight was sent: its service was ready and called.
    sent: bool,
    /// The route the last failed call went to.
    left: RouteId,
    /// The request of the call in flight (after its route's rewrite) asks
    /// for work the provider bills ([`billable`](seawall_core::billable)).
    bills: bool,
    /// How long the layer waited before the call in flight.
    delay: Duration,
    /// The opt-in trigger the request moved for: only routes that opted in
    /// to it are tried after.
    sticky: Option<Code>,
    visits: Vec<Visit>,
    /// The visit waited for.
    waiting: Option<usize>,
    waits: usize,
    moves: u64,
    /// The span of the move in flight.
    span: tracing::Span,
    /// See [`Plan::ladder_above`].
    ladder_above: bool,
    /// The operation's facts, to read what a layer below did with a call
    /// its caller dropped ([`Walk::cancelled`]). Kept only without a ladder
    /// above (which reads it itself), as the walk starts: a failure's
    /// path, never a first call's answer.
    facts: Option<RequestFacts>,
}

/// What to do next. Returned and consumed at once, never stored: boxing
/// the request would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Step<B> {
    Call(Target, Req<B>),
    Wait(Duration),
    Done(BoxError),
}

impl<S, F, R, B> ResponseFuture<S, F, R, B>
where
    S: Service<Req<B>>,
    F: Service<Req<B>>,
{
    pub(crate) fn primary(future: S::Future, route: RouteId, plan: Plan<S, F, R, B>) -> Self {
        let header = plan.shared.settings.served_by_header;
        ResponseFuture {
            state: State::Primary { future },
            primary_route: Some(route),
            plan: Some(plan),
            walk: None,
            header,
        }
    }

    /// The primary failed this call before it was made: its readiness
    /// returned `error`. The walk starts from it as from a failed call.
    pub(crate) fn primary_unready(error: BoxError, route: RouteId, plan: Plan<S, F, R, B>) -> Self {
        let header = plan.shared.settings.served_by_header;
        held(&plan);
        ResponseFuture {
            state: State::Unready { error: Some(error) },
            primary_route: Some(route),
            plan: Some(plan),
            walk: None,
            header,
        }
    }

    pub(crate) fn refused(error: BoxError) -> Self {
        ResponseFuture {
            state: State::Refused { error: Some(error) },
            primary_route: None,
            plan: None,
            walk: None,
            header: false,
        }
    }
}

impl<S, F, R, B, RB> Future for ResponseFuture<S, F, R, B>
where
    S: Service<Req<B>, Response = http::Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    F: Service<Req<B>, Response = http::Response<RB>> + Clone,
    F::Error: Into<BoxError>,
    R: Rewrite<B>,
{
    type Output = Result<http::Response<RB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            let step = match this.state.as_mut().project() {
                StateProj::Refused { error } => {
                    let error = error
                        .take()
                        .expect("ResponseFuture polled after completion");
                    return Poll::Ready(Err(error));
                }
                StateProj::Primary { future } => {
                    let result = ready!(future.poll(cx));
                    let route = this.primary_route.take().expect("polled after completion");
                    match result {
                        Ok(mut response) => {
                            let route = answering(&response, route);
                            #[cfg(feature = "metrics")]
                            if response.extensions().get::<Receipt>().is_none()
                                && let Some(plan) = this.plan.as_ref()
                            {
                                record_unladdered(&route, &response, plan.bills);
                                // Recorded here: a ladder above that found
                                // no receipt would count the attempt and its
                                // tokens again, so it gets the receipt a
                                // route's answer hands up (`answered`).
                                // Without one, the answer is left as it came.
                                if plan.ladder_above {
                                    let own = one_answer(&route, &response, plan.bills);
                                    response.extensions_mut().insert(own);
                                }
                            }
                            label(&mut response, route, false, *this.header);
                            return Poll::Ready(Ok(response));
                        }
                        Err(error) => {
                            match start(error.into(), route, this.plan.as_ref(), this.walk) {
                                Ok(step) => step,
                                Err(error) => return Poll::Ready(Err(error)),
                            }
                        }
                    }
                }
                StateProj::Unready { error } => {
                    let error = error.take().expect("polled after completion");
                    let route = this.primary_route.take().expect("polled after completion");
                    let error = not_ready(error, &route);
                    match start(error, route, this.plan.as_ref(), this.walk) {
                        Ok(step) => step,
                        Err(error) => return Poll::Ready(Err(error)),
                    }
                }
                StateProj::Again { future } => {
                    let walk = this.walk.as_mut().expect("a walk waited");
                    let result = {
                        let _entered = walk.span.clone().entered();
                        ready!(future.as_mut().poll_send(cx, walk.sending()))
                    };
                    let plan = this.plan.as_ref().expect("polled after completion");
                    match result {
                        Ok(response) => {
                            return Poll::Ready(Ok(walk.answered(response, *this.header)));
                        }
                        Err(error) => walk.failed(error.into(), plan),
                    }
                }
                StateProj::Route { future } => {
                    let walk = this.walk.as_mut().expect("a walk called a route");
                    let result = {
                        let _entered = walk.span.clone().entered();
                        ready!(future.poll_send(cx, walk.sending()))
                    };
                    let plan = this.plan.as_ref().expect("polled after completion");
                    match result {
                        Ok(response) => {
                            return Poll::Ready(Ok(walk.answered(response, *this.header)));
                        }
                        Err(error) => walk.failed(error.into(), plan),
                    }
                }
                StateProj::Waiting { sleep } => {
                    ready!(sleep.as_mut().poll(cx));
                    let walk = this.walk.as_mut().expect("a walk waits");
                    let plan = this.plan.as_ref().expect("polled after completion");
                    walk.after_wait(plan)
                }
            };
            let shared = &this.plan.as_ref().expect("a plan").shared;
            match step {
                Step::Call(Target::Primary, request) => {
                    let primary = shared.primary.clone_service();
                    this.state.set(State::Again {
                        future: Box::pin(Sending::new(primary, request)),
                    });
                }
                Step::Call(Target::Route(index), request) => {
                    let service = shared.routes[index].service.clone_service();
                    this.state.set(State::Route {
                        future: Sending::new(service, request),
                    });
                }
                Step::Wait(wait) => this.state.set(State::Waiting {
                    sleep: Box::pin(tokio::time::sleep(wait)),
                }),
                Step::Done(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

/// Tells a ladder above that this layer holds its attempt and sent nothing
/// for now ([`RequestFacts::call_held`]): between a failed call and the
/// next, through a wait for a cooling route, while a route's service is
/// not ready. A caller that gives up meanwhile cancelled no upstream
/// attempt. Nobody else reads it: said only under a ladder.
fn held<S, F, R, B>(plan: &Plan<S, F, R, B>) {
    if plan.ladder_above
        && let Some(facts) = plan.facts()
    {
        facts.call_held();
    }
}

/// The primary failed, its call or its readiness before it: the walk and
/// its first step when a route takes the failure, else the error to return.
fn start<S, F, R, B>(
    error: BoxError,
    route: RouteId,
    plan: Option<&Plan<S, F, R, B>>,
    walk: &mut Option<Box<Walk>>,
) -> Result<Step<B>, BoxError>
where
    R: Rewrite<B>,
{
    let plan = plan.expect("polled after completion");
    let (started, step) = Walk::start(error, route, plan)?;
    *walk = Some(started);
    Ok(step)
}

/// Whether a call at `at` still has `min` of `deadline` left — and any
/// time at all: without a margin, a deadline that has passed leaves
/// nothing to call a route in.
fn in_time(deadline: Deadline, at: Instant, min: Duration) -> bool {
    at < deadline.instant() && deadline.instant() - at >= min
}

/// A failure the chain may act on: the ladder below gave up on something
/// transient, or the route itself is at fault and another can answer (a
/// quota wall, rejected keys, a cooldown): see `Scope`.
fn moves(failure: &Failure) -> bool {
    (matches!(failure.action(), Action::Retry | Action::Failover)
        && !matches!(failure.code(), Code::Cancelled | Code::DeadlineExceeded))
        || failure.moves_route()
}

/// A failure an opted-in route may take: before content, not one nobody
/// waits for, and not one the provider said not to repeat.
fn triggerable(failure: &Failure) -> bool {
    !failure.evidence().content_seen
        && !matches!(failure.code(), Code::Cancelled | Code::DeadlineExceeded)
        && !told_not_to_repeat(failure)
}

/// The provider said not to repeat the request (`x-should-retry: false`,
/// gRPC's negative pushback): its action turned to `Surface` where the
/// table would have retried or moved it. A failure the table itself
/// surfaces (a context too long, a truncated answer) is not held back
/// from a route opted in to it.
fn told_not_to_repeat(failure: &Failure) -> bool {
    failure.action() == Action::Surface
        && Action::decide(failure.class(), failure.code(), failure.evidence()) != Action::Surface
}

/// Whether `route` takes `failure`, and the trigger it takes it for.
fn takes<F, R>(route: &FallbackRoute<F, R>, failure: &Failure, sticky: Option<Code>) -> Take {
    let code = failure.code();
    match sticky {
        Some(trigger) => {
            if route.triggers.contains(&trigger)
                && ((code == trigger && triggerable(failure)) || moves(failure))
            {
                Take::For(trigger)
            } else {
                Take::No
            }
        }
        None if moves(failure) && !route.only_triggers => Take::Moves,
        None if triggerable(failure) && route.triggers.contains(&code) => Take::For(code),
        None => Take::No,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Take {
    No,
    Moves,
    For(Code),
}

impl Walk {
    /// Decides on the primary's failure: a walk and its first step when a
    /// route takes it, else the error to return.
    fn start<S, F, R, B>(
        error: BoxError,
        from: RouteId,
        plan: &Plan<S, F, R, B>,
    ) -> Result<(Box<Walk>, Step<B>), BoxError>
    where
        R: Rewrite<B>,
    {
        let Some(failure) = Failure::find(&*error) else {
            return Err(error);
        };
        let shared = &plan.shared;
        if !shared
            .routes
            .iter()
            .any(|route| takes(route, failure, None) != Take::No)
        {
            return Err(with_own_receipt(error, None, |failure| {
                single(&from, failure, plan.bills, plan.facts())
            }));
        }
        let cause = failure.code();
        let settings = &shared.settings;
        let Some(kept) = plan.request.as_ref().filter(|r| r.body().is_replayable()) else {
            return Err(skipped(
                error,
                &from,
                cause,
                StopReason::NotReplayable,
                plan,
            ));
        };
        if kept
            .deadline()
            .is_some_and(|d| !in_time(d, Instant::now(), settings.min_remaining))
        {
            return Err(skipped(error, &from, cause, StopReason::Deadline, plan));
        }
        let receipt = failure
            .receipt()
            .cloned()
            .unwrap_or_else(|| single(&from, failure, plan.bills, plan.facts()));
        let mut walk = Box::new(Walk {
            primary: from.clone(),
            receipt,
            next: 0,
            current: None,
            sent: false,
            left: from.clone(),
            bills: plan.bills,
            delay: Duration::ZERO,
            sticky: None,
            visits: Vec::new(),
            waiting: None,
            waits: 0,
            moves: 0,
            span: tracing::Span::none(),
            ladder_above: plan.ladder_above,
            facts: if plan.ladder_above {
                None
            } else {
                plan.facts().cloned()
            },
        });
        walk.visit(Target::Primary, from, failure, shared);
        held(plan);
        let step = walk.next_step(error, plan, kept);
        Ok((walk, step))
    }

    /// Records what is known of a route that just failed.
    fn visit<S, F, R>(
        &mut self,
        target: Target,
        route: RouteId,
        failure: &Failure,
        shared: &Shared<S, F, R>,
    ) {
        let now = Instant::now();
        let back = match &shared.settings.health {
            Some(health) => health.cooling(&route).map(|cooling| Back::of(cooling, now)),
            None => Back::from_failure(failure, now),
        };
        let open = moves(failure);
        match self.visits.iter_mut().find(|visit| visit.route == route) {
            Some(visit) => {
                visit.back = back;
                visit.open = open;
            }
            None => self.visits.push(Visit {
                route,
                target,
                back,
                open,
            }),
        }
    }

    /// The next route that takes `error`'s failure, the wait for a cooling
    /// one, or the error to return.
    fn next_step<S, F, R, B>(
        &mut self,
        error: BoxError,
        plan: &Plan<S, F, R, B>,
        kept: &Kept<B>,
    ) -> Step<B>
    where
        R: Rewrite<B>,
    {
        let Some(failure) = Failure::find(&*error) else {
            return Step::Done(error);
        };
        let shared = &plan.shared;
        let settings = &shared.settings;
        if kept
            .deadline()
            .is_some_and(|d| !in_time(d, Instant::now(), settings.min_remaining))
        {
            return Step::Done(self.fail(error, Some(StopReason::Deadline)));
        }
        let cause = failure.code();
        while let Some(route) = shared.routes.get(self.next) {
            let index = self.next;
            self.next += 1;
            let take = takes(route, failure, self.sticky);
            if take == Take::No {
                continue;
            }
            let Some(request) = route_request(route, kept) else {
                return Step::Done(self.fail(error, Some(StopReason::NotReplayable)));
            };
            let to = RouteId::of_request(&request);
            if to == self.primary {
                return Step::Done(SameRouteFallback::new(to, Some(error)).into());
            }
            if self.visits.iter().any(|visit| visit.route == to) {
                continue;
            }
            if let Some(cooling) = settings
                .health
                .as_ref()
                .and_then(|health| health.cooling(&to))
            {
                // Skipped without a call: the receipt says why.
                tracing::debug!(
                    target: "seawall::fallback",
                    route = %to,
                    code = cooling.0.as_str(),
                    "skipping a route that is cooling down"
                );
                let mut skip = Receipt::default();
                skip.push(Attempt::new(
                    to.clone(),
                    Some(Code::RouteCoolingDown),
                    Duration::ZERO,
                ));
                self.receipt.append(skip);
                self.visits.push(Visit {
                    route: to,
                    target: Target::Route(index),
                    back: Some(Back::of(cooling, Instant::now())),
                    open: true,
                });
                continue;
            }
            if let Take::For(trigger) = take {
                self.sticky = Some(trigger);
            }
            self.begin(Target::Route(index), to, cause, Duration::ZERO);
            return self.call(Target::Route(index), request);
        }
        self.all_cooling(error, plan)
    }

    /// Whether the route of `visit` can still take the request after
    /// `failure` (the last), and for what. The rule `next_step` keeps:
    /// a route whose own answer condemned the request is not asked again;
    /// once the request moved for a trigger, only routes that opted in to
    /// it take it — never the primary, which answered it already.
    fn still_takes<S, F, R, B>(
        &self,
        visit: &Visit,
        failure: &Failure,
        plan: &Plan<S, F, R, B>,
    ) -> Take {
        if !visit.open {
            return Take::No;
        }
        match visit.target {
            Target::Primary if self.sticky.is_none() && moves(failure) => Take::Moves,
            Target::Primary => Take::No,
            Target::Route(index) => takes(&plan.shared.routes[index], failure, self.sticky),
        }
    }

    /// No route is left: wait for the earliest to come back when every one
    /// that can still take the request is cooling down and that fits;
    /// otherwise fail, with the failure that cooled the earliest route when
    /// every one is cooling down.
    fn all_cooling<S, F, R, B>(&mut self, error: BoxError, plan: &Plan<S, F, R, B>) -> Step<B> {
        let settings = &plan.shared.settings;
        let now = Instant::now();
        if let Some(health) = &settings.health {
            for visit in &mut self.visits {
                visit.back = health
                    .cooling(&visit.route)
                    .map(|cooling| Back::of(cooling, now));
            }
        }
        // Only the routes the request may still go to count: waiting for
        // one that cannot take it re-sends a request it already refused.
        let Some(failure) = Failure::find(&*error) else {
            return Step::Done(self.fail(error, None));
        };
        let open: Vec<(usize, Take)> = self
            .visits
            .iter()
            .enumerate()
            .map(|(n, visit)| (n, self.still_takes(visit, failure, plan)))
            .filter(|(_, take)| *take != Take::No)
            .collect();
        if open.is_empty() || !open.iter().all(|(n, _)| self.visits[*n].back.is_some()) {
            return Step::Done(self.fail(error, None));
        }
        // Only a route whose cooldown is worth waiting for
        // (`Cooldown::worth_waiting`): not one behind a wall.
        let earliest = open
            .iter()
            .filter_map(|&(n, take)| {
                let back = self.visits[n].back?;
                Cooldown::worth_waiting(back.code).then_some((n, take, back.at?))
            })
            .min_by_key(|(_, _, at)| *at);
        let Some((n, take, at)) = earliest else {
            // Every route waits for an operator, or for a wall to end.
            return Step::Done(self.fail(error, None));
        };
        let wait = at.saturating_duration_since(now);
        let deadline = plan.request.as_ref().and_then(Kept::deadline);
        let in_time =
            deadline.is_none_or(|deadline| in_time(deadline, now + wait, settings.min_remaining));
        if in_time && wait <= settings.max_wait && self.waits < self.visits.len() {
            self.waits += 1;
            self.waiting = Some(n);
            self.delay = wait;
            // A route skipped while cooling, waited for on its trigger:
            // the request moves for that trigger, as if called at once.
            if let Take::For(trigger) = take {
                self.sticky = Some(trigger);
            }
            tracing::info!(
                target: "seawall::fallback",
                route = %self.visits[n].route,
                wait_ms = millis(wait),
                "every route is cooling down: waiting for the first back"
            );
            return Step::Wait(wait);
        }
        let visit = &self.visits[n];
        let code = visit.back.map_or(Code::RouteCoolingDown, |back| back.code);
        let message = format!(
            "every route is cooling down; the first back is {}, in {} ms",
            visit.route,
            millis(wait)
        );
        // A refusal, not the cause's own code: no call was made, so a
        // ladder above records no upstream attempt and spends no budget
        // on it (as the breaker's and a route set's refusals).
        let mut failure = Failure::route_refusal(Some(code))
            .with_route(visit.route.clone())
            .with_retry_after(wait)
            .with_message(&message);
        let why = if in_time {
            StopReason::HintTooLong
        } else {
            StopReason::Deadline
        };
        let mut receipt = self.receipt.clone();
        receipt.stop = Some(why);
        failure = failure.with_receipt(receipt);
        tracing::debug!(
            target: "seawall::fallback",
            route = %visit.route,
            code = code.as_str(),
            retry_after_ms = millis(wait),
            "every route is cooling down"
        );
        Step::Done(Box::new(failure))
    }

    /// The call to the route waited for.
    fn after_wait<S, F, R, B>(&mut self, plan: &Plan<S, F, R, B>) -> Step<B>
    where
        R: Rewrite<B>,
    {
        let n = self.waiting.take().expect("a wait has its route");
        let Some(kept) = plan.request.as_ref() else {
            unreachable!("a walk starts only with a kept request");
        };
        let (target, route) = (self.visits[n].target, self.visits[n].route.clone());
        let cause = self.visits[n]
            .back
            .map_or(Code::RouteCoolingDown, |b| b.code);
        let request = match target {
            Target::Primary => kept.body().replay().map(|body| kept.request(body)),
            Target::Route(index) => route_request(&plan.shared.routes[index], kept),
        };
        let Some(request) = request else {
            let failure = Failure::new(cause).with_route(route);
            return Step::Done(self.fail(Box::new(failure), Some(StopReason::NotReplayable)));
        };
        let delay = self.delay;
        self.begin(target, route, cause, delay);
        self.call(target, request)
    }

    /// The move's call. A route (an attempt stack, without a ladder of its
    /// own) has nothing else to record its answer on: the move's span is
    /// its attempt's and its operation's, on which the stream guard
    /// records how a streamed answer ended (and which it keeps open until
    /// then). The primary, called again after a wait, records on its own
    /// ladder's spans. Whether the call bills is read from the request the
    /// route gets: a rewrite may have sent it to another endpoint.
    fn call<B>(&mut self, target: Target, mut request: Req<B>) -> Step<B> {
        self.bills = seawall_core::billable(request.method(), request.uri().path());
        if target != Target::Primary && !self.span.is_disabled() {
            request
                .extensions_mut()
                .insert(AttemptSpans::new(self.span.clone(), self.span.clone()));
        }
        Step::Call(target, request)
    }

    /// Starts a move: its span, its event, its count — a fallback's only
    /// when it goes to a route of the chain: the primary called again
    /// after a wait serves no fallback (its receipt and `ServedBy` say so).
    fn begin(&mut self, target: Target, to: RouteId, cause: Code, delay: Duration) {
        self.moves += 1;
        self.delay = delay;
        self.span = tracing::info_span!(
            target: "seawall::fallback",
            "fallback",
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            server.address = to.address().0,
            server.port = to.address().1,
            seawall.attempt = self.moves,
            seawall.from = self.left.as_str(),
            seawall.cause = cause.as_str(),
            seawall.delay_ms = millis(delay),
            error.type = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            seawall.stream.bound = tracing::field::Empty,
        );
        tracing::warn!(
            target: "seawall::fallback",
            from = %self.left,
            to = %to,
            cause = cause.as_str(),
            "falling back to another route"
        );
        #[cfg(feature = "metrics")]
        if target != Target::Primary {
            metrics::counter!(
                seawall_core::metric_names::FALLBACKS_TOTAL,
                "from" => self.left.to_shared(),
                "to" => to.to_shared(),
                "code" => cause.as_str()
            )
            .increment(1);
        }
        self.current = Some((target, to));
        self.sent = false;
    }

    /// What a move's call needs as it is sent: where to say it was sent,
    /// and the route to name as the one it went to ([`Sending::poll_send`]).
    /// Named with or without a ladder above: this layer reads it back too
    /// on a cancel ([`Walk::cancelled`]), where a route set below has said
    /// the member it sent the call to since, or that it holds the call.
    fn sending(&mut self) -> (&mut bool, Option<&RouteId>) {
        let says = self.current.as_ref().map(|(_, route)| route);
        (&mut self.sent, says)
    }

    /// The call in flight failed: its attempts join the receipt, then the
    /// next step.
    fn failed<S, F, R, B>(&mut self, error: BoxError, plan: &Plan<S, F, R, B>) -> Step<B>
    where
        R: Rewrite<B>,
    {
        let (target, route) = self.current.take().expect("a call was in flight");
        let Some(failure) = Failure::find(&*error) else {
            // Not understood: not moved on, returned with every attempt
            // so far (the route's own, when its ladder attached them).
            let (error, own) = Receipt::detach(error);
            self.join(own.unwrap_or_else(|| unclassified(&route)), target);
            return Step::Done(std::mem::take(&mut self.receipt).attach(error));
        };
        self.span.record("error.type", failure.code().as_str());
        self.span.record("otel.status_code", "ERROR");
        let own = failure.receipt().cloned().unwrap_or_else(|| {
            let route = failure.route().unwrap_or(&route);
            single(route, failure, self.bills, plan.facts())
        });
        self.join(own, target);
        held(plan);
        self.visit(target, route.clone(), failure, &plan.shared);
        self.left = route;
        let Some(kept) = plan.request.as_ref() else {
            unreachable!("a walk starts only with a kept request");
        };
        self.next_step(error, plan, kept)
    }

    /// A route's own receipt after the others, its first attempt carrying
    /// the wait before it.
    fn join(&mut self, own: Receipt, target: Target) {
        self.receipt.append_after(own, self.delay);
        self.receipt.fallback = target != Target::Primary;
    }

    /// The answer of the call in flight, with the whole receipt.
    fn answered<RB>(
        &mut self,
        mut response: http::Response<RB>,
        header: bool,
    ) -> http::Response<RB> {
        let (target, route) = self.current.take().expect("a call was in flight");
        let route = answering(&response, route);
        // A whole answer's finish and usage, on the move's span (a
        // stream's are recorded when it ends).
        if let Some(usage) = response.extensions().get::<Usage>() {
            self.span
                .record("gen_ai.usage.input_tokens", usage.input_tokens);
            self.span
                .record("gen_ai.usage.output_tokens", usage.output_tokens);
        }
        if let Some(finish) = response.extensions().get::<Finish>() {
            self.span
                .record("gen_ai.response.finish_reasons", &*finish.reason);
        }
        let own = response
            .extensions_mut()
            .remove::<Receipt>()
            .unwrap_or_else(|| {
                record_unladdered(&route, &response, self.bills);
                one_answer(&route, &response, self.bills)
            });
        self.join(own, target);
        let receipt = std::mem::take(&mut self.receipt);
        response.extensions_mut().insert(receipt);
        label(&mut response, route, target != Target::Primary, header);
        response
    }

    /// The error with every attempt in its receipt: attached to an error
    /// that is not a seawall `Failure` anywhere in its chain
    /// ([`Receipt::attach`]).
    fn fail(&mut self, error: BoxError, stop: Option<StopReason>) -> BoxError {
        let mut receipt = std::mem::take(&mut self.receipt);
        if let Some(stop) = stop {
            receipt.stop = Some(stop);
        }
        let mut failure = match Failure::extract(error) {
            Ok(failure) => failure,
            Err(error) => return receipt.attach(error),
        };
        if failure.route().is_none() {
            failure = failure.with_route(self.left.clone());
        }
        Box::new(failure.with_receipt(receipt))
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        // A call dropped while its service was not ready for it (a limit
        // or a buffer below, a breaker's gate) was never sent: nothing was
        // cancelled.
        if let Some((target, route)) = self.current.take()
            && self.sent
        {
            self.cancelled(target, &route);
        }
    }
}

impl Walk {
    /// Dropped with a call in flight (the caller's own timeout, a client
    /// gone), as a ladder is: the call was sent (past its service's
    /// readiness). A route's attempt, which
    /// no ladder of its own counts, is counted `cancelled` here; the
    /// primary's ladder counts its own, and a ladder above this layer the
    /// call it was waiting for (this one), under the route this layer
    /// named to it as it sent the call (`Walk::sending`) — or none, when
    /// nothing was sent (`held`). A caller that stops waiting
    /// broke nothing: the move's span says `cancelled` without an error
    /// status.
    ///
    /// Counted here, it is counted where the call went as a layer below
    /// said it ([`CallBelow`](seawall_core::facts::CallBelow)): under the member a route set sent it to,
    /// not the route's name; none when the set holds it, every member
    /// cooling (nothing was sent upstream). Nothing said (no slots to say
    /// it in): the move's route, which took the call as it was sent.
    #[cold]
    fn cancelled(&self, target: Target, route: &RouteId) {
        #[cfg(feature = "metrics")]
        if target != Target::Primary && !self.ladder_above {
            use seawall_core::facts::CallBelow;
            let below = self
                .facts
                .as_ref()
                .map_or(CallBelow::Unrecorded, RequestFacts::call_below);
            match below {
                CallBelow::Unrecorded => {
                    seawall_core::record::attempt(route, Some(Code::Cancelled));
                }
                CallBelow::Sent(sent) => {
                    seawall_core::record::attempt(&sent, Some(Code::Cancelled));
                }
                CallBelow::Held => {}
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (target, route, self.ladder_above, &self.facts);
        self.span.record("error.type", Code::Cancelled.as_str());
    }
}

/// A route's copy of the request: the recording replayed from its start,
/// the route's rewrite, its route name.
fn route_request<F, R, B>(route: &FallbackRoute<F, R>, kept: &Kept<B>) -> Option<Req<B>>
where
    R: Rewrite<B>,
{
    let body = kept.body().replay()?;
    let mut request = kept.request(body);
    // The copied extensions name the primary's route; this route's is the
    // configured one, else whatever the rewritten request says.
    request.extensions_mut().remove::<RouteId>();
    let primary_authority = request.uri().authority().cloned();
    let primary_host = request.headers().get(HOST).cloned();
    route.rewrite.rewrite(&mut request);
    // A rewrite to another host that left the primary's `Host` (a caller
    // that set it, e.g. a proxy forwarding its own request; hyper adds one
    // only when missing) would name the primary to the other host. A
    // `Host` the rewrite set, or an authority it kept, is left as it is.
    if request.headers().get(HOST) == primary_host.as_ref()
        && let Some(authority) = request.uri().authority().cloned()
        && primary_authority.as_ref() != Some(&authority)
    {
        headers::host_follows(request.headers_mut(), &authority);
    }
    if let Some(name) = &route.route {
        request.extensions_mut().insert(name.clone());
    }
    // The rewrite may send the operation to another endpoint, another
    // provider's: what the head says is read from the new one.
    if let Some(facts) = request.extensions().get::<RequestFacts>() {
        let moved = facts.moved_to(&request);
        request.extensions_mut().insert(moved);
    }
    Some(request)
}

/// The primary's error, returned without a fallback: the receipt's stop
/// reason says why and so does a `tracing` event. A failure found inside
/// another error is returned on its own (a clone, with the reason); an
/// error with no failure anywhere is returned as it is.
fn skipped<S, F, R, B>(
    error: BoxError,
    from: &RouteId,
    cause: Code,
    why: StopReason,
    plan: &Plan<S, F, R, B>,
) -> BoxError {
    tracing::debug!(
        target: "seawall::fallback",
        from = %from,
        cause = cause.as_str(),
        reason = why.as_str(),
        "no fallback"
    );
    with_own_receipt(error, Some(why), |failure| {
        single(from, failure, plan.bills, plan.facts())
    })
}

/// `error` with the receipt `own` makes of its failure when the primary
/// kept none (a route without a ladder, whose attempt nobody else
/// records). `stop`, when given, is why its receipt stops there.
fn with_own_receipt(
    error: BoxError,
    stop: Option<StopReason>,
    own: impl FnOnce(&Failure) -> Receipt,
) -> BoxError {
    match Failure::extract(error) {
        Ok(mut failure) => {
            if failure.receipt().is_none() {
                *failure.receipt_mut() = Some(Box::new(own(&failure)));
            }
            if let (Some(stop), Some(receipt)) = (stop, failure.receipt_mut().as_mut()) {
                receipt.stop = Some(stop);
            }
            Box::new(failure)
        }
        Err(error) => error,
    }
}

/// A receipt of the one failed attempt of a service that did not keep its
/// own (a route without a ladder), whose attempt nobody else records:
/// billed when the provider had answered 2xx to a request that `bills`,
/// may have been billed when it was cut before an answer after its body,
/// as `facts` say, was sent whole ([`Attempt::unanswered_after_sending`]),
/// as a ladder records it, and counted as a ladder counts it.
fn single(
    route: &RouteId,
    failure: &Failure,
    bills: bool,
    facts: Option<&RequestFacts>,
) -> Receipt {
    let receipt = one_failure(route, failure, bills, facts);
    #[cfg(feature = "metrics")]
    {
        seawall_core::record::attempt(route, Some(failure.code()));
        // A unary answer that failed anyway (refused, filtered, empty)
        // cost what its usage says, counted as a whole answer's is; a
        // stream's (its events read) the stream guard counts at its end.
        if receipt.billed_attempts() > 0
            && failure.evidence().events == 0
            && let Some(usage) = failure.usage()
        {
            seawall_core::record::tokens(route, usage);
        }
    }
    receipt
}

/// The receipt of one attempt that failed with `failure`, not counted:
/// billed when the provider had answered 2xx to a request that `bills`,
/// may have been when its body went out whole (as `facts` say) and no
/// answer came back.
fn one_failure(
    route: &RouteId,
    failure: &Failure,
    bills: bool,
    facts: Option<&RequestFacts>,
) -> Receipt {
    let unanswered =
        facts.is_some_and(|facts| Attempt::unanswered_after_sending(bills, facts, failure));
    let mut attempt =
        Attempt::failed(route.clone(), Duration::ZERO, failure).with_may_be_billed(unanswered);
    attempt.billed &= bills;
    let mut receipt = Receipt::default();
    receipt.push(attempt);
    receipt.stop = Some(StopReason::NotRetryable);
    receipt
}

/// The primary's readiness failed (`error`, kept for this call): nothing
/// was sent to it, so no upstream attempt is counted (a ladder counts none
/// for its service's readiness failure either) and its record in the
/// receipt is [not sent](Attempt::not_sent), so not among the receipt's
/// calls. The record is kept all the same, on an error no layer
/// classified too: a ladder above that found no receipt would count the
/// call as an attempt.
#[cold]
fn not_ready(error: BoxError, route: &RouteId) -> BoxError {
    let code = Failure::find(&*error).map_or(Code::Unknown, Failure::code);
    tracing::warn!(
        target: "seawall::fallback",
        route = %route,
        code = code.as_str(),
        "the primary was not ready: nothing was sent to it"
    );
    let unsent = |code| {
        let mut receipt = Receipt::default();
        receipt.push(Attempt::new(route.clone(), Some(code), Duration::ZERO).not_sent());
        receipt.stop = Some(StopReason::NotRetryable);
        receipt
    };
    if Failure::find(&*error).is_some() {
        with_own_receipt(error, None, |failure| unsent(failure.code()))
    } else {
        unsent(Code::Unknown).attach(error)
    }
}

/// A receipt of the one attempt of a service that did not keep its own,
/// which failed with an error no layer classified (`unknown`).
fn unclassified(route: &RouteId) -> Receipt {
    #[cfg(feature = "metrics")]
    seawall_core::record::attempt(route, Some(Code::Unknown));
    let mut receipt = Receipt::default();
    receipt.push(Attempt::new(
        route.clone(),
        Some(Code::Unknown),
        Duration::ZERO,
    ));
    receipt.stop = Some(StopReason::NotRetryable);
    receipt
}

/// Records the answer of a route without a ladder of its own (one
/// attempt), which nobody else records: the attempt, and a whole answer's
/// tokens when its request `bills` (a stream's are the stream guard's,
/// when it ends).
fn record_unladdered<B>(route: &RouteId, response: &http::Response<B>, bills: bool) {
    #[cfg(feature = "metrics")]
    {
        seawall_core::record::attempt(route, None);
        if bills && let Some(usage) = response.extensions().get::<seawall_core::Usage>() {
            seawall_core::record::tokens(route, *usage);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (route, response, bills);
}

/// The receipt of the one attempt of a route without a ladder of its own
/// that answered `response` (recorded by [`record_unladdered`]): billed
/// when it is 2xx to a request that `bills`, as a ladder records it.
fn one_answer<B>(route: &RouteId, response: &http::Response<B>, bills: bool) -> Receipt {
    let mut attempt = Attempt::answered(route.clone(), Duration::ZERO, response);
    attempt.billed &= bills;
    let mut own = Receipt::default();
    own.push(attempt);
    own.stop = Some(StopReason::Succeeded);
    own
}

/// The route that served `response`: the member a route set chose, when
/// one did (it leaves the member's `RouteId` in the response, where the
/// ladder's receipt reads it too), else `called`, the route the layer
/// called.
fn answering<RB>(response: &http::Response<RB>, called: RouteId) -> RouteId {
    match response.extensions().get::<RouteId>() {
        Some(member) => member.clone(),
        None => called,
    }
}

fn label<RB>(response: &mut http::Response<RB>, route: RouteId, fallback: bool, header: bool) {
    if header {
        let value = if fallback {
            http::HeaderValue::try_from(format!("{route}; fallback"))
        } else {
            http::HeaderValue::try_from(route.as_str())
        };
        if let Ok(value) = value {
            response.headers_mut().insert(SERVED_BY_HEADER, value);
        }
    }
    response
        .extensions_mut()
        .insert(ServedBy { route, fallback });
}

impl<S, F, R, B> std::fmt::Debug for ResponseFuture<S, F, R, B>
where
    S: Service<Req<B>>,
    F: Service<Req<B>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("primary_route", &self.primary_route)
            .field("walk", &self.walk)
            .finish_non_exhaustive()
    }
}
