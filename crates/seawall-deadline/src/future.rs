use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::Response;
use pin_project_lite::pin_project;
use seawall_core::{BoxError, Code, Deadline, Evidence, Failure, Progress};
use tokio::time::{Instant, Sleep, sleep_until};

use crate::body::DeadlineBody;

/// When a request's bound passes, and what failure that is.
#[derive(Debug)]
pub(crate) struct Expiry {
    /// When the response must have come.
    pub(crate) deadline: Deadline,
    /// When the response body must have ended, if its bound goes on to
    /// bound the body: the operation's deadline (later than `deadline`
    /// when an [`AnswerBy`](seawall_core::AnswerBy) bounds only the wait
    /// for the answer); an attempt's bound never does.
    pub(crate) body: Option<Deadline>,
    pub(crate) started: Instant,
    /// `deadline_exceeded` for the operation's deadline, `timeout` for an
    /// attempt's own bound.
    pub(crate) fires_as: Code,
    /// What the attempt received, filled by layers nearer the wire; only
    /// an attempt's bound has it.
    pub(crate) progress: Option<Progress>,
    /// The caller's [`AnswerBy`](seawall_core::AnswerBy) is the bound
    /// that fires, not the operation's deadline: the failure says so.
    pub(crate) answer_by: bool,
}

impl Expiry {
    /// The failure for this bound passing now.
    pub(crate) fn failure(&self) -> Failure {
        let failure = bound_passed(self.fires_as, self.started, |evidence| {
            if let Some(progress) = &self.progress {
                evidence.status = progress.status();
                evidence.bytes = progress.bytes();
                evidence.content_events = progress.content_events();
            }
        });
        if self.answer_by {
            return failure.with_message(seawall_core::AnswerBy::PASSED);
        }
        failure
    }
}

/// The failure of a bound that passed now: `code`, with the time since
/// `started` as evidence and whatever `record` adds of what was received.
pub(crate) fn bound_passed(
    code: Code,
    started: Instant,
    record: impl FnOnce(&mut Evidence),
) -> Failure {
    let mut evidence = Evidence::default();
    evidence.elapsed = Some(Instant::now().saturating_duration_since(started));
    record(&mut evidence);
    Failure::new(code).with_evidence(evidence)
}

/// Polls the timer for `deadline`, creating it on the first call: a future
/// or body that is ready at once never registers one.
pub(crate) fn poll_timer(
    mut sleep: Pin<&mut Option<Sleep>>,
    deadline: Instant,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if sleep.is_none() {
        sleep.set(Some(sleep_until(deadline)));
    }
    sleep
        .as_pin_mut()
        .map_or(Poll::Ready(()), |sleep| sleep.poll(cx))
}

pin_project! {
    /// The response future of [`DeadlineService`](crate::DeadlineService).
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            inner: F,
            // Created on the first `Pending` (see `poll_timer`).
            #[pin]
            sleep: Option<Sleep>,
            expiry: Option<Expiry>,
        },
        Expired {
            expiry: Option<Expiry>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn bounded(inner: F, expiry: Expiry) -> Self {
        ResponseFuture {
            state: State::Running {
                inner,
                sleep: None,
                expiry: Some(expiry),
            },
        }
    }

    pub(crate) fn unbounded(inner: F) -> Self {
        ResponseFuture {
            state: State::Running {
                inner,
                sleep: None,
                expiry: None,
            },
        }
    }

    pub(crate) fn expired(expiry: Expiry) -> Self {
        ResponseFuture {
            state: State::Expired {
                expiry: Some(expiry),
            },
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (state, expiry) = match &self.state {
            State::Running { expiry, .. } => ("running", expiry),
            State::Expired { expiry } => ("expired", expiry),
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("expiry", expiry)
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<DeadlineBody<B>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        match state.as_mut().project() {
            StateProj::Running {
                inner,
                sleep,
                expiry,
            } => {
                if let Poll::Ready(result) = inner.poll(cx) {
                    let body_deadline = expiry
                        .as_ref()
                        .and_then(|expiry| Some((expiry.body?.instant(), expiry.started)));
                    return Poll::Ready(match result {
                        Ok(response) => {
                            Ok(response.map(|body| DeadlineBody::new(body, body_deadline)))
                        }
                        Err(err) => Err(own_bound(err.into(), expiry)),
                    });
                }
                let Some(deadline) = expiry.as_ref().map(|expiry| expiry.deadline) else {
                    return Poll::Pending;
                };
                ready!(poll_timer(sleep, deadline.instant(), cx));
                let error = fire(expiry);
                // The call the bound cut is dropped before the bound's
                // failure is handed up: what the layers below record of
                // it (a guarded stream's end, as `cancelled`) comes
                // first, and the failure the layers above record is the
                // last word on the attempt.
                state.set(State::Expired { expiry: None });
                Poll::Ready(Err(error))
            }
            StateProj::Expired { expiry } => Poll::Ready(Err(fire(expiry))),
        }
    }
}

/// An inner call's error, or an attempt bound's own failure when the error
/// is a time bound below that fired with it: a tonic channel arms its
/// timer from the `grpc-timeout` written for this very deadline, a few
/// microseconds later, and the timer wheel's tick fires both together;
/// polled first, the inner `timeout` won, and an operation whose deadline
/// passed ended `timeout` with a failover, not `deadline_exceeded`. Only
/// an attempt's bound says so: it is the one around the client, and it
/// names whose bound it was (ties go to the attempt's own); above it, the
/// ladder's verdict on the attempt stands.
///
/// A `deadline_exceeded` below counts too where this attempt's own bound
/// is the one that passed (it fires as `timeout`): an attempt bound
/// inside this one, with no ladder in between, reads this bound's
/// deadline in the request as the operation's and fires as
/// `deadline_exceeded` at the same instant; the operation's deadline had
/// not passed, and the attempt is to be retried, not surfaced.
fn own_bound(error: BoxError, expiry: &mut Option<Expiry>) -> BoxError {
    let Some(bound) = expiry
        .as_ref()
        .filter(|expiry| expiry.progress.is_some() && Instant::now() >= expiry.deadline.instant())
    else {
        return error;
    };
    let fired_together = Failure::find(&*error).is_some_and(|failure| {
        failure.code().is_timeout()
            || (failure.code() == Code::DeadlineExceeded && bound.fires_as == Code::Timeout)
    });
    if fired_together { fire(expiry) } else { error }
}

/// The failure of an expiry, boxed for the service's error type. Polling
/// again after that is a caller bug; it yields a bare `deadline_exceeded`.
fn fire(expiry: &mut Option<Expiry>) -> BoxError {
    let failure = match expiry.take() {
        Some(expiry) => expiry.failure(),
        None => Failure::new(Code::DeadlineExceeded),
    };
    Box::new(failure)
}
