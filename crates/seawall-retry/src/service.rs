use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http::{HeaderValue, Request, Response};
use http_body::Body;
use seawall_core::facts::OperationSlots;
use seawall_core::recording::ReplayBody;
use seawall_core::{
    AnswerBy, BoxError, Code, Deadline, Failure, OtherRoutes, Receipt, RequestFacts, RouteId,
    StopReason,
};
use tower_service::Service;

use crate::budget::Now;
use crate::future::{Again, Asked, Ladder, ResponseFuture};
use crate::layer::Shared;
use crate::template::{OuterLadder, Template};

/// The service [`RetryBudgetLayer`](crate::RetryBudgetLayer) builds.
#[derive(Debug, Clone)]
pub struct RetryBudget<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> RetryBudget<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        RetryBudget { inner, shared }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S, B, ResB> Service<Request<B>> for RetryBudget<S>
where
    S: Service<Request<ReplayBody<B>>, Response = Response<ResB>> + Clone,
    S::Error: Into<BoxError>,
    // What a body must be to be sent from a recording
    // (`ReplayBody`'s `Body`): read ahead here for the spans.
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Response = Response<ResB>;
    type Error = BoxError;
    type Future = ResponseFuture<S, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let policy = &self.shared.policy;
        let nested = request.extensions().get::<OuterLadder>().is_some();
        if nested && !policy.allow_nested {
            warn_nested_once();
            // A key made here would be a new one on each of the outer
            // ladder's attempts: no key at all, with a header that says
            // otherwise. The outer ladder owns the operation's key.
            if let Some(name) = &policy.idempotency_key
                && !request.headers().contains_key(name)
            {
                warn_nested_key_once(name);
            }
            return ResponseFuture::single(self.inner.call(request.map(ReplayBody::once)));
        }
        if let Some(name) = &policy.idempotency_key
            && !request.headers().contains_key(name)
        {
            // The thread's generator (seeded from the system), never the
            // layer's seeded one: keys must differ across processes.
            let key = rand::random::<u128>();
            let value = HeaderValue::try_from(format!("{key:032x}"))
                .expect("hex digits are a valid header value");
            request.headers_mut().insert(name.clone(), value);
        }
        let route = RouteId::of_request_sharing(&request, &self.shared.routes);
        let deadline = Deadline::of(&request);
        let other_routes = request.extensions().get::<OtherRoutes>().is_some();
        let bills = seawall_core::billable(request.method(), request.uri().path());
        // At most one clock read for the budget's window and the first
        // attempt.
        let mut now = Now::default();
        // Every attempt, the first too, runs under the deadline less the
        // fallback reserve: the copies for the retries are taken below.
        let window = policy.attempt_window(deadline, &mut now);
        if let Some(window) = window
            && let Some(slot) = request.extensions_mut().get_mut::<Deadline>()
        {
            *slot = window;
        }
        // Facts that read no body: none yet, or a caller's own
        // (`RequestFacts::with_model`) without the operation's slots. A
        // layer above that made slots (a fallback, a resume) fills them.
        let reads_no_body = request
            .extensions()
            .get::<RequestFacts>()
            .is_none_or(|facts| facts.body_sent().is_none());
        let (mut first, again) = if policy.max_attempts > 1 || reads_no_body {
            // The operation's own deadline, for the slots: the one a total
            // bound kept beside a `Deadline` it narrowed to a caller's
            // `AnswerBy`, else the `Deadline` as it came (read before the
            // fallback reserve's window replaced it; the per-attempt
            // bounds below narrow it later). The stream guard tells by it
            // a stream the operation's deadline cut from one its caller
            // dropped. A plain value in the slots made anyway: no
            // allocation of its own.
            let operation = AnswerBy::operation(&request).unwrap_or(deadline);
            let (mut parts, body) = request.into_parts();
            // The recording tells every layer below what the body asked
            // for (a stream, a model) once it has been sent: a single
            // attempt too, or the breaker would cool the whole route for
            // one model's limit, and classification would not know a
            // stream was asked for. For a single attempt the recording
            // replays nothing; it holds the body's frames (shared bytes,
            // no copies) until the operation ends.
            // Under slots a layer above made (a fallback, a resume), which
            // know the body's facts from its recording, only this recording
            // knows which of this ladder's attempts sent the body whole.
            let slots = reads_no_body.then(|| OperationSlots::for_operation(operation));
            let body = ReplayBody::recorded_for(&mut parts, body, policy.max_replay_bytes, slots);
            let mut first = Request::from_parts(parts, body);
            let template = (policy.max_attempts > 1).then(|| {
                let template_body = first.body().replay().expect("a fresh recording replays");
                // Taken before the mark goes in; each retry is marked when
                // it is made.
                Template::of(&mut first, template_body)
            });
            (first, template)
        } else {
            (request.map(ReplayBody::once), None)
        };
        first.extensions_mut().insert(OuterLadder);
        // The facts are read whether or not a subscriber records the
        // spans: a filter that enables spans alone answers `enabled!` no,
        // and the span would name nothing.
        let facts = match first.extensions().get::<RequestFacts>() {
            Some(facts) => Some(facts.clone()),
            None => Some(RequestFacts::from_head(&first)),
        };
        // A resume (a continuation of an answer cut after content) is a
        // retry of the operation that was cut, not a new one: the budget
        // pays for it as for a retry, or refuses it without a call, and
        // the metrics count it as one.
        let paid = if let Some(facts) = facts.as_ref().filter(|facts| facts.continues()) {
            match self.shared.budget.failed(false, true) {
                Some(grant) => {
                    // An outer ladder counts it, not a nested one.
                    if !nested {
                        count_resume(facts, &route);
                    }
                    Some(grant)
                }
                None => return ResponseFuture::refused(budget_refusal()),
            }
        } else {
            self.shared.budget.start_at(&mut now);
            None
        };
        // The spans first: the attempt's request carries them down.
        let mut ladder = Ladder::new(
            self.shared.clone(),
            route,
            deadline,
            other_routes,
            bills,
            Asked {
                facts,
                read_ahead: || read_ahead(first.body()),
            },
            &mut now,
        );
        if let Some(grant) = paid {
            ladder.paid_by(grant);
        }
        ladder.within(window);
        if nested {
            ladder.nested();
        }
        ladder.mark(&mut first);
        let future = ladder.in_attempt(|| self.inner.call(first));
        // The retries' service is cloned after the first call, so it knows
        // what that call did: a breaker below gating its readiness tells a
        // clone which route to wait for by its last call (a clone made
        // before it knew none, was ready at once and refused the retry).
        // The instance that made the call goes with the ladder, and this
        // one is its clone: what its readiness reserved and a refusal
        // below left unspent is the ladder's to give back before it
        // sleeps (`release_readiness`), not held by the caller's instance.
        ladder.retries_with(again.map(|template| {
            let fresh = self.inner.clone();
            Again {
                service: std::mem::replace(&mut self.inner, fresh),
                template,
            }
        }));
        ResponseFuture::ladder(future, ladder)
    }
}

