use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::{Request, Response};
use pin_project_lite::pin_project;
use seawall_core::facts::CallBelow;
use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::provider::Provider;
use seawall_core::recording::ReplayBody;
use seawall_core::span::{self, SpanName};
use seawall_core::{
    Action, AnotherRoute, Attempt, AttemptSpans, BoxError, Class, Code, Deadline, Failure, Receipt,
    RequestFacts, RouteId, StopReason, Usage,
};
use seawall_internal::millis;
use tokio::time::{Instant, Sleep, sleep};
use tower_service::Service;

use crate::Jitter;
use crate::budget::{Grant, Now};
use crate::layer::Shared;
use crate::metrics;
use crate::template::Template;

pin_project! {
    /// The response future of [`RetryBudget`](crate::RetryBudget): a state
    /// machine that calls, sleeps, waits for readiness and calls again.
    pub struct ResponseFuture<S, B>
    where
        S: Service<Request<ReplayBody<B>>>,
    {
        #[pin]
        state: State<S::Future>,
        // `None` when an outer ladder owns the retries: one attempt, as is.
        ladder: Option<Ladder<S, B>>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Calling { #[pin] future: F },
        Sleeping { #[pin] sleep: Sleep },
        // The wait for the service to be ready for the next attempt,
        // bounded by the ladder's time (boxed: only a retry pays for it).
        // The wait's end, and its timer, made on the first `Pending` (a
        // service ready at once costs no timer).
        Readying { until: Option<Instant>, bound: Option<Pin<Box<Sleep>>> },
        // Refused before any call (a resume the retry budget cannot pay).
        Refused { error: Option<BoxError> },
    }
}

/// What another attempt needs: the service and the request to copy.
pub(crate) struct Again<S, B> {
    pub(crate) service: S,
    pub(crate) template: Template<B>,
}

/// One operation's ladder: where it stands and what it has seen.
pub(crate) struct Ladder<S, B> {
    shared: Arc<Shared>,
    /// `None` when no retry is possible at all (`max_attempts` is 1).
    again: Option<Again<S, B>>,
    /// The body of the next attempt, once a retry is decided.
    next_body: Option<ReplayBody<B>>,
    route: RouteId,
    deadline: Option<Deadline>,
    /// The deadline the attempts run under, when the fallback reserve
    /// narrows the operation's.
    window: Option<Deadline>,
    /// The attempt in flight, from 1.
    attempt: u32,
    /// Attempts that moved the operation off a route-set member on that
    /// member's first failure in the operation: the set's moves, not
    /// retries, so `max_attempts` does not count them (see `judge`).
    moves: u32,
    /// Attempts a breaker refused while the only route cooled down after a
    /// rate limit, waited out (see `waits_out_cooldown`): no call was
    /// made. The first is a move, not one of `max_attempts` (a refusal
    /// spent one, and an operation refused at its first attempt made one
    /// call fewer than its policy says); any later one is an attempt, so
    /// a route that keeps cooling cannot hold the ladder forever. Nor does
    /// a refusal count in the backoff's exponent.
    cooldown_waits: u32,
    /// When the attempt in flight started; kept only under a deadline.
    attempt_started: Option<Instant>,
    /// The delay slept before the attempt in flight.
    slept: Duration,
    /// The previous attempt's failure, when it was route-shaped.
    last_route_shaped: Option<(Code, RouteId)>,
    /// A layer outside can send the request to another route.
    other_routes: bool,
    /// The request asks for work the provider bills
    /// ([`billable`](seawall_core::billable)): a 2xx to a `GET` or a token
    /// count is no billed attempt, and its usage counts no tokens.
    bills: bool,
    grant: Option<Grant>,
    /// `grant` is a retry's, decided but not sent yet: given back to the
    /// budget if the ladder is dropped before it sends it.
    unsent: bool,
    /// An attempt was sent and has not answered or failed yet.
    in_flight: bool,
    /// The operation's outcome is recorded (an answer, or the error it
    /// ends with): a ladder dropped before it was cancelled.
    judged: bool,
    /// A ladder above owns the operation (this one may nest: see
    /// [`RetryPolicy::allow_nested`](crate::RetryPolicy::allow_nested)):
    /// the operation's duration, and an attempt its caller cancelled, are
    /// the outermost ladder's to count. Counted here as well, one call
    /// was one operation sample per ladder, and one dropped call two
    /// cancelled attempts.
    nested: bool,
    receipt: Receipt,
    /// The operation's span (`otel.name` "{operation} {model}"), parent of
    /// one span per attempt.
    span: tracing::Span,
    /// The attempt in flight's span.
    attempt_span: tracing::Span,
    /// The operation's span carries the model (in its name and
    /// `gen_ai.request.model`): it was known as the span was made, or has
    /// been recorded since.
    operation_named: bool,
    /// The same, of the attempt in flight's span.
    attempt_named: bool,
    /// What the request asked for: provider and model for the spans, and
    /// whether its body was sent whole, for a failed attempt's receipt.
    facts: Option<RequestFacts>,
    /// When the operation started, for its duration metric.
    #[cfg(feature = "metrics")]
    started: Instant,
}

/// What the request asked for, as the ladder starts.
pub(crate) struct Asked<F> {
    /// What the head says, and the body once it is read.
    pub(crate) facts: Option<RequestFacts>,
    /// Reads what of the body is already at hand into the recording,
    /// which fills `facts` from it when it is whole.
    pub(crate) read_ahead: F,
}

enum Next {
    Retry(Duration),
    Stop(BoxError),
}

/// Who recorded an attempt (see `Ladder::record`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recorded {
    /// This ladder: its attempt and tokens are its to count.
    Here,
    /// A layer below that kept a receipt (a ladder allowed to nest, a
    /// fallback), and counted them.
    Below,
}

impl<S, B> ResponseFuture<S, B>
where
    S: Service<Request<ReplayBody<B>>>,
{
    pub(crate) fn single(future: S::Future) -> Self {
        ResponseFuture {
            state: State::Calling { future },
            ladder: None,
        }
    }

    pub(crate) fn ladder(future: S::Future, ladder: Ladder<S, B>) -> Self {
        ResponseFuture {
            state: State::Calling { future },
            ladder: Some(ladder),
        }
    }

    /// Fails with `error` without a call.
    pub(crate) fn refused(error: BoxError) -> Self {
        ResponseFuture {
            state: State::Refused { error: Some(error) },
            ladder: None,
        }
    }
}

impl<S, B> std::fmt::Debug for ResponseFuture<S, B>
where
    S: Service<Request<ReplayBody<B>>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Calling { .. } => "calling",
            State::Sleeping { .. } => "sleeping",
            State::Readying { .. } => "readying",
            State::Refused { .. } => "refused",
        };
        let mut debug = f.debug_struct("ResponseFuture");
        debug.field("state", &state);
        if let Some(ladder) = &self.ladder {
            debug
                .field("route", &ladder.route)
                .field("attempt", &ladder.attempt);
        }
        debug.finish_non_exhaustive()
    }
}

