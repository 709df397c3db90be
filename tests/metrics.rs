//! The metrics the layers record, read back from a debugging recorder after
//! real fault scripts over loopback (feature `metrics`).
#![cfg(feature = "metrics")]

mod common;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use metrics_util::{CompositeKey, MetricKind};
use seawall::breaker::{BreakerLayer, Trip};
use seawall::classify::ClassifyLayer;
use seawall::core::metric_names::*;
use seawall_test::metrics::{counter, matching, snapshot};
use tower::ServiceExt;

/// Runs `body` on a current-thread runtime with `recorder` as this
/// thread's recorder, and returns the snapshotter.
fn recorded(body: impl std::future::Future<Output = ()>) -> Snapshotter {
    recorded_on(false, body)
}

/// As [`recorded`], on tokio's paused clock when `paused`.
fn recorded_on(paused: bool, body: impl std::future::Future<Output = ()>) -> Snapshotter {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(paused)
            .build()
            .unwrap()
            .block_on(body)
    });
    snapshotter
}

/// A chat completion to `base`, streamed or not, its usage asked for.
fn chat(base: &str, stream: bool) -> http::Request<Full<Bytes>> {
    let body = format!(
        r#"{{"model":"gpt-x","stream":{stream},"stream_options":{{"include_usage":true}},"messages":[{{"role":"user","content":"hi"}}]}}"#
    );
    http::Request::post(format!("{base}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

async fn ask(base: &str, stack: &seawall::stack::Stack, stream: bool) -> bool {
    let service = stack.build(&ClassifyLayer::openai(), common::client());
    match service.oneshot(chat(base, stream)).await {
        Ok(response) => response.into_body().collect().await.is_ok(),
        Err(_) => false,
    }
}

#[test]
fn two_503s_then_ok_are_three_attempts_and_two_retries() {
    let snapshotter = recorded(async {
        let chaos = common::chaos_scripted(&["status;code=503", "status;code=503", "ok"]).await;
        assert!(ask(&chaos.base_url(), &common::short_stack(), true).await);
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 3);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "provider_unavailable"), ("outcome", "failure")]
        ),
        2
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("outcome", "success")]),
        1
    );
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 2);
    // The stream's usage, reported at its end.
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "output")]), 8);
    let histograms: Vec<_> = snapshot
        .iter()
        .filter(|(key, _)| key.kind() == MetricKind::Histogram)
        .map(|(key, _)| key.key().name().to_owned())
        .collect();
    for name in [
        OPERATION_DURATION_SECONDS,
        TIME_TO_FIRST_BYTE_SECONDS,
        TIME_TO_FIRST_CONTENT_SECONDS,
    ] {
        assert!(
            histograms.iter().any(|h| h == name),
            "{name}: {histograms:?}"
        );
    }
    // Labels carry no URL, only the route's name.
    for (key, _) in &snapshot {
        for label in key.key().labels() {
            assert!(!label.value().contains("http"), "{label:?}");
        }
    }
}

/// The failure of one operation through the short stack, or `None`.
async fn failure_of(base: &str, stream: bool) -> Option<seawall::core::Failure> {
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
    let error = match service.oneshot(chat(base, stream)).await {
        Ok(response) => response.into_body().collect().await.err()?,
        Err(error) => error,
    };
    seawall::core::Failure::find(&*error).cloned()
}

/// A refused answer is billed, and the tokens its usage reported are
/// counted as a whole answer's are: once, unary or streamed (the stream
/// guard counts a stream's).
#[test]
fn a_refused_answers_tokens_are_counted_once() {
    for stream in [false, true] {
        let usage = std::sync::Mutex::new(None);
        let snapshotter = recorded(async {
            let chaos = common::chaos_scripted(&["refusal"]).await;
            let failure = failure_of(&chaos.base_url(), stream)
                .await
                .expect("a failure");
            *usage.lock().unwrap() = failure.usage();
        });
        let usage = usage.into_inner().unwrap().expect("the failure's usage");
        assert!(usage.input_tokens > 0, "{usage:?}");
        let snapshot = snapshot(&snapshotter);
        assert_eq!(
            counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]),
            usage.input_tokens,
            "stream: {stream}"
        );
    }
}

/// A stream that failed before the caller saw anything (Anthropic's
/// `message_start` counts the prompt, then an error event) is no billed
/// answer with a whole count: the receipt bills nothing for it, and the
/// token counter counts what the receipt does — the retry's answer only.
#[test]
fn a_stream_failed_before_delivery_counts_no_tokens() {
    let receipt = std::sync::Mutex::new(None);
    let snapshotter = recorded(async {
        let chaos = common::chaos().await;
        chaos
            .script(
                "anthropic",
                vec![
                    common::fault("stream_error_after;tokens=0"),
                    common::fault("ok"),
                ],
            )
            .unwrap();
        let service = common::short_stack().build(&ClassifyLayer::anthropic(), common::client());
        let request = common::post_json(
            &format!("{}/v1/messages", chaos.base_url()),
            r#"{"model":"claude-x","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        );
        let response = service.oneshot(request).await.unwrap();
        *receipt.lock().unwrap() = response
            .extensions()
            .get::<seawall::core::Receipt>()
            .cloned();
        response.into_body().collect().await.unwrap();
    });
    let receipt = receipt.into_inner().unwrap().expect("a receipt");
    assert_eq!(receipt.attempts.len(), 2, "{receipt:?}");
    let billed = receipt.usage();
    assert!(billed.input_tokens > 0, "{receipt:?}");
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]),
        billed.input_tokens
    );
}

#[test]
fn a_quota_wall_is_one_attempt_and_no_retry() {
    let snapshotter = recorded(async {
        let chaos =
            common::chaos_scripted(&["status;code=429;retry_after=48489;kind=insufficient_quota"])
                .await;
        assert!(!ask(&chaos.base_url(), &common::short_stack(), false).await);
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "quota_exhausted")]),
        1
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1);
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 0);
}

