use std::time::Duration;

use http::HeaderName;
use seawall_core::Deadline;
use seawall_core::recording::DEFAULT_MAX_REPLAY_BYTES;

use crate::budget::Now;
use crate::{Backoff, Jitter};

/// How one operation's ladder climbs: how many attempts, how long between
/// them, and when to stop early.
///
/// `max_attempts` counts the first attempt: `3` is one try and at most two
/// retries. Under a route set (a service below that answers with
/// [`AnotherRoute`](seawall_core::AnotherRoute)), the move off a member
/// that asked to be left alone (a rate limit with its hint, a quota wall,
/// rejected keys) for the first time in the operation is the set's, not a
/// retry, and is not counted: each such member is tried once and the
/// ladder keeps its retries for what comes after. Any other failure (a
/// 503, silence) is an attempt, on a set as on one route. Likewise a
/// breaker's refusal while the only route cools down after a rate limit
/// calls no one: the first in an operation is waited out without counting,
/// so the calls after the wait still get one try and the retries; any
/// later refusal is an attempt, and ends a ladder whose route keeps
/// cooling.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) max_retry_after: Duration,
    pub(crate) min_attempt_time: Duration,
    pub(crate) fallback_reserve: Duration,
    pub(crate) failover_fraction: f64,
    pub(crate) max_replay_bytes: usize,
    pub(crate) idempotency_key: Option<HeaderName>,
    pub(crate) allow_nested: bool,
}

impl RetryPolicy {
    /// For a person waiting: 3 attempts, 250 ms initial backoff, 8 s cap,
    /// full jitter.
    pub fn interactive() -> Self {
        RetryPolicy::with_backoff(
            3,
            Backoff::exponential(Duration::from_millis(250), Duration::from_secs(8)),
        )
    }

    /// For background work: 6 attempts, 500 ms initial backoff, 30 s cap,
    /// full jitter.
    pub fn batch() -> Self {
        RetryPolicy::with_backoff(
            6,
            Backoff::exponential(Duration::from_millis(500), Duration::from_secs(30)),
        )
    }

    /// `attempts` attempts with no backoff, for tests. A `Retry-After` hint
    /// is still honoured.
    pub fn no_wait(attempts: u32) -> Self {
        RetryPolicy::with_backoff(attempts, Backoff::none())
    }