impl<S, B, ResB> Future for ResponseFuture<S, B>
where
    S: Service<Request<ReplayBody<B>>, Response = Response<ResB>> + Clone,
    S::Error: Into<BoxError>,
{
    type Output = Result<Response<ResB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(ladder) = this.ladder.as_mut() else {
            return match this.state.project() {
                StateProj::Calling { future } => future.poll(cx).map_err(Into::into),
                StateProj::Refused { error } => {
                    Poll::Ready(Err(error.take().expect("a refusal is polled once")))
                }
                _ => unreachable!("a single attempt only ever calls"),
            };
        };
        let _entered = ladder.span.clone().entered();
        loop {
            // The attempt in flight's: a retry makes a new one.
            let _attempt = ladder.attempt_span.clone().entered();
            match this.state.as_mut().project() {
                StateProj::Calling { future } => match ready!(future.poll(cx)) {
                    Ok(mut response) => {
                        ladder.succeeded(&mut response);
                        return Poll::Ready(Ok(response));
                    }
                    Err(err) => match ladder.failed(err.into()) {
                        Next::Stop(err) => return Poll::Ready(Err(err)),
                        Next::Retry(Duration::ZERO) => {
                            ladder.between_calls();
                            this.state.set(State::Readying {
                                until: ladder.readiness_until(),
                                bound: None,
                            });
                        }
                        Next::Retry(delay) => {
                            ladder.between_calls();
                            ladder.release_readiness();
                            this.state.set(State::Sleeping {
                                sleep: sleep(delay),
                            });
                        }
                    },
                },
                StateProj::Refused { error } => {
                    return Poll::Ready(Err(error.take().expect("a refusal is polled once")));
                }
                StateProj::Sleeping { sleep } => {
                    ready!(sleep.poll(cx));
                    this.state.set(State::Readying {
                        until: ladder.readiness_until(),
                        bound: None,
                    });
                }
                StateProj::Readying { until, bound } => {
                    let future = match ladder.poll_call(cx, bound.is_some()) {
                        Poll::Ready(called) => called?,
                        // A service that gates its readiness (a breaker
                        // with `gate_readiness`, for a balancer) may stay
                        // unready for its whole break: the wait ends with
                        // the ladder's time, as an attempt would.
                        Poll::Pending => {
                            let Some(until) = *until else {
                                return Poll::Pending;
                            };
                            let bound = bound
                                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
                            let expired = bound.as_mut().poll(cx).is_ready();
                            if !expired {
                                return Poll::Pending;
                            }
                            return Poll::Ready(Err(ladder.not_ready_in_time()));
                        }
                    };
                    this.state.set(State::Calling { future });
                }
            }
        }
    }
}

/// The shortest wait for a service's readiness before a retry, whatever
/// `max_retry_after` says (see `Ladder::readiness_until`).
const MIN_READINESS_WAIT: Duration = Duration::from_secs(1);

impl<S, B> Ladder<S, B> {
    /// The operation is a resume of one whose answer was cut after
    /// content, paid for by `grant` as a retry is: given back, as a
    /// retry's, when it succeeds.
    pub(crate) fn paid_by(&mut self, grant: Grant) {
        self.grant = Some(grant);
    }

    /// Gives the ladder the service and request template its retries use.
    pub(crate) fn retries_with(&mut self, again: Option<Again<S, B>>) {
        self.again = again;
    }

    pub(crate) fn new(
        shared: Arc<Shared>,
        route: RouteId,
        deadline: Option<Deadline>,
        other_routes: bool,
        bills: bool,
        asked: Asked<impl FnOnce()>,
        // When the operation started: the first attempt's start.
        now: &mut Now,
    ) -> Self {
        let Asked { facts, read_ahead } = asked;
        let span = operation_span(&route, facts.as_ref());
        let mut operation_named = facts.as_ref().is_some_and(|f| f.model().is_some());
        // An OpenTelemetry span's name is taken as it starts, and the
        // operation's starts as its first attempt's span is made below:
        // a model only the body names is read now, when the body is at
        // hand (in memory), not once it was sent. Only when a subscriber
        // records the span: else the body is read as it is sent, as ever.
        if !operation_named
            && !span.is_disabled()
            && let Some(facts) = &facts
        {
            read_ahead();
            if let Some(model) = facts.model() {
                name_span(&span, operation_name(facts), model);
                operation_named = true;
            }
        }
        let attempt_span = attempt_span(&span, &route, facts.as_ref(), 1, Duration::ZERO);
        let attempt_named = facts.as_ref().is_some_and(|f| f.model().is_some());
        Ladder {
            shared,
            // Given after the first call (`retries_with`).
            again: None,
            next_body: None,
            route,
            deadline,
            window: None,
            attempt: 1,
            moves: 0,
            cooldown_waits: 0,
            attempt_started: deadline.map(|_| now.get()),
            slept: Duration::ZERO,
            last_route_shaped: None,
            other_routes,
            bills,
            grant: None,
            unsent: false,
            // The first attempt is sent as the ladder is made.
            in_flight: true,
            judged: false,
            nested: false,
            receipt: Receipt::default(),
            span,
            attempt_span,
            operation_named,
            attempt_named,
            facts,
            #[cfg(feature = "metrics")]
            started: now.get(),
        }
    }

    /// The ladder's attempts run under `window` (see
    /// [`RetryPolicy::fallback_reserve`](crate::RetryPolicy::fallback_reserve)).
    /// Set in place: the ladder is large (about 900 bytes), and moving it
    /// to set one field copies all of it.
    pub(crate) fn within(&mut self, window: Option<Deadline>) {
        self.window = window;
    }

    /// The ladder runs under another one, which counts the operation.
    pub(crate) fn nested(&mut self) {
        self.nested = true;
    }

    /// Before each attempt is sent: what a layer below said of the last
    /// one ([`CallBelow`]) is no longer so. Only by the outermost ladder,
    /// which reads it: a nested one under a fallback's route would erase
    /// the route the fallback named.
    fn clear_call_below(&self) {
        if !self.nested
            && let Some(facts) = &self.facts
        {
            facts.attempt_sent();
        }
    }