#[test]
fn a_breaker_trip_is_one_transition_to_open() {
    let snapshotter = recorded(async {
        let chaos = common::chaos_scripted(&["status;code=503"; 3]).await;
        let stack = common::short_stack()
            .breaker(BreakerLayer::new().trip(Trip::Consecutive { failures: 3 }))
            .total_deadline(Duration::from_secs(5));
        assert!(!ask(&chaos.base_url(), &stack, false).await);
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, BREAKER_TRANSITIONS_TOTAL, &[("to", "open")]),
        1
    );
    assert_eq!(counter(&snapshot, BREAKER_TRANSITIONS_TOTAL, &[]), 1);
}

/// A stream interrupted after content is counted with what broke it, in
/// its own terms (the failure's code says only `stream_interrupted`): a
/// reset is `transport`, the provider's error event its own code.
#[test]
fn an_interruption_is_counted_by_its_cause() {
    let snapshotter = recorded(async {
        let chaos =
            common::chaos_scripted(&["reset_after;tokens=3", "stream_error_after;tokens=3"]).await;
        assert!(!ask(&chaos.base_url(), &common::short_stack(), true).await);
        assert!(!ask(&chaos.base_url(), &common::short_stack(), true).await);
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 2);
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "stream_interrupted")]
        ),
        0
    );
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "transport")]
        ),
        1
    );
}

/// A caller that stops reading a stream after its first content (a
/// client gone, a "stop" button) broke nothing: the stream is reported
/// `cancelled`, and no interruption is counted.
#[test]
fn a_caller_that_stops_reading_is_no_interruption() {
    let snapshotter = recorded(async {
        let chaos = common::chaos_scripted(&["ok;tokens=50;delay_ms=20"]).await;
        let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
        let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(
                br#"{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
            )))
            .unwrap();
        let mut body = Box::pin(service.oneshot(request).await.unwrap().into_body());
        let first = body.frame().await.expect("a frame").expect("content");
        assert!(first.is_data());
        drop(body);
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 0);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("outcome", "success")]),
        1
    );
}

/// An operation its caller stops waiting for (its own timeout, a client
/// gone) was sent: its attempt is counted with the code and outcome
/// `cancelled` (not a failure: an alert on failed attempts must not fire on
/// a user's stop) and its duration recorded with the outcome `cancelled`,
/// so every attempt sent is counted once, the abandoned ones too.
#[test]
fn an_operation_dropped_by_its_caller_is_counted_cancelled() {
    let snapshotter = recorded(async {
        let chaos = common::chaos_scripted(&["hang_after_headers"]).await;
        let stack = common::short_stack();
        let waited = tokio::time::timeout(
            // Inside the first-byte bound (200 ms): the attempt is in
            // flight when the caller gives up.
            std::time::Duration::from_millis(100),
            ask(&chaos.base_url(), &stack, true),
        )
        .await;
        assert!(
            waited.is_err(),
            "the caller stopped waiting first: {waited:?}"
        );
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "cancelled"), ("outcome", "cancelled")]
        ),
        1
    );
    // A caller that stops waiting broke nothing: no attempt failed.
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("outcome", "failure")]),
        0
    );
    let cancelled: Vec<_> = snapshot
        .iter()
        .filter(|(key, _)| {
            key.kind() == MetricKind::Histogram
                && key.key().name() == OPERATION_DURATION_SECONDS
                && key
                    .key()
                    .labels()
                    .any(|l| l.key() == "outcome" && l.value() == "cancelled")
        })
        .map(|(_, value)| match value {
            DebugValue::Histogram(samples) => samples.len(),
            _ => 0,
        })
        .collect();
    assert_eq!(cancelled, [1], "{snapshot:?}");
}

/// A fallback route without a ladder of its own (one attempt, as
/// `Stack::attempt` builds it): its attempts, and the tokens of the
/// whole answer it served, are recorded as the ladder records its own
/// (they were recorded by no one).
#[test]
fn a_fallback_routes_attempt_and_tokens_are_recorded() {
    use seawall::core::RouteId;
    use seawall::core::recording::ReplayBody;
    use seawall::fallback::{FallbackLayer, FallbackRoute};
    use std::convert::Infallible;
    let snapshotter = recorded(async {
        let stack = common::short_stack();
        let classify = ClassifyLayer::openai();
        let walled = tower::service_fn(|_: TwiceRecorded| async {
            let response = http::Response::builder()
                    .status(429)
                    .header("content-type", "application/json")
                    .header("retry-after", "48489")
                    .body(Full::new(Bytes::from_static(
                        br#"{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
                    )))
                    .unwrap();
            Ok::<_, Infallible>(response)
        });
        let spare = tower::service_fn(|_: http::Request<ReplayBody<Full<Bytes>>>| async {
            Ok::<_, Infallible>(answer_with_usage(16, 5))
        });
        let fallback = FallbackLayer::chain([
            FallbackRoute::new(stack.attempt(&classify, spare)).route(RouteId::new("spare"))
        ]);
        let service = stack.build_with_fallback(&classify, walled, fallback);
        let response = service
            .oneshot(prim_request())
            .await
            .expect("the spare answers");
        response.into_body().collect().await.unwrap();
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "spare"), ("outcome", "success")]
        ),
        1
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "quota_exhausted")]),
        1
    );
    assert_eq!(
        counter(
            &snapshot,
            TOKENS_TOTAL,
            &[("route", "spare"), ("kind", "input")]
        ),
        16
    );
    assert_eq!(
        counter(
            &snapshot,
            TOKENS_TOTAL,
            &[("route", "spare"), ("kind", "output")]
        ),
        5
    );
}

/// The short stack over a primary that answers every call 503, failing
/// over to `spare`, the route `spare` (one attempt, no ladder of its own).
fn unavailable_then<S>(
    spare: S,
) -> impl tower::Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<impl http_body::Body>,
    Error = tower::BoxError,
>
where
    S: tower::Service<
            http::Request<seawall::core::recording::ReplayBody<Full<Bytes>>>,
            Response = http::Response<Full<Bytes>>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    use seawall::core::RouteId;
    use seawall::fallback::{FallbackLayer, FallbackRoute};
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let unavailable = tower::service_fn(|_: TwiceRecorded| async {
        let response = http::Response::builder()
            .status(503)
            .body(Full::new(Bytes::new()))
            .unwrap();
        Ok::<_, std::convert::Infallible>(response)
    });
    let fallback = FallbackLayer::chain([
        FallbackRoute::new(stack.attempt(&classify, spare)).route(RouteId::new("spare"))
    ]);
    stack.build_with_fallback(&classify, unavailable, fallback)
}

