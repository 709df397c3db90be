use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::BoxError;
use seawall_core::provider::Provider;
use seawall_core::recording::ReplayBody;
use tower_service::Service;

use crate::body::ResumeBody;
use crate::layer::Config;
use crate::report::Resumed;
use crate::service::ResumeRequestBody;

/// What a resumable call keeps until its response arrives.
pub(crate) struct Pending<S, O> {
    pub(crate) config: Arc<Config>,
    pub(crate) learned: Arc<crate::learned::Learned>,
    pub(crate) provider: Provider,
    pub(crate) service: S,
    pub(crate) head: Request<()>,
    /// The request's recording (a replay handle), until it is read.
    pub(crate) original: O,
}

pin_project! {
    /// The response future of [`Resume`](crate::Resume).
    pub struct ResponseFuture<S, B>
    where
        S: Service<Request<ResumeRequestBody<B>>>,
    {
        #[pin]
        inner: S::Future,
        pending: Option<Pending<S, ReplayBody<B>>>,
    }
}

impl<S, B> ResponseFuture<S, B>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    pub(crate) fn new(inner: S::Future, pending: Option<Pending<S, ReplayBody<B>>>) -> Self {
        ResponseFuture { inner, pending }
    }
}

impl<S, B> std::fmt::Debug for ResponseFuture<S, B>
where
    S: Service<Request<ResumeRequestBody<B>>>,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("resumable", &self.pending.is_some())
            .finish_non_exhaustive()
    }
}

/// A 2xx event stream: the only answer a continuation can extend.
fn is_event_stream<T>(response: &Response<T>) -> bool {
    response.status().is_success()
        && response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| {
                v.as_bytes()
                    .get(..17)
                    .is_some_and(|m| m.eq_ignore_ascii_case(b"text/event-stream"))
            })
}

impl<S, B, RB> Future for ResponseFuture<S, B>
where
    S: Service<Request<ResumeRequestBody<B>>, Response = Response<RB>>,
    S::Error: Into<BoxError>,
    B: Body + Unpin,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    type Output = Result<Response<ResumeBody<S, B, RB>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let response = ready!(this.inner.poll(cx)).map_err(Into::into)?;
        let Some(pending) = this.pending.take() else {
            return Poll::Ready(Ok(response.map(ResumeBody::passthrough)));
        };
        if !is_event_stream(&response) {
            return Poll::Ready(Ok(response.map(ResumeBody::passthrough)));
        }
        let resumed = Resumed::default();
        // A fallback route of another wire format served the answer from
        // its start: the caller reads it in that format, and a
        // continuation said in the request's format would land inside it
        // (billed, never shown, the answer called complete). Its cut is
        // reported as it came, with the text the caller was shown.
        let answered = crate::handoff::AnsweredIn::of(&response);
        let (mut parts, body) = response.into_parts();
        parts.extensions.insert(resumed.clone());
        if answered.is_some_and(|answered| answered != pending.provider) {
            return Poll::Ready(Ok(Response::from_parts(
                parts,
                ResumeBody::unresumed(body, resumed, "another_format"),
            )));
        }
        // The request was sent before its answer's first content: the
        // recording is whole (a few `Bytes` handles) unless it hit its cap.
        let Pending {
            config,
            learned,
            provider,
            service,
            head,
            mut original,
        } = pending;
        let pending = Pending {
            config,
            learned,
            provider,
            service,
            head,
            original: (),
        };
        // A continuation is built from the request parsed whole and written
        // anew: bounded by the cap even where the recording kept a body
        // past it (one whole frame, kept for replay as a reference).
        let cap = pending.config.max_replay_bytes;
        // A body not yet sent to its end when the answer began (the server
        // answered before it read all of it, or never reads it) is read on
        // here only when its rest is known to fit the recording: reading
        // on past the cap would take bytes the upload still needs.
        let whole = match original.recorded_whole() {
            Some(whole) => Some(whole),
            None if original.rest_fits_recording() => read_recording(&mut original, cx),
            None => None,
        };
        let unsent = whole.is_none() && original.is_replayable();
        let Some(original) =
            whole.filter(|chunks| chunks.iter().map(Bytes::len).sum::<usize>() <= cap)
        else {
            let why = if unsent {
                "request_unsent"
            } else {
                "replay_cap"
            };
            return Poll::Ready(Ok(Response::from_parts(
                parts,
                ResumeBody::unresumed(body, resumed.clone(), why),
            )));
        };
        let report = parts
            .extensions
            .get::<seawall_stream::StreamReportHandle>()
            .cloned();
        // The span the caller reads the answer in: each resume's span is
        // its child. Looked up only when a subscriber records resumes.
        let parent = if tracing::enabled!(target: crate::body::TARGET, tracing::Level::INFO) {
            tracing::Span::current()
        } else {
            tracing::Span::none()
        };
        let body = ResumeBody::resuming(pending, original, resumed, body, report, parent);
        Poll::Ready(Ok(Response::from_parts(parts, body)))
    }
}

/// The recorded request body read to its end through a replay handle:
/// `None` when it is not whole now (over the replay cap, or its next
/// frame not there yet).
fn read_recording<B>(original: &mut ReplayBody<B>, cx: &mut Context<'_>) -> Option<Vec<Bytes>>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    let mut chunks = Vec::with_capacity(1);
    loop {
        match Pin::new(&mut *original).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    chunks.push(data);
                }
            }
            Poll::Ready(None) => return Some(chunks),
            Poll::Ready(Some(Err(_))) | Poll::Pending => return None,
        }
    }
}
