//! Whom a failure condemns: the request, or only the route it went to.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::{Action, Class, Code, Failure};

/// Whether another route could answer where this one failed.
///
/// [`Action::decide`](crate::Action::decide) answers "what now, on this
/// route?" and stays the same whatever routes exist: a caller with one
/// route sees exactly what it always saw. The scope answers the question
/// only a layer that knows other routes asks — the fallback chain, a route
/// set — "would another route fail the same way?":
///
/// | scope | codes | why |
/// |---|---|---|
/// | `Request` | `context_too_long`, `bad_request`, `request_too_large`, `answer_too_large`, `refused`, `content_filtered`, `bad_arguments`, `cancelled`, `deadline_exceeded`, `unknown` | the same request fails anywhere, or nobody is waiting; `unknown` fails closed |
/// | `Route` | `quota_exhausted`, `auth`, `not_found`, `redirected`, `rate_limited`, `circuit_open`, `route_cooling_down`, `provider_unavailable`, `overloaded`, timeouts, `transport`, `empty_response`, `protocol_violation`, `budget_exhausted` | one account, key, deployment or host is at fault; another can answer |
///
/// Interruptions after content (`stream_interrupted`, `truncated`) have
/// `Route` scope too — but content seen wins: nothing moves after content
/// reached the caller, whatever the scope.
///
/// One `Request`-scoped failure moves all the same: `request_too_large`
/// answered with a 429, a request over the route account's per-minute
/// token limit, which another account may not have
/// ([`Failure::moves_route`]). It stays `Request` scope: the route is
/// fine for smaller requests.
///
/// Precedence between retrying and moving, for the layers that can move:
///
/// | failure | on the same route | with another route |
/// |---|---|---|
/// | transient, short wait (a brief 503, a 429 whose hint fits the ladder's backoff cap) | retry | retry on the same route first |
/// | a long wait (a hint past the ladder's cap, a quota wall) | surface | move at once |
/// | permanent, `Route` scope (`quota_exhausted`, `auth`, `not_found`, `redirected`) | surface | move at once |
/// | an attempt's `timeout` with no byte of an answer | retry, then fail over on the second | move after the first |
/// | `first_byte_timeout` (headers, then nothing) | fail over after the first (action `failover`: with no other route, the caller gets it) | move after the first |
/// | `Request` scope | as `Action::decide` says | never move (but a 429 `request_too_large`: move at once) |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Any route would fail the same way.
    Request,
    /// Only this route is at fault.
    Route,
}

impl Scope {
    /// The scope of a failure with `code`.
    pub const fn of(code: Code) -> Scope {
        match code {
            Code::ContextTooLong
            | Code::BadRequest
            | Code::RequestTooLarge
            | Code::AnswerTooLarge
            | Code::Refused
            | Code::ContentFiltered
            | Code::BadArguments
            | Code::Cancelled
            | Code::DeadlineExceeded
            | Code::Unknown => Scope::Request,
            _ => Scope::Route,
        }
    }

