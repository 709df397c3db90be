//! The composed order, end to end:
//!
//! ```text
//! Deadline(total) → Fallback → RetryBudget → Breaker → Deadline(per attempt) → StreamGuard → Classify → client
//! ```
//!
//! A primary that sends its headers and then nothing must reach the
//! fallback after ONE first-byte bound: the stream guard's
//! `first_byte_timeout` is route-shaped (`Failover`), so the ladder stops
//! at once instead of climbing its three attempts, the per-attempt bound
//! never fires, and the fallback still has almost the whole deadline.
//! Checked over loopback against chaos (counts from the journal, elapsed
//! with a generous margin) and on tokio's paused clock with in-process
//! clients (elapsed exactly the bound).

mod common;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use common::timed::{self, Then};
use common::{Ask, Ending};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use seawall::classify::ClassifyLayer;
use seawall::core::Receipt;
use seawall::core::provider::Provider;
use seawall::core::recording::ReplayBody;
use seawall::core::{Code, RouteId, StopReason};
use seawall::fallback::{FallbackLayer, ServedBy};
use seawall_chaos::Outcome;
use tokio::time::Instant;
use tower::{ServiceExt, service_fn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_primary_fails_over_after_one_first_byte_bound_over_loopback() {
    let primary = common::chaos().await;
    let fallback = common::chaos().await;
    let stack = common::short_stack();
    let ask = Ask {
        provider: Provider::OpenAi,
        stream: true,
        id: "composed/hang".to_owned(),
        fault: Some("hang_after_headers".to_owned()),
        stop_after: None,
    };

    let started = std::time::Instant::now();
    let seen = common::through_stack(&stack, &primary, Some(&fallback), &ask).await;
    let elapsed = started.elapsed();

    assert_eq!(seen.ending, Ending::Ok, "{:?}", seen.failure);
    assert_eq!(seen.text, seawall_chaos::answer_text(8));
    let primary_rows = common::settled_rows(&primary, &ask.id).await;
    let fallback_rows = common::settled_rows(&fallback, &ask.id).await;
    assert_eq!(primary_rows.len(), 1, "one primary attempt, not the ladder");
    assert_eq!(primary_rows[0].outcome, Outcome::ClientDisconnected);
    assert_eq!(fallback_rows.len(), 1);
    assert_eq!(fallback_rows[0].outcome, Outcome::Completed);

    let receipt = seen.receipt.expect("a receipt");
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.clone(), a.code))
        .collect();
    assert_eq!(
        attempts,
        [
            (
                RouteId::new(primary.addr().to_string()),
                Some(Code::FirstByteTimeout)
            ),
            (common::fallback_route(), None),
        ]
    );
    assert!(receipt.fallback);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
    assert_eq!(
        seen.served_by.map(|s| (s.route, s.fallback)),
        Some((common::fallback_route(), true))
    );

    // At least the bound was waited; well under two of them was spent:
    // not three attempts, not the 1.5 s per-attempt bound.
    assert!(elapsed >= common::FIRST_BYTE, "{elapsed:?}");
    assert!(elapsed < common::FIRST_BYTE * 2, "{elapsed:?}");

    primary.shutdown().await;
    fallback.shutdown().await;
}

