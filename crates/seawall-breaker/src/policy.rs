//! What trips a breaker, how long it stays open, and which failures count.

use std::time::Duration;

use rand::Rng;
use seawall_core::{Class, ClosedBy, Code, Failure};
use seawall_internal::random::Random;
use seawall_internal::{capped_doubling, millis};

/// When a closed breaker opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trip {
    /// Open when, over the last `window` (kept as `buckets` slices), at least
    /// `min_calls` calls were recorded and the share of failures among them
    /// reached `ratio`. The minimum keeps a quiet route from tripping on one
    /// unlucky call.
    ///
    /// A bucket counts up to 2^20 − 1 calls; past that its counts are
    /// halved and it counts on, so its failure share stays right (leaning
    /// to its latest calls) instead of freezing at what it held when full.
    ///
    /// # Panics
    ///
    /// [`BreakerLayer::trip`](crate::BreakerLayer::trip) panics when `ratio`
    /// is not in `(0, 1]`: zero would open on a window of successes, and a
    /// percentage (`50.0`) or NaN has no failure share to mean.
    FailureRatio {
        /// Failure share that opens the breaker, in `(0, 1]`: `0.5` for
        /// half the calls, not `50.0`.
        ratio: f64,
        /// How far back the window looks.
        window: Duration,
        /// How many slices the window is kept in (1 to 1024): the window
        /// slides by `window / buckets`.
        ///
        /// A slice is a whole number of milliseconds, `window / buckets`
        /// rounded up, and the window keeps as many as fit in it: never
        /// more than `window` is looked back over, a little less when the
        /// division is not exact (1500 ms in 1024 buckets is 750 slices of
        /// 2 ms; 500 ms in 1000 buckets is 500 slices of 1 ms).
        buckets: u16,
        /// Fewest recorded calls in the window before the ratio is trusted.
        min_calls: u32,
    },
    /// Open after `failures` counted failures in a row (a success resets the
    /// run).
    Consecutive {
        /// Length of the run that opens the breaker (at least 1).
        failures: u32,
    },
}

impl Default for Trip {
    /// Half the calls failing over 30 seconds (10 buckets), with at least 20
    /// calls in the window.
    fn default() -> Self {
        Trip::FailureRatio {
            ratio: 0.5,
            window: Duration::from_secs(30),
            buckets: 10,
            min_calls: 20,
        }
    }
}

/// Validated trip parameters, in the units the atomics use.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TripRule {
    Ratio {
        ratio: f64,
        bucket_ms: u64,
        buckets: usize,
        min_calls: u64,
    },
    Consecutive {
        failures: u32,
    },
}

impl TripRule {
    /// Keeps buckets within 1..=1024 and at least 1 ms wide, and panics on
    /// a ratio outside `(0, 1]`: any stand-in for it (1 used to be) would
    /// run a breaker other than the one asked for without a word.
    pub(crate) fn from_trip(trip: Trip) -> Self {
        match trip {
            Trip::FailureRatio {
                ratio,
                window,
                buckets,
                min_calls,
            } => {
                assert!(
                    ratio > 0.0 && ratio <= 1.0,
                    "Trip::FailureRatio: ratio must be a failure share in (0, 1] \
                     (0.5 for half the calls), got {ratio}"
                );
                let asked = u64::from(buckets.clamp(1, 1024));
                let window_ms = millis(window);
                // Buckets are whole milliseconds: each is the window's share
                // rounded up, and the window keeps the buckets that fit in
                // it. Rounding down instead (to at least 1 ms) with the
                // count kept looked further back than asked: 1000 buckets
                // over 500 ms looked back a second.
                let bucket_ms = window_ms.div_ceil(asked).max(1);
                let buckets = (window_ms / bucket_ms).max(1) as usize;
                TripRule::Ratio {
                    ratio,
                    bucket_ms,
                    buckets,
                    min_calls: u64::from(min_calls.max(1)),
                }
            }
            Trip::Consecutive { failures } => TripRule::Consecutive {
                failures: failures.max(1),
            },
        }
    }
}

/// How long an open breaker waits before probing: `base` after the first
/// trip, doubled on each re-open from half-open, capped at `max`, then
/// shortened by a random share of at most `jitter` so that many clients do
/// not probe a recovering provider in the same instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakDuration {
    /// The break after the first trip.
    pub base: Duration,
    /// The longest break.
    pub max: Duration,
    /// Share of the break removed at random, in `[0, 1)`; 0 disables jitter.
    pub jitter: f64,
}

