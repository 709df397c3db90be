use std::fmt;

use crate::{Class, Code, Evidence};

/// What the layers do with a failure, derived from its class, code and
/// evidence by [`Action::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Transient and cheap: the same route may answer if asked again.
    Retry,
    /// Transient but route-shaped (zero bytes until a timeout, circuit open):
    /// waiting re-buys the same broken thing, so change route.
    Failover,
    /// Hand the failure to the caller as it is: permanent failures,
    /// cancellations, the operation's deadline, interruptions after content.
    Surface,
    /// A policy failure (refusal, content filter): a human or policy decides.
    Escalate,
    /// The model's own mistake: give it back to the model to fix.
    ReturnToModel,
}

impl Action {
    /// The stable snake_case name of the action.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Retry => "retry",
            Action::Failover => "failover",
            Action::Surface => "surface",
            Action::Escalate => "escalate",
            Action::ReturnToModel => "return_to_model",
        }
    }

    /// The one table that turns a failure into an action. First match wins:
    ///
    /// | # | when | action |
    /// |---|------|--------|
    /// | 1 | class `Policy` | `Escalate` |
    /// | 2 | class `ModelFixable` | `ReturnToModel` |
    /// | 3 | code `cancelled` or `deadline_exceeded` | `Surface` |
    /// | 4 | content already reached the caller (`evidence.content_seen`) | `Surface` |
    /// | 5 | class `Permanent` | `Surface` |
    /// | 6 | code `circuit_open`, `route_cooling_down` or `first_byte_timeout` | `Failover` |
    /// | 7 | code `stream_interrupted` or `truncated` | `Surface` |
    /// | 8 | any other `Transient` | `Retry` |
    ///
    /// Row 4 is the replay boundary: once the caller has seen text, sending
    /// the request again would show it two answers and bill three. Row 6 is
    /// route shape: a breaker that refused, or a route that sent headers and
    /// then nothing, will not improve by being asked again. A plain
    /// per-attempt `timeout` stays `Retry`; the retry layer promotes repeated
    /// zero-byte timeouts to `Failover` itself.
    pub fn decide(class: Class, code: Code, evidence: &Evidence) -> Action {
        match (class, code) {
            (Class::Policy, _) => Action::Escalate,
            (Class::ModelFixable, _) => Action::ReturnToModel,
            (_, Code::Cancelled | Code::DeadlineExceeded) => Action::Surface,
            _ if evidence.content_seen => Action::Surface,
            (Class::Permanent, _) => Action::Surface,
            (_, Code::CircuitOpen | Code::RouteCoolingDown | Code::FirstByteTimeout) => {
                Action::Failover
            }
            (_, Code::StreamInterrupted | Code::Truncated) => Action::Surface,
            (Class::Transient, _) => Action::Retry,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(code: Code) -> Action {
        Action::decide(code.default_class(), code, &Evidence::default())
    }

    #[test]
    fn table_rows() {
        assert_eq!(decide(Code::Refused), Action::Escalate);
        assert_eq!(decide(Code::ContentFiltered), Action::Escalate);
        assert_eq!(decide(Code::BadArguments), Action::ReturnToModel);
        assert_eq!(decide(Code::Cancelled), Action::Surface);
        assert_eq!(decide(Code::DeadlineExceeded), Action::Surface);
        assert_eq!(decide(Code::ContextTooLong), Action::Surface);
        assert_eq!(decide(Code::QuotaExhausted), Action::Surface);
        assert_eq!(decide(Code::Unknown), Action::Surface);
        assert_eq!(decide(Code::CircuitOpen), Action::Failover);
        assert_eq!(decide(Code::RouteCoolingDown), Action::Failover);
        assert_eq!(decide(Code::FirstByteTimeout), Action::Failover);
        assert_eq!(decide(Code::Timeout), Action::Retry);
        assert_eq!(decide(Code::RateLimited), Action::Retry);
        assert_eq!(decide(Code::Overloaded), Action::Retry);
        assert_eq!(decide(Code::EmptyResponse), Action::Retry);
        assert_eq!(decide(Code::Transport), Action::Retry);
        assert_eq!(decide(Code::StreamInterrupted), Action::Surface);
        assert_eq!(decide(Code::Truncated), Action::Surface);
    }

    #[test]
    fn content_seen_is_the_replay_boundary() {
        let after = Evidence {
            content_seen: true,
            ..Evidence::default()
        };
        for code in [
            Code::Overloaded,
            Code::Transport,
            Code::IdleTimeout,
            Code::FirstByteTimeout,
        ] {
            assert_eq!(
                Action::decide(Class::Transient, code, &after),
                Action::Surface,
                "{code}"
            );
        }
        // Policy stays policy even after content: a refusal mid-answer is escalated.
        assert_eq!(
            Action::decide(Class::Policy, Code::ContentFiltered, &after),
            Action::Escalate
        );
    }
}
