use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use pin_project_lite::pin_project;
use seawall_core::replay::ReplayBody;
use seawall_core::{
    Action, Attempt, BoxError, Code, Deadline, Failure, Receipt, RouteId, StopReason,
};
use tower::util::Oneshot;
use tower_service::Service;

use crate::error::SameRouteFallback;
use crate::rewrite::Rewrite;
use crate::service::{SERVED_BY_HEADER, ServedBy, Shared};

/// What a fallback needs, taken when it fires.
pub(crate) struct Plan<F, R, B> {
    /// The fallback service (cloned only when it fires) and the settings.
    pub(crate) shared: Arc<Shared<F, R>>,
    /// The request's head and a handle on its recorded body; `None` when the
    /// body could not be recorded.
    pub(crate) request: Option<http::Request<ReplayBody<B>>>,
}

/// The primary's attempt, kept while the fallback runs.
struct Fired {
    route: RouteId,
    primary: Receipt,
}

pin_project! {
    /// The response future of [`Fallback`](crate::Fallback): the primary's
    /// call, then at most one fallback call.
    pub struct ResponseFuture<PF, F, R, B>
    where
        F: Service<http::Request<ReplayBody<B>>>,
    {
        #[pin]
        state: State<PF, Oneshot<F, http::Request<ReplayBody<B>>>>,
        primary_route: Option<RouteId>,
        plan: Option<Plan<F, R, B>>,
        fired: Option<Fired>,
        header: bool,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<PF, FF> {
        Refused { error: Option<BoxError> },
        Primary { #[pin] future: PF },
        Fallback { #[pin] future: FF },
    }
}

impl<PF, F, R, B> ResponseFuture<PF, F, R, B>
where
    F: Service<http::Request<ReplayBody<B>>>,
{
    pub(crate) fn primary(future: PF, route: RouteId, plan: Plan<F, R, B>) -> Self {
        let header = plan.shared.settings.served_by_header;
        ResponseFuture {
            state: State::Primary { future },
            primary_route: Some(route),
            plan: Some(plan),
            fired: None,
            header,
        }
    }

    pub(crate) fn refused(error: BoxError) -> Self {
        ResponseFuture {
            state: State::Refused { error: Some(error) },
            primary_route: None,
            plan: None,
            fired: None,
            header: false,
        }
    }
}

impl<PF, F, R, B, RB, E> Future for ResponseFuture<PF, F, R, B>
where
    PF: Future<Output = Result<http::Response<RB>, E>>,
    E: Into<BoxError>,
    F: Service<http::Request<ReplayBody<B>>, Response = http::Response<RB>> + Clone,
    F::Error: Into<BoxError>,
    R: Rewrite<B>,
{
    type Output = Result<http::Response<RB>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.state.as_mut().project() {
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
                            label(&mut response, route, false, *this.header);
                            return Poll::Ready(Ok(response));
                        }
                        Err(error) => {
                            let plan = this.plan.take().expect("polled after completion");
                            match fire(error.into(), route, plan) {
                                Ok((fallback, request, fired)) => {
                                    *this.fired = Some(fired);
                                    this.state.set(State::Fallback {
                                        future: Oneshot::new(fallback, request),
                                    });
                                }
                                Err(error) => return Poll::Ready(Err(error)),
                            }
                        }
                    }
                }
                StateProj::Fallback { future } => {
                    let result = ready!(future.poll(cx));
                    let Fired { route, primary } =
                        this.fired.take().expect("polled after completion");
                    return Poll::Ready(match result {
                        Ok(mut response) => {
                            let own = response
                                .extensions_mut()
                                .remove::<Receipt>()
                                .unwrap_or_else(|| {
                                    let mut own = Receipt::default();
                                    own.push(Attempt::answered(
                                        route.clone(),
                                        Duration::ZERO,
                                        &response,
                                    ));
                                    own.stop = Some(StopReason::Succeeded);
                                    own
                                });
                            let receipt = merge(primary, Some(own), &route, None);
                            response.extensions_mut().insert(receipt);
                            label(&mut response, route, true, *this.header);
                            Ok(response)
                        }
                        Err(error) => Err(with_merged_receipt(error.into(), primary, &route)),
                    });
                }
            }
        }
    }
}

