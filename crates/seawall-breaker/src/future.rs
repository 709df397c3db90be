use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::{BoxError, Failure};

use crate::body::BreakerBody;
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
        // Boxed at once: the error must be boxed anyway, and a small
        // future keeps the closed path from moving a large `Failure` around.
        Refused {
            failure: Option<Box<Failure>>,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn called(future: F, permit: Option<Permit>) -> Self {
        ResponseFuture {
            kind: Kind::Called { future, permit },
        }
    }

    pub(crate) fn refused(failure: Failure) -> Self {
        ResponseFuture {
            kind: Kind::Refused {
                failure: Some(Box::new(failure)),
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
    type Output = Result<http::Response<BreakerBody<B>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Called { future, permit } => match ready!(future.poll(cx)) {
                Ok(response) => {
                    let permit = permit.take();
                    Poll::Ready(Ok(response.map(|body| BreakerBody::new(body, permit))))
                }
                Err(error) => {
                    let error = error.into();
                    if let Some(permit) = permit.take() {
                        permit.fail(&error);
                    }
                    Poll::Ready(Err(error))
                }
            },
            KindProj::Refused { failure } => {
                let failure = failure
                    .take()
                    .expect("ResponseFuture polled after completion");
                Poll::Ready(Err(failure))
            }
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture").finish_non_exhaustive()
    }
}
