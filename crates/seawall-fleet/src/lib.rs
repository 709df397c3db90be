//! A fleet of clients, each with its own seawall stack, against one
//! simulated provider: what a retry policy does when ten thousand processes
//! run it.
//!
//! seawall's state is per process by design: every client here builds its
//! own stack from the real seawall crates, with its own budget and breaker,
//! as separate processes would. The clients share only the
//! [`Provider`], an in-process `tower::Service` with a
//! capacity, a latency and a scripted outage, whose refusals cost capacity
//! too (see [`provider`]). Each run is one current-thread tokio runtime on
//! the paused clock, so ten minutes of fleet time take seconds, and every
//! random choice comes from a seeded generator, so a seed gives one table.
//!
//! [`run`] compares the stacks of [`StackKind`] on one schedule;
//! [`aws::run`] reproduces the AWS "Exponential Backoff and Jitter"
//! comparison with seawall's own backoff; [`svg`] draws offered load
//! against capacity.
//!
//! ```
//! use std::time::Duration;
//! use seawall_fleet::{FleetConfig, StackKind};
//!
//! let config = FleetConfig {
//!     clients: 20,
//!     duration: Duration::from_secs(40),
//!     outage_start: Duration::from_secs(10),
//!     outage_len: Duration::from_secs(10),
//!     stacks: vec![StackKind::Naive, StackKind::SeawallFleet],
//!     ..FleetConfig::default()
//! };
//! let reports = seawall_fleet::run(&config);
//! assert!(reports[0].amplification > 2.5);
//! assert!(reports[1].amplification <= 1.1);
//! ```
#![deny(missing_docs)]

pub mod aws;
pub mod provider;
pub mod stacks;
pub mod svg;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;

pub use provider::{OutageKind, Provider, ProviderConfig, ProviderLog, SLOT};
pub use stacks::StackKind;

/// One fleet run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FleetConfig {
    /// Clients, each with its own stack (default 1000); at least one.
    pub clients: usize,
    /// Operations per second per client (default 1), each client starting
    /// at a random point of its first period; at most [`MAX_RATE`], and
    /// run as [`MIN_RATE`] when lower.
    pub rate: f64,
    /// How long clients start operations (default 180 s); at most
    /// [`MAX_DURATION`].
    #[serde(serialize_with = "secs")]
    pub duration: Duration,
    /// When the outage starts (default 60 s).
    #[serde(serialize_with = "secs")]
    pub outage_start: Duration,
    /// How long it lasts (default 30 s); at least one [`SLOT`].
    #[serde(serialize_with = "secs")]
    pub outage_len: Duration,
    /// What it is (default total).
    pub outage: OutageKind,
    /// The provider's capacity as a multiple of the fleet's own load
    /// (`clients × rate`; default 1.2): finite, at least 0.
    pub headroom: f64,
    /// The provider's latency for a served request (default 200 ms); at
    /// most [`MAX_LATENCY`].
    #[serde(serialize_with = "secs")]
    pub latency: Duration,
    /// Its latency for a refusal (default 20 ms); at most [`MAX_LATENCY`].
    #[serde(serialize_with = "secs")]
    pub error_latency: Duration,
    /// Capacity a refusal costs, as a share of a served request (default
    /// 0.25): finite, at least 0.
    pub reject_cost: f64,
    /// A `retry-after` on the provider's 429s, in seconds (default none).
    pub retry_after: Option<u32>,
    /// The seed of every random choice.
    pub seed: u64,
    /// The stacks to compare, in table order.
    pub stacks: Vec<StackKind>,
    /// Stacks simulated at once, one thread each (default: the cores).
    #[serde(skip)]
    pub threads: usize,
}

/// The lowest rate simulated, operations per second per client: a lower
/// (or non-positive) rate runs as this one, a period of about 11.6 days,
/// so that a client's period is a duration at all.
pub const MIN_RATE: f64 = 1e-6;

/// The highest rate, operations per second per client: one a millisecond,
/// the resolution of the clients' start offsets. A higher one would
/// schedule operations closer than the schedule can tell apart, and an
/// infinite one a period of zero that never reaches the run's end.
pub const MAX_RATE: f64 = 1000.0;

