//! Route-scoped failures over loopback: a quota wall, rejected keys and a
//! silent route condemn the route, not the request — the fallback answers,
//! and what the route said is remembered by the breaker for the requests
//! that follow.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{Ask, client, fallback_to, request};
use http_body_util::{BodyExt, Full};
use seawall::classify::ClassifyLayer;
use seawall::core::provider::Provider;
use seawall::core::{Code, Failure, Receipt, RouteId};
use seawall::fallback::{FallbackLayer, FallbackRoute, ServedBy};
use seawall_chaos::{ChaosHandle, Fault};
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

fn fault(text: &str) -> Fault {
    common::fault(text)
}

/// One operation through `service`: who served it, and the receipt.
async fn one<S, B>(service: &mut S, base: &str, id: &str) -> Result<(ServedBy, Receipt), Failure>
where
    S: Service<
            http::Request<Full<Bytes>>,
            Response = http::Response<B>,
            Error = seawall::core::BoxError,
        >,
    B: http_body::Body<Data = Bytes>,
    B::Error: std::fmt::Debug,
{
    let request = request(base, &ask(id));
    let response = match service.ready().await.unwrap().call(request).await {
        Ok(response) => response,
        Err(error) => return Err(Failure::find(&*error).expect("a seawall failure").clone()),
    };
    let served = response.extensions().get::<ServedBy>().cloned().unwrap();
    let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("w8"));
    Ok((served, receipt))
}

/// A chaos server whose first OpenAI call gets `fault`.
async fn scripted(fault_text: &str) -> ChaosHandle {
    common::chaos_scripted(&[fault_text]).await
}

fn rows(chaos: &ChaosHandle) -> usize {
    chaos.journal().len()
}

#[tokio::test]
async fn a_quota_wall_fails_over_at_once_and_is_remembered_until_its_reset() {
    let primary = common::chaos().await;
    let backup = common::chaos().await;
    // A 1 s hint is a quota wall here (threshold 100 ms): its reset comes
    // within the test.
    primary
        .script(
            "openai",
            vec![fault(
                "status;code=429;retry_after=1;kind=insufficient_quota",
            )],
        )
        .unwrap();
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai().quota_wall(Duration::from_millis(100));
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&classify, client(), fallback);

    let started = tokio::time::Instant::now();
    let (served, receipt) = one(&mut service, &primary.base_url(), "walled")
        .await
        .unwrap();
    assert!(served.fallback, "the backup answered");
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::QuotaExhausted), None]);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "no backoff wait: {:?}",
        started.elapsed()
    );
    assert_eq!((rows(&primary), rows(&backup)), (1, 1));

    // The next hundred operations go straight to the backup.
    for n in 0..100 {
        let (served, receipt) = one(&mut service, &primary.base_url(), &format!("op{n}"))
            .await
            .unwrap();
        assert!(served.fallback);
        assert_eq!(
            receipt.attempts.iter().next().unwrap().code,
            Some(Code::RouteCoolingDown),
            "refused locally"
        );
    }
    assert_eq!(rows(&primary), 1, "no attempt on the walled route");
    assert_eq!(rows(&backup), 101);

    // After its reset, one probe: the wall is gone, the primary answers.
    let handle = stack.breaker_layer().handle();
    let route = RouteId::new(primary.base_url().trim_start_matches("http://"));
    let (code, left) = handle.cooldown(&route).expect("still cooling");
    assert_eq!(code, Code::QuotaExhausted);
    tokio::time::sleep(left.unwrap() + Duration::from_millis(20)).await;
    let (served, _) = one(&mut service, &primary.base_url(), "after")
        .await
        .unwrap();
    assert!(!served.fallback, "the primary is back");
    assert_eq!(rows(&primary), 2);
}

