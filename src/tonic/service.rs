use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{Request, Response};
use http_body::Body;
use pin_project_lite::pin_project;
use seawall_core::BoxError;
use tower_service::Service;

use super::{StatusBody, into_status};

/// The service [`GrpcStatusLayer`](super::GrpcStatusLayer) makes: `S`, its
/// errors and its body's as `tonic::Status`es where they carry a seawall
/// failure.
#[derive(Debug, Clone)]
pub struct GrpcStatus<S> {
    inner: S,
    server: bool,
}

impl<S> GrpcStatus<S> {
    /// Wraps `inner`, for a client.
    pub fn new(inner: S) -> Self {
        GrpcStatus {
            inner,
            server: false,
        }
    }

    /// Wraps `inner`, for a server: see [`GrpcStatusLayer::server`].
    ///
    /// [`GrpcStatusLayer::server`]: super::GrpcStatusLayer::server
    pub fn server(inner: S) -> Self {
        GrpcStatus {
            inner,
            server: true,
        }
    }

    seawall_core::define_inner_service_accessors!();
}

impl<S, B, ResBody> Service<Request<B>> for GrpcStatus<S>
where
    S: Service<Request<B>, Response = Response<ResBody>>,
    S::Error: Into<BoxError>,
    ResBody: Body,
    ResBody::Error: Into<BoxError>,
{
    type Response = Response<StatusBody<ResBody>>;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner
            .poll_ready(cx)
            .map_err(|error| into_status(error.into()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        ResponseFuture {
            inner: self.inner.call(request),
            server: self.server,
        }
    }
}

pin_project! {
    /// The response future of [`GrpcStatus`].
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        server: bool,
    }
}

impl<F, ResBody, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
    E: Into<BoxError>,
    ResBody: Body,
    ResBody::Error: Into<BoxError>,
{
    type Output = Result<Response<StatusBody<ResBody>>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let server = *this.server;
        let result = ready!(this.inner.poll(cx));
        Poll::Ready(match result {
            Ok(response) => Ok(response.map(|body| StatusBody::new(body, server))),
            Err(error) => Err(into_status(error.into())),
        })
    }
}
