use std::fmt;
use std::str::FromStr;

use crate::Class;

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, $class:ident; )*) => {
        /// A stable failure code owned by seawall.
        ///
        /// [`Code::as_str`] gives a snake_case name that never changes once
        /// released: dashboards, logs and stored receipts may rely on it.
        /// New codes may be added, hence `#[non_exhaustive]`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[ $( Code::$variant, )* ];

            /// The stable snake_case name of this code.
            pub const fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $name, )* }
            }

            /// The class a failure with this code has unless the evidence
            /// says otherwise (for example a 429 past the quota wall is
            /// `quota_exhausted`, a different code, rather than a different
            /// class of `rate_limited`).
            pub const fn default_class(self) -> Class {
                match self { $( Code::$variant => Class::$class, )* }
            }
        }

        impl FromStr for Code {
            type Err = UnknownCode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $( $name => Ok(Code::$variant), )*
                    _ => Err(UnknownCode),
                }
            }
        }
    };
}

codes! {
    /// The provider asked us to slow down, for a short while.
    RateLimited => "rate_limited", Transient;
    /// A quota or billing wall: the hint is longer than the quota-wall
    /// threshold, or the provider said the quota is gone.
    QuotaExhausted => "quota_exhausted", Permanent;
    /// 5xx, 408, 409 and their protocol equivalents.
    ProviderUnavailable => "provider_unavailable", Transient;
    /// The provider said it is overloaded (Anthropic 529, Gemini UNAVAILABLE),
    /// or tower's `LoadShed` refused the call here: capacity comes back.
    Overloaded => "overloaded", Transient;
    /// The prompt does not fit the model's context window.
    ContextTooLong => "context_too_long", Permanent;
    /// The request is larger than the provider accepts (bytes or tokens per minute).
    RequestTooLarge => "request_too_large", Permanent;
    /// The model refused to answer.
    Refused => "refused", Policy;
    /// A content filter stopped the answer or the prompt.
    ContentFiltered => "content_filtered", Policy;
    /// Any other rejected request.
    BadRequest => "bad_request", Permanent;
    /// The route answered with a redirect (3xx). seawall never follows one:
    /// the request would carry its key to another host. The base URL is
    /// wrong or has moved; fix the configuration.
    Redirected => "redirected", Permanent;
    /// The model produced malformed tool arguments or a malformed call.
    BadArguments => "bad_arguments", ModelFixable;
    /// Missing, invalid or insufficient credentials.
    Auth => "auth", Permanent;
    /// Unknown model, path, method or resource (a 404, gRPC's
    /// `UNIMPLEMENTED`, a `NOT_FOUND` naming a model or a deployment):
    /// this route lacks it. gRPC's other `NOT_FOUND`s, an entity the call
    /// names, are the request's: `bad_request`.
    NotFound => "not_found", Permanent;
    /// A successful status with nothing in it: no text, no tool call.
    EmptyResponse => "empty_response", Transient;
    /// An attempt's own time bound fired.
    Timeout => "timeout", Transient;
    /// Headers (or nothing at all) and then no byte within the first-byte
    /// bound, or only keep-alives (comments, pings, chunks that carry
    /// nothing): the route said nothing.
    FirstByteTimeout => "first_byte_timeout", Transient;
    /// A stream went quiet for longer than the idle bound.
    IdleTimeout => "idle_timeout", Transient;
    /// Connect refused, reset, broken pipe, protocol error.
    Transport => "transport", Transient;
    /// The body broke its own format: broken event data, more than the
    /// hold cap before any content. Bounded memory ends the read; the same
    /// route may well answer properly next time.
    ProtocolViolation => "protocol_violation", Transient;
    /// One part of a well-formed answer (an event-stream line or event, a
    /// JSON-array element) is larger than the cap seawall was configured
    /// with (`max_event_bytes`): a generated image, most often. Not the
    /// provider's fault, and not retried: the same request brings an
    /// answer as large (and bills it again). Raise the cap if such answers
    /// are expected.
    AnswerTooLarge => "answer_too_large", Permanent;
    /// The caller went away: nobody is waiting for the answer.
    Cancelled => "cancelled", Permanent;
    /// A breaker refused the call without trying the route.
    CircuitOpen => "circuit_open", Transient;
    /// The route is cooling down after what it said last (a quota wall
    /// until its reset, a rate limit for its hint, rejected credentials):
    /// refused locally, without a call, with the time left.
    RouteCoolingDown => "route_cooling_down", Transient;
    /// A stream failed after content reached the caller.
    StreamInterrupted => "stream_interrupted", Transient;
    /// An answer ended cleanly but cut short: a stream that ended without
    /// its finish marker after content; a unary answer that names no
    /// finish reason; a JSON answer handed on past the classifier's check
    /// cap that ended before its value closed, or an answer handed on
    /// unread that ended short of its `content-length`. The CLI also
    /// reports an answer delivered cut at the token limit as `truncated`
    /// (permanent there: the same request is cut at the same limit again).
    Truncated => "truncated", Transient;
    /// The operation's own deadline passed.
    DeadlineExceeded => "deadline_exceeded", Permanent;
    /// The retry budget had no token left for another attempt.
    BudgetExhausted => "budget_exhausted", Transient;
    /// Nobody recognised the error: fail closed.
    Unknown => "unknown", Permanent;
}

/// Returned when a string is not the name of any [`Code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a seawall failure code")]
pub struct UnknownCode;

impl Code {
    /// True for the codes of a time bound firing: `timeout`,
    /// `first_byte_timeout`, `idle_timeout` (not the operation's
    /// `deadline_exceeded`, which ends the operation).
    pub const fn is_timeout(self) -> bool {
        matches!(
            self,
            Code::Timeout | Code::FirstByteTimeout | Code::IdleTimeout
        )
    }

    /// True for a route refused by seawall itself, no call made: its
    /// breaker open (`circuit_open`) or its route cooling down
    /// (`route_cooling_down`).
    pub const fn is_refusal(self) -> bool {
        matches!(self, Code::CircuitOpen | Code::RouteCoolingDown)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_snake_case() {
        for code in Code::ALL {
            let name = code.as_str();
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert_eq!(name.parse::<Code>(), Ok(*code));
        }
        assert_eq!("Rate_Limited".parse::<Code>(), Err(UnknownCode));
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }
}
