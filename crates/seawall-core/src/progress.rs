use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};

use crate::facts::{OperationSlots, RequestFacts};

/// What an attempt has received so far, shared between layers of one
/// attempt.
///
/// A per-attempt deadline starts one for each attempt
/// ([`Progress::start_attempt`]); layers closer to the wire (the stream
/// guard, classification) find it with [`Progress::of_request`] and add
/// what they see. When the deadline fires before the response is
/// released, it reads the progress to tell "nothing at all arrived"
/// (route-shaped) from "bytes arrived, but too slowly".
///
/// Where the counts live: when the request's [`RequestFacts`] carry an
/// operation's [`OperationSlots`] (the retry ladder, the fallback and the
/// resume layer put them there), in those slots, zeroed when each attempt
/// starts — attempts of one operation never overlap — so an attempt costs
/// no allocation and no extension of its own. Otherwise in a `Progress`
/// of its own in the request extensions.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<OperationSlots>);

/// The counts of the attempt in flight.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    bytes: AtomicU64,
    content_events: AtomicU64,
    /// The status the attempt was answered with, 0 before its head.
    status: AtomicU16,
    /// A per-attempt bound counts here: layers that find the slots feed
    /// them (unset, nobody reads the counts, and nobody pays for them).
    counting: AtomicBool,
}

impl Counters {
    fn restart(&self) {
        self.bytes.store(0, Ordering::Relaxed);
        self.content_events.store(0, Ordering::Relaxed);
        self.status.store(0, Ordering::Relaxed);
        self.counting.store(true, Ordering::Relaxed);
    }
}

impl Progress {
    /// Starts counting an attempt of `request`: in its operation's slots
    /// when its facts have them (zeroed first), else in a new `Progress`
    /// put in its extensions. Returns the attempt's progress.
    pub fn start_attempt<B>(request: &mut http::Request<B>) -> Progress {
        if let Some(slots) = request
            .extensions()
            .get::<RequestFacts>()
            .and_then(RequestFacts::slots)
        {
            slots.progress.restart();
            return Progress(Arc::clone(slots));
        }
        let progress = Progress::default();
        request.extensions_mut().insert(progress.clone());
        progress
    }

    /// Counts another attempt from zero in this same progress: for an
    /// attempt bound under a retry ladder that finds a `Progress` an
    /// attempt bound above the ladder put in the request (copied into
    /// every attempt). Both bounds, and the layers below, then read the
    /// attempt in flight.
    pub fn restart(&self) {
        self.counters().restart();
    }

    /// The progress an attempt bound counts for `request`, if one does:
    /// the one in its extensions, or that of its operation's slots.
    pub fn of_request<B>(request: &http::Request<B>) -> Option<Progress> {
        let extensions = request.extensions();
        if let Some(progress) = extensions.get::<Progress>() {
            return Some(progress.clone());
        }
        let slots = extensions.get::<RequestFacts>()?.slots()?;
        slots
            .progress
            .counting
            .load(Ordering::Relaxed)
            .then(|| Progress(Arc::clone(slots)))
    }

    fn counters(&self) -> &Counters {
        &self.0.progress
    }

    /// Records body bytes received.
    pub fn add_bytes(&self, n: u64) {
        self.counters().bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Records `n` content events received (one call per frame, however
    /// many events it held).
    pub fn add_content_events(&self, n: u64) {
        self.counters()
            .content_events
            .fetch_add(n, Ordering::Relaxed);
    }

    /// Records the status the attempt's response head carried: a bound
    /// that passes while its body is read then knows the provider had
    /// answered (a 2xx started a generation, billed whatever came of it).
    pub fn set_status(&self, status: u16) {
        self.counters().status.store(status, Ordering::Relaxed);
    }

    /// The status of the attempt's response head, once it arrived.
    pub fn status(&self) -> Option<u16> {
        match self.counters().status.load(Ordering::Relaxed) {
            0 => None,
            status => Some(status),
        }
    }

    /// Body bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.counters().bytes.load(Ordering::Relaxed)
    }

    /// Content events received so far.
    pub fn content_events(&self) -> u64 {
        self.counters().content_events.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_counts() {
        let progress = Progress::default();
        let seen_by_guard = progress.clone();
        seen_by_guard.add_bytes(40);
        seen_by_guard.add_content_events(3);
        assert_eq!((progress.bytes(), progress.content_events()), (40, 3));
    }

    fn request(facts: Option<RequestFacts>) -> http::Request<()> {
        let mut request = http::Request::new(());
        if let Some(facts) = facts {
            request.extensions_mut().insert(facts);
        }
        request
    }

    #[test]
    fn without_slots_an_attempt_counts_in_its_own_extension() {
        for facts in [None, Some(RequestFacts::default())] {
            let mut request = request(facts);
            assert!(
                Progress::of_request(&request).is_none(),
                "nobody counts yet"
            );
            let started = Progress::start_attempt(&mut request);
            let found = Progress::of_request(&request).expect("the attempt's progress");
            found.add_bytes(7);
            assert_eq!(started.bytes(), 7);
            assert!(request.extensions().get::<Progress>().is_some());
        }
    }

    #[test]
    fn with_slots_each_attempt_counts_from_zero_in_them() {
        let slots = Arc::new(OperationSlots::default());
        let facts = RequestFacts::default().with_slots(Arc::clone(&slots));
        let mut first = request(Some(facts.clone()));
        assert!(
            Progress::of_request(&first).is_none(),
            "no attempt bound, nothing to feed"
        );
        let started = Progress::start_attempt(&mut first);
        assert!(
            first.extensions().get::<Progress>().is_none(),
            "no extension of its own"
        );
        Progress::of_request(&first).unwrap().add_bytes(40);
        Progress::of_request(&first).unwrap().add_content_events(2);
        assert_eq!((started.bytes(), started.content_events()), (40, 2));

        // The next attempt of the same operation starts from zero.
        let mut second = request(Some(facts));
        let again = Progress::start_attempt(&mut second);
        assert_eq!((again.bytes(), again.content_events()), (0, 0));
        Progress::of_request(&second).unwrap().add_bytes(5);
        assert_eq!(again.bytes(), 5);
    }
}