/// A rate limit with a short hint on the only route, whose words name its
/// model, cools that model there for the hint, not the route: the
/// operation that got the 429 waits it out; another operation for the
/// model, on OpenAI's wire (the model in the body, known once an attempt
/// sent it), sends its first attempt (a provider still limited answers
/// 429 again, unbilled, and its retry is refused locally) — here the
/// provider answers it. None ends at once for want of another route.
#[tokio::test]
async fn a_short_rate_limit_on_the_only_route_is_waited_out_by_every_operation() {
    let primary = scripted("status;code=429;retry_after=1").await;
    // A budget with room for one retry: the refused operation's wait must
    // not need it (nothing of it reached the provider).
    let stack = common::short_stack().budget(seawall::retry::Budget::grpc(3, 0.1));
    let service = stack.build(&ClassifyLayer::openai(), client());
    let breaker = stack.breaker_layer().handle();
    let route = RouteId::new(primary.base_url().trim_start_matches("http://"));
    let base = primary.base_url();
    let codes = |id: &'static str| {
        let (service, base) = (service.clone(), base.clone());
        async move {
            let response = service.oneshot(request(&base, &ask(id))).await;
            let receipt = match &response {
                Ok(response) => response.extensions().get::<Receipt>().cloned(),
                Err(error) => Failure::find(&**error).and_then(|f| f.receipt().cloned()),
            };
            let codes: Vec<_> = receipt.unwrap().attempts.iter().map(|a| a.code).collect();
            (response.is_ok(), codes)
        }
    };
    let (limited, refused) = tokio::join!(codes("limited"), async {
        // Once the 429 came back and cooled the model on the route (the
        // provider's words name the model: its cooldown is the model's,
        // which the handle's route cooldown does not list) — well within
        // the hint's second.
        while rows(&primary) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            breaker.cooldown(&route),
            None,
            "the model's, not the route's"
        );
        codes("refused").await
    });
    assert_eq!(limited, (true, vec![Some(Code::RateLimited), None]));
    assert_eq!(
        refused,
        (true, vec![None]),
        "the model's first attempt is sent, and answered here"
    );
    assert_eq!(rows(&primary), 3, "429, its retry, the other's call");
}

/// A chain of one route taken only for a context overflow: it takes no
/// failure of the primary's route.
fn larger_context(stack: &seawall::stack::Stack) -> FallbackLayer<common::FallbackAttempt> {
    let larger = FallbackRoute::new(stack.attempt(&ClassifyLayer::openai(), client()))
        .route(RouteId::new("larger-context"))
        .only_on(Code::ContextTooLong);
    FallbackLayer::chain([larger])
}

/// A fallback chain whose routes take no route-scoped failure (one only
/// for a context overflow) leaves the primary's ladder as it was: a silent
/// attempt is tried again on the primary, not given up on for a fallback
/// that would not take it.
#[tokio::test]
async fn a_chain_that_takes_no_timeout_leaves_the_primary_its_retries() {
    let primary = scripted("hang_after_headers").await;
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let mut service = stack.build_with_fallback(&classify, client(), larger_context(&stack));
    let (served, receipt) = one(&mut service, &primary.base_url(), "silent")
        .await
        .expect("the primary's second attempt answers");
    assert!(!served.fallback);
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::Timeout), None]);
    assert_eq!(rows(&primary), 2);
}

/// A chain whose only route opted in to silent attempts alone
/// (`only_on(Timeout)`) takes them: the primary is left after one silent
/// attempt, as for a route that takes every route-scoped failure. (The
/// fallback here is the same server under another name: its second answer
/// is healthy.)
#[tokio::test]
async fn a_route_only_for_silence_takes_the_primarys_silent_attempt() {
    let primary = scripted("hang_after_headers").await;
    let stack = common::short_stack();
    let classify = ClassifyLayer::openai();
    let spare = FallbackRoute::new(stack.attempt(&classify, client()))
        .route(RouteId::new("spare"))
        .only_on(Code::FirstByteTimeout)
        .on(Code::Timeout);
    let mut service = stack.build_with_fallback(&classify, client(), FallbackLayer::chain([spare]));
    let (served, _) = one(&mut service, &primary.base_url(), "silent")
        .await
        .expect("the spare answers");
    assert!(served.fallback, "left after one silent attempt");
    assert_eq!(rows(&primary), 2);
}