    /// A nested ladder stops having a call in flight until its retry (its
    /// backoff, a cooldown waited out, its service's readiness): it says
    /// so to the outermost ladder ([`RequestFacts::call_held`]), whose own
    /// attempt (this ladder's run) is still in flight by its word. A
    /// caller that gives up meanwhile cancelled no upstream call. The
    /// outermost ladder has none in flight itself then, and reads nothing.
    fn between_calls(&self) {
        if self.nested
            && let Some(facts) = &self.facts
        {
            facts.call_held();
        }
    }

    /// A nested ladder sends its retry to its route: what it said as it
    /// stopped ([`between_calls`](Self::between_calls)) is no longer so,
    /// and a layer below that chooses again (a route set) speaks after.
    /// Its first attempt says nothing: the layer above that sent it (a
    /// fallback, a route set) named the route as it did.
    fn retry_sent(&self) {
        if self.nested
            && let Some(facts) = &self.facts
        {
            facts.call_sent(&self.route);
        }
    }

    /// The attempt that ended reported `usage`: on its span, and the
    /// operation's total on the operation's — the usage of its billed
    /// attempts, this one's and every earlier one's (the receipt's
    /// [`usage`](Receipt::usage)), what the operation was charged. Call it
    /// once the attempt is recorded. A request the provider does not bill
    /// (a token count) has no billed attempt: its span says what the
    /// answer reported, as the attempt's does.
    fn record_usage(&self, usage: Usage) {
        span::record_end(&self.attempt_span, None, Some(usage), None);
        if self.span.is_disabled() {
            return;
        }
        let billed = self
            .receipt
            .attempts
            .iter()
            .any(|attempt| attempt.billed_usage().is_some());
        let total = if billed { self.receipt.usage() } else { usage };
        span::record_end(&self.span, None, Some(total), None);
    }

    /// Whether `failure` is an attempt stopped at the ladder's window: the
    /// operation's deadline has not passed, and what is left of it is the
    /// fallback's.
    fn stopped_at_window(&self, failure: &Failure) -> bool {
        self.window.is_some()
            && failure.code() == Code::DeadlineExceeded
            && self.deadline.is_some_and(|deadline| !deadline.is_expired())
    }

    fn succeeded<ResB>(&mut self, response: &mut Response<ResB>) {
        (self.in_flight, self.judged) = (false, true);
        if seawall_core::is_answer_status(response.status()) {
            self.shared.budget.succeeded(self.grant);
        } else {
            // Delivered all the same (the ladder cannot judge a raw
            // status), but no sign of a healthy upstream to earn retries
            // back with: a 503 storm would refill the budget it drains.
            unclassified(response.status());
        }
        // A layer that chose the route per attempt (a route set) names the
        // one that answered; else it is the ladder's.
        let route = response
            .extensions()
            .get::<RouteId>()
            .unwrap_or(&self.route)
            .clone();
        self.attempt_on(&route);
        let attempt = Attempt::answered(route.clone(), self.slept, response);
        let inner = response.extensions_mut().remove::<Receipt>();
        if self.record(attempt, inner) == Recorded::Here {
            metrics::attempt(&route, None);
            if self.bills
                && let Some(usage) = response.extensions().get::<Usage>()
            {
                metrics::tokens(&route, *usage);
            }
        }
        self.receipt.stop = Some(StopReason::Succeeded);
        self.record_model();
        if let Some(usage) = response.extensions().get::<Usage>() {
            self.record_usage(*usage);
        }
        if let Some(finish) = response.extensions().get::<seawall_core::Finish>() {
            for span in [&self.attempt_span, &self.span] {
                span.record("gen_ai.response.finish_reasons", &*finish.reason);
            }
        }
        self.span
            .record("seawall.stop_reason", StopReason::Succeeded.as_str());
        self.span.record("seawall.attempts", self.attempt);
        #[cfg(feature = "metrics")]
        self.count_operation(metrics::Outcome::Success);
        tracing::debug!(
            target: "seawall::retry",
            attempt = self.attempt,
            delay_ms = millis(self.slept),
            budget_tokens = self.shared.budget.tokens(),
            stop_reason = StopReason::Succeeded.as_str(),
            "attempt succeeded"
        );
        response
            .extensions_mut()
            .insert(std::mem::take(&mut self.receipt));
    }

