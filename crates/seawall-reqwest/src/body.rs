//! The bodies on either side of reqwest.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use seawall_core::BoxError;

use crate::error::{Error, RequestBodyError};

pin_project_lite::pin_project! {
    /// A request body on its way into reqwest: streamed as it is read, its
    /// errors marked so a body that fails mid-send is told apart from the
    /// network failing.
    pub(crate) struct SendBody<B> {
        #[pin]
        inner: B,
    }
}

impl<B> SendBody<B> {
    pub(crate) fn new(inner: B) -> Self {
        SendBody { inner }
    }
}

impl<B> Body for SendBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = RequestBodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, RequestBodyError>>> {
        self.project()
            .inner
            .poll_frame(cx)
            .map_err(|error| RequestBodyError(error.into()))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// The response body of [`ReqwestService`](crate::ReqwestService): each
    /// frame as reqwest delivers it, nothing collected first, so the stream
    /// guard above sees the real timing. Errors are [`Error`]s.
    pub struct ResponseBody {
        #[pin]
        inner: reqwest::Body,
    }
}

impl ResponseBody {
    pub(crate) fn new(inner: reqwest::Body) -> Self {
        ResponseBody { inner }
    }

    /// reqwest's body, its errors unmapped.
    pub fn into_inner(self) -> reqwest::Body {
        self.inner
    }
}

impl fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseBody").finish_non_exhaustive()
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.project()
            .inner
            .poll_frame(cx)
            .map_err(|error| Error::from_reqwest(error, &"the response body"))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
