use std::time::Duration;

use tokio::time::Instant;

/// The latest instant by which an operation (or one attempt of it) must be
/// done. Carried in the request extensions.
///
/// It uses tokio's clock, so tests on a paused clock see it move with
/// `tokio::time::advance`. A deadline only ever shrinks:
/// [`Deadline::narrow`] keeps the earlier of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline(Instant);

/// How far in the future "no deadline" lies when a duration would overflow
/// the clock: a century is beyond any operation.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl Deadline {
    /// A deadline at an instant.
    pub fn at(instant: Instant) -> Self {
        Deadline(instant)
    }

    /// A deadline `timeout` from now. A timeout too large for the clock is
    /// clamped (a century) instead of panicking.
    pub fn after(timeout: Duration) -> Self {
        Deadline::after_from(Instant::now(), timeout)
    }

    /// A deadline `timeout` after `start`, clamped like [`Deadline::after`]
    /// when the sum would overflow the clock.
    pub fn after_from(start: Instant, timeout: Duration) -> Self {
        Deadline(
            start
                .checked_add(timeout)
                .or_else(|| start.checked_add(FAR_FUTURE))
                .unwrap_or(start),
        )
    }

    /// The instant of the deadline.
    pub fn instant(self) -> Instant {
        self.0
    }

    /// Time left before the deadline; zero once it passed.
    pub fn remaining(self) -> Duration {
        self.0.saturating_duration_since(Instant::now())
    }

    /// True once the deadline has passed.
    pub fn is_expired(self) -> bool {
        Instant::now() >= self.0
    }

    /// The earlier of the two deadlines.
    pub fn narrow(self, other: Deadline) -> Deadline {
        self.min(other)
    }

    /// The deadline in a request's extensions, if any.
    pub fn of<B>(request: &http::Request<B>) -> Option<Deadline> {
        request.extensions().get::<Deadline>().copied()
    }
}

/// The instant by which a caller stops waiting for an answer to *begin*:
/// not a bound on the answer itself. Carried in the request extensions by
/// a caller that gives up on a response whose head has not come (an SDK's
/// read timeout, as `seawall gateway` reads it from the request) but
/// reads a stream that has begun for as long as it runs.
///
/// The operation's deadline layer (`seawall-deadline`'s total bound)
/// narrows the [`Deadline`] its inner layers plan within to it, so a retry
/// ladder never sleeps past it, and fails the call with
/// `deadline_exceeded` when no answer has begun by then; the response
/// body stays bounded by the operation's own deadline only, and a
/// propagated wire timeout says the operation's deadline, not this. A
/// stream guard holding a stream back for its first content hands it on
/// just before this instant once the provider shows it is working
/// (thinking, a role delta): that answer has begun, as the caller would
/// read it from the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AnswerBy(pub Deadline);

/// The operation's own deadline (none when it has none) beside a
/// [`Deadline`] narrowed to the caller's [`AnswerBy`]: kept in the request
/// extensions so a request sent once the answer began can be held to the
/// operation's deadline again ([`AnswerBy::lift`]).
#[derive(Debug, Clone, Copy)]
struct NarrowedFrom(Option<Deadline>);

impl AnswerBy {
    /// The message of the `deadline_exceeded` failure the deadline layer
    /// gives when this bound passed before the operation's own deadline:
    /// the caller who set it can tell its bound from the operation's
    /// ([`passed`](Self::passed)).
    pub const PASSED: &'static str =
        "no answer began by the time the caller stops waiting for one (its AnswerBy)";

    /// The bound in a request's extensions, if any.
    pub fn of<B>(request: &http::Request<B>) -> Option<AnswerBy> {
        request.extensions().get::<AnswerBy>().copied()
    }

    /// Keeps `operation`, the operation's own deadline (`None`: it has
    /// none), in `request` while its [`Deadline`] is narrowed to this
    /// bound, so [`AnswerBy::lift`] can put it back. The operation's
    /// deadline layer does this when it narrows.
    pub fn keep_operation<B>(request: &mut http::Request<B>, operation: Option<Deadline>) {
        request.extensions_mut().insert(NarrowedFrom(operation));
    }