/// A primary that keeps the connection alive with pings and never writes
/// content, with a per-attempt bound shorter than the first-content bound:
/// every attempt ends as a retryable `timeout` (bytes arrived, so it is not
/// route-shaped). The ladder must stop in time to leave the fallback its
/// share of the deadline, and the fallback must serve the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_that_only_pings_still_reaches_the_fallback_in_time() {
    let primary = common::chaos().await;
    let fallback = common::chaos().await;
    let attempt = std::time::Duration::from_millis(300);
    let total = std::time::Duration::from_millis(2000);
    // A long ladder: attempts alone would not stop it before the deadline.
    let ladder = seawall::retry::RetryPolicy::interactive()
        .max_attempts(10)
        .backoff(seawall::retry::Backoff::exponential(
            std::time::Duration::from_millis(5),
            std::time::Duration::from_millis(20),
        ))
        .min_attempt_time(std::time::Duration::from_millis(100));
    let stack = common::short_stack()
        .total_deadline(total)
        .attempt_timeout(attempt)
        .retry_policy(ladder)
        .stream_guard(
            seawall::stream::StreamGuardLayer::interactive()
                .first_byte_timeout(common::FIRST_BYTE)
                .first_content_timeout(std::time::Duration::from_secs(30))
                .idle_timeout(common::IDLE),
        );
    let ask = Ask {
        provider: Provider::OpenAi,
        stream: true,
        id: "composed/pings".to_owned(),
        fault: Some("stall_after;tokens=0;ms=60000;pings=1;ping_ms=50".to_owned()),
        stop_after: None,
    };
    let started = std::time::Instant::now();
    let seen = common::through_stack(&stack, &primary, Some(&fallback), &ask).await;
    assert_eq!(seen.ending, Ending::Ok, "{:?}", seen.failure);
    assert_eq!(seen.text, seawall_chaos::answer_text(8));
    assert!(started.elapsed() < total, "{:?}", started.elapsed());
    let receipt = seen.receipt.expect("a receipt");
    assert!(receipt.fallback);
    let primary_codes: Vec<_> = receipt
        .attempts
        .iter()
        .filter(|a| a.route != common::fallback_route())
        .map(|a| a.code)
        .collect();
    assert!(!primary_codes.is_empty());
    assert!(
        primary_codes.iter().all(|c| *c == Some(Code::Timeout)),
        "{primary_codes:?}"
    );
    assert_eq!(common::settled_rows(&fallback, &ask.id).await.len(), 1);
}

/// A healthy OpenAI stream of three tokens.
const HEALTHY_STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w1\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w2\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w3\"},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

/// The healthy route's answer: a whole stream at once.
fn healthy_response() -> http::Response<BoxBody<Bytes, Infallible>> {
    http::Response::builder()
        .header("content-type", "text/event-stream")
        .body(Full::new(Bytes::from_static(HEALTHY_STREAM.as_bytes())).boxed())
        .expect("a response")
}

/// A streamed chat request to the primary route.
fn chat_request() -> http::Request<Full<Bytes>> {
    common::post_json(
        "http://primary.example/v1/chat/completions",
        r#"{"stream":true}"#,
    )
}

/// The response is labelled as the fallback route's.
fn assert_served_by_the_fallback<B>(response: &http::Response<B>) {
    let served = response
        .extensions()
        .get::<ServedBy>()
        .cloned()
        .expect("served by");
    assert_eq!(
        (served.route, served.fallback),
        (RouteId::new("other"), true)
    );
}

#[tokio::test(start_paused = true)]
async fn silent_primary_fails_over_after_exactly_one_first_byte_bound_on_paused_clock() {
    let primary_calls = Arc::new(AtomicU32::new(0));
    let fallback_calls = Arc::new(AtomicU32::new(0));

    // 200 and event-stream headers, then a body that never yields. Both
    // routes answer with one body type, as a fallback needs.
    let silent = timed::provider(vec![], Then::Stall, Arc::clone(&primary_calls));
    let healthy = {
        let calls = Arc::clone(&fallback_calls);
        service_fn(move |_req: http::Request<ReplayBody<Full<Bytes>>>| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(healthy_response()) }
        })
    };

    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let fallback =
        FallbackLayer::new(stack.attempt(&classify, healthy)).route(RouteId::new("other"));
    let service = stack.build_with_fallback(&classify, silent, fallback);

    let request = chat_request();
    let started = Instant::now();
    let response = service
        .oneshot(request)
        .await
        .expect("the fallback answers");
    let elapsed = started.elapsed();

    // Exactly one first-byte bound: not three attempts, not the per-attempt
    // bound, not the operation's deadline.
    assert_eq!(elapsed, common::FIRST_BYTE);
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(fallback_calls.load(Ordering::SeqCst), 1);

    assert_served_by_the_fallback(&response);
    let receipt = response
        .extensions()
        .get::<Receipt>()
        .cloned()
        .expect("a receipt");
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::FirstByteTimeout), None]);
    assert!(receipt.fallback);

    let body = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    assert_eq!(body, HEALTHY_STREAM.as_bytes());
    assert_eq!(
        Instant::now() - started,
        common::FIRST_BYTE,
        "reading took no time"
    );

    // The primary route's breaker counted one failure and stayed closed.
    let handle = stack.breaker_layer().handle();
    assert_eq!(
        handle.state(&RouteId::new("primary.example")),
        seawall::breaker::BreakerState::Closed
    );
}

