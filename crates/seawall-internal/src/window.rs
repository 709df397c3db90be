//! A sliding window of counts over time slices, one packed atomic word per
//! slice: the retry budget's ratio window and the breaker's failure-ratio
//! window.
//!
//! A word holds a slice's tag (its number, 24 bits) beside a 40-bit payload
//! whose meaning is the caller's (a signed balance, or two counts). A word
//! still tagged with an older slice reads as a zero payload, so a stale
//! slot is reset and updated in one compare-and-swap, and a slot older than
//! the window is ignored by its age. A word already tagged with a newer
//! slice is left alone: the update came late.
//!
//! A tag comes round every 2^24 slices, and a slot last written a whole
//! cycle ago would read as of the slice now, its counts back (1 ms slices:
//! after some 4.7 hours). So once per lap of the ring (its length in
//! slices) the first reader or writer of the lap sweeps it: slots older
//! than the ring are emptied, and after a lap or more of quiet every slot
//! the last sweep may have left is (its tag tells that apart from what
//! callers of the lap now wrote meanwhile). No slot then lives to see its
//! tag again.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of a word holding its slice's tag.
pub const TAG_BITS: u32 = 24;
/// Bits of a word holding the payload.
pub const PAYLOAD_BITS: u32 = 64 - TAG_BITS;
/// The payload's bits.
pub const PAYLOAD_MASK: u64 = (1 << PAYLOAD_BITS) - 1;
/// The largest balance a signed payload holds ([`signed`]); the smallest
/// is its negation.
pub const SIGNED_MAX: i64 = (1 << (PAYLOAD_BITS - 1)) - 1;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
/// How far (in slices) a slot's tag may be ahead of an update's slice and
/// still be taken for a newer slice: the update's writer read its clock,
/// then other writers moved on to a later slice of the same slot before it
/// wrote. Further ahead, the tag is taken for one that wrapped: the slot
/// was last written nearly a whole cycle of the tag ago, and is stale.
/// (The sweep empties a slot long before it has been idle that long.)
const AHEAD_MAX: u64 = 1 << 12;
/// The longest ring: a slot the sweep kept is under three laps old at the
/// next sweep (a lap to the sweep that kept it, a lap between sweeps),
/// which must stay clear of a tag's cycle for its age to be read right.
pub const MAX_SLICES: usize = 1 << 22;

/// A ring of slice words, a power of two long (so a slice finds its slot
/// with a mask, and ring positions agree with tags when the 24-bit tag
/// wraps).
///
/// `R` is the storage: an inline array (`[AtomicU64; N]`, no indirection)
/// for a fixed window, a boxed slice for one sized at run time.
///
/// The words publish nothing but themselves, so every access to them is
/// `Relaxed`; the lap swept for is published after its sweep (`Release`,
/// read with `Acquire`), so whoever sees it sees the swept slots.
pub struct Window<R = Box<[AtomicU64]>> {
    slots: R,
    /// The latest lap (slice / ring length) the ring was swept for.
    lap: AtomicU64,
}

