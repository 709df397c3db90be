//! A ladder over a breaker whose only route another request's rate limit
//! cooled down: the breaker's refusal, which called no one, is waited
//! out without spending one of the ladder's attempts, its backoff steps
//! or a retry the budget granted (tokio's paused clock).

mod common;

use std::time::Duration;

use common::scripted::{Provider, request};
use seawall::breaker::{BreakerLayer, Trip};
use seawall::core::recording::ReplayBody;
use seawall::core::{Code, Failure, Receipt};
use seawall::retry::{Backoff, Budget, Jitter, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

const SEC: Duration = Duration::from_secs(1);

/// The header of the request the provider rate-limits.
const RATE_LIMITED: &str = "x-test-rate-limited";

/// The provider: a request marked [`RATE_LIMITED`] gets a 429 asking for
/// two seconds; the others play `script` (`true` an answer, `false` a
/// 503), then 503s, and are noted with when they came.
fn provider(script: impl IntoIterator<Item = bool>) -> Provider {
    let unavailable = || Some(Failure::new(Code::ProviderUnavailable));
    let script = script
        .into_iter()
        .map(move |answer| if answer { None } else { unavailable() });
    Provider::new(script, unavailable()).refusing_marked(
        RATE_LIMITED,
        Failure::new(Code::RateLimited).with_retry_after(2 * SEC),
    )
}

/// Another request's 429 through `breaker`: the route cools down for two
/// seconds.
async fn cool_down(breaker: &BreakerLayer, provider: &Provider) {
    let mut limited = request().map(ReplayBody::once);
    limited
        .headers_mut()
        .insert(RATE_LIMITED, http::HeaderValue::from_static("1"));
    let error = breaker
        .layer(provider.service())
        .oneshot(limited)
        .await
        .map_err(tower::BoxError::from)
        .expect_err("rate limited");
    assert_eq!(Failure::find(&*error).unwrap().code(), Code::RateLimited);
}

fn breaker() -> BreakerLayer {
    // Never tripped by the 503s here: only the cooldown refuses.
    BreakerLayer::new().trip(Trip::Consecutive { failures: 100 })
}

/// "3 is one try and at most two retries", after the wait too: the
/// refusal (attempt 1, nothing sent) used one of them, and the operation
/// made two calls; the first backoff after the wait counted the refusal
/// as a retry made (2 s where 1 s is the first step).
#[tokio::test(start_paused = true)]
async fn a_refusal_waited_out_spends_no_attempt() {
    let provider = provider([]);
    let breaker = breaker();
    cool_down(&breaker, &provider).await;
    let cooled_at = Instant::now();
    let policy = RetryPolicy::interactive()
        .backoff(Backoff::exponential(SEC, 8 * SEC))
        .jitter(Jitter::None);
    let error = RetryBudgetLayer::new(policy, Budget::unlimited())
        .layer(breaker.layer(provider.service()))
        .oneshot(request())
        .await
        .expect_err("every call fails");
    let calls = provider.calls();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls[0] >= cooled_at + 2 * SEC, "after the cooldown");
    let gaps: Vec<_> = calls.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [SEC, 2 * SEC], "the backoff's first steps");
    let receipt = Failure::find(&*error).and_then(Failure::receipt).unwrap();
    let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
    assert_eq!(
        codes,
        [
            Some(Code::RouteCoolingDown),
            Some(Code::ProviderUnavailable),
            Some(Code::ProviderUnavailable),
            Some(Code::ProviderUnavailable),
        ],
        "{receipt:?}"
    );
    assert_eq!(receipt.calls(), 3);
}

/// A retry the budget granted and the breaker refused (the route cooled
/// by another request's 429 during the backoff) was never sent: what it
/// withdrew goes back, as for a retry dropped before it was sent.
#[tokio::test(start_paused = true)]
async fn a_granted_retry_refused_by_a_cooldown_is_given_back() {
    let provider = provider([false, true]);
    let breaker = breaker();
    let budget = Budget::aws_standard();
    let full = budget.tokens();
    let policy = RetryPolicy::interactive()
        .backoff(Backoff::exponential(SEC, SEC))
        .jitter(Jitter::None);
    let mut ladder =
        RetryBudgetLayer::new(policy, budget.clone()).layer(breaker.layer(provider.service()));
    let (response, ()) = tokio::join!(ladder.call(request()), async {
        // The first call has failed; its retry, granted, waits its second
        // of backoff while the route cools down.
        tokio::time::sleep(SEC / 2).await;
        assert_eq!(provider.calls().len(), 1);
        assert!(budget.tokens() < full, "the retry was granted");
        cool_down(&breaker, &provider).await;
    });
    let response = response.expect("answered after the wait");
    assert_eq!(provider.calls().len(), 2);
    let receipt = response.extensions().get::<Receipt>().unwrap();
    assert_eq!(receipt.calls(), 2, "{receipt:?}");
    assert_eq!(receipt.attempts.len(), 3, "{receipt:?}");
    // Refunded, then the success's one token, capped at the full bucket.
    assert_eq!(budget.tokens(), full);
}
