use std::task::{Context, Poll};

use http::{Request, Response};
use tower_service::Service;

use super::ResponseFuture;

/// Writes the `content-encoding` of the inner service's responses the way
/// a decoder matches it. See the [module docs](crate::encoding).
#[derive(Debug, Clone, Copy)]
pub struct CanonicalEncoding<S> {
    pub(super) inner: S,
    pub(super) decoded: Option<&'static str>,
}

impl<S> CanonicalEncoding<S> {
    /// Wraps `inner`, leaving requests as they are.
    pub fn new(inner: S) -> Self {
        CanonicalEncoding {
            inner,
            decoded: None,
        }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for CanonicalEncoding<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        if let Some(decoded) = self.decoded {
            super::ask_only_for(request.headers_mut(), decoded);
        }
        ResponseFuture::new(self.inner.call(request))
    }
}
