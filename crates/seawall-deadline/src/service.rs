use std::task::{Context, Poll};

use http::{Request, Response};
use seawall_core::recording::OuterLadder;
use seawall_core::{AnswerBy, BoxError, Code, Deadline, Progress};
use tokio::time::Instant;
use tower_service::Service;

use crate::body::DeadlineBody;
use crate::future::{Expiry, ResponseFuture};
use crate::layer::{Bound, Config};

/// The operation's deadline as the wire should carry it, left in the
/// request extensions by a total bound that read the caller's own bound
/// off the wire or was asked to ([`DeadlineLayer::carry_to_attempts`]),
/// tightened by any total bound inside with an earlier deadline: what a
/// per-attempt bound inside writes, not the `Deadline` it finds
/// there (a fallback reserve's window, a caller's `AnswerBy` narrow that
/// one). Its presence is also what a per-attempt `refresh` looks for the
/// header on: the lookup on every attempt of every other request cost
/// more than this value's absence does.
///
/// `since` is when the outermost total bound that carries it took the
/// request: a caller's own bound still in the request's headers (the
/// retry layer sends the caller's request again, header and all) counts
/// from then, not from each attempt's start.
#[derive(Debug, Clone, Copy)]
struct OnTheWire {
    deadline: Deadline,
    since: Instant,
}

/// The service [`DeadlineLayer`](crate::DeadlineLayer) builds.
#[derive(Debug, Clone)]
pub struct DeadlineService<S> {
    inner: S,
    config: Config,
}

