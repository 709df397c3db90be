use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use seawall_core::{Progress, RequestFacts};
use tokio::time::Instant;
use tower::BoxError;
use tower_service::Service;

use crate::classifier::Classifier;
use crate::future::{RequestMethod, ResponseFuture, classify_inner_error};
use crate::layer::Settings;
use crate::{ClassifiedBody, ProviderClassifier};

/// The service [`ClassifyLayer`](crate::ClassifyLayer) builds.
///
/// Its error is a `tower::BoxError` holding a
/// [`Failure`](seawall_core::Failure): find it with `Failure::find`.
#[derive(Debug)]
pub struct Classify<S, C = ProviderClassifier> {
    inner: S,
    classifier: Arc<C>,
    settings: Settings,
}

impl<S, C> Classify<S, C> {
    pub(crate) fn new(inner: S, classifier: Arc<C>, settings: Settings) -> Self {
        Classify {
            inner,
            classifier,
            settings,
        }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S: Clone, C> Clone for Classify<S, C> {
    fn clone(&self) -> Self {
        Classify {
            inner: self.inner.clone(),
            classifier: Arc::clone(&self.classifier),
            settings: self.settings,
        }
    }
}

impl<S, C, B, ResBody> Service<Request<B>> for Classify<S, C>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    S::Error: Into<BoxError>,
    ResBody: Body<Data = Bytes>,
    ResBody::Error: Into<BoxError>,
    C: Classifier,
{
    type Response = Response<ClassifiedBody<ResBody>>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future, C, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(|error| {
            classify_inner_error(&*self.classifier, &self.settings, error.into(), |_| {})
        })
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let started = Instant::now();
        let progress = Progress::of_request(&request);
        let facts = RequestFacts::of_request(&request);
        let method = RequestMethod::of(request.method());
        ResponseFuture::new(
            self.inner.call(request),
            Arc::clone(&self.classifier),
            self.settings,
            started,
            facts,
            progress,
            method,
        )
    }
}