/// The longest run: a day. The figures are kept per [`SLOT`] for the
/// whole run, about 20 bytes a slot for each stack simulated at once, so a
/// day costs some 17 MB a stack where a year would cost gigabytes.
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// The slowest answer the provider may be given, served or refused: the
/// longest deadline of the stacks compared. The run waits for operations
/// in flight at its end in proportion to it (see [`FleetConfig::drain`]),
/// so an unbounded latency would be an unbounded wait.
pub const MAX_LATENCY: Duration = Duration::from_secs(60);

/// The most operations a run may hold in flight at once, per stack
/// simulated at once: every one is held in memory until it ends (its
/// stack's future, boxed; measured at about 0.7 KB in the naive and SDK
/// stacks and 5 KB in the seawall ones, debug build), and each flag's own
/// bound does not bound their product. [`FleetConfig::check`] refuses a
/// configuration whose [`in_flight`](FleetConfig::in_flight) bound is over
/// this one. A million holds the documented scale, 10 000 clients at one
/// operation a second whose operations last up to the seawall stacks' 60 s
/// deadline.
pub const MAX_IN_FLIGHT: u64 = 1_000_000;

/// The seawall stacks' operation deadline (`Stack::interactive()`'s
/// total): no seawall operation lasts longer, whatever its ladder does.
const SEAWALL_DEADLINE: Duration = Duration::from_secs(60);

