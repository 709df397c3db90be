//! A rate limit's hint inside a stream meets the guard's quota wall: the
//! threshold a user gives the classifier for a 429 means the same when the
//! provider says it in an error event.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use seawall_core::{Code, Failure};
use seawall_stream::StreamGuardLayer;

/// Errors sent as a stream's first event, each with a five-minute hint.
const FIVE_MINUTES: [(&str, &str); 4] = [
    (
        CHAT,
        "data: {\"error\":{\"message\":\"Rate limit reached for requests. Please try again in 5m0s.\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n",
    ),
    (
        RESPONSES,
        "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached for requests. Please try again in 5m0s.\",\"param\":null,\"sequence_number\":0}\n\n",
    ),
    (
        RESPONSES,
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached for requests. Please try again in 5m0s.\"},\"output\":[]}}\n\n",
    ),
    (
        GEMINI,
        "data: {\"error\":{\"code\":429,\"message\":\"Resource has been exhausted.\",\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\":\"300s\"}]}}\n\n",
    ),
];

async fn first_failure(layer: StreamGuardLayer, path: &str, body: &str) -> Failure {
    match call(
        layer,
        path,
        Full::new(Bytes::copy_from_slice(body.as_bytes())),
    )
    .await
    {
        Ok(response) => panic!("expected a failure, got {:?}", drain(response).await.report),
        Err(e) => Failure::downcast(e).expect("a Failure"),
    }
}

#[tokio::test]
async fn the_default_wall_calls_five_minutes_a_quota() {
    for (path, body) in FIVE_MINUTES {
        let failure = first_failure(StreamGuardLayer::interactive(), path, body).await;
        assert_eq!(failure.code(), Code::QuotaExhausted, "{path}: {failure:?}");
        assert!(failure.reset_at().is_some(), "{path}: {failure:?}");
    }
}

#[tokio::test]
async fn a_higher_wall_calls_five_minutes_a_rate_limit() {
    let layer = StreamGuardLayer::interactive().quota_wall(Duration::from_secs(600));
    assert_eq!(layer.given_quota_wall(), Some(Duration::from_secs(600)));
    for (path, body) in FIVE_MINUTES {
        let failure = first_failure(layer.clone(), path, body).await;
        assert_eq!(failure.code(), Code::RateLimited, "{path}: {failure:?}");
        assert_eq!(
            failure.retry_after(),
            Some(Duration::from_secs(300)),
            "{path}: {failure:?}"
        );
    }
}

#[tokio::test]
async fn a_lower_wall_calls_a_shorter_hint_a_quota() {
    // Thirty seconds, under the default wall, over this one.
    let layer = StreamGuardLayer::interactive().quota_wall(Duration::from_secs(20));
    let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limit reached. Please try again in 30s.\"}}\n\n";
    let default = first_failure(StreamGuardLayer::interactive(), MESSAGES, body).await;
    assert_eq!(default.code(), Code::RateLimited, "{default:?}");
    let failure = first_failure(layer, MESSAGES, body).await;
    assert_eq!(failure.code(), Code::QuotaExhausted, "{failure:?}");
}
