//! A `Stack`'s classifier judges a rate limit's hint a quota wall only
//! past the ladder's `max_retry_after` when that is longer than the
//! default wall: raising the bound makes the ladder wait such a hint, not
//! return it as `quota_exhausted` (tokio's paused clock).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{Code, Failure};
use seawall::retry::RetryPolicy;
use seawall::stack::Stack;
use tokio::time::Instant;
use tower::{ServiceExt, service_fn};

const SEC: Duration = Duration::from_secs(1);

const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per day (RPD): Limit 10000, Used 10000, Requested 1. Please try again in 4m0s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

const ANSWER: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// Runs one operation through `stack` over a provider that answers its
/// first call 429 ("try again in 4m", `retry-after: 240`), then 200: the
/// instants of its calls, and the failure if the operation failed.
async fn run(stack: Stack, classify: ClassifyLayer) -> (Vec<Instant>, Option<Code>) {
    run_told(stack, classify, "240").await
}

/// [`run`], the 429 saying `retry-after: <retry_after>`.
async fn run_told(
    stack: Stack,
    classify: ClassifyLayer,
    retry_after: &'static str,
) -> (Vec<Instant>, Option<Code>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let client = {
        let calls = calls.clone();
        service_fn(move |_request: http::Request<ReplayBody<Full<Bytes>>>| {
            let first = {
                let mut calls = calls.lock().unwrap();
                calls.push(Instant::now());
                calls.len() == 1
            };
            async move {
                let (status, body) = if first {
                    (429, RATE_LIMITED)
                } else {
                    (200, ANSWER)
                };
                Ok::<_, Infallible>(
                    http::Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .header("retry-after", retry_after)
                        .body(Full::new(Bytes::from_static(body.as_bytes())))
                        .unwrap(),
                )
            }
        })
    };
    let request = http::Request::post("https://api.openai.example/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(br#"{"model":"gpt-4o"}"#)))
        .unwrap();
    let outcome = stack.build(&classify, client).oneshot(request).await;
    let failed = outcome
        .err()
        .map(|error| Failure::find(&*error).expect("a seawall failure").code());
    let calls = calls.lock().unwrap().clone();
    (calls, failed)
}

fn patient() -> Stack {
    Stack::batch()
        .retry_policy(RetryPolicy::batch().max_retry_after(300 * SEC))
        .seed(1)
}

#[tokio::test(start_paused = true)]
async fn a_longer_max_retry_after_waits_a_hint_past_the_default_wall() {
    let (calls, failed) = run(patient(), ClassifyLayer::openai()).await;
    assert_eq!(failed, None, "waited out and answered");
    assert_eq!(calls.len(), 2);
    assert!(
        calls[1] - calls[0] >= 240 * SEC,
        "{:?}",
        calls[1] - calls[0]
    );
}

/// Without the longer bound, the default wall stands: a wall, at once.
#[tokio::test(start_paused = true)]
async fn the_default_bound_keeps_the_default_wall() {
    let (calls, failed) = run(Stack::batch().seed(1), ClassifyLayer::openai()).await;
    assert_eq!(failed, Some(Code::QuotaExhausted));
    assert_eq!(calls.len(), 1);
}

/// A wall the classifier was given is the caller's word: kept.
#[tokio::test(start_paused = true)]
async fn a_wall_given_to_the_classifier_is_kept() {
    let classify = ClassifyLayer::openai().quota_wall(30 * SEC);
    let (calls, failed) = run(patient(), classify).await;
    assert_eq!(failed, Some(Code::QuotaExhausted));
    assert_eq!(calls.len(), 1);
}

/// A bound at or past the hint's clamp (a week) raises the wall only to
/// below it: a hint at the clamp is "a week or more", still a wall.
#[tokio::test(start_paused = true)]
async fn a_bound_past_the_clamp_leaves_a_week_a_wall() {
    let endless = Stack::batch()
        .retry_policy(RetryPolicy::batch().max_retry_after(Duration::MAX))
        .seed(1);
    let month = "2592000";
    let (calls, failed) = run_told(endless, ClassifyLayer::openai(), month).await;
    assert_eq!(failed, Some(Code::QuotaExhausted));
    assert_eq!(calls.len(), 1);
}
