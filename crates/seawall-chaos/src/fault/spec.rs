//! The fault table: every fault once, with its parameters, their defaults, a
//! one-line description and an example. Parsing ([`FAULTS`] by name),
//! `Display` (defaults left out), the CLI's `--help` and the README's fault
//! table all read it, so a fault added here is documented everywhere at once.

use super::parse::Params;
use super::{Answer, Fault, FaultParseError, StatusFault, StatusKind};

/// What a parameter is when the fault text leaves it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IfAbsent {
    /// The fault cannot do without it.
    Required,
    /// Nothing: the header or hint it stands for is not sent.
    Unset,
    /// This value, as it would be written.
    Default(&'static str),
}

/// One `key=value` a fault takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ParamSpec {
    pub(crate) key: &'static str,
    /// What the value looks like in the docs: `N`, `S`, `true|false`.
    pub(crate) value: &'static str,
    pub(crate) if_absent: IfAbsent,
}

impl ParamSpec {
    /// `key=value`, as the docs write it.
    pub(crate) fn syntax(&self) -> String {
        format!("{}={}", self.key, self.value)
    }
}

/// Builds a fault from its checked parameters.
pub(crate) type ParseFn = fn(&Params<'_>) -> Result<Fault, FaultParseError>;

/// One fault: its name, what it takes and does, and how it is built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FaultSpec {
    pub(crate) name: &'static str,
    /// In the order `Display` writes them.
    pub(crate) params: &'static [ParamSpec],
    /// What goes over the wire, on one line.
    pub(crate) about: &'static str,
    /// A `curl` that asks for it, for `--help` and the README.
    pub(crate) example: &'static str,
    pub(crate) parse: ParseFn,
}

impl FaultSpec {
    pub(crate) fn param(&self, key: &str) -> Option<&'static ParamSpec> {
        self.params.iter().find(|p| p.key == key)
    }

    /// The name and the required parameters: `stall_after;tokens=N;ms=M`.
    pub(crate) fn syntax(&self) -> String {
        let mut syntax = self.name.to_owned();
        for param in self.params {
            if param.if_absent == IfAbsent::Required {
                syntax.push(';');
                syntax.push_str(&param.syntax());
            }
        }
        syntax
    }
}

const fn param(key: &'static str, value: &'static str, if_absent: IfAbsent) -> ParamSpec {
    ParamSpec {
        key,
        value,
        if_absent,
    }
}

// Shared parameters. Defaults are written as text; tests check them against
// DEFAULT_TOKENS and DEFAULT_PING_MS.
const TOKENS_REQUIRED: ParamSpec = param("tokens", "N", IfAbsent::Required);
const TOKENS_8: ParamSpec = param("tokens", "N", IfAbsent::Default("8"));
const TOTAL_8: ParamSpec = param("total", "N", IfAbsent::Default("8"));
const DELAY_MS: ParamSpec = param("delay_ms", "N", IfAbsent::Default("0"));
/// The `kind=` values, as `StatusKind::as_str` writes them.
pub(crate) const STATUS_KINDS: &str =
    "insufficient_quota|context_length|too_large_tpm|refusal|bad_args|overloaded|auth|not_found";

/// Everything a `*_after` fault cuts: the tokens before the cut, then the answer.
const CUT: &[ParamSpec] = &[TOKENS_REQUIRED, TOTAL_8, DELAY_MS];

const OK: FaultSpec = FaultSpec {
    name: "ok",
    params: &[TOKENS_8, DELAY_MS],
    about: "a healthy answer of `tokens` tokens, `delay_ms` between tokens",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: ok;tokens=3;delay_ms=100' -d "$B""#,
    parse: |p| Ok(Fault::Ok(p.answer("tokens")?)),
};

const STATUS: FaultSpec = FaultSpec {
    name: "status",
    params: &[
        param("code", "N", IfAbsent::Required),
        param("kind", STATUS_KINDS, IfAbsent::Unset),
        param("retry_after", "S", IfAbsent::Unset),
        param("retry_after_date", "1", IfAbsent::Default("0")),
        param("retry_after_ms", "N", IfAbsent::Unset),
        param("x_should_retry", "true|false", IfAbsent::Unset),
    ],
    about: "the provider's real error body for that status. `retry_after` (seconds; \
            `retry_after_date=1` sends it as an HTTP-date), `retry_after_ms` and \
            `x_should_retry` set the hint headers; `kind` picks the body variant (Gemini \
            sends no hint header: it gets `google.rpc.RetryInfo` when a retry hint is given, \
            and a per-day `QuotaFailure` for `insufficient_quota`)",
    example: r#"curl -i localhost:8080/v1/chat/completions -H 'x-chaos-fault: status;code=429;retry_after=2' -d "$B""#,
    parse: parse_status,
};

