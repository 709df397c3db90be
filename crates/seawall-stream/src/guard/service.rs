use seawall_core::provider::Provider;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use seawall_core::{AnswerBy, AttemptSpans, BoxError, Deadline, Progress, RequestFacts};
use tokio::time::Instant;
use tower_service::Service;

use super::future::ResponseFuture;
use super::stream::Setup;
use super::{Config, GuardBody};

/// The service built by [`StreamGuardLayer`](super::StreamGuardLayer).
#[derive(Debug, Clone)]
pub struct StreamGuard<S> {
    inner: S,
    config: Arc<Config>,
}

impl<S> StreamGuard<S> {
    pub(crate) fn new(inner: S, config: Arc<Config>) -> Self {
        StreamGuard { inner, config }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S, ReqBody, B> Service<Request<ReqBody>> for StreamGuard<S>
where
    S: Service<Request<ReqBody>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Response = Response<GuardBody<B>>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, B>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let facts = RequestFacts::of_request(&request);
        // Chosen now, from the request, and recorded in the report: a
        // generation's provider is in its facts already; any other path
        // (a stored response read again) is read here.
        let provider = self.config.provider.unwrap_or_else(|| {
            facts
                .provider()
                .or_else(|| Provider::for_path(request.uri().path()))
                .unwrap_or(Provider::Http)
        });
        let progress = Progress::of_request(&request);
        // The continuation of an answer (a resumed stream's, a background
        // response's stream retrieved after a cut) brings the rest of a
        // generation: a retrieval is a `GET`, yet its terminal event
        // carries the usage the cut stream never saw, counted nowhere
        // else. A stored response merely read again does not continue.
        #[cfg(feature = "metrics")]
        let bills =
            facts.continues() || seawall_core::billable(request.method(), request.uri().path());
        // The deadline the operation's total bound cuts the body at: the
        // one it keeps beside the `Deadline` (`AnswerBy::operation`), else
        // the one the operation's slots were made with (the retry ladder,
        // a fallback or a resume sets it as it receives the request; a
        // plain value read, no extension of its own). Not the `Deadline`
        // itself: a per-attempt bound, a fallback's reserve or the
        // caller's `AnswerBy` narrow that to an instant the body runs
        // past, and a caller stopping after it would be taken for one the
        // deadline cut. Where neither is known (no slots: a single
        // attempt's ladder, or none), where the body is cut is not known
        // here, and a stream dropped unfinished stays the caller's
        // `cancelled`.
        let operation_by = match AnswerBy::operation(&request) {
            Some(kept) => kept,
            None => facts.operation_deadline(),
        }
        .map(|deadline| deadline.instant());
        let setup = Setup {
            config: self.config.clone(),
            facts,
            recognised: None,
            json_array: provider == Provider::Gemini
                && seawall_core::facts::asks_json_array(request.uri()),
            provider,
            started: Instant::now(),
            // Only under a per-attempt bound (its progress counts): a
            // total bound's deadline bounds the body too, and handing on
            // before it would gain nothing.
            attempt_by: progress
                .as_ref()
                .and_then(|_| Deadline::of(&request))
                .map(|deadline| deadline.instant()),
            progress,
            spans: AttemptSpans::of(request.extensions()).map(|spans| Box::new(spans.clone())),
            #[cfg(feature = "metrics")]
            route: seawall_core::RouteId::of_request(&request),
            #[cfg(feature = "metrics")]
            bills,
            operation_by,
            answer_by: AnswerBy::of(&request).map(|by| by.0.instant()),
            head_request: request.method() == http::Method::HEAD,
        };
        ResponseFuture::new(self.inner.call(request), setup)
    }
}
