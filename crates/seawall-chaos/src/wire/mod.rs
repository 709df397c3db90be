//! The providers' wire formats: stream frames, unary bodies and error bodies.
//!
//! Frames are built with `format!` from pieces whose JSON escaping is known
//! (token words are ASCII, the model name is escaped once per request), so a
//! test can compare exact bytes. Error bodies are rarer and go through
//! `serde_json`.

mod anthropic;
mod gemini;
mod openai;
mod openai_responses;

pub(crate) use gemini::ArrayWriter;

use std::fmt;
use std::str::FromStr;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::fault::StatusFault;

/// The provider API a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// OpenAI chat completions: `POST /v1/chat/completions`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages: `POST /v1/messages`.
    Anthropic,
    /// Gemini: `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`.
    Gemini,
    /// OpenAI Responses API: `POST /v1/responses`.
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
}

impl Provider {
    /// The name used in scripts and the journal: `openai`, `anthropic`,
    /// `gemini` or `openai_responses`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::OpenAiResponses => "openai_responses",
        }
    }

    /// The provider serving `path`, if any (query string excluded).
    pub fn for_path(path: &str) -> Option<Provider> {
        match path {
            "/v1/chat/completions" => Some(Provider::OpenAi),
            "/v1/messages" => Some(Provider::Anthropic),
            "/v1/responses" => Some(Provider::OpenAiResponses),
            p if p.starts_with("/v1beta/models/") => Some(Provider::Gemini),
            _ => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A route name that is neither a provider name nor a served path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown route `{0}`: expected openai, anthropic, gemini, openai_responses, \
     /v1/chat/completions, /v1/messages, /v1/responses or a /v1beta/models/... path"
)]
pub struct UnknownRoute(pub String);

impl FromStr for Provider {
    type Err = UnknownRoute;

    /// Accepts a provider name (`openai`, `open_ai`, `anthropic`, `gemini`,
    /// `openai_responses`, `open_ai_responses`) or a served path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match s.to_ascii_lowercase().as_str() {
            "openai" | "open_ai" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            "gemini" => Ok(Provider::Gemini),
            "openai_responses" | "open_ai_responses" => Ok(Provider::OpenAiResponses),
            _ => Provider::for_path(s.split('?').next().unwrap_or_default())
                .ok_or_else(|| UnknownRoute(s.chars().take(128).collect())),
        }
    }
}

/// How an answer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Natural end: `stop` / `end_turn` / `STOP` / `completed`.
    Stop,
    /// Max tokens reached: `length` / `max_tokens` / `MAX_TOKENS` / `incomplete`.
    Length,
    /// Refused: `delta.refusal` + `stop` / `refusal` / `SAFETY` / a `refusal` part.
    Refusal,
}

/// What OpenAI chat completions says when it refuses.
pub(crate) const REFUSAL_TEXT: &str = "I'm sorry, but I can't help with that.";

/// Everything a frame needs to know about its request.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub provider: Provider,
    /// The model name as a JSON string literal, quotes included.
    pub model_json: String,
    /// Response id, unique per request within a server.
    pub id: String,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    /// A deterministic stand-in for the prompt's token count.
    pub prompt_tokens: u32,
    /// The first token of a healthy answer: 1, or `K + 1` when the request
    /// continues an answer that stopped after token `K`.
    pub first_token: u32,
    /// Gemini's `streamGenerateContent` without `alt=sse`: the stream is one
    /// JSON array, an element per chunk.
    pub json_array: bool,
}

impl Ctx {
    pub(crate) fn new(
        provider: Provider,
        model: &str,
        seq: u64,
        include_usage: bool,
        body_len: usize,
    ) -> Self {
        let id = match provider {
            Provider::OpenAi => format!("chatcmpl-chaos{seq}"),
            Provider::Anthropic => format!("msg_chaos{seq}"),
            Provider::Gemini => format!("chaos{seq}"),
            Provider::OpenAiResponses => format!("resp_chaos{seq}"),
        };
        Ctx {
            provider,
            model_json: serde_json::Value::from(model).to_string(),
            id,
            include_usage,
            prompt_tokens: u32::try_from(body_len / 4).unwrap_or(u32::MAX).max(1),
            first_token: 1,
            json_array: false,
        }
    }
}

/// Token `i` (1-based): `w1`, ` w2`, ` w3`, ...
pub(crate) fn token_text(i: u32) -> String {
    if i == 1 {
        "w1".to_owned()
    } else {
        format!(" w{i}")
    }
}

/// The first `n` tokens joined: `w1 w2 ... wn`.
pub fn answer_text(n: u32) -> String {
    (1..=n).map(token_text).collect()
}