const EMPTY: FaultSpec = FaultSpec {
    name: "empty",
    params: &[],
    about: "200 with no content (stream: finish marker only; Responses: `output: []`, stream \
            `response.created`, `response.in_progress`, `response.completed`)",
    example: r#"curl -N localhost:8080/v1/messages -H 'x-chaos-fault: empty' -d '{"model":"claude-x","stream":true}'"#,
    parse: |_| Ok(Fault::Empty),
};

const REFUSAL: FaultSpec = FaultSpec {
    name: "refusal",
    params: &[param("tokens", "N", IfAbsent::Default("0")), DELAY_MS],
    about: "`tokens` tokens, then OpenAI `refusal` + `stop` (unary `content: null`), Anthropic \
            `stop_reason: refusal`, Gemini `finishReason: SAFETY`, Responses a `refusal` content \
            part (stream: `response.refusal.delta` / `.done`) in a `completed` response",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: refusal' -d "$B""#,
    parse: |p| Ok(Fault::Refusal(p.answer("tokens")?)),
};

const LENGTH: FaultSpec = FaultSpec {
    name: "length",
    params: &[TOKENS_8, DELAY_MS],
    about: "`tokens` tokens, then `length` / `max_tokens` / `MAX_TOKENS` / Responses `status: \
            incomplete` with `incomplete_details.reason: max_output_tokens` (stream: terminal \
            `response.incomplete`)",
    example: r#"curl -N 'localhost:8080/v1beta/models/gemini-x:streamGenerateContent?alt=sse' -H 'x-chaos-fault: length;tokens=4' -d '{}'"#,
    parse: |p| Ok(Fault::Length(p.answer("tokens")?)),
};

const HANG_AFTER_HEADERS: FaultSpec = FaultSpec {
    name: "hang_after_headers",
    params: &[],
    about: "200 and headers, then no byte until the client goes away",
    example: r#"curl -N -m 2 localhost:8080/v1/chat/completions -H 'x-chaos-fault: hang_after_headers' -d "$B""#,
    parse: |_| Ok(Fault::HangAfterHeaders),
};

const SLOW_FIRST_BYTE: FaultSpec = FaultSpec {
    name: "slow_first_byte",
    params: &[param("ms", "N", IfAbsent::Required), TOKENS_8, DELAY_MS],
    about: "headers, `ms` ms of silence, then a healthy answer",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: slow_first_byte;ms=1500' -d "$B""#,
    parse: |p| {
        Ok(Fault::SlowFirstByte {
            ms: p.ms("ms")?,
            answer: p.answer("tokens")?,
        })
    },
};

const FRAME_THEN_EOF: FaultSpec = FaultSpec {
    name: "frame_then_eof",
    params: &[],
    about: "one role chunk / `message_start` / `response.created` frame, then a clean end of body",
    example: r#"curl -N localhost:8080/v1/messages -H 'x-chaos-fault: frame_then_eof' -d '{"model":"claude-x","stream":true}'"#,
    parse: |_| Ok(Fault::FrameThenEof),
};

const RESET_AFTER: FaultSpec = FaultSpec {
    name: "reset_after",
    params: CUT,
    about: "`tokens` tokens, then a TCP reset (RST): no finish chunk, no `[DONE]`, no terminal \
            event; the client sees a body error",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: reset_after;tokens=3' -d "$B""#,
    parse: |p| {
        let (tokens, answer) = p.cut()?;
        Ok(Fault::ResetAfter { tokens, answer })
    },
};

const STALL_AFTER: FaultSpec = FaultSpec {
    name: "stall_after",
    params: &[
        TOKENS_REQUIRED,
        param("ms", "M", IfAbsent::Required),
        param("pings", "1", IfAbsent::Default("0")),
        param("ping_ms", "P", IfAbsent::Default("1000")),
        TOTAL_8,
        DELAY_MS,
    ],
    about: "`tokens` tokens, `ms` ms of silence, then the rest; `pings=1` sends keep-alives \
            (`: ping` comments, Anthropic `ping` events) every `ping_ms` during the stall",
    example: r#"curl -N localhost:8080/v1/messages -H 'x-chaos-fault: stall_after;tokens=2;ms=3000;pings=1' -d '{"model":"claude-x","stream":true}'"#,
    parse: parse_stall_after,
};

