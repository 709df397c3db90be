//! What every connection of one server shares: the journal, the scripts, the
//! `random` sequences, the next `seq`, the body cap and the shutdown signal.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::fault::Fault;
use crate::journal::{Journal, lock};
use crate::random;
use crate::wire::Provider;

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

    /// Resolves `random` into the next fault of its seed's sequence.
    pub(super) fn resolve(&self, fault: Fault) -> Fault {
        match fault {
            Fault::Random { seed, p } => {
                let mut randoms = lock(&self.randoms);
                let state = randoms.entry(seed).or_insert(seed);
                random::draw(state, p)
            }
            other => other,
        }
    }
}
