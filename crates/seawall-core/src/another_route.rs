//! The signal a route set gives the retry ladder above it: this member
//! failed, another member can take the next attempt.

use std::error::Error as StdError;
use std::fmt;

use crate::Failure;

/// The error a service that chooses among several routes per request (a
/// route set) returns when the member it chose failed in a way that
/// condemns only that member ([`Failure::moves_route`]) and another member
/// can take the next attempt.
///
/// It is the per-failure counterpart of [`OtherRoutes`](crate::OtherRoutes):
/// `OtherRoutes` tells a ladder, before it starts, that a layer *outside*
/// can send the request elsewhere; `AnotherRoute` tells it, after an
/// attempt, that the service *inside* will. [`Action::decide`](crate::Action::decide)
/// is untouched: the wrapped failure keeps its class, code and action, so
/// the receipt says what the member said. A retry ladder that reads the
/// signal does not end on a verdict that condemns only the member — a
/// permanent route-scoped failure (`quota_exhausted`, `auth`, `not_found`),
/// a `failover` action, a hint past its cap, a zero-byte timeout — and
/// makes its next attempt at once; a short transient failure is retried
/// after the usual backoff (the member's own hint no longer applies: the
/// next attempt goes elsewhere).
///
/// Its text is the signal only; its [`source`](StdError::source) is the
/// failure (whose text a printer of the chain shows next), so
/// [`Failure::find`] and [`Failure::extract`] see through it; a layer that
/// does not know the signal sees the member's failure.
#[derive(Debug, Clone)]
pub struct AnotherRoute {
    failure: Failure,
}

impl AnotherRoute {
    /// `failure`, from a member that another member can stand in for.
    pub fn new(failure: Failure) -> Self {
        AnotherRoute { failure }
    }

    /// The member's failure.
    pub fn failure(&self) -> &Failure {
        &self.failure
    }

    /// The member's failure, owned.
    pub fn into_failure(self) -> Failure {
        self.failure
    }
}

impl fmt::Display for AnotherRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The member's failure is the source: a printer of the chain
        // shows it after this.
        f.write_str("another route can be tried")
    }
}

impl StdError for AnotherRoute {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BoxError, Code};

    #[test]
    fn the_failure_is_found_through_the_signal() {
        let boxed: BoxError = Box::new(AnotherRoute::new(Failure::new(Code::Auth)));
        assert_eq!(Failure::find(&*boxed).unwrap().code(), Code::Auth);
        assert_eq!(Failure::extract(boxed).unwrap().code(), Code::Auth);
    }

    /// The signal says only itself: the failure's text is its source's,
    /// which a printer of the chain shows next, not twice.
    #[test]
    fn its_text_does_not_repeat_the_failure() {
        let failure = Failure::new(Code::Auth).with_route(crate::RouteId::new("r"));
        let signal = AnotherRoute::new(failure.clone());
        assert!(
            !signal.to_string().contains(&failure.to_string()),
            "{signal}"
        );
        let source = StdError::source(&signal).expect("the failure");
        assert_eq!(source.to_string(), failure.to_string());
    }
}