    fn with_backoff(max_attempts: u32, backoff: Backoff) -> Self {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            backoff,
            max_retry_after: Duration::from_secs(60),
            min_attempt_time: Duration::from_secs(1),
            fallback_reserve: Duration::ZERO,
            failover_fraction: 0.5,
            max_replay_bytes: DEFAULT_MAX_REPLAY_BYTES,
            idempotency_key: None,
            allow_nested: false,
        }
    }

    /// Attempts in total, the first included (at least 1). A route set's
    /// first move off a member and the first wait out of a route's
    /// cooldown (a breaker's refusal) are free: they are not counted (see
    /// [`RetryPolicy`]).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The backoff between attempts: the least delay before a retry, which
    /// a longer hint from the provider lengthens.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The backoff's jitter.
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.backoff = self.backoff.with_jitter(jitter);
        self
    }

    /// The longest `Retry-After` hint the ladder sleeps (default 60 s). A
    /// longer hint is not shortened, since retrying early only buys another
    /// rate limit: the ladder stops (`StopReason::HintTooLong` in the
    /// receipt) and returns the failure with its hint, for the caller to
    /// schedule. The spread the ladder draws above a hint, to keep apart
    /// the operations one hint told, never takes a wait past `max`.
    ///
    /// A rate limit's hint longer than the classifier's quota wall (60 s
    /// by default) is a `quota_exhausted` the ladder never waits, whatever
    /// `max`: raise the wall too (`ClassifyLayer::quota_wall`). A `Stack`
    /// does it for you: its classifier's default wall follows a longer
    /// `max`.
    ///
    /// A hint at [`MAX_RETRY_HINT`](seawall_core::hint::MAX_RETRY_HINT)
    /// (a week) is never waited out, whatever `max`: every longer hint is
    /// clamped to it when parsed, so it means "a week or more" (a 30-day
    /// quota wall reads as 7 days), and the ladder stops on it as on a
    /// hint past `max`.
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// The longest hint the ladder sleeps
    /// ([`max_retry_after`](Self::max_retry_after)): a stack raises its
    /// classifier's quota wall to it, so that a rate limit's hint the
    /// ladder may wait is not judged a wall it never waits.
    pub fn get_max_retry_after(&self) -> Duration {
        self.max_retry_after
    }

    /// The least time an attempt needs to be worth making (default 1 s): a
    /// retry is made only if `now + delay + min_attempt_time` fits before the
    /// deadline (less the fallback reserve).
    pub fn min_attempt_time(mut self, min: Duration) -> Self {
        self.min_attempt_time = min;
        self
    }

    /// Time before the deadline the ladder leaves unused, for a fallback
    /// route to run in (default none).
    ///
    /// The ladder starts no attempt that would not fit before it, and its
    /// attempts run under the deadline less the reserve (the
    /// [`Deadline`] in their requests), so one started in time cannot run
    /// into it either: a per-attempt bound stops it there, and the ladder
    /// returns a `timeout` with action `Failover`, for the fallback.
    pub fn fallback_reserve(mut self, reserve: Duration) -> Self {
        self.fallback_reserve = reserve;
        self
    }

    /// A retryable failure that took more than this fraction of the time
    /// that was left when its attempt started ends the ladder with
    /// `Action::Failover` (default 0.5: "most of the remaining deadline").
    /// Clamped to `0.0..=1.0`; at 1.0 only a failure that outlived the
    /// deadline is promoted.
    pub fn failover_fraction(mut self, fraction: f64) -> Self {
        self.failover_fraction = if fraction.is_nan() {
            0.5
        } else {
            fraction.clamp(0.0, 1.0)
        };
        self
    }

    /// The most request-body bytes kept for replay (default 1 MiB). A
    /// larger body is sent once, intact, and the receipt says
    /// `not_replayable`. A body that comes whole in one frame (built in memory: an SDK's JSON)
    /// is kept whatever its size: keeping it is a reference, not a copy.
    pub fn max_replay_bytes(mut self, max: usize) -> Self {
        self.max_replay_bytes = max;
        self
    }

    /// Sends the same key in header `name` on every attempt of an operation,
    /// generating one when the caller set none.
    pub fn idempotency_key(mut self, name: HeaderName) -> Self {
        self.idempotency_key = Some(name);
        self
    }

    /// The header given with [`idempotency_key`](Self::idempotency_key),
    /// if one was (a resume layer above must not send the caller's key in
    /// it on a continuation).
    pub fn given_idempotency_key(&self) -> Option<&HeaderName> {
        self.idempotency_key.as_ref()
    }

    /// Lets this ladder retry even under an outer one. Without it, a ladder
    /// that finds an outer ladder makes one attempt, so that nested layers
    /// make `max_attempts` upstream calls in total, not the product.
    pub fn allow_nested(mut self) -> Self {
        self.allow_nested = true;
        self
    }
}

impl RetryPolicy {
    /// The deadline the ladder's attempts run under: the operation's less
    /// the fallback reserve. `None` without a reserve or a deadline, and
    /// when what is left before the reserve would not hold a useful
    /// attempt: the first attempt is made anyway, under the operation's
    /// deadline, as without a reserve.
    pub(crate) fn attempt_window(
        &self,
        deadline: Option<Deadline>,
        now: &mut Now,
    ) -> Option<Deadline> {
        if self.fallback_reserve.is_zero() {
            return None;
        }
        let window = deadline?.instant().checked_sub(self.fallback_reserve)?;
        let fits = now
            .get()
            .checked_add(self.min_attempt_time)
            .is_some_and(|ready_by| ready_by <= window);
        fits.then(|| Deadline::at(window))
    }
}
