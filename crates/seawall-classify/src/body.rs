//! The response body ClassifyLayer hands on.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use seawall_core::provider::QuotaWall;
use seawall_core::{Code, Evidence, Failure, Interrupted};
use tower::BoxError;

use crate::grpc;

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
        Watching { head: Option<Bytes>, rest: Pin<Box<B>>, watch: Watch },
    }
}

/// What a body whose status comes in its trailers needs to judge them.
#[derive(Debug)]
struct Watch {
    status: u16,
    quota_wall: QuotaWall,
    frames: u64,
    bytes: u64,
    ended: bool,
}

impl Watch {
    /// The failure a bad end amounts to once messages reached the caller:
    /// an interruption, never a replay.
    fn interrupted(&mut self, cause: &Failure) -> BoxError {
        self.ended = true;
        let mut evidence = Evidence::default();
        evidence.status = Some(self.status);
        evidence.bytes = self.bytes;
        evidence.chunks = self.frames;
        evidence.content_seen = true;
        let mut delivered = Interrupted::default();
        delivered.content_events = self.frames;
        delivered.bytes = self.bytes;
        delivered.cause = Some(cause.code());
        let failure = Failure::interrupted_by(cause)
            .with_evidence(evidence)
            .with_interrupted(delivered);
        tracing::warn!(
            target: "seawall::classify",
            code = failure.code().as_str(),
            cause = cause.code().as_str(),
            bytes = self.bytes,
            "gRPC status failed after messages"
        );
        Box::new(failure)
    }

    /// The next frame of the watched body, judged.
    fn judge<E: Into<BoxError>>(
        &mut self,
        frame: Option<Result<Frame<Bytes>, E>>,
    ) -> Option<Result<Frame<Bytes>, BoxError>> {
        let frame = match frame {
            None if self.ended => return None,
            None => {
                let cause = Failure::new(Code::ProtocolViolation)
                    .with_message("the gRPC answer ended without a grpc-status");
                return Some(Err(self.interrupted(&cause)));
            }
            Some(Err(error)) => {
                self.ended = true;
                return Some(Err(error.into()));
            }
            Some(Ok(frame)) => frame,
        };
        if let Some(data) = frame.data_ref() {
            self.frames += 1;
            self.bytes += data.len() as u64;
            return Some(Ok(frame));
        }
        let Some(trailers) = frame.trailers_ref() else {
            return Some(Ok(frame));
        };
        match grpc::trailers_status(self.status, trailers, self.quota_wall) {
            grpc::Status::Ok => {
                self.ended = true;
                Some(Ok(frame))
            }
            grpc::Status::Failed(cause) => Some(Err(self.interrupted(&cause))),
            grpc::Status::Absent => {
                let cause = Failure::new(Code::ProtocolViolation)
                    .with_message("the gRPC trailers carry no grpc-status");
                Some(Err(self.interrupted(&cause)))
            }
        }
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

    /// A gRPC answer whose first message is `head`: the trailers that end
    /// it are judged as they pass.
    pub(crate) fn watching_trailers(
        head: Bytes,
        rest: Pin<Box<B>>,
        status: u16,
        quota_wall: QuotaWall,
    ) -> Self {
        ClassifiedBody {
            kind: Kind::Watching {
                watch: Watch {
                    status,
                    quota_wall,
                    frames: 1,
                    bytes: head.len() as u64,
                    ended: false,
                },
                head: Some(head),
                rest,
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
            Kind::Watching { head, .. } => ("watching_trailers", head.as_ref().map(Bytes::len)),
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
            KindProj::Watching { head, rest, watch } => {
                if let Some(head) = head.take() {
                    return Poll::Ready(Some(Ok(Frame::data(head))));
                }
                if watch.ended {
                    return Poll::Ready(None);
                }
                let frame = ready!(rest.as_mut().poll_frame(cx));
                return Poll::Ready(watch.judge(frame));
            }
        };
        poll.map(|frame| frame.map(|result| result.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Inner { body } => body.is_end_stream(),
            Kind::Read { data, trailers } => data.is_none() && trailers.is_none(),
            Kind::Resumed { head, rest } => head.is_none() && rest.is_end_stream(),
            // The end must be polled: it is where the status is judged.
            Kind::Watching { head, watch, .. } => head.is_none() && watch.ended,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Inner { body } => body.size_hint(),
            Kind::Read { data, .. } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Kind::Resumed { head, rest } | Kind::Watching { head, rest, .. } => {
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
