//! Retry budgets: how many retries the whole service may make, shared by
//! every clone, so a failing provider is not hammered by every caller's
//! ladder at once.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use seawall_internal::window::{self, Window};
use tokio::time::Instant;

/// A retry budget shared by every clone of the service (and of the budget):
/// an `Arc` of atomics, updated by compare-and-swap, never locked.
///
/// An empty budget ends a ladder at once: the last failure is returned with
/// `StopReason::Budget` in its receipt.
#[derive(Clone)]
pub struct Budget(Arc<Kind>);

enum Kind {
    Unlimited,
    Grpc(GrpcBucket),
    Aws(AwsBucket),
    Ratio(RatioBudget),
}

/// What a granted retry withdrew: the AWS bucket's cost (refunded on
/// success), the ratio budget's slice (where a retry never sent is put
/// back), nothing for the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Grant(u64);

impl Budget {
    /// No limit: only `max_attempts` and the deadline bound retries.
    pub fn unlimited() -> Self {
        Budget(Arc::new(Kind::Unlimited))
    }

    /// gRPC retry throttling (gRFC A6): the bucket starts full at
    /// `max_tokens`; every retryable failure takes one token, every success
    /// adds `token_ratio`; retries are allowed only while more than half the
    /// tokens remain. Tokens are kept in thousandths, as A6 specifies three
    /// decimal places for the ratio.
    ///
    /// `max_tokens` is clamped to 1..=1000. As in A6, the first failure
    /// takes a token before the half is checked, so a bucket of 1 or 2
    /// tokens (or 0, clamped to 1) never grants a retry: it turns retries
    /// off, and 3 is the smallest bucket that grants one.
    ///
    /// `token_ratio` is rounded to thousandths, at least 0.001; a ratio
    /// above `max_tokens` refills the bucket in one success.
    ///
    /// # Panics
    ///
    /// When `token_ratio` is not a finite number above zero (A6 requires
    /// one): a bucket that never refills would turn retries off for the
    /// life of the process after `max_tokens / 2` failures, long after the
    /// route recovered.
    pub fn grpc(max_tokens: u32, token_ratio: f64) -> Self {
        assert!(
            token_ratio.is_finite() && token_ratio > 0.0,
            "Budget::grpc: token_ratio must be a finite number above zero, got {token_ratio}"
        );
        let max = u64::from(max_tokens.clamp(1, 1000)) * MILLI;
        // At least one thousandth: a positive ratio that rounded to zero
        // would never refill, the very bucket the assertion keeps out.
        let ratio = (token_ratio * MILLI as f64).round().clamp(1.0, max as f64) as u64;
        Budget(Arc::new(Kind::Grpc(GrpcBucket {
            max,
            ratio,
            tokens: AtomicU64::new(max),
        })))
    }

    /// The AWS SDKs' standard retry quota: 500 tokens; a retry costs 5, a
    /// retry after a timeout 10; a success refunds what its last retry cost,
    /// or adds 1 when it needed no retry.
    pub fn aws_standard() -> Self {
        Budget(Arc::new(Kind::Aws(AwsBucket {
            max: 500,
            retry_cost: 5,
            timeout_cost: 10,
            tokens: AtomicU64::new(500),
        })))
    }

    /// A ratio of retries to operations over a sliding window of `ttl`
    /// (Finagle's and tower's `TpsBudget`): every operation deposits
    /// `retry_ratio` of a retry, every retry withdraws one, deposits expire
    /// after `ttl`, and `min_per_sec × ttl` retries are always allowed.
    ///
    /// `retry_ratio` is a fraction: `0.2` lets 20 % of operations retry once,
    /// `0.6` lets 60 % (not 100 %, as rounding `1 / ratio` to an integer
    /// would), `2.0` lets every operation retry twice. It is clamped to
    /// `0..=1000` (a negative ratio deposits nothing: only the
    /// `min_per_sec` reserve is left; an infinite one is 1000); `ttl` to
    /// 1 s..=1 h.
    ///
    /// # Panics
    ///
    /// When `retry_ratio` is NaN: it is no share of anything, and reading it
    /// as zero would leave only the reserve without a word.
    pub fn ratio(retry_ratio: f64, min_per_sec: u32, ttl: Duration) -> Self {
        assert!(
            !retry_ratio.is_nan(),
            "Budget::ratio: retry_ratio must be a number (0.2 lets 20 % of operations retry), got NaN"
        );
        let ratio = retry_ratio.clamp(0.0, 1000.0);
        let ttl = ttl.clamp(Duration::from_secs(1), Duration::from_secs(3600));
        let slot_nanos = (ttl.as_nanos() / u128::from(SLICES)) as u64;
        Budget(Arc::new(Kind::Ratio(RatioBudget {
            origin: Instant::now(),
            slot_nanos,
            deposit: (ratio * MILLI as f64).round() as i64,
            reserve: (f64::from(min_per_sec) * ttl.as_secs_f64() * MILLI as f64) as i64,
            slots: Default::default(),
        })))
    }