/// A fallback route's call its caller stopped waiting for was sent: the
/// fallback, which counts the route's attempts, counts it `cancelled`,
/// once, as a ladder counts its own, and the move's span says so (without
/// an error status: a caller that stops waiting broke nothing).
#[test]
fn a_fallback_routes_call_dropped_by_its_caller_is_counted_cancelled() {
    use common::spans::{Capture, run};
    use seawall::core::recording::ReplayBody;
    use std::convert::Infallible;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let capture = Capture::default();
    metrics::with_local_recorder(&recorder, || {
        run(&capture, async {
            let (called, spare_called) = tokio::sync::oneshot::channel::<()>();
            let called = std::sync::Arc::new(std::sync::Mutex::new(Some(called)));
            let spare = tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
                if let Some(called) = called.lock().unwrap().take() {
                    let _ = called.send(());
                }
                // Never answers.
                std::future::pending::<Result<http::Response<Full<Bytes>>, Infallible>>()
            });
            let call = unavailable_then(spare).oneshot(prim_request());
            tokio::select! {
                result = call => panic!("the spare never answers: {:?}", result.err()),
                // Dropped with the spare's call in flight.
                _ = spare_called => {}
            }
        })
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "spare"), ("code", "cancelled")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[("route", "spare")]), 1);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "spare"), ("outcome", "cancelled")]
        ),
        1,
        "{snapshot:?}"
    );
    let moves: Vec<_> = capture
        .seawall_by_id()
        .into_values()
        .filter(|span| span.name == "fallback")
        .collect();
    assert_eq!(moves.len(), 1, "{moves:#?}");
    assert!(moves[0].closed, "{moves:#?}");
    assert_eq!(moves[0].field("error.type"), "cancelled");
    assert_eq!(moves[0].field("otel.status_code"), "");
}

/// A fallback route's whole answer that failed anyway (filtered) was
/// billed: the fallback, which counts the route's attempts, counts its
/// tokens as the receipt bills them, as a ladder counts its own.
#[test]
fn a_fallback_routes_billed_failure_counts_its_tokens() {
    use seawall::core::recording::ReplayBody;
    use seawall::core::{Code, Failure, Usage};
    const FILTERED: &str = r#"{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":100,"completion_tokens":50}}"#;
    let usage = std::sync::Mutex::new(None);
    let snapshotter = recorded(async {
        let spare = tower::service_fn(|_: http::Request<ReplayBody<Full<Bytes>>>| async {
            let response = http::Response::builder()
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from_static(FILTERED.as_bytes())))
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        });
        let error = unavailable_then(spare)
            .oneshot(prim_request())
            .await
            .err()
            .expect("the spare's answer is filtered");
        let failure = Failure::find(&*error).expect("a seawall failure");
        assert_eq!(failure.code(), Code::ContentFiltered);
        *usage.lock().unwrap() = failure.receipt().map(|receipt| receipt.usage());
    });
    let usage = usage.into_inner().unwrap().expect("a receipt");
    assert_eq!(usage, Usage::new(100, 50), "billed as the spare's answer");
    let snapshot = snapshot(&snapshotter);
    for (kind, tokens) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
    ] {
        assert_eq!(
            counter(&snapshot, TOKENS_TOTAL, &[("kind", kind)]),
            tokens,
            "{kind}: {snapshot:?}"
        );
        assert_eq!(
            counter(
                &snapshot,
                TOKENS_TOTAL,
                &[("route", "spare"), ("kind", kind)]
            ),
            tokens
        );
    }
}

/// The primary rate-limited for 2 s with its only spare cooling for a
/// minute (another request's rate limit): the fallback skips the spare
/// without a call and waits for the primary, the first back. Calling the
/// primary again is no fallback: none is counted, as the receipt and
/// `ServedBy` say.
#[test]
fn the_primary_called_again_after_a_wait_is_no_fallback() {
    use seawall::core::recording::ReplayBody;
    use seawall::core::{Receipt, RouteId};
    use seawall::fallback::{FallbackLayer, FallbackRoute, ServedBy};
    use seawall::retry::RetryPolicy;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicU32, Ordering};
    /// A 429 asking for `secs` seconds.
    fn limited(secs: &'static str) -> http::Response<Full<Bytes>> {
        http::Response::builder()
            .status(429)
            .header("retry-after", secs)
            .body(Full::new(Bytes::new()))
            .unwrap()
    }
    let snapshotter = recorded_on(true, async {
        let stack = common::short_stack()
            .total_deadline(Duration::from_secs(10))
            .retry_policy(RetryPolicy::no_wait(3).max_retry_after(Duration::from_secs(1)));
        let classify = ClassifyLayer::openai();
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let primary = tower::service_fn(move |_: TwiceRecorded| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                Ok::<_, Infallible>(if first {
                    limited("2")
                } else {
                    answer_with_usage(7, 3)
                })
            }
        });
        let spare = tower::service_fn(|_: http::Request<ReplayBody<Full<Bytes>>>| async {
            Ok::<_, Infallible>(limited("60"))
        });
        let route = RouteId::new("spare");
        // Another request cools the spare for a minute.
        let mut other = prim_request().map(ReplayBody::once);
        other.extensions_mut().insert(route.clone());
        stack
            .attempt(&classify, spare)
            .oneshot(other)
            .await
            .expect_err("rate limited");
        let fallback =
            FallbackLayer::chain(
                [FallbackRoute::new(stack.attempt(&classify, spare)).route(route)],
            );
        let service = stack.build_with_fallback(&classify, primary, fallback);
        let started = tokio::time::Instant::now();
        let response = service
            .oneshot(prim_request())
            .await
            .expect("the primary answers once back");
        assert_eq!(started.elapsed(), Duration::from_secs(2), "waited for it");
        let served = response.extensions().get::<ServedBy>().unwrap();
        assert_eq!(
            served,
            &ServedBy {
                route: RouteId::new("prim.example"),
                fallback: false
            }
        );
        let receipt = response.extensions().get::<Receipt>().unwrap();
        assert!(!receipt.fallback, "{receipt:?}");
        assert_eq!(receipt.calls(), 2, "the spare skipped: {receipt:?}");
        response.into_body().collect().await.unwrap();
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, FALLBACKS_TOTAL, &[]), 0, "{snapshot:?}");
}