    /// An attempt failed: retry after a delay, or stop with the error to
    /// return.
    fn failed(&mut self, err: BoxError) -> Next {
        self.in_flight = false;
        // A route set below says another of its members can take the next
        // attempt: see `AnotherRoute`.
        let (failure, another) = match err.downcast::<AnotherRoute>() {
            Ok(signal) => (Ok(signal.into_failure()), true),
            Err(err) => (Failure::extract(err), false),
        };
        let (failure, at_window) = match failure {
            // The time left is the fallback's: for it this attempt timed
            // out, and is to fail over on, where `deadline_exceeded` would
            // tell it the operation is over.
            Ok(failure) if self.stopped_at_window(&failure) => (timed_out_at_window(failure), true),
            Ok(failure) => (failure, false),
            Err(other) => {
                // Unclassified: nobody said it is safe to repeat. Recorded
                // as an attempt and an operation that failed, `unknown`
                // (no classifier below to name it: the ladder alone), and
                // returned with the receipt: the attempts before it were
                // billed all the same. A ladder below gave its own.
                let (other, inner) = Receipt::detach(other);
                let attempt = Attempt::new(self.route.clone(), Some(Code::Unknown), self.slept);
                if self.record(attempt, inner) == Recorded::Here {
                    metrics::attempt(&self.route, Some(Code::Unknown));
                }
                self.record_model();
                self.attempt_span
                    .record("error.type", Code::Unknown.as_str());
                self.attempt_span.record("otel.status_code", "ERROR");
                self.stop_operation(Code::Unknown, StopReason::NotRetryable);
                tracing::debug!(
                    target: "seawall::retry",
                    attempt = self.attempt,
                    stop_reason = StopReason::NotRetryable.as_str(),
                    "attempt failed with an unclassified error"
                );
                return Next::Stop(self.take_receipt(StopReason::NotRetryable).attach(other));
            }
        };
        // The route the failure names (a breaker's refusal names its own),
        // else the ladder's.
        let route = failure
            .route()
            .cloned()
            .unwrap_or_else(|| self.route.clone());
        let mut failure = failure.with_route(route.clone());
        // A generation cut before its answer came, after its request went
        // out whole, runs on and is billed: the receipt says it may have
        // been. Read here, on a failure: a success reads nothing more.
        let unanswered = self
            .facts
            .as_ref()
            .is_some_and(|facts| Attempt::unanswered_after_sending(self.bills, facts, &failure));
        let attempt =
            Attempt::failed(route.clone(), self.slept, &failure).with_may_be_billed(unanswered);
        let billed = attempt.billed && self.bills;
        // Read before this attempt is recorded: a ladder below may hand a
        // receipt of several attempts on the route, all this one's.
        let first_on_route = !self.receipt.attempts.iter().any(|a| a.route == route);
        let inner = failure.receipt_mut().take().map(|inner| *inner);
        // A refusal waited out called no one: no upstream attempt, and
        // the call after the wait is no retry (see `judge`).
        let waits_out_cooldown = self.waits_out_cooldown(&failure, another);
        if self.record(attempt, inner) == Recorded::Here && !waits_out_cooldown {
            metrics::attempt(&route, Some(failure.code()));
            // A unary answer that failed anyway (refused, filtered, empty)
            // counted what it cost, as a whole answer's usage is counted; a
            // stream's (its events read) the stream guard counts at its end.
            if billed
                && failure.evidence().events == 0
                && let Some(usage) = failure.usage()
            {
                metrics::tokens(&route, usage);
            }
        }
        // What a billed failure cost, on its spans as a success's is.
        if billed && let Some(usage) = failure.usage() {
            self.record_usage(usage);
        }
        self.attempt_on(&route);
        self.record_model();
        self.attempt_span
            .record("error.type", failure.code().as_str());
        self.attempt_span.record("otel.status_code", "ERROR");
        self.attempt_span
            .record("seawall.action", failure.action().as_str());
        if let Some(hint) = failure.retry_after() {
            self.attempt_span
                .record("seawall.retry_after_ms", millis(hint));
        }
        // A refusal's code is the same whatever cooled the route: what did
        // tells a quota wall from a rate limit.
        let cooled_by = failure.cooled_by().map(Code::as_str);
        if let Some(cause) = cooled_by {
            self.attempt_span.record("seawall.cooled_by", cause);
        }
        let verdict = if at_window {
            Err(StopReason::Deadline)
        } else {
            self.judge(
                &failure,
                route.clone(),
                another,
                first_on_route,
                waits_out_cooldown,
            )
        };
        match &verdict {
            Ok(_) if waits_out_cooldown => {}
            Ok(_) => metrics::retry(&route, failure.code()),
            Err(reason) => {
                if *reason == StopReason::Budget {
                    metrics::budget_exhausted();
                }
                self.stop_operation(failure.code(), *reason);
            }
        }
        tracing::debug!(
            target: "seawall::retry",
            attempt = self.attempt,
            class = failure.class().as_str(),
            code = failure.code().as_str(),
            cooled_by,
            delay_ms = verdict.as_ref().ok().map(|&delay| millis(delay)),
            retry_after_ms = failure.retry_after().map(millis),
            budget_tokens = self.shared.budget.tokens(),
            stop_reason = verdict.as_ref().err().map(|reason| reason.as_str()),
            "attempt failed"
        );
        match verdict {
            Ok(delay) => {
                self.slept = delay;
                Next::Retry(delay)
            }
            Err(reason) => {
                let mut failure = match reason {
                    StopReason::Failover => failure.with_action(Action::Failover),
                    // The budget refused the retry this failure asks for:
                    // a caller that obeyed `Retry` would make it anyway,
                    // and the shedding the budget is for would not happen.
                    // Somewhere else may still answer.
                    StopReason::Budget if failure.action() == Action::Retry => {
                        failure.with_action(Action::Failover)
                    }
                    _ => failure,
                };
                self.hand_receipt(&mut failure, reason);
                Next::Stop(Box::new(failure))
            }
        }
    }

    /// The delay before the next attempt, or why there is none.
    ///
    /// `another`: the service below can send the next attempt to another
    /// route ([`AnotherRoute`]). Then a failure that condemns only its route
    /// ([`Failure::moves_route`]) does not end the ladder: what would have
    /// stopped it (an action other than retry, a promotion, a hint past the
    /// cap) moves the next attempt at once, and a plain retry waits the
    /// backoff, not the failed route's hint. Replay, the deadline and the
    /// budget still bound it, and attempts do — but the move off a member
    /// that failed for the first time in this operation is not one of
    /// them when the member asked to be left alone for a while (a rate
    /// limit with its hint, a quota wall, rejected keys): it is the set's
    /// move to another member, as a fallback chain's hop is the chain's,
    /// not a retry of what failed. Counted, a set of as many members as the
    /// ladder has attempts, each rate-limited for a moment, ended the ladder
    /// on the last member's failure with every member about to come back
    /// and the deadline far off. Each member gives at most one such move,
    /// so a set of `n` members makes at most `max_attempts + n` calls; a
    /// member that fails otherwise (a 503, silence) spends an attempt, so
    /// an outage of every member costs no more calls than one route's.
    /// `first_on_route`: no attempt of this operation had gone to `route`
    /// before this one; `waits_out_cooldown`: the failure is a refusal to
    /// wait out ([`waits_out_cooldown`](Self::waits_out_cooldown)).
    fn judge(
        &mut self,
        failure: &Failure,
        route: RouteId,
        another: bool,
        first_on_route: bool,
        waits_out_cooldown: bool,
    ) -> Result<Duration, StopReason> {
        let moving = another && failure.moves_route();
        // Only a member that asked to be left alone for a while (a rate
        // limit with its hint, a quota wall, rejected keys) gives a free
        // move: a set whose members all fail otherwise (an outage's 503s,
        // silence) stays bounded by the ladder's attempts.
        if moving && failure.cooldown(std::time::SystemTime::now()).is_some() && first_on_route {
            self.moves += 1;
        }
        if waits_out_cooldown {
            if self.cooldown_waits == 0 {
                self.moves += 1;
            }
            self.cooldown_waits += 1;
        }
        if failure.action() != Action::Retry && !moving && !waits_out_cooldown {
            // A failure the server told not to retry (a gRPC pushback or
            // `x-should-retry: false` overriding what would be a retry) is
            // still a failure the budget hears of: gRFC A6 counts for
            // throttling every RPC "that receive[s] a pushback response
            // indicating not to retry", the server's loudest call for less
            // load. Only the gRPC bucket charges a failure no retry
            // follows.
            let told_not_to = Action::decide(failure.class(), failure.code(), failure.evidence())
                == Action::Retry;
            if told_not_to {
                self.shared
                    .budget
                    .failed(failure.code().is_timeout(), false);
            }
            return Err(StopReason::NotRetryable);
        }
        let blocker = self.next_attempt(failure, route, moving);
        if waits_out_cooldown {
            // Nothing reached the provider: the call after the wait is this
            // operation's first, not a retry the budget bounds (a burst
            // refused in one cooldown would otherwise drain it and starve
            // the real retries after). A retry granted before was not
            // sent either: what it withdrew goes back.
            if let Some(grant) = self.grant.take() {
                self.shared.budget.unspent(grant);
            }
            return blocker;
        }
        let timeout = failure.code().is_timeout();
        // The budget hears of every retryable failure (gRPC counts them
        // all), but grants only a retry the ladder would make.
        let grant = self.shared.budget.failed(timeout, blocker.is_ok());
        let delay = blocker?;
        match grant {
            Some(grant) => {
                self.grant = Some(grant);
                self.unsent = true;
                Ok(delay)
            }
            None => {
                self.next_body = None;
                Err(StopReason::Budget)
            }
        }
    }

