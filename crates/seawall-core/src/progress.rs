use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What an attempt has received so far, shared between layers of one
/// attempt.
///
/// A per-attempt deadline puts one in the request extensions; layers closer
/// to the wire (the stream guard) add what they see. When the deadline fires
/// before the response is released, it reads the progress to tell "nothing
/// at all arrived" (route-shaped) from "bytes arrived, but too slowly".
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<Counters>);

#[derive(Debug, Default)]
struct Counters {
    bytes: AtomicU64,
    content_events: AtomicU64,
}

impl Progress {
    /// Records body bytes received.
    pub fn add_bytes(&self, n: u64) {
        self.0.bytes.fetch_add(n, Ordering::Relaxed);
    }

    /// Records `n` content events received (one call per frame, however
    /// many events it held).
    pub fn add_content_events(&self, n: u64) {
        self.0.content_events.fetch_add(n, Ordering::Relaxed);
    }

    /// Body bytes received so far.
    pub fn bytes(&self) -> u64 {
        self.0.bytes.load(Ordering::Relaxed)
    }

    /// Content events received so far.
    pub fn content_events(&self) -> u64 {
        self.0.content_events.load(Ordering::Relaxed)
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
}
