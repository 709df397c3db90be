//! Where a layer's randomness comes from: the thread's generator, or one
//! seeded for reproducible runs (tests, the fleet simulation). Shared by the
//! retry ladder's jitter, the breaker's break jitter and the route set's
//! choice of member.

use std::sync::{Mutex, PoisonError};

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
}

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
}
