//! Answers still in flight when the shutdown grace period is over.
//!
//! Aborting their connections would end each one mid-body: no final
//! event, no end of the chunked body, nothing a client can tell from a
//! network fault, and a request still waiting for its upstream would get
//! no answer at all. So each request holds a [`Cut`] it checks whenever
//! it would wait; [`Cuts::cut_all`] marks them all and wakes each one,
//! and every request ends in its own words: a stream with the gateway's
//! final error event, a request not yet answered with a 503.
//!
//! A request registers once, in its thread's own list (no lock shared
//! between threads on the request path); waiting takes only its own,
//! uncontended lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Waker};

use thread_local::ThreadLocal;

/// Every request in flight, each thread's in its own list.
#[derive(Debug, Default)]
pub(crate) struct Cuts {
    lists: ThreadLocal<Mutex<Vec<Weak<Cut>>>>,
    /// The grace period is over: a request that registers now is cut at
    /// once.
    over: AtomicBool,
}

impl Cuts {
    /// A new request's cut, registered to be woken by [`cut_all`](Self::cut_all).
    pub(crate) fn register(&self) -> Arc<Cut> {
        let cut = Arc::new(Cut::default());
        let mut list = self
            .lists
            .get_or_default()
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        // Requests that ended leave a dead entry: cleared when the list
        // is full, so it holds at most twice the requests in flight.
        if list.len() == list.capacity() {
            list.retain(|cut| cut.strong_count() > 0);
        }
        list.push(Arc::downgrade(&cut));
        drop(list);
        if self.over.load(Ordering::Acquire) {
            cut.fire();
        }
        cut
    }

    /// Cuts every request in flight, and every later one.
    pub(crate) fn cut_all(&self) {
        self.over.store(true, Ordering::Release);
        for list in self.lists.iter() {
            let list = list.lock().unwrap_or_else(|p| p.into_inner());
            for cut in list.iter().filter_map(Weak::upgrade) {
                cut.fire();
            }
        }
    }
}

/// One request's side: whether the gateway has cut it.
#[derive(Debug, Default)]
pub(crate) struct Cut {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Cut {
    fn fire(&self) {
        self.fired.store(true, Ordering::Release);
        let waker = self.waker.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Whether the request is cut; if not, `cx` is woken when it is.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> bool {
        if self.fired.load(Ordering::Acquire) {
            return true;
        }
        let mut waker = self.waker.lock().unwrap_or_else(|p| p.into_inner());
        match &*waker {
            Some(kept) if kept.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
        drop(waker);
        // Fired between the first look and the waker's registration: its
        // wake found none to take.
        self.fired.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn cutting_wakes_every_waiting_request_and_cuts_later_ones() {
        let cuts = Cuts::default();
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let live: Vec<_> = (0..3).map(|_| cuts.register()).collect();
        // Ended requests leave nothing to wake.
        for _ in 0..100 {
            drop(cuts.register());
        }
        assert!(live.iter().all(|cut| !cut.poll(&mut cx)));
        cuts.cut_all();
        assert_eq!(count.0.load(Ordering::Relaxed), 3);
        assert!(live.iter().all(|cut| cut.poll(&mut cx)));
        assert!(cuts.register().poll(&mut cx), "registered after the cut");
        // The dead entries are cleared as the list fills: it holds about
        // the live ones (four, with the last), not every one made.
        let list = cuts.lists.get().unwrap().lock().unwrap();
        assert!(list.len() <= 2 * 4, "{}", list.len());
    }
}