const STREAM_ERROR_AFTER: FaultSpec = FaultSpec {
    name: "stream_error_after",
    params: CUT,
    about: "`tokens` tokens, then an in-stream error (OpenAI `data: {\"error\":…}`, Anthropic \
            `event: error` `overloaded_error`, Gemini `data: {\"error\":…}`, Responses \
            `event: error` with `\"code\":\"server_error\"` and its `sequence_number`), then \
            close; `tokens=0` puts it before any content. A unary request gets the provider's \
            5xx instead",
    example: r#"curl -N localhost:8080/v1/messages -H 'x-chaos-fault: stream_error_after;tokens=2' -d '{"model":"claude-x","stream":true}'"#,
    parse: |p| {
        let (tokens, answer) = p.cut()?;
        Ok(Fault::StreamErrorAfter { tokens, answer })
    },
};

const TRUNCATE_AFTER: FaultSpec = FaultSpec {
    name: "truncate_after",
    params: CUT,
    about: "`tokens` tokens, then a clean end without a finish marker (Responses: no terminal \
            event)",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: truncate_after;tokens=5' -d "$B""#,
    parse: |p| {
        let (tokens, answer) = p.cut()?;
        Ok(Fault::TruncateAfter { tokens, answer })
    },
};

const RESET_BEFORE_HEADERS: FaultSpec = FaultSpec {
    name: "reset_before_headers",
    params: &[],
    about: "read the request, then reset the connection without answering",
    example: r#"curl -v localhost:8080/v1/chat/completions -H 'x-chaos-fault: reset_before_headers' -d "$B""#,
    parse: |_| Ok(Fault::ResetBeforeHeaders),
};

const RANDOM: FaultSpec = FaultSpec {
    name: "random",
    params: &[
        param("seed", "S", IfAbsent::Required),
        param("p", "P", IfAbsent::Default("0.5")),
    ],
    about: "each request draws from the seed's sequence: with probability `p` one of the \
            failures above (never `hang_after_headers` or `refusal`), else `ok`",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: random;seed=7;p=0.3' -d "$B""#,
    parse: |p| {
        Ok(Fault::Random {
            seed: p.need("seed", |v| v.parse().ok(), "an unsigned 64-bit integer")?,
            p: p.need(
                "p",
                |v| v.parse().ok().filter(|x| (0.0..=1.0).contains(x)),
                "a probability 0.0..=1.0",
            )?,
        })
    },
};

const REPEAT_TAIL: FaultSpec = FaultSpec {
    name: "repeat_tail",
    params: &[param("words", "K", IfAbsent::Required), TOKENS_8, DELAY_MS],
    about: "a healthy answer that, when it continues a resumed one (a prefill ending in `wK`), \
            first repeats the last `words` delivered words, as models often do; a fresh answer is \
            `ok`",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: repeat_tail;words=5;tokens=12' -d "$B""#,
    parse: |p| {
        Ok(Fault::RepeatTail {
            words: p.need(
                "words",
                |v| v.parse().ok().filter(|n| *n <= super::MAX_TOKENS),
                "a word count 0..=100000",
            )?,
            answer: p.answer("tokens")?,
        })
    },
};

const TOOL_CALL_RESET_AFTER: FaultSpec = FaultSpec {
    name: "tool_call_reset_after",
    params: CUT,
    about: "`tokens` tokens, then one tool-call delta (OpenAI `delta.tool_calls`, Anthropic a \
            `tool_use` block and its `input_json_delta`, Gemini a `functionCall` part, Responses a \
            `function_call` output item and its `response.function_call_arguments.delta`), then a TCP reset with the call in flight",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: tool_call_reset_after;tokens=3' -d "$B""#,
    parse: |p| {
        let (tokens, answer) = p.cut()?;
        Ok(Fault::ToolCallResetAfter { tokens, answer })
    },
};

const RESET_MID_EVENT: FaultSpec = FaultSpec {
    name: "reset_mid_event",
    params: CUT,
    about: "`tokens` tokens, then the first half of the next token's event (a cut in the middle \
            of an SSE event), then a TCP reset",
    example: r#"curl -N localhost:8080/v1/chat/completions -H 'x-chaos-fault: reset_mid_event;tokens=3' -d "$B""#,
    parse: |p| {
        let (tokens, answer) = p.cut()?;
        Ok(Fault::ResetMidEvent { tokens, answer })
    },
};

