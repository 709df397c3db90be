use std::time::Duration;

use crate::{Code, RouteId};

/// Why a retry ladder stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// An attempt succeeded.
    Succeeded,
    /// Another attempt would not fit the operation's deadline.
    Deadline,
    /// The retry budget had no token left.
    Budget,
    /// `max_attempts` were made.
    Attempts,
    /// The failure's action was not `Retry`.
    NotRetryable,
    /// The provider asked to wait longer than the ladder waits
    /// (`max_retry_after`): the failure is returned with its hint.
    HintTooLong,
    /// The request body could not be replayed (over the replay cap).
    NotReplayable,
    /// The same route failed in a route-shaped way: ended with `Failover`.
    Failover,
    /// An outer ladder owns retries; this one made a single attempt.
    OuterLadder,
}

impl StopReason {
    /// The stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Succeeded => "succeeded",
            StopReason::Deadline => "deadline",
            StopReason::Budget => "budget",
            StopReason::Attempts => "attempts",
            StopReason::NotRetryable => "not_retryable",
            StopReason::HintTooLong => "hint_too_long",
            StopReason::NotReplayable => "not_replayable",
            StopReason::Failover => "failover",
            StopReason::OuterLadder => "outer_ladder",
        }
    }
}

/// One upstream attempt of an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attempt {
    /// The route the attempt went to.
    pub route: RouteId,
    /// The failure code, or `None` when the attempt succeeded.
    pub code: Option<Code>,
    /// How long the ladder slept before this attempt.
    pub delay: Duration,
}

impl Attempt {
    /// An attempt record.
    pub fn new(route: RouteId, code: Option<Code>, delay: Duration) -> Self {
        Attempt { route, code, delay }
    }
}

/// One per operation: every attempt, why the ladder stopped, and whether a
/// fallback served the answer.
///
/// The retry layer puts it in the response extensions on success and inside
/// the [`Failure`](crate::Failure) on error; the fallback layer merges the
/// primary's and the fallback's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Receipt {
    /// Every upstream attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Why the (last) ladder stopped.
    pub stop: Option<StopReason>,
    /// True when the fallback route produced the outcome.
    pub fallback: bool,
}

impl Receipt {
    /// Records an attempt.
    pub fn push(&mut self, attempt: Attempt) {
        self.attempts.push(attempt);
    }

    /// Appends another receipt's attempts (a fallback's, after the primary's);
    /// its stop reason replaces ours.
    pub fn append(&mut self, other: Receipt) {
        self.attempts.extend(other.attempts);
        if other.stop.is_some() {
            self.stop = other.stop;
        }
        self.fallback |= other.fallback;
    }

    /// The routes tried, in first-use order, without repeats.
    pub fn routes(&self) -> Vec<&RouteId> {
        let mut routes: Vec<&RouteId> = Vec::new();
        for attempt in &self.attempts {
            if !routes.contains(&&attempt.route) {
                routes.push(&attempt.route);
            }
        }
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_keep_first_use_order_without_repeats() {
        let mut receipt = Receipt::default();
        let a = RouteId::new("a");
        let b = RouteId::new("b");
        receipt.push(Attempt::new(a.clone(), Some(Code::Timeout), Duration::ZERO));
        receipt.push(Attempt::new(
            a.clone(),
            Some(Code::Timeout),
            Duration::from_millis(250),
        ));
        let mut fallback = Receipt::default();
        fallback.push(Attempt::new(b.clone(), None, Duration::ZERO));
        fallback.stop = Some(StopReason::Succeeded);
        fallback.fallback = true;
        receipt.append(fallback);
        assert_eq!(receipt.routes(), vec![&a, &b]);
        assert_eq!(receipt.attempts.len(), 3);
        assert_eq!(receipt.stop, Some(StopReason::Succeeded));
        assert!(receipt.fallback);
    }
}