/// A fallback over a primary without a ladder of its own (one attempt,
/// composed by hand): the primary's answer is recorded by the fallback
/// too, once.
#[test]
fn a_primary_without_a_ladder_is_recorded_once() {
    use seawall::core::RouteId;
    use seawall::core::recording::ReplayBody;
    use seawall::fallback::FallbackLayer;
    use std::convert::Infallible;
    use tower::Layer;
    let snapshotter = recorded(async {
        let stack = common::short_stack();
        let classify = ClassifyLayer::openai();
        let answer = || async { Ok::<_, Infallible>(answer_with_usage(7, 3)) };
        let primary = tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| answer());
        let spare = tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| answer());
        let service = FallbackLayer::new(stack.attempt(&classify, spare))
            .route(RouteId::new("spare"))
            .layer(stack.attempt(&classify, primary));
        let response = service
            .oneshot(prim_request())
            .await
            .expect("the primary answers");
        response.into_body().collect().await.unwrap();
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("route", "prim.example")]),
        1
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1);
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]), 7);
}

/// A failure no fallback route takes (a `bad_request`) from a primary
/// without a ladder of its own: its one attempt is recorded by the
/// fallback, and the error carries its receipt.
#[test]
fn a_ladderless_primarys_failure_no_route_takes_is_recorded() {
    use seawall::core::recording::ReplayBody;
    use seawall::core::{Code, Failure, RouteId};
    use seawall::fallback::FallbackLayer;
    use std::convert::Infallible;
    use tower::Layer;
    let snapshotter = recorded(async {
        let stack = common::short_stack();
        let classify = ClassifyLayer::openai();
        let rejected = || async {
            let body = r#"{"error":{"message":"bad field","type":"invalid_request_error","param":null,"code":null}}"#;
            Ok::<_, Infallible>(
                http::Response::builder()
                    .status(400)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body)))
                    .unwrap(),
            )
        };
        let primary =
            tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| rejected());
        let spare = tower::service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| rejected());
        let service = FallbackLayer::new(stack.attempt(&classify, spare))
            .route(RouteId::new("spare"))
            .layer(stack.attempt(&classify, primary));
        let error = service
            .oneshot(prim_request())
            .await
            .expect_err("a bad request");
        let failure = Failure::find(&*error).expect("a seawall failure");
        assert_eq!(failure.code(), Code::BadRequest);
        let receipt = failure.receipt().expect("its receipt");
        assert_eq!(receipt.attempts.len(), 1, "{receipt:?}");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "prim.example"), ("code", "bad_request")]
        ),
        1
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1);
}

/// Under a route set, a unary answer's tokens are the member's that
/// answered, as its attempt is: not the ladder's own route.
#[test]
fn a_route_set_members_tokens_are_its_own() {
    use seawall::fallback::{Member, RouteSetLayer};
    let snapshotter = recorded(async {
        let chaos = common::chaos().await;
        let base = chaos.base_url();
        let member = |name: &str| Member::new(name).origin(&base).expect("a loopback origin");
        let set = RouteSetLayer::new([member("key-a"), member("key-b")]).unwrap();
        let service = common::short_stack().build_with_route_set(
            &ClassifyLayer::openai(),
            common::client(),
            set,
        );
        let response = service
            .oneshot(common::post_json(
                &format!("{base}/v1/chat/completions"),
                r#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
            ))
            .await
            .expect("an answer");
        response.into_body().collect().await.unwrap();
    });
    let snapshot = snapshot(&snapshotter);
    let input = counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]);
    assert!(input > 0, "{snapshot:?}");
    let members = counter(
        &snapshot,
        TOKENS_TOTAL,
        &[("route", "key-a"), ("kind", "input")],
    ) + counter(
        &snapshot,
        TOKENS_TOTAL,
        &[("route", "key-b"), ("kind", "input")],
    );
    assert_eq!(members, input, "every token under the member that answered");
}

/// A chat request to the route `prim.example`.
fn prim_request() -> http::Request<Full<Bytes>> {
    common::post_json(
        "http://prim.example/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
    )
}

/// A whole chat answer reporting `input` and `output` tokens.
fn answer_with_usage(input: u64, output: u64) -> http::Response<Full<Bytes>> {
    let body = format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"hi"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{input},"completion_tokens":{output}}}}}"#
    );
    http::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

/// A stream whose hold was handed on before any content (the model
/// thinking past the hold's cap) and then broken broke what the caller
/// was reading: an interruption, counted as one.
#[test]
fn a_hold_handed_on_and_then_broken_is_an_interruption() {
    use seawall::stream::StreamGuardLayer;
    use seawall_test::body::Chunks;
    const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
    const THINKING: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm hmm hmm\"}}\n\n";
    let snapshotter = recorded(async {
        let provider = tower::service_fn(|_: http::Request<()>| async {
            let body = Chunks::new([START, THINKING, THINKING, THINKING, THINKING])
                .then_error(std::io::ErrorKind::ConnectionReset);
            let response = http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(body)
                .unwrap();
            Ok::<_, std::convert::Infallible>(response)
        });
        let guard = StreamGuardLayer::interactive().max_held_bytes(400);
        let request = http::Request::post("http://api.example/v1/messages")
            .body(())
            .unwrap();
        let response = tower::Layer::layer(&guard, provider)
            .oneshot(request)
            .await
            .expect("handed on at the hold's cap");
        let read = response.into_body().collect().await;
        assert!(read.is_err(), "broken after it was handed on");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 1);
}

/// A whole answer reporting `input` and `output` tokens in its extensions,
/// as the classifier leaves them.
fn answer_with_usage_read(input: u64, output: u64) -> http::Response<Full<Bytes>> {
    let mut response = answer_with_usage(input, output);
    response
        .extensions_mut()
        .insert(seawall::core::Usage::new(input, output));
    response
}

/// What reaches the service under two layers that record the request for
/// a replay (two nested ladders, a ladder over a fallback): a replay of a
/// replay.
type TwiceRecorded = http::Request<
    seawall::core::recording::ReplayBody<seawall::core::recording::ReplayBody<Full<Bytes>>>,
>;

/// Two ladders, the inner allowed to retry under the outer, of two
/// attempts each, over `upstream`.
fn nested_ladders<S>(
    upstream: S,
) -> impl tower::Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<Full<Bytes>>,
    Error = tower::BoxError,
>
where
    S: tower::Service<
            TwiceRecorded,
            Response = http::Response<Full<Bytes>>,
            Error = tower::BoxError,
        > + Clone,
{
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    tower::ServiceBuilder::new()
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2),
            Budget::unlimited(),
        ))
        .layer(RetryBudgetLayer::new(
            RetryPolicy::no_wait(2).allow_nested(),
            Budget::unlimited(),
        ))
        .service(upstream)
}

