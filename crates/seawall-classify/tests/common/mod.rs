//! Canned inner services and instrumented bodies for the layer tests.
#![allow(dead_code)] // each test binary uses its own part of this module

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use seawall_classify::{ClassifiedBody, Classifier, ClassifyLayer};
use seawall_core::{Action, Class, Code, Failure};
use tower::{BoxError, Layer, ServiceExt, service_fn};

#[allow(unused_imports)] // each test binary uses its own part
pub(crate) use seawall_test::body::{Chunks, Repeat};

/// Sends one request through `layer` to an inner service that answers
/// `response`.
pub(crate) async fn through<C, B>(
    layer: &ClassifyLayer<C>,
    response: Response<B>,
) -> Result<Response<ClassifiedBody<B>>, BoxError>
where
    C: Classifier + Clone,
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    let mut response = Some(response);
    let inner = service_fn(move |_: Request<()>| {
        let response = response.take().expect("one call");
        async move { Ok::<_, Infallible>(response) }
    });
    layer.layer(inner).oneshot(Request::new(())).await
}

/// A response with a status, headers and a body given in chunks.
pub(crate) fn response(status: u16, headers: &[(&str, &str)], body: &str) -> Response<Chunks> {
    let mut builder = Response::builder().status(status);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(Chunks::new([body.to_owned()])).unwrap()
}

/// The failure in an error, or a panic naming the error.
pub(crate) fn found(error: &BoxError) -> &Failure {
    Failure::find(&**error).unwrap_or_else(|| panic!("not a failure: {error}"))
}

/// One expected classification.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expect {
    pub class: Class,
    pub code: Code,
    pub action: Action,
    pub retry_after: Option<Duration>,
}

pub(crate) const fn expect(class: Class, code: Code, action: Action) -> Expect {
    Expect {
        class,
        code,
        action,
        retry_after: None,
    }
}

impl Expect {
    pub(crate) const fn after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    pub(crate) fn check(&self, name: &str, failure: &Failure) {
        let got = (
            failure.class(),
            failure.code(),
            failure.action(),
            failure.retry_after(),
        );
        let want = (self.class, self.code, self.action, self.retry_after);
        assert_eq!(got, want, "{name}: {failure}");
    }
}

/// Reads a whole body into bytes.
pub(crate) async fn collect<B>(body: B) -> Bytes
where
    B: Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    use http_body_util::BodyExt;
    body.collect().await.unwrap().to_bytes()
}
