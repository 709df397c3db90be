use std::fmt;
use std::time::Duration;

use seawall_core::{BoxError, Code, Failure, RouteId};

/// What a [`Breaker`](crate::Breaker) fails with: its own refusal of an
/// open route, or the inner service's error.
///
/// A refusal stays a plain value, so refusing costs no allocation; it
/// becomes a boxed seawall [`Failure`] (code `circuit_open`, action
/// `failover`, its route and `retry_after` set) only when converted into a
/// [`BoxError`], which is what a layer above does with it, and what `?`
/// does in a function returning `BoxError`. An inner error converts back to
/// the very box it came in: nothing is boxed twice, and
/// [`Failure::find`]/[`Failure::downcast`] see it as if no breaker stood
/// in between.
///
/// It is not itself a [`std::error::Error`] on purpose: std converts every
/// `Error` into a `BoxError` by boxing it whole, which would put a refusal's
/// `Failure` and an inner error one level deeper, out of
/// [`Failure::downcast`]'s reach. Matching on it, or `into_box`, is the
/// way in.
#[derive(Debug)]
pub enum BreakerError {
    /// The route's circuit is open or isolated: the inner service was not
    /// called.
    Open(CircuitOpen),
    /// The inner service failed (counted or not, as the breaker's rules
    /// say).
    Inner(BoxError),
}

impl BreakerError {
    /// The refusal, when the breaker refused the call.
    pub fn as_open(&self) -> Option<&CircuitOpen> {
        match self {
            BreakerError::Open(open) => Some(open),
            BreakerError::Inner(_) => None,
        }
    }

    /// The error as seawall's layers carry errors.
    pub fn into_box(self) -> BoxError {
        self.into()
    }
}

impl fmt::Display for BreakerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::Open(open) => open.fmt(f),
            BreakerError::Inner(error) => error.fmt(f),
        }
    }
}

impl From<BreakerError> for BoxError {
    fn from(error: BreakerError) -> BoxError {
        match error {
            BreakerError::Open(open) => Box::new(Failure::from(open)),
            BreakerError::Inner(error) => error,
        }
    }
}

/// The breaker's refusal: which route, and how long until it lets a call
/// through (`None` while the route is isolated or cooling down until a
/// reset). Either the circuit is open (failures tripped it, or an operator
/// isolated it) or the route is cooling down after what it said last — a
/// quota wall, a rate limit's hint, rejected credentials
/// ([`cooled_by`](Self::cooled_by)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitOpen {
    route: RouteId,
    retry_after: Option<Duration>,
    cooled_by: Option<Code>,
}

impl CircuitOpen {
    pub(crate) fn new(route: RouteId, retry_after: Option<Duration>) -> Self {
        CircuitOpen {
            route,
            retry_after,
            cooled_by: None,
        }
    }

    pub(crate) fn cooling(route: RouteId, cooled_by: Code, retry_after: Option<Duration>) -> Self {
        CircuitOpen {
            route,
            retry_after,
            cooled_by: Some(cooled_by),
        }
    }

    /// The failure that cooled the route down, when the refusal is a
    /// cooldown rather than an open circuit.
    pub fn cooled_by(&self) -> Option<Code> {
        self.cooled_by
    }

    /// The refused route.
    pub fn route(&self) -> &RouteId {
        &self.route
    }

    /// The time until the next probe may go through.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cooled_by {
            Some(code) => {
                write!(f, "route {} cooling down after {code}", self.route)?;
                match self.retry_after {
                    Some(after) => write!(f, ", back in {} ms", after.as_millis()),
                    None => f.write_str(", until reset"),
                }
            }
            None => {
                write!(f, "circuit open for route {}", self.route)?;
                if let Some(after) = self.retry_after {
                    write!(f, ", next probe in {} ms", after.as_millis())?;
                }
                Ok(())
            }
        }
    }
}

impl From<CircuitOpen> for Failure {
    fn from(open: CircuitOpen) -> Failure {
        let message = open.cooled_by.map(|_| open.to_string());
        let code = match open.cooled_by {
            Some(_) => Code::RouteCoolingDown,
            None => Code::CircuitOpen,
        };
        let mut failure = Failure::new(code).with_route(open.route);
        if let Some(message) = message {
            failure = failure.with_message(&message);
        }
        match open.retry_after {
            Some(after) => failure.with_retry_after(after),
            None => failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inner_error_converts_back_to_the_same_box() {
        let inner: BoxError = Box::new(Failure::new(Code::Overloaded));
        let address = &*inner as *const _ as *const u8;
        let back = BreakerError::Inner(inner).into_box();
        assert_eq!(&*back as *const _ as *const u8, address, "not boxed again");
        assert_eq!(Failure::downcast(back).unwrap().code(), Code::Overloaded);
    }

    #[test]
    fn a_refusal_converts_to_a_circuit_open_failure() {
        let route = RouteId::new("api.example.com");
        let refusal = CircuitOpen::new(route.clone(), Some(Duration::from_millis(1500)));
        let error = BreakerError::Open(refusal);
        assert_eq!(
            error.to_string(),
            "circuit open for route api.example.com, next probe in 1500 ms"
        );
        let failure = Failure::downcast(error.into_box()).unwrap();
        assert_eq!(failure.code(), Code::CircuitOpen);
        assert_eq!(failure.route(), Some(&route));
        assert_eq!(failure.retry_after(), Some(Duration::from_millis(1500)));
        assert_eq!(failure.action(), seawall_core::Action::Failover);
    }
}
