//! Route sets: equivalent keys or deployments behind one service, inside
//! the retry ladder. Over loopback against seawall-chaos (each member's
//! fault travels in its own `x-chaos-fault` header, so one server can
//! reject key A and serve key B), and against in-process providers on the
//! paused clock where only timing matters.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{Ask, client, request, route_set};
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::{Code, Failure, Receipt, RouteId};
use seawall::fallback::{Member, RouteSetLayer};
use seawall::stack::Stack;
use seawall_chaos::{ChaosHandle, FAULT_HEADER};
use tower::{Service, ServiceExt};

fn ask(id: &str) -> Ask {
    Ask {
        provider: Provider::OpenAi,
        stream: false,
        id: id.to_owned(),
        fault: None,
        stop_after: None,
    }
}

/// A member on `chaos` with its own key, and `fault` on every request.
fn member(route: &str, chaos: &ChaosHandle, fault: Option<&str>) -> Member {
    let mut member = Member::new(route)
        .origin(&chaos.base_url())
        .expect("a loopback origin")
        .header(
            AUTHORIZATION,
            HeaderValue::try_from(format!("Bearer {route}")).unwrap(),
        );
    if let Some(fault) = fault {
        member = member.header(
            HeaderName::from_static(FAULT_HEADER),
            HeaderValue::from_str(fault).unwrap(),
        );
    }
    member
}

/// One operation: the receipt, or the failure.
async fn one<S, B>(service: &mut S, base: &str, id: &str) -> Result<Receipt, Failure>
where
    S: Service<
            http::Request<Full<Bytes>>,
            Response = http::Response<B>,
            Error = seawall::core::BoxError,
        >,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let response = match service
        .ready()
        .await
        .unwrap()
        .call(request(base, &ask(id)))
        .await
    {
        Ok(response) => response,
        Err(error) => return Err(Failure::find(&*error).expect("a seawall failure").clone()),
    };
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&body).contains("w8"),
        "a whole answer"
    );
    Ok(receipt)
}

/// The members of a receipt's attempts, in order.
fn routes(receipt: &Receipt) -> Vec<String> {
    receipt
        .attempts
        .iter()
        .map(|a| a.route.as_str().to_owned())
        .collect()
}

fn rows_with_status(chaos: &ChaosHandle, status: u16) -> usize {
    chaos
        .journal()
        .iter()
        .filter(|row| row.status == Some(status))
        .count()
}

#[tokio::test]
async fn a_rejected_key_is_left_for_the_other_until_its_cooldown_or_a_reset() {
    // Two keys on one host: two routes.
    let chaos = common::chaos().await;
    let set = RouteSetLayer::new([
        member("key-a", &chaos, Some("status;code=401")),
        member("key-b", &chaos, None),
    ])
    .unwrap()
    .demote_after_failure(Duration::from_millis(50));
    let taken_before = set.handle();
    let stack = common::short_stack().seed(11);
    let mut service = stack.build_with_route_set(&ClassifyLayer::openai(), client(), set);
    let base = chaos.base_url();

    for n in 0..20 {
        let receipt = one(&mut service, &base, &format!("op{n}"))
            .await
            .expect("B answers");
        assert_eq!(routes(&receipt).last().unwrap(), "key-b", "{receipt:?}");
        if receipt.attempts.len() == 2 {
            let first = receipt.attempts.iter().next().unwrap();
            assert_eq!(first.code, Some(Code::Auth));
            assert_eq!(first.route.as_str(), "key-a");
        } else {
            assert_eq!(receipt.attempts.len(), 1, "{receipt:?}");
        }
    }
    assert_eq!(rows_with_status(&chaos, 401), 1, "A is tried once");
    assert_eq!(rows_with_status(&chaos, 200), 20, "B answered every one");
    // The live set's handle is the service's: the stack configured the
    // set it was given anew, so a handle taken before reads nothing.
    let chosen = |handle: &seawall::fallback::RouteSetHandle| -> u64 {
        handle.members().iter().map(|member| member.chosen).sum()
    };
    assert_eq!(chosen(&service.get_ref().get_ref().handle()), 21);
    assert_eq!(chosen(&taken_before), 0);

    // A is not tried again within its cooldown (`AUTH_COOLDOWN`, far
    // longer than this test), or until an operator resets it.
    let handle = stack.breaker_layer().handle();
    let a = RouteId::new("key-a");
    let (code, left) = handle.cooldown(&a).expect("A cools down");
    assert_eq!(code, Code::Auth);
    assert!(
        left.is_some_and(|left| left <= seawall::core::AUTH_COOLDOWN && left > Duration::ZERO),
        "{left:?}"
    );
    handle.reset(&a);
    tokio::time::sleep(Duration::from_millis(60)).await;
    for n in 0..20 {
        let _ = one(&mut service, &base, &format!("after{n}")).await;
        if rows_with_status(&chaos, 401) == 2 {
            break;
        }
    }
    assert_eq!(
        rows_with_status(&chaos, 401),
        2,
        "after the reset, A is tried"
    );
}

