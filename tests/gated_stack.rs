//! A stack whose breaker gates readiness for a balancer
//! ([`BreakerLayer::gate_readiness`]): the gate is for one route per
//! instance, so where one instance sends to many routes — a route set's
//! members, a fallback's primary — the stack builds the breaker ungated,
//! over the same breakers. Gated, the route called last held the next
//! attempt in `poll_ready` for its cooldown or break: a route set's move to
//! a healthy member, a fallback's answer. In-process providers on the
//! paused clock.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::route_set;
use http_body_util::{BodyExt, Full};
use seawall::breaker::{BreakDuration, BreakerLayer, Trip};
use seawall::classify::ClassifyLayer;
use seawall::core::recording::ReplayBody;
use seawall::core::{Code, Receipt, RouteId};
use seawall::fallback::{FallbackLayer, RouteSetLayer, ServedBy};
use seawall::stack::Stack;
use tower::ServiceExt;

fn chat_request() -> http::Request<Full<Bytes>> {
    http::Request::post("http://api.example.com/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(
            br#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#,
        )))
        .unwrap()
}

/// Seeds the stack: a route set tries `key-a` first, and the ladder's
/// backoff is the same each run.
const SEED: u64 = 1;

#[tokio::test(start_paused = true)]
async fn a_gated_breaker_does_not_hold_a_route_sets_move_to_a_healthy_member() {
    let (calls_a, calls_b) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let stack = Stack::interactive()
        .breaker(BreakerLayer::new().gate_readiness(true))
        .seed(SEED);
    let set = RouteSetLayer::new(route_set::members(&["key-a", "key-b"])).unwrap();
    // Key `key-a` answers 429 with `retry-after: 30`; any other key answers.
    let provider = {
        let (calls_a, calls_b) = (Arc::clone(&calls_a), Arc::clone(&calls_b));
        route_set::per_key(move |key| {
            if key == "Bearer key-a" {
                calls_a.fetch_add(1, Ordering::SeqCst);
                route_set::rate_limited("30")
            } else {
                calls_b.fetch_add(1, Ordering::SeqCst);
                route_set::chat_completion()
            }
        })
    };
    let service = stack.build_with_route_set(&ClassifyLayer::openai(), provider, set);
    let response = tokio::time::timeout(Duration::from_secs(2), service.oneshot(chat_request()))
        .await
        .expect("the set moves on to key-b at once, not after key-a's cooldown")
        .unwrap_or_else(|e| panic!("key-b answers: {e}"));
    assert!(response.status().is_success());
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.route.as_str().to_owned(), a.code))
        .collect();
    assert_eq!(
        attempts,
        [
            ("key-a".to_owned(), Some(Code::RateLimited)),
            ("key-b".to_owned(), None),
        ]
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&body).contains("w8"),
        "a whole answer"
    );
    assert_eq!(calls_a.load(Ordering::SeqCst), 1);
    assert_eq!(calls_b.load(Ordering::SeqCst), 1);
}

/// The primary answers 503 and its breaker opens on that one failure, for
/// 30 s. Ungated, the ladder's retry is refused at once (`circuit_open`,
/// a failover) and the fallback answers; gated, the retry waited in the
/// primary's `poll_ready` for the break.
#[tokio::test(start_paused = true)]
async fn a_gated_breaker_does_not_hold_the_fallback_behind_an_open_primary() {
    let (primary_calls, fallback_calls) =
        (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let primary = {
        let calls = Arc::clone(&primary_calls);
        tower::service_fn(
            move |_req: http::Request<ReplayBody<ReplayBody<Full<Bytes>>>>| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Ok::<_, std::convert::Infallible>(route_set::overloaded()) }
            },
        )
    };
    let healthy = {
        let calls = Arc::clone(&fallback_calls);
        tower::service_fn(move |_req: route_set::Req| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::convert::Infallible>(route_set::chat_completion()) }
        })
    };
    let breaker = BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 1 })
        .break_duration(BreakDuration {
            base: Duration::from_secs(30),
            max: Duration::from_secs(30),
            jitter: 0.0,
        })
        .gate_readiness(true);
    let stack = Stack::interactive().breaker(breaker).seed(SEED);
    let classify = ClassifyLayer::openai();
    let fallback =
        FallbackLayer::new(stack.attempt(&classify, healthy)).route(RouteId::new("other"));
    let service = stack.build_with_fallback(&classify, primary, fallback);

    let response = tokio::time::timeout(Duration::from_secs(2), service.oneshot(chat_request()))
        .await
        .expect("the fallback answers, not after the primary's break")
        .unwrap_or_else(|e| panic!("the fallback answers: {e}"));
    assert!(response.status().is_success());
    let served = response.extensions().get::<ServedBy>().cloned().unwrap();
    assert_eq!(served.route, RouteId::new("other"));
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(
        codes,
        [
            Some(Code::ProviderUnavailable),
            Some(Code::CircuitOpen),
            None
        ],
        "{receipt:?}"
    );
    assert_eq!(primary_calls.load(Ordering::SeqCst), 1);
    assert_eq!(fallback_calls.load(Ordering::SeqCst), 1);
}