    /// The breaker refusing the only route while it cools down after a
    /// rate limit says how long the provider asked to be left alone: that
    /// is a hint to wait, as the 429 that cooled it was for the operation
    /// that got it. Failing over there would end every other operation on
    /// the route at once. (A cooldown after a quota wall or rejected
    /// credentials is permanent, as its cause: not waited.)
    fn waits_out_cooldown(&self, failure: &Failure, another: bool) -> bool {
        !another
            && !self.other_routes
            && failure.code() == Code::RouteCoolingDown
            && failure.class() == Class::Transient
            && failure.retry_after().is_some()
    }

    /// The backoff's exponent for the delay after the attempt that just
    /// ended: the attempts before it, less the refusals waited out, which
    /// called no one.
    fn retries_before(&self) -> u32 {
        (self.attempt - 1).saturating_sub(self.cooldown_waits)
    }

    /// Everything but the budget: promotion, attempts, replay, the hint and
    /// the deadline. Prepares the next request when a retry fits.
    fn next_attempt(
        &mut self,
        failure: &Failure,
        route: RouteId,
        moving: bool,
    ) -> Result<Duration, StopReason> {
        let policy = &self.shared.policy;
        let now = Instant::now();
        let shape = failure.is_route_shaped().then(|| (failure.code(), route));
        let repeated = shape.is_some() && shape == self.last_route_shaped;
        self.last_route_shaped = shape;
        let consumed_most = match (self.deadline, self.attempt_started) {
            (Some(deadline), Some(started)) => {
                let left = deadline.instant().saturating_duration_since(started);
                let took = now.saturating_duration_since(started);
                !left.is_zero()
                    && took.as_secs_f64() > policy.failover_fraction * left.as_secs_f64()
            }
            _ => false,
        };
        // With another route to go to, a route that answered with silence
        // is left after one attempt: a second would re-buy the silence.
        let silent_with_elsewhere = (self.other_routes || moving) && failure.is_zero_byte_timeout();
        let promoted = repeated || consumed_most || silent_with_elsewhere;
        if promoted && !moving {
            return Err(StopReason::Failover);
        }
        // Leave the route at once: what would end a ladder on one route.
        let move_now = moving && (promoted || failure.action() != Action::Retry);
        let again = match &self.again {
            Some(again) if self.attempt - self.moves < policy.max_attempts => again,
            _ => return Err(StopReason::Attempts),
        };
        let Some(body) = again.template.body().replay() else {
            return Err(StopReason::NotReplayable);
        };
        let backoff = || {
            self.shared
                .random
                .with(|rng| policy.backoff.delay(self.retries_before(), self.slept, rng))
        };
        // A hint at the clamp (`MAX_RETRY_HINT`) is "a week or more": the
        // parsers cut every longer wait to it, so a 30-day quota wall reads
        // as 7 days. Slept on, it calls the route again three weeks early,
        // however long a wait the policy allows.
        let too_long = |hint: Duration| hint > policy.max_retry_after || hint >= MAX_RETRY_HINT;
        // The least wait, and how a spread above it is drawn (the hint is
        // a floor: nothing drawn ever comes back before it).
        let (floor, above) = match failure.retry_after() {
            _ if move_now => (Duration::ZERO, Above::Nothing),
            // The hint is the failed route's; the next attempt goes elsewhere.
            Some(hint) if too_long(hint) && moving => (Duration::ZERO, Above::Nothing),
            Some(hint) if too_long(hint) => return Err(StopReason::HintTooLong),
            // With a fallback to go to, a wait past the backoff's cap is
            // the fallback's cue (see `Scope`'s table): the operations the
            // breaker refuses meanwhile are served there at once, and this
            // one would sleep the hint out to call the same route again.
            Some(hint) if self.other_routes && !moving && hint > policy.backoff.cap() => {
                return Err(StopReason::HintTooLong);
            }
            // A breaker's refusal while the route cools down names the
            // instant the cooldown ends, the same for every operation it
            // refused meanwhile: waited out exactly, they all called the
            // route in the same millisecond, the burst that meets the next
            // 429. The backoff's jitter spreads them after it, cut to what
            // the bounds leave (below: a 59 s cooldown and a 30 s backoff
            // slept 89 s under a 60 s `max_retry_after`).
            Some(hint) if !moving && failure.code() == Code::RouteCoolingDown => {
                (hint, Above::Backoff(backoff()))
            }
            // The hint is the earliest the route will answer, never leave to
            // come back sooner than the backoff: a `Retry-After: 0` (or 1 ms)
            // on a 429 would otherwise fire every attempt at once. The SDKs
            // ignore such hints and back off too. A hint longer than the
            // backoff is the same for every operation the route told it
            // (twenty told `Retry-After: 2` all came back at 2 000 ms and
            // met the next 429 together): a draw spreads them above it, as
            // a route set spreads the calls waiting for a member.
            Some(hint) if !moving => match backoff() {
                backoff if backoff > hint => (backoff, Above::Nothing),
                // Lockstep is what `Jitter::None` asks for.
                _ if policy.backoff.jitter() == Jitter::None => (hint, Above::Nothing),
                _ => (hint, Above::Spread),
            },
            _ => (backoff(), Above::Nothing),
        };
        // What the bounds leave above the floor: a wait runs past
        // `max_retry_after` (the longest hint slept; the hint itself is
        // within it) by at most `MAX_SPREAD`, so operations told a hint at
        // the bound still come back apart, and no wait runs past the
        // deadline.
        let mut spare = match above {
            Above::Nothing => Duration::ZERO,
            _ => policy
                .max_retry_after
                .saturating_sub(floor)
                .max(seawall_internal::random::MAX_SPREAD),
        };
        if let Some(deadline) = self.deadline {
            let latest = deadline.instant().checked_sub(policy.fallback_reserve);
            let ready_by = now
                .checked_add(floor)
                .and_then(|at| at.checked_add(policy.min_attempt_time));
            match (latest, ready_by) {
                (Some(latest), Some(ready_by)) if ready_by <= latest => {
                    spare = spare.min(latest - ready_by);
                }
                // The floor does not fit: no spread makes it fit.
                _ => return Err(StopReason::Deadline),
            }
        }
        // What is drawn above the floor is cut to fit the bounds, never a
        // reason to stop: the floor fits, and a retry that fits is not
        // given up for a draw meant only to keep operations apart.
        let delay = match above {
            Above::Nothing => floor,
            Above::Backoff(backoff) => floor.saturating_add(backoff.min(spare)),
            Above::Spread => self.shared.random.spread(floor, spare),
        };
        self.next_body = Some(body);
        Ok(delay)
    }

