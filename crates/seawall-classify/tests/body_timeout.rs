//! A body tower-http's `ResponseBodyTimeout` ends under the layer is a
//! `timeout`, as a client's own read timeout is: on a unary answer the
//! layer checks, and on a stream it hands on.

mod common;

use std::time::Duration;

use common::{Chunks, found};
use http::{Request, Response};
use http_body_util::BodyExt;
use seawall_classify::{ClassifiedBody, ClassifyLayer};
use seawall_core::{Code, Failure};
use tower::{BoxError, Layer, ServiceExt, service_fn};
use tower_http::timeout::{ResponseBodyTimeoutLayer, TimeoutBody};

/// The answer of an inner service that sends `first` and then nothing,
/// under a 10-second body timeout, through the OpenAI layer.
async fn stalled_under_body_timeout(
    content_type: &str,
    first: &'static str,
) -> Result<Response<ClassifiedBody<TimeoutBody<Chunks>>>, BoxError> {
    let mut response = Some(
        Response::builder()
            .status(200)
            .header("content-type", content_type)
            .body(Chunks::new([first]).then_pending())
            .unwrap(),
    );
    let inner = service_fn(move |_: Request<()>| {
        let response = response.take().expect("one call");
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let timed = ResponseBodyTimeoutLayer::new(Duration::from_secs(10)).layer(inner);
    ClassifyLayer::openai()
        .layer(timed)
        .oneshot(Request::new(()))
        .await
}

#[tokio::test(start_paused = true)]
async fn a_checked_answer_whose_body_times_out_is_a_timeout() {
    let error = stalled_under_body_timeout("application/json", r#"{"choices":[{"index":0,"#)
        .await
        .map(|_| ())
        .expect_err("the body never ends");
    assert_eq!(found(&error).code(), Code::Timeout, "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_stream_whose_body_times_out_is_a_timeout() {
    let first = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let response = stalled_under_body_timeout("text/event-stream", first)
        .await
        .expect("a stream is handed on");
    let mut body = std::pin::pin!(response.into_body());
    let frame = body
        .frame()
        .await
        .expect("a frame")
        .expect("the first chunk");
    assert_eq!(frame.into_data().unwrap(), first);
    let error = body
        .frame()
        .await
        .expect("an end")
        .expect_err("the body never ends");
    let failure = Failure::find(&*error).unwrap_or_else(|| panic!("not a failure: {error}"));
    assert_eq!(failure.code(), Code::Timeout, "{error}");
}