impl Default for BreakDuration {
    /// 5 seconds, doubling up to 5 minutes, with 20 % jitter.
    fn default() -> Self {
        BreakDuration {
            base: Duration::from_secs(5),
            max: Duration::from_secs(300),
            jitter: 0.2,
        }
    }
}

impl BreakDuration {
    /// The break after the `trips`-th consecutive trip (1 for the first).
    pub(crate) fn after_trips(&self, trips: u32, random: &Random) -> Duration {
        let full = capped_doubling(self.base, self.max, trips.saturating_sub(1));
        // `clamp` keeps a NaN, and `mul_f64` panics on one: no jitter.
        let jitter = if self.jitter.is_nan() {
            0.0
        } else {
            self.jitter.clamp(0.0, 0.99)
        };
        if jitter == 0.0 {
            return full;
        }
        let draw = random.with(|rng| rng.random::<f64>());
        full.mul_f64(1.0 - jitter * draw)
    }
}

/// True when `failure` says something about the route's health.
///
/// Counted: transient `provider_unavailable`, `overloaded`, `transport`,
/// `timeout`, `first_byte_timeout`, `idle_timeout`, `empty_response`,
/// `protocol_violation`, and the two ends after content —
/// `stream_interrupted` and `truncated` — by their recorded cause (without
/// one: when the provider or the network closed the stream);
/// `rate_limited` only when `rate_limited_counts`. Everything else — the
/// permanent, policy and model-fixable classes, `deadline_exceeded` (the
/// operation's own budget), `cancelled` — says nothing about the route.
/// Nor does a call refused on this side, which reached no route
/// ([`Failure::is_refused_here`]): a breaker's own refusal, or an
/// `overloaded` shed unsent by tower's `LoadShed` over a local limit, which
/// a burst past the limit would otherwise turn into an open breaker for
/// every caller. A provider's own overload (a 529, a 503) carries its
/// status and counts.
///
/// An answer the token limit cut (a `length` or `max_tokens` finish) is
/// no failure at all: it is delivered, and never reaches this question.
pub(crate) fn counts(failure: &Failure, rate_limited_counts: bool) -> bool {
    if failure.class() != Class::Transient || failure.is_refused_here() {
        return false;
    }
    // An end after content counts for what ended it: a reset, an overload
    // or a silent gap says something about the route; a rate limit only
    // when configured; a permanent error event, nothing. A clean end before
    // the finish marker (`truncated`) has no cause but who closed it: a
    // route that closes every stream early must trip like one that resets
    // them.
    if matches!(failure.code(), Code::StreamInterrupted | Code::Truncated) {
        return match failure.interrupted().and_then(|i| i.cause) {
            Some(cause) => counts_code(cause, rate_limited_counts),
            None => failure.evidence().closed_by == Some(ClosedBy::Them),
        };
    }
    counts_code(failure.code(), rate_limited_counts)
}