    /// Records one attempt of this ladder, `own` as the ladder saw it,
    /// unless a layer below kept a receipt of it (a ladder that may nest,
    /// a fallback): then its attempts, in order, are the record, the first
    /// carrying this ladder's wait before it, as a fallback joins a route's
    /// receipt. Dropped, a retry the inner ladder made, billed, would be
    /// missing from what users bill and audit from. Only a request the
    /// provider bills is billed, whoever recorded the attempt.
    ///
    /// Says who recorded it: the layer that kept the receipt also counted
    /// its calls' attempts and tokens in the metrics, and counted again
    /// here, one call under two ladders (or a ladder over a fallback) was
    /// two attempts and twice its tokens.
    fn record(&mut self, own: Attempt, inner: Option<Receipt>) -> Recorded {
        let Some(mut inner) = inner.filter(|inner| !inner.attempts.is_empty()) else {
            let billed = own.billed && self.bills;
            self.receipt.push(own.with_billed(billed));
            return Recorded::Here;
        };
        for attempt in inner.attempts.as_mut_slice() {
            attempt.billed &= self.bills;
        }
        // The inner stop this takes is replaced by this ladder's own when
        // it stops.
        self.receipt.append_after(inner, self.slept);
        Recorded::Below
    }

    /// Before a sleep: what the retries' service reserved in `poll_ready`
    /// and did not spend — a layer below refused the attempt without
    /// calling on (a breaker while its route cools down, an expired
    /// deadline) — is given back by dropping the instance that holds it,
    /// so an operation asleep holds no `Buffer` slot or `ConcurrencyLimit`
    /// permit that the calls to healthy routes wait for. The clone kept in
    /// its place knows what it knew (a breaker's last route).
    fn release_readiness(&mut self)
    where
        S: Clone,
    {
        if let Some(again) = &mut self.again {
            again.service = again.service.clone();
        }
    }

