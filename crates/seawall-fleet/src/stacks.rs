//! The client stacks compared, each built per client around the shared
//! provider, as separate processes would build them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use seawall::breaker::{BreakDuration, BreakerLayer, Trip};
use seawall::classify::{ClassifyLayer, ProviderClassifier};
use seawall::retry::Budget;
use seawall::stack::{Seawall, Stack};
use tower::retry::{Policy, Retry};

/// A client stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StackKind {
    /// tower's own `retry`: three attempts at any error or non-2xx, a fixed
    /// 1 s pause between them (as the naive stack of `seawall replay`), no
    /// budget, no jitter.
    Naive,
    /// The official OpenAI SDKs' defaults: two retries on 408/409/429/5xx,
    /// `0.5 s × 2^n` capped at 8 s less up to 25 % jitter, a `retry-after`
    /// honoured instead only when 0 < value ≤ 60 s (as the SDKs do: a zero
    /// one backs off).
    Sdk,
    /// `Stack::interactive()` as shipped.
    Seawall,
    /// The configuration recommended for fleets of low-rate clients
    /// ([`fleet_budget`], [`fleet_breaker`]).
    SeawallFleet,
}

impl StackKind {
    /// All four, in table order.
    pub const ALL: [StackKind; 4] = [
        StackKind::Naive,
        StackKind::Sdk,
        StackKind::Seawall,
        StackKind::SeawallFleet,
    ];

    /// The name used on the command line and in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            StackKind::Naive => "naive",
            StackKind::Sdk => "sdk",
            StackKind::Seawall => "seawall",
            StackKind::SeawallFleet => "seawall-fleet",
        }
    }

    /// The stack named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        StackKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
    }
}

/// Where every operation goes.
pub const URI: &str = "http://provider.sim/v1/chat/completions";

/// The request every operation sends, to `uri` (usually [`URI`]): a chat
/// completion's body and no headers of its own (nothing would read them:
/// the simulated provider answers whatever it is sent), so that the naive
/// and SDK stacks' copy of it for each attempt allocates nothing.
pub fn request(uri: http::Uri) -> Request<Full<Bytes>> {
    let mut request = Request::new(Full::new(Bytes::from_static(
        br#"{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}"#,
    )));
    *request.method_mut() = http::Method::POST;
    *request.uri_mut() = uri;
    request
}

fn clone_request(request: &Request<Full<Bytes>>) -> Request<Full<Bytes>> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.headers_mut() = request.headers().clone();
    copy
}

fn failed<B, E>(result: &Result<Response<B>, E>) -> bool {
    match result {
        Ok(response) => !response.status().is_success(),
        Err(_) => true,
    }
}

/// The naive policy: up to `remaining` more attempts after a fixed pause,
/// whatever failed.
#[derive(Debug, Clone)]
pub struct RetryEverything {
    remaining: usize,
    pause: Duration,
}

impl<B, E> Policy<Request<Full<Bytes>>, Response<B>, E> for RetryEverything {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Full<Bytes>>,
        result: &mut Result<Response<B>, E>,
    ) -> Option<Self::Future> {
        (failed(result) && self.remaining > 0).then(|| {
            self.remaining -= 1;
            tokio::time::sleep(self.pause)
        })
    }

    fn clone_request(&mut self, req: &Request<Full<Bytes>>) -> Option<Request<Full<Bytes>>> {
        Some(clone_request(req))
    }
}

/// The official SDKs' retry: 2 retries on 408, 409, 429 and 5xx (and
/// connection errors), sleeping the `retry-after` when it is more than zero
/// and at most 60 s (as the SDKs do: a zero hint is no hint), else `min(0.5 s × 2^n, 8 s) × (1 − 0.25 × random)`.
#[derive(Debug, Clone)]
pub struct SdkRetry {
    retries: u32,
    rng: Arc<Mutex<SmallRng>>,
}

impl SdkRetry {
    fn delay(&self, retry_after: Option<Duration>) -> Duration {
        // The SDKs take the hint only when `0 < hint <= 60 s`; a zero (or
        // negative, read as zero) one backs off like no hint at all.
        if let Some(after) = retry_after.filter(|d| !d.is_zero() && *d <= Duration::from_secs(60)) {
            return after;
        }
        let base = (0.5 * 2f64.powi(self.retries as i32)).min(8.0);
        let jitter: f64 = self
            .rng
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .random();
        Duration::from_secs_f64(base * (1.0 - 0.25 * jitter))
    }
}

