//! The fallback chain in the assembled stack: every route rate-limited
//! briefly (the stack waits for the first back) or for long (it fails at
//! once with the earliest return time), on tokio's paused clock with
//! in-process upstreams and the stack's own breaker as the route registry.

mod common;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{BoxError, Code, Failure, Receipt, RouteId, StopReason};
use seawall::fallback::{FallbackLayer, FallbackRoute, ServedBy};
use seawall::retry::RetryPolicy;
use tokio::time::Instant;
use tower::{ServiceExt, service_fn};

const ANSWER: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"w1 w2"},"finish_reason":"stop"}]}"#;
const LIMITED: &str =
    r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;

/// An in-process OpenAI route: each call takes the next scripted
/// `Retry-After` (a 429 with that hint), an answer once the script is
/// used up; it counts its calls.
#[derive(Clone, Default)]
struct Upstream {
    calls: Arc<AtomicUsize>,
    limited_for: Arc<Mutex<VecDeque<u64>>>,
}

impl Upstream {
    fn limited(secs: u64) -> Self {
        Upstream {
            limited_for: Arc::new(Mutex::new(VecDeque::from([secs]))),
            ..Upstream::default()
        }
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn answer(&self) -> http::Response<Full<Bytes>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let builder = http::Response::builder().header("content-type", "application/json");
        match self.limited_for.lock().unwrap().pop_front() {
            Some(secs) => builder
                .status(429)
                .header("retry-after", secs.to_string())
                .body(Full::new(Bytes::from_static(LIMITED.as_bytes()))),
            None => builder.body(Full::new(Bytes::from_static(ANSWER.as_bytes()))),
        }
        .unwrap()
    }
}

fn chat_request() -> http::Request<Full<Bytes>> {
    common::post_json(
        "http://primary.example/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
    )
}

/// The stack with a 10 s deadline and a ladder that does not sleep a hint
/// over 1 s (a route rate-limited for longer is left at once), over the
/// primary and one fallback route, both in-process.
fn limited_stack(
    primary: &Upstream,
    backup: &Upstream,
) -> (
    seawall::stack::Stack,
    impl tower::Service<
        http::Request<Full<Bytes>>,
        Response = http::Response<impl http_body::Body>,
        Error = BoxError,
    >,
) {
    let stack = common::short_stack()
        .total_deadline(Duration::from_secs(10))
        .retry_policy(RetryPolicy::no_wait(3).max_retry_after(Duration::from_secs(1)));
    let classify = ClassifyLayer::openai();
    let primary = {
        let upstream = primary.clone();
        service_fn(
            move |_: http::Request<ReplayBody<ReplayBody<Full<Bytes>>>>| {
                let answer = upstream.answer();
                async move { Ok::<_, Infallible>(answer) }
            },
        )
    };
    let backup = {
        let upstream = backup.clone();
        service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
            let answer = upstream.answer();
            async move { Ok::<_, Infallible>(answer) }
        })
    };
    let fallback = FallbackLayer::chain([
        FallbackRoute::new(stack.attempt(&classify, backup)).route(RouteId::new("backup"))
    ]);
    let service = stack.build_with_fallback(&classify, primary, fallback);
    (stack, service)
}

#[tokio::test(start_paused = true)]
async fn every_route_rate_limited_for_2s_inside_10s_the_operation_waits_and_succeeds() {
    let primary = Upstream::limited(2);
    let backup = Upstream::limited(2);
    let (_stack, service) = limited_stack(&primary, &backup);
    let started = Instant::now();
    let response = service.oneshot(chat_request()).await.expect("an answer");
    let waited = started.elapsed();
    assert_eq!(
        waited,
        Duration::from_secs(2),
        "the first route back, at once"
    );
    // One attempt each, then the primary once more when it came back.
    assert_eq!((primary.calls(), backup.calls()), (2, 1));
    let served = response.extensions().get::<ServedBy>().unwrap();
    assert_eq!(
        served,
        &ServedBy {
            route: RouteId::new("primary.example"),
            fallback: false
        }
    );
    let receipt = response.extensions().get::<Receipt>().unwrap();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(
        codes,
        [Some(Code::RateLimited), Some(Code::RateLimited), None]
    );
    assert_eq!(receipt.attempts[2].delay, Duration::from_secs(2));
    let body = response
        .into_body()
        .collect()
        .await
        .ok()
        .unwrap()
        .to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("w1 w2"));
}