    /// Waits for the service to be ready again, then makes the next attempt.
    /// `held`: the service kept the attempt waiting for its readiness
    /// after the backoff, which may have taken the time the attempt was
    /// planned to have ([`RetryPolicy::min_attempt_time`](crate::RetryPolicy::min_attempt_time)):
    /// then it is made only if that time is still left. An attempt sent
    /// with milliseconds left cannot finish and may be billed.
    fn poll_call(&mut self, cx: &mut Context<'_>, held: bool) -> Poll<Result<S::Future, BoxError>>
    where
        S: Service<Request<ReplayBody<B>>>,
        S::Error: Into<BoxError>,
    {
        let again = self
            .again
            .as_mut()
            .expect("only a ladder that can retry waits for readiness");
        if let Err(error) = ready!(again.service.poll_ready(cx)) {
            return Poll::Ready(Err(self.unready(error.into(), StopReason::NotRetryable)));
        }
        if held && self.last_start().is_some_and(|last| Instant::now() > last) {
            return Poll::Ready(Err(self.not_ready_in_time()));
        }
        let body = self.next_body.take().expect("a retry prepared its body");
        self.attempt += 1;
        self.attempt_started = self.deadline.map(|_| Instant::now());
        self.attempt_span = attempt_span(
            &self.span,
            &self.route,
            self.facts.as_ref(),
            self.attempt,
            self.slept,
        );
        self.attempt_named = self.facts.as_ref().is_some_and(|f| f.model().is_some());
        let again = self.again.as_mut().expect("checked above");
        let mut request = again.template.request(body);
        previous_attempts(&mut request, self.attempt - 1);
        self.mark(&mut request);
        self.retry_sent();
        // Inside the new attempt's span (the operation's is entered).
        let _attempt = self.attempt_span.clone().entered();
        let again = self.again.as_mut().expect("checked above");
        let future = again.service.call(request);
        self.unsent = false;
        self.in_flight = true;
        Poll::Ready(Ok(future))
    }

    /// The attempt's span names the route that answered or failed when it
    /// is not the ladder's (a route set's member, a breaker's route).
    fn attempt_on(&self, route: &RouteId) {
        if *route != self.route {
            seawall_core::span::record_address(&self.attempt_span, route);
        }
    }

    /// The latest an attempt may start: `min_attempt_time` before the
    /// ladder's window (the time kept for a fallback taken out) or its
    /// deadline.
    fn last_start(&self) -> Option<Instant> {
        let bound = self.window.or(self.deadline)?.instant();
        Some(
            bound
                .checked_sub(self.shared.policy.min_attempt_time)
                .unwrap_or(bound),
        )
    }

    /// The timer a wait for readiness ends at: when an attempt can no
    /// longer start in the ladder's time ([`last_start`](Self::last_start)),
    /// and never later than `max_retry_after` from now — the longest the ladder
    /// waits for a route on its word, and as long as it waits for one that
    /// is not ready (a breaker gating its readiness through a break of
    /// minutes, an isolated route: without a deadline the wait had no end).
    fn readiness_until(&self) -> Option<Instant> {
        // Never under a second: a `max_retry_after` of zero ("never sleep a
        // hint out") is no reason to fail a service that is unready for a
        // moment (a `Buffer`, a `ConcurrencyLimit`).
        let wait = self.shared.policy.max_retry_after.max(MIN_READINESS_WAIT);
        let cap = Instant::now().checked_add(wait);
        match (self.last_start(), cap) {
            (Some(last), Some(cap)) => Some(last.min(cap)),
            (Some(last), None) => Some(last),
            (None, cap) => cap,
        }
    }

    /// The service was still not ready for the next attempt when the wait
    /// ended: at `max_retry_after` before the ladder's time, a timeout a
    /// fallback takes over (stopped as a wait too long); at the window kept
    /// for a fallback, likewise (stopped by the deadline); else at the
    /// operation's `deadline_exceeded`. The receipt of the attempts made
    /// goes with it.
    fn not_ready_in_time(&mut self) -> BoxError {
        let time_up = self.last_start().is_some_and(|last| Instant::now() >= last);
        let (failure, stop) = match self.window {
            _ if !time_up => (
                Failure::new(Code::Timeout)
                    .with_action(Action::Failover)
                    .with_message("the service was not ready for a retry within max_retry_after"),
                StopReason::HintTooLong,
            ),
            Some(_) => (
                Failure::new(Code::Timeout)
                    .with_action(Action::Failover)
                    .with_message("the service was not ready for a retry within the ladder's time"),
                StopReason::Deadline,
            ),
            None => (
                Failure::new(Code::DeadlineExceeded)
                    .with_message("the service was not ready for a retry before the deadline"),
                StopReason::Deadline,
            ),
        };
        self.unready(Box::new(failure.with_route(self.route.clone())), stop)
    }

    /// The operation ends with `failure`, which takes the receipt, stopped
    /// for `stop`.
    fn hand_receipt(&mut self, failure: &mut Failure, stop: StopReason) {
        *failure.receipt_mut() = Some(Box::new(self.take_receipt(stop)));
    }

    /// The receipt, stopped for `stop`, to return with the operation's
    /// error.
    fn take_receipt(&mut self, stop: StopReason) -> Receipt {
        self.receipt.stop = Some(stop);
        std::mem::take(&mut self.receipt)
    }

    /// The service failed its readiness before a retry: the operation ends
    /// with that error (no attempt was sent), recorded as a failed
    /// operation, with the receipt of the attempts made (attached to an
    /// error that is no seawall failure: [`Receipt::attach`]).
    fn unready(&mut self, error: BoxError, stop: StopReason) -> BoxError {
        let code = Failure::find(&*error).map_or(Code::Unknown, Failure::code);
        self.stop_operation(code, stop);
        match Failure::extract(error) {
            Ok(mut failure) => {
                self.hand_receipt(&mut failure, stop);
                Box::new(failure)
            }
            Err(other) => self.take_receipt(stop).attach(other),
        }
    }

    /// The operation failed with `code`, for `reason`: its span says so,
    /// and the operation is counted, once.
    fn stop_operation(&mut self, code: Code, reason: StopReason) {
        self.judged = true;
        self.span.record("error.type", code.as_str());
        self.span.record("otel.status_code", "ERROR");
        self.span.record("seawall.stop_reason", reason.as_str());
        self.span.record("seawall.attempts", self.attempt);
        #[cfg(feature = "metrics")]
        self.count_operation(metrics::Outcome::Failure);
    }

    /// The operation's duration, with how it ended: once per operation,
    /// by the outermost ladder. Not by a continuation's (a resumed
    /// stream's): the caller's operation was recorded by the ladder that
    /// handed the stream on, when it judged it (at its first content, or
    /// its head), and a continuation is a retry of it, counted as one as
    /// it starts.
    #[cfg(feature = "metrics")]
    fn count_operation(&self, outcome: metrics::Outcome) {
        if !self.nested && !self.facts.as_ref().is_some_and(RequestFacts::continues) {
            metrics::operation(self.started.elapsed(), outcome);
        }
    }

    /// Hands the attempt's spans down with its request, so the layer that
    /// reads a streamed body records how it ended on them (and keeps the
    /// attempt's span open until then); with the `traceparent` feature,
    /// the request also carries the attempt span's W3C trace context. Only
    /// when a subscriber records the spans: else nothing is inserted.
    /// Called as each attempt is sent, it also clears what a layer below
    /// said of the last one ([`clear_call_below`](Self::clear_call_below)).
    pub(crate) fn mark(&self, request: &mut Request<ReplayBody<B>>) {
        self.clear_call_below();
        if self.attempt_span.is_disabled() {
            return;
        }
        #[cfg(feature = "traceparent")]
        crate::traceparent::inject(&self.attempt_span, request.headers_mut());
        request.extensions_mut().insert(
            AttemptSpans::new(self.attempt_span.clone(), self.span.clone())
                .with_earlier_usage(self.receipt.usage()),
        );
    }

    /// Runs `call` inside the operation's and the attempt's spans, so what
    /// the inner layers open while calling is the attempt's child.
    pub(crate) fn in_attempt<T>(&self, call: impl FnOnce() -> T) -> T {
        if self.attempt_span.is_disabled() {
            return call();
        }
        let _operation = self.span.enter();
        self.attempt_span.in_scope(call)
    }
}

/// `failure`, an attempt stopped at the ladder's window, as the fallback
/// is to read it: a timeout to fail over on, where `deadline_exceeded`
/// would say the operation is over. The same attempt under another name
/// ([`Failure::with_code`]): what it knew stays — its evidence, the usage
/// (whole or partial) and request id the provider reported, whether a 2xx
/// answer generated anything (billed as it was), and the receipt of a
/// ladder below, whose attempts are this one's record.
fn timed_out_at_window(failure: Failure) -> Failure {
    failure
        .with_code(Code::Timeout)
        .with_message("the attempt ran to the time kept for the fallback")
        .with_action(Action::Failover)
}

/// A gRPC retry says how many attempts came before it in
/// `grpc-previous-rpc-attempts`, as gRFC A6's own retries do ("will not be
/// present on the first RPC, will be 1 for the second RPC"): the server
/// can tell a retry from a new call. Other requests get nothing.
fn previous_attempts<B>(request: &mut Request<B>, previous: u32) {
    let grpc = request
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| seawall_internal::headers::is_grpc_media(value.as_bytes()));
    if grpc {
        request.headers_mut().insert(
            http::HeaderName::from_static("grpc-previous-rpc-attempts"),
            http::HeaderValue::from(previous),
        );
    }
}

impl<S, B> Drop for Ladder<S, B> {
    fn drop(&mut self) {
        if let (true, Some(grant)) = (self.unsent, self.grant) {
            self.shared.budget.unspent(grant);
        }
        if !self.judged {
            self.cancelled();
        }
    }
}

impl<S, B> Ladder<S, B> {
    /// Dropped before its outcome (the caller's own timeout, a client
    /// gone): the attempt in flight was sent, and is counted `cancelled`;
    /// the operation's duration is recorded with the outcome `cancelled`.
    /// A caller that stops waiting broke nothing: the spans say
    /// `cancelled` without an error status. Under an outer ladder, which
    /// is dropped with this one and counts its own attempt in flight (this
    /// ladder's operation), only the spans are this one's.
    ///
    /// The attempt in flight is the ladder's to count only as far as a
    /// layer below sent it ([`CallBelow`]): under the member a route set
    /// sent it to, or the route a fallback did, as its answer or failure
    /// would have been counted; not at all when nothing was sent (a route
    /// set or a fallback waiting for a route to come back, a route's
    /// service not ready for the call). Read on a cancel only: a ladder
    /// over a plain service finds nothing said, and counts its own route.
    #[cold]
    fn cancelled(&mut self) {
        if self.in_flight {
            let below = self
                .facts
                .as_ref()
                .map_or(CallBelow::Unrecorded, RequestFacts::call_below);
            let sent = match below {
                CallBelow::Unrecorded => Some(self.route.clone()),
                CallBelow::Held => None,
                CallBelow::Sent(route) => Some(route),
            };
            if let Some(route) = sent {
                if !self.nested {
                    metrics::attempt(&route, Some(Code::Cancelled));
                }
                self.attempt_on(&route);
            }
            self.attempt_span
                .record("error.type", Code::Cancelled.as_str());
        }
        self.span.record("error.type", Code::Cancelled.as_str());
        self.span.record("seawall.attempts", self.attempt);
        #[cfg(feature = "metrics")]
        self.count_operation(metrics::Outcome::Cancelled);
    }
}

