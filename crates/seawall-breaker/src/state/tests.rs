//! The route breaker's private arithmetic: a window bucket's halving,
//! the breaker's `Debug`, a cooldown probe's ticket, and a probe the
//! circuit refuses.

use super::*;
use crate::policy::Trip;

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
    RouteBreaker::new(RouteId::new("api.example.com"), Arc::new(policy), false)
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
    let wall = Failure::new(Code::QuotaExhausted).with_retry_after(Duration::from_secs(1));
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
