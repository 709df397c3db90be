use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::BoxError;

use crate::shared::Permit;

pin_project! {
    /// A response body whose end decides the call's outcome for the breaker.
    ///
    /// The end of the stream records a success; an error carrying a counted
    /// [`Failure`](seawall_core::Failure) (a remote `stream_interrupted` or
    /// `truncated`, an `idle_timeout`) records a failure; a body dropped
    /// before its end records nothing. So a provider that drops every
    /// stream half-way trips the breaker even though every response started
    /// well.
    pub struct BreakerBody<B> {
        #[pin]
        inner: B,
        permit: Option<Permit>,
    }
}

impl<B: Body> BreakerBody<B> {
    pub(crate) fn new(inner: B, permit: Option<Permit>) -> Self {
        let permit = match permit {
            Some(permit) if inner.is_end_stream() => {
                permit.succeed();
                None
            }
            other => other,
        };
        BreakerBody { inner, permit }
    }
}

impl<B> Body for BreakerBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        match frame {
            None => {
                if let Some(permit) = this.permit.take() {
                    permit.succeed();
                }
                Poll::Ready(None)
            }
            Some(Err(error)) => {
                let error = error.into();
                if let Some(permit) = this.permit.take() {
                    permit.fail(&error);
                }
                Poll::Ready(Some(Err(error)))
            }
            Some(Ok(frame)) => {
                if this.inner.is_end_stream()
                    && let Some(permit) = this.permit.take()
                {
                    permit.succeed();
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> std::fmt::Debug for BreakerBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BreakerBody")
            .field("pending_outcome", &self.permit.is_some())
            .finish()
    }
}