/// One call answered under two nested ladders is one attempt and its
/// tokens once: the inner ladder counted them, and the outer one, which
/// gets the inner's receipt, does not count them again.
#[test]
fn nested_ladders_count_one_answer_once() {
    let snapshotter = recorded(async {
        let upstream = tower::service_fn(|_| async { Ok(answer_with_usage_read(100, 50)) });
        let response = nested_ladders(upstream)
            .oneshot(prim_request())
            .await
            .expect("answered");
        let receipt = response.extensions().get::<seawall::core::Receipt>();
        assert_eq!(receipt.map(|r| r.attempts.len()), Some(1), "{receipt:?}");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1, "{snapshot:?}");
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]), 100);
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "output")]), 50);
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 0);
}

/// Four failed calls under two nested ladders of two attempts each are
/// four attempts, and three retries: each counted by the ladder that
/// decided it (one per inner ladder, one by the outer).
#[test]
fn nested_ladders_count_each_failed_call_once() {
    use seawall::core::{Code, Failure};
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let snapshotter = recorded({
        let calls = calls.clone();
        async move {
            let upstream = tower::service_fn(move |_| {
                calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async {
                    Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(Failure::new(
                        Code::ProviderUnavailable,
                    )))
                }
            });
            let error = nested_ladders(upstream)
                .oneshot(prim_request())
                .await
                .expect_err("every call fails");
            let receipt = Failure::find(&*error).and_then(Failure::receipt);
            assert_eq!(receipt.map(|r| r.attempts.len()), Some(4), "{receipt:?}");
        }
    });
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 4);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "provider_unavailable")]
        ),
        4,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 4);
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 3);
}

/// A ladder (two attempts, no wait) over a fallback whose primary fails
/// at once with `provider_unavailable` and whose one route, named
/// `spare`, is the service `spare`; neither has a ladder of its own.
fn ladder_over_fallback<S>(
    spare: S,
) -> impl tower::Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<Full<Bytes>>,
    Error = tower::BoxError,
>
where
    S: tower::Service<
            TwiceRecorded,
            Response = http::Response<Full<Bytes>>,
            Error = tower::BoxError,
        > + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    use seawall::core::{Code, Failure, RouteId};
    use seawall::fallback::FallbackLayer;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use tower::Layer;
    let primary = tower::service_fn(|_: TwiceRecorded| async {
        Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(Failure::new(
            Code::ProviderUnavailable,
        )))
    });
    let fallback = FallbackLayer::new(spare)
        .route(RouteId::new("spare"))
        .layer(primary);
    RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).layer(fallback)
}

/// A ladder over a fallback whose routes have no ladder of their own: the
/// fallback counted the primary's failure and the spare's answer (and
/// its tokens), and handed its receipt up; the ladder counts them no more.
#[test]
fn a_ladder_over_a_fallback_counts_its_calls_once() {
    let snapshotter = recorded(async {
        let spare = tower::service_fn(|_: TwiceRecorded| async {
            Ok::<_, tower::BoxError>(answer_with_usage_read(100, 50))
        });
        let response = ladder_over_fallback(spare)
            .oneshot(prim_request())
            .await
            .expect("the spare answers");
        let receipt = response.extensions().get::<seawall::core::Receipt>();
        assert_eq!(receipt.map(|r| r.attempts.len()), Some(2), "{receipt:?}");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 2, "{snapshot:?}");
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "spare"), ("outcome", "success")]
        ),
        1
    );
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]), 100);
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "output")]), 50);
}

/// A ladder over a fallback whose primary, without a ladder of its own,
/// answers: the fallback counted the attempt and its tokens, and hands up
/// its receipt; the ladder counts them no more.
#[test]
fn a_ladder_over_a_fallback_counts_its_primarys_answer_once() {
    use seawall::core::RouteId;
    use seawall::fallback::FallbackLayer;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use tower::Layer;
    let snapshotter = recorded(async {
        let answer = || async { Ok::<_, tower::BoxError>(answer_with_usage_read(100, 50)) };
        let primary = tower::service_fn(move |_: TwiceRecorded| answer());
        let spare = tower::service_fn(move |_: TwiceRecorded| answer());
        let fallback = FallbackLayer::new(spare)
            .route(RouteId::new("spare"))
            .layer(primary);
        let response = RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited())
            .layer(fallback)
            .oneshot(prim_request())
            .await
            .expect("the primary answers");
        let receipt = response.extensions().get::<seawall::core::Receipt>();
        assert_eq!(receipt.map(|r| r.attempts.len()), Some(1), "{receipt:?}");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1, "{snapshot:?}");
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "input")]), 100);
    assert_eq!(counter(&snapshot, TOKENS_TOTAL, &[("kind", "output")]), 50);
}

/// The same ladder over a fallback, its caller gone while the fallback's
/// route was called: one call in flight, one cancelled attempt, the
/// spare's. The ladder counts the call it was waiting for, under the route
/// the fallback sent it to (it counted the primary's, where the call was
/// not); the fallback, sent the request by a ladder, leaves it to it (both
/// counted it).
#[test]
fn a_ladder_over_a_fallback_counts_a_dropped_call_once() {
    let snapshotter = recorded(async {
        let (called, spare_called) = tokio::sync::oneshot::channel::<()>();
        let called = std::sync::Arc::new(std::sync::Mutex::new(Some(called)));
        let spare = tower::service_fn(move |_: TwiceRecorded| {
            if let Some(called) = called.lock().unwrap().take() {
                let _ = called.send(());
            }
            std::future::pending::<Result<http::Response<Full<Bytes>>, tower::BoxError>>()
        });
        tokio::select! {
            result = ladder_over_fallback(spare).oneshot(prim_request()) => {
                panic!("the spare never answers: {:?}", result.err())
            }
            _ = spare_called => {}
        }
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        1,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "spare"), ("code", "cancelled")]
        ),
        1,
        "{snapshot:?}"
    );
}

