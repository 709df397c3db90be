use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use seawall_core::facts::OperationSlots;
use seawall_core::provider::Provider;
use seawall_core::recording::ReplayBody;
use seawall_core::{AnswerBy, BoxError, RequestFacts};
use tower_service::Service;

use crate::future::{Pending, ResponseFuture};
use crate::layer::Config;
use crate::learned::Learned;

/// The service [`ResumeLayer`](crate::ResumeLayer) builds.
#[derive(Debug, Clone)]
pub struct Resume<S> {
    inner: S,
    config: Arc<Config>,
    /// The styles refusals taught, shared by this service's clones.
    learned: Arc<Learned>,
}

impl<S> Resume<S> {
    pub(crate) fn new(inner: S, config: Arc<Config>) -> Self {
        Resume {
            inner,
            config,
            learned: Arc::default(),
        }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S, B, RB> Service<Request<B>> for Resume<S>
where
    S: Service<Request<ResumeRequestBody<B>>, Response = Response<RB>> + Clone,
    S::Error: Into<BoxError>,
    B: Body + Unpin,
    B::Error: Into<BoxError>,
    RB: Body<Data = Bytes>,
    RB::Error: Into<BoxError>,
{
    type Response = Response<crate::ResumeBody<S, B, RB>>;
    type Error = BoxError;
    type Future = ResponseFuture<S, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        // Only a generation is continued: a stored response read again
        // (`GET …/responses/{id}`) has the Responses API's path but no
        // question to ask again.
        let provider = Provider::for_generation(request.method(), request.uri().path())
            .filter(|p| *p != Provider::Http);
        let Some(provider) = provider.filter(|_| self.config.max_resumes > 0) else {
            let request = request.map(|body| ResumeRequestBody::original(ReplayBody::once(body)));
            return ResponseFuture::new(self.inner.call(request), None);
        };
        // The operation's own deadline, for the slots: the continuation's
        // ladder below finds them made and the stream guard reads the
        // deadline there (the one a total bound kept beside a `Deadline`
        // narrowed to the caller's `AnswerBy`, as `AnswerBy::lift` below
        // puts back).
        let slots = OperationSlots::of_request(&request);
        let (mut parts, body) = request.into_parts();
        // The recording tells the layers below what the body asked for,
        // as the retry layer's would.
        let slot = Arc::new(slots);
        if parts.extensions.get::<RequestFacts>().is_none() {
            let facts = RequestFacts::from_parts(&parts).with_slots(slot.clone());
            parts.extensions.insert(facts);
        }
        let body = ReplayBody::recorded(body, self.config.max_replay_bytes).fill_facts(slot);
        let original = body.replay().expect("a fresh recording replays");
        let mut head = Request::new(());
        *head.method_mut() = parts.method.clone();
        *head.uri_mut() = parts.uri.clone();
        *head.version_mut() = parts.version;
        *head.headers_mut() = parts.headers.clone();
        *head.extensions_mut() = parts.extensions.clone();
        // The head serves once content was shown: the caller's wait for
        // its answer to begin is over, so whether to resume, and the
        // continuation's ladder, go by the operation's own deadline.
        AnswerBy::lift(&mut head);
        let request = Request::from_parts(parts, ResumeRequestBody::original(body));
        let future = self.inner.call(request);
        let pending = Pending {
            config: self.config.clone(),
            learned: self.learned.clone(),
            provider,
            service: self.inner.clone(),
            head,
            original,
        };
        ResponseFuture::new(future, Some(pending))
    }
}

/// The request body the inner service receives: the caller's, recorded
/// (the original request), or a continuation built by the layer.
pub struct ResumeRequestBody<B> {
    kind: Kind<B>,
}

enum Kind<B> {
    Original(ReplayBody<B>),
    Continuation(Option<Bytes>),
}

impl<B> ResumeRequestBody<B> {
    pub(crate) fn original(body: ReplayBody<B>) -> Self {
        ResumeRequestBody {
            kind: Kind::Original(body),
        }
    }

    pub(crate) fn continuation(bytes: Bytes) -> Self {
        // An empty body (a retrieval's GET) is ended from the start: no
        // `content-length: 0` on a GET.
        ResumeRequestBody {
            kind: Kind::Continuation(Some(bytes).filter(|b| !b.is_empty())),
        }
    }

    /// True for a continuation the layer built.
    pub fn is_continuation(&self) -> bool {
        matches!(self.kind, Kind::Continuation(_))
    }
}

impl<B> std::fmt::Debug for ResumeRequestBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumeRequestBody")
            .field("continuation", &self.is_continuation())
            .finish_non_exhaustive()
    }
}

impl<B> Body for ResumeRequestBody<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().kind {
            Kind::Original(body) => Pin::new(body).poll_frame(cx),
            Kind::Continuation(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Original(body) => body.is_end_stream(),
            Kind::Continuation(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Original(body) => body.size_hint(),
            Kind::Continuation(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.remaining() as u64))
            }
        }
    }
}
