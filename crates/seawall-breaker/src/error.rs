use std::error::Error as StdError;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use seawall_core::hint::MAX_RETRY_HINT;
use seawall_core::{BoxError, Code, Failure, RouteId};

/// What a [`Breaker`](crate::Breaker) fails with: its own refusal of an
/// open route, or the inner service's error.
///
/// It is a [`std::error::Error`], so `?` takes it into a `BoxError`,
/// `Box<dyn Error>` or `anyhow::Error` (boxed whole, as std boxes every
/// error), and its [`source`](StdError::source) is the seawall [`Failure`]
/// behind it: the refusal's (code `circuit_open` or `route_cooling_down`,
/// action `failover` — `surface` for a route cooling after a quota wall
/// or rejected credentials —, its route and `retry_after` set;
/// [`CircuitOpen::as_failure`]) or the inner service's error itself. So
/// [`Failure::find`] and [`Failure::extract`] (which the retry and
/// fallback layers read errors with) see through the breaker.
///
/// A refusal stays a plain value, so refusing costs no allocation; its
/// `Failure` is built the first time something reads it. [`into_box`]
/// flattens instead of wrapping: a refusal becomes the boxed `Failure`
/// itself, an inner error the very box it came in, so
/// [`Failure::downcast`] sees it as if no breaker stood in between.
///
/// Its text says only that the breaker refused the call (and, for an open
/// circuit, when it probes next) or that the call through it failed; the
/// failure's own text follows in the source chain, which a printer of a
/// whole chain (`anyhow`'s `{:#}`) shows once.
///
/// [`into_box`]: BreakerError::into_box
#[derive(Debug)]
#[non_exhaustive]
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

    /// The error as seawall's layers carry errors, flattened: a refusal as
    /// its boxed [`Failure`], an inner error as the box it came in (not
    /// boxed again). `?` and `Into` box the `BreakerError` whole instead.
    pub fn into_box(self) -> BoxError {
        match self {
            BreakerError::Open(open) => Box::new(Failure::from(open)),
            BreakerError::Inner(error) => error,
        }
    }
}

/// Only the breaker's part: the text of the failure, its source, is not
/// repeated.
impl fmt::Display for BreakerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::Open(open) => {
                f.write_str("refused by the breaker")?;
                // A cooldown's failure says its time left in its message;
                // an open circuit's says nothing of the next probe.
                match (open.cooled_by, open.retry_after) {
                    (None, Some(after)) => write!(f, ", next probe in {} ms", after.as_millis()),
                    _ => Ok(()),
                }
            }
            BreakerError::Inner(_) => f.write_str("the call through the breaker failed"),
        }
    }
}

/// The source is the failure behind the error: the refusal's `Failure`, or
/// the inner error itself (whose own chain follows), so
/// [`Failure::find`] finds either.
impl StdError for BreakerError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            BreakerError::Open(open) => Some(open.as_failure()),
            BreakerError::Inner(error) => Some(&**error),
        }
    }
}

/// The breaker's refusal: which route, and how long until it lets a call
/// through (`None` while the route is isolated or cooling down until a
/// reset). Either the circuit is open (failures tripped it, or an operator
/// isolated it) or the route is cooling down after what it said last — a
/// quota wall, a rate limit's hint, rejected credentials
/// ([`cooled_by`](Self::cooled_by)) — or the call's model is cooling on
/// its own on the route ([`model`](Self::model)).
#[derive(Clone)]
pub struct CircuitOpen {
    route: RouteId,
    retry_after: Option<Duration>,
    cooled_by: Option<Code>,
    /// The model cooling on its own that refused the call: the breaker's
    /// own copy of the name, shared (no allocation).
    model: Option<Arc<str>>,
    /// The refusal as a `Failure`, built (and boxed) when first read: a
    /// refusal nobody inspects allocates nothing.
    failure: OnceLock<Box<Failure>>,
}

impl PartialEq for CircuitOpen {
    fn eq(&self, other: &Self) -> bool {
        self.route == other.route
            && self.retry_after == other.retry_after
            && self.cooled_by == other.cooled_by
            && self.model == other.model
    }
}

impl Eq for CircuitOpen {}

impl fmt::Debug for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitOpen")
            .field("route", &self.route)
            .field("retry_after", &self.retry_after)
            .field("cooled_by", &self.cooled_by)
            .field("model", &self.model)
            .finish()
    }
}

