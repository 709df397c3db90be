use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::{BoxError, UsageSlot};

use crate::body::BreakerBody;
use crate::error::{BreakerError, CircuitOpen};
use crate::shared::Permit;

pin_project! {
    /// The response future of [`Breaker`](crate::Breaker): the inner call,
    /// or a refusal made without calling the inner service.
    pub struct ResponseFuture<F> {
        #[pin]
        kind: Kind<F>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<F> {
        Called {
            #[pin]
            future: F,
            permit: Option<Permit>,
        },
        Refused {
            refusal: Option<CircuitOpen>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn called(future: F, permit: Option<Permit>) -> Self {
        ResponseFuture {
            kind: Kind::Called { future, permit },
        }
    }

    pub(crate) fn refused(refusal: CircuitOpen) -> Self {
        ResponseFuture {
            kind: Kind::Refused {
                refusal: Some(refusal),
            },
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
    E: Into<BoxError>,
    B: Body,
{
    type Output = Result<http::Response<BreakerBody<B>>, BreakerError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Called { future, permit } => match ready!(future.poll(cx)) {
                Ok(response) => {
                    // A trial or a cooldown's probe is judged by its
                    // answer; calls of a closed spell count how their
                    // bodies end.
                    let permit = if seawall_core::is_answer_status(response.status()) {
                        permit.take().and_then(Permit::answered)
                    } else {
                        // Dropped: counted neither way, a trial's place
                        // and a probe given back.
                        unclassified(response.status());
                        drop(permit.take());
                        None
                    };
                    // The stream guard's usage slot says a reader below
                    // ends the body at the protocol's end; looked up only
                    // for a body whose outcome is still to come.
                    let guarded =
                        permit.is_some() && response.extensions().get::<UsageSlot>().is_some();
                    Poll::Ready(Ok(
                        response.map(|body| BreakerBody::new(body, permit, guarded))
                    ))
                }
                Err(error) => {
                    let error = error.into();
                    if let Some(permit) = permit.take() {
                        permit.fail(&error);
                    }
                    Poll::Ready(Err(BreakerError::Inner(error)))
                }
            },
            KindProj::Refused { refusal } => {
                let refusal = refusal
                    .take()
                    .expect("ResponseFuture polled after completion");
                Poll::Ready(Err(BreakerError::Open(refusal)))
            }
        }
    }
}

/// Set once a response proved no classifier is below: said once per
/// process, as every such response would say it again.
static SAID_UNCLASSIFIED: AtomicBool = AtomicBool::new(false);

/// A response whose status no classifier judged. Without `ClassifyLayer`
/// below, a 503 is an `Ok`: counted as a success, it would close a
/// half-open breaker and break a run of consecutive failures while the
/// route is down. The breaker cannot judge it, so it counts neither way.
#[cold]
fn unclassified(status: http::StatusCode) {
    if !SAID_UNCLASSIFIED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            target: "seawall::breaker",
            status = status.as_u16(),
            "a response with an error status reached the circuit breaker: no ClassifyLayer \
             below it, so statuses are not failures; such responses count neither way \
             (said once)"
        );
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
