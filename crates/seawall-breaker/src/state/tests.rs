//! The route breaker's private arithmetic: a window bucket's halving,
//! the breaker's `Debug`, a cooldown probe's ticket, and a probe the
//! circuit refuses; and the interleavings of two calls that a thread
//! preempted in the middle of a transition lets happen, played in order.

use std::cell::RefCell;

use seawall_core::BoxError;

use super::*;
use crate::policy::Trip;
use crate::shared::Permit;

/// Where a test plays another call's step in the middle of one of the
/// breaker's own, as a thread preempted there would let it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gap {
    /// An admission's state decision is about to start.
    Admitting,
    /// A trial's close, or a reset, has just published the new word.
    Swapped,
}

type Step = Box<dyn FnOnce(&RouteBreaker)>;

thread_local! {
    /// The step left for a gap on this thread, played once.
    static STEP: RefCell<Option<(Gap, Step)>> = const { RefCell::new(None) };
}

/// Plays the step left for `gap` on this thread, if any.
pub(super) fn between(breaker: &RouteBreaker, gap: Gap) {
    let step = STEP.with(|step| {
        let mut step = step.borrow_mut();
        match step.take() {
            Some((at, play)) if at == gap => Some(play),
            other => {
                *step = other;
                None
            }
        }
    });
    if let Some(play) = step {
        play(breaker);
    }
}

/// Leaves `step` to be played at the next `gap` on this thread.
fn in_the_gap(gap: Gap, step: impl FnOnce(&RouteBreaker) + 'static) {
    STEP.with(|left| *left.borrow_mut() = Some((gap, Box::new(step))));
}

/// Whether the step left for a gap was played.
fn gap_played() -> bool {
    STEP.with(|left| left.borrow().is_none())
}

fn breaker(trip: Trip) -> RouteBreaker {
    let policy = Policy {
        trip: TripRule::from_trip(trip),
        trials: 1,
        close_after: 1,
        break_duration: BreakDuration::default(),
        rate_limited_counts: false,
        epoch: Instant::now(),
        on_transition: None,
        random: Random::Thread,
    };
    RouteBreaker::new(
        RouteId::new("api.example.com"),
        Arc::new(policy),
        Some(false),
    )
}

/// A full bucket halves its counts and counts on: its share stays, more
/// calls neither wrap its call count to zero nor spill into its failure
/// count, and failures after it still count.
#[test]
fn a_full_bucket_halves_instead_of_spilling() {
    let breaker = breaker(Trip::default());
    for _ in 0..COUNT_MAX {
        breaker.count(7, false);
    }
    assert_eq!(breaker.window(7, 1), (COUNT_MAX, 0));
    breaker.count(7, true);
    assert_eq!(breaker.window(7, 1), (COUNT_MAX / 2 + 1, 1));
    breaker.count(7, false);
    assert_eq!(breaker.window(7, 1), (COUNT_MAX / 2 + 2, 1));
    // Its neighbour counts on as usual.
    breaker.count(8, true);
    assert_eq!(breaker.window(8, 1), (1, 1));
    assert_eq!(breaker.window(8, 2), (COUNT_MAX / 2 + 3, 2));
    // All failures: the halvings keep failures within calls, and the
    // share climbs towards one.
    for _ in 0..3 * COUNT_MAX {
        breaker.count(7, true);
    }
    let (calls, failures) = breaker.window(7, 1);
    assert!(
        calls <= COUNT_MAX && failures <= calls,
        "{calls} {failures}"
    );
    assert!(failures as f64 >= 0.9 * calls as f64, "{calls} {failures}");
}

/// One bucket over a long window, filled by a healthy route's successes,
/// then an outage: the ratio rule still opens the breaker on the
/// failures, where a bucket that stopped counting at its maximum never
/// saw them.
#[tokio::test(start_paused = true)]
async fn a_full_bucket_still_trips_on_the_failures_after_it() {
    let breaker = breaker(Trip::FailureRatio {
        ratio: 0.5,
        window: Duration::from_secs(3600),
        buckets: 1,
        min_calls: 20,
    });
    let slice = breaker.policy.now_ms() / 3_600_000;
    // The bucket's fill, without a million admissions.
    for _ in 0..COUNT_MAX {
        breaker.count(slice, false);
    }
    let mut failures = 0u64;
    while breaker.state() == BreakerState::Closed && failures <= COUNT_MAX {
        let ticket = breaker.admit().unwrap();
        breaker.record(ticket, Outcome::Failure);
        failures += 1;
    }
    assert_eq!(
        breaker.state(),
        BreakerState::Open,
        "after {failures} failures"
    );
    // Half the halved bucket, not a million: the outage counts from the
    // bucket's share, not from its frozen count.
    assert!(failures <= COUNT_MAX / 2 + 1, "{failures}");
}

#[test]
fn debug_shows_the_route_and_state() {
    let breaker = breaker(Trip::Consecutive { failures: 1 });
    assert_eq!(
        format!("{breaker:?}"),
        r#"RouteBreaker { route: "api.example.com", state: Closed }"#
    );
    breaker.isolate();
    assert!(format!("{breaker:?}").ends_with("state: Isolated }"));
}

/// A cooldown's probe is a mark on the call's ticket: it leaves the
/// spell's part (closed or trial, and its period) as it was.
#[test]
fn a_probes_ticket_keeps_its_spell() {
    for ticket in [Ticket::closed(41), Ticket::trial(41), Ticket::trial(0)] {
        let probe = ticket.probing();
        assert!(probe.is_probe() && !ticket.is_probe());
        assert_eq!(probe.is_trial(), ticket.is_trial());
        assert_eq!(probe.without_probe(), ticket);
        let period = |ticket: Ticket| match ticket.spell() {
            Spell::Closed(period) => (false, period),
            Spell::Trial(period) => (true, period),
        };
        assert_eq!(period(probe), period(ticket));
    }
}