/// The most frames of a body at hand read ahead (see [`read_ahead`]): a
/// body the recording holds whole is bounded by its bytes, not its frames.
const READ_AHEAD_FRAMES: usize = 64;

/// Reads into the recording what of `body` is already at hand, without
/// waiting ([`ReplayBody::read_ahead`]): a body in memory (`Full`,
/// `String`, an SDK's JSON) is read whole, and the recording fills the
/// request's facts from it before any attempt is sent, so the spans are
/// named by the model the body names as they start. Only a body whose rest
/// is said by its size hint to fit in the recording
/// ([`ReplayBody::rest_fits_recording`]): a larger one would not be whole
/// in it anyway. A body that sends more than its hint said, or fails as it
/// is read, loses nothing: the frame past the cap, or the body's own error,
/// is kept for the first attempt, which sends it as it would have without
/// the read ahead. A body not recorded (a single attempt), still streaming
/// (it answers `Pending`), or too large is left as it is, read as it is
/// sent.
fn read_ahead<B>(body: &ReplayBody<B>)
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    if body.rest_fits_recording() {
        body.read_ahead(READ_AHEAD_FRAMES);
    }
}

/// A resume the budget paid for is counted as the retry it is: under the
/// route whose call was cut (the last a layer below sent the operation to,
/// else the ladder's own), with the code the cut carries. Only with the
/// feature: the route is read under a lock.
#[cfg(feature = "metrics")]
fn count_resume(facts: &RequestFacts, route: &RouteId) {
    use seawall_core::facts::CallBelow;
    let cut = match facts.call_below() {
        CallBelow::Sent(cut) => cut,
        CallBelow::Unrecorded | CallBelow::Held => route.clone(),
    };
    crate::metrics::retry(&cut, Code::StreamInterrupted);
}

#[cfg(not(feature = "metrics"))]
fn count_resume(_: &RequestFacts, _: &RouteId) {}

/// A resume the retry budget cannot pay: no call, the budget's stop in its
/// receipt.
#[cold]
fn budget_refusal() -> BoxError {
    crate::metrics::budget_exhausted();
    let mut receipt = Receipt::default();
    receipt.stop = Some(StopReason::Budget);
    Box::new(
        Failure::new(Code::BudgetExhausted)
            .with_message("the retry budget has no token for a resume")
            .with_receipt(receipt),
    )
}

/// Nested ladders multiply attempts; the inner one stands down, and says so
/// once per process.
fn warn_nested_once() {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "seawall::retry",
            "a retry ladder found an outer ladder and makes a single attempt; \
             use RetryPolicy::allow_nested to retry at both levels"
        );
    }
}

/// An inner ladder that stands down sends no idempotency key of its own,
/// and says so once per process: the policy asked for one, and the
/// provider would otherwise run every retry as a new request.
#[cold]
fn warn_nested_key_once(header: &http::HeaderName) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "seawall::retry",
            header = header.as_str(),
            "a retry ladder under an outer one sends no idempotency key: the outer ladder's \
             retries would each get a new one; set RetryPolicy::idempotency_key on the \
             outermost ladder"
        );
    }
}