impl CircuitOpen {
    pub(crate) fn new(route: RouteId, retry_after: Option<Duration>) -> Self {
        CircuitOpen {
            route,
            retry_after,
            cooled_by: None,
            model: None,
            failure: OnceLock::new(),
        }
    }

    pub(crate) fn cooling(route: RouteId, cooled_by: Code, retry_after: Option<Duration>) -> Self {
        CircuitOpen {
            route,
            retry_after,
            cooled_by: Some(cooled_by),
            model: None,
            failure: OnceLock::new(),
        }
    }

    /// A refusal by `model`'s own cooldown on `route`.
    pub(crate) fn model_cooling(
        route: RouteId,
        model: Arc<str>,
        cooled_by: Code,
        retry_after: Option<Duration>,
    ) -> Self {
        CircuitOpen {
            model: Some(model),
            ..CircuitOpen::cooling(route, cooled_by, retry_after)
        }
    }

    /// The model whose own cooldown refused the call (a limit the provider
    /// keeps per model), when it was that and not the route's cooldown or
    /// circuit: the route's other models are still called. The refusal's
    /// text names it.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
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

    /// The refusal as the layers above see it: a transient `circuit_open`
    /// (or `route_cooling_down`) [`Failure`], action `failover`, with the
    /// route and `retry_after`; a `route_cooling_down` after a quota wall
    /// or rejected credentials is permanent, as they are (action
    /// `surface`: nothing to wait out on this route; its scope is still
    /// the route's, so a fallback moves on it). Built on the first call,
    /// then kept.
    pub fn as_failure(&self) -> &Failure {
        self.failure.get_or_init(|| Box::new(self.to_failure()))
    }

    fn to_failure(&self) -> Failure {
        // A route cooling after a quota wall or rejected credentials is
        // as permanent as what cooled it: its time left is no hint to
        // wait out (the operation that met the wall did not wait; a
        // guessed quota reset would have the next one sleep a minute to
        // meet it again). After a rate limit it is.
        let mut failure = Failure::route_refusal(self.cooled_by).with_route(self.route.clone());
        if self.cooled_by.is_some() {
            failure = failure.with_message(&self.to_string());
        }
        match self.retry_after {
            Some(after) => failure.with_retry_after(after),
            None => failure,
        }
    }
}

