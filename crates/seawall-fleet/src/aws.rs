//! The workload of the AWS Architecture Blog's "Exponential Backoff And
//! Jitter", run through seawall's own retry layer.
//!
//! `clients` clients start at once, each wanting to update one row once
//! with optimistic concurrency: read its version, write it back; the write
//! succeeds only if no other write touched the row in between. Every hop
//! costs a network delay of `|normal(10 ms, 2 ms)|`. A failed write is a
//! transient failure, and the client's [`RetryBudgetLayer`] (unlimited
//! budget, seeded jitter) sleeps its backoff before the next read. The
//! blog's backoffs: base 5 ms (the first retry sleeps `2 × base`), cap 2 s.
//! The figures are the mean over `trials` runs: writes made, and the time
//! until the last client succeeded.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use seawall::core::{BoxError, Code, Failure};
use seawall::retry::{Backoff, Budget, Jitter, RetryBudgetLayer, RetryPolicy};
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

/// A backoff of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackoffKind {
    /// Retry at once.
    None,
    /// Capped exponential, no jitter.
    Exp,
    /// Equal jitter.
    Equal,
    /// Full jitter.
    Full,
    /// Decorrelated jitter.
    Decorrelated,
}

impl BackoffKind {
    /// All five, in the blog's order.
    pub const ALL: [BackoffKind; 5] = [
        BackoffKind::None,
        BackoffKind::Exp,
        BackoffKind::Equal,
        BackoffKind::Full,
        BackoffKind::Decorrelated,
    ];

    /// The command-line name.
    pub fn as_str(self) -> &'static str {
        match self {
            BackoffKind::None => "none",
            BackoffKind::Exp => "exp",
            BackoffKind::Equal => "equal",
            BackoffKind::Full => "full",
            BackoffKind::Decorrelated => "decorrelated",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        BackoffKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// seawall's [`Backoff`] for this kind with the blog's base and cap.
    /// seawall's first retry sleeps `initial`, the blog's `2 × base`, so
    /// `initial` is 10 ms; decorrelated jitter starts from `base` itself
    /// (`random(5 ms, 15 ms)` first), as in the blog.
    ///
    /// # Panics
    ///
    /// As [`Backoff::exponential`]: when `base` is zero and `cap` is not.
    /// [`AwsConfig::check`] refuses such a base.
    pub fn backoff(self, base: Duration, cap: Duration) -> Backoff {
        // Saturating: a base past half of any duration is capped anyway.
        let exponential = Backoff::exponential(base.saturating_mul(2), cap);
        match self {
            BackoffKind::None => Backoff::none(),
            BackoffKind::Exp => exponential.with_jitter(Jitter::None),
            BackoffKind::Equal => exponential.with_jitter(Jitter::Equal),
            BackoffKind::Full => exponential.with_jitter(Jitter::Full),
            BackoffKind::Decorrelated => {
                Backoff::exponential(base, cap).with_jitter(Jitter::Decorrelated)
            }
        }
    }
}

/// The most clients contending for the row: each is a task holding its
/// own retry stack for the whole trial.
pub const MAX_CLIENTS: usize = 10_000;

/// The most trials averaged: they run one after another, so the count is
/// the run's length.
pub const MAX_TRIALS: usize = 10_000;

/// The most work one comparison may ask for, counted as clients squared
/// times trials: every client's failed write is another's success, so a
/// trial's writes grow with the square of its clients (with no backoff,
/// about a fifth of it: 1 000 clients write some 200 000 times), and the
/// trials run one after another. 10 000 clients for one trial, or 1 000
/// for 100, is minutes of work; the two largest counts together would be
/// days.
pub const MAX_CONTENTION: u64 = 100_000_000;

/// The longest backoff base or cap, and the longest mean or standard
/// deviation of a hop's delay: a minute. Every delay of a trial is then a
/// duration a timer can wait (a hop's delay is at most its mean plus some
/// 38 standard deviations), where a base or a delay near
/// [`Duration::MAX`] once panicked.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// The comparison's settings.
#[derive(Debug, Clone)]
pub struct AwsConfig {
    /// Contending clients (default 100): at least 1, at most
    /// [`MAX_CLIENTS`].
    pub clients: usize,
    /// Runs averaged (default 100): at least 1, at most [`MAX_TRIALS`].
    pub trials: usize,
    /// The backoff base (default 5 ms): above zero, at most
    /// [`MAX_DELAY`].
    pub base: Duration,
    /// The backoff cap (default 2 s): at most [`MAX_DELAY`].
    pub cap: Duration,
    /// Mean network delay per hop (default 10 ms): at most [`MAX_DELAY`].
    pub net_mean: Duration,
    /// Its standard deviation (default 2 ms): at most [`MAX_DELAY`].
    pub net_sd: Duration,
    /// The seed.
    pub seed: u64,
}

impl Default for AwsConfig {
    fn default() -> Self {
        AwsConfig {
            clients: 100,
            trials: 100,
            base: Duration::from_millis(5),
            cap: Duration::from_secs(2),
            net_mean: Duration::from_millis(10),
            net_sd: Duration::from_millis(2),
            seed: 1,
        }
    }
}

impl AwsConfig {
    /// Why this comparison cannot run, when it cannot: no clients or
    /// trials (there is no last client, nor a mean), more than
    /// [`MAX_CLIENTS`] or [`MAX_TRIALS`], more work than
    /// [`MAX_CONTENTION`], a zero base (seawall's backoff
    /// grows from it), or a base, cap or network delay over
    /// [`MAX_DELAY`]. [`run`] refuses it.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return Err(format!("clients must be between 1 and {MAX_CLIENTS}"));
        }
        if !(1..=MAX_TRIALS).contains(&self.trials) {
            return Err(format!("trials must be between 1 and {MAX_TRIALS}"));
        }
        let contention = (self.clients as u64)
            .saturating_mul(self.clients as u64)
            .saturating_mul(self.trials as u64);
        if contention > MAX_CONTENTION {
            return Err(format!(
                "clients squared times trials must be at most {MAX_CONTENTION} (the writes \
                 grow with the square of the clients): {} clients allow at most {} trials",
                self.clients,
                (MAX_CONTENTION / (self.clients as u64 * self.clients as u64)).max(1)
            ));
        }
        if self.base.is_zero() {
            return Err("the backoff base must be above zero".to_owned());
        }
        for (value, name) in [
            (self.base, "the backoff base"),
            (self.cap, "the backoff cap"),
            (self.net_mean, "the mean network delay"),
            (self.net_sd, "the network delay's standard deviation"),
        ] {
            if value > MAX_DELAY {
                return Err(format!("{name} must be at most {} s", MAX_DELAY.as_secs()));
            }
        }
        Ok(())
    }
}