/// Decides on the primary's error: the fallback service and its request
/// when the fallback fires, else the error to return.
fn fire<F, R, B>(
    error: BoxError,
    from: RouteId,
    plan: Plan<F, R, B>,
) -> Result<(F, http::Request<ReplayBody<B>>, Fired), BoxError>
where
    F: Clone,
    R: Rewrite<B>,
{
    let Some(failure) = Failure::find(&*error) else {
        return Err(error);
    };
    let cause = failure.code();
    // The ladder below gave up on something transient, or the route itself
    // is at fault and another can answer (a quota wall, rejected keys, a
    // cooldown): see `Scope`.
    let eligible = (matches!(failure.action(), Action::Retry | Action::Failover)
        && !matches!(cause, Code::Cancelled | Code::DeadlineExceeded))
        || failure.moves_route();
    if !eligible {
        return Err(error);
    }
    let primary = failure
        .receipt()
        .cloned()
        .unwrap_or_else(|| single(&from, Some(cause)));
    let Plan { shared, request } = plan;
    let settings = &shared.settings;
    let Some(mut request) = request.filter(|r| r.body().is_replayable()) else {
        return Err(skipped(error, &from, cause, StopReason::NotReplayable));
    };
    if let Some(deadline) = Deadline::of(&request)
        && deadline.remaining() < settings.min_remaining
    {
        return Err(skipped(error, &from, cause, StopReason::Deadline));
    }
    // The copied extensions name the primary's route; the fallback's is the
    // configured one, else whatever the rewritten request says.
    request.extensions_mut().remove::<RouteId>();
    settings.rewrite.rewrite(&mut request);
    if let Some(route) = &settings.route {
        request.extensions_mut().insert(route.clone());
    }
    let to = RouteId::of_request(&request);
    if to == from {
        return Err(SameRouteFallback::new(to, Some(error)).into());
    }
    tracing::warn!(
        target: "seawall::fallback",
        from = %from,
        to = %to,
        cause = cause.as_str(),
        "falling back to another route"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(
        seawall_core::metric_names::FALLBACKS_TOTAL,
        "from" => from.to_shared(),
        "to" => to.to_shared(),
        "code" => cause.as_str()
    )
    .increment(1);
    Ok((
        shared.fallback.clone(),
        request,
        Fired { route: to, primary },
    ))
}

/// The primary's error, returned without a fallback: the receipt's stop
/// reason says why and so does a `tracing` event. A failure found inside
/// another error is returned on its own (a clone, with the reason); an
/// error with no failure anywhere is returned as it is.
fn skipped(error: BoxError, from: &RouteId, cause: Code, why: StopReason) -> BoxError {
    tracing::debug!(
        target: "seawall::fallback",
        from = %from,
        cause = cause.as_str(),
        reason = why.as_str(),
        "no fallback"
    );
    match Failure::extract(error) {
        Ok(mut failure) => {
            failure
                .receipt_mut()
                .get_or_insert_with(|| Box::new(single(from, Some(cause))))
                .stop = Some(why);
            Box::new(failure)
        }
        Err(error) => error,
    }
}

/// A receipt of one attempt, for a service that did not keep its own.
fn single(route: &RouteId, code: Option<Code>) -> Receipt {
    let mut receipt = Receipt::default();
    receipt.push(Attempt::new(route.clone(), code, Duration::ZERO));
    receipt.stop = Some(if code.is_none() {
        StopReason::Succeeded
    } else {
        StopReason::NotRetryable
    });
    receipt
}

/// The primary's receipt followed by the fallback's.
fn merge(mut primary: Receipt, own: Option<Receipt>, to: &RouteId, code: Option<Code>) -> Receipt {
    let mut fallback = own.unwrap_or_else(|| single(to, code));
    fallback.fallback = true;
    primary.append(fallback);
    primary
}

/// The fallback's error with both attempts in its receipt. An error that is
/// not a seawall `Failure` anywhere in its chain is returned as it is.
fn with_merged_receipt(error: BoxError, primary: Receipt, to: &RouteId) -> BoxError {
    let mut failure = match Failure::extract(error) {
        Ok(failure) => failure,
        Err(error) => return error,
    };
    let own = failure.receipt_mut().take().map(|receipt| *receipt);
    let receipt = merge(primary, own, to, Some(failure.code()));
    if failure.route().is_none() {
        failure = failure.with_route(to.clone());
    }
    Box::new(failure.with_receipt(receipt))
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

impl<PF, F, R, B> std::fmt::Debug for ResponseFuture<PF, F, R, B>
where
    F: Service<http::Request<ReplayBody<B>>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("primary_route", &self.primary_route)
            .field("fell_back", &self.fired.is_some())
            .finish_non_exhaustive()
    }
}