/// The same ladder over a fallback, its caller gone while the spare's
/// service was not ready for the call: nothing was sent, and no attempt
/// is cancelled (the fallback alone counts none by the same rule).
#[test]
fn a_ladder_over_a_fallback_counts_no_call_its_route_never_got() {
    let snapshotter = recorded_on(true, async {
        let call = ladder_over_fallback(NeverReady).oneshot(prim_request());
        let gave_up = tokio::time::timeout(Duration::from_millis(100), call).await;
        assert!(gave_up.is_err(), "the spare is never ready");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        0,
        "{snapshot:?}"
    );
    // The primary's failure, counted by the fallback.
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1, "{snapshot:?}");
}

/// A ladder over a fallback whose primary and spare are both rate-limited
/// for 2 s: the fallback waits for the first back, and a caller that gives
/// up at 100 ms cancelled no call (the two made were counted as they
/// failed).
#[test]
fn a_ladder_over_a_fallback_waiting_for_a_route_counts_no_cancelled_call() {
    use seawall::core::{Code, Failure, RouteId};
    use seawall::fallback::FallbackLayer;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use tower::Layer;
    let snapshotter = recorded_on(true, async {
        let limited = || {
            tower::service_fn(|_: TwiceRecorded| async {
                Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(
                    Failure::new(Code::RateLimited).with_retry_after(Duration::from_secs(2)),
                ))
            })
        };
        let fallback = FallbackLayer::new(limited())
            .route(RouteId::new("spare"))
            .layer(limited());
        let service =
            RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).layer(fallback);
        let call = service.oneshot(prim_request());
        let gave_up = tokio::time::timeout(Duration::from_millis(100), call).await;
        assert!(gave_up.is_err(), "the fallback waits for a route");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "rate_limited")]),
        2,
        "{snapshot:?}"
    );
}

/// A service never ready for a call.
#[derive(Clone)]
struct NeverReady;

impl tower::Service<TwiceRecorded> for NeverReady {
    type Response = http::Response<Full<Bytes>>;
    type Error = tower::BoxError;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Pending
    }

    fn call(&mut self, _: TwiceRecorded) -> Self::Future {
        unreachable!("never ready, never called")
    }
}

/// A route set of `key-a` and `key-b`, each member cooling (rate-limited)
/// until the instant `cooling` gives it, if any.
fn cooling_route_set(
    cooling: impl Fn(&str) -> Option<tokio::time::Instant> + Send + Sync + 'static,
) -> seawall::fallback::RouteSetLayer {
    use seawall::core::{Code, RouteId};
    use seawall::fallback::{Member, RouteSetLayer};
    use std::sync::Arc;
    let cooling = Arc::new(cooling);
    RouteSetLayer::new([Member::new("key-a"), Member::new("key-b")])
        .unwrap()
        .seed(7)
        .health(move |route: &RouteId| {
            let (cooling, route) = (cooling.clone(), route.clone());
            move || {
                let until = cooling(route.as_str())?;
                let left = until.saturating_duration_since(tokio::time::Instant::now());
                (!left.is_zero()).then_some((Code::RateLimited, Some(left)))
            }
        })
}

/// What stands above a [`cooling_route_set`] over [`hangs`] in the
/// route-set scenarios.
#[derive(Debug, Clone, Copy)]
enum AboveTheSet {
    /// A ladder (two attempts, no wait).
    Ladder,
    /// A fallback with no ladder above (the `build_with_fallback` shape:
    /// its primary a ladder of one attempt that fails at once with
    /// `provider_unavailable`) whose one route, named `spare`, is the set.
    Fallback,
}

/// A boxed answer, so that either shape in [`AboveTheSet`] is one service
/// type (the set answers with its own body type).
type Boxed = http_body_util::combinators::UnsyncBoxBody<Bytes, tower::BoxError>;

/// The service a route-set scenario calls: `above` over a
/// [`cooling_route_set`] over [`hangs`] (`called` hears of its first call).
fn over_route_set(
    above: AboveTheSet,
    called: tokio::sync::oneshot::Sender<()>,
    cooling: Cooling,
) -> tower::util::UnsyncBoxService<http::Request<Full<Bytes>>, http::Response<Boxed>, tower::BoxError>
{
    use seawall::core::{Code, Failure, RouteId};
    use seawall::fallback::FallbackLayer;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use tower::Layer;
    let set = tower::ServiceBuilder::new()
        .map_response(|response: http::Response<_>| {
            response.map(|body| BodyExt::map_err(body, Into::into).boxed_unsync())
        })
        .service(cooling_route_set(cooling).layer(hangs(called)));
    match above {
        AboveTheSet::Ladder => tower::util::UnsyncBoxService::new(
            RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited()).layer(set),
        ),
        AboveTheSet::Fallback => {
            let primary = RetryBudgetLayer::new(RetryPolicy::no_wait(1), Budget::unlimited())
                .layer(tower::service_fn(|_: TwiceRecorded| async {
                    Err::<http::Response<Boxed>, _>(tower::BoxError::from(Failure::new(
                        Code::ProviderUnavailable,
                    )))
                }));
            tower::util::UnsyncBoxService::new(
                FallbackLayer::new(set)
                    .route(RouteId::new("spare"))
                    .layer(primary),
            )
        }
    }
}

/// A call that never answers, as [`hangs`] makes it.
type Hanging = std::future::Pending<Result<http::Response<Full<Bytes>>, tower::BoxError>>;

/// A call never answered, its route named by the route set; `called` hears
/// of the first. Its futures are sendable, as a fallback's routes must be.
fn hangs(
    called: tokio::sync::oneshot::Sender<()>,
) -> impl tower::Service<
    http::Request<seawall::core::recording::ReplayBody<Full<Bytes>>>,
    Response = http::Response<Full<Bytes>>,
    Error = tower::BoxError,
    Future = Hanging,