    /// The stable name: `request` or `route`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Request => "request",
            Scope::Route => "route",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Failure {
    /// Whom this failure condemns: see [`Scope`].
    pub fn scope(&self) -> Scope {
        Scope::of(self.code())
    }

    /// True when a layer that knows other routes should move this request
    /// to one now: the route is at fault, nothing reached the caller, and
    /// either the route said it will not answer soon (a permanent verdict, a
    /// quota wall, a wait the ladder would not make) or it answered with
    /// silence (a zero-byte timeout, an open circuit, a cooldown).
    ///
    /// A transient failure whose action says to leave it be (the provider's
    /// `x-should-retry: false`) is not moved: the action decides there.
    ///
    /// One request-scoped code moves too: `request_too_large` answered
    /// with a 429, a request over the per-minute token limit of the
    /// route's account (OpenAI's "Request too large … on tokens per min").
    /// The limit is the account's, not the request's shape: another
    /// account or provider may allow more. A 413 (a body past what the
    /// server reads) stays the request's.
    pub fn moves_route(&self) -> bool {
        let over_account_limit = self.code() == Code::RequestTooLarge && self.status() == Some(429);
        if (self.scope() != Scope::Route && !over_account_limit) || self.evidence().content_seen {
            return false;
        }
        if matches!(self.code(), Code::StreamInterrupted | Code::Truncated) {
            return false;
        }
        self.class() == Class::Permanent
            || matches!(self.action(), Action::Retry | Action::Failover)
    }

    /// True for a timeout (the attempt's own bound or the stream guard's
    /// first byte) that fired before a single byte of an answer arrived:
    /// the route accepts connections and does not generate.
    pub fn is_zero_byte_timeout(&self) -> bool {
        matches!(self.code(), Code::Timeout | Code::FirstByteTimeout)
            && self.evidence().nothing_arrived()
    }
}

/// A request extension saying that a layer outside can send this request
/// to another route (a fallback): a retry ladder inside then fails over
/// after the first zero-byte timeout instead of spending a second attempt
/// on a route that answers with silence. Without it the ladder keeps its
/// single-route rule (fail over on the second in a row).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OtherRoutes;

/// A request extension saying that the credentials the request carries —
/// and so the account behind them — are the caller's own, not the
/// route's: a gateway forwarding each client's key to a route without a
/// key of its own. What a provider says of that account
/// ([`Failure::is_about_account`]: rejected credentials, an exhausted
/// quota, a rate limit) then says nothing of the route for other callers:
/// the breaker neither cools the route down nor counts it. Without it the
/// route's account is the one at fault, as for a route with its own key.
///
/// It is the route's property: the breaker reads it from the call that
/// first names a route (so a call to a known route pays no lookup). Put it
/// on every call to a route whose calls carry their callers' credentials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallerCredentials;

impl Failure {
    /// True for what a provider says of the account behind the request's
    /// credentials rather than of its own health: `auth`,
    /// `quota_exhausted`, `rate_limited`.
    pub fn is_about_account(&self) -> bool {
        matches!(
            self.code(),
            Code::Auth | Code::QuotaExhausted | Code::RateLimited
        )
    }
}

/// How long a route should be left alone after a failure, as the failure
/// itself says: see [`Failure::cooldown`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cooldown {
    /// For this long, from when the failure was learnt.
    For(Duration),
    /// Until an operator says otherwise. seawall's own reading gives every
    /// cause a bound (rejected credentials [`AUTH_COOLDOWN`]); a registry
    /// of the caller's own may keep a route shut this way.
    UntilReset,
}

impl Cooldown {
    /// Whether a route cooling down after `cause` is worth waiting for:
    /// after a rate limit, yes (its hint is when the provider will answer
    /// again); after a quota wall or rejected credentials, no — they are
    /// permanent, the wall is there when the time left ends as much as
    /// before (a reset named or guessed), and the operation that met it
    /// did not wait either. The breaker's refusal says so in its class;
    /// the fallback waits only for such a route.
    pub fn worth_waiting(cause: Code) -> bool {
        cause.default_class() != Class::Permanent
    }
}