fn counts_code(code: Code, rate_limited_counts: bool) -> bool {
    match code {
        Code::ProviderUnavailable
        | Code::Overloaded
        | Code::Transport
        | Code::Timeout
        | Code::FirstByteTimeout
        | Code::IdleTimeout
        | Code::EmptyResponse
        | Code::ProtocolViolation
        // A body cut before its value closed, named as the cause of an
        // interruption (the JSON check past its cap).
        | Code::Truncated => true,
        Code::RateLimited => rate_limited_counts,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::Evidence;

    #[test]
    fn only_route_health_counts() {
        let counted = [
            Code::ProviderUnavailable,
            Code::Overloaded,
            Code::Transport,
            Code::Timeout,
            Code::FirstByteTimeout,
            Code::IdleTimeout,
            Code::EmptyResponse,
            Code::ProtocolViolation,
        ];
        // The ends after content (`stream_interrupted`, `truncated`) count
        // by their cause or who closed them: without either, not at all.
        for code in Code::ALL {
            let failure = Failure::new(*code);
            assert_eq!(counts(&failure, false), counted.contains(code), "{code}");
        }
        assert!(counts(&Failure::new(Code::RateLimited), true));
        // A classifier that made a 5xx permanent has decided it is not health.
        let permanent = Failure::with_class(Class::Permanent, Code::ProviderUnavailable);
        assert!(!counts(&permanent, false));
    }

    /// The stream guard's end of body after content and before the finish
    /// marker is `truncated`, closed by them, with no cause: a route that
    /// closes every stream early counts as one that resets them.
    #[test]
    fn an_end_after_content_counts_only_when_they_closed_it() {
        for code in [Code::StreamInterrupted, Code::Truncated] {
            let mut evidence = Evidence::default();
            evidence.content_seen = true;
            evidence.closed_by = Some(ClosedBy::Them);
            let remote = Failure::new(code)
                .with_evidence(evidence.clone())
                .with_interrupted(seawall_core::Interrupted::default());
            assert!(counts(&remote, false), "{code}");
            evidence.closed_by = Some(ClosedBy::Us);
            let local = Failure::new(code).with_evidence(evidence);
            assert!(!counts(&local, false), "{code}");
            assert!(!counts(&Failure::new(code), false), "{code}");
        }
    }

    /// A call tower's `LoadShed` refused under the classifier reached no
    /// route; a provider's own overload did.
    #[test]
    fn an_overload_counts_only_when_the_route_said_it() {
        let mut shed = Evidence::default();
        shed.closed_by = Some(ClosedBy::Us);
        assert!(!counts(
            &Failure::new(Code::Overloaded).with_evidence(shed.clone()),
            false
        ));
        let provider = Failure::new(Code::Overloaded)
            .with_evidence(shed.clone())
            .with_status(529);
        assert!(counts(&provider, false));
        assert!(counts(
            &Failure::new(Code::Overloaded).with_status(503),
            false
        ));
        // Only an overload: a timeout of our own bound is still the route's.
        assert!(counts(
            &Failure::new(Code::Timeout).with_evidence(shed),
            false
        ));
    }

    #[test]
    fn an_interruption_counts_for_what_interrupted_it() {
        let interrupted = |cause| {
            let mut delivered = seawall_core::Interrupted::default();
            delivered.cause = Some(cause);
            Failure::new(Code::StreamInterrupted).with_interrupted(delivered)
        };
        // A silent gap is our bound firing, and still the route's fault.
        assert!(counts(&interrupted(Code::IdleTimeout), false));
        assert!(counts(&interrupted(Code::Overloaded), false));
        assert!(counts(&interrupted(Code::Transport), false));
        assert!(!counts(&interrupted(Code::RateLimited), false));
        assert!(counts(&interrupted(Code::RateLimited), true));
        assert!(!counts(&interrupted(Code::BadRequest), false));
        // A body cut before its JSON value closed, read past the check cap.
        assert!(counts(&interrupted(Code::Truncated), false));
    }

    #[test]
    fn break_grows_is_capped_and_absurd_values_do_not_panic() {
        let exact = BreakDuration {
            base: Duration::from_secs(5),
            max: Duration::from_secs(60),
            jitter: 0.0,
        };
        assert_eq!(
            exact.after_trips(1, &Random::Thread),
            Duration::from_secs(5)
        );
        assert_eq!(
            exact.after_trips(2, &Random::Thread),
            Duration::from_secs(10)
        );
        assert_eq!(
            exact.after_trips(4, &Random::Thread),
            Duration::from_secs(40)
        );
        assert_eq!(
            exact.after_trips(5, &Random::Thread),
            Duration::from_secs(60)
        );
        assert_eq!(
            exact.after_trips(u32::MAX, &Random::Thread),
            Duration::from_secs(60)
        );
        let huge = BreakDuration {
            base: Duration::MAX,
            max: Duration::MAX,
            jitter: 5.0,
        };
        assert!(huge.after_trips(40, &Random::Thread) > Duration::from_secs(1));
        let not_a_number = BreakDuration {
            jitter: f64::NAN,
            ..exact
        };
        assert_eq!(
            not_a_number.after_trips(1, &Random::Thread),
            Duration::from_secs(5)
        );
        let jittered = BreakDuration {
            jitter: 0.2,
            ..exact
        };
        for _ in 0..100 {
            let d = jittered.after_trips(2, &Random::Thread);
            assert!(
                d <= Duration::from_secs(10) && d >= Duration::from_secs(8),
                "{d:?}"
            );
        }
    }
}