/// A cooldown over while the circuit is open: the call the circuit
/// refuses is no probe, so the probe is left to the next call the circuit
/// lets through (a trial, which is then the probe too).
#[tokio::test(start_paused = true)]
async fn a_call_the_open_circuit_refuses_leaves_the_probe_to_the_next() {
    let breaker = breaker(Trip::Consecutive { failures: 1 });
    let ticket = breaker.admit().unwrap();
    breaker.record(ticket, Outcome::Failure);
    assert_eq!(breaker.state(), BreakerState::Open);
    // A wall whose reset is a second away (one with no known reset
    // cools a minute at least, `DEFAULT_QUOTA_COOLDOWN`, past the open
    // circuit's break).
    let wall = Failure::new(Code::QuotaExhausted)
        .with_reset_at(std::time::SystemTime::now() + Duration::from_secs(1));
    breaker.learn(&wall, breaker.resets(), false);
    tokio::time::advance(Duration::from_secs(1)).await;

    let refusal = breaker.admit().unwrap_err();
    assert_eq!(refusal.cooled_by(), None, "refused by the circuit");
    assert_eq!(breaker.cooling(), None, "no probe out");

    tokio::time::advance(BreakDuration::default().max).await;
    let ticket = breaker.admit().expect("the trial");
    assert!(ticket.is_trial() && ticket.is_probe());
    let refusal = breaker.admit().unwrap_err();
    assert_eq!(refusal.cooled_by(), Some(Code::QuotaExhausted));
    assert_eq!(refusal.retry_after(), Some(PROBE_RECHECK));
    breaker.settle_probe(breaker.resets(), true);
    breaker.record(ticket, Outcome::Success);
    assert_eq!(
        (breaker.state(), breaker.cooling()),
        (BreakerState::Closed, None)
    );
    assert!(!breaker.admit().unwrap().is_probe());
}

/// A trial closes the breaker, or the handle resets it, and a call of the
/// new spell fails before the closer goes on: one failure, which leaves
/// the breaker closed. The outage's counts, cleared only after the new
/// spell was published, tripped it again at once.
#[tokio::test(start_paused = true)]
async fn one_failure_right_after_a_close_leaves_it_closed() {
    let trips = [
        Trip::Consecutive { failures: 3 },
        Trip::FailureRatio {
            ratio: 0.5,
            window: Duration::from_secs(60),
            buckets: 6,
            min_calls: 3,
        },
    ];
    for trip in trips {
        for by_reset in [false, true] {
            let breaker = breaker(trip);
            for _ in 0..3 {
                let ticket = breaker.admit().unwrap();
                breaker.record(ticket, Outcome::Failure);
            }
            assert_eq!(breaker.state(), BreakerState::Open, "{trip:?}");
            in_the_gap(Gap::Swapped, |breaker| {
                let ticket = breaker.admit().expect("the new spell's call");
                breaker.record(ticket, Outcome::Failure);
            });
            if by_reset {
                breaker.reset();
            } else {
                // The first break, well within the window: the outage's
                // counts are still in it.
                tokio::time::advance(BreakDuration::default().base).await;
                let trial = breaker.admit().unwrap();
                assert!(trial.is_trial());
                breaker.record(trial, Outcome::Success);
            }
            assert!(gap_played());
            assert_eq!(
                breaker.state(),
                BreakerState::Closed,
                "{trip:?}, by reset: {by_reset}"
            );
        }
    }
}

/// A call of a closed spell already over fails late: it neither counts
/// towards the new spell's trip nor resets the new spell's count.
#[test]
fn a_late_failure_of_an_earlier_spell_counts_nowhere() {
    let breaker = breaker(Trip::Consecutive { failures: 3 });
    let old = breaker.admit().unwrap();
    breaker.reset();
    let Spell::Closed(old_period) = old.spell() else {
        panic!("a closed ticket");
    };
    for _ in 0..2 {
        let ticket = breaker.admit().unwrap();
        breaker.record(ticket, Outcome::Failure);
    }
    // As if its call read its spell's word just before the reset's swap.
    assert_eq!(breaker.consecutive_failures(old_period, true), 0);
    assert_eq!(breaker.state(), BreakerState::Closed);
    let ticket = breaker.admit().unwrap();
    breaker.record(ticket, Outcome::Failure);
    assert_eq!(breaker.state(), BreakerState::Open, "the third in a row");
}

/// An operator's reset lands while a call is being admitted: the call
/// counts as admitted before it, and its 401 (for the key the reset
/// replaced) does not cool the route just reset. A call admitted after
/// the reset is heard.
#[test]
fn a_401_of_a_call_admitted_across_a_reset_cools_nothing() {
    let breaker = Arc::new(breaker(Trip::default()));
    let rejected: BoxError = Box::new(Failure::new(Code::Auth));
    in_the_gap(Gap::Admitting, RouteBreaker::reset);
    let permit = Permit::admit(&breaker, &http::Request::new(())).unwrap();
    assert!(gap_played());
    permit.fail(&rejected);
    assert_eq!(breaker.cooling(), None);

    let permit = Permit::admit(&breaker, &http::Request::new(())).unwrap();
    permit.fail(&rejected);
    assert_eq!(breaker.cooling().map(|(code, _)| code), Some(Code::Auth));
}