> + Clone
+ Send
+ 'static {
    let called = std::sync::Arc::new(std::sync::Mutex::new(Some(called)));
    tower::service_fn(move |_| {
        if let Some(called) = called.lock().unwrap().take() {
            let _ = called.send(());
        }
        std::future::pending::<Result<http::Response<Full<Bytes>>, tower::BoxError>>()
    })
}

/// When each member of a [`cooling_route_set`] cools until, if at all.
type Cooling = Box<dyn Fn(&str) -> Option<tokio::time::Instant> + Send + Sync>;

/// Runs one call through `above` over a route set over [`hangs`],
/// `key-b` cooling for a minute: `key-a` takes the call and never answers
/// it, and the caller drops it once `key-a` has it. What the call
/// recorded.
fn dropped_while_a_member_has_it(above: AboveTheSet) -> Snapshotter {
    recorded_on(true, async {
        let later = tokio::time::Instant::now() + Duration::from_secs(60);
        let (called, member_called) = tokio::sync::oneshot::channel();
        // Only `key-a` can take the call.
        let service = over_route_set(
            above,
            called,
            Box::new(move |route| (route == "key-b").then_some(later)),
        );
        tokio::select! {
            result = service.oneshot(prim_request()) => {
                panic!("the member never answers: {:?}", result.err())
            }
            _ = member_called => {}
        }
    })
}

/// Runs one call through `above` over a route set over [`hangs`], every
/// member cooling for 2 s: the call waits in the set, and its caller gives
/// up at 100 ms. What the call recorded.
fn given_up_while_every_member_cools(above: AboveTheSet) -> Snapshotter {
    recorded_on(true, async {
        let back = tokio::time::Instant::now() + Duration::from_secs(2);
        let (called, _never) = tokio::sync::oneshot::channel();
        let service = over_route_set(above, called, Box::new(move |_| Some(back)));
        let call = service.oneshot(prim_request());
        let gave_up = tokio::time::timeout(Duration::from_millis(100), call).await;
        assert!(gave_up.is_err(), "the set waits for a member");
    })
}

/// Under a route set, a call in flight on a member its caller stopped
/// waiting for is a cancelled attempt of that member, as its answer or
/// failure would have been: not of the ladder's route (the request's
/// authority), which no call went to.
#[test]
fn a_route_set_members_dropped_call_is_the_members_cancelled_attempt() {
    let snapshotter = dropped_while_a_member_has_it(AboveTheSet::Ladder);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "key-a"), ("code", "cancelled")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1, "{snapshot:?}");
}

/// Every member of a route set cooling for 2 s: the call waits in the set,
/// and a caller that gives up at 100 ms sent nothing: no upstream attempt
/// is counted, cancelled or other (one was, under the ladder's route).
#[test]
fn a_call_given_up_while_every_member_cools_is_no_attempt() {
    let snapshotter = given_up_while_every_member_cools(AboveTheSet::Ladder);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 0, "{snapshot:?}");
    assert_eq!(
        samples(
            &snapshot,
            OPERATION_DURATION_SECONDS,
            &[("outcome", "cancelled")]
        ),
        1,
        "the operation was cancelled all the same"
    );
}

/// A breaker's refusal while the only route cools down after another
/// request's rate limit, waited out by the ladder, called no one: no
/// upstream attempt, and the call after the wait is no retry. The
/// operation then makes its three attempts and two retries.
#[test]
fn a_cooldown_refusal_waited_out_is_no_attempt_nor_retry() {
    use seawall::core::recording::ReplayBody;
    use seawall::core::{Code, Failure};
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use tower::Layer;
    const RATE_LIMITED: &str = "x-test-rate-limited";
    let snapshotter = recorded(async {
        let upstream = tower::service_fn(|request: http::Request<ReplayBody<Full<Bytes>>>| {
            let failure = if request.headers().contains_key(RATE_LIMITED) {
                Failure::new(Code::RateLimited).with_retry_after(Duration::from_millis(50))
            } else {
                Failure::new(Code::ProviderUnavailable)
            };
            async move { Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(failure)) }
        });
        let breaker = BreakerLayer::new().trip(Trip::Consecutive { failures: 100 });
        let mut limited = prim_request().map(ReplayBody::once);
        limited
            .headers_mut()
            .insert(RATE_LIMITED, http::HeaderValue::from_static("1"));
        breaker
            .layer(upstream)
            .oneshot(limited)
            .await
            .expect_err("rate limited: the route cools down");
        let error = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited())
            .layer(breaker.layer(upstream))
            .oneshot(prim_request())
            .await
            .expect_err("every call fails");
        let receipt = Failure::find(&*error).and_then(Failure::receipt);
        assert_eq!(receipt.map(|r| r.calls()), Some(3), "{receipt:?}");
    });
    let snapshot = snapshot(&snapshotter);
    let cooling = [("code", "route_cooling_down")];
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &cooling),
        0,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &cooling), 0);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "provider_unavailable")]
        ),
        3
    );
    assert_eq!(counter(&snapshot, RETRIES_TOTAL, &[]), 2);
}

/// The samples of the histogram `name` with every label in `labels`.
fn samples(snapshot: &[(CompositeKey, DebugValue)], name: &str, labels: &[(&str, &str)]) -> usize {
    matching(snapshot, MetricKind::Histogram, name, labels)
        .map(|value| match value {
            DebugValue::Histogram(samples) => samples.len(),
            _ => 0,
        })
        .sum()
}