impl Window<Box<[AtomicU64]>> {
    /// A ring for a window of `slices` slices: the next power of two long
    /// (empty for 0).
    ///
    /// # Panics
    ///
    /// When `slices` is over [`MAX_SLICES`].
    pub fn with_slices(slices: usize) -> Self {
        assert!(
            slices <= MAX_SLICES,
            "a window of at most {MAX_SLICES} slices"
        );
        let len = match slices {
            0 => 0,
            n => n.next_power_of_two(),
        };
        Window {
            slots: (0..len).map(|_| AtomicU64::new(0)).collect(),
            lap: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Window<[AtomicU64; N]> {
    const POWER_OF_TWO: () = assert!(N.is_power_of_two() && N <= MAX_SLICES);

    /// An empty ring of `N` slots, `N` a power of two up to [`MAX_SLICES`].
    pub fn new() -> Self {
        let () = Self::POWER_OF_TWO;
        Window {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            lap: AtomicU64::new(0),
        }
    }
}

impl<const N: usize> Default for Window<[AtomicU64; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: AsRef<[AtomicU64]>> Window<R> {
    /// Updates the payload of `slice` (zero when its slot still holds an
    /// older slice) with `f`; `None` from `f` leaves the word unwritten.
    /// `f` may run more than once under contention. An empty ring ignores
    /// the update.
    ///
    /// A slot already holding a newer slice (other writers moved on while
    /// this one was late) ignores the update: the late count is dropped,
    /// its slice being past, where resetting the slot to it wiped the newer
    /// slice's counts (in a ring of one slot, whenever a call of the last
    /// slice finished after the first of the next). An empty newer slot
    /// (payload zero, as after [`clear`](Self::clear)) has nothing to lose
    /// and takes it.
    #[inline]
    pub fn update(&self, slice: u64, mut f: impl FnMut(u64) -> Option<u64>) {
        let slots = self.slots.as_ref();
        let Some(last) = slots.len().checked_sub(1) else {
            return;
        };
        self.catch_up(slots, slice);
        let slot = &slots[(slice & last as u64) as usize];
        let tag = slice & TAG_MASK;
        let mut current = slot.load(Ordering::Relaxed);
        loop {
            let held = current >> PAYLOAD_BITS;
            let payload = current & PAYLOAD_MASK;
            let ahead = held.wrapping_sub(tag) & TAG_MASK;
            if (1..=AHEAD_MAX).contains(&ahead) && payload != 0 {
                return;
            }
            let payload = if held == tag { payload } else { 0 };
            let Some(next) = f(payload) else {
                return;
            };
            let next = (tag << PAYLOAD_BITS) | (next & PAYLOAD_MASK);
            match slot.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => current = actual,
            }
        }
    }

    /// Folds the payloads of the `span` slices ending at `slice` (those
    /// whose age is under `span`) into `init`. A slot never written adds a
    /// zero payload.
    #[inline]
    pub fn fold<T>(&self, slice: u64, span: u64, init: T, mut f: impl FnMut(T, u64) -> T) -> T {
        let slots = self.slots.as_ref();
        if !slots.is_empty() {
            self.catch_up(slots, slice);
        }
        let tag = slice & TAG_MASK;
        let mut acc = init;
        for slot in slots {
            let word = slot.load(Ordering::Relaxed);
            let age = tag.wrapping_sub(word >> PAYLOAD_BITS) & TAG_MASK;
            if age < span {
                acc = f(acc, word & PAYLOAD_MASK);
            }
        }
        acc
    }

    /// Sweeps the ring when `slice` is of a lap later than the last swept
    /// for; `slots` is not empty. One `Acquire` load otherwise.
    #[inline]
    fn catch_up(&self, slots: &[AtomicU64], slice: u64) {
        self.catch_up_from(slots, slice, self.lap.load(Ordering::Acquire));
    }

    /// [`catch_up`](Self::catch_up) once the lap swept for read `swept`:
    /// apart so a test can run it for a caller descheduled after the read.
    #[inline]
    fn catch_up_from(&self, slots: &[AtomicU64], slice: u64, swept: u64) {
        let lap = slice >> slots.len().trailing_zeros();
        if lap > swept {
            Self::sweep(slots, &self.lap, slice, swept);
            // Published after the sweep: a reader that sees the lap sees
            // no slot it emptied. Callers that came in meanwhile swept too
            // (a sweep twice over is the same sweep).
            self.lap.fetch_max(lap, Ordering::Release);
        }
    }

    /// Empties the slots older than the ring at `slice`, when the last
    /// sweep, read from `published`, was for lap `swept`. After a lap or
    /// more unswept a slot's age no longer shows in its tag, so then every
    /// slot whose tag is of a slice the last sweep may have left is: of
    /// its lap or the one before, or up to [`AHEAD_MAX`] slices earlier
    /// (a late update). What callers wrote since, of the lap now, has a
    /// tag ahead of those.
    ///
    /// A slot is emptied only if it still holds what was read: an update
    /// meanwhile keeps its count. A sweeper descheduled after reading the
    /// lap stops once it finds a later sweep published (the slots are as
    /// swept as it would leave them), and spares what callers of the lap
    /// now wrote even before it finds that. So a race loses only a late
    /// count of a slice already out of the ring, or, after a quiet within
    /// two laps and [`AHEAD_MAX`] slices of a whole number of tag cycles
    /// (when the lap now has the tags of those the last sweep may have
    /// left), a count that a caller made after another's sweep but before
    /// this sweeper found that sweep published. It never brings an old
    /// count back.
    #[cold]
    fn sweep(slots: &[AtomicU64], published: &AtomicU64, slice: u64, swept: u64) {
        let shift = slots.len().trailing_zeros();
        let lap = slice >> shift;
        let len = slots.len() as u64;
        let tag = slice & TAG_MASK;
        // The first slice after those the last sweep may have left, and
        // how far before it they reach: a slot that sweep kept is of a
        // slice under a ring before its own, a late update at most
        // AHEAD_MAX slices behind the lap it wrote in.
        let edge = ((swept + 1) << shift) & TAG_MASK;
        let reach = 2 * len + AHEAD_MAX;
        let all = lap - swept > 1;
        for slot in slots {
            let word = slot.load(Ordering::Relaxed);
            if word == 0 {
                continue;
            }
            let held = word >> PAYLOAD_BITS;
            let stale = if all {
                let behind = edge.wrapping_sub(held) & TAG_MASK;
                (1..=reach).contains(&behind)
            } else {
                let age = tag.wrapping_sub(held) & TAG_MASK;
                let ahead = held.wrapping_sub(tag) & TAG_MASK;
                // A slot ahead was written by a caller already in a later
                // slice: it is newer, not old.
                age >= len && !(1..=AHEAD_MAX).contains(&ahead)
            };
            if !stale {
                continue;
            }
            if published.load(Ordering::Acquire) >= lap {
                return;
            }
            let _ = slot.compare_exchange(word, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Empties every slot.
    pub fn clear(&self) {
        for slot in self.slots.as_ref() {
            slot.store(0, Ordering::Relaxed);
        }
    }
}

impl<R: AsRef<[AtomicU64]>> std::fmt::Debug for Window<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("slots", &self.slots.as_ref().len())
            .finish()
    }
}

/// A signed balance as a payload (two's complement in [`PAYLOAD_BITS`]
/// bits); `value` within `±SIGNED_MAX`.
#[inline]
pub fn from_signed(value: i64) -> u64 {
    value as u64 & PAYLOAD_MASK
}

/// The signed balance a payload holds ([`from_signed`]).
#[inline]
pub fn signed(payload: u64) -> i64 {
    // Sign-extend from PAYLOAD_BITS.
    (((payload & PAYLOAD_MASK) << TAG_BITS) as i64) >> TAG_BITS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(tag: u64, value: i64) -> u64 {
        (tag << PAYLOAD_BITS) | from_signed(value)
    }

    fn unpack(packed: u64) -> (u64, i64) {
        (packed >> PAYLOAD_BITS, signed(packed))
    }

    #[test]
    fn packing_round_trips_signed_balances() {
        for value in [0, 1, -1, SIGNED_MAX, -SIGNED_MAX, 123_456, -987_654] {
            for tag in [0, 1, TAG_MASK] {
                assert_eq!(unpack(pack(tag, value)), (tag, value));
            }
        }
    }

    #[test]
    fn a_stale_slot_starts_afresh_and_old_slices_drop_out() {
        let window: Window<[AtomicU64; 4]> = Window::new();
        let add = |slice, n| window.update(slice, |p| Some(p + n));
        let sum = |slice, span| window.fold(slice, span, 0, |acc, p| acc + p);
        add(0, 1);
        add(1, 2);
        add(1, 3);
        assert_eq!(sum(1, 2), 6);
        assert_eq!(sum(1, 1), 5);
        assert_eq!(sum(2, 2), 5, "slice 0 is out of a 2-slice window at 2");
        // Slice 4 lands in slice 0's slot: it starts from zero.
        add(4, 7);
        assert_eq!(sum(4, 1), 7);
        assert_eq!(sum(4, 4), 12, "slices 1 and 4");
        window.clear();
        assert_eq!(sum(4, 4), 0);
    }

    #[test]
    fn a_refused_update_writes_nothing_and_an_empty_ring_ignores_all() {
        let window = Window::with_slices(3);
        window.update(5, |_| Some(9));
        window.update(5, |p| (p < 9).then_some(p + 1));
        assert_eq!(window.fold(5, 3, 0, |acc, p| acc + p), 9);
        let empty = Window::with_slices(0);
        empty.update(1, |_| Some(1));
        assert_eq!(empty.fold(1, 1, 0, |acc, p| acc + p), 0);
    }

    /// A late update meets its slot already holding a newer slice: the
    /// newer counts stay, and the late one is dropped. One slot is the
    /// sharpest case: every slice's first update meets the last slice.
    #[test]
    fn a_late_update_leaves_a_newer_slice_alone() {
        let window = Window::with_slices(1);
        let add = |slice, n| window.update(slice, |p| Some(p + n));
        let sum = |slice| window.fold(slice, 1, 0, |acc, p| acc + p);
        add(1, 1);
        add(0, 1);
        assert_eq!(sum(1), 1, "slice 1 kept its count");
        assert_eq!(sum(0), 0, "the late count went nowhere");
        // Exactly as far ahead as a late writer may be left behind: newer.
        add(1 + AHEAD_MAX, 5);
        add(1, 1);
        assert_eq!(sum(1 + AHEAD_MAX), 5);
    }

    /// A tag further ahead than a late writer is left behind is one that
    /// wrapped: the slot is stale and starts afresh; an empty slot ahead
    /// (a fresh or cleared ring near the tag's end) takes the update.
    #[test]
    fn a_wrapped_tag_or_an_empty_slot_ahead_takes_the_update() {
        let window = Window::with_slices(1);
        let add = |slice, n| window.update(slice, |p| Some(p + n));
        let sum = |slice| window.fold(slice, 1, 0, |acc, p| acc + p);
        add(AHEAD_MAX + 1, 7);
        let wrapped = TAG_MASK + 1;
        add(wrapped, 1);
        assert_eq!(sum(wrapped), 1, "the stale 7 is gone");
        window.clear();
        add(TAG_MASK, 2);
        assert_eq!(sum(TAG_MASK), 2, "the cleared slot's tag 0 is no newer");
    }

    /// A tag comes round every 2^24 slices: a slot last written a whole
    /// cycle ago holds the tag of the slice now. Its counts are long past
    /// and stay gone, after a cycle of quiet as after one of writes that
    /// never landed in that slot (the rest of the ring written all along).
    #[test]
    fn counts_from_a_tag_cycle_ago_stay_gone() {
        let cycle = TAG_MASK + 1;
        let quiet = Window::with_slices(4);
        quiet.update(0, |_| Some(7));
        quiet.update(cycle, |p| Some(p + 1));
        assert_eq!(quiet.fold(cycle, 4, 0, |acc, p| acc + p), 1, "quiet");

        let busy = Window::with_slices(4);
        busy.update(1, |_| Some(7));
        for slice in (2..=cycle).step_by(2) {
            busy.update(slice, |_| Some(1));
        }
        assert_eq!(busy.fold(cycle + 1, 1, 0, |acc, p| acc + p), 0, "busy");
    }

    /// After more than a lap of quiet, T1 reads the lap swept for and is
    /// descheduled; T2 sweeps and publishes the lap, T3 sees it and counts
    /// without sweeping; then T1 sweeps for the lap it read. The counts of
    /// T2 and T3 stay, after a quiet that leaves their tags apart from the
    /// old ones as after one of a whole tag cycle, where only the lap T1
    /// finds published tells them apart.
    #[test]
    fn a_sweeper_descheduled_after_a_quiet_keeps_later_counts() {
        for quiet in [10 * 4, TAG_MASK + 1] {
            let window = Window::with_slices(4);
            window.update(1, |_| Some(7));
            let slice = quiet + 1;
            let swept = window.lap.load(Ordering::Acquire);
            window.update(slice, |p| Some(p + 1));
            window.update(slice, |p| Some(p + 1));
            window.catch_up_from(&window.slots, slice, swept);
            let sum = window.fold(slice, 4, 0, |acc, p| acc + p);
            assert_eq!(sum, 2, "after a quiet of {quiet} slices");
        }
    }

    /// A sweeper may not yet see the lap published by another (the slot
    /// words are `Relaxed`): it still leaves a slot written in the lap now
    /// alone, by its tag, and empties what the last sweep may have left.
    #[test]
    fn a_sweeper_blind_to_a_later_sweep_keeps_counts_of_the_lap_now() {
        let window = Window::with_slices(4);
        window.update(2, |_| Some(7));
        let slice = 10 * 4 + 1;
        let swept = window.lap.load(Ordering::Acquire);
        // A caller that saw the lap published counts without sweeping (so
        // the old 7 is still there for the late sweeper to empty).
        window.lap.store(10, Ordering::Release);
        window.update(slice, |p| Some(p + 1));
        let not_yet = AtomicU64::new(swept);
        Window::<Box<[AtomicU64]>>::sweep(&window.slots, &not_yet, slice, swept);
        assert_eq!(window.fold(slice, 4, 0, |acc, p| acc + p), 1);
        assert_eq!(window.slots[2].load(Ordering::Relaxed), 0, "the old 7");
    }

    #[test]
    fn tags_wrap_with_the_ring() {
        let window = Window::with_slices(10);
        let last = TAG_MASK;
        window.update(last, |_| Some(1));
        window.update(last + 1, |_| Some(2));
        assert_eq!(window.fold(last + 1, 2, 0, |acc, p| acc + p), 3);
        assert_eq!(window.fold(last + 1, 1, 0, |acc, p| acc + p), 2);
    }
}
