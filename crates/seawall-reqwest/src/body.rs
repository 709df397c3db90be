//! The bodies on either side of reqwest.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use seawall_core::BoxError;
use sync_wrapper::SyncWrapper;

use crate::error::{Error, RequestBodyError};

pin_project_lite::pin_project! {
    /// A request body on its way into reqwest: streamed as it is read, its
    /// errors marked so a body that fails mid-send is told apart from the
    /// network failing.
    ///
    /// reqwest wants a `Sync` body; an axum request body (and any unsync
    /// boxed body) is not. The body is held in a `SyncWrapper`, which is
    /// `Sync` by giving no shared access to it: what reqwest asks through
    /// `&self` (the size, the end) is kept beside it, as it was when the
    /// body came and as frames went.
    pub(crate) struct SendBody<B> {
        #[pin]
        inner: SyncWrapper<B>,
        size: SizeHint,
        ended: bool,
    }
}

impl<B: Body> SendBody<B> {
    pub(crate) fn new(inner: B) -> Self {
        SendBody {
            size: inner.size_hint(),
            ended: inner.is_end_stream(),
            inner: SyncWrapper::new(inner),
        }
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
        let this = self.project();
        let frame = ready!(this.inner.get_pin_mut().poll_frame(cx));
        match &frame {
            None => {
                *this.ended = true;
                *this.size = SizeHint::with_exact(0);
            }
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let len = data.len() as u64;
                    let lower = this.size.lower().saturating_sub(len);
                    let upper = this.size.upper().map(|upper| upper.saturating_sub(len));
                    let mut size = SizeHint::new();
                    size.set_lower(lower);
                    if let Some(upper) = upper {
                        size.set_upper(upper.max(lower));
                    }
                    *this.size = size;
                }
            }
            Some(Err(_)) => *this.ended = true,
        }
        Poll::Ready(frame.map(|r| r.map_err(|error| RequestBodyError(error.into()))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.size
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
