//! The replay boundary, with a retry layer outside the guard: a failure
//! before the first content event is retried and the caller gets exactly
//! one clean answer; a failure after content is never retried and the
//! caller gets the delivered prefix plus the interruption.

mod common;

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use common::*;
use seawall_core::{Action, BoxError, Code, Failure};
use seawall_stream::StreamGuardLayer;
use tower::retry::{Policy, RetryLayer};
use tower::{ServiceBuilder, ServiceExt};

/// Retries only failures whose action is `retry`, a few times.
#[derive(Clone)]
struct RetryRetryable {
    left: usize,
}

impl<Res> Policy<http::Request<()>, Res, BoxError> for RetryRetryable {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        _request: &mut http::Request<()>,
        result: &mut Result<Res, BoxError>,
    ) -> Option<Self::Future> {
        let error = result.as_ref().err()?;
        let retryable = Failure::find(&**error).is_some_and(|f| f.action() == Action::Retry);
        (retryable && self.left > 0).then(|| {
            self.left -= 1;
            ready(())
        })
    }

    fn clone_request(&mut self, request: &http::Request<()>) -> Option<http::Request<()>> {
        Some(http::Request::post(request.uri().clone()).body(()).unwrap())
    }
}

const OVERLOADED: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
const GOOD: &str = include_str!("fixtures/anthropic/normal.sse");

/// A provider whose n-th answer is `scripts[n]`.
fn provider(
    scripts: Vec<Vec<Step>>,
    calls: Arc<AtomicUsize>,
) -> impl tower::Service<
    http::Request<()>,
    Response = http::Response<ChannelBody>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    let scripts = Arc::new(std::sync::Mutex::new(scripts.into_iter()));
    tower::service_fn(move |_req: http::Request<()>| {
        calls.fetch_add(1, Ordering::SeqCst);
        let script = scripts.lock().unwrap().next().expect("a scripted answer");
        async move { Ok::<_, Infallible>(sse(scripted(script))) }
    })
}

#[tokio::test(start_paused = true)]
async fn failure_before_content_is_retried_into_one_clean_answer() {
    let calls = Arc::new(AtomicUsize::new(0));
    let scripts = vec![
        // Overloaded in-stream, before any content.
        vec![send(OVERLOADED)],
        // A 40-byte frame, then EOF.
        vec![send(Bytes::copy_from_slice(&GOOD.as_bytes()[..40]))],
        vec![send(GOOD)],
    ];
    let service = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryRetryable { left: 3 }))
        .layer(StreamGuardLayer::interactive())
        .service(provider(scripts, calls.clone()));
    let response = service.oneshot(request(MESSAGES)).await.expect("retried");
    let d = drain(response).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(d.error.is_none());
    assert_eq!(
        d.bytes,
        GOOD.as_bytes(),
        "exactly one clean answer, nothing of the failed attempts"
    );
    assert!(d.report.completed_task());
}

#[tokio::test(start_paused = true)]
async fn failure_after_content_is_never_retried() {
    let calls = Arc::new(AtomicUsize::new(0));
    let cut = GOOD.find("event: content_block_stop").unwrap();
    let prefix = &GOOD[..cut];
    let scripts = vec![vec![send(prefix), wait(1.0), Step::Reset], vec![send(GOOD)]];
    let service = ServiceBuilder::new()
        .layer(RetryLayer::new(RetryRetryable { left: 3 }))
        .layer(StreamGuardLayer::interactive())
        .service(provider(scripts, calls.clone()));
    let response = service
        .oneshot(request(MESSAGES))
        .await
        .expect("released at content");
    let d = drain(response).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never replayed");
    assert_eq!(
        d.bytes,
        prefix.as_bytes(),
        "the caller has the delivered prefix"
    );
    let failure = d.error.expect("and the interruption");
    assert_eq!(failure.code(), Code::StreamInterrupted);
    assert_eq!(failure.action(), Action::Surface);
    let delivered = failure.interrupted().unwrap();
    assert_eq!(delivered.delivered_text.as_deref(), Some("Hello, world!"));
    assert_eq!(delivered.bytes, prefix.len() as u64);
}
