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

/// The attempts of an operation, in order. Reads as a slice of
/// [`Attempt`]s; holds the first one inline, so the common operation — one
/// attempt that succeeds — costs no allocation for it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Attempts(Inline);

#[derive(Clone, Default, PartialEq, Eq)]
enum Inline {
    #[default]
    Empty,
    One(Attempt),
    Many(Vec<Attempt>),
}

impl Attempts {
    /// Records an attempt after the others.
    pub fn push(&mut self, attempt: Attempt) {
        self.0 = match std::mem::take(&mut self.0) {
            Inline::Empty => Inline::One(attempt),
            Inline::One(first) => Inline::Many(vec![first, attempt]),
            Inline::Many(mut all) => {
                all.push(attempt);
                Inline::Many(all)
            }
        };
    }

    /// The attempts as a slice.
    pub fn as_slice(&self) -> &[Attempt] {
        match &self.0 {
            Inline::Empty => &[],
            Inline::One(first) => std::slice::from_ref(first),
            Inline::Many(all) => all,
        }
    }
}

impl std::ops::Deref for Attempts {
    type Target = [Attempt];
    fn deref(&self) -> &[Attempt] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Attempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<'a> IntoIterator for &'a Attempts {
    type Item = &'a Attempt;
    type IntoIter = std::slice::Iter<'a, Attempt>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl IntoIterator for Attempts {
    type Item = Attempt;
    type IntoIter = std::vec::IntoIter<Attempt>;
    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Inline::Empty => Vec::new().into_iter(),
            Inline::One(first) => vec![first].into_iter(),
            Inline::Many(all) => all.into_iter(),
        }
    }
}

impl Extend<Attempt> for Attempts {
    fn extend<I: IntoIterator<Item = Attempt>>(&mut self, attempts: I) {
        for attempt in attempts {
            self.push(attempt);
        }
    }
}

impl FromIterator<Attempt> for Attempts {
    fn from_iter<I: IntoIterator<Item = Attempt>>(attempts: I) -> Self {
        let mut all = Attempts::default();
        all.extend(attempts);
        all
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
    pub attempts: Attempts,
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
        let codes: Vec<_> = receipt.attempts.iter().map(|a| a.code).collect();
        assert_eq!(codes, [Some(Code::Timeout), Some(Code::Timeout), None]);
        assert_eq!(receipt.attempts.len(), 3);
        assert_eq!(receipt.stop, Some(StopReason::Succeeded));
        assert!(receipt.fallback);
    }
}