/// A call under two nested ladders dropped by its caller while in flight
/// is one cancelled attempt and one cancelled operation: the outermost
/// ladder's. Before, each ladder counted both.
#[test]
fn nested_ladders_count_a_cancelled_call_once() {
    let snapshotter = recorded(async {
        let upstream = tower::service_fn(|_| {
            std::future::pending::<Result<http::Response<Full<Bytes>>, tower::BoxError>>()
        });
        let mut call = std::pin::pin!(nested_ladders(upstream).oneshot(prim_request()));
        // Sent through both ladders; then the caller stops waiting.
        assert!(futures_util::poll!(&mut call).is_pending());
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1);
    assert_eq!(
        samples(
            &snapshot,
            OPERATION_DURATION_SECONDS,
            &[("outcome", "cancelled")]
        ),
        1
    );
    assert_eq!(samples(&snapshot, OPERATION_DURATION_SECONDS, &[]), 1);
}

/// One caller's operation under two nested ladders that both fail is one
/// operation sample, the outermost ladder's: each inner ladder's run is a
/// part of it.
#[test]
fn nested_ladders_record_one_operation() {
    use seawall::core::{Code, Failure};
    let snapshotter = recorded(async {
        let upstream = tower::service_fn(|_| async {
            Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(Failure::new(
                Code::ProviderUnavailable,
            )))
        });
        nested_ladders(upstream)
            .oneshot(prim_request())
            .await
            .expect_err("every call fails");
    });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 4, "{snapshot:?}");
    assert_eq!(
        samples(
            &snapshot,
            OPERATION_DURATION_SECONDS,
            &[("outcome", "failure")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(samples(&snapshot, OPERATION_DURATION_SECONDS, &[]), 1);
}

/// A stream the operation's deadline cuts after content broke the answer
/// the caller was reading (it reads `deadline_exceeded` mid-answer): the
/// interruption is counted with that code, not taken for a caller that
/// stopped reading (`cancelled`, which is not counted), though the
/// deadline layer leaves the guarded body to be dropped by the caller.
/// With a caller's wait for the answer to begin (`AnswerBy`, as `seawall
/// gateway` reads it), which the operation's bound narrows the attempts'
/// deadline to, keeping its own for the body.
#[test]
fn a_stream_cut_by_the_operations_deadline_is_an_interruption() {
    let snapshotter =
        recorded(async {
            // 50 tokens 20 ms apart: a second of answer, cut at 500 ms.
            let chaos = common::chaos_scripted(&["ok;tokens=50;delay_ms=20"]).await;
            let stack = common::short_stack().total_deadline(Duration::from_millis(500));
            let service = stack.build(&ClassifyLayer::openai(), common::client());
            let mut request = chat(&chaos.base_url(), true);
            request.extensions_mut().insert(seawall::core::AnswerBy(
                seawall::core::Deadline::after(Duration::from_millis(400)),
            ));
            let response = tokio::time::timeout(Duration::from_secs(5), service.oneshot(request))
                .await
                .expect("the answer began in time")
                .expect("an answer");
            let mut body = Box::pin(response.into_body());
            let mut content = 0;
            let error = loop {
                match tokio::time::timeout(Duration::from_secs(5), body.frame())
                    .await
                    .expect("the deadline cut the stream")
                {
                    Some(Ok(_)) => content += 1,
                    Some(Err(error)) => break error,
                    None => panic!("the stream ended before the deadline cut it"),
                }
            };
            assert!(content > 0, "content came before the deadline");
            let failure = seawall::core::Failure::find(&*error).expect("a failure");
            assert_eq!(failure.code(), seawall::core::Code::DeadlineExceeded);
            drop(body);
        });
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            STREAM_INTERRUPTIONS_TOTAL,
            &[("code", "deadline_exceeded")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, STREAM_INTERRUPTIONS_TOTAL, &[]), 1);
    // The ladder's verdict was given at the first content, as before.
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("outcome", "success")]),
        1
    );
}

/// A fallback with no ladder above, its spare a route set: a call its
/// caller dropped while a member had it is that member's cancelled
/// attempt, as the member's answer or failure would have been, not the
/// route's (`spare`), where no call went.
#[test]
fn a_fallback_counts_a_dropped_call_under_its_route_sets_member() {
    let snapshotter = dropped_while_a_member_has_it(AboveTheSet::Fallback);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("route", "key-a"), ("code", "cancelled")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("route", "spare")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        1,
        "{snapshot:?}"
    );
}

/// A fallback with no ladder above whose spare, a route set, holds the
/// call while every member cools: a caller that gives up then sent the
/// spare nothing, and no attempt is cancelled (the primary's failure is
/// the one attempt).
#[test]
fn a_fallback_counts_no_call_its_route_set_held() {
    let snapshotter = given_up_while_every_member_cools(AboveTheSet::Fallback);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("route", "spare")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "provider_unavailable")]
        ),
        1,
        "{snapshot:?}"
    );
}

/// Two nested ladders, the inner one sleeping a second before its retry
/// after its first call failed (`provider_unavailable`, counted by it):
/// a caller that gives up during that sleep cancelled no call, none was
/// in flight. The outer ladder, whose attempt (the inner's run) was still
/// "in flight" by its own word, counted one under its route.
#[test]
fn nested_ladders_count_no_call_while_the_inner_one_sleeps() {
    use seawall::core::{Code, Failure};
    use seawall::retry::{Backoff, Budget, Jitter, RetryBudgetLayer, RetryPolicy};
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let snapshotter = recorded_on(true, {
        let calls = calls.clone();
        async move {
            // Fails its first call, never answers a later one.
            let upstream = tower::service_fn(move |_: TwiceRecorded| {
                let first = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0;
                async move {
                    if first {
                        return Err::<http::Response<Full<Bytes>>, _>(tower::BoxError::from(
                            Failure::new(Code::ProviderUnavailable),
                        ));
                    }
                    std::future::pending().await
                }
            });
            let backoff = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(1))
                .with_jitter(Jitter::None);
            let service = tower::ServiceBuilder::new()
                .layer(RetryBudgetLayer::new(
                    RetryPolicy::no_wait(2),
                    Budget::unlimited(),
                ))
                .layer(RetryBudgetLayer::new(
                    RetryPolicy::no_wait(2).backoff(backoff).allow_nested(),
                    Budget::unlimited(),
                ))
                .service(upstream);
            let call = service.oneshot(prim_request());
            // Dropped at 100 ms, a second before the inner ladder's retry.
            let gave_up = tokio::time::timeout(Duration::from_millis(100), call).await;
            assert!(gave_up.is_err(), "the inner ladder sleeps");
        }
    });
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    let snapshot = snapshot(&snapshotter);
    assert_eq!(
        counter(&snapshot, ATTEMPTS_TOTAL, &[("code", "cancelled")]),
        0,
        "{snapshot:?}"
    );
    assert_eq!(
        counter(
            &snapshot,
            ATTEMPTS_TOTAL,
            &[("code", "provider_unavailable")]
        ),
        1,
        "{snapshot:?}"
    );
    assert_eq!(counter(&snapshot, ATTEMPTS_TOTAL, &[]), 1, "{snapshot:?}");
}