impl fmt::Display for CircuitOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cooled_by {
            Some(code) => {
                match &self.model {
                    Some(model) => write!(
                        f,
                        "model {model} cooling down on route {} after {code}",
                        self.route
                    )?,
                    None => write!(f, "route {} cooling down after {code}", self.route)?,
                }
                match self.retry_after {
                    // Learnt from a hint at the clamp (see
                    // `RouteBreaker::cooling`): a millisecond count would
                    // name a return the provider never gave.
                    Some(after) if after >= MAX_RETRY_HINT => {
                        f.write_str(", back in a week or more")
                    }
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
    fn from(mut open: CircuitOpen) -> Failure {
        match open.failure.take() {
            Some(failure) => *failure,
            None => open.to_failure(),
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
            "refused by the breaker, next probe in 1500 ms"
        );
        let failure = Failure::downcast(error.into_box()).unwrap();
        assert_eq!(failure.code(), Code::CircuitOpen);
        assert_eq!(failure.route(), Some(&route));
        assert_eq!(failure.retry_after(), Some(Duration::from_millis(1500)));
        assert_eq!(failure.action(), seawall_core::Action::Failover);
    }

    fn refusal() -> BreakerError {
        let route = RouteId::new("api.example.com");
        BreakerError::Open(CircuitOpen::new(route, Some(Duration::from_millis(1500))))
    }

    #[test]
    fn question_mark_boxes_it_whole_and_find_sees_the_failure_through_it() {
        fn refused() -> Result<(), BreakerError> {
            Err(refusal())
        }
        fn dyn_error() -> Result<(), Box<dyn StdError>> {
            refused()?;
            Ok(())
        }
        fn box_error() -> Result<(), BoxError> {
            refused()?;
            Ok(())
        }

        let error = dyn_error().unwrap_err();
        assert!(error.is::<BreakerError>());
        let failure = Failure::find(&*error).expect("the refusal's failure, as source");
        assert_eq!(failure.code(), Code::CircuitOpen);
        assert_eq!(failure.retry_after(), Some(Duration::from_millis(1500)));

        // What the retry and fallback layers do with what they are given.
        let extracted = Failure::extract(box_error().unwrap_err()).expect("through the chain");
        assert_eq!(extracted.code(), Code::CircuitOpen);
        assert_eq!(extracted.action(), seawall_core::Action::Failover);
    }

    #[test]
    fn an_inner_error_is_the_source() {
        let inner: BoxError = Box::new(Failure::new(Code::Overloaded));
        let error: BoxError = BreakerError::Inner(inner).into();
        assert_eq!(Failure::find(&*error).unwrap().code(), Code::Overloaded);
        assert_eq!(error.to_string(), "the call through the breaker failed");

        let plain: BoxError = "connection reset".into();
        let error: BoxError = BreakerError::Inner(plain).into();
        assert!(Failure::find(&*error).is_none());
        assert_eq!(error.source().unwrap().to_string(), "connection reset");
    }

    /// The breaker's text is its own part only: the failure's, its
    /// source's, is not said again before it (a printer of the chain
    /// would show it twice, three times for a cooldown, whose failure's
    /// message is the refusal's text).
    #[test]
    fn its_text_does_not_repeat_its_source() {
        let route = RouteId::new("api.example.com");
        let inner: BoxError = Box::new(Failure::new(Code::Overloaded).with_status(529));
        for error in [
            BreakerError::Open(CircuitOpen::cooling(
                route.clone(),
                Code::QuotaExhausted,
                None,
            )),
            BreakerError::Open(CircuitOpen::new(route, Some(Duration::from_millis(1500)))),
            BreakerError::Inner(inner),
        ] {
            let source = error.source().expect("the failure").to_string();
            let own = error.to_string();
            assert!(!own.contains(&source), "{own}: {source}");
            if let Some(message) = Failure::find(&error).unwrap().message() {
                assert!(!own.contains(message), "{own}: {source}");
            }
        }
    }

    #[test]
    fn a_cooldown_refusal_keeps_its_message_and_code() {
        let route = RouteId::new("api.example.com");
        let open = CircuitOpen::cooling(route, Code::QuotaExhausted, None);
        let read = open.as_failure().clone();
        assert_eq!(read.code(), Code::RouteCoolingDown);
        assert_eq!(
            read.message(),
            Some("route api.example.com cooling down after quota_exhausted, until reset")
        );
        let converted = Failure::from(open);
        assert_eq!(converted.code(), read.code());
        assert_eq!(converted.message(), read.message());
    }

    /// A cooldown learnt from a hint at the clamp names no return: its
    /// refusal carries the clamp, and says "a week or more".
    #[test]
    fn a_cooldown_refusal_at_the_clamp_names_no_return() {
        let route = RouteId::new("api.example.com");
        let open = CircuitOpen::cooling(route, Code::RateLimited, Some(MAX_RETRY_HINT));
        let failure = open.as_failure();
        assert_eq!(failure.retry_after(), Some(MAX_RETRY_HINT));
        assert_eq!(
            failure.message(),
            Some("route api.example.com cooling down after rate_limited, back in a week or more")
        );
    }

    /// A cooldown is as permanent as what caused it: after a quota wall or
    /// rejected credentials there is nothing to wait out on the route (its
    /// scope still moves a fallback on); after a rate limit there is.
    #[test]
    fn a_cooldown_refusal_is_as_permanent_as_its_cause() {
        use seawall_core::{Action, Class};
        let route = RouteId::new("api.example.com");
        let left = Some(Duration::from_secs(55));
        for (cause, class, action) in [
            (Code::QuotaExhausted, Class::Permanent, Action::Surface),
            (Code::Auth, Class::Permanent, Action::Surface),
            (Code::RateLimited, Class::Transient, Action::Failover),
        ] {
            let open = CircuitOpen::cooling(route.clone(), cause, left);
            let failure = open.as_failure();
            assert_eq!(failure.code(), Code::RouteCoolingDown, "{cause}");
            assert_eq!(
                (failure.class(), failure.action()),
                (class, action),
                "{cause}"
            );
            assert_eq!(failure.retry_after(), left, "the time left is said");
            assert!(failure.moves_route(), "{cause}: another route may answer");
        }
    }
}