/// One backoff's figures, means over the trials.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AwsReport {
    /// The backoff.
    pub backoff: BackoffKind,
    /// Writes made per run.
    pub calls: f64,
    /// Seconds until the last client succeeded.
    pub completion_s: f64,
}

struct Row {
    version: u64,
    writes: u64,
    rng: SmallRng,
    mean: f64,
    sd: f64,
}

impl Row {
    /// `|normal(mean, sd)|`, by Box–Muller.
    fn delay(&mut self) -> Duration {
        let u1: f64 = self.rng.random::<f64>().max(f64::MIN_POSITIVE);
        let u2: f64 = self.rng.random();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        Duration::from_secs_f64((self.mean + self.sd * z).abs())
    }
}

/// The row, as a service: one call is one read-then-write round.
#[derive(Clone)]
struct Occ(Arc<Mutex<Row>>);

impl Occ {
    fn delay(&self) -> Duration {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .delay()
    }
}

impl<B> tower::Service<Request<B>> for Occ {
    type Response = Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: Request<B>) -> Self::Future {
        let row = self.clone();
        Box::pin(async move {
            // The read travels there and back.
            tokio::time::sleep(row.delay()).await;
            let read = row.0.lock().unwrap_or_else(PoisonError::into_inner).version;
            tokio::time::sleep(row.delay()).await;
            // The write travels there…
            tokio::time::sleep(row.delay()).await;
            let written = {
                let mut state = row.0.lock().unwrap_or_else(PoisonError::into_inner);
                state.writes += 1;
                let ok = state.version == read;
                if ok {
                    state.version += 1;
                }
                ok
            };
            // …and its answer back.
            tokio::time::sleep(row.delay()).await;
            if written {
                Ok(Response::new(Full::new(Bytes::new())))
            } else {
                Err(Failure::new(Code::ProviderUnavailable)
                    .with_status(409)
                    .into())
            }
        })
    }
}

/// Runs the comparison for each of `kinds`; or, before anything runs,
/// why it cannot, when [`AwsConfig::check`] refuses `config`.
pub fn run(config: &AwsConfig, kinds: &[BackoffKind]) -> Result<Vec<AwsReport>, String> {
    config.check()?;
    Ok(kinds.iter().map(|&kind| run_kind(config, kind)).collect())
}

fn run_kind(config: &AwsConfig, kind: BackoffKind) -> AwsReport {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let (mut calls, mut time) = (0u64, Duration::ZERO);
    for trial in 0..config.trials {
        let (writes, took) = runtime.block_on(one_trial(config, kind, trial));
        calls += writes;
        time += took;
    }
    let trials = config.trials.max(1) as f64;
    AwsReport {
        backoff: kind,
        calls: calls as f64 / trials,
        completion_s: time.as_secs_f64() / trials,
    }
}

async fn one_trial(config: &AwsConfig, kind: BackoffKind, trial: usize) -> (u64, Duration) {
    let seed = crate::client_seed(config.seed, trial, 7);
    let row = Occ(Arc::new(Mutex::new(Row {
        version: 0,
        writes: 0,
        rng: SmallRng::seed_from_u64(seed),
        mean: config.net_mean.as_secs_f64(),
        sd: config.net_sd.as_secs_f64(),
    })));
    let policy = RetryPolicy::no_wait(100_000).backoff(kind.backoff(config.base, config.cap));
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..config.clients {
        let service = RetryBudgetLayer::new(policy.clone(), Budget::unlimited())
            .seed(crate::client_seed(seed, client, 8))
            .layer(row.clone());
        tasks.spawn(async move {
            let request = Request::new(Full::new(Bytes::new()));
            let _ = service.oneshot(request).await;
            Instant::now()
        });
    }
    let mut last = start;
    while let Some(done) = tasks.join_next().await {
        last = last.max(done.expect("a client task"));
    }
    let writes = row.0.lock().unwrap_or_else(PoisonError::into_inner).writes;
    (writes, last - start)
}

/// The table's header line.
pub fn table_header() -> String {
    format!("{:<14} {:>10} {:>14}", "backoff", "calls", "completion_s")
}

/// One table line.
pub fn table_line(report: &AwsReport) -> String {
    format!(
        "{:<14} {:>10.0} {:>14.2}",
        report.backoff.as_str(),
        report.calls,
        report.completion_s
    )
}
