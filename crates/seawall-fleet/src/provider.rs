//! The simulated provider: one `tower::Service<http::Request<_>>` that all
//! clients of a run share, with a capacity, a latency and a scripted outage.
//!
//! Capacity is a token bucket: `capacity` tokens a second, at most
//! [`BURST`] seconds' worth banked. A request that finds a token is served:
//! `200` with an OpenAI chat completion after `latency`. One that does not
//! is refused after `error_latency`: `429 rate_limit_exceeded` when over
//! capacity, `503 server_error` while the scripted outage has the provider
//! down. Refusing over capacity is cheaper than serving but not free: each
//! `429` costs `reject_cost` of a token, down to a debt of one burst. That
//! is what makes a retry storm self-sustaining: the retries' own refusals
//! eat the capacity the first attempts need, so a fleet that retries hard
//! keeps the provider over capacity after the outage has ended. The
//! outage's `503`s cost nothing: a provider that is down has no capacity
//! to spend, and the debt it comes back with is the one its last `429`s
//! left.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use tokio::time::Instant;

/// The width of one metrics bin.
pub const SLOT: Duration = Duration::from_millis(100);

/// The provider banks at most this much of its capacity.
pub const BURST: Duration = Duration::from_millis(200);

/// What the provider is doing during the scripted outage.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum OutageKind {
    /// Down: every request is answered `503` after `error_latency`, as
    /// any refusal.
    Total,
    /// Up at this share of its capacity (`0.2`: 20 %); the rest is refused
    /// with `429` as over capacity.
    Brownout {
        /// The share of capacity left, in `0..=1`.
        capacity: f64,
    },
}

/// The provider's script.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ProviderConfig {
    /// Requests per second it serves when healthy: finite, at least 0.
    pub capacity: f64,
    /// Time to answer a served request: at most
    /// [`MAX_LATENCY`](crate::MAX_LATENCY).
    pub latency: Duration,
    /// Time to answer a refused one: at most
    /// [`MAX_LATENCY`](crate::MAX_LATENCY).
    pub error_latency: Duration,
    /// Capacity a refusal costs, as a share of a served request: finite,
    /// at least 0.
    pub reject_cost: f64,
    /// A `retry-after` (seconds) on the `429`s, if any.
    pub retry_after: Option<u32>,
    /// When the outage starts, from the start of the run.
    pub outage_start: Duration,
    /// How long it lasts.
    pub outage_len: Duration,
    /// What it is.
    pub outage: OutageKind,
}

impl ProviderConfig {
    /// Why a provider cannot follow this script, when it cannot: a
    /// capacity or a `reject_cost` that is not a finite number at least
    /// zero, a latency over [`MAX_LATENCY`](crate::MAX_LATENCY) (each
    /// answer is due at its arrival plus its latency, a time that must
    /// exist), an outage that ends past any time, or a brown-out share
    /// outside `0..=1`. [`Provider::new`] refuses it.
    pub fn check(&self) -> Result<(), String> {
        if !(self.capacity.is_finite() && self.capacity >= 0.0) {
            return Err(
                "the provider's capacity must be a finite number of requests per second, \
                 at least 0"
                    .to_owned(),
            );
        }
        if !(self.reject_cost.is_finite() && self.reject_cost >= 0.0) {
            return Err("reject_cost must be a finite share of a request, at least 0".to_owned());
        }
        if self.latency > crate::MAX_LATENCY || self.error_latency > crate::MAX_LATENCY {
            return Err(format!(
                "the provider's latencies must be at most {} s",
                crate::MAX_LATENCY.as_secs()
            ));
        }
        if self.outage_start.checked_add(self.outage_len).is_none() {
            return Err("the outage must end at a representable time".to_owned());
        }
        if let OutageKind::Brownout { capacity } = self.outage
            && !(0.0..=1.0).contains(&capacity)
        {
            return Err("a brown-out's share of capacity must be between 0 and 1".to_owned());
        }
        Ok(())
    }

    /// Whether `t` from the start of the run is within the outage. An
    /// outage whose end is past any time (a script [`check`](Self::check)
    /// refuses) never ends, rather than panicking here.
    fn in_outage(&self, t: Duration) -> bool {
        t >= self.outage_start
            && self
                .outage_start
                .checked_add(self.outage_len)
                .is_none_or(|end| t < end)
    }

    /// The capacity (requests/s) at `t` from the start of the run.
    pub fn capacity_at(&self, t: Duration) -> f64 {
        if self.in_outage(t) {
            match self.outage {
                OutageKind::Total => 0.0,
                OutageKind::Brownout { capacity } => self.capacity * capacity.clamp(0.0, 1.0),
            }
        } else {
            self.capacity
        }
    }