/// Rejected credentials fail over and keep the route cold (for
/// `AUTH_COOLDOWN`, not ended within this test); a reset by the handle
/// reopens it at once.
#[tokio::test]
async fn rejected_credentials_fail_over_and_stay_cold_until_their_cooldown_ends() {
    let primary = common::chaos().await;
    let backup = common::chaos().await;
    primary
        .script("openai", vec![fault("status;code=401")])
        .unwrap();
    let stack = common::short_stack();
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
    for n in 0..5 {
        let (served, _) = one(&mut service, &primary.base_url(), &format!("op{n}"))
            .await
            .unwrap();
        assert!(served.fallback);
    }
    assert_eq!(rows(&primary), 1, "one rejection cools the route");
    let handle = stack.breaker_layer().handle();
    let route = RouteId::new(primary.base_url().trim_start_matches("http://"));
    let (code, left) = handle.cooldown(&route).expect("cooling down");
    assert_eq!(code, Code::Auth);
    assert!(
        left.is_some_and(|left| left <= seawall::core::AUTH_COOLDOWN && left > Duration::ZERO),
        "{left:?}"
    );
    handle.reset(&route);
    let (served, _) = one(&mut service, &primary.base_url(), "after")
        .await
        .unwrap();
    assert!(!served.fallback);
    assert_eq!(rows(&primary), 2);
}

#[tokio::test]
async fn a_brief_503_is_retried_on_the_same_route_and_the_fallback_is_untouched() {
    let primary = common::chaos().await;
    let backup = common::chaos().await;
    primary
        .script("openai", vec![fault("status;code=503")])
        .unwrap();
    let stack = common::short_stack();
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
    let (served, receipt) = one(&mut service, &primary.base_url(), "brief")
        .await
        .unwrap();
    assert!(!served.fallback);
    assert_eq!(receipt.attempts.len(), 2);
    assert_eq!((rows(&primary), rows(&backup)), (2, 0));
}

#[tokio::test]
async fn without_another_route_the_wall_is_one_attempt_surfaced() {
    let primary = scripted("status;code=429;retry_after=48489;kind=insufficient_quota").await;
    let stack = common::short_stack();
    let mut service = stack.build(&ClassifyLayer::openai(), client());
    let failure = one(&mut service, &primary.base_url(), "alone")
        .await
        .unwrap_err();
    assert_eq!(failure.code(), Code::QuotaExhausted);
    assert_eq!(rows(&primary), 1);
}

/// A listener that accepts connections and never answers: not even headers.
async fn mute() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    (base, task)
}

#[tokio::test]
async fn silence_with_an_attempt_bound_shorter_than_first_byte_is_left_after_one_attempt() {
    let backup = common::chaos().await;
    // Headers then silence (the stream guard's first-byte bound is longer
    // than the attempt's), and no headers at all.
    let hanging = common::chaos().await;
    hanging
        .script("openai", vec![fault("hang_after_headers")])
        .unwrap();
    let (mute_base, mute_task) = mute().await;
    for (name, base) in [
        ("headers, then silence", hanging.base_url()),
        ("no headers", mute_base),
    ] {
        let stack = common::short_stack()
            .attempt_timeout(Duration::from_millis(150))
            .stream_guard(
                seawall::stream::StreamGuardLayer::interactive()
                    .first_byte_timeout(Duration::from_secs(2)),
            );
        let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
        let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
        let mut streamed = ask(name);
        streamed.stream = true;
        let request = request(&base, &streamed);
        let response = service
            .ready()
            .await
            .unwrap()
            .call(request)
            .await
            .expect(name);
        let receipt = response.extensions().get::<Receipt>().cloned().unwrap();
        let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
        assert_eq!(codes, [Some(Code::Timeout), None], "{name}");
        assert!(receipt.fallback, "{name}");
    }
    assert_eq!(hanging.journal().len(), 1);
    mute_task.abort();
}

/// A chain of two other routes, each tracked as its own route.
fn chain_to(
    stack: &seawall::stack::Stack,
    routes: [(&str, &str); 2],
) -> seawall::fallback::FallbackLayer<
    common::FallbackAttempt,
    impl Fn(&mut common::FallbackRequest) + Clone + Send + Sync + 'static,
> {
    let [(a_base, a), (b_base, b)] = routes;
    let to_a = fallback_to(stack, Provider::OpenAi, a_base).routes()[0]
        .clone()
        .route(RouteId::new(a));
    let to_b = fallback_to(stack, Provider::OpenAi, b_base).routes()[0]
        .clone()
        .route(RouteId::new(b));
    seawall::fallback::FallbackLayer::chain([to_a, to_b])
}

