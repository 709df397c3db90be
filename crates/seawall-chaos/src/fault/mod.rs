//! The fault vocabulary: what the `x-chaos-fault` header and scripts ask for.
//!
//! A fault is written `name` or `name;key=value;key=value`. [`Fault::from_str`]
//! parses it strictly: an unknown name, an unknown or repeated parameter, or a
//! value out of range is a [`FaultParseError`], never a silent fallback to a
//! healthy answer. [`Fault`]'s `Display` writes the same syntax back (only the
//! parameters that differ from their defaults), so the journal shows a fault in
//! the form a user can paste into a header.
//!
//! Each fault is listed once, in the table of `spec`: its name, parameters
//! and their defaults, description and example. Parsing, `Display`, the
//! CLI's `--help` and the README's fault table are all read from it.

mod doc;
mod parse;
mod spec;

use std::fmt;

pub(crate) use doc::help_entries;
pub use parse::FaultParseError;
pub use spec::FAULT_NAMES;
use spec::IfAbsent;

/// Content tokens in an answer when the fault does not say otherwise.
pub const DEFAULT_TOKENS: u32 = 8;
/// Upper bound for any token count, so a typo cannot ask for a gigabyte stream.
pub const MAX_TOKENS: u32 = 100_000;
/// Upper bound for any duration parameter, in milliseconds (one hour).
pub const MAX_MS: u64 = 3_600_000;
/// Longest fault text accepted, in bytes.
pub const MAX_FAULT_LEN: usize = 1024;
/// Interval between keep-alives during `stall_after;pings=1` when `ping_ms` is absent.
pub const DEFAULT_PING_MS: u64 = 1_000;

/// The shape of a generated answer: how many content tokens and how fast.
///
/// Token `i` (1-based) is the word `w{i}`, preceded by a space except for the
/// first, so an answer of three tokens reads `w1 w2 w3`: a client can check
/// exactly what it delivered and spot a duplicated or missing token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Content tokens in the full answer (`tokens=`, or `total=` for the `*_after` faults).
    pub tokens: u32,
    /// Milliseconds of silence before each token after the first (`delay_ms=`).
    pub delay_ms: u64,
}

impl Answer {
    /// The default answer: [`DEFAULT_TOKENS`] tokens, no delay.
    pub const DEFAULT: Answer = Answer {
        tokens: DEFAULT_TOKENS,
        delay_ms: 0,
    };
}

impl Default for Answer {
    fn default() -> Self {
        Answer::DEFAULT
    }
}

/// Which provider error body a `status` fault answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatusKind {
    /// Billing quota exhausted (OpenAI `insufficient_quota`, Gemini per-day quota).
    InsufficientQuota,
    /// The prompt exceeds the model's context window.
    ContextLength,
    /// One request larger than the tokens-per-minute limit (OpenAI "Request too large").
    TooLargeTpm,
    /// The request was blocked by a content policy.
    Refusal,
    /// Invalid request arguments.
    BadArgs,
    /// The provider is overloaded.
    Overloaded,
    /// Authentication failed.
    Auth,
    /// Unknown model or resource.
    NotFound,
}

impl StatusKind {
    /// Every kind, as written in `kind=`.
    pub const ALL: &'static [StatusKind] = &[
        StatusKind::InsufficientQuota,
        StatusKind::ContextLength,
        StatusKind::TooLargeTpm,
        StatusKind::Refusal,
        StatusKind::BadArgs,
        StatusKind::Overloaded,
        StatusKind::Auth,
        StatusKind::NotFound,
    ];

    /// The name used in `kind=`.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusKind::InsufficientQuota => "insufficient_quota",
            StatusKind::ContextLength => "context_length",
            StatusKind::TooLargeTpm => "too_large_tpm",
            StatusKind::Refusal => "refusal",
            StatusKind::BadArgs => "bad_args",
            StatusKind::Overloaded => "overloaded",
            StatusKind::Auth => "auth",
            StatusKind::NotFound => "not_found",
        }
    }
}

/// An error response: `status;code=N;...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusFault {
    /// HTTP status, 400..=599.
    pub code: u16,
    /// `retry-after` in seconds (`retry_after=S`).
    pub retry_after: Option<u64>,
    /// Send `retry-after` as an HTTP-date `retry_after` seconds from now (`retry_after_date=1`).
    pub retry_after_date: bool,
    /// `retry-after-ms` header (`retry_after_ms=N`).
    pub retry_after_ms: Option<u64>,
    /// Body variant (`kind=`); absent means the provider's usual body for `code`.
    pub kind: Option<StatusKind>,
    /// `x-should-retry` header (`x_should_retry=true|false`).
    pub x_should_retry: Option<bool>,
}

impl StatusFault {
    /// A plain error response with `code` and no hints.
    pub fn new(code: u16) -> Self {
        StatusFault {
            code,
            retry_after: None,
            retry_after_date: false,
            retry_after_ms: None,
            kind: None,
            x_should_retry: None,
        }
    }