/// What the paused clock may add to an operation: it rounds each timer up
/// to the next millisecond, and an operation of the naive or SDK stack
/// waits on five of them in turn (three answers, two pauses).
const TIMER_ROUNDING: Duration = Duration::from_millis(5);

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            clients: 1000,
            rate: 1.0,
            duration: Duration::from_secs(180),
            outage_start: Duration::from_secs(60),
            outage_len: Duration::from_secs(30),
            outage: OutageKind::Total,
            headroom: 1.2,
            latency: Duration::from_millis(200),
            error_latency: Duration::from_millis(20),
            reject_cost: 0.25,
            retry_after: None,
            seed: 1,
            stacks: StackKind::ALL.to_vec(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl FleetConfig {
    /// Why this configuration cannot run, when it cannot: no clients (no
    /// schedule ever reaches the run's end), a rate that is not a number
    /// or over [`MAX_RATE`], a run over [`MAX_DURATION`], a latency over
    /// [`MAX_LATENCY`], an outage shorter than one [`SLOT`] (the figures
    /// are kept per slot: it would start no operation in it, and its
    /// amplification would read 0) or one that ends past any time, a
    /// headroom that is not a finite number at least zero, a
    /// [`provider`](Self::provider) script [`ProviderConfig::check`]
    /// refuses (a `reject_cost` or a brown-out share out of range), or
    /// more operations in flight at once than [`MAX_IN_FLIGHT`] (see
    /// [`in_flight`](Self::in_flight)). [`run`] and [`run_stack`] refuse
    /// it.
    pub fn check(&self) -> Result<(), String> {
        if self.clients == 0 {
            return Err("clients must be at least 1".to_owned());
        }
        if self.rate.is_nan() || self.rate > MAX_RATE {
            return Err(format!(
                "rate must be a number of operations per second, at most {MAX_RATE}"
            ));
        }
        if self.duration > MAX_DURATION {
            return Err(format!(
                "duration must be at most {} s",
                MAX_DURATION.as_secs()
            ));
        }
        if self.latency > MAX_LATENCY || self.error_latency > MAX_LATENCY {
            return Err(format!(
                "the provider's latencies must be at most {} s",
                MAX_LATENCY.as_secs()
            ));
        }
        if self.outage_len < SLOT {
            return Err(format!(
                "the outage must last at least one slot ({} ms)",
                SLOT.as_millis()
            ));
        }
        if self.outage_start.checked_add(self.outage_len).is_none() {
            return Err("the outage must end at a representable time".to_owned());
        }
        if !(self.headroom.is_finite() && self.headroom >= 0.0) {
            return Err("headroom must be a finite multiple, at least 0".to_owned());
        }
        // The provider's own script (reject_cost, the brown-out's share,
        // and a capacity the headroom's product may still overflow): the
        // run builds it, and must not find it refused halfway.
        self.provider().check()?;
        // Last: it reads the rate and the latencies checked above.
        if let Some((kind, held)) = self.in_flight()
            && held > MAX_IN_FLIGHT as f64
        {
            return Err(format!(
                "clients × rate × the longest an operation can last ({} s in the {} \
                 stack) is up to {held:.0} operations in flight at once, over the \
                 {MAX_IN_FLIGHT} a run holds",
                self.longest_operation(kind).as_secs_f64(),
                kind.as_str()
            ));
        }
        Ok(())
    }

    /// The longest an operation of `kind` can last, from its start to its
    /// last answer, on this configuration's provider: what the stack's
    /// ladder allows with every answer as slow as it may be (`latency` or
    /// `error_latency`, the longer), plus the paused clock's rounding.
    ///
    /// - naive: three attempts and two 1 s pauses;
    /// - sdk: three attempts and two sleeps, each the `retry-after` when
    ///   the SDK takes it (more than zero, at most 60 s), else its backoff,
    ///   0.5 s then 1 s (its jitter only shortens them);
    /// - seawall, seawall-fleet: the operation's deadline, 60 s, which
    ///   ends it whatever its ladder, budget or breaker do.
    pub fn longest_operation(&self, kind: StackKind) -> Duration {
        let answer = self.latency.max(self.error_latency);
        // Saturating: this is public, and may be asked of a configuration
        // `check` refuses for its latencies.
        let attempts = answer.saturating_mul(3);
        let ladder = match kind {
            StackKind::Naive => attempts.saturating_add(Duration::from_secs(2)),
            StackKind::Sdk => {
                let hint = self
                    .retry_after
                    .filter(|s| (1..=60).contains(s))
                    .map_or(Duration::ZERO, |s| Duration::from_secs(s.into()));
                attempts
                    .saturating_add(hint.max(Duration::from_millis(500)))
                    .saturating_add(hint.max(Duration::from_secs(1)))
            }
            StackKind::Seawall | StackKind::SeawallFleet => SEAWALL_DEADLINE,
        };
        ladder.saturating_add(TIMER_ROUNDING)
    }

    /// The most operations the run can hold in flight at once, and the
    /// stack of [`stacks`](Self::stacks) that holds them; `None` without
    /// stacks. A client starts one operation a period, so at any time it
    /// holds at most those started within the last
    /// [`longest_operation`](Self::longest_operation):
    /// `⌊rate × longest⌋ + 1` of them (at least one, however low the
    /// rate), times the clients. Stacks run on their own runtimes, so the
    /// bound is per stack simulated at once, the largest of them.
    pub fn in_flight(&self) -> Option<(StackKind, f64)> {
        let rate = self.effective_rate();
        self.stacks
            .iter()
            .map(|&kind| {
                let per_client = (rate * self.longest_operation(kind).as_secs_f64()).floor() + 1.0;
                (kind, self.clients as f64 * per_client)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The rate simulated: [`rate`](Self::rate), at least [`MIN_RATE`].
    /// Every figure that follows from the rate (period, capacity, load)
    /// reads this one, so that they agree.
    pub fn effective_rate(&self) -> f64 {
        self.rate.max(MIN_RATE)
    }

    /// The provider's healthy capacity, requests per second.
    pub fn capacity(&self) -> f64 {
        self.clients as f64 * self.effective_rate() * self.headroom
    }

    /// The provider's script.
    pub fn provider(&self) -> ProviderConfig {
        ProviderConfig {
            capacity: self.capacity(),
            latency: self.latency,
            error_latency: self.error_latency,
            reject_cost: self.reject_cost,
            retry_after: self.retry_after,
            outage_start: self.outage_start,
            outage_len: self.outage_len,
            outage: self.outage,
        }
    }

    fn outage_end(&self) -> Duration {
        // Saturating: `check` refuses an end past any time, but this is
        // cheaper than a panic should a caller get here without it.
        self.outage_start.saturating_add(self.outage_len)
    }

    /// How long after [`duration`](Self::duration) the run waits for the
    /// operations still in flight; those it still finds then are counted
    /// failed ([`StackReport::unfinished`]). 180 s holds every stack's
    /// ladder at instant answers (the longest deadline is 60 s, the SDK's
    /// longest ladder two 60 s retry-afters); each of at most three
    /// attempts then waits for its answer.
    pub fn drain(&self) -> Duration {
        // Saturating: this is public, and may be asked of a configuration
        // `check` refuses for its latencies.
        Duration::from_secs(180)
            .saturating_add(self.latency.max(self.error_latency).saturating_mul(3))
    }
}

/// One stack's figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StackReport {
    /// The stack.
    pub stack: StackKind,
    /// Operations started.
    pub operations: u64,
    /// Operations that succeeded.
    pub succeeded: u64,
    /// Operations that failed, [`unfinished`](Self::unfinished) ones
    /// included: `succeeded + failed == operations`.
    pub failed: u64,
    /// Operations still running when the run stopped waiting for them
    /// ([`FleetConfig::drain`] after its end).
    pub unfinished: u64,
    /// Upstream calls (requests that reached the provider).
    pub calls: u64,
    /// Upstream calls that arrived during the outage over the operations
    /// started in it: a rate ratio (a retry that lands after the outage
    /// ends is not counted), not a count per operation.
    pub amplification: f64,
    /// Successful operations per second, over the whole run.
    pub goodput: f64,
    /// Successful operations per second before the outage (its last 30 s,
    /// from 5 s into the run; with no time there, the fleet's own load).
    pub goodput_before: f64,
    /// Median operation latency (successes and failures), seconds.
    pub p50_s: f64,
    /// 99th percentile operation latency, seconds.
    pub p99_s: f64,
    /// Seconds after the outage ends until goodput is back to 95 % of its
    /// level before and stays there (5 s); `None`: not within
    /// [`horizon_s`](Self::horizon_s), or not measured (see
    /// [`recover_measured`](Self::recover_measured)).
    pub recover_s: Option<f64>,
    /// Whether [`recover_s`](Self::recover_s) was measured: not when no
    /// operation succeeded in the time before the outage
    /// ([`goodput_before`](Self::goodput_before) is 0). There is no level
    /// to be back to then, and any second after the outage would read as
    /// an instant recovery.
    pub recover_measured: bool,
    /// Seconds after the outage ends until the load offered to the
    /// provider is within its capacity and stays there (5 s); `None`: not
    /// within [`horizon_s`](Self::horizon_s).
    pub over_capacity_s: Option<f64>,
    /// The latest [`recover_s`](Self::recover_s) and
    /// [`over_capacity_s`](Self::over_capacity_s) the run can show: a
    /// second of figures, then 5 s of them holding, must end within the
    /// run. `None` there says "later than this", not "never".
    pub horizon_s: f64,
    /// Per second of the run: `(t, offered calls, capacity, goodput)`.
    #[serde(skip)]
    pub series: Vec<(f64, f64, f64, f64)>,
}

/// Runs every stack of `config` on the same schedule and provider script,
/// up to `config.threads` at once, and returns their reports in order.
///
/// # Panics
///
/// When [`FleetConfig::check`] refuses `config`: checked before anything
/// runs, since some such configurations would run forever.
pub fn run(config: &FleetConfig) -> Vec<StackReport> {
    refuse_unrunnable(config);
    let stacks = config.stacks.clone();
    // The seawall stacks cost the most per operation: start them first so
    // the threads finish together.
    let mut queue: Vec<usize> = (0..stacks.len()).collect();
    queue.sort_by_key(|&i| match stacks[i] {
        StackKind::Seawall => 0,
        StackKind::SeawallFleet => 1,
        StackKind::Sdk => 2,
        StackKind::Naive => 3,
    });
    let next = Mutex::new(0usize);
    let results = Mutex::new(vec![None; stacks.len()]);
    let threads = config.threads.clamp(1, stacks.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().unwrap_or_else(PoisonError::into_inner);
                        let Some(&index) = queue.get(*next) else {
                            return;
                        };
                        *next += 1;
                        index
                    };
                    let kind = stacks[index];
                    let report = run_stack(config, kind);
                    results.lock().unwrap_or_else(PoisonError::into_inner)[index] = Some(report);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .map(|r| r.expect("every stack ran"))
        .collect()
}

/// Panics, at entry, on a configuration [`FleetConfig::check`] refuses.
fn refuse_unrunnable(config: &FleetConfig) {
    if let Err(why) = config.check() {
        panic!("seawall-fleet: cannot run this configuration: {why}");
    }
}

/// A seed for one client's generator: SplitMix64 of the run's seed and the
/// client's index, so every stack gives client `i` the same draws.
fn client_seed(seed: u64, client: usize, salt: u64) -> u64 {
    let mut z = seed
        .wrapping_add((client as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs one stack on its own paused current-thread runtime.
///
/// # Panics
///
/// When [`FleetConfig::check`] refuses `config`, as [`run`].
pub fn run_stack(config: &FleetConfig, kind: StackKind) -> StackReport {
    refuse_unrunnable(config);
    let (log, provider) = simulate(config, kind);
    report(config, kind, &log, &provider)
}

/// The simulation of [`run_stack`], before its figures are drawn up.
fn simulate(config: &FleetConfig, kind: StackKind) -> (OpLog, ProviderLog) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        let origin = Instant::now();
        // `run` and `run_stack` checked `config`, and its check includes
        // the provider's: this refusal cannot happen.
        let provider = Provider::new(config.provider(), origin)
            .expect("FleetConfig::check checks the provider's script");
        let schedule = schedule(config);
        // The stacks are built in the order they are called: every period
        // walks them from first to last, so consecutive operations touch
        // neighbouring memory. At 10 000 clients the stacks outgrow the
        // cache; walked in client order (scattered in memory) an operation
        // cost about 1.5 times what it does at 1000 clients.
        let clients = schedule.iter().map(|&(_, client)| client);
        let log = match kind {
            StackKind::Naive => {
                let clients = clients.map(|_| stacks::naive(provider.clone())).collect();
                drive(config, &schedule, clients, origin).await
            }
            StackKind::Sdk => {
                let clients = clients
                    .map(|i| stacks::sdk(provider.clone(), client_seed(config.seed, i, 1)))
                    .collect();
                drive(config, &schedule, clients, origin).await
            }
            StackKind::Seawall | StackKind::SeawallFleet => {
                let clients = clients
                    .map(|i| {
                        let seed = client_seed(config.seed, i, 2);
                        let stack = if kind == StackKind::Seawall {
                            stacks::seawall_preset()
                        } else {
                            stacks::seawall_fleet_preset()
                        };
                        stacks::seawall(stack, seed, provider.clone())
                    })
                    .collect();
                drive(config, &schedule, clients, origin).await
            }
        };
        (log, provider.log())
    })
}

/// Every client's start offset in its period, whole milliseconds, sorted:
/// `(offset, client)`. The same for every stack of a run.
fn schedule(config: &FleetConfig) -> Vec<(u64, usize)> {
    let mut rng = SmallRng::seed_from_u64(client_seed(config.seed, usize::MAX, 0));
    let period_ms = period(config).as_millis().max(1) as u64;
    let mut order: Vec<(u64, usize)> = (0..config.clients)
        .map(|i| (rng.random_range(0..period_ms), i))
        .collect();
    order.sort_unstable();
    order
}

fn period(config: &FleetConfig) -> Duration {
    Duration::from_secs_f64(1.0 / config.effective_rate())
}

/// What the clients saw, per [`SLOT`].
#[derive(Debug, Default)]
struct OpLog {
    started: Vec<u32>,
    succeeded: Vec<u32>,
    failed: Vec<u32>,
    /// Operation latencies, per millisecond (the last bucket: longer).
    latency_ms: Vec<u64>,
    /// Operations in flight when the drain ended.
    unfinished: u64,
    /// The most operations in flight at once (what
    /// [`FleetConfig::in_flight`] bounds).
    peak_in_flight: usize,
}

const LATENCY_BUCKETS: usize = 300_000;

fn bump(bins: &mut Vec<u32>, index: usize) {
    if bins.len() <= index {
        bins.resize(index + 1, 0);
    }
    bins[index] += 1;
}

fn slot_of(t: Duration) -> usize {
    (t.as_nanos() / SLOT.as_nanos()) as usize
}

/// Starts every client's operations on schedule and waits for them to end.
/// `clients[k]` is the stack of the client `schedule[k]` names.
///
/// The operations run inside this one task (a `FuturesUnordered`), not as
/// spawned tasks, and each is called on its client's own service (all of
/// these are always ready), not on a clone: at 10 000 clients the
/// scheduler's per-task costs were most of the run.
async fn drive<S, B>(
    config: &FleetConfig,
    schedule: &[(u64, usize)],
    mut clients: Vec<S>,
    origin: Instant,
) -> OpLog
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<B>>,
    B: http_body::Body,
{
    let mut log = OpLog {
        latency_ms: vec![0; LATENCY_BUCKETS],
        ..OpLog::default()
    };
    let period = period(config);
    let uri = http::Uri::from_static(stacks::URI);
    let mut inflight = FuturesUnordered::new();
    let timer = tokio::time::sleep_until(origin);
    tokio::pin!(timer);
    let mut round = 0u32;
    // Counted as it starts, so that one the drain gives up on still counts.
    let started = |log: &mut OpLog, at: Duration| bump(&mut log.started, slot_of(at));
    let finish = |log: &mut OpLog, (start, end, ok): (Duration, Duration, bool)| {
        bump(
            if ok {
                &mut log.succeeded
            } else {
                &mut log.failed
            },
            slot_of(end),
        );
        let ms = ((end - start).as_millis() as usize).min(LATENCY_BUCKETS - 1);
        log.latency_ms[ms] += 1;
    };
    'schedule: loop {
        let base = period * round;
        for (service, &(offset, _)) in clients.iter_mut().zip(schedule) {
            let at = base + Duration::from_millis(offset);
            if at >= config.duration {
                break 'schedule;
            }
            if origin + at > Instant::now() {
                timer.as_mut().reset(origin + at);
                loop {
                    tokio::select! {
                        biased;
                        Some(done) = inflight.next() => finish(&mut log, done),
                        () = &mut timer => break,
                    }
                }
            }
            started(&mut log, at);
            if std::future::poll_fn(|cx| service.poll_ready(cx))
                .await
                .is_err()
            {
                finish(&mut log, (at, at, false));
                continue;
            }
            // Boxed: the stacks' futures are large, and moving them is costly.
            let call = Box::pin(service.call(stacks::request(uri.clone())));
            inflight.push(async move {
                let ok = match call.await {
                    Ok(response) => {
                        let success = response.status().is_success();
                        // Read to the end (the breaker records a body's
                        // outcome when it ends), keeping nothing.
                        let mut body = std::pin::pin!(response.into_body());
                        loop {
                            match body.as_mut().frame().await {
                                Some(Ok(_)) => {}
                                Some(Err(_)) => break false,
                                None => break success,
                            }
                        }
                    }
                    Err(_) => false,
                };
                (at, origin.elapsed(), ok)
            });
            log.peak_in_flight = log.peak_in_flight.max(inflight.len());
        }
        round += 1;
    }
    timer
        .as_mut()
        .reset(origin + config.duration + config.drain());
    loop {
        tokio::select! {
            biased;
            done = inflight.next() => match done {
                Some(done) => finish(&mut log, done),
                None => break,
            },
            () = &mut timer => break,
        }
    }
    // Dropped unanswered: failed, and slower than any latency bucket.
    log.unfinished = inflight.len() as u64;
    log.latency_ms[LATENCY_BUCKETS - 1] += log.unfinished;
    log
}

fn sum(bins: &[u32], from: usize, to: usize) -> u64 {
    bins.iter().take(to).skip(from).map(|&n| u64::from(n)).sum()
}

/// Slots per second.
const PER_S: usize = (Duration::from_secs(1).as_nanos() / SLOT.as_nanos()) as usize;

/// How long a window must hold for [`settles`], in slots.
const HOLD: usize = 5 * PER_S;

/// The first slot from `from` at which `holds(window sum of 1 s)` is true
/// for 5 s on end, among the windows that end by `last`: one that runs
/// past it would count only the part of a second the run had, and read
/// as a drop.
fn settles(bins: &[u32], from: usize, last: usize, holds: impl Fn(u64) -> bool) -> Option<usize> {
    let (per_s, hold) = (PER_S, HOLD);
    let mut run = 0;
    for i in from..=last.saturating_sub(per_s) {
        if holds(sum(bins, i, i + per_s)) {
            run += 1;
            if run > hold {
                return Some(i - hold);
            }
        } else {
            run = 0;
        }
    }
    None
}

fn percentile(hist: &[u64], p: f64) -> f64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let rank = ((total as f64) * p).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (ms, &n) in hist.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return ms as f64 / 1000.0;
        }
    }
    (hist.len() - 1) as f64 / 1000.0
}

