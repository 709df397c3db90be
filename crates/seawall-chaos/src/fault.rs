//! The fault vocabulary: what the `x-chaos-fault` header and scripts ask for.
//!
//! A fault is written `name` or `name;key=value;key=value`. [`Fault::from_str`]
//! parses it strictly: an unknown name, an unknown or repeated parameter, or a
//! value out of range is a [`FaultParseError`], never a silent fallback to a
//! healthy answer. [`Fault`]'s `Display` writes the same syntax back (only the
//! parameters that differ from their defaults), so the journal shows a fault in
//! the form a user can paste into a header.

use std::fmt;
use std::str::FromStr;

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

/// Every fault name, in the order the documentation lists them.
pub const FAULT_NAMES: &[&str] = &[
    "ok",
    "status",
    "empty",
    "refusal",
    "length",
    "hang_after_headers",
    "slow_first_byte",
    "frame_then_eof",
    "reset_after",
    "stall_after",
    "stream_error_after",
    "truncate_after",
    "reset_before_headers",
    "random",
];

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
    /// `random;seed=S;p=P`: a seeded draw per request; with probability P one of the
    /// failure faults, otherwise `ok`.
    Random {
        /// Seed of the sequence; requests naming the same seed share one sequence.
        seed: u64,
        /// Failure probability, 0.0..=1.0.
        p: f64,
    },
}

impl Fault {
    /// The fault's name, as written before the first `;`.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Ok(_) => "ok",
            Fault::Status(_) => "status",
            Fault::Empty => "empty",
            Fault::Refusal(_) => "refusal",
            Fault::Length(_) => "length",
            Fault::HangAfterHeaders => "hang_after_headers",
            Fault::SlowFirstByte { .. } => "slow_first_byte",
            Fault::FrameThenEof => "frame_then_eof",
            Fault::ResetAfter { .. } => "reset_after",
            Fault::StallAfter { .. } => "stall_after",
            Fault::StreamErrorAfter { .. } => "stream_error_after",
            Fault::TruncateAfter { .. } => "truncate_after",
            Fault::ResetBeforeHeaders => "reset_before_headers",
            Fault::Random { .. } => "random",
        }
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

/// Why a fault text was refused. `Display` names the problem; [`code`](Self::code)
/// is a stable machine-readable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultParseError {
    /// Nothing but whitespace.
    #[error("empty fault: expected a fault name such as `ok` or `status;code=503`")]
    Empty,
    /// Longer than [`MAX_FAULT_LEN`].
    #[error("fault is {len} bytes long; the limit is {max}")]
    TooLong {
        /// Length received.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The name is not one of [`FAULT_NAMES`].
    #[error("unknown fault `{name}`; expected one of: {}", FAULT_NAMES.join(", "))]
    UnknownFault {
        /// The name received (at most 64 bytes of it).
        name: String,
    },
    /// A parameter without `=`, or with an empty key.
    #[error("malformed parameter `{segment}` in fault `{fault}`: expected key=value")]
    MalformedParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The offending segment (at most 64 bytes of it).
        segment: String,
    },
    /// A parameter the fault does not take.
    #[error("fault `{fault}` does not take parameter `{param}`; it takes: {allowed}")]
    UnknownParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The parameter received.
        param: String,
        /// The parameters it takes.
        allowed: String,
    },
    /// A parameter given twice.
    #[error("parameter `{param}` given twice in fault `{fault}`")]
    DuplicateParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The repeated parameter.
        param: String,
    },
    /// A required parameter is absent.
    #[error("fault `{fault}` needs parameter `{param}`")]
    MissingParam {
        /// The fault being parsed.
        fault: &'static str,
        /// The missing parameter.
        param: &'static str,
    },
    /// A value that does not parse or is out of range.
    #[error(
        "invalid value `{value}` for parameter `{param}` in fault `{fault}`: expected {expected}"
    )]
    InvalidValue {
        /// The fault being parsed.
        fault: &'static str,
        /// The parameter.
        param: &'static str,
        /// The value received (at most 64 bytes of it).
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
}

