//! An error nobody recognises, of the inner service or of a 2xx answer's
//! body, keeps its whole source chain in the failure's message: the
//! wrapper's words alone hide why, and a failure's text (its `Display`,
//! the log line) is all most callers see of it.

mod common;

use std::convert::Infallible;
use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use common::found;
use http::{Request, Response};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use seawall_classify::ClassifyLayer;
use seawall_core::Code;
use tower::{BoxError, Layer, ServiceExt, service_fn};

/// The cause, two links down.
#[derive(Debug)]
struct Root;

impl fmt::Display for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("quota file unreadable: permission denied")
    }
}

impl StdError for Root {}

/// A middleware's wrapper that says only that it failed.
#[derive(Debug)]
struct Outer(Root);

impl fmt::Display for Outer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("signing middleware failed")
    }
}

impl StdError for Outer {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[tokio::test]
async fn an_unknown_errors_root_cause_is_in_the_message() {
    let inner = service_fn(|_: Request<()>| async {
        Err::<Response<http_body_util::Empty<Bytes>>, BoxError>(Box::new(Outer(Root)))
    });
    let error = ClassifyLayer::openai()
        .layer(inner)
        .oneshot(Request::new(()))
        .await
        .expect_err("the inner service failed");
    let failure = found(&error);
    assert_eq!(failure.code(), Code::Unknown, "{failure}");
    let said = failure.to_string();
    assert!(said.contains("signing middleware failed"), "{said}");
    assert!(
        said.contains("quota file unreadable: permission denied"),
        "{said}"
    );
    // The client's own error is still there to downcast.
    assert!(failure.cause().is_some_and(|cause| cause.is::<Outer>()));
}

/// A body whose first read fails with [`Outer`].
struct Broken(bool);

impl Body for Broken {
    type Data = Bytes;
    type Error = Outer;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Outer>>> {
        if self.0 {
            return Poll::Ready(None);
        }
        self.0 = true;
        Poll::Ready(Some(Err(Outer(Root))))
    }
}

#[tokio::test]
async fn a_broken_answers_root_cause_is_in_the_message() {
    let mut answer = Some(
        Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(Broken(false))
            .unwrap(),
    );
    let inner = service_fn(move |_: Request<()>| {
        let answer = answer.take().expect("one call");
        async move { Ok::<_, Infallible>(answer) }
    });
    let result = ClassifyLayer::openai()
        .layer(inner)
        .oneshot(Request::new(()))
        .await;
    // Held to be classified, or handed on and broken when read: the
    // failure is the same either way.
    let error = match result {
        Err(error) => error,
        Ok(response) => response
            .into_body()
            .collect()
            .await
            .map(|_| ())
            .expect_err("the answer broke"),
    };
    let failure = found(&error);
    let said = failure.to_string();
    assert!(said.contains("signing middleware failed"), "{said}");
    assert!(
        said.contains("quota file unreadable: permission denied"),
        "{said}"
    );
}
