use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::BoxError;

use super::stream::Stream;

pin_project! {
    /// The response body of [`StreamGuard`](super::StreamGuard).
    ///
    /// For a response that is not a guarded stream it is the inner body,
    /// untouched. For a guarded stream it first replays the frames held
    /// back until the first content event, then passes frames through as
    /// they arrive; it ends with `None` only when the stream finished, and
    /// otherwise with an error holding a [`Failure`](seawall_core::Failure)
    /// (`stream_interrupted` or `truncated`, with the
    /// [`Interrupted`](seawall_core::Interrupted) record).
    pub struct GuardBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Passthrough {
            #[pin]
            body: B,
        },
        Guarded {
            stream: Pin<Box<Stream<B>>>,
        },
    }
}

impl<B> std::fmt::Debug for GuardBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardBody")
            .field("guarded", &self.is_guarded())
            .finish_non_exhaustive()
    }
}

impl<B> GuardBody<B> {
    pub(crate) fn passthrough(body: B) -> Self {
        GuardBody {
            kind: Kind::Passthrough { body },
        }
    }

    pub(crate) fn guarded(stream: Pin<Box<Stream<B>>>) -> Self {
        GuardBody {
            kind: Kind::Guarded { stream },
        }
    }

    /// True when the guard watches this body (an event stream); false when
    /// it passes through.
    pub fn is_guarded(&self) -> bool {
        matches!(self.kind, Kind::Guarded { .. })
    }
}

impl<B> GuardBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    /// Bytes the guard itself holds for this body: frames not yet replayed,
    /// the scanner's line and event buffers, and the delivered text. Each is
    /// bounded by its cap, whatever the stream sends.
    pub fn buffered_bytes(&self) -> usize {
        match &self.kind {
            Kind::Passthrough { .. } => 0,
            Kind::Guarded { stream } => stream.buffered(),
        }
    }
}

impl<B> Body for GuardBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.project().kind.project() {
            KindProj::Passthrough { body } => body
                .poll_frame(cx)
                .map(|frame| frame.map(|result| result.map_err(Into::into))),
            KindProj::Guarded { stream } => stream.as_mut().poll_live(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Passthrough { body } => body.is_end_stream(),
            Kind::Guarded { stream } => stream.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Passthrough { body } => body.size_hint(),
            Kind::Guarded { .. } => SizeHint::default(),
        }
    }
}
