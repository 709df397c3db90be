//! What every connection of one server shares: the journal, the scripts, the
//! `random` sequences, the next `seq`, the body cap and the shutdown signal.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::fault::Fault;
use crate::journal::{Journal, lock};
use crate::random;
use crate::wire::Provider;

/// The most `random` seeds whose sequences are kept: the seed is the
/// client's to name in each request, and a long soak naming a new one per
/// request must not grow the table until a reset. Real tests use a handful.
pub(crate) const MAX_RANDOM_SEEDS: usize = 4096;

struct Script {
    faults: VecDeque<Fault>,
    served: u32,
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("left", &self.faults.len())
            .field("served", &self.served)
            .finish()
    }
}

#[derive(Debug)]
pub(crate) struct State {
    pub(super) journal: Arc<Journal>,
    scripts: Mutex<HashMap<Provider, Script>>,
    /// The fault every request with this API key gets (after any script).
    key_faults: Mutex<HashMap<String, Fault>>,
    /// Each `random` seed's sequence state, at most `MAX_RANDOM_SEEDS`.
    randoms: Mutex<HashMap<u64, u64>>,
    next_seq: AtomicU64,
    pub(super) max_body_bytes: usize,
    pub(super) shutdown: CancellationToken,
}

impl State {
    pub(super) fn new(max_body_bytes: usize, shutdown: CancellationToken) -> Self {
        State {
            journal: Arc::new(Journal::default()),
            scripts: Mutex::new(HashMap::new()),
            key_faults: Mutex::new(HashMap::new()),
            randoms: Mutex::new(HashMap::new()),
            next_seq: AtomicU64::new(1),
            max_body_bytes,
            shutdown,
        }
    }

    /// The `seq` of the next journal row.
    pub(super) fn next_seq(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn set_script(&self, provider: Provider, faults: Vec<Fault>) {
        lock(&self.scripts).insert(
            provider,
            Script {
                faults: faults.into(),
                served: 0,
            },
        );
    }

    /// The next scripted fault for `provider` and its 1-based position.
    pub(super) fn next_scripted(&self, provider: Provider) -> Option<(Fault, u32)> {
        let mut scripts = lock(&self.scripts);
        let script = scripts.get_mut(&provider)?;
        let fault = script.faults.pop_front()?;
        script.served += 1;
        Some((fault, script.served))
    }

    /// Every request with API key `key` gets `fault` (`None`: no longer).
    pub(super) fn set_key_fault(&self, key: &str, fault: Option<Fault>) {
        let mut faults = lock(&self.key_faults);
        match fault {
            Some(fault) => {
                faults.insert(key.to_owned(), fault);
            }
            None => {
                faults.remove(key);
            }
        }
    }

    /// The fault set for API key `key`, if any.
    pub(super) fn key_fault(&self, key: &str) -> Option<Fault> {
        lock(&self.key_faults).get(key).cloned()
    }

    /// Forgets every fault set per API key.
    pub(super) fn clear_key_faults(&self) {
        lock(&self.key_faults).clear();
    }

    pub(super) fn reset(&self) {
        self.journal.clear();
        lock(&self.scripts).clear();
        lock(&self.randoms).clear();
    }

    /// Resolves `random` into the next fault of its seed's sequence. Once
    /// `MAX_RANDOM_SEEDS` seeds are kept, a new one is not: each of its
    /// requests draws its sequence's first fault (still fixed by the seed,
    /// but no longer a sequence) until a reset. Not refused: a soak test's
    /// requests keep getting faults at the probability asked.
    pub(super) fn resolve(&self, fault: Fault) -> Fault {
        match fault {
            Fault::Random { seed, p } => {
                let mut randoms = lock(&self.randoms);
                let len = randoms.len();
                match randoms.entry(seed) {
                    Entry::Occupied(mut kept) => random::draw(kept.get_mut(), p),
                    Entry::Vacant(new) if len < MAX_RANDOM_SEEDS => {
                        random::draw(new.insert(seed), p)
                    }
                    Entry::Vacant(_) => random::draw(&mut { seed }, p),
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(seed: u64) -> Fault {
        Fault::Random { seed, p: 0.5 }
    }

    /// A new seed per request does not grow the table past its cap, and a
    /// seed kept before it goes on with its sequence.
    #[test]
    fn random_seeds_are_capped() {
        let state = State::new(1024, CancellationToken::new());
        let first = state.resolve(random(0));
        for seed in 1..(MAX_RANDOM_SEEDS as u64 + 10) {
            state.resolve(random(seed));
        }
        assert_eq!(lock(&state.randoms).len(), MAX_RANDOM_SEEDS);
        // The kept seed's next draw is its sequence's second.
        let mut sequence = 0;
        assert_eq!(first, random::draw(&mut sequence, 0.5));
        assert_eq!(state.resolve(random(0)), random::draw(&mut sequence, 0.5));
        // A seed past the cap draws its sequence's first fault each time.
        let past = MAX_RANDOM_SEEDS as u64 + 100;
        let once = random::draw(&mut { past }, 0.5);
        assert_eq!(state.resolve(random(past)), once);
        assert_eq!(state.resolve(random(past)), once);
        assert_eq!(lock(&state.randoms).len(), MAX_RANDOM_SEEDS);
    }
}