/// The numbers of the `wN` tokens in text a caller received, in order:
/// what [`answer_text`] wrote, read back. It splits on `w` too, because a
/// restarted stream glues its first token to the last one shown (`w400w1`).
pub fn token_numbers(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.split(|c: char| c.is_whitespace() || c == 'w')
        .filter_map(|n| n.parse().ok())
}

/// True when some token reached the caller twice: since every answer
/// numbers its tokens, that is text the user was shown twice.
pub fn repeats_a_token(text: &str) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    token_numbers(text).any(|n| !seen.insert(n))
}

/// The content tokens a stream body has written so far: one run of
/// `count` tokens ending with token `last` (both 0 before the first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Sent {
    pub count: u32,
    pub last: u32,
}

impl Sent {
    /// The text of the run: tokens `last - count + 1 ..= last`.
    pub(crate) fn text(self) -> String {
        (self.last + 1 - self.count..=self.last)
            .map(token_text)
            .collect()
    }
}

/// Whether the finish marker rides on the last content frame instead of a frame of its own.
pub(crate) fn finish_merges_into_last_token(ctx: &Ctx, finish: Finish, tokens: u32) -> bool {
    ctx.provider == Provider::Gemini && finish != Finish::Refusal && tokens > 0
}

/// The frame that opens a stream before any content, if the provider has one.
pub(crate) fn preamble(ctx: &Ctx) -> Option<Bytes> {
    match ctx.provider {
        Provider::OpenAi => Some(openai::role_chunk(ctx).into()),
        Provider::Anthropic => Some(anthropic::message_start(ctx).into()),
        Provider::Gemini => None,
        Provider::OpenAiResponses => Some(openai_responses::preamble(ctx).into()),
    }
}

/// The single frame `frame_then_eof` sends.
pub(crate) fn first_frame(ctx: &Ctx) -> Bytes {
    match ctx.provider {
        Provider::OpenAi => openai::role_chunk(ctx).into(),
        Provider::Anthropic => anthropic::message_start(ctx).into(),
        Provider::Gemini => gemini::role_frame(ctx).into(),
        Provider::OpenAiResponses => openai_responses::created(ctx).into(),
    }
}

/// Content token `i`, written after `sent`; `finish` set when the finish marker rides on it.
pub(crate) fn token(ctx: &Ctx, i: u32, finish: Option<Finish>, sent: Sent) -> Bytes {
    match ctx.provider {
        Provider::OpenAi => openai::token_chunk(ctx, i),
        Provider::Anthropic => anthropic::token_delta(i, sent.count),
        Provider::Gemini => gemini::token_frame(ctx, i, sent.count + 1, finish),
        Provider::OpenAiResponses => openai_responses::token_events(ctx, i, sent.count),
    }
    .into()
}

/// The frames that end a stream after the content tokens `sent` (empty when merged).
pub(crate) fn finish(ctx: &Ctx, finish: Finish, sent: Sent) -> Bytes {
    let tokens = sent.count;
    match ctx.provider {
        Provider::OpenAi => openai::finish_chunks(ctx, finish, tokens),
        Provider::Anthropic => anthropic::finish_events(finish, tokens),
        Provider::Gemini if finish_merges_into_last_token(ctx, finish, tokens) => String::new(),
        Provider::Gemini => gemini::finish_frame(ctx, finish, tokens),
        Provider::OpenAiResponses => openai_responses::finish_events(ctx, finish, sent),
    }
    .into()
}

/// A tool call started after the content tokens `sent`, its arguments
/// streaming: every frame the provider sends up to its first arguments
/// delta, each block or item opened before anything points at it.
pub(crate) fn tool_call_delta(ctx: &Ctx, sent: Sent) -> Bytes {
    match ctx.provider {
        Provider::OpenAi => openai::tool_call_chunk(ctx),
        Provider::Anthropic => anthropic::tool_call(sent.count),
        Provider::Gemini => gemini::tool_call_frame(ctx),
        Provider::OpenAiResponses => openai_responses::tool_call_events(ctx, sent),
    }
    .into()
}

/// The in-stream error event, after `tokens` content tokens.
pub(crate) fn stream_error(ctx: &Ctx, tokens: u32) -> Bytes {
    Bytes::from_static(match ctx.provider {
        Provider::OpenAi => openai::STREAM_ERROR.as_bytes(),
        Provider::Anthropic => anthropic::STREAM_ERROR.as_bytes(),
        Provider::Gemini => gemini::STREAM_ERROR.as_bytes(),
        // Numbered with the rest of the stream.
        Provider::OpenAiResponses => return openai_responses::stream_error(tokens).into(),
    })
}