    /// The retry delay the hints announce, in milliseconds, if any.
    pub fn retry_delay_ms(&self) -> Option<u64> {
        self.retry_after_ms
            .or(self.retry_after.map(|s| s.saturating_mul(1000)))
    }
}

/// One fault, chosen per request by header or script.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Fault {
    /// `ok;tokens=N;delay_ms=N`: a healthy answer.
    Ok(Answer),
    /// `status;code=N;...`: an error response with the provider's real error body.
    Status(StatusFault),
    /// `empty`: 200 with no content at all.
    Empty,
    /// `refusal;tokens=N`: N content tokens (default 0), then the provider's refusal.
    Refusal(Answer),
    /// `length;tokens=N`: a truncated answer ending with the max-tokens finish reason.
    Length(Answer),
    /// `hang_after_headers`: 200 and headers, then no byte until the client goes away.
    HangAfterHeaders,
    /// `slow_first_byte;ms=N`: headers, N ms of silence, then a healthy answer.
    SlowFirstByte {
        /// Silence after the headers, in milliseconds.
        ms: u64,
        /// The answer that follows.
        answer: Answer,
    },
    /// `frame_then_eof`: the first frame only, then a clean end of body.
    FrameThenEof,
    /// `reset_after;tokens=N`: N content tokens, then an abrupt TCP close (RST).
    ResetAfter {
        /// Content tokens written before the reset.
        tokens: u32,
        /// The answer being cut.
        answer: Answer,
    },
    /// `stall_after;tokens=N;ms=M`: N tokens, M ms of silence (or pings), then the rest.
    StallAfter {
        /// Content tokens written before the stall.
        tokens: u32,
        /// Length of the stall, in milliseconds.
        ms: u64,
        /// Send keep-alives (SSE comments, Anthropic `ping` events) during the stall.
        pings: bool,
        /// Interval between keep-alives, in milliseconds.
        ping_ms: u64,
        /// The answer being stalled.
        answer: Answer,
    },
    /// `stream_error_after;tokens=N`: N tokens, then an in-stream error event, then close.
    StreamErrorAfter {
        /// Content tokens written before the error event.
        tokens: u32,
        /// The answer being interrupted.
        answer: Answer,
    },
    /// `truncate_after;tokens=N`: N tokens, then a clean end of body without a finish marker.
    TruncateAfter {
        /// Content tokens written before the end.
        tokens: u32,
        /// The answer being truncated.
        answer: Answer,
    },
    /// `reset_before_headers`: read the request, then close the connection without a response.
    ResetBeforeHeaders,
    /// `repeat_tail;words=K`: a healthy answer that, when it continues a
    /// resumed one, first repeats the last `words` delivered words (as
    /// models often do).
    RepeatTail {
        /// Delivered words repeated at the start of a continuation.
        words: u32,
        /// The answer.
        answer: Answer,
    },
    /// `tool_call_reset_after;tokens=N`: N text tokens, then one tool-call
    /// delta, then an abrupt TCP close (RST) with the call in flight.
    ToolCallResetAfter {
        /// Content tokens written before the tool-call delta.
        tokens: u32,
        /// The answer being cut.
        answer: Answer,
    },
    /// `reset_mid_event;tokens=N`: N tokens, then the first half of the
    /// next token's event, then an abrupt TCP close (RST).
    ResetMidEvent {
        /// Whole content tokens written before the cut event.
        tokens: u32,
        /// The answer being cut.
        answer: Answer,
    },
    /// `random;seed=S;p=P`: a seeded draw per request; with probability P one of the
    /// failure faults, otherwise `ok`.
    Random {
        /// Seed of the sequence; requests naming the same seed share one sequence.
        /// The server keeps the sequences of 4096 seeds (until a reset); a
        /// seed met past that draws its first fault on every request.
        seed: u64,
        /// Failure probability, 0.0..=1.0.
        p: f64,
    },
}

impl Fault {
    /// The fault's name, as written before the first `;`.
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// A healthy answer with the default shape.
    pub fn ok() -> Self {
        Fault::Ok(Answer::DEFAULT)
    }

    /// An error response with `code` and no hints.
    pub fn status(code: u16) -> Self {
        Fault::Status(StatusFault::new(code))
    }
}

