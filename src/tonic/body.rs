use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::BoxError;

use super::into_status;

pin_project! {
    /// A response body whose errors (a stream interrupted after messages)
    /// are `tonic::Status`es where they carry a seawall failure.
    #[derive(Debug)]
    pub struct StatusBody<B> {
        #[pin]
        inner: B,
    }
}

impl<B> StatusBody<B> {
    /// Wraps `inner`.
    pub fn new(inner: B) -> Self {
        StatusBody { inner }
    }

    /// Consumes `self`, returning the inner body.
    pub fn into_inner(self) -> B {
        self.inner
    }
}

impl<B> Body for StatusBody<B>
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
        let frame = ready!(self.project().inner.poll_frame(cx));
        Poll::Ready(frame.map(|frame| frame.map_err(|error| into_status(error.into()))))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