impl<S, B> Ladder<S, B> {
    /// The model only the body names, read as it was sent (a body not at
    /// hand when the operation started: an upload still streaming, one
    /// larger than the recording), is recorded on each span that does not
    /// carry it yet when an attempt ends (the first may end before its
    /// body was sent: a refused connection, a cooling route), once each.
    fn record_model(&mut self) {
        if self.operation_named && self.attempt_named {
            return;
        }
        // Nothing to record into: the model is not even scanned.
        if self.span.is_disabled() && self.attempt_span.is_disabled() {
            return;
        }
        let Some(facts) = &self.facts else { return };
        let Some(model) = facts.model() else { return };
        let operation = operation_name(facts);
        if !self.operation_named {
            name_span(&self.span, operation, model);
        }
        if !self.attempt_named {
            name_span(&self.attempt_span, operation, model);
        }
        (self.operation_named, self.attempt_named) = (true, true);
    }
}

/// Records `model` on `span`, and its OpenTelemetry name
/// `"{operation} {model}"`: taken by an OpenTelemetry layer while the span
/// has not started (nothing entered it or asked for its context, no child
/// was made); a started one is renamed through its OpenTelemetry context
/// with the `traceparent` feature, and keeps its first name without it.
fn name_span(span: &tracing::Span, operation: &str, model: &str) {
    let name = SpanName {
        operation,
        model: Some(model),
    };
    span.record("gen_ai.request.model", &*span::model_field(model));
    span.record("otel.name", tracing::field::display(name));
    #[cfg(feature = "traceparent")]
    crate::traceparent::rename(span, name);
}

/// Set once a response proved no classifier is below: said once per
/// process, as every such response would say it again.
static SAID_UNCLASSIFIED: AtomicBool = AtomicBool::new(false);

/// An answer whose status no classifier judged: without `ClassifyLayer`
/// below, a 503 or a 429 is a response, never a retryable failure.
#[cold]
fn unclassified(status: http::StatusCode) {
    if !SAID_UNCLASSIFIED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "seawall::retry",
            status = status.as_u16(),
            "a response with an error status reached the retry ladder: no ClassifyLayer \
             below it, so statuses are not failures; it is delivered, not retried, and \
             earns the retry budget nothing (said once)"
        );
    }
}

/// The GenAI operation a request performs, by its provider's endpoint.
fn operation_name(facts: &RequestFacts) -> &'static str {
    match facts.provider() {
        Some(Provider::Gemini) => "generate_content",
        Some(_) => "chat",
        None => "request",
    }
}

/// One span per operation, client kind, with OpenTelemetry's GenAI
/// attribute names (see the crate docs' table). An OpenTelemetry span's
/// name is taken when it starts: it is `"{operation} {model}"` when the
/// model is known as it is made (Gemini's path,
/// `RequestFacts::with_model`, a body already sent), else `"{operation}"`,
/// with the model recorded before it starts when the body is at hand
/// (`Ladder::new`), or once the body naming it was sent (`name_span`).
fn operation_span(route: &RouteId, facts: Option<&RequestFacts>) -> tracing::Span {
    let operation = facts.map_or("request", operation_name);
    let model = facts.and_then(RequestFacts::model);
    // The fields' values are only worked out when a subscriber records
    // the span: the address split and the provider's name are in them.
    tracing::info_span!(
        target: "seawall::retry",
        "operation",
        // Formatted only when a subscriber records it.
        otel.name = %SpanName { operation, model },
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = operation,
        gen_ai.provider.name = facts
            .and_then(RequestFacts::provider)
            .and_then(|provider| provider.genai_name(route.address().0)),
        gen_ai.request.model = model.map(span::model_field).as_deref(),
        gen_ai.response.finish_reasons = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        server.address = route.address().0,
        server.port = route.address().1,
        error.type = tracing::field::Empty,
        seawall.attempts = tracing::field::Empty,
        seawall.stop_reason = tracing::field::Empty,
        seawall.stream.bound = tracing::field::Empty,
    )
}

/// One span per attempt, a child of the operation's, client kind, named
/// and attributed as the operation's (its model known once a body naming
/// it was sent: a retry's from the start).
fn attempt_span(
    operation: &tracing::Span,
    route: &RouteId,
    facts: Option<&RequestFacts>,
    attempt: u32,
    delay: Duration,
) -> tracing::Span {
    let name = facts.map_or("request", operation_name);
    let model = facts.and_then(|facts| facts.head_model().or_else(|| facts.model()));
    tracing::info_span!(
        target: "seawall::retry",
        parent: operation,
        "attempt",
        otel.name = %SpanName { operation: name, model },
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        gen_ai.operation.name = name,
        gen_ai.provider.name = facts
            .and_then(RequestFacts::provider)
            .and_then(|provider| provider.genai_name(route.address().0)),
        gen_ai.request.model = model.map(span::model_field).as_deref(),
        server.address = route.address().0,
        server.port = route.address().1,
        seawall.attempt = attempt,
        seawall.delay_ms = millis(delay),
        seawall.action = tracing::field::Empty,
        seawall.retry_after_ms = tracing::field::Empty,
        seawall.cooled_by = tracing::field::Empty,
        gen_ai.response.finish_reasons = tracing::field::Empty,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        error.type = tracing::field::Empty,
        seawall.stream.bound = tracing::field::Empty,
    )
}

/// What a wait draws above its floor (a hint), to keep the operations told
/// one return apart; cut to what the ladder's bounds leave.
#[derive(Debug, Clone, Copy)]
enum Above {
    /// Nothing: the floor is the backoff's own draw, or lockstep was asked.
    Nothing,
    /// This backoff, after a cooldown's end.
    Backoff(Duration),
    /// A [spread](seawall_internal::random::Random::spread) above a hint.
    Spread,
}