/// A keep-alive during a stall.
pub(crate) fn ping(ctx: &Ctx) -> Bytes {
    Bytes::from_static(match ctx.provider {
        Provider::Anthropic => anthropic::PING.as_bytes(),
        Provider::OpenAi | Provider::Gemini | Provider::OpenAiResponses => b": ping\n\n",
    })
}

/// A unary body split around its answer text: `prefix + answer_text(tokens) + suffix`.
/// The split lets a fault cut the body right after a given token.
pub(crate) fn unary_parts(ctx: &Ctx, finish: Finish, tokens: u32) -> (String, String) {
    match ctx.provider {
        Provider::OpenAi => openai::unary_parts(ctx, finish, tokens),
        Provider::Anthropic => anthropic::unary_parts(ctx, finish, tokens),
        Provider::Gemini => gemini::unary_parts(ctx, finish, tokens),
        Provider::OpenAiResponses => openai_responses::unary_parts(ctx, finish, tokens),
    }
}

/// The error body of a `status` fault.
pub(crate) fn error_body(
    provider: Provider,
    model: &str,
    request_id: &str,
    fault: &StatusFault,
) -> String {
    match provider {
        Provider::OpenAi => openai::error_body(model, fault),
        Provider::Anthropic => anthropic::error_body(model, request_id, fault),
        Provider::Gemini => gemini::error_body(model, fault),
        Provider::OpenAiResponses => openai_responses::error_body(model, fault),
    }
    .to_string()
}

/// The error body the server itself answers with (bad fault header, bad JSON, body too large).
pub(crate) fn rejection_body(
    provider: Provider,
    status: u16,
    code: &str,
    message: &str,
    request_id: &str,
) -> String {
    match provider {
        Provider::OpenAi | Provider::OpenAiResponses => {
            openai::rejection_body(status, code, message)
        }
        Provider::Anthropic => anthropic::rejection_body(status, message, request_id),
        Provider::Gemini => gemini::rejection_body(status, message),
    }
    .to_string()
}

/// The error body answered to a stream request cut by `stream_error_after` when the
/// request was unary: there is no stream to carry the event, so it becomes a 5xx.
pub(crate) fn unary_stream_error(provider: Provider) -> StatusFault {
    match provider {
        Provider::OpenAi | Provider::OpenAiResponses => StatusFault::new(500),
        Provider::Anthropic => StatusFault::new(529),
        Provider::Gemini => StatusFault::new(503),
    }
}

/// A retry delay as providers write it: `26s`, `1.574s`.
pub(crate) fn format_delay(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        let s = format!("{}.{:03}", ms / 1000, ms % 1000);
        format!("{}s", s.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_written_like_providers_write_them() {
        assert_eq!(format_delay(26_000), "26s");
        assert_eq!(format_delay(1_574), "1.574s");
        assert_eq!(format_delay(1_500), "1.5s");
        assert_eq!(format_delay(20), "0.02s");
    }

    #[test]
    fn answer_text_is_numbered_words() {
        assert_eq!(answer_text(0), "");
        assert_eq!(answer_text(3), "w1 w2 w3");
    }

    #[test]
    fn token_numbers_read_back_what_answer_text_wrote() {
        assert!(token_numbers(&answer_text(5)).eq(1..=5));
        assert!(!repeats_a_token(&answer_text(5)));
        // A restart glued to the last token shown, then repeating it.
        assert!(token_numbers("w1 w2w1 w2").eq([1, 2, 1, 2]));
        assert!(repeats_a_token("w1 w2w1 w2"));
    }

    #[test]
    fn routes_parse_from_names_and_paths() {
        assert_eq!("openai".parse::<Provider>(), Ok(Provider::OpenAi));
        assert_eq!("/v1/messages".parse::<Provider>(), Ok(Provider::Anthropic));
        assert_eq!(
            "/v1beta/models/gemini-x:streamGenerateContent?alt=sse".parse::<Provider>(),
            Ok(Provider::Gemini)
        );
        assert_eq!(
            "openai_responses".parse::<Provider>(),
            Ok(Provider::OpenAiResponses)
        );
        assert_eq!(
            "/v1/responses".parse::<Provider>(),
            Ok(Provider::OpenAiResponses)
        );
        assert_eq!(Provider::OpenAiResponses.as_str(), "openai_responses");
        assert_eq!(
            serde_json::to_string(&Provider::OpenAiResponses).unwrap(),
            "\"openai_responses\""
        );
        assert!("/v2/nothing".parse::<Provider>().is_err());
    }
}