/// Every fault, in the order the documentation lists them.
pub(crate) const FAULTS: &[FaultSpec] = &[
    OK,
    STATUS,
    EMPTY,
    REFUSAL,
    LENGTH,
    HANG_AFTER_HEADERS,
    SLOW_FIRST_BYTE,
    FRAME_THEN_EOF,
    RESET_AFTER,
    STALL_AFTER,
    STREAM_ERROR_AFTER,
    TRUNCATE_AFTER,
    RESET_BEFORE_HEADERS,
    RANDOM,
    REPEAT_TAIL,
    TOOL_CALL_RESET_AFTER,
    RESET_MID_EVENT,
];

/// Every fault name, in the order the documentation lists them.
pub const FAULT_NAMES: &[&str] = &{
    let mut names = [""; FAULTS.len()];
    let mut i = 0;
    while i < FAULTS.len() {
        names[i] = FAULTS[i].name;
        i += 1;
    }
    names
};

impl Fault {
    /// This fault's entry in [`FAULTS`].
    pub(crate) fn spec(&self) -> &'static FaultSpec {
        match self {
            Fault::Ok(_) => &OK,
            Fault::Status(_) => &STATUS,
            Fault::Empty => &EMPTY,
            Fault::Refusal(_) => &REFUSAL,
            Fault::Length(_) => &LENGTH,
            Fault::HangAfterHeaders => &HANG_AFTER_HEADERS,
            Fault::SlowFirstByte { .. } => &SLOW_FIRST_BYTE,
            Fault::FrameThenEof => &FRAME_THEN_EOF,
            Fault::ResetAfter { .. } => &RESET_AFTER,
            Fault::StallAfter { .. } => &STALL_AFTER,
            Fault::StreamErrorAfter { .. } => &STREAM_ERROR_AFTER,
            Fault::TruncateAfter { .. } => &TRUNCATE_AFTER,
            Fault::ResetBeforeHeaders => &RESET_BEFORE_HEADERS,
            Fault::Random { .. } => &RANDOM,
            Fault::RepeatTail { .. } => &REPEAT_TAIL,
            Fault::ToolCallResetAfter { .. } => &TOOL_CALL_RESET_AFTER,
            Fault::ResetMidEvent { .. } => &RESET_MID_EVENT,
        }
    }
}

fn parse_status(p: &Params<'_>) -> Result<Fault, FaultParseError> {
    let code = p.need(
        "code",
        |v| v.parse().ok().filter(|c| (400..=599).contains(c)),
        "an HTTP error status 400..=599",
    )?;
    let kind = p.get(
        "kind",
        |v| StatusKind::ALL.iter().copied().find(|k| k.as_str() == v),
        "one of insufficient_quota, context_length, too_large_tpm, refusal, bad_args, \
         overloaded, auth, not_found",
    )?;
    let retry_after = p.get(
        "retry_after",
        |v| v.parse().ok().filter(|s| *s <= 31_536_000),
        "seconds 0..=31536000",
    )?;
    let retry_after_date = p.flag("retry_after_date")?;
    if retry_after_date && retry_after.is_none() {
        return Err(p.missing("retry_after"));
    }
    Ok(Fault::Status(StatusFault {
        code,
        retry_after,
        retry_after_date,
        retry_after_ms: p.opt_ms("retry_after_ms")?,
        kind,
        x_should_retry: p.opt_flag("x_should_retry")?,
    }))
}

fn parse_stall_after(p: &Params<'_>) -> Result<Fault, FaultParseError> {
    let (tokens, answer) = p.cut()?;
    Ok(Fault::StallAfter {
        tokens,
        ms: p.ms("ms")?,
        pings: p.flag("pings")?,
        ping_ms: match p.ms("ping_ms")? {
            0 => return Err(p.invalid("ping_ms", "0", "milliseconds 1..=3600000")),
            ms => ms,
        },
        answer,
    })
}