impl<S> DeadlineService<S> {
    pub(crate) fn new(inner: S, config: Config) -> Self {
        DeadlineService { inner, config }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S, B, ResB> Service<Request<B>> for DeadlineService<S>
where
    S: Service<Request<B>, Response = Response<ResB>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<DeadlineBody<ResB>>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let existing = Deadline::of(&request);
        // A per-attempt bound: the caller's own bound, in the header it
        // writes.
        let mut callers = None;
        let expiry = match self.config.bound {
            Bound::Total(total) => {
                let own = total.map(|total| Deadline::after_from(started, total));
                // The caller's own bound: in the header it is read from,
                // and in the one this layer writes, which it must not
                // lengthen (tonic's `set_timeout` is `grpc-timeout`, and
                // its channel keeps no timer but that header).
                let incoming = self.config.incoming.as_ref();
                let written = self.config.propagate.as_ref();
                let incoming = [incoming, written.filter(|&wire| Some(wire) != incoming)]
                    .into_iter()
                    .flatten()
                    .filter_map(|wire| wire.read(request.headers()))
                    .map(|remaining| Deadline::after_from(started, remaining))
                    .min();
                // Under a total bound that narrowed the `Deadline` to the
                // caller's `AnswerBy`, the operation's deadline is the one
                // it kept: read as the `Deadline`, this bound would cut a
                // stream that began in time at the caller's first wait.
                let kept = AnswerBy::operation(&request);
                let operation = [kept.unwrap_or(existing), own, incoming]
                    .into_iter()
                    .flatten()
                    .min();
                if let Some(operation) = operation {
                    // A total bound outside carried its deadline for the
                    // wire: an earlier one here tightens it (the attempts
                    // would tell the server of time the operation does not
                    // have), a later one leaves it.
                    match request.extensions_mut().get_mut::<OnTheWire>() {
                        Some(carried) => carried.deadline = carried.deadline.narrow(operation),
                        None if incoming.is_some() || self.config.carry => {
                            request.extensions_mut().insert(OnTheWire {
                                deadline: operation,
                                since: started,
                            });
                        }
                        None => {}
                    }
                }
                // A bound on the wait for the answer only: the layers
                // inside plan within it, the body is not held to it. What
                // a layer outside narrowed the `Deadline` to stays.
                let answer_by = AnswerBy::of(&request).map(|by| by.0);
                let deadline = [existing, operation, answer_by].into_iter().flatten().min();
                // A layer inside that sends on once the answer began (a
                // resumed stream's continuation) is held to the operation's
                // deadline, not to the caller's wait for a first answer:
                // this bound's, which an outer one kept may not be.
                if deadline != operation || kept.is_some() {
                    AnswerBy::keep_operation(&mut request, operation);
                }
                deadline.map(|deadline| Expiry {
                    deadline,
                    body: operation,
                    started,
                    fires_as: Code::DeadlineExceeded,
                    progress: None,
                    // Not a window a layer outside narrowed the
                    // `Deadline` to, earlier still.
                    answer_by: answer_by == Some(deadline)
                        && operation.is_none_or(|operation| deadline < operation),
                })
            }
            Bound::PerAttempt(bound) => {
                let own = Deadline::after_from(started, bound);
                // The caller's own bound in the header this attempt writes,
                // counted from when a total bound outside took the request
                // (from this attempt's start where none did): an operation
                // deadline too, which the header written must not outlast.
                // (A `refresh` header is only looked up under a carried
                // deadline, as it is only written there.)
                let carried = request.extensions().get::<OnTheWire>();
                let wire = match (&self.config.propagate, &self.config.refresh) {
                    (Some(wire), _) => Some(wire),
                    (None, Some(wire)) if carried.is_some() => Some(wire),
                    _ => None,
                };
                callers = wire.and_then(|wire| {
                    let remaining = wire.read(request.headers())?;
                    let since = carried.map_or(started, |carried| carried.since);
                    Some(Deadline::after_from(since, remaining))
                });
                let operation = [existing, callers].into_iter().flatten().min();
                // Ties go to the attempt: its own bound is what stopped it.
                let (deadline, fires_as) = match operation {
                    Some(operation) if operation < own => (operation, Code::DeadlineExceeded),
                    _ => (own, Code::Timeout),
                };
                // The operation's deadline an outer total bound narrowed to
                // the caller's `AnswerBy`: the attempt fires at that same
                // instant, and says whose bound it was.
                let answer_by = fires_as == Code::DeadlineExceeded
                    && AnswerBy::of(&request).is_some_and(|by| Some(by.0) == operation);
                // An attempt bound outside this one bounds the same
                // attempt: it counts in the `Progress` that one started,
                // or a cut of the outer bound would read a count no layer
                // feeds (the layers nearer the wire find the innermost).
                // With a ladder in between, that `Progress` is copied into
                // every attempt: counted from zero again for each, or an
                // attempt would carry the one before's bytes (and a silent
                // retry would read as no silence). Without one, under a
                // ladder, the counts are the operation's slots.
                let progress = match request.extensions().get::<Progress>() {
                    None => Progress::start_attempt(&mut request),
                    Some(outer) => {
                        if request.extensions().get::<OuterLadder>().is_some() {
                            outer.restart();
                        }
                        outer.clone()
                    }
                };
                Some(Expiry {
                    deadline,
                    body: None,
                    started,
                    fires_as,
                    progress: Some(progress),
                    answer_by,
                })
            }
        };
        let Some(expiry) = expiry else {
            return ResponseFuture::unbounded(self.inner.call(request));
        };
        if Some(expiry.deadline) != existing {
            // Overwritten in place when an outer deadline is there: a
            // replacing insert would box the value again.
            match request.extensions_mut().get_mut::<Deadline>() {
                Some(slot) => *slot = expiry.deadline,
                None => {
                    request.extensions_mut().insert(expiry.deadline);
                }
            }
        }
        if expiry.deadline.instant() <= started {
            return ResponseFuture::expired(expiry);
        }
        // The server is told when the operation ends, not when the caller
        // stops waiting for it to begin (an `AnswerBy`), nor when this
        // attempt stops waiting for its answer to begin: a gRPC deadline
        // ends the whole call, stream included (grpc-go, grpc-java), and a
        // stream that began in time runs on past the attempt's bound. An
        // attempt given up on is cancelled by its reset, not its deadline.
        let on_the_wire = request
            .extensions()
            .get::<OnTheWire>()
            .map(|carried| carried.deadline);
        let until = match self.config.bound {
            Bound::Total(_) => expiry.body,
            // Never later than the caller's own bound, where the request
            // carries one: `expiry.deadline` is the attempt's, and when
            // the attempt's bound is the earlier it is not what the
            // server is told.
            Bound::PerAttempt(_) => [on_the_wire.or(existing), callers]
                .into_iter()
                .flatten()
                .min(),
        };
        let wire = self.config.propagate.as_ref().or_else(|| {
            self.config
                .refresh
                .as_ref()
                .filter(|wire| on_the_wire.is_some() && wire.is_in(request.headers()))
        });
        if let (Some(wire), Some(until)) = (wire, until) {
            wire.write(request.headers_mut(), until.instant() - started);
        }
        ResponseFuture::bounded(self.inner.call(request), expiry)
    }
}