impl FaultParseError {
    /// A stable code for the error, e.g. `unknown_fault`.
    pub fn code(&self) -> &'static str {
        match self {
            FaultParseError::Empty => "empty_fault",
            FaultParseError::TooLong { .. } => "fault_too_long",
            FaultParseError::UnknownFault { .. } => "unknown_fault",
            FaultParseError::MalformedParam { .. } => "malformed_param",
            FaultParseError::UnknownParam { .. } => "unknown_param",
            FaultParseError::DuplicateParam { .. } => "duplicate_param",
            FaultParseError::MissingParam { .. } => "missing_param",
            FaultParseError::InvalidValue { .. } => "invalid_value",
        }
    }
}

/// Echoes of user input in error messages are cut to this many bytes.
const ECHO_MAX: usize = 64;

fn echo(s: &str) -> String {
    let mut end = s.len().min(ECHO_MAX);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// The parameters of one fault, checked against what it takes.
struct Params<'a> {
    fault: &'static str,
    items: Vec<(&'a str, &'a str)>,
}

impl<'a> Params<'a> {
    fn parse(
        fault: &'static str,
        segments: impl Iterator<Item = &'a str>,
        allowed: &[&str],
    ) -> Result<Self, FaultParseError> {
        let mut items: Vec<(&str, &str)> = Vec::new();
        for segment in segments.map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = match segment.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => (k.trim(), v.trim()),
                _ => {
                    return Err(FaultParseError::MalformedParam {
                        fault,
                        segment: echo(segment),
                    });
                }
            };
            if !allowed.contains(&key) {
                return Err(FaultParseError::UnknownParam {
                    fault,
                    param: echo(key),
                    allowed: if allowed.is_empty() {
                        "no parameters".to_owned()
                    } else {
                        allowed.join(", ")
                    },
                });
            }
            if items.iter().any(|(k, _)| *k == key) {
                return Err(FaultParseError::DuplicateParam {
                    fault,
                    param: key.to_owned(),
                });
            }
            items.push((key, value));
        }
        Ok(Params { fault, items })
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.items.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn invalid(&self, param: &'static str, value: &str, expected: &'static str) -> FaultParseError {
        FaultParseError::InvalidValue {
            fault: self.fault,
            param,
            value: echo(value),
            expected,
        }
    }

    fn missing(&self, param: &'static str) -> FaultParseError {
        FaultParseError::MissingParam {
            fault: self.fault,
            param,
        }
    }

    fn uint(
        &self,
        key: &'static str,
        max: u64,
        expected: &'static str,
    ) -> Result<Option<u64>, FaultParseError> {
        self.get(key)
            .map(|v| match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(self.invalid(key, v, expected)),
            })
            .transpose()
    }

    fn tokens(&self, key: &'static str) -> Result<Option<u32>, FaultParseError> {
        // MAX_TOKENS fits in u32, so the narrowing cannot fail.
        Ok(self
            .uint(key, u64::from(MAX_TOKENS), "an integer 0..=100000")?
            .map(|n| n as u32))
    }

    fn ms(&self, key: &'static str) -> Result<Option<u64>, FaultParseError> {
        self.uint(key, MAX_MS, "milliseconds 0..=3600000")
    }

    fn flag(&self, key: &'static str) -> Result<Option<bool>, FaultParseError> {
        self.get(key)
            .map(|v| match v {
                "1" | "true" => Ok(true),
                "0" | "false" => Ok(false),
                _ => Err(self.invalid(key, v, "true, false, 1 or 0")),
            })
            .transpose()
    }

    fn answer(
        &self,
        tokens_key: &'static str,
        default_tokens: u32,
    ) -> Result<Answer, FaultParseError> {
        Ok(Answer {
            tokens: self.tokens(tokens_key)?.unwrap_or(default_tokens),
            delay_ms: self.ms("delay_ms")?.unwrap_or(0),
        })
    }
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() > MAX_FAULT_LEN {
            return Err(FaultParseError::TooLong {
                len: s.len(),
                max: MAX_FAULT_LEN,
            });
        }
        let mut segments = s.split(';');
        let name = segments.next().unwrap_or_default().trim();
        if name.is_empty() {
            return if s.trim().is_empty() {
                Err(FaultParseError::Empty)
            } else {
                Err(FaultParseError::UnknownFault {
                    name: String::new(),
                })
            };
        }
        let Some(&name) = FAULT_NAMES.iter().find(|n| **n == name) else {
            return Err(FaultParseError::UnknownFault { name: echo(name) });
        };
        const ANSWER: &[&str] = &["tokens", "delay_ms"];
        const CUT: &[&str] = &["tokens", "total", "delay_ms"];
        let allowed: &[&str] = match name {
            "ok" | "refusal" | "length" => ANSWER,
            "status" => &[
                "code",
                "retry_after",
                "retry_after_date",
                "retry_after_ms",
                "kind",
                "x_should_retry",
            ],
            "slow_first_byte" => &["ms", "tokens", "delay_ms"],
            "reset_after" | "stream_error_after" | "truncate_after" => CUT,
            "stall_after" => &["tokens", "ms", "pings", "ping_ms", "total", "delay_ms"],
            "random" => &["seed", "p"],
            _ => &[],
        };
        let p = Params::parse(name, segments, allowed)?;
        let cut = |p: &Params<'_>| -> Result<(u32, Answer), FaultParseError> {
            let tokens = p.tokens("tokens")?.ok_or_else(|| p.missing("tokens"))?;
            Ok((tokens, p.answer("total", DEFAULT_TOKENS)?))
        };
        Ok(match name {
            "ok" => Fault::Ok(p.answer("tokens", DEFAULT_TOKENS)?),
            "status" => {
                let code = p.get("code").ok_or_else(|| p.missing("code"))?;
                let code = match code.parse::<u16>() {
                    Ok(c @ 400..=599) => c,
                    _ => return Err(p.invalid("code", code, "an HTTP error status 400..=599")),
                };
                let kind = p
                    .get("kind")
                    .map(|v| {
                        StatusKind::ALL
                            .iter()
                            .copied()
                            .find(|k| k.as_str() == v)
                            .ok_or_else(|| {
                                p.invalid(
                                    "kind",
                                    v,
                                    "one of insufficient_quota, context_length, too_large_tpm, \
                                     refusal, bad_args, overloaded, auth, not_found",
                                )
                            })
                    })
                    .transpose()?;
                let retry_after = p.uint("retry_after", 31_536_000, "seconds 0..=31536000")?;
                let retry_after_date = p.flag("retry_after_date")?.unwrap_or(false);
                if retry_after_date && retry_after.is_none() {
                    return Err(p.missing("retry_after"));
                }
                Fault::Status(StatusFault {
                    code,
                    retry_after,
                    retry_after_date,
                    retry_after_ms: p.ms("retry_after_ms")?,
                    kind,
                    x_should_retry: p.flag("x_should_retry")?,
                })
            }
            "empty" => Fault::Empty,
            "refusal" => Fault::Refusal(p.answer("tokens", 0)?),
            "length" => Fault::Length(p.answer("tokens", DEFAULT_TOKENS)?),
            "hang_after_headers" => Fault::HangAfterHeaders,
            "slow_first_byte" => Fault::SlowFirstByte {
                ms: p.ms("ms")?.ok_or_else(|| p.missing("ms"))?,
                answer: p.answer("tokens", DEFAULT_TOKENS)?,
            },
            "frame_then_eof" => Fault::FrameThenEof,
            "reset_after" => {
                let (tokens, answer) = cut(&p)?;
                Fault::ResetAfter { tokens, answer }
            }
            "stall_after" => {
                let (tokens, answer) = cut(&p)?;
                Fault::StallAfter {
                    tokens,
                    ms: p.ms("ms")?.ok_or_else(|| p.missing("ms"))?,
                    pings: p.flag("pings")?.unwrap_or(false),
                    ping_ms: match p.ms("ping_ms")? {
                        Some(0) => {
                            return Err(p.invalid("ping_ms", "0", "milliseconds 1..=3600000"));
                        }
                        other => other.unwrap_or(DEFAULT_PING_MS),
                    },
                    answer,
                }
            }
            "stream_error_after" => {
                let (tokens, answer) = cut(&p)?;
                Fault::StreamErrorAfter { tokens, answer }
            }
            "truncate_after" => {
                let (tokens, answer) = cut(&p)?;
                Fault::TruncateAfter { tokens, answer }
            }
            "reset_before_headers" => Fault::ResetBeforeHeaders,
            "random" => {
                let seed = p.get("seed").ok_or_else(|| p.missing("seed"))?;
                let seed = seed
                    .parse::<u64>()
                    .map_err(|_| p.invalid("seed", seed, "an unsigned 64-bit integer"))?;
                let prob = match p.get("p") {
                    None => 0.5,
                    Some(v) => match v.parse::<f64>() {
                        Ok(x) if (0.0..=1.0).contains(&x) => x,
                        _ => return Err(p.invalid("p", v, "a probability 0.0..=1.0")),
                    },
                };
                Fault::Random { seed, p: prob }
            }
            // FAULT_NAMES and this match list the same names.
            _ => {
                return Err(FaultParseError::UnknownFault {
                    name: name.to_owned(),
                });
            }
        })
    }
}