/// A primary route isolated through the breaker's handle is never called:
/// the breaker refuses with `circuit_open` (failover), the ladder stops at
/// once instead of retrying a refusal, and the fallback serves the answer,
/// all without a moment passing on the paused clock.
#[tokio::test(start_paused = true)]
async fn an_isolated_primary_is_not_called_and_the_fallback_serves_at_once() {
    let primary_calls = Arc::new(AtomicU32::new(0));
    let fallback_calls = Arc::new(AtomicU32::new(0));
    let answering = |calls: &Arc<AtomicU32>| {
        let calls = Arc::clone(calls);
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, Infallible>(healthy_response()) }
        }
    };
    // Both routes would answer well: only the breaker keeps the primary out.
    let primary = {
        let answer = answering(&primary_calls);
        service_fn(move |_req: http::Request<ReplayBody<ReplayBody<Full<Bytes>>>>| answer())
    };
    let healthy = {
        let answer = answering(&fallback_calls);
        service_fn(move |_req: http::Request<ReplayBody<Full<Bytes>>>| answer())
    };

    let stack = common::short_stack();
    let primary_route = RouteId::new("primary.example");
    let handle = stack.breaker_layer().handle();
    handle.isolate(&primary_route);
    let classify = ClassifyLayer::openai();
    let fallback =
        FallbackLayer::new(stack.attempt(&classify, healthy)).route(RouteId::new("other"));
    let service = stack.build_with_fallback(&classify, primary, fallback);

    let request = chat_request();
    let started = Instant::now();
    let response = service
        .oneshot(request)
        .await
        .expect("the fallback answers");

    assert_eq!(
        Instant::now() - started,
        std::time::Duration::ZERO,
        "no wait"
    );
    assert_eq!(
        primary_calls.load(Ordering::SeqCst),
        0,
        "the primary was not called"
    );
    assert_eq!(fallback_calls.load(Ordering::SeqCst), 1);
    assert_served_by_the_fallback(&response);
    // One refused attempt on the primary, not a ladder of them; then the
    // fallback's answer.
    let receipt = response
        .extensions()
        .get::<Receipt>()
        .cloned()
        .expect("a receipt");
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.clone(), a.code))
        .collect();
    assert_eq!(
        attempts,
        [
            (primary_route.clone(), Some(Code::CircuitOpen)),
            (RouteId::new("other"), None),
        ]
    );
    assert!(receipt.fallback);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));

    let body = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    assert_eq!(body, HEALTHY_STREAM.as_bytes());
    assert_eq!(
        handle.state(&primary_route),
        seawall::breaker::BreakerState::Isolated
    );
}

