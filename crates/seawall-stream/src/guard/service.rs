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
            spans: AttemptSpans::of(request.extensions()).cloned(),
            #[cfg(feature = "metrics")]
            route: seawall_core::RouteId::of_request(&request),
            #[cfg(feature = "metrics")]
            bills: seawall_core::billable(request.method(), request.uri().path()),
            answer_by: AnswerBy::of(&request).map(|by| by.0.instant()),
            head_request: request.method() == http::Method::HEAD,
        };
        ResponseFuture::new(self.inner.call(request), setup)
    }
}