/// Writes `;key=value` for the parameters of an answer that differ from the defaults.
fn write_answer(
    f: &mut fmt::Formatter<'_>,
    tokens_key: &str,
    answer: &Answer,
    default_tokens: u32,
) -> fmt::Result {
    if answer.tokens != default_tokens {
        write!(f, ";{tokens_key}={}", answer.tokens)?;
    }
    if answer.delay_ms != 0 {
        write!(f, ";delay_ms={}", answer.delay_ms)?;
    }
    Ok(())
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())?;
        match self {
            Fault::Ok(a) | Fault::Length(a) => write_answer(f, "tokens", a, DEFAULT_TOKENS),
            Fault::Refusal(a) => write_answer(f, "tokens", a, 0),
            Fault::Status(s) => {
                write!(f, ";code={}", s.code)?;
                if let Some(kind) = s.kind {
                    write!(f, ";kind={}", kind.as_str())?;
                }
                if let Some(secs) = s.retry_after {
                    write!(f, ";retry_after={secs}")?;
                }
                if s.retry_after_date {
                    f.write_str(";retry_after_date=1")?;
                }
                if let Some(ms) = s.retry_after_ms {
                    write!(f, ";retry_after_ms={ms}")?;
                }
                if let Some(retry) = s.x_should_retry {
                    write!(f, ";x_should_retry={retry}")?;
                }
                Ok(())
            }
            Fault::SlowFirstByte { ms, answer } => {
                write!(f, ";ms={ms}")?;
                write_answer(f, "tokens", answer, DEFAULT_TOKENS)
            }
            Fault::ResetAfter { tokens, answer }
            | Fault::StreamErrorAfter { tokens, answer }
            | Fault::TruncateAfter { tokens, answer } => {
                write!(f, ";tokens={tokens}")?;
                write_answer(f, "total", answer, DEFAULT_TOKENS)
            }
            Fault::StallAfter {
                tokens,
                ms,
                pings,
                ping_ms,
                answer,
            } => {
                write!(f, ";tokens={tokens};ms={ms}")?;
                if *pings {
                    f.write_str(";pings=1")?;
                }
                if *ping_ms != DEFAULT_PING_MS {
                    write!(f, ";ping_ms={ping_ms}")?;
                }
                write_answer(f, "total", answer, DEFAULT_TOKENS)
            }
            Fault::Random { seed, p } => write!(f, ";seed={seed};p={p}"),
            Fault::Empty
            | Fault::HangAfterHeaders
            | Fault::FrameThenEof
            | Fault::ResetBeforeHeaders => Ok(()),
        }
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
        ];
        for example in examples {
            let fault = parse(example).unwrap_or_else(|e| panic!("{example}: {e}"));
            // Display writes the canonical form back; it parses to the same fault.
            let again = parse(&fault.to_string()).unwrap();
            assert_eq!(fault, again, "{example} -> {fault}");
        }
        assert_eq!(FAULT_NAMES.len(), 14);
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
        assert!(err.to_string().len() < 300, "echo is cut: {err}");
        // Multi-byte characters are cut on a character boundary.
        let err = parse(&"é".repeat(100)).unwrap_err();
        assert_eq!(err.code(), "unknown_fault");
    }
}