/// Under a ladder, each attempt's progress is counted in the operation's
/// shared slots (no allocation and no extension per attempt), and each
/// attempt starts from zero: the first attempt's trickle of bytes makes its
/// timeout "too slow", the second's silence makes its own route-shaped.
#[tokio::test(start_paused = true)]
async fn each_attempt_counts_its_own_progress_in_the_operations_slots() {
    use seawall::core::{Failure, Progress};
    use seawall::deadline::DeadlineLayer;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use std::time::Duration;
    use tower::Layer;

    let attempts = Arc::new(AtomicU32::new(0));
    let seen = Arc::clone(&attempts);
    let upstream = service_fn(move |request: http::Request<ReplayBody<Full<Bytes>>>| {
        let attempt = seen.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(
            request.extensions().get::<Progress>().is_none(),
            "attempt {attempt}: counted in the slots, not in an extension"
        );
        let progress = Progress::of_request(&request).expect("an attempt bound counts");
        assert_eq!(progress.bytes(), 0, "attempt {attempt} starts from zero");
        if attempt == 1 {
            progress.add_bytes(17);
        }
        async move {
            std::future::pending::<()>().await;
            Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::new())))
        }
    });
    let stack = RetryBudgetLayer::new(
        RetryPolicy::interactive().max_attempts(2),
        Budget::ratio(0.2, 10, Duration::from_secs(10)),
    )
    .layer(DeadlineLayer::per_attempt(Duration::from_secs(5)).layer(upstream));
    let request = http::Request::post("http://api.example.com/v1/chat/completions")
        .body(Full::new(Bytes::from_static(br#"{"model":"m"}"#)))
        .unwrap();

    let error = stack.oneshot(request).await.unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let failure = Failure::find(&*error).expect("a seawall failure");
    assert_eq!(failure.code(), Code::Timeout);
    assert_eq!(
        failure.evidence().bytes,
        0,
        "the second attempt's own count"
    );
    assert!(failure.is_route_shaped());
}

/// An Anthropic stream's head, one thought, and the answer with its end.
const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n";
const THINKING: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n";
const TEXT: &str = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// A streamed Anthropic messages request.
fn messages_request() -> http::Request<Full<Bytes>> {
    common::post_json("http://primary.example/v1/messages", r#"{"stream":true}"#)
}

/// A caller that stops waiting for its answer to begin at 3 s (the
/// `AnswerBy` the gateway makes of an SDK's read timeout) while the model
/// thinks until 4.5 s: the whole stack hands the thinking on just before
/// 3 s, as the caller would read it from the provider, instead of failing
/// the billed work with `deadline_exceeded` (every thinking stream longer
/// than the client's read timeout failed through the gateway).
#[tokio::test(start_paused = true)]
async fn a_thinking_stream_begins_before_the_callers_wait_ends() {
    use seawall::core::{AnswerBy, Deadline};
    use std::time::Duration;
    let calls = Arc::new(AtomicU32::new(0));
    let script = vec![(0.0, START), (1.5, THINKING), (1.5, THINKING), (1.5, TEXT)];
    let provider = timed::provider(script, Then::End, Arc::clone(&calls));
    let service = seawall::stack::Stack::interactive().build(&ClassifyLayer::anthropic(), provider);
    let mut request = messages_request();
    request
        .extensions_mut()
        .insert(AnswerBy(Deadline::after(Duration::from_secs(3))));
    let started = Instant::now();
    let response = service.oneshot(request).await.expect("the answer began");
    assert_eq!(started.elapsed(), Duration::from_millis(2950));
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    assert_eq!(body, [START, THINKING, THINKING, TEXT].concat().as_bytes());
    assert_eq!(started.elapsed(), Duration::from_millis(4500));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never asked again");
}

/// A model that thinks for 35 s under the interactive preset, whose
/// attempt bound (20 s) covers the wait for a stream's first content: the
/// whole stack hands the thinking on just before the attempt's bound,
/// instead of cutting it there and asking again (another 35 s of thinking,
/// billed again, cut again). The same wait with nothing but keep-alives is
/// still cut at the bound and asked again.
#[tokio::test(start_paused = true)]
async fn a_model_still_thinking_is_handed_on_at_the_attempts_bound() {
    use std::time::Duration;
    const PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";
    // START, then `working` every 5 s for 35 s, then the answer.
    let provider = |working: &'static str, calls: Arc<AtomicU32>| {
        let mut script = vec![(0.0, START)];
        script.extend([(5.0, working); 7]);
        script.push((0.0, TEXT));
        timed::provider(script, Then::End, calls)
    };
    let request = messages_request;

    let calls = Arc::new(AtomicU32::new(0));
    let service = seawall::stack::Stack::interactive().build(
        &ClassifyLayer::anthropic(),
        provider(THINKING, Arc::clone(&calls)),
    );
    let started = Instant::now();
    let response = service.oneshot(request()).await.expect("the answer began");
    assert_eq!(started.elapsed(), Duration::from_millis(19_950));
    let body = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    let mut expected = START.to_owned();
    for _ in 0..7 {
        expected.push_str(THINKING);
    }
    expected.push_str(TEXT);
    assert_eq!(body, expected.as_bytes());
    assert_eq!(started.elapsed(), Duration::from_secs(35));
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never asked again");

    let calls = Arc::new(AtomicU32::new(0));
    let service = seawall::stack::Stack::interactive().build(
        &ClassifyLayer::anthropic(),
        provider(PING, Arc::clone(&calls)),
    );
    let _ = service.oneshot(request()).await;
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "keep-alives show no work"
    );
}

/// A background response (`"background": true`, the Responses API) runs
/// to its end whoever reads it. Held back for its first content and
/// failed, it was asked for again: three billed runs upstream, and the
/// first one's id (in `response.created`) thrown away, so nobody could
/// even cancel them. It is handed on as it comes and never replayed; the
/// same cut on a plain stream is still retried invisibly.
#[tokio::test(start_paused = true)]
async fn a_background_stream_is_handed_on_and_never_asked_for_twice() {
    const CREATED: &str = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"queued\",\"background\":true}}\n\n";
    for background in [true, false] {
        let calls = Arc::new(AtomicU32::new(0));
        let provider = {
            let calls = Arc::clone(&calls);
            service_fn(move |req: http::Request<ReplayBody<Full<Bytes>>>| {
                calls.fetch_add(1, Ordering::SeqCst);
                async {
                    // The request is read whole, as a server does; the job
                    // is created, then the connection breaks.
                    req.into_body().collect().await.expect("the request body");
                    let frames = futures_util::stream::iter([
                        Ok(Frame::data(Bytes::from_static(CREATED.as_bytes()))),
                        Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
                    ]);
                    let response = http::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(StreamBody::new(frames).boxed())
                        .expect("a response");
                    Ok::<_, Infallible>(response)
                }
            })
        };
        let service = seawall::stack::Stack::interactive().build(
            &ClassifyLayer::new(seawall::classify::ProviderClassifier::openai()),
            provider,
        );
        let body = if background {
            r#"{"model":"m","input":"hi","stream":true,"background":true}"#
        } else {
            r#"{"model":"m","input":"hi","stream":true}"#
        };
        let request = http::Request::post("http://primary.example/v1/responses")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .expect("a request");
        let result = service.oneshot(request).await;
        if background {
            let response = result.expect("handed on at its first event");
            let mut body = std::pin::pin!(response.into_body());
            let first = body.as_mut().frame().await.unwrap().unwrap();
            assert_eq!(first.data_ref().unwrap(), CREATED.as_bytes(), "the id");
            let error = body.as_mut().frame().await.unwrap().unwrap_err();
            let failure = seawall::core::Failure::find(&*error).expect("a verdict");
            assert_eq!(failure.action(), seawall::core::Action::Surface);
            assert_eq!(calls.load(Ordering::SeqCst), 1, "one run upstream");
        } else {
            let error = result.expect_err("no content in three attempts");
            assert!(seawall::core::Failure::find(&*error).is_some());
            assert_eq!(calls.load(Ordering::SeqCst), 3, "retried invisibly");
        }
    }
}

/// The whole stack over a tower-test mock, as users unit-test it: every
/// call waits for the mock's readiness (a call before it would panic the
/// mock), a 503 is retried once the mock is ready again, and the answer
/// carries the receipt of both attempts.
#[tokio::test(start_paused = true)]
async fn the_stack_over_a_tower_test_mock_waits_for_readiness_and_retries() {
    let (mock, mut handle) = tower_test::mock::pair::<
        http::Request<ReplayBody<Full<Bytes>>>,
        http::Response<Full<Bytes>>,
    >();
    let stack = seawall::stack::Stack::interactive().build(&ClassifyLayer::openai(), mock);
    handle.allow(1);
    let call = tokio::spawn(stack.oneshot(chat_request()));
    let (request, reply) = handle.next_request().await.expect("the first attempt");
    assert_eq!(request.uri().path(), "/v1/chat/completions");
    reply.send_response(
        http::Response::builder()
            .status(503)
            .body(Full::new(Bytes::from_static(
                b"{\"error\":{\"message\":\"busy\"}}",
            )))
            .unwrap(),
    );
    // Not ready: the retry waits for the mock, it does not call.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(!call.is_finished());
    handle.allow(1);
    let (_, reply) = handle.next_request().await.expect("the retry");
    let answer = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
    reply.send_response(
        http::Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from_static(answer.as_bytes())))
            .unwrap(),
    );
    let response = call.await.unwrap().expect("answered");
    let receipt = response
        .extensions()
        .get::<Receipt>()
        .cloned()
        .expect("a receipt");
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.attempts[0].code, Some(Code::ProviderUnavailable));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, answer.as_bytes());
}

