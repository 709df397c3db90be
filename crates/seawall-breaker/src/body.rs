use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::BoxError;

use crate::shared::Permit;

pin_project! {
    /// A response body whose end decides the call's outcome for the breaker.
    ///
    /// The end of the stream records a success; an error carrying a counted
    /// [`Failure`](seawall_core::Failure) (a remote `stream_interrupted` or
    /// `truncated`, an `idle_timeout`) records a failure. So a provider that
    /// drops every stream half-way trips the breaker even though every
    /// response started well.
    ///
    /// A body dropped before its end records nothing under a stream guard
    /// (which marks the end of the protocol as the body's end). With no
    /// stream reader below, a body dropped after it delivered data, with
    /// no error and while no read of it was waiting on the route, records
    /// a success: an SDK stops reading at `data: [DONE]`, before the
    /// connection's end, and the route had answered. Dropped while a read
    /// waited (the caller's own timeout), or before any data, it records
    /// nothing. (The crate docs say why.)
    pub struct BreakerBody<B> {
        #[pin]
        inner: B,
        permit: Option<Permit>,
        // What a drop before the end records (the drop reads it).
        dropped: Dropped,
    }

    impl<B> PinnedDrop for BreakerBody<B> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if *this.dropped == Dropped::Delivered
                && let Some(permit) = this.permit.take()
            {
                permit.succeed();
            }
            // Otherwise the permit's own drop records nothing.
        }
    }
}

/// What a body dropped before its end says of its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dropped {
    /// Nothing: a stream reader below marks the protocol's end as the
    /// body's (the stream guard), so a drop before it is the caller's
    /// leaving before the answer was whole; or no data was delivered
    /// yet.
    Nothing,
    /// No reader below, no data delivered yet.
    Unread,
    /// No reader below, data delivered, and no read waiting on the route:
    /// a success when dropped.
    Delivered,
    /// No reader below, data delivered, and the last read was still
    /// waiting on the route when the body was dropped: nothing.
    Waiting,
}

impl<B: Body> BreakerBody<B> {
    /// `guarded`: a stream reader below reports on this body (the stream
    /// guard's [`UsageSlot`](seawall_core::UsageSlot) is in the response
    /// extensions), and ends it at the protocol's end.
    pub(crate) fn new(inner: B, permit: Option<Permit>, guarded: bool) -> Self {
        let permit = match permit {
            Some(permit) if inner.is_end_stream() => {
                permit.succeed();
                None
            }
            other => other,
        };
        let dropped = if guarded {
            Dropped::Nothing
        } else {
            Dropped::Unread
        };
        BreakerBody {
            inner,
            permit,
            dropped,
        }
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
        let frame = match this.inner.as_mut().poll_frame(cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                if *this.dropped == Dropped::Delivered {
                    *this.dropped = Dropped::Waiting;
                }
                return Poll::Pending;
            }
        };
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
                if *this.dropped != Dropped::Nothing && frame.is_data() {
                    *this.dropped = Dropped::Delivered;
                }
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
