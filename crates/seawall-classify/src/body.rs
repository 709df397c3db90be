//! The response body ClassifyLayer hands on.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tower::BoxError;

pin_project! {
    /// The body of a response that passed [`ClassifyLayer`](crate::ClassifyLayer).
    ///
    /// Streams and unread bodies are the inner body, untouched. A checked
    /// unary body is the bytes that were read. A body that was read in part
    /// and then handed on (past the check cap, or not a JSON object) replays
    /// what was read and continues with the rest: nothing is lost.
    pub struct ClassifiedBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProj]
    enum Kind<B> {
        Inner { #[pin] body: B },
        Read { data: Option<Bytes>, trailers: Option<HeaderMap> },
        Resumed { head: Option<Bytes>, rest: Pin<Box<B>> },
    }
}

impl<B> ClassifiedBody<B> {
    pub(crate) fn inner(body: B) -> Self {
        ClassifiedBody {
            kind: Kind::Inner { body },
        }
    }

    pub(crate) fn read(data: Bytes, trailers: Option<HeaderMap>) -> Self {
        ClassifiedBody {
            kind: Kind::Read {
                data: (!data.is_empty()).then_some(data),
                trailers,
            },
        }
    }

    pub(crate) fn resumed(head: Bytes, rest: Pin<Box<B>>) -> Self {
        ClassifiedBody {
            kind: Kind::Resumed {
                head: (!head.is_empty()).then_some(head),
                rest,
            },
        }
    }
}

/// Names the variant and the bytes held, without asking the inner body to
/// be `Debug`.
impl<B> fmt::Debug for ClassifiedBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, held) = match &self.kind {
            Kind::Inner { .. } => ("inner", None),
            Kind::Read { data, .. } => ("read", data.as_ref().map(Bytes::len)),
            Kind::Resumed { head, .. } => ("resumed", head.as_ref().map(Bytes::len)),
        };
        f.debug_struct("ClassifiedBody")
            .field("kind", &kind)
            .field("held", &held.unwrap_or(0))
            .finish()
    }
}

impl<B> Body for ClassifiedBody<B>
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
        let poll = match self.project().kind.project() {
            KindProj::Inner { body } => body.poll_frame(cx),
            KindProj::Read { data, trailers } => {
                let frame = match data.take() {
                    Some(data) => Some(Frame::data(data)),
                    None => trailers.take().map(Frame::trailers),
                };
                return Poll::Ready(frame.map(Ok));
            }
            KindProj::Resumed { head, rest } => match head.take() {
                Some(head) => return Poll::Ready(Some(Ok(Frame::data(head)))),
                None => rest.as_mut().poll_frame(cx),
            },
        };
        poll.map(|frame| frame.map(|result| result.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Read { data, trailers } => data.is_none() && trailers.is_none(),
            Kind::Resumed { head, rest } => head.is_none() && rest.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Read { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Resumed { head, rest } => {
                let head = head.as_ref().map_or(0, |h| h.len() as u64);
                let rest = rest.size_hint();
                let mut hint = SizeHint::new();
                hint.set_lower(rest.lower().saturating_add(head));
                if let Some(upper) = rest.upper() {
                    hint.set_upper(upper.saturating_add(head));
                }
                hint
            }
        }
    }
}