    fn down_at(&self, t: Duration) -> bool {
        self.outage == OutageKind::Total && self.in_outage(t)
    }
}

/// Per-slot counts of what reached the provider.
#[derive(Debug, Clone, Default)]
pub struct ProviderLog {
    /// Requests that arrived, per [`SLOT`].
    pub calls: Vec<u32>,
    /// Requests served, per [`SLOT`].
    pub served: Vec<u32>,
}

struct State {
    /// When `tokens` was last brought up to date.
    at: Duration,
    /// Tokens in the bucket; negative: debt from refusals.
    tokens: f64,
    log: ProviderLog,
}

struct Shared {
    config: ProviderConfig,
    origin: Instant,
    state: Mutex<State>,
}

/// The simulated provider. Clones share its capacity and its log.
#[derive(Clone)]
pub struct Provider {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

const OK_BODY: &[u8] = br#"{"id":"chatcmpl-fleet","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":1,"total_tokens":9}}"#;
const OVER_BODY: &[u8] = br#"{"error":{"message":"Rate limit reached for requests. Please slow down.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
const DOWN_BODY: &[u8] = br#"{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}"#;

enum Verdict {
    Served,
    Over,
    Down,
}

impl Provider {
    /// A provider following `config`, its clock starting at `origin`; or
    /// why it cannot, when [`ProviderConfig::check`] refuses `config` (a
    /// latency past any timer once panicked at the first request).
    pub fn new(config: ProviderConfig, origin: Instant) -> Result<Self, String> {
        config.check()?;
        Ok(Provider {
            shared: Arc::new(Shared {
                config,
                origin,
                state: Mutex::new(State {
                    at: Duration::ZERO,
                    tokens: config.capacity_at(Duration::ZERO) * BURST.as_secs_f64(),
                    log: ProviderLog::default(),
                }),
            }),
        })
    }

    /// What reached the provider so far.
    pub fn log(&self) -> ProviderLog {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Decides a request arriving `t` after the origin.
    fn admit(&self, t: Duration) -> Verdict {
        let config = &self.shared.config;
        let slot = (t.as_nanos() / SLOT.as_nanos()) as u64;
        let mut state = self.lock();
        let rate = config.capacity_at(t);
        let burst = config.capacity * BURST.as_secs_f64();
        let elapsed = t.saturating_sub(state.at).as_secs_f64();
        state.tokens = (state.tokens + rate * elapsed).min(rate * BURST.as_secs_f64());
        state.at = t;
        let index = slot as usize;
        if state.log.calls.len() <= index {
            state.log.calls.resize(index + 1, 0);
            state.log.served.resize(index + 1, 0);
        }
        state.log.calls[index] += 1;
        if config.down_at(t) {
            return Verdict::Down;
        }
        if state.tokens >= 1.0 {
            state.tokens -= 1.0;
            state.log.served[index] += 1;
            Verdict::Served
        } else {
            state.tokens = (state.tokens - config.reject_cost).max(-burst);
            Verdict::Over
        }
    }
}

impl<B> tower::Service<Request<B>> for Provider {
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<B>) -> Self::Future {
        let config = &self.shared.config;
        // One reading of the clock (under the paused clock each takes a
        // lock) for the decision and the answer's due time.
        let now = Instant::now();
        let (delay, status, body) =
            match self.admit(now.saturating_duration_since(self.shared.origin)) {
                Verdict::Served => (config.latency, StatusCode::OK, OK_BODY),
                Verdict::Over => (
                    config.error_latency,
                    StatusCode::TOO_MANY_REQUESTS,
                    OVER_BODY,
                ),
                Verdict::Down => (
                    config.error_latency,
                    StatusCode::SERVICE_UNAVAILABLE,
                    DOWN_BODY,
                ),
            };
        let retry_after = match status {
            StatusCode::TOO_MANY_REQUESTS => config.retry_after,
            _ => None,
        };
        Answer {
            sleep: tokio::time::sleep_until(now + delay),
            status,
            body,
            retry_after,
        }
    }
}

pin_project_lite::pin_project! {
    /// The provider's answer, once its latency has passed.
    #[derive(Debug)]
    pub struct Answer {
        #[pin]
        sleep: tokio::time::Sleep,
        status: StatusCode,
        body: &'static [u8],
        retry_after: Option<u32>,
    }
}

impl Future for Answer {
    type Output = Result<Response<Full<Bytes>>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        std::task::ready!(this.sleep.poll(cx));
        let mut response = Response::new(Full::new(Bytes::from_static(this.body)));
        *response.status_mut() = *this.status;
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = *this.retry_after {
            headers.insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        Poll::Ready(Ok(response))
    }
}