impl<B, E> Policy<Request<Full<Bytes>>, Response<B>, E> for SdkRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Full<Bytes>>,
        result: &mut Result<Response<B>, E>,
    ) -> Option<Self::Future> {
        let retry_after = match result {
            Ok(response) => {
                let status = response.status().as_u16();
                if !matches!(status, 408 | 409 | 429 | 500..=599) {
                    return None;
                }
                let headers = response.headers();
                let ms = headers
                    .get("retry-after-ms")
                    .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
                    .and_then(|ms| Duration::try_from_secs_f64(ms.max(0.0) / 1000.0).ok());
                ms.or_else(|| {
                    headers
                        .get(http::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok()?.parse::<f64>().ok())
                        .and_then(|s| Duration::try_from_secs_f64(s.max(0.0)).ok())
                })
            }
            Err(_) => None,
        };
        if self.retries >= 2 {
            return None;
        }
        let delay = self.delay(retry_after);
        self.retries += 1;
        Some(tokio::time::sleep(delay))
    }

    fn clone_request(&mut self, req: &Request<Full<Bytes>>) -> Option<Request<Full<Bytes>>> {
        Some(clone_request(req))
    }
}

/// The naive stack around `client`.
pub fn naive<S>(client: S) -> Retry<RetryEverything, S> {
    let policy = RetryEverything {
        remaining: 2,
        pause: Duration::from_secs(1),
    };
    Retry::new(policy, client)
}

/// The SDK stack around `client`, its jitter drawn from `seed`.
pub fn sdk<S>(client: S, seed: u64) -> Retry<SdkRetry, S> {
    let policy = SdkRetry {
        retries: 0,
        rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
    };
    Retry::new(policy, client)
}

/// The shipped preset, `Stack::interactive()`: 60 s, 20 s per attempt,
/// `RetryPolicy::interactive()`, `Budget::ratio(0.2, 10, 10 s)`, the
/// default breaker (5 s break doubling to 300 s, 20 % jitter).
pub fn seawall_preset() -> Stack {
    Stack::interactive()
}

/// The budget recommended for a fleet of low-rate clients:
/// `Budget::grpc(5, 0.2)`. A token bucket counts failures, not time, so it
/// binds at whatever rate the client runs: from full, two retries, then
/// none until successes refill it (one retry per five successes). A
/// `ratio` budget's floor (`min_per_sec × ttl`, 100 retries per 10 s in
/// the preset) is far above what a one-request-a-second client ever asks.
pub fn fleet_budget() -> Budget {
    Budget::grpc(5, 0.2)
}

/// The breaker recommended for a fleet of low-rate clients: open after 3
/// counted failures in a row (a ratio needs `min_calls` in its window — the
/// default 20 in 30 s is more than such a client makes in an outage's first
/// ten seconds), 429s counted (from a shared provider an overload is the
/// route's state, not this caller's speed), a fixed 1 s break less up to
/// 20 % jitter (no doubling: a probe a second is what a
/// one-operation-a-second client sends anyway, and a doubled break would
/// keep the client away long after the provider is back), one trial that
/// closes it.
pub fn fleet_breaker() -> BreakerLayer {
    BreakerLayer::new()
        .trip(Trip::Consecutive { failures: 3 })
        .count_rate_limited(true)
        .half_open_trials(1)
        .close_after(1)
        .break_duration(BreakDuration {
            base: Duration::from_secs(1),
            max: Duration::from_secs(1),
            jitter: 0.2,
        })
}

/// The fleet configuration: the shipped interactive ladder and deadlines
/// with [`fleet_budget`] and [`fleet_breaker`].
pub fn seawall_fleet_preset() -> Stack {
    Stack::interactive()
        .budget(fleet_budget())
        .breaker(fleet_breaker())
}

/// One client's seawall stack around `client`: `stack` (a fresh one per
/// client, so that its budget and breaker are this client's own) built as
/// `Stack::build` assembles it, every random choice in it (the ladder's
/// backoff jitter, the breaker's break jitter) drawn from `seed`.
pub fn seawall<S>(stack: Stack, seed: u64, client: S) -> Seawall<S, ProviderClassifier> {
    stack.seed(seed).build(&ClassifyLayer::openai(), client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sdk_retry() -> SdkRetry {
        SdkRetry {
            retries: 0,
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(7))),
        }
    }

    /// The first backoff, `0.5 s × (1 − 0.25 × random)`.
    fn is_first_backoff(delay: Duration) -> bool {
        (Duration::from_millis(375)..=Duration::from_millis(500)).contains(&delay)
    }

    #[test]
    fn the_sdk_takes_a_retry_after_only_between_zero_and_sixty_seconds() {
        let policy = sdk_retry();
        assert_eq!(
            policy.delay(Some(Duration::from_secs(30))),
            Duration::from_secs(30)
        );
        assert_eq!(
            policy.delay(Some(Duration::from_secs(60))),
            Duration::from_secs(60)
        );
        for ignored in [None, Some(Duration::ZERO), Some(Duration::from_secs(61))] {
            let delay = policy.delay(ignored);
            assert!(is_first_backoff(delay), "{ignored:?}: {delay:?}");
        }
    }
}