#[tokio::test]
async fn three_members_one_walled_one_slow_under_a_thousand_operations() {
    let walled = common::chaos().await;
    let slow = common::chaos().await;
    let healthy = common::chaos().await;
    let set = RouteSetLayer::new([
        member(
            "walled",
            &walled,
            Some("status;code=429;retry_after=48489;kind=insufficient_quota"),
        ),
        member("slow", &slow, Some("slow_first_byte;ms=40")),
        member("healthy", &healthy, None),
    ])
    .unwrap();
    let stack = common::short_stack().seed(5);
    let mut service = stack.build_with_route_set(&ClassifyLayer::openai(), client(), set);
    // The request names a host no member is: every member rewrites it.
    let base = "http://127.0.0.1:9";

    let operations = 1000;
    let mut longest = Duration::ZERO;
    for n in 0..operations {
        let started = tokio::time::Instant::now();
        let receipt = one(&mut service, base, &format!("op{n}"))
            .await
            .expect("answered");
        longest = longest.max(started.elapsed());
        assert!(receipt.attempts.len() <= 2, "{receipt:?}");
    }
    let walled_rows = walled.journal().len();
    let slow_rows = slow.journal().len();
    let healthy_rows = healthy.journal().len();
    assert!(
        walled_rows <= 1,
        "the wall is learnt in at most one attempt: {walled_rows}"
    );
    assert_eq!(
        rows_with_status(&slow, 200) + rows_with_status(&healthy, 200),
        operations,
        "one answer per operation, none duplicated"
    );
    assert_eq!(slow_rows + healthy_rows, operations);
    assert!(
        healthy_rows * 3 >= operations * 2,
        "at least two thirds to the healthy one: {healthy_rows} (slow {slow_rows})"
    );
    assert!(
        longest < common::TOTAL,
        "deadline never exceeded: {longest:?}"
    );
    let handle = stack.breaker_layer().handle();
    let (code, left) = handle.cooldown(&RouteId::new("walled")).expect("walled");
    assert_eq!(code, Code::QuotaExhausted);
    assert!(left.unwrap() > Duration::from_secs(48_000));
}

/// An in-process provider: each key rate-limited (429, `Retry-After:
/// {hint}`) the first `limited` times it is asked, then answering.
fn limited_provider(
    hint: u64,
    limited: u32,
    calls: Arc<AtomicU32>,
) -> impl Service<
    route_set::Req,
    Response = http::Response<Full<Bytes>>,
    Error = std::convert::Infallible,
    Future = impl Send,
> + Clone
+ Send {
    let seen = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
        String,
        u32,
    >::new()));
    route_set::per_key(move |key| {
        calls.fetch_add(1, Ordering::SeqCst);
        let n = {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(key.to_owned()).or_default();
            *n += 1;
            *n
        };
        if n <= limited {
            route_set::rate_limited(&hint.to_string())
        } else {
            route_set::chat_completion()
        }
    })
}