/// A ladder over a breaker that gates its readiness, called through a
/// clone per request (`oneshot`, as axum and the gateway call): the retry
/// waits for the route's break to end, then succeeds. The retries'
/// service used to be cloned before the first call, when the clone knew
/// no route: it was ready at once, the breaker refused the retry
/// (`circuit_open`) and the operation failed without waiting.
#[tokio::test(start_paused = true)]
async fn a_retry_waits_for_a_gated_breakers_break_then_succeeds() {
    use seawall::breaker::{BreakDuration, BreakerLayer, Trip};
    use seawall::core::Failure;
    use seawall::retry::{Budget, RetryBudgetLayer, RetryPolicy};
    use std::time::Duration;
    use tower::Layer;
    let calls = Arc::new(AtomicU32::new(0));
    let upstream = {
        let calls = Arc::clone(&calls);
        service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    Err(tower::BoxError::from(Failure::new(Code::Overloaded)))
                } else {
                    Ok(healthy_response())
                }
            }
        })
    };
    let breaker = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(3),
            max: Duration::from_secs(3),
            jitter: 0.0,
        })
        .gate_readiness(true)
        .seed(1);
    let policy = RetryPolicy::no_wait(3).max_retry_after(Duration::from_secs(10));
    let service = RetryBudgetLayer::new(policy, Budget::unlimited()).layer(breaker.layer(upstream));
    let started = Instant::now();
    let response = tokio::time::timeout(
        Duration::from_secs(60),
        service.clone().oneshot(chat_request()),
    )
    .await
    .expect("the operation ends")
    .unwrap_or_else(|e| panic!("the retry after the break succeeds: {e}"));
    assert!(response.status().is_success());
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    let receipt = response.extensions().get::<Receipt>().unwrap();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::Overloaded), None], "{receipt:?}");
}