    /// The operation's own deadline a deadline layer kept on `request`
    /// when it narrowed the request's [`Deadline`] to this bound
    /// ([`AnswerBy::keep_operation`]): `None` when none did (the
    /// `Deadline` is then the operation's), `Some(None)` when the
    /// operation has no deadline of its own. A deadline layer inside
    /// bounds the operation (and its response body) by this, not by the
    /// narrowed `Deadline`.
    pub fn operation<B>(request: &http::Request<B>) -> Option<Option<Deadline>> {
        request
            .extensions()
            .get::<NarrowedFrom>()
            .map(|&NarrowedFrom(operation)| operation)
    }

    /// Ends the caller's wait for the answer to begin on `request`: drops
    /// its `AnswerBy` and gives its [`Deadline`] back the operation's own
    /// value, the one the deadline layer narrowed to this bound
    /// ([`AnswerBy::keep_operation`]). For a request sent once an answer
    /// began, such as a resumed stream's continuation: the caller reads a
    /// begun answer for as long as the operation runs.
    pub fn lift<B>(request: &mut http::Request<B>) {
        let extensions = request.extensions_mut();
        extensions.remove::<AnswerBy>();
        match extensions.remove::<NarrowedFrom>() {
            Some(NarrowedFrom(Some(operation))) => {
                extensions.insert(operation);
            }
            Some(NarrowedFrom(None)) => {
                extensions.remove::<Deadline>();
            }
            None => {}
        }
    }

    /// Whether `failure` is this bound passing, not the operation's
    /// deadline.
    pub fn passed(failure: &crate::Failure) -> bool {
        failure.code() == crate::Code::DeadlineExceeded && failure.message() == Some(Self::PASSED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn remaining_moves_with_the_paused_clock() {
        let deadline = Deadline::after(Duration::from_secs(10));
        assert_eq!(deadline.remaining(), Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(deadline.remaining(), Duration::from_secs(6));
        tokio::time::advance(Duration::from_secs(7)).await;
        assert_eq!(deadline.remaining(), Duration::ZERO);
        assert!(deadline.is_expired());
    }

    #[tokio::test(start_paused = true)]
    async fn narrow_keeps_the_earlier_and_huge_timeouts_do_not_panic() {
        let near = Deadline::after(Duration::from_secs(1));
        let far = Deadline::after(Duration::MAX);
        assert_eq!(near.narrow(far), near);
        assert_eq!(far.narrow(near), near);
        assert!(far.remaining() > Duration::from_secs(365 * 24 * 3600));
    }

    #[tokio::test(start_paused = true)]
    async fn lift_puts_back_the_operations_deadline_and_drops_the_bound() {
        let operation = Deadline::after(Duration::from_secs(60));
        let answer_by = Deadline::after(Duration::from_secs(3));
        let narrowed = |operation: Option<Deadline>| {
            let mut request = http::Request::new(());
            request.extensions_mut().insert(AnswerBy(answer_by));
            request.extensions_mut().insert(answer_by);
            AnswerBy::keep_operation(&mut request, operation);
            request
        };
        let mut request = narrowed(Some(operation));
        assert_eq!(AnswerBy::operation(&request), Some(Some(operation)));
        AnswerBy::lift(&mut request);
        assert_eq!(AnswerBy::operation(&request), None);
        assert_eq!(Deadline::of(&request), Some(operation));
        assert_eq!(AnswerBy::of(&request), None);
        let mut request = narrowed(None);
        assert_eq!(AnswerBy::operation(&request), Some(None));
        AnswerBy::lift(&mut request);
        assert_eq!(Deadline::of(&request), None);
        // A deadline no layer narrowed is the caller's own: it stays.
        let mut request = http::Request::new(());
        request.extensions_mut().insert(AnswerBy(answer_by));
        request.extensions_mut().insert(operation);
        AnswerBy::lift(&mut request);
        assert_eq!(Deadline::of(&request), Some(operation));
        assert_eq!(AnswerBy::of(&request), None);
    }

    #[tokio::test(start_paused = true)]
    async fn after_from_counts_from_its_start_and_clamps_like_after() {
        let start = Instant::now();
        tokio::time::advance(Duration::from_secs(3)).await;
        let deadline = Deadline::after_from(start, Duration::from_secs(10));
        assert_eq!(deadline.instant(), start + Duration::from_secs(10));
        assert_eq!(deadline.remaining(), Duration::from_secs(7));
        let far = Deadline::after_from(start, Duration::MAX);
        assert_eq!(far.instant(), start + FAR_FUTURE);
    }
}