#[tokio::test(start_paused = true)]
async fn every_route_rate_limited_for_60s_inside_10s_fails_at_once_with_the_return_time() {
    let primary = Upstream::limited(60);
    let backup = Upstream::limited(60);
    let (stack, service) = limited_stack(&primary, &backup);
    let started = Instant::now();
    let error = service
        .oneshot(chat_request())
        .await
        .err()
        .expect("no route within the deadline");
    assert_eq!(started.elapsed(), Duration::ZERO, "failed at once");
    assert_eq!((primary.calls(), backup.calls()), (1, 1));
    let failure = Failure::find(&*error).expect("a seawall failure");
    // seawall's refusal to wait a minute, naming what cooled the route.
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(60)));
    assert_eq!(failure.route(), Some(&RouteId::new("primary.example")));
    let receipt = failure.receipt().unwrap();
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.stop, Some(StopReason::Deadline));
    // The registry agrees: both routes cool for the minute.
    let handle = stack.breaker_layer().handle();
    for route in ["primary.example", "backup"] {
        let (code, left) = handle.cooldown(&RouteId::new(route)).unwrap();
        assert_eq!(
            (code, left),
            (Code::RateLimited, Some(Duration::from_secs(60)))
        );
    }
}

/// The reasoning preset with a fallback: the ladder keeps one attempt's
/// bound in reserve for the fallback, and the operation is long enough
/// that the primary keeps its own whole attempt too — a think that fits
/// one attempt without a fallback fits it with one.
#[tokio::test(start_paused = true)]
async fn with_a_fallback_the_reasoning_primary_keeps_its_whole_attempt() {
    let stack = seawall::stack::Stack::reasoning();
    let classify = ClassifyLayer::openai();
    let thinking = Upstream::default();
    let primary = {
        let upstream = thinking.clone();
        service_fn(
            move |_: http::Request<ReplayBody<ReplayBody<Full<Bytes>>>>| {
                let answer = upstream.answer();
                async move {
                    // Ten and a half minutes of thought: inside one attempt.
                    tokio::time::sleep(Duration::from_secs(630)).await;
                    Ok::<_, Infallible>(answer)
                }
            },
        )
    };
    let backup = Upstream::default();
    let spare = {
        let upstream = backup.clone();
        service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
            let answer = upstream.answer();
            async move { Ok::<_, Infallible>(answer) }
        })
    };
    let fallback = FallbackLayer::chain([
        FallbackRoute::new(stack.attempt(&classify, spare)).route(RouteId::new("backup"))
    ]);
    let service = stack.build_with_fallback(&classify, primary, fallback);
    let response = service.oneshot(chat_request()).await.expect("an answer");
    assert!(!response.extensions().get::<ServedBy>().unwrap().fallback);
    assert_eq!((thinking.calls(), backup.calls()), (1, 0));
}

/// A fallback route that sends the operation to another provider (its
/// rewrite names Anthropic's path): its whole answer is read as
/// Anthropic's, not against the primary's OpenAI head (no `choices`, a
/// protocol violation, and the operation failed on a good answer).
#[tokio::test(start_paused = true)]
async fn a_route_rewritten_to_another_provider_is_read_as_that_provider() {
    const MESSAGE: &str = r#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"w1 w2"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":2}}"#;
    let stack = common::short_stack()
        .total_deadline(Duration::from_secs(10))
        .retry_policy(RetryPolicy::no_wait(2));
    let classify = ClassifyLayer::openai();
    let primary = service_fn(
        move |_: http::Request<ReplayBody<ReplayBody<Full<Bytes>>>>| async move {
            let response = http::Response::builder()
                .status(503)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(b"{}")))
                .unwrap();
            Ok::<_, Infallible>(response)
        },
    );
    let backup = service_fn(
        move |request: http::Request<ReplayBody<Full<Bytes>>>| async move {
            assert_eq!(request.uri().path(), "/v1/messages");
            let response = http::Response::builder()
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(MESSAGE.as_bytes())))
                .unwrap();
            Ok::<_, Infallible>(response)
        },
    );
    let to_anthropic = |request: &mut http::Request<ReplayBody<Full<Bytes>>>| {
        *request.uri_mut() = "http://backup.example/v1/messages".parse().unwrap();
    };
    let fallback = FallbackLayer::chain([FallbackRoute::new(stack.attempt(&classify, backup))
        .rewrite(to_anthropic)
        .route(RouteId::new("backup"))]);
    let service = stack.build_with_fallback(&classify, primary, fallback);
    let response = service
        .oneshot(chat_request())
        .await
        .expect("the fallback's answer");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, MESSAGE.as_bytes());
}