fn report(
    config: &FleetConfig,
    kind: StackKind,
    log: &OpLog,
    provider: &ProviderLog,
) -> StackReport {
    let per_s = PER_S;
    let start = slot_of(config.outage_start);
    let end = slot_of(config.outage_end());
    let last = slot_of(config.duration);
    let operations = sum(&log.started, 0, usize::MAX);
    let succeeded = sum(&log.succeeded, 0, usize::MAX);
    let failed = sum(&log.failed, 0, usize::MAX) + log.unfinished;
    let calls = sum(&provider.calls, 0, usize::MAX);
    let outage_ops = sum(&log.started, start, end);
    let outage_calls = sum(&provider.calls, start, end);
    let before_from = start.saturating_sub(30 * per_s).max(5 * per_s).min(start);
    let before_s = (start - before_from) as f64 / per_s as f64;
    let goodput_before = if before_s > 0.0 {
        sum(&log.succeeded, before_from, start) as f64 / before_s
    } else {
        config.clients as f64 * config.effective_rate()
    };
    let threshold = 0.95 * goodput_before;
    // A threshold of zero holds for every window: not a recovery.
    let recover_measured = goodput_before > 0.0;
    let recover = settles(&log.succeeded, end, last, |ok| ok as f64 >= threshold)
        .filter(|_| recover_measured);
    let capacity = config.capacity();
    let over = settles(&provider.calls, end, last, |calls| calls as f64 <= capacity);
    let after = |slot: Option<usize>| slot.map(|s| (s - end) as f64 / per_s as f64);
    // The last slot `settles` can return: its window's last second ends
    // at `last`.
    let horizon = last.saturating_sub(per_s + HOLD).saturating_sub(end);
    let provider_config = config.provider();
    let series = (0..last.div_ceil(per_s))
        .map(|second| {
            let from = second * per_s;
            (
                second as f64,
                sum(&provider.calls, from, from + per_s) as f64,
                provider_config.capacity_at(Duration::from_secs(second as u64)),
                sum(&log.succeeded, from, from + per_s) as f64,
            )
        })
        .collect();
    StackReport {
        stack: kind,
        operations,
        succeeded,
        failed,
        unfinished: log.unfinished,
        calls,
        amplification: if outage_ops == 0 {
            0.0
        } else {
            outage_calls as f64 / outage_ops as f64
        },
        goodput: succeeded as f64 / config.duration.as_secs_f64().max(1e-9),
        goodput_before,
        p50_s: percentile(&log.latency_ms, 0.5),
        p99_s: percentile(&log.latency_ms, 0.99),
        recover_s: after(recover),
        recover_measured,
        over_capacity_s: after(over),
        horizon_s: horizon as f64 / per_s as f64,
        series,
    }
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<14} {:>9} {:>7} {:>9} {:>7} {:>7} {:>10} {:>10} {:>8}",
        "stack", "amplif", "goodput", "ok_%", "p50_s", "p99_s", "recover_s", "overcap_s", "failed"
    )
}