#[tokio::test]
async fn a_chain_passes_two_walls_and_skips_both_after() {
    let primary = common::chaos().await;
    let walled = common::chaos().await;
    let healthy = common::chaos().await;
    let wall = || fault("status;code=429;retry_after=48489;kind=insufficient_quota");
    primary.script("openai", vec![wall()]).unwrap();
    walled.script("openai", vec![wall()]).unwrap();
    let stack = common::short_stack();
    let (walled_base, healthy_base) = (walled.base_url(), healthy.base_url());
    let chain = chain_to(
        &stack,
        [(&walled_base, "walled"), (&healthy_base, "healthy")],
    );
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), chain);

    let started = tokio::time::Instant::now();
    let (served, receipt) = one(&mut service, &primary.base_url(), "walls")
        .await
        .unwrap();
    assert_eq!(served.route, RouteId::new("healthy"));
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(
        codes,
        [Some(Code::QuotaExhausted), Some(Code::QuotaExhausted), None]
    );
    assert!(started.elapsed() < Duration::from_millis(500), "no backoff");

    // Both walls are remembered: the next operations call neither.
    for n in 0..20 {
        let (served, receipt) = one(&mut service, &primary.base_url(), &format!("op{n}"))
            .await
            .unwrap();
        assert_eq!(served.route, RouteId::new("healthy"));
        let routes: Vec<_> = receipt
            .attempts
            .iter()
            .map(|a| (a.route.as_str(), a.code))
            .collect();
        assert_eq!(routes[1], ("walled", Some(Code::RouteCoolingDown)));
    }
    assert_eq!((rows(&primary), rows(&walled), rows(&healthy)), (1, 1, 21));
}

#[tokio::test]
async fn context_too_long_goes_to_the_large_route_only_when_opted_in() {
    let too_long = || fault("status;code=400;kind=context_length");
    for opted_in in [true, false] {
        let primary = common::chaos().await;
        let large = common::chaos().await;
        primary.script("openai", vec![too_long()]).unwrap();
        let stack = common::short_stack();
        let mut fallback = fallback_to(&stack, Provider::OpenAi, &large.base_url());
        if opted_in {
            fallback = fallback.on(Code::ContextTooLong);
        }
        let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
        let outcome = one(&mut service, &primary.base_url(), "long").await;
        assert_eq!(rows(&primary), 1, "one attempt on the primary");
        if opted_in {
            let (served, _) = outcome.expect("the large route answers");
            assert!(served.fallback);
            assert_eq!(rows(&large), 1);
        } else {
            let failure = outcome.expect_err("surfaced");
            assert_eq!(failure.code(), Code::ContextTooLong);
            assert_eq!(rows(&large), 0);
        }
    }
}

