//! Exponential backoff with a cap and the AWS jitter choices.

use std::time::Duration;

use rand::{Rng, RngCore};
use seawall_internal::capped_doubling;

/// How the delay before a retry is randomised, with the definitions of the
/// AWS Architecture Blog's "Exponential Backoff And Jitter", where
/// `ceiling = min(cap, initial × 2^retry)`:
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// `ceiling`: every client retries in lockstep. For tests.
    None,
    /// `random(0, ceiling)`: the least contention, the default.
    Full,
    /// `ceiling / 2 + random(0, ceiling / 2)`: never much shorter than the
    /// ceiling.
    Equal,
    /// `min(cap, random(initial, previous × 3))`, starting from
    /// `previous = initial`: grows from the last delay, not the retry count
    /// (and from a zero `initial` would not grow at all, which
    /// [`Backoff::exponential`] refuses).
    Decorrelated,
}

/// Exponential backoff: `initial × 2^retry`, capped, then jittered.
///
/// Retry `0` is the first retry. Huge retry numbers saturate at the cap;
/// nothing overflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    initial: Duration,
    cap: Duration,
    jitter: Jitter,
}

impl Backoff {
    /// `initial × 2^retry` capped at `cap`, with [`Jitter::Full`].
    ///
    /// A zero `cap` means no delay, whatever `initial` is (as
    /// [`Backoff::none`]).
    ///
    /// # Panics
    ///
    /// When `initial` is zero and `cap` is not: every jitter grows its
    /// delays from `initial` (doubling it, or drawing from
    /// `[initial, previous × 3]`), so from zero they stay zero and the
    /// ladder would retry back to back, with a cap that says otherwise.
    pub const fn exponential(initial: Duration, cap: Duration) -> Self {
        assert!(
            !initial.is_zero() || cap.is_zero(),
            "Backoff::exponential: initial must be above zero when cap is (delays grow from \
             initial and would stay zero); use Backoff::none() for no delay"
        );
        Backoff {
            initial,
            cap,
            jitter: Jitter::Full,
        }
    }

    /// No delay at all.
    pub const fn none() -> Self {
        Backoff {
            initial: Duration::ZERO,
            cap: Duration::ZERO,
            jitter: Jitter::None,
        }
    }

    /// The same backoff with another jitter.
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// The first delay.
    pub const fn initial(&self) -> Duration {
        self.initial
    }

    /// The longest delay.
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// The jitter.
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// `min(cap, initial × 2^retry)`, exact and without overflow for every
    /// input.
    pub fn ceiling(&self, retry: u32) -> Duration {
        capped_doubling(self.initial, self.cap, retry)
    }

    /// The delay before retry number `retry` (0 for the first), given the
    /// previous delay (used by [`Jitter::Decorrelated`]; pass
    /// [`Duration::ZERO`] before the first retry).
    pub fn delay(&self, retry: u32, previous: Duration, rng: &mut dyn RngCore) -> Duration {
        match self.jitter {
            Jitter::None => self.ceiling(retry),
            Jitter::Full => between(rng, Duration::ZERO, self.ceiling(retry)),
            Jitter::Equal => {
                let half = self.ceiling(retry) / 2;
                half + between(rng, Duration::ZERO, half)
            }
            Jitter::Decorrelated => {
                let previous = previous.max(self.initial);
                let high = previous.saturating_mul(3);
                between(rng, self.initial, high).min(self.cap)
            }
        }
    }
}

/// A uniformly random duration in `[low, high]` (nanosecond resolution,
/// saturating at about 584 years).
fn between(rng: &mut dyn RngCore, low: Duration, high: Duration) -> Duration {
    let low = u64::try_from(low.as_nanos()).unwrap_or(u64::MAX);
    let high = u64::try_from(high.as_nanos()).unwrap_or(u64::MAX);
    if high <= low {
        return Duration::from_nanos(low);
    }
    Duration::from_nanos(rng.random_range(low..=high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn ceiling_doubles_then_caps_and_never_overflows() {
        let backoff = Backoff::exponential(250 * MS, 8000 * MS);
        let ceilings: Vec<_> = (0..7).map(|n| backoff.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [250, 500, 1000, 2000, 4000, 8000, 8000].map(|ms| ms * MS)
        );
        for retry in [31, 32, 33, 64, 1000, u32::MAX] {
            assert_eq!(backoff.ceiling(retry), 8000 * MS, "{retry}");
        }
        let huge = Backoff::exponential(Duration::MAX, Duration::MAX);
        assert_eq!(huge.ceiling(u32::MAX), Duration::MAX);
    }

    /// Delays grow from `initial`: a zero one under a cap would retry back
    /// to back (decorrelated: `random(0, 0 × 3)` for ever).
    #[test]
    #[should_panic(expected = "initial must be above zero when cap is")]
    fn a_zero_initial_under_a_cap_is_refused() {
        let _ = Backoff::exponential(Duration::ZERO, 8000 * MS).with_jitter(Jitter::Decorrelated);
    }

    /// A zero cap is no delay, whatever `initial` is.
    #[test]
    fn a_zero_cap_means_no_delay() {
        let mut rng = SmallRng::seed_from_u64(1);
        for initial in [Duration::ZERO, 250 * MS] {
            for jitter in [
                Jitter::None,
                Jitter::Full,
                Jitter::Equal,
                Jitter::Decorrelated,
            ] {
                let backoff = Backoff::exponential(initial, Duration::ZERO).with_jitter(jitter);
                for retry in 0..5 {
                    assert_eq!(backoff.delay(retry, 100 * MS, &mut rng), Duration::ZERO);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn every_jitter_stays_inside_its_aws_bounds(
            seed: u64,
            retry in 0u32..200,
            initial_ms in 1u64..10_000,
            cap_ms in 0u64..100_000,
            previous_ms in 0u64..200_000,
        ) {
            let mut rng = SmallRng::seed_from_u64(seed);
            let ms = Duration::from_millis;
            let (initial, cap, previous) = (ms(initial_ms), ms(cap_ms), ms(previous_ms));
            let backoff = Backoff::exponential(initial, cap);
            let ceiling = backoff.ceiling(retry);
            prop_assert!(ceiling <= cap);

            let none = backoff.with_jitter(Jitter::None).delay(retry, previous, &mut rng);
            prop_assert_eq!(none, ceiling);
            let full = backoff.with_jitter(Jitter::Full).delay(retry, previous, &mut rng);
            prop_assert!(full <= ceiling);
            let equal = backoff.with_jitter(Jitter::Equal).delay(retry, previous, &mut rng);
            prop_assert!(equal >= ceiling / 2 && equal <= ceiling);
            let decorrelated = backoff
                .with_jitter(Jitter::Decorrelated)
                .delay(retry, previous, &mut rng);
            prop_assert!(decorrelated <= cap);
            prop_assert!(decorrelated >= initial.min(cap));
            prop_assert!(decorrelated <= previous.max(initial).saturating_mul(3).max(initial));
        }
    }
}
