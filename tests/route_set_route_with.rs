//! A route set under a breaker that names routes with `route_with`: the
//! set reads each member's breaker by the member's `RouteId`, and the
//! calls it sends must be counted in that same breaker, or the set never
//! sees a member open. In-process providers on the paused clock.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{Ask, request, route_set};
use http_body_util::{BodyExt, Full};
use seawall::breaker::{BreakDuration, BreakerLayer, BreakerState, Trip};
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::{Code, Receipt, RouteId};
use seawall::fallback::RouteSetLayer;
use seawall::stack::Stack;
use tower::{Service, ServiceExt};

/// One operation's receipt (it must succeed).
async fn one<S, B>(service: &mut S, id: &str) -> Receipt
where
    S: Service<
            http::Request<Full<Bytes>>,
            Response = http::Response<B>,
            Error = seawall::core::BoxError,
        >,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let ask = Ask {
        provider: Provider::OpenAi,
        stream: false,
        id: id.to_owned(),
        fault: None,
        stop_after: None,
    };
    let response = service
        .ready()
        .await
        .unwrap()
        .call(request("http://api.example.com", &ask))
        .await
        .unwrap_or_else(|error| panic!("{id}: answered, not {error}"));
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    response.into_body().collect().await.unwrap();
    receipt
}

/// A breaker with a route function (here one breaker per model of a
/// route) under a route set: member A failing once (503) opens A's breaker,
/// the set sees it, and every later operation goes to B first, none
/// spending its first attempt on a refusal at A (the set's own demotion
/// of a member that just failed is over by then). Before, the calls were
/// counted under "key-a#model" and the set read a breaker "key-a" that
/// nothing counted in.
#[tokio::test(start_paused = true)]
async fn a_member_opened_under_a_route_function_is_seen_by_the_set() {
    let calls_a = Arc::new(AtomicU32::new(0));
    let stack = Stack::interactive()
        .total_deadline(Duration::from_secs(10))
        .breaker(
            BreakerLayer::new()
                .trip(Trip::Consecutive { failures: 1 })
                .break_duration(BreakDuration {
                    base: Duration::from_secs(60),
                    max: Duration::from_secs(60),
                    jitter: 0.0,
                })
                .route_with(|head| RouteId::new(format!("{}#model", head.default_route()))),
        )
        .seed(5);
    // Key `key-a` answers 503 (`provider_unavailable`) every time; any
    // other key answers.
    let provider = {
        let calls_a = Arc::clone(&calls_a);
        route_set::per_key(move |key| {
            if key == "Bearer key-a" {
                calls_a.fetch_add(1, Ordering::SeqCst);
                route_set::overloaded()
            } else {
                route_set::chat_completion()
            }
        })
    };
    let mut service = stack.build_with_route_set(
        &ClassifyLayer::openai(),
        provider,
        RouteSetLayer::new(route_set::members(&["key-a", "key-b"])).unwrap(),
    );
    let handle = stack.breaker_layer().handle();
    // Operations until one meets A's overload (the set may try B first).
    let mut n = 0;
    let warm = loop {
        n += 1;
        assert!(n < 50, "A never chosen");
        let receipt = one(&mut service, &format!("warm{n}")).await;
        if calls_a.load(Ordering::SeqCst) > 0 {
            break receipt;
        }
    };
    assert_eq!(calls_a.load(Ordering::SeqCst), 1);
    let codes: Vec<_> = warm
        .attempts
        .iter()
        .map(|a| (a.route.as_str().to_owned(), a.code))
        .collect();
    assert_eq!(
        codes,
        [
            ("key-a".to_owned(), Some(Code::ProviderUnavailable)),
            ("key-b".to_owned(), None)
        ],
        "A unavailable (503), then B"
    );
    assert_eq!(
        handle.state(&RouteId::new("key-a")),
        BreakerState::Open,
        "A's failure counted under A, the breaker the set reads"
    );
    // Past the set's own demotion of a member that just failed (1 s), well
    // inside A's break (60 s): only the breaker keeps A out now.
    tokio::time::advance(Duration::from_secs(2)).await;
    for n in 0..20 {
        let receipt = one(&mut service, &format!("op{n}")).await;
        let first = &receipt.attempts[0];
        assert_eq!(first.route.as_str(), "key-b", "op{n}: {receipt:?}");
        assert_eq!(first.code, None, "op{n}: {receipt:?}");
    }
    assert_eq!(calls_a.load(Ordering::SeqCst), 1, "A left alone while open");
}