impl Failure {
    /// seawall's own refusal of a route it will not call now, as the
    /// breaker and a route set give it: `circuit_open` when the route is
    /// shut by its rate of failures (`cooled_by` none), else
    /// `route_cooling_down` naming what cooled it
    /// ([`cooled_by`](Failure::cooled_by)), permanent when that is not
    /// [worth waiting for](Cooldown::worth_waiting). A refusal, never the
    /// cause's own code: no call was made, so a ladder above records no
    /// upstream attempt and its budget gives no token for it. When the
    /// cause is itself a refusal (`circuit_open` or `route_cooling_down`,
    /// a registry's word for a route shut), the result is that refusal
    /// again, transient and with no `cooled_by`.
    pub fn route_refusal(cooled_by: Option<Code>) -> Failure {
        match cooled_by {
            // What cooled it was itself a refusal (a registry's word for a
            // route shut, not a failure it gave): that refusal again.
            Some(code @ (Code::CircuitOpen | Code::RouteCoolingDown)) => Failure::new(code),
            // A wall or rejected keys are there when the time left ends.
            Some(cause) if !Cooldown::worth_waiting(cause) => {
                Failure::with_class(Class::Permanent, Code::RouteCoolingDown).with_cooled_by(cause)
            }
            Some(cause) => Failure::new(Code::RouteCoolingDown).with_cooled_by(cause),
            None => Failure::new(Code::CircuitOpen),
        }
    }
}

/// How long a quota wall that names no reset keeps its route cold.
pub const DEFAULT_QUOTA_COOLDOWN: Duration = Duration::from_secs(60);

/// The longest a quota wall's named reset keeps its route cold: a month
/// and a half. A spend cap resets at the start of a month ("You will
/// regain access on 2026-09-01"), so its route may rightly stay cold a
/// month; a reset further out is the server's word, not a bound anyone
/// should be held to without a restart (`9999-12-31` would refuse the
/// route for ever).
pub const MAX_QUOTA_COOLDOWN: Duration = Duration::from_secs(45 * 24 * 3600);

/// How long rejected credentials keep their route cold; then calls go to
/// it again (a rejection cools it again). A key replaced in place, or a short-lived token
/// refreshed after one request raced its expiry, reopens the route by
/// itself: shut until a reset by hand, one request's stale token closed
/// the route for every caller until someone noticed. A key still rejected
/// costs one refused call a minute (an answer nobody is billed for).
pub const AUTH_COOLDOWN: Duration = Duration::from_secs(60);