impl fmt::Display for Fault {
    /// `name;key=value;...`, with the parameters in the table's order and
    /// those equal to their default left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = self.spec();
        f.write_str(spec.name)?;
        let values = spec::values(self);
        for param in spec.params {
            let Some((_, value)) = values.iter().find(|(key, _)| *key == param.key) else {
                continue;
            };
            if !matches!(param.if_absent, IfAbsent::Default(default) if default == value) {
                write!(f, ";{}={value}", param.key)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Fault, FaultParseError> {
        s.parse()
    }

    #[test]
    fn parses_every_documented_example() {
        let examples = [
            "ok",
            "ok;tokens=3;delay_ms=20",
            "status;code=429;retry_after=2",
            "status;code=429;retry_after=2;retry_after_date=1",
            "status;code=429;retry_after_ms=1574",
            "status;code=429;kind=insufficient_quota",
            "status;code=503;x_should_retry=false",
            "empty",
            "refusal",
            "refusal;tokens=2",
            "length;tokens=4",
            "hang_after_headers",
            "slow_first_byte;ms=500",
            "frame_then_eof",
            "reset_after;tokens=3",
            "stall_after;tokens=2;ms=300;pings=1;ping_ms=50",
            "stream_error_after;tokens=0",
            "truncate_after;tokens=5;total=10",
            "reset_before_headers",
            "random;seed=7;p=0.3",
            "repeat_tail;words=5;tokens=600",
            "tool_call_reset_after;tokens=3",
            "reset_mid_event;tokens=4;total=9",
        ];
        for example in examples {
            let fault = parse(example).unwrap_or_else(|e| panic!("{example}: {e}"));
            // Display writes the canonical form back; it parses to the same fault.
            let again = parse(&fault.to_string()).unwrap();
            assert_eq!(fault, again, "{example} -> {fault}");
        }
        assert_eq!(FAULT_NAMES.len(), 17);
    }

    #[test]
    fn display_omits_defaults() {
        assert_eq!(parse("ok;tokens=8;delay_ms=0").unwrap().to_string(), "ok");
        assert_eq!(
            parse(" status ; code=429 ; retry_after=2 ")
                .unwrap()
                .to_string(),
            "status;code=429;retry_after=2"
        );
        assert_eq!(
            parse("reset_after;tokens=3;total=20").unwrap(),
            Fault::ResetAfter {
                tokens: 3,
                answer: Answer {
                    tokens: 20,
                    delay_ms: 0
                }
            }
        );
    }

    #[test]
    fn errors_name_the_problem() {
        let cases: &[(&str, &str, &str)] = &[
            ("", "empty_fault", "empty fault"),
            (
                "bogus",
                "unknown_fault",
                "unknown fault `bogus`; expected one of: ok, status",
            ),
            (";code=1", "unknown_fault", "unknown fault ``"),
            (
                "status",
                "missing_param",
                "fault `status` needs parameter `code`",
            ),
            (
                "status;code=abc",
                "invalid_value",
                "invalid value `abc` for parameter `code`",
            ),
            ("status;code=200", "invalid_value", "400..=599"),
            (
                "status;code=429;kind=nope",
                "invalid_value",
                "parameter `kind`",
            ),
            (
                "status;code=429;retry_after_date=1",
                "missing_param",
                "`retry_after`",
            ),
            (
                "ok;tokens",
                "malformed_param",
                "malformed parameter `tokens` in fault `ok`",
            ),
            ("ok;=3", "malformed_param", "malformed parameter `=3`"),
            (
                "ok;tokens=1;tokens=2",
                "duplicate_param",
                "`tokens` given twice",
            ),
            (
                "ok;colour=red",
                "unknown_param",
                "does not take parameter `colour`; it takes: tokens, delay_ms",
            ),
            ("empty;tokens=1", "unknown_param", "it takes: no parameters"),
            ("ok;tokens=100001", "invalid_value", "0..=100000"),
            ("ok;tokens=-1", "invalid_value", "`-1`"),
            ("ok;delay_ms=99999999999", "invalid_value", "milliseconds"),
            ("reset_after", "missing_param", "needs parameter `tokens`"),
            (
                "stall_after;tokens=1",
                "missing_param",
                "needs parameter `ms`",
            ),
            (
                "stall_after;tokens=1;ms=5;ping_ms=0",
                "invalid_value",
                "ping_ms",
            ),
            (
                "stall_after;tokens=1;ms=5;pings=maybe",
                "invalid_value",
                "true, false, 1 or 0",
            ),
            ("random;p=0.5", "missing_param", "`seed`"),
            ("random;seed=1;p=1.5", "invalid_value", "probability"),
            ("random;seed=1;p=NaN", "invalid_value", "probability"),
        ];
        for (input, code, needle) in cases {
            let err = parse(input).expect_err(input);
            assert_eq!(err.code(), *code, "{input}: {err}");
            let msg = err.to_string();
            assert!(msg.contains(needle), "{input}: `{msg}` lacks `{needle}`");
        }
    }

    #[test]
    fn absurd_input_is_bounded() {
        let long = format!("ok;tokens={}", "9".repeat(2000));
        assert_eq!(parse(&long).unwrap_err().code(), "fault_too_long");
        let long_name = "x".repeat(1000);
        let err = parse(&long_name).unwrap_err();
        // The echo is cut; the list of names it ends with is not.
        let names = FAULT_NAMES.join(", ").len();
        assert!(err.to_string().len() < 150 + names, "echo is cut: {err}");
        // Multi-byte characters are cut on a character boundary.
        let err = parse(&"é".repeat(100)).unwrap_err();
        assert_eq!(err.code(), "unknown_fault");
    }
}
