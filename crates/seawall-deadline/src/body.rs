use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::{BoxError, Code, Evidence, Failure};
use tokio::time::{Instant, Sleep, sleep_until};

pin_project! {
    /// A response body bounded by the operation's deadline.
    ///
    /// Bodies of per-attempt bounds and of requests without a deadline pass
    /// through untouched. When the deadline passes while the body waits for
    /// its next frame, the body yields a `deadline_exceeded`
    /// [`Failure`] whose evidence says how many bytes were delivered and
    /// whether any were (`content_seen`), then ends. A data frame that is
    /// ready after the deadline is still delivered; the failure follows on
    /// the next poll.
    pub struct DeadlineBody<B> {
        #[pin]
        inner: B,
        // Created on the first `Pending`, like the response future's.
        #[pin]
        sleep: Option<Sleep>,
        // The deadline and when the operation started; `None` once it fired.
        bound: Option<(Instant, Instant)>,
        delivered: u64,
        // A ready frame came after the deadline: the next poll fails.
        overdue: bool,
        ended: bool,
    }
}

impl<B> DeadlineBody<B> {
    pub(crate) fn new(inner: B, bound: Option<(Instant, Instant)>) -> Self {
        DeadlineBody {
            inner,
            sleep: None,
            bound,
            delivered: 0,
            overdue: false,
            ended: false,
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
        if *this.ended {
            return Poll::Ready(None);
        }
        if !*this.overdue {
            if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
                if let Some(Ok(Some(data))) =
                    frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref))
                {
                    *this.delivered += data.remaining() as u64;
                    // A body that is always ready never lets the timer fire:
                    // check the bound here too.
                    if let Some((deadline, _)) = *this.bound
                        && Instant::now() >= deadline
                    {
                        *this.overdue = true;
                    }
                }
                return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
            }
            let Some((deadline, _)) = *this.bound else {
                return Poll::Pending;
            };
            if this.sleep.is_none() {
                this.sleep.set(Some(sleep_until(deadline)));
            }
            if let Some(sleep) = this.sleep.as_pin_mut()
                && sleep.poll(cx).is_pending()
            {
                return Poll::Pending;
            }
        }
        *this.ended = true;
        let mut evidence = Evidence::default();
        if let Some((_, started)) = *this.bound {
            evidence.elapsed = Some(Instant::now().saturating_duration_since(started));
        }
        evidence.bytes = *this.delivered;
        evidence.content_seen = *this.delivered > 0;
        let failure = Failure::new(Code::DeadlineExceeded).with_evidence(evidence);
        Poll::Ready(Some(Err(Box::new(failure))))
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
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
