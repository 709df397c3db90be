//! The ladder above a route set, with the set played by a script: a
//! member's failure that another member can take comes wrapped in
//! `AnotherRoute`, and moving off a member met for the first time is the
//! set's move, not one of the ladder's attempts. On tokio's paused clock.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{RATE_LIMIT_BODY, failure, openai, receipt};
use http::{Request, Response};
use seawall_core::recording::ReplayBody;
use seawall_core::{AnotherRoute, Code, Failure, RouteId, StopReason};
use seawall_retry::{Budget, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{BoxError, Layer, ServiceExt};

/// One call to the scripted set: the member chosen, and what it did.
#[derive(Clone)]
enum Step {
    /// The member answered.
    Answers(&'static str),
    /// The member failed; `another`: the set says another member can take
    /// the next attempt.
    Fails(&'static str, Box<Failure>, bool),
}

/// The members the scripted set called, in order.
type Called = Arc<Mutex<Vec<&'static str>>>;

/// A route set played by `script` (its last step repeated), and the
/// members it called, in order.
fn scripted_set(
    script: impl IntoIterator<Item = Step>,
) -> (
    impl tower::Service<
        Request<ReplayBody<String>>,
        Response = Response<String>,
        Error = BoxError,
        Future = impl Send,
    > + Clone
    + Send,
    Called,
) {
    let script: Arc<Mutex<VecDeque<Step>>> = Arc::new(Mutex::new(script.into_iter().collect()));
    let called = Arc::new(Mutex::new(Vec::new()));
    let seen = called.clone();
    let service = tower::service_fn(move |_: Request<ReplayBody<String>>| {
        let step = {
            let mut script = script.lock().unwrap();
            match script.len() {
                1 => script[0].clone(),
                _ => script.pop_front().expect("a script"),
            }
        };
        let member = match &step {
            Step::Answers(member) | Step::Fails(member, ..) => *member,
        };
        seen.lock().unwrap().push(member);
        async move {
            match step {
                Step::Answers(member) => {
                    let mut response = Response::new(String::from("ok"));
                    response.extensions_mut().insert(RouteId::new(member));
                    Ok(response)
                }
                Step::Fails(member, failure, another) => {
                    let failure = (*failure).with_route(RouteId::new(member));
                    Err(if another {
                        Box::new(AnotherRoute::new(failure)) as BoxError
                    } else {
                        Box::new(failure)
                    })
                }
            }
        }
    });
    (service, called)
}

fn fails(member: &'static str, failure: Failure, another: bool) -> Step {
    Step::Fails(member, Box::new(failure), another)
}

fn request() -> Request<String> {
    Request::post("https://api.openai.example/v1/chat/completions")
        .body(String::from(r#"{"model":"m"}"#))
        .unwrap()
}

fn rate_limited() -> Failure {
    openai(429, Some(Duration::from_secs(2)), RATE_LIMIT_BODY)
}

/// Three members, three attempts, each member rate-limited once for 2 s:
/// the first two failures move to another member, the third leaves none to
/// move to and its hint is waited out; the member back first answers. Four
/// calls, and the ladder's three attempts were never the bound.
#[tokio::test(start_paused = true)]
async fn each_members_first_failure_is_a_move_not_an_attempt() {
    let (set, called) = scripted_set([
        fails("a", rate_limited(), true),
        fails("b", rate_limited(), true),
        fails("c", rate_limited(), false),
        Step::Answers("a"),
    ]);
    let ladder = RetryBudgetLayer::new(RetryPolicy::interactive(), Budget::unlimited()).seed(4);
    let started = Instant::now();
    let response = ladder
        .layer(set)
        .oneshot(request())
        .await
        .expect("answered after the wait");
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(*called.lock().unwrap(), ["a", "b", "c", "a"]);
    let receipt = response
        .extensions()
        .get::<seawall_core::Receipt>()
        .unwrap();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    let rl = Some(Code::RateLimited);
    assert_eq!(codes, [rl, rl, rl, None]);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}

/// Moves between members already met are attempts: two members
/// rate-limited for ever under three attempts make five calls — one move
/// off each member, then the ladder's three — and stop on the attempts.
#[tokio::test(start_paused = true)]
async fn only_the_first_failure_on_each_member_is_free() {
    let (set, called) = scripted_set([
        fails("a", rate_limited(), true),
        fails("b", rate_limited(), true),
        fails("a", rate_limited(), true),
        fails("b", rate_limited(), true),
        fails("a", rate_limited(), true),
        fails("b", rate_limited(), true),
    ]);
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited());
    let err = ladder.layer(set).oneshot(request()).await.unwrap_err();
    assert_eq!(failure(&err).code(), Code::RateLimited);
    assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
    assert_eq!(*called.lock().unwrap(), ["a", "b", "a", "b", "a"]);
}

/// An outage of every member (503s: no member asked to be left alone) is
/// bounded by the ladder's attempts, as on one route: three calls.
#[tokio::test(start_paused = true)]
async fn an_outage_of_every_member_costs_the_ladders_attempts() {
    let unavailable = || Failure::new(Code::ProviderUnavailable).with_status(503);
    let (set, called) = scripted_set([
        fails("a", unavailable(), true),
        fails("b", unavailable(), true),
        fails("c", unavailable(), true),
        fails("a", unavailable(), true),
    ]);
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited());
    let err = ladder.layer(set).oneshot(request()).await.unwrap_err();
    assert_eq!(failure(&err).code(), Code::ProviderUnavailable);
    assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
    assert_eq!(*called.lock().unwrap(), ["a", "b", "c"]);
}

/// Without the set's word (no `AnotherRoute`), a failure on another route
/// is an attempt like any: three calls under three attempts.
#[tokio::test(start_paused = true)]
async fn without_another_route_every_failure_is_an_attempt() {
    let unavailable = || Failure::new(Code::ProviderUnavailable).with_status(503);
    let (set, called) = scripted_set([
        fails("a", unavailable(), false),
        fails("b", unavailable(), false),
        fails("c", unavailable(), false),
    ]);
    let ladder = RetryBudgetLayer::new(RetryPolicy::no_wait(3), Budget::unlimited());
    let err = ladder.layer(set).oneshot(request()).await.unwrap_err();
    assert_eq!(receipt(&err).stop, Some(StopReason::Attempts));
    assert_eq!(called.lock().unwrap().len(), 3);
}

/// Each member behind a ladder of its own (nested, two attempts): its
/// failure comes with its ladder's receipt, two attempts on the member.
/// The move off a member met for the first time is still the set's, not
/// one of the outer ladder's two attempts: a, b, then a answers — where
/// counting the inner attempts already recorded took both moves for
/// attempts and stopped after b.
#[tokio::test(start_paused = true)]
async fn a_members_first_failure_is_a_move_under_its_own_ladder_too() {
    let member = || {
        common::Upstream::new([
            common::Step::Fail(Failure::new(Code::ProviderUnavailable).with_status(503)),
            common::Step::Fail(rate_limited()),
            common::Step::Ok,
        ])
    };
    let upstreams = [("a", member()), ("b", member())];
    let inner = RetryBudgetLayer::new(RetryPolicy::no_wait(2).allow_nested(), Budget::unlimited());
    let ladders = upstreams
        .each_ref()
        .map(|(_, upstream)| inner.layer(upstream.service::<ReplayBody<ReplayBody<String>>>()));
    let turn = Arc::new(Mutex::new(0usize));
    let set = tower::service_fn(move |mut request: Request<ReplayBody<String>>| {
        let n = {
            let mut turn = turn.lock().unwrap();
            *turn += 1;
            (*turn - 1) % 2
        };
        let member = ["a", "b"][n];
        request.extensions_mut().insert(RouteId::new(member));
        let ladder = ladders[n].clone();
        async move {
            match ladder.oneshot(request).await {
                Ok(mut response) => {
                    response.extensions_mut().insert(RouteId::new(member));
                    Ok(response)
                }
                Err(err) => {
                    let failure = Failure::extract(err).expect("a failure");
                    Err(Box::new(AnotherRoute::new(failure)) as BoxError)
                }
            }
        }
    });
    let outer = RetryBudgetLayer::new(RetryPolicy::no_wait(2), Budget::unlimited());
    let response = outer
        .layer(set)
        .oneshot(request())
        .await
        .expect("answered by a, after a move off each member");
    assert_eq!((upstreams[0].1.count(), upstreams[1].1.count()), (3, 2));
    let receipt = response
        .extensions()
        .get::<seawall_core::Receipt>()
        .unwrap();
    let routes: Vec<_> = receipt.attempts.iter().map(|a| a.route.as_str()).collect();
    assert_eq!(routes, ["a", "a", "b", "b", "a"]);
    assert_eq!(receipt.stop, Some(StopReason::Succeeded));
}