/// A quota wall that names no reset cools the only route for a guessed
/// minute. That guess is no hint to wait out: the next operation is
/// refused at once, as permanent as the wall (the operation that met the
/// wall did not wait either), not put to sleep for most of a minute to
/// meet the same wall again.
#[tokio::test]
async fn a_guessed_quota_cooldown_on_the_only_route_is_not_slept_out() {
    let primary = scripted("status;code=429;kind=insufficient_quota").await;
    // A total deadline that leaves room to sleep the guess out.
    let service = seawall::stack::Stack::reasoning().build(&ClassifyLayer::openai(), client());
    let base = primary.base_url();
    let mut first = service.clone();
    let wall = one(&mut first, &base, "wall").await.unwrap_err();
    assert_eq!(wall.code(), Code::QuotaExhausted);
    let started = std::time::Instant::now();
    let mut next = service.clone();
    let refused = tokio::time::timeout(Duration::from_secs(5), one(&mut next, &base, "next"))
        .await
        .expect("refused at once, not slept out")
        .unwrap_err();
    assert_eq!(refused.code(), Code::RouteCoolingDown);
    assert_eq!(refused.class(), seawall::core::Class::Permanent);
    assert!(
        refused.retry_after().is_some(),
        "the time left is still said"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(rows(&primary), 1, "the refusal made no call");
}

/// A rate limit whose hint is past the ladder's backoff cap (8 s in the
/// interactive preset), on a route with a fallback: the fallback serves
/// the operation at once, as it serves every operation the breaker
/// refuses meanwhile. Not 30 s asleep to call the limited route again.
#[tokio::test]
async fn a_hint_past_the_backoff_cap_moves_to_the_fallback_at_once() {
    let primary = scripted("status;code=429;retry_after=30").await;
    let backup = common::chaos().await;
    let stack = seawall::stack::Stack::interactive();
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
    let started = std::time::Instant::now();
    let (served, receipt) = tokio::time::timeout(
        Duration::from_secs(5),
        one(&mut service, &primary.base_url(), "limited"),
    )
    .await
    .expect("moved at once, not slept out")
    .unwrap();
    assert!(served.fallback, "the backup answered");
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(codes, [Some(Code::RateLimited), None]);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!((rows(&primary), rows(&backup)), (1, 1));
}

/// A fallback route without a ladder of its own (as `fallback_to` and the
/// gateway build them) that answers 200 with nothing in it was billed: the
/// operation's receipt says so, as a ladder's record of the same attempt
/// would.
#[tokio::test]
async fn a_billed_failure_of_a_fallback_route_is_billed_in_the_receipt() {
    let primary = scripted("status;code=429;retry_after=48489;kind=insufficient_quota").await;
    let backup = scripted("empty").await;
    let stack = common::short_stack();
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
    let failure = one(&mut service, &primary.base_url(), "billed")
        .await
        .unwrap_err();
    let receipt = failure.receipt().expect("the operation's receipt");
    let attempts: Vec<_> = receipt
        .attempts
        .iter()
        .map(|a| (a.code, a.billed))
        .collect();
    assert_eq!(
        attempts,
        [
            (Some(Code::QuotaExhausted), false),
            (Some(Code::EmptyResponse), true)
        ]
    );
    assert_eq!(receipt.billed_attempts(), 1);
    assert_eq!((rows(&primary), rows(&backup)), (1, 1));
}

/// Every route cooling after a quota wall that names no reset: the next
/// operation fails at once, as the one that met the walls did. Not a
/// minute asleep for the guessed reset, to meet a wall again.
#[tokio::test]
async fn walls_on_every_route_are_not_waited_for() {
    let primary = common::chaos().await;
    let backup = common::chaos().await;
    let wall = || fault("status;code=429;kind=insufficient_quota");
    primary.script("openai", vec![wall()]).unwrap();
    backup.script("openai", vec![wall()]).unwrap();
    // A deadline with room to wait the guess out.
    let stack = seawall::stack::Stack::reasoning();
    let fallback = fallback_to(&stack, Provider::OpenAi, &backup.base_url());
    let mut service = stack.build_with_fallback(&ClassifyLayer::openai(), client(), fallback);
    let walled = one(&mut service, &primary.base_url(), "walls")
        .await
        .unwrap_err();
    assert_eq!(walled.code(), Code::QuotaExhausted);
    let next = tokio::time::timeout(
        Duration::from_secs(5),
        one(&mut service, &primary.base_url(), "next"),
    )
    .await
    .expect("failed at once, not waited out")
    .unwrap_err();
    assert!(
        matches!(next.code(), Code::QuotaExhausted | Code::RouteCoolingDown),
        "{next:?}"
    );
    assert_eq!(
        (rows(&primary), rows(&backup)),
        (1, 1),
        "no call after the walls"
    );
}

/// No time is kept in reserve for a chain that takes no route's failure
/// (a route only for a context overflow): it fires only after a failure
/// that comes at once, so a reserve would only cut the primary's attempt
/// short. Here a 2 s answer fits the 2.5 s attempt bound and the 3 s
/// total; a 1.5 s reserve cut it at 1.5 s, a timeout no route took.
#[tokio::test]
async fn a_chain_that_takes_no_route_failure_keeps_no_reserve() {
    let primary = scripted("slow_first_byte;ms=2000").await;
    let stack = common::short_stack()
        .total_deadline(Duration::from_secs(3))
        .attempt_timeout(Duration::from_millis(2500));
    let classify = ClassifyLayer::openai();
    let mut service = stack.build_with_fallback(&classify, client(), larger_context(&stack));
    let (served, receipt) = one(&mut service, &primary.base_url(), "slow")
        .await
        .expect("the primary answers within its attempt");
    assert!(!served.fallback);
    assert_eq!(receipt.attempts.len(), 1);
    assert_eq!(rows(&primary), 1);
}
