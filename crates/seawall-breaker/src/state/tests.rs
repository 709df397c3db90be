//! The route breaker's private arithmetic: a window bucket's saturation and
//! the breaker's `Debug`.

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

/// A bucket stops counting at its maximum: more calls neither wrap its
/// call count to zero nor spill into its failure count.
#[test]
fn a_full_bucket_saturates_instead_of_spilling() {
    let breaker = breaker(Trip::default());
    for _ in 0..COUNT_MAX {
        breaker.count(7, false);
    }
    assert_eq!(breaker.window(7, 1), (COUNT_MAX, 0));
    breaker.count(7, true);
    breaker.count(7, false);
    assert_eq!(breaker.window(7, 1), (COUNT_MAX, 0));
    // Its neighbour counts on as usual.
    breaker.count(8, true);
    assert_eq!(breaker.window(8, 1), (1, 1));
    assert_eq!(breaker.window(8, 2), (COUNT_MAX + 1, 1));
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
