use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::{BoxError, Code};
use tokio::time::{Instant, Sleep};

use crate::future::{bound_passed, poll_timer};

pin_project! {
    /// A response body bounded by the operation's deadline.
    ///
    /// Bodies of per-attempt bounds and of requests without a deadline pass
    /// through untouched. When the deadline passes while the body waits for
    /// its next frame, the body yields a `deadline_exceeded`
    /// [`Failure`] whose evidence says how many bytes were delivered and
    /// whether any were (`content_seen`), then ends. A data frame that is
    /// ready after the deadline is still delivered, unless that frame was
    /// the body's last: the inner body is asked once more, and an end
    /// ready then (or trailers, then the end) ends the answer cleanly.
    /// Many bodies know their end only when asked again (hyper's chunked
    /// and HTTP/2 bodies, a stream guard that hands on the frame holding
    /// `[DONE]`): a whole answer read a moment late was failed, its end
    /// marker held back. An error ready then is the body's own verdict
    /// (a stream guard's `content_filtered` or `stream_interrupted`) and
    /// ends it in place of the deadline's failure; a data frame ready
    /// then is delivered too (taken from the body below, it would be
    /// lost), and the deadline's failure follows on the next poll
    /// without asking again, so a body that is always ready still ends.
    pub struct DeadlineBody<B> {
        #[pin]
        inner: B,
        // Created on the first `Pending`, like the response future's.
        #[pin]
        sleep: Option<Sleep>,
        // The deadline and when the operation started; `None` when the body
        // is not bounded, and once the deadline fired.
        bound: Option<(Instant, Instant)>,
        delivered: u64,
        phase: Phase,
    }
}

/// Where a bounded body stands against its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Frames pass, the deadline checked on each.
    InTime,
    /// A data frame came after the deadline: the inner body is asked once
    /// more, for its end.
    Overdue,
    /// Past the deadline and asked once more: the next poll fails.
    Cut,
    Ended,
}

impl<B> DeadlineBody<B> {
    pub(crate) fn new(inner: B, bound: Option<(Instant, Instant)>) -> Self {
        DeadlineBody {
            inner,
            sleep: None,
            bound,
            delivered: 0,
            phase: Phase::InTime,
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        match *this.phase {
            Phase::Ended => return Poll::Ready(None),
            Phase::InTime => {
                if let Poll::Ready(frame) = this.inner.as_mut().poll_frame(cx) {
                    if let Some(Ok(Some(data))) =
                        frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref))
                    {
                        *this.delivered += data.remaining() as u64;
                        // A body that is always ready never lets the timer
                        // fire: check the bound here too. Unless this frame
                        // ends the body: then the answer is whole (an answer
                        // read into memory and read late by its caller), and
                        // failing in place of its end would throw it away.
                        if let Some((deadline, _)) = *this.bound
                            && !this.inner.is_end_stream()
                            && Instant::now() >= deadline
                        {
                            *this.phase = Phase::Overdue;
                        }
                    }
                    return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
                }
                let Some((deadline, _)) = *this.bound else {
                    return Poll::Pending;
                };
                ready!(poll_timer(this.sleep, deadline, cx));
            }
            // A frame came after the deadline: what the inner body has
            // ready now is handed on, anything else is past the deadline.
            Phase::Overdue => match this.inner.as_mut().poll_frame(cx) {
                Poll::Ready(None) => {
                    *this.phase = Phase::Ended;
                    return Poll::Ready(None);
                }
                // The body's own verdict: its code and record are the
                // caller's answer, not the clock's.
                Poll::Ready(Some(Err(error))) => {
                    *this.phase = Phase::Ended;
                    return Poll::Ready(Some(Err(error.into())));
                }
                Poll::Ready(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        *this.delivered += data.remaining() as u64;
                        // Not asked again unless this frame was its last:
                        // a body that is always ready must still end.
                        if !this.inner.is_end_stream() {
                            *this.phase = Phase::Cut;
                        }
                    }
                    return Poll::Ready(Some(Ok(frame)));
                }
                Poll::Pending => {}
            },
            Phase::Cut => {}
        }
        // The deadline fired, or frames came after it; either way only a
        // bounded body gets here.
        *this.phase = Phase::Ended;
        let Some((_, started)) = this.bound.take() else {
            return Poll::Ready(None);
        };
        let delivered = *this.delivered;
        let failure = bound_passed(Code::DeadlineExceeded, started, |evidence| {
            evidence.bytes = delivered;
            evidence.content_seen = delivered > 0;
        });
        Poll::Ready(Some(Err(Box::new(failure))))
    }

    fn is_end_stream(&self) -> bool {
        self.phase == Phase::Ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: fmt::Debug> fmt::Debug for DeadlineBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineBody")
            .field("inner", &self.inner)
            .field("deadline", &self.bound.map(|(deadline, _)| deadline))
            .field("delivered", &self.delivered)
            .finish()
    }
}
