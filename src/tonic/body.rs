use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::BoxError;

use super::{into_status, status_of};

pin_project! {
    /// A response body whose errors (a stream interrupted after messages,
    /// a bound that fired mid-stream) are `tonic::Status`es where they
    /// carry a seawall failure, as [`into_status`](super::into_status)
    /// makes them. On a server ([`GrpcStatusLayer::server`]) such an error
    /// ends the body with the status as its trailers instead.
    ///
    /// [`GrpcStatusLayer::server`]: super::GrpcStatusLayer::server
    #[derive(Debug)]
    pub struct StatusBody<B> {
        #[pin]
        inner: B,
        server: bool,
        ended: bool,
    }
}

impl<B> StatusBody<B> {
    pub(crate) fn new(inner: B, server: bool) -> Self {
        StatusBody {
            inner,
            server,
            ended: false,
        }
    }
}

impl<B> Body for StatusBody<B>
where
    B: Body,
    B::Data: Buf,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, BoxError>>> {
        let this = self.project();
        if *this.ended {
            return Poll::Ready(None);
        }
        let error = match ready!(this.inner.poll_frame(cx)) {
            Some(Err(error)) => error.into(),
            other => return Poll::Ready(other.map(|frame| frame.map_err(Into::into))),
        };
        // A server that fails mid-stream answers with its status: an error
        // here would reset the stream, which the caller reads as
        // `INTERNAL` whatever the failure was.
        if *this.server
            && let Some(trailers) = status_of(&*error).and_then(|status| {
                let mut trailers = HeaderMap::new();
                status.add_header(&mut trailers).ok().map(|()| trailers)
            })
        {
            *this.ended = true;
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(Some(Err(into_status(error))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.ended {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}