    /// The tokens left: for [`Budget::ratio`], the retries it would allow
    /// now; infinite for [`Budget::unlimited`].
    pub fn tokens(&self) -> f64 {
        match &*self.0 {
            Kind::Unlimited => f64::INFINITY,
            Kind::Grpc(bucket) => bucket.tokens.load(Ordering::Relaxed) as f64 / MILLI as f64,
            Kind::Aws(bucket) => bucket.tokens.load(Ordering::Relaxed) as f64,
            Kind::Ratio(budget) => budget.balance() as f64 / MILLI as f64,
        }
    }

    /// An operation starts.
    #[cfg(test)]
    pub(crate) fn start(&self) {
        self.start_at(&mut Now::default());
    }

    /// An operation starts at `now`: the ladder reads the clock once for
    /// the budget and its first attempt, and only if one of them needs it.
    pub(crate) fn start_at(&self, now: &mut Now) {
        if let Kind::Ratio(budget) = &*self.0 {
            budget.add_at(budget.deposit, now.get());
        }
    }

    /// An operation succeeded; `grant` is what its last retry withdrew.
    pub(crate) fn succeeded(&self, grant: Option<Grant>) {
        match &*self.0 {
            Kind::Grpc(bucket) => add_capped(&bucket.tokens, bucket.ratio, bucket.max),
            Kind::Aws(bucket) => {
                let refund = grant.map_or(1, |Grant(cost)| cost);
                add_capped(&bucket.tokens, refund, bucket.max);
            }
            Kind::Unlimited | Kind::Ratio(_) => {}
        }
    }

    /// An attempt failed in a retryable way. `wants_retry` says whether the
    /// ladder would retry if the budget allows; the answer is the grant, or
    /// `None` when the budget refuses (or no retry was asked for).
    pub(crate) fn failed(&self, timeout: bool, wants_retry: bool) -> Option<Grant> {
        match &*self.0 {
            Kind::Unlimited => wants_retry.then_some(Grant(0)),
            Kind::Grpc(bucket) => {
                // Every retryable failure costs a token, retried or not.
                let left = bucket
                    .tokens
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                        Some(t.saturating_sub(MILLI))
                    })
                    .map_or(0, |before| before.saturating_sub(MILLI));
                (wants_retry && left > bucket.max / 2).then_some(Grant(0))
            }
            Kind::Aws(bucket) => {
                if !wants_retry {
                    return None;
                }
                let cost = if timeout {
                    bucket.timeout_cost
                } else {
                    bucket.retry_cost
                };
                bucket
                    .tokens
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(cost))
                    .ok()
                    .map(|_| Grant(cost))
            }
            Kind::Ratio(budget) => wants_retry.then(|| budget.withdraw()).flatten().map(Grant),
        }
    }

    /// A granted retry was never sent (its operation was dropped during
    /// the backoff, or the service failed before the call): it put no load
    /// on the route, so what it withdrew goes back. The gRPC bucket
    /// charged the failure, which did happen, and keeps the token.
    pub(crate) fn unspent(&self, grant: Grant) {
        match &*self.0 {
            Kind::Aws(bucket) => add_capped(&bucket.tokens, grant.0, bucket.max),
            Kind::Ratio(budget) => budget.put_back(grant.0),
            Kind::Unlimited | Kind::Grpc(_) => {}
        }
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &*self.0 {
            Kind::Unlimited => "unlimited",
            Kind::Grpc(_) => "grpc",
            Kind::Aws(_) => "aws_standard",
            Kind::Ratio(_) => "ratio",
        };
        f.debug_struct("Budget")
            .field("kind", &kind)
            .field("tokens", &self.tokens())
            .finish()
    }
}

/// Fixed-point scale: thousandths of a token.
const MILLI: u64 = 1000;

fn add_capped(tokens: &AtomicU64, amount: u64, max: u64) {
    // A full bucket is left unwritten (`None` ends the update): the success
    // path of a healthy service then only reads the shared cache line.
    let _ = tokens.fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
        let next = t.saturating_add(amount).min(max);
        (next != t).then_some(next)
    });
}

struct GrpcBucket {
    /// Thousandths of a token.
    max: u64,
    ratio: u64,
    tokens: AtomicU64,
}

struct AwsBucket {
    max: u64,
    retry_cost: u64,
    timeout_cost: u64,
    tokens: AtomicU64,
}

/// The instant an operation starts, read from the clock the first time a
/// part of the ladder asks for it and shared by the others (a clock read
/// costs about 20 ns; the budget, the first attempt's bound and the
/// duration metric each wanted one).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Now(Option<Instant>);

