//! Where a layer's randomness comes from: the thread's generator, or one
//! seeded for reproducible runs (tests, the fleet simulation). Shared by the
//! retry ladder's jitter, the breaker's break jitter and the route set's
//! choice of member; and the spread past a known return
//! ([`Random::spread`]) that the ladder and the route set both draw.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// A source of random numbers. A seeded generator's lock is taken on every
/// draw: the retry ladder's and the breaker's jitter draw only after a
/// failure, but a route set draws on every call that finds two or more of
/// its members open (its power-of-two choice), so a seeded route set
/// serializes its calls' choices on the lock, briefly. The thread's
/// generator takes no lock.
#[derive(Debug, Default)]
pub enum Random {
    /// The thread-local generator.
    #[default]
    Thread,
    /// A generator seeded once, shared behind a lock.
    Seeded(Mutex<SmallRng>),
}

impl Random {
    /// A source seeded with `seed`, or the thread's generator for `None`.
    pub fn from_seed(seed: Option<u64>) -> Self {
        match seed {
            Some(seed) => Random::Seeded(Mutex::new(SmallRng::seed_from_u64(seed))),
            None => Random::Thread,
        }
    }

    /// Runs `draw` with the generator.
    pub fn with<T>(&self, draw: impl FnOnce(&mut dyn RngCore) -> T) -> T {
        match self {
            Random::Thread => draw(&mut rand::rng()),
            Random::Seeded(rng) => draw(&mut *rng.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }

    /// A wait for a known return (a `Retry-After`, a cooldown's end),
    /// `wait`, run past it by a uniform draw of up to a quarter of it, at
    /// most [`MAX_SPREAD`] and at most `spare` (what the caller's bounds
    /// leave: a deadline, the longest wait allowed). Everyone told the
    /// same return would otherwise come back in the instant it ends, the
    /// burst that meets the next 429. Never shorter than `wait`.
    pub fn spread(&self, wait: Duration, spare: Duration) -> Duration {
        let spread = (wait / 4).min(MAX_SPREAD).min(spare);
        let spread = u64::try_from(spread.as_nanos()).unwrap_or(0);
        let extra = match spread {
            0 => 0,
            spread => {
                // Lemire's multiply-shift: uniform over `0..=spread`,
                // without the modulo's bias.
                let draw = self.with(|rng| rng.next_u64());
                ((u128::from(draw) * u128::from(spread + 1)) >> 64) as u64
            }
        };
        wait.saturating_add(Duration::from_nanos(extra))
    }
}

/// The most a [spread](Random::spread) runs a wait past its return: a
/// second is enough to spread a burst of calls over a provider's
/// per-second limits, and short beside the waits it spreads (a quarter of
/// the wait below four seconds).
pub const MAX_SPREAD: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn one_seed_draws_the_same_numbers() {
        let draw = |seed| {
            let random = Random::from_seed(Some(seed));
            (0..4)
                .map(|_| random.with(|rng| rng.random::<u64>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
    }

    #[test]
    fn a_spread_stays_within_its_bounds() {
        let random = Random::from_seed(Some(3));
        let secs = Duration::from_secs;
        let mut waits: Vec<_> = (0..200)
            .map(|_| random.spread(secs(2), Duration::MAX))
            .collect();
        assert!(
            waits
                .iter()
                .all(|w| (secs(2)..=secs(2) + secs(2) / 4).contains(w))
        );
        waits.sort();
        waits.dedup();
        assert!(waits.len() > 190, "{} distinct", waits.len());
        // At most `MAX_SPREAD`, at most `spare`, nothing without room.
        assert!((0..200).all(|_| random.spread(secs(60), Duration::MAX) <= secs(60) + MAX_SPREAD));
        let spare = Duration::from_millis(30);
        assert!((0..200).all(|_| random.spread(secs(2), spare) <= secs(2) + spare));
        assert_eq!(random.spread(secs(2), Duration::ZERO), secs(2));
        assert_eq!(random.spread(Duration::ZERO, Duration::MAX), Duration::ZERO);
        assert_eq!(random.spread(Duration::MAX, Duration::MAX), Duration::MAX);
    }
}