/// A reader that stops at `[DONE]` and drops the body there, as
/// async-openai does, has read a whole answer: the breaker counts it a
/// success. It settled the call only on a body that said it had ended, and
/// the guard said so one poll after the marker's frame: every such stream
/// counted as nothing, so failures before content, however rare among the
/// answers, added up to a trip (two here, two answers between them; one
/// read live, one handed on from the hold).
#[tokio::test(start_paused = true)]
async fn a_stream_dropped_at_its_end_marker_is_the_breakers_success() {
    use seawall::breaker::{BreakerLayer, BreakerState, Trip};
    use seawall::stream::StreamGuardLayer;
    use tower::Layer;
    let calls = Arc::new(AtomicU32::new(0));
    let upstream = {
        let calls = Arc::clone(&calls);
        service_fn(move |_: http::Request<Full<Bytes>>| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                let response = match n % 3 {
                    0 => http::Response::builder()
                        .status(503)
                        .header("content-type", "application/json")
                        .body(
                            Full::new(Bytes::from_static(b"{\"error\":{\"message\":\"busy\"}}"))
                                .boxed(),
                        ),
                    // Event by event (read live after the hold lets go).
                    1 => {
                        let frames = HEALTHY_STREAM
                            .split_inclusive("\n\n")
                            .map(|event| Ok::<_, Infallible>(Frame::data(Bytes::from(event))));
                        http::Response::builder()
                            .header("content-type", "text/event-stream")
                            .body(BodyExt::boxed(StreamBody::new(futures_util::stream::iter(
                                frames.collect::<Vec<_>>(),
                            ))))
                    }
                    // Whole (handed on from the hold).
                    _ => return Ok::<_, Infallible>(healthy_response()),
                };
                Ok(response.expect("a response"))
            }
        })
    };
    let breaker = BreakerLayer::new().trip(Trip::Consecutive { failures: 2 });
    let handle = breaker.handle();
    let service = breaker
        .layer(StreamGuardLayer::interactive().layer(ClassifyLayer::openai().layer(upstream)));
    let route = RouteId::new("primary.example");
    for _ in 0..4 {
        // A failure before content, then an answer read to its marker.
        service.clone().oneshot(chat_request()).await.unwrap_err();
        for _ in 0..2 {
            let mut body = service
                .clone()
                .oneshot(chat_request())
                .await
                .expect("the answer")
                .into_body();
            let mut read = Vec::new();
            while !read.ends_with(b"data: [DONE]\n\n") {
                let frame = body.frame().await.expect("a frame").expect("no error");
                read.extend_from_slice(frame.data_ref().expect("data"));
            }
            drop(body);
        }
        assert_eq!(handle.state(&route), BreakerState::Closed);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 12);
}