impl Failure {
    /// What this failure says of its route's near future, for a registry of
    /// route health that outlives one request:
    ///
    /// - `quota_exhausted`: until its reset (`reset_at`, at most
    ///   [`MAX_QUOTA_COOLDOWN`] away, else [`DEFAULT_QUOTA_COOLDOWN`]), or
    ///   for its `retry_after` if that is later: a header's hint never
    ///   shortens a wall (a `Retry-After: 41` on a per-day quota speaks of
    ///   the per-minute window; the day's wall is still there in 42 s);
    /// - `rate_limited` with a hint: for the hint;
    /// - `auth`: for [`AUTH_COOLDOWN`];
    /// - anything else: nothing (the breaker judges rates of failure).
    pub fn cooldown(&self, now: SystemTime) -> Option<Cooldown> {
        match self.code() {
            Code::QuotaExhausted => {
                let until_reset = self
                    .reset_at()
                    .and_then(|at| at.duration_since(now).ok())
                    .map(|wait| wait.min(MAX_QUOTA_COOLDOWN));
                let known = until_reset.unwrap_or(DEFAULT_QUOTA_COOLDOWN);
                Some(Cooldown::For(
                    self.retry_after().map_or(known, |hint| hint.max(known)),
                ))
            }
            Code::RateLimited => self.retry_after().map(Cooldown::For),
            Code::Auth => Some(Cooldown::For(AUTH_COOLDOWN)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Evidence;

    #[test]
    fn only_a_transient_cause_is_worth_waiting_out() {
        assert!(Cooldown::worth_waiting(Code::RateLimited));
        assert!(!Cooldown::worth_waiting(Code::QuotaExhausted));
        assert!(!Cooldown::worth_waiting(Code::Auth));
    }

    #[test]
    fn every_code_has_the_scope_the_table_gives() {
        let request = [
            Code::ContextTooLong,
            Code::BadRequest,
            Code::RequestTooLarge,
            Code::AnswerTooLarge,
            Code::Refused,
            Code::ContentFiltered,
            Code::BadArguments,
            Code::Cancelled,
            Code::DeadlineExceeded,
            Code::Unknown,
        ];
        for code in Code::ALL {
            let expected = if request.contains(code) {
                Scope::Request
            } else {
                Scope::Route
            };
            assert_eq!(Scope::of(*code), expected, "{code}");
        }
    }

    #[test]
    fn content_seen_never_moves() {
        let after = Evidence {
            content_seen: true,
            bytes: 10,
            ..Evidence::default()
        };
        for code in [Code::QuotaExhausted, Code::Overloaded, Code::Transport] {
            assert!(Failure::new(code).moves_route(), "{code}");
            assert!(
                !Failure::new(code)
                    .with_evidence(after.clone())
                    .moves_route(),
                "{code}"
            );
        }
        assert!(!Failure::new(Code::ContextTooLong).moves_route());
        // Over the account's per-minute token limit (a 429) moves; over
        // the server's body limit (a 413), or with no status, does not.
        let too_large = |status| Failure::new(Code::RequestTooLarge).with_status(status);
        assert!(too_large(429).moves_route());
        assert!(!too_large(413).moves_route());
        assert!(!Failure::new(Code::RequestTooLarge).moves_route());
        let seen_429 = Evidence {
            status: Some(429),
            ..after.clone()
        };
        assert!(
            !Failure::new(Code::RequestTooLarge)
                .with_evidence(seen_429)
                .moves_route()
        );
        assert!(!Failure::new(Code::StreamInterrupted).moves_route());
        // The provider said not to try again: the action decides.
        let stay = Failure::new(Code::Overloaded).with_action(Action::Surface);
        assert!(!stay.moves_route());
    }

    #[test]
    fn what_a_failure_says_of_its_route() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let wall = Failure::new(Code::QuotaExhausted).with_retry_after(Duration::from_secs(48_489));
        assert_eq!(
            wall.cooldown(now),
            Some(Cooldown::For(Duration::from_secs(48_489)))
        );
        let dated = Failure::new(Code::QuotaExhausted).with_reset_at(now + Duration::from_secs(90));
        assert_eq!(
            dated.cooldown(now),
            Some(Cooldown::For(Duration::from_secs(90)))
        );
        // A reset years out ("regain access on 9999-12-31") is held to
        // the longest a spend cap can rightly name.
        let forever = Failure::new(Code::QuotaExhausted)
            .with_reset_at(now + Duration::from_secs(8_000 * 365 * 86_400));
        assert_eq!(
            forever.cooldown(now),
            Some(Cooldown::For(MAX_QUOTA_COOLDOWN))
        );
        assert_eq!(
            Failure::new(Code::QuotaExhausted).cooldown(now),
            Some(Cooldown::For(DEFAULT_QUOTA_COOLDOWN))
        );
        let brief = Failure::new(Code::RateLimited).with_retry_after(Duration::from_secs(2));
        assert_eq!(
            brief.cooldown(now),
            Some(Cooldown::For(Duration::from_secs(2)))
        );
        assert_eq!(Failure::new(Code::RateLimited).cooldown(now), None);
        assert_eq!(
            Failure::new(Code::Auth).cooldown(now),
            Some(Cooldown::For(AUTH_COOLDOWN))
        );
        assert_eq!(Failure::new(Code::Overloaded).cooldown(now), None);
    }

    #[test]
    fn zero_byte_timeouts_are_told_from_slow_ones() {
        assert!(Failure::new(Code::Timeout).is_zero_byte_timeout());
        assert!(Failure::new(Code::FirstByteTimeout).is_zero_byte_timeout());
        let some = Evidence {
            bytes: 1,
            ..Evidence::default()
        };
        assert!(
            !Failure::new(Code::Timeout)
                .with_evidence(some)
                .is_zero_byte_timeout()
        );
        assert!(!Failure::new(Code::IdleTimeout).is_zero_byte_timeout());
    }
}