/// The parameters `Display` writes for `fault`, by key; those equal to their
/// default are left out by the caller.
pub(crate) fn values(fault: &Fault) -> Vec<(&'static str, String)> {
    fn answer(tokens_key: &'static str, a: &Answer) -> [(&'static str, String); 2] {
        [
            (tokens_key, a.tokens.to_string()),
            ("delay_ms", a.delay_ms.to_string()),
        ]
    }
    fn flag(on: bool) -> String {
        if on { "1" } else { "0" }.to_owned()
    }
    match fault {
        Fault::Ok(a) | Fault::Refusal(a) | Fault::Length(a) => answer("tokens", a).into(),
        Fault::Status(s) => {
            let mut values = vec![("code", s.code.to_string())];
            if let Some(kind) = s.kind {
                values.push(("kind", kind.as_str().to_owned()));
            }
            if let Some(secs) = s.retry_after {
                values.push(("retry_after", secs.to_string()));
            }
            values.push(("retry_after_date", flag(s.retry_after_date)));
            if let Some(ms) = s.retry_after_ms {
                values.push(("retry_after_ms", ms.to_string()));
            }
            if let Some(retry) = s.x_should_retry {
                values.push(("x_should_retry", retry.to_string()));
            }
            values
        }
        Fault::SlowFirstByte { ms, answer: a } => {
            let mut values = vec![("ms", ms.to_string())];
            values.extend(answer("tokens", a));
            values
        }
        Fault::RepeatTail { words, answer: a } => {
            let mut values = vec![("words", words.to_string())];
            values.extend(answer("tokens", a));
            values
        }
        Fault::ResetAfter { tokens, answer: a }
        | Fault::StreamErrorAfter { tokens, answer: a }
        | Fault::TruncateAfter { tokens, answer: a }
        | Fault::ToolCallResetAfter { tokens, answer: a }
        | Fault::ResetMidEvent { tokens, answer: a } => {
            let mut values = vec![("tokens", tokens.to_string())];
            values.extend(answer("total", a));
            values
        }
        Fault::StallAfter {
            tokens,
            ms,
            pings,
            ping_ms,
            answer: a,
        } => {
            let mut values = vec![
                ("tokens", tokens.to_string()),
                ("ms", ms.to_string()),
                ("pings", flag(*pings)),
                ("ping_ms", ping_ms.to_string()),
            ];
            values.extend(answer("total", a));
            values
        }
        Fault::Random { seed, p } => vec![("seed", seed.to_string()), ("p", p.to_string())],
        Fault::Empty
        | Fault::HangAfterHeaders
        | Fault::FrameThenEof
        | Fault::ResetBeforeHeaders => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::{DEFAULT_PING_MS, DEFAULT_TOKENS};

    /// The fault text of an example: the `x-chaos-fault` header of its curl.
    fn example_fault(spec: &FaultSpec) -> &'static str {
        let (_, rest) = spec
            .example
            .split_once("x-chaos-fault: ")
            .unwrap_or_else(|| panic!("{}: the example sends no fault header", spec.name));
        rest.split('\'').next().unwrap()
    }

    #[test]
    fn every_example_parses_to_its_fault_and_back() {
        for spec in FAULTS {
            let text = example_fault(spec);
            let fault: Fault = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(fault.name(), spec.name, "{text}");
            assert_eq!(fault.to_string().parse::<Fault>().unwrap(), fault, "{text}");
        }
    }

    #[test]
    fn required_parameters_are_required_and_defaults_are_what_absence_means() {
        for spec in FAULTS {
            let text = example_fault(spec);
            let given: Vec<&str> = text.split(';').skip(1).collect();
            for param in spec.params {
                let others: Vec<&str> = given
                    .iter()
                    .copied()
                    .filter(|kv| kv.split('=').next() != Some(param.key))
                    .collect();
                let without = [&[spec.name][..], &others].concat().join(";");
                match param.if_absent {
                    IfAbsent::Required => {
                        let err = without.parse::<Fault>().expect_err(&without);
                        assert_eq!(err.code(), "missing_param", "{without}: {err}");
                    }
                    IfAbsent::Default(value) => {
                        let explicit = format!("{without};{}={value}", param.key);
                        assert_eq!(
                            without.parse::<Fault>().unwrap(),
                            explicit.parse::<Fault>().unwrap(),
                            "{explicit}"
                        );
                    }
                    IfAbsent::Unset => {
                        without.parse::<Fault>().unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn table_defaults_match_the_constants() {
        let default_is = |param: &ParamSpec, value: String| {
            let IfAbsent::Default(default) = param.if_absent else {
                panic!("{} has no default", param.key);
            };
            assert_eq!(default, value, "{}", param.key);
        };
        default_is(&TOKENS_8, DEFAULT_TOKENS.to_string());
        default_is(&TOTAL_8, DEFAULT_TOKENS.to_string());
        default_is(
            STALL_AFTER.param("ping_ms").unwrap(),
            DEFAULT_PING_MS.to_string(),
        );
        let kinds: Vec<&str> = StatusKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(STATUS_KINDS, kinds.join("|"));
    }

    #[test]
    fn names_are_unique_and_every_fault_has_docs() {
        for (i, spec) in FAULTS.iter().enumerate() {
            assert!(
                !FAULT_NAMES[..i].contains(&spec.name),
                "{} twice",
                spec.name
            );
            assert!(!spec.about.is_empty() && !spec.about.contains('\n'));
            for param in spec.params {
                assert!(!param.value.is_empty(), "{}: {}", spec.name, param.key);
            }
        }
    }
}