/// A request body that fails while hyper-util's client writes it (a
/// proxy's upload whose client went away) is the request's failure, not
/// the route's: `bad_request`, one attempt, never retried. Read through the
/// chain below hyper's "user" error, the body's own `ConnectionReset` was
/// taken for the network's and the request retried against a body whose
/// source was gone (and counted against the route by a breaker).
#[tokio::test]
async fn a_request_body_failing_under_hyper_is_the_requests_failure() {
    use futures_util::stream;
    use http_body_util::StreamBody;
    use seawall::core::{Action, Failure};
    type Frames = std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>;
    let chaos = common::chaos().await;
    let body: StreamBody<stream::Iter<Frames>> = StreamBody::new(stream::iter(vec![
        Ok(Frame::data(Bytes::from_static(b"{\"model\":\"gpt-x\","))),
        Err(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
    ]));
    let request = http::Request::post(format!("{}/v1/chat/completions", chaos.base_url()))
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let service = common::short_stack().build(&ClassifyLayer::openai(), common::client());
    let error = service.oneshot(request).await.unwrap_err();
    let failure = Failure::find(&*error).expect("a classified failure");
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::BadRequest, Action::Surface),
        "{error}"
    );
    assert_eq!(failure.receipt().map(|r| r.attempts.len()), Some(1));
}

/// The stack gives the stream guard the classifier's quota wall: a rate
/// limit's five-minute hint in an error event is `rate_limited` under a
/// ten-minute wall, as it would be in a 429, unless the guard was given a
/// threshold of its own.
#[tokio::test]
async fn an_error_event_meets_the_classifiers_quota_wall() {
    use seawall::core::Failure;
    use seawall::stack::Stack;
    use seawall::stream::StreamGuardLayer;
    use std::time::Duration;
    const LIMITED: &str = "data: {\"error\":{\"message\":\"Rate limit reached for requests. Please try again in 5m0s.\",\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}\n\n";
    let upstream = service_fn(|_: http::Request<Full<Bytes>>| async {
        Ok::<_, Infallible>(
            http::Response::builder()
                .header("content-type", "text/event-stream")
                .body(Full::new(Bytes::from_static(LIMITED.as_bytes())))
                .expect("a response"),
        )
    });
    let code = |stack: Stack, classify: ClassifyLayer<_>| {
        let attempt = stack.attempt(&classify, upstream);
        async move {
            let error = attempt
                .oneshot(chat_request())
                .await
                .expect_err("a failure");
            Failure::downcast(error.into_box())
                .expect("a Failure")
                .code()
        }
    };
    let ten_minutes = Duration::from_secs(600);
    assert_eq!(
        code(Stack::interactive(), ClassifyLayer::openai()).await,
        Code::QuotaExhausted
    );
    assert_eq!(
        code(
            Stack::interactive(),
            ClassifyLayer::openai().quota_wall(ten_minutes)
        )
        .await,
        Code::RateLimited
    );
    let own = StreamGuardLayer::interactive().quota_wall(Duration::from_secs(60));
    assert_eq!(
        code(
            Stack::interactive().stream_guard(own),
            ClassifyLayer::openai().quota_wall(ten_minutes)
        )
        .await,
        Code::QuotaExhausted
    );
}

/// A 200 stream whose first event is an error generated nothing: the
/// whole stack's receipt bills only the retry that answered.
#[tokio::test(start_paused = true)]
async fn an_error_before_any_generation_is_not_billed_by_the_stack() {
    use seawall::stack::Stack;
    const FAILED: &str = "data: {\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\"}}\n\n";
    let calls = Arc::new(AtomicU32::new(0));
    let upstream = {
        let calls = Arc::clone(&calls);
        service_fn(move |_: http::Request<ReplayBody<Full<Bytes>>>| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                Ok::<_, Infallible>(match first {
                    true => http::Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Full::new(Bytes::from_static(FAILED.as_bytes())).boxed())
                        .expect("a response"),
                    false => healthy_response(),
                })
            }
        })
    };
    let service = Stack::interactive().build(&ClassifyLayer::openai(), upstream);
    let response = service
        .oneshot(chat_request())
        .await
        .expect("the retry answers");
    let receipt = response.extensions().get::<Receipt>().expect("a receipt");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!(receipt.billed_attempts(), 1, "{receipt:?}");
}