#[tokio::test(start_paused = true)]
async fn every_member_rate_limited_past_the_deadline_fails_at_once() {
    let calls = Arc::new(AtomicU32::new(0));
    let stack = Stack::interactive()
        .total_deadline(Duration::from_secs(10))
        .seed(3);
    let set = RouteSetLayer::new(route_set::members(&["key-a", "key-b"])).unwrap();
    let mut service = stack.build_with_route_set(
        &ClassifyLayer::openai(),
        limited_provider(60, u32::MAX, calls.clone()),
        set,
    );
    let started = tokio::time::Instant::now();
    let failure = one(&mut service, "http://api.example.com", "first")
        .await
        .unwrap_err();
    assert_eq!(failure.code(), Code::RateLimited);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each key once");
    assert!(started.elapsed() < Duration::from_secs(1), "no wait");

    // The next operation asks nobody: every key is cooling down; the
    // set's own refusal says what cooled them and when the first comes
    // back.
    let failure = one(&mut service, "http://api.example.com", "second")
        .await
        .unwrap_err();
    assert_eq!(failure.code(), Code::RouteCoolingDown);
    assert_eq!(failure.cooled_by(), Some(Code::RateLimited));
    assert_eq!(failure.receipt().map(Receipt::calls), Some(0));
    let back = failure.retry_after().expect("the earliest return");
    assert!(
        back > Duration::from_secs(55) && back <= Duration::from_secs(60),
        "{back:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() < Duration::from_secs(1), "no wait");
}

/// Every member rate-limited once for 2 s inside a 10 s deadline, also as
/// many members as the ladder has attempts: each member's first failure
/// moves the operation to the next, and the last one's leaves every member
/// cooling. The ladder still has an attempt for the member that comes back
/// first: moving off a member met for the first time is the set's move,
/// not a retry.
#[tokio::test(start_paused = true)]
async fn every_member_rate_limited_briefly_is_waited_for() {
    let cases: [(Stack, &[&str]); 3] = [
        (Stack::interactive(), &["key-a", "key-b"]),
        (Stack::interactive(), &["key-a", "key-b", "key-c"]),
        (Stack::reasoning(), &["key-a", "key-b"]),
    ];
    for (stack, keys) in cases {
        let calls = Arc::new(AtomicU32::new(0));
        let stack = stack.total_deadline(Duration::from_secs(10)).seed(3);
        let set = RouteSetLayer::new(route_set::members(keys)).unwrap();
        let mut service = stack.build_with_route_set(
            &ClassifyLayer::openai(),
            limited_provider(2, 1, calls.clone()),
            set,
        );
        let started = tokio::time::Instant::now();
        let receipt = one(&mut service, "http://api.example.com", "brief")
            .await
            .unwrap_or_else(|failure| panic!("{keys:?}: waits and succeeds: {failure:?}"));
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(2), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
        // Each key met its limit once; the one back first answered.
        assert_eq!(calls.load(Ordering::SeqCst) as usize, keys.len() + 1);
        let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
        let mut expected = vec![Some(Code::RateLimited); keys.len()];
        expected.push(None);
        assert_eq!(codes, expected, "{keys:?}");
        let mut tried = routes(&receipt);
        tried.pop();
        tried.sort();
        tried.dedup();
        assert_eq!(tried.len(), keys.len(), "each key tried once: {receipt:?}");
    }
}

/// Both keys cooling after a 2 s rate limit, and a burst of operations
/// meanwhile under a small gRPC budget: the set waits for the first key
/// back, inside the operation, so no refusal is an attempt — none spends a
/// budget token, none ends at once with the budget, and each receipt lists
/// only the attempt that reached the provider. The burst comes back
/// spread, not in the instant the cooldown ends.
#[tokio::test(start_paused = true)]
async fn a_burst_while_every_member_cools_waits_without_spending_the_budget() {
    let calls = Arc::new(AtomicU32::new(0));
    let stack = Stack::interactive()
        .total_deadline(Duration::from_secs(10))
        .budget(seawall::retry::Budget::grpc(3, 0.1))
        .seed(9);
    let set = RouteSetLayer::new(route_set::members(&["key-a", "key-b"])).unwrap();
    let service = stack.build_with_route_set(
        &ClassifyLayer::openai(),
        limited_provider(2, 1, calls.clone()),
        set,
    );
    let breaker = stack.breaker_layer().handle();
    let cooling = || {
        ["key-a", "key-b"]
            .iter()
            .all(|key| breaker.cooldown(&RouteId::new(*key)).is_some())
    };
    // One operation meets both limits: every key cools for 2 s.
    let mut first = service.clone();
    let warm = tokio::spawn(async move {
        one(&mut first, "http://api.example.com", "warm").await.ok();
    });
    while !cooling() {
        // A sleep, not a yield: the paused clock moves only when idle.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let started = tokio::time::Instant::now();
    let burst: Vec<_> = (0..200)
        .map(|n| {
            let mut service = service.clone();
            tokio::spawn(async move {
                let receipt = one(&mut service, "http://api.example.com", &format!("op{n}")).await;
                (receipt, tokio::time::Instant::now())
            })
        })
        .collect();
    let mut answered_at = Vec::new();
    for operation in burst {
        let (receipt, at) = operation.await.unwrap();
        let receipt = receipt.unwrap_or_else(|failure| {
            panic!(
                "waited for and answered, not {:?} ({:?})",
                failure.code(),
                failure.receipt().and_then(|r| r.stop)
            )
        });
        assert_eq!(receipt.stop, Some(seawall::core::StopReason::Succeeded));
        let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
        assert_eq!(codes, [None], "only the attempt that reached the provider");
        answered_at.push(at - started);
    }
    warm.await.unwrap();
    // The burst's calls, and at most one of the first operation's after
    // its own wait: none was refused locally and counted.
    let made = calls.load(Ordering::SeqCst);
    assert!((202..=203).contains(&made), "{made}");
    answered_at.sort();
    assert!(
        answered_at[0] >= Duration::from_millis(1500),
        "{answered_at:?}"
    );
    assert!(
        answered_at[199] < Duration::from_secs(10),
        "{:?}",
        answered_at[199]
    );
    assert!(
        answered_at[199] - answered_at[0] >= Duration::from_millis(100),
        "spread, not in one instant: {:?}..{:?}",
        answered_at[0],
        answered_at[199]
    );
}