impl Now {
    pub(crate) fn get(&mut self) -> Instant {
        *self.0.get_or_insert_with(Instant::now)
    }
}

/// Slices in the ratio budget's sliding window.
const SLICES: u64 = 10;

/// Deposits and withdrawals per time slice, each slice one packed atomic
/// word (epoch tag and signed balance) so a stale slot is reset and updated
/// in one compare-and-swap.
struct RatioBudget {
    origin: Instant,
    slot_nanos: u64,
    /// Thousandths of a retry deposited per operation.
    deposit: i64,
    /// Thousandths of a retry always available.
    reserve: i64,
    /// `SLICES` live slices in a ring of the next power of two.
    slots: Window<[AtomicU64; 16]>,
}

impl RatioBudget {
    fn epoch(&self) -> u64 {
        self.epoch_at(Instant::now())
    }

    fn epoch_at(&self, now: Instant) -> u64 {
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        (elapsed / u128::from(self.slot_nanos.max(1))) as u64
    }

    fn add_at(&self, amount: i64, now: Instant) {
        self.slots.update(self.epoch_at(now), |payload| {
            let value = window::signed(payload);
            Some(window::from_signed(
                value
                    .saturating_add(amount)
                    .clamp(-window::SIGNED_MAX, window::SIGNED_MAX),
            ))
        });
    }

    /// Reserve plus every live slot's balance, in thousandths.
    fn balance(&self) -> i64 {
        let live = self.slots.fold(self.epoch(), SLICES, 0i64, |sum, payload| {
            sum + window::signed(payload)
        });
        self.reserve.saturating_add(live)
    }

    /// Takes one retry when the balance has one, from the slice it returns.
    /// Concurrent withdrawals may both see the last retry (as in tower's
    /// `TpsBudget`): the overspend is bounded by the number of simultaneous
    /// callers.
    fn withdraw(&self) -> Option<u64> {
        let now = Instant::now();
        let epoch = self.epoch_at(now);
        let live = self.slots.fold(epoch, SLICES, 0i64, |sum, payload| {
            sum + window::signed(payload)
        });
        if self.reserve.saturating_add(live) >= MILLI as i64 {
            self.add_at(-(MILLI as i64), now);
            Some(epoch)
        } else {
            None
        }
    }