/// One table line. A recovery not seen within the run reads `>` its
/// [`horizon_s`](StackReport::horizon_s): the run ended too soon to say
/// more; one not measured (no success before the outage,
/// [`recover_measured`](StackReport::recover_measured)) reads `-`.
pub fn table_line(report: &StackReport) -> String {
    let opt = |v: Option<f64>| {
        v.map_or_else(
            || format!(">{:.1}", report.horizon_s),
            |v| format!("{v:.1}"),
        )
    };
    let ok_pct = if report.operations == 0 {
        0.0
    } else {
        100.0 * report.succeeded as f64 / report.operations as f64
    };
    format!(
        "{:<14} {:>8.2}x {:>7.0} {:>9.2} {:>7.2} {:>7.2} {:>10} {:>10} {:>8}",
        report.stack.as_str(),
        report.amplification,
        report.goodput,
        ok_pct,
        report.p50_s,
        report.p99_s,
        if report.recover_measured {
            opt(report.recover_s)
        } else {
            "-".to_owned()
        },
        opt(report.over_capacity_s),
        report.failed
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest latency in `log`, to the millisecond.
    fn longest(log: &OpLog) -> Duration {
        let ms = log.latency_ms.iter().rposition(|&n| n > 0).unwrap_or(0);
        assert!(ms < LATENCY_BUCKETS - 1, "past the histogram");
        Duration::from_millis(ms as u64)
    }

    /// The seawall stacks' bound is their deadline: the presets' total.
    #[test]
    fn the_seawall_deadline_is_the_presets_total() {
        let total = format!("total: {SEAWALL_DEADLINE:?},");
        for stack in [stacks::seawall_preset(), stacks::seawall_fleet_preset()] {
            let stack = format!("{stack:?}");
            assert!(stack.contains(&total), "{total} not in {stack}");
        }
    }

    /// The bound [`FleetConfig::check`] holds a run to is a bound: with
    /// every answer as slow as each stack's ladder allows, no operation
    /// outlasts [`FleetConfig::longest_operation`] and the run never holds
    /// more than [`FleetConfig::in_flight`] at once.
    #[test]
    fn no_stack_outlasts_its_longest_operation_or_holds_more_than_bounded() {
        let small = FleetConfig {
            clients: 3,
            rate: 1.0,
            duration: Duration::from_secs(30),
            outage_start: Duration::from_secs(5),
            outage_len: Duration::from_secs(5),
            threads: 1,
            ..FleetConfig::default()
        };
        let cases = [
            // No capacity: every attempt refused, after as long as a
            // refusal may take.
            (
                StackKind::Naive,
                FleetConfig {
                    headroom: 0.0,
                    error_latency: MAX_LATENCY,
                    ..small.clone()
                },
            ),
            // The longest retry-after the SDK takes, on every refusal
            // (under the 300 s the latency histogram keeps).
            (
                StackKind::Sdk,
                FleetConfig {
                    headroom: 0.0,
                    error_latency: Duration::from_secs(50),
                    retry_after: Some(60),
                    ..small.clone()
                },
            ),
            // Served (headroom enough for the bucket to hold a token at
            // three clients), each answer after a minute: attempts time
            // out, and the deadline ends the ladder.
            (
                StackKind::Seawall,
                FleetConfig {
                    latency: MAX_LATENCY,
                    headroom: 10.0,
                    ..small.clone()
                },
            ),
            (
                StackKind::SeawallFleet,
                FleetConfig {
                    latency: MAX_LATENCY,
                    headroom: 10.0,
                    ..small.clone()
                },
            ),
        ];
        for (kind, config) in cases {
            let config = FleetConfig {
                stacks: vec![kind],
                ..config
            };
            assert_eq!(config.check(), Ok(()), "{kind:?}");
            let (log, _) = simulate(&config, kind);
            assert_eq!(log.unfinished, 0, "{kind:?}");
            let bound = config.longest_operation(kind);
            let seen = longest(&log);
            assert!(seen <= bound, "{kind:?}: {seen:?} > {bound:?}");
            // The naive and SDK bounds are their ladders', not a guess far
            // above them. The seawall stacks' is their deadline, which
            // their ladders, budgets and breakers stop short of.
            if matches!(kind, StackKind::Naive | StackKind::Sdk) {
                let close = seen + Duration::from_secs(2);
                assert!(close >= bound, "{kind:?}: {seen:?} << {bound:?}");
            }
            let (_, held) = config.in_flight().expect("one stack");
            assert!(
                log.peak_in_flight as f64 <= held,
                "{kind:?}: {} > {held}",
                log.peak_in_flight
            );
        }
    }
}
