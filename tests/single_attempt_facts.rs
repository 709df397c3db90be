//! A ladder of one attempt (`RetryPolicy::no_wait(1)`, or any policy of
//! `max_attempts(1)`) still tells the layers below what the request body
//! asked for, as a ladder that may retry does: the breaker cools only the
//! model a per-model limit names, and classification reads a stream
//! labelled `application/json` as the stream it was asked for. A caller
//! that put its own `RequestFacts` in the request keeps them, with the
//! body's facts added.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::breaker::BreakerLayer;
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, Code, Failure, RequestFacts};
use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tower::{Layer, Service, ServiceExt, service_fn};

const RATE_LIMITED: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 30s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;

const ANSWER: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

const STREAM: &str = concat!(
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

type Body = ReplayBody<Full<Bytes>>;

fn answer(status: u16, content_type: &str, body: &'static str) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::builder()
        .status(status)
        .header("content-type", content_type);
    if status == 429 {
        response = response.header("retry-after", "30");
    }
    response
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

fn ask(body: String) -> http::Request<Full<Bytes>> {
    http::Request::post("https://api.openai.example/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

fn chat(model: &str) -> http::Request<Full<Bytes>> {
    ask(format!(
        r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]}}"#
    ))
}

/// A provider that rate-limits gpt-4o alone (OpenAI's per-model limit)
/// and answers every other model; counts its calls.
fn per_model_limits(
    calls: Arc<AtomicUsize>,
) -> impl Service<
    http::Request<Body>,
    Response = http::Response<Full<Bytes>>,
    Error = Infallible,
    Future = impl Send,
> + Clone {
    service_fn(move |request: http::Request<Body>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let body = request.into_body().collect().await.unwrap().to_bytes();
            let limited = body
                .windows(br#""model":"gpt-4o""#.len())
                .any(|window| window == br#""model":"gpt-4o""#);
            Ok::<_, Infallible>(if limited {
                answer(429, "application/json", RATE_LIMITED)
            } else {
                answer(200, "application/json", ANSWER)
            })
        }
    })
}

fn code(error: &BoxError) -> Code {
    Failure::find(&**error).expect("a seawall failure").code()
}

async fn cools_only_the_limited_model(attempts: u32, callers_facts: bool) {
    let calls = Arc::new(AtomicUsize::new(0));
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(attempts), Budget::unlimited());
    let stack = ladder.layer(
        BreakerLayer::new().layer(ClassifyLayer::openai().layer(per_model_limits(calls.clone()))),
    );
    let with_facts = |mut request: http::Request<Full<Bytes>>| {
        if callers_facts {
            let facts = RequestFacts::from_head(&request);
            request.extensions_mut().insert(facts);
        }
        request
    };

    let limited = stack.clone().oneshot(with_facts(chat("gpt-4o"))).await;
    assert_eq!(code(&limited.unwrap_err()), Code::RateLimited);
    let before = calls.load(Ordering::SeqCst);

    let other = stack.oneshot(with_facts(chat("gpt-4o-mini"))).await;
    assert!(
        other.is_ok(),
        "gpt-4o's limit cooled the whole route: {:?}",
        other.err().map(|error| code(&error))
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before + 1,
        "gpt-4o-mini called"
    );
}

#[tokio::test(start_paused = true)]
async fn a_single_attempt_cools_only_the_model_a_limit_names() {
    cools_only_the_limited_model(1, false).await;
}

#[tokio::test(start_paused = true)]
async fn a_ladder_that_may_retry_cools_only_the_model_a_limit_names() {
    cools_only_the_limited_model(2, false).await;
}

#[tokio::test(start_paused = true)]
async fn a_callers_own_facts_still_get_the_bodys_model() {
    cools_only_the_limited_model(1, true).await;
    cools_only_the_limited_model(2, true).await;
}

/// A stream asked for in the body, answered as SSE under a JSON label (some
/// OpenAI-compatible servers do): read as the stream it is, with one
/// attempt as with several.
async fn reads_a_mislabelled_stream(attempts: u32) {
    let provider = service_fn(|request: http::Request<Body>| async move {
        let _ = request.into_body().collect().await;
        Ok::<_, Infallible>(answer(200, "application/json", STREAM))
    });
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(attempts), Budget::unlimited());
    let stack = ladder.layer(ClassifyLayer::openai().layer(provider));
    let request = ask(
        r#"{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}"#
            .to_owned(),
    );
    let response = match stack.oneshot(request).await {
        Ok(response) => response,
        Err(error) => panic!("{attempts} attempt(s): {:?}", code(&error)),
    };
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, STREAM.as_bytes(), "{attempts} attempt(s)");
}

#[tokio::test(start_paused = true)]
async fn a_single_attempt_reads_a_stream_labelled_json() {
    reads_a_mislabelled_stream(1).await;
}

#[tokio::test(start_paused = true)]
async fn a_ladder_that_may_retry_reads_a_stream_labelled_json() {
    reads_a_mislabelled_stream(2).await;
}