    /// Returns a retry withdrawn from slice `epoch`, into that slice: once
    /// the slice left the window the withdrawal no longer counts, and
    /// nothing is returned (a slot of the ring holds the same slice for as
    /// long as it is in the window, so a live one is never overwritten).
    fn put_back(&self, epoch: u64) {
        if self.epoch().saturating_sub(epoch) < SLICES {
            self.slots.update(epoch, |payload| {
                let value = window::signed(payload).saturating_add(MILLI as i64);
                Some(window::from_signed(value.min(window::SIGNED_MAX)))
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn grpc_throttles_at_half_and_refills_by_the_ratio() {
        let budget = Budget::grpc(10, 0.1);
        let granted: Vec<bool> = (0..6)
            .map(|_| budget.failed(false, true).is_some())
            .collect();
        // 10 → 9, 8, 7, 6 allow; 5 is not more than half.
        assert_eq!(granted, [true, true, true, true, false, false]);
        assert_eq!(budget.tokens(), 4.0);
        for _ in 0..20 {
            budget.succeeded(None);
        }
        assert_eq!(budget.tokens(), 6.0);
        assert!(
            budget.failed(false, false).is_none(),
            "counted, not granted"
        );
        assert_eq!(budget.tokens(), 5.0);
    }

    /// The first failure takes its token before the half is checked: 1 or
    /// 2 tokens never grant a retry (as the doc says), 3 grant one.
    #[test]
    fn grpc_buckets_under_three_tokens_grant_no_retry() {
        for (max, retries) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 2)] {
            let budget = Budget::grpc(max, 1.0);
            let granted = (0..10)
                .filter(|_| budget.failed(false, true).is_some())
                .count();
            assert_eq!(granted, retries, "max_tokens {max}");
        }
    }

    /// A positive ratio too small for a thousandth still refills: rounded
    /// to zero it would leave an emptied bucket empty for good.
    #[test]
    fn a_tiny_grpc_ratio_refills_one_thousandth() {
        let budget = Budget::grpc(4, 0.0001);
        for _ in 0..4 {
            budget.failed(false, false);
        }
        budget.succeeded(None);
        assert_eq!(budget.tokens(), 0.001);
    }

    #[test]
    #[should_panic(expected = "token_ratio must be a finite number above zero, got 0")]
    fn a_zero_grpc_ratio_is_refused() {
        Budget::grpc(10, 0.0);
    }

    #[test]
    fn a_grpc_ratio_that_never_refills_is_refused() {
        for ratio in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0, -0.0] {
            let built = std::panic::catch_unwind(|| Budget::grpc(10, ratio));
            assert!(built.is_err(), "{ratio} was accepted");
        }
    }

    #[test]
    #[should_panic(expected = "retry_ratio must be a number")]
    fn a_nan_retry_ratio_is_refused() {
        Budget::ratio(f64::NAN, 1, Duration::from_secs(10));
    }

    /// Infinity is past the clamp's top, not nothing: 1000 retries per
    /// operation.
    #[tokio::test(start_paused = true)]
    async fn an_infinite_retry_ratio_is_clamped_to_a_thousand() {
        let budget = Budget::ratio(f64::INFINITY, 0, Duration::from_secs(10));
        budget.start();
        assert_eq!(budget.tokens(), 1000.0);
        let budget = Budget::ratio(-1.0, 1, Duration::from_secs(10));
        budget.start();
        assert_eq!(budget.tokens(), 10.0, "only the reserve");
    }

    #[test]
    fn aws_charges_timeouts_double_and_refunds_on_success() {
        let budget = Budget::aws_standard();
        let grant = budget.failed(false, true).unwrap();
        assert_eq!(budget.tokens(), 495.0);
        budget.failed(true, true).unwrap();
        assert_eq!(budget.tokens(), 485.0);
        budget.succeeded(Some(grant));
        assert_eq!(budget.tokens(), 490.0);
        budget.succeeded(None);
        assert_eq!(budget.tokens(), 491.0);
        while budget.failed(true, true).is_some() {}
        assert_eq!(budget.tokens(), 1.0);
        assert!(budget.failed(false, true).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_fractional_ratio_allows_that_fraction() {
        let budget = Budget::ratio(0.6, 0, Duration::from_secs(10));
        for _ in 0..100 {
            budget.start();
        }
        let retries = (0..100)
            .filter(|_| budget.failed(false, true).is_some())
            .count();
        assert_eq!(retries, 60);
    }

    #[tokio::test(start_paused = true)]
    async fn ratio_deposits_expire_and_the_reserve_stays() {
        let budget = Budget::ratio(1.0, 1, Duration::from_secs(10));
        assert_eq!(budget.tokens(), 10.0, "reserve of min_per_sec × ttl");
        for _ in 0..5 {
            budget.start();
        }
        assert_eq!(budget.tokens(), 15.0);
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(budget.tokens(), 10.0);
        let retries = (0..20)
            .filter(|_| budget.failed(false, true).is_some())
            .count();
        assert_eq!(retries, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn a_ratio_retry_is_put_back_in_its_slice_only_while_it_counts() {
        let budget = Budget::ratio(0.0, 1, Duration::from_secs(10));
        let grant = budget.failed(false, true).unwrap();
        assert_eq!(budget.tokens(), 9.0);
        tokio::time::advance(Duration::from_secs(5)).await;
        budget.unspent(grant);
        assert_eq!(budget.tokens(), 10.0);
        // Put back into its own slice: it leaves with it.
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(budget.tokens(), 10.0);

        let grant = budget.failed(false, true).unwrap();
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(budget.tokens(), 10.0, "the withdrawal expired");
        budget.unspent(grant);
        assert_eq!(budget.tokens(), 10.0, "nothing to give back");
    }

    #[derive(Debug, Clone)]
    enum Op {
        Start,
        Success(bool),
        Failure { timeout: bool, wants_retry: bool },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            Just(Op::Start),
            any::<bool>().prop_map(Op::Success),
            (any::<bool>(), any::<bool>()).prop_map(|(timeout, wants_retry)| Op::Failure {
                timeout,
                wants_retry
            }),
        ]
    }

    proptest! {
        #[test]
        fn tokens_stay_between_zero_and_max(
            max in 1u32..50,
            ratio in 0.001f64..3.0,
            ops in proptest::collection::vec(op(), 0..300),
        ) {
            let grpc = Budget::grpc(max, ratio);
            let aws = Budget::aws_standard();
            for op in ops {
                for (budget, cap) in [(&grpc, f64::from(max)), (&aws, 500.0)] {
                    match op {
                        Op::Start => budget.start(),
                        Op::Success(after_retry) => {
                            budget.succeeded(after_retry.then_some(Grant(10)));
                        }
                        Op::Failure { timeout, wants_retry } => {
                            let granted = budget.failed(timeout, wants_retry);
                            prop_assert!(wants_retry || granted.is_none());
                        }
                    }
                    let tokens = budget.tokens();
                    prop_assert!((0.0..=cap).contains(&tokens), "{tokens} of {cap}");
                }
            }
        }
    }
}
