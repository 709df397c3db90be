//! Everything seawall knows about each provider, one module per provider:
//! its error table, its finish reasons, what counts as content (one table,
//! asked by the unary check and the stream decoder alike) and where its
//! usage is.
//!
//! - [`openai`] — chat completions and every OpenAI-compatible server;
//! - [`openai_responses`] — the Responses API (OpenAI's error bodies);
//! - [`anthropic`] — messages;
//! - [`gemini`] — `generateContent` / `streamGenerateContent`;
//! - [`bedrock`] — Amazon Bedrock's runtime errors, whatever wire the
//!   model behind it speaks ([`classify_bedrock_error`]);
//! - [`Provider::Http`] — any other service — the status alone decides.
//!
//! Errors: the classifier reads error responses and the stream guard
//! errors that arrive inside a `200` stream (no status there, so the
//! declared type decides). Rules look at structure first (status,
//! headers), the provider's declared codes second, message text last.
//!
//! # Adding a provider
//!
//! One file here (a variant of [`Provider`], its path in
//! [`Provider::for_path`], its error rule, finish reasons, content table
//! and unary [`check_answer`]), its stream decoder in `seawall-stream`'s
//! `protocol/` (which asks this file's table), and its wire in
//! `seawall-chaos`'s `wire/` so the fault matrix runs against it. The
//! Responses API was added that way.

use std::borrow::Cow;
use std::time::{Duration, SystemTime};

use crate::hint::{RetryHint, parse_text_hint, parse_text_reset};
use crate::text::contains_ci;
use crate::usage::UsageFields;
use crate::{Class, Code, Failure, FinishKind, Usage};
use seawall_internal::json::from_bytes;

mod answer;
pub mod anthropic;
pub mod bedrock;
pub mod gemini;
pub mod members;
pub mod openai;
pub mod openai_responses;

pub use answer::{AnswerCheck, Presence};

/// Whose wire format an error body is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI and OpenAI-compatible APIs: `{"error":{"message","type","param","code"}}`.
    OpenAi,
    /// The OpenAI Responses API (`POST /v1/responses`): the same error
    /// bodies as [`Provider::OpenAi`], its own answers and stream events.
    OpenAiResponses,
    /// Anthropic messages: `{"type":"error","error":{"type","message"}}`.
    Anthropic,
    /// Gemini: `{"error":{"code","message","status","details"}}`.
    Gemini,
    /// Any HTTP service: the status alone decides.
    Http,
}

/// Whether a request to `path` (no query) counts tokens, which no provider
/// bills and none answers with a message: Anthropic's
/// `…/messages/count_tokens`, the Responses API's `…/input_tokens`,
/// Gemini's `:countTokens`, Vertex AI's `:computeTokens`, Claude's
/// `count-tokens` model on Vertex AI.
pub(crate) fn counts_tokens(path: &str) -> bool {
    path.ends_with("/count_tokens")
        || path.ends_with("/input_tokens")
        || path.ends_with(":countTokens")
        || path.ends_with(":computeTokens")
        || path.contains("/models/count-tokens:")
}

/// Whether a `method` request to `path` (no query) succeeds only with one
/// JSON body, outside the generations [`Provider::for_generation`] names:
/// a `POST` to embeddings (OpenAI's and every compatible server's
/// `…/embeddings`, Gemini's `:embedContent` and `:batchEmbedContents`),
/// moderations (`…/moderations`) or token counting. A 2xx there that is
/// not JSON (a captive portal's page, a proxy's text) or has no body is no
/// answer. Listed only where no request may ask for anything else: not
/// `…/audio/speech` (audio), not `…/audio/transcriptions` (text, SRT or
/// VTT when asked), not `…/images/generations` (an event stream when
/// asked), not a file's content, not a listing read with `GET`.
pub fn answers_json(method: &http::Method, path: &str) -> bool {
    if method != http::Method::POST {
        return false;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    path.ends_with("/embeddings")
        || path.ends_with(":embedContent")
        || path.ends_with(":batchEmbedContents")
        || path.ends_with("/moderations")
        || counts_tokens(path)
}

/// Whether a `method` request to `path` (no query) reads or acts on a
/// generation the provider stored, rather than asking for one: a `GET`
/// of `…/responses/{id}` or `…/chat/completions/{id}`, a `POST` to
/// `…/responses/{id}/cancel`. Its answer is the stored object as it is:
/// a response whose `status` is `failed` or `cancelled` is that object's
/// data (a cancel's success returns one), not a failure of this call.
pub fn reads_stored(method: &http::Method, path: &str) -> bool {
    let get = method == http::Method::GET;
    if !get && method != http::Method::POST {
        return false;
    }
    let path = path.strip_suffix('/').unwrap_or(path);
    // Bytes, not characters: `str::rsplit` with a char pattern goes
    // through the generic searcher on every request the ladder and the
    // classifier read (callgrind: about 490 instructions a call). A `/`
    // byte is never part of a longer UTF-8 character.
    let mut segments = path.as_bytes().rsplit(|&byte| byte == b'/');
    let (Some(last), Some(before)) = (segments.next(), segments.next()) else {
        return false;
    };
    if get {
        let stored = |collection: &[u8]| before == collection && !last.is_empty();
        return stored(b"responses")
            || (stored(b"completions") && segments.next() == Some(b"chat".as_slice()));
    }
    last == b"cancel" && !before.is_empty() && segments.next() == Some(b"responses".as_slice())
}

impl Provider {
    /// The stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenAiResponses => "openai_responses",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
            Provider::Http => "http",
        }
    }

    /// The provider's name in OpenTelemetry's GenAI conventions
    /// (`gen_ai.provider.name`), told by the wire and the `host` it is
    /// spoken to: Vertex AI (`gcp.vertex_ai`, whatever wire: it serves
    /// Gemini, Claude and OpenAI's chat) apart from the Gemini API
    /// (`gcp.gemini`; `gcp.gen_ai` for Gemini's wire elsewhere, a proxy
    /// or a named route), Azure OpenAI (`azure.ai.openai`) apart from
    /// `openai`, whose name the Responses API shares. `None` for a
    /// service that is no generation API ([`Provider::Http`]).
    pub fn genai_name(self, host: &str) -> Option<&'static str> {
        // Bytes, not characters: a route may be named anything.
        let host = host.as_bytes();
        let host = host.strip_suffix(b".").unwrap_or(host);
        let ends = |suffix: &str| {
            host.len() >= suffix.len()
                && host[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        };
        // The domain itself or a name under it.
        let on = |domain: &str| {
            ends(domain)
                && (host.len() == domain.len() || host[host.len() - domain.len() - 1] == b'.')
        };
        // Regional Vertex hosts are `{region}-aiplatform.googleapis.com`.
        let vertex = ends("aiplatform.googleapis.com");
        Some(match self {
            Provider::Http => return None,
            _ if vertex => "gcp.vertex_ai",
            // The Gemini API's host, whatever wire: its OpenAI-compatible
            // endpoint (`/v1beta/openai/chat/completions`) is Gemini's.
            _ if on("generativelanguage.googleapis.com") => "gcp.gemini",
            Provider::OpenAi | Provider::OpenAiResponses
                if on("openai.azure.com") || on("cognitiveservices.azure.com") =>
            {
                "azure.ai.openai"
            }
            Provider::OpenAi | Provider::OpenAiResponses => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gcp.gen_ai",
        })
    }

    /// The provider whose generation endpoint `path` is (query string
    /// excluded): `…/chat/completions` and legacy `…/completions` OpenAI,
    /// `…/responses` the Responses API (and `…/responses/{id}`, a stored
    /// response read again), `…/messages` and Claude on Vertex
    /// AI (`…/publishers/anthropic/models/{model}:rawPredict` or
    /// `:streamRawPredict`) Anthropic,
    /// `…:generateContent`/`…:streamGenerateContent` Gemini; `None` for any
    /// other path (embeddings, model lists, a service of the user's own),
    /// and for OpenAI's resources that end the same way: a thread's
    /// messages (`…/threads/{id}/messages`, the Assistants API) and a
    /// stored completion's (`…/chat/completions/{id}/messages`).
    pub fn for_path(path: &str) -> Option<Provider> {
        Provider::of_path(path, true)
    }

    /// [`for_path`](Self::for_path), a stored response's path named the
    /// Responses API's only when `stored` says it may be.
    fn of_path(path: &str, stored: bool) -> Option<Provider> {
        let path = path.split('?').next().unwrap_or(path);
        let path = path.strip_suffix('/').unwrap_or(path);
        if let Some(resource) = path.strip_suffix("/messages")
            && let Some((parent, _id)) = resource.rsplit_once('/')
            && (parent.ends_with("/threads") || parent.ends_with("/completions"))
        {
            return None;
        }
        // `…/completions` covers `/chat/completions` and the legacy
        // completions every OpenAI-compatible server still serves
        // (`choices[].text`, read by OpenAI's table; its `finish_reason`
        // is OpenAI's).
        // A stored response read again (`GET …/responses/{id}`; with
        // `stream=true` its events after `starting_after`, what a resume
        // of a background response reads) is the Responses API's own
        // answer and events. Its `…/input_items` and `…/cancel` are not.
        if path.ends_with("/completions") {
            Some(Provider::OpenAi)
        } else if path.ends_with("/responses") || (stored && stored_response(path)) {
            Some(Provider::OpenAiResponses)
        } else if path.ends_with("/messages") {
            Some(Provider::Anthropic)
        } else if path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent") {
            Some(Provider::Gemini)
        } else if (path.ends_with(":streamRawPredict") || path.ends_with(":rawPredict"))
            && path.contains("/publishers/anthropic/models/")
            && !counts_tokens(path)
        {
            // Claude on Vertex AI: "nearly identical to the Messages API"
            // (Anthropic, "Claude on Vertex AI"), the same events and
            // bodies. Other publishers' `rawPredict` speak their own.
            // Token counting is the model `count-tokens` there (where
            // Anthropic's Vertex client sends `messages.count_tokens`):
            // its answer is `{"input_tokens":…}`, no message.
            Some(Provider::Anthropic)
        } else {
            None
        }
    }

    /// The provider whose generation a request to `path` with `method`
    /// asks for: a POST to a generation endpoint ([`for_path`](Self::for_path)).
    /// A stored response's path speaks the Responses API's wire when read
    /// (`GET …/responses/{id}`), but a POST below `…/responses/` is no
    /// generation: `…/responses/input_tokens` counts tokens and
    /// `…/responses/compact` answers a compaction, each in a shape of its
    /// own.
    pub fn for_generation(method: &http::Method, path: &str) -> Option<Provider> {
        if method != http::Method::POST {
            return None;
        }
        Provider::of_path(path, false)
    }

    /// The provider named `name` ([`as_str`](Self::as_str) names, plus
    /// `openai-responses` and `responses`).
    pub fn from_name(name: &str) -> Option<Provider> {
        match name {
            "openai" => Some(Provider::OpenAi),
            "openai_responses" | "openai-responses" | "responses" => {
                Some(Provider::OpenAiResponses)
            }
            "anthropic" => Some(Provider::Anthropic),
            "gemini" => Some(Provider::Gemini),
            "http" => Some(Provider::Http),
            _ => None,
        }
    }
}

impl Provider {
    /// What `reason` means in this provider's finish vocabulary. A plain
    /// HTTP service has none of its own: its reasons are read as OpenAI's,
    /// the format OpenAI-compatible servers share.
    pub fn finish_kind(self, reason: &str) -> FinishKind {
        match self {
            Provider::Anthropic => anthropic::finish_kind(reason),
            Provider::Gemini => gemini::finish_kind(reason),
            Provider::OpenAiResponses => openai_responses::finish_kind(reason),
            Provider::OpenAi | Provider::Http => openai::finish_kind(reason),
        }
    }

    /// True when a clean end of this provider's event stream is itself the
    /// finish: only for a service seawall knows nothing of. Every provider
    /// names its finish, so a stream of theirs that just ends was cut.
    pub const fn eof_finishes(self) -> bool {
        matches!(self, Provider::Http)
    }
}

/// Checks a whole 2xx body in `provider`'s answer shape: an answer that
/// is empty, refused, filtered or broken JSON is a failure, a complete one
/// says its finish and usage. Plain HTTP has no answer shape
/// ([`AnswerCheck::OtherShape`]).
pub fn check_answer(provider: Provider, body: &[u8]) -> AnswerCheck {
    let check = check_as_sent(provider, body);
    // A body serde refused as broken JSON may only hold a lone surrogate
    // escape: the answer it is with the character replaced, not a broken
    // one to ask for again (and pay for again).
    if matches!(&check, AnswerCheck::Fail(failure) if failure.code() == Code::ProtocolViolation)
        && let Some(repaired) = seawall_internal::json::repair_lone_surrogates(body)
    {
        return check_as_sent(provider, &repaired);
    }
    // A usage serde refuses though it is JSON (a count out of any number's
    // range, `1e400`) says nothing of the answer, which is read without
    // it: a billed answer is not asked for (and paid for) again for its
    // bookkeeping.
    if matches!(&check, AnswerCheck::Fail(failure) if failure.code() == Code::ProtocolViolation)
        && let Some(without) = seawall_internal::json::null_members(
            seawall_internal::json::without_bom(body),
            ["usage", "usageMetadata"],
        )
    {
        let again = check_as_sent(provider, &without);
        if !matches!(&again, AnswerCheck::Fail(f) if f.code() == Code::ProtocolViolation) {
            return again;
        }
    }
    check
}

/// The usage a whole answer reports, read alone: for an answer whose
/// verdict is no success but that the provider billed and that is
/// delivered all the same (a refusal, a filter, where the caller asked
/// for them as answers). `usage` in OpenAI's, Anthropic's and the
/// Responses API's shapes, `usageMetadata` in Gemini's.
pub fn answer_usage(body: &[u8]) -> Option<Usage> {
    #[derive(serde::Deserialize)]
    struct Reported {
        #[serde(default)]
        usage: Option<UsageFields>,
        #[serde(default, rename = "usageMetadata")]
        usage_metadata: Option<UsageFields>,
    }
    let reported = from_bytes::<Reported>(body).ok()?;
    reported.usage.or(reported.usage_metadata)?.usage()
}

fn check_as_sent(provider: Provider, body: &[u8]) -> AnswerCheck {
    match provider {
        Provider::OpenAi => openai::check_answer(body),
        Provider::OpenAiResponses => openai_responses::check_answer(body),
        Provider::Anthropic => anthropic::check_answer(body),
        Provider::Gemini => gemini::check_answer(body),
        Provider::Http => AnswerCheck::OtherShape,
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The threshold past which a rate-limit hint is not a blip but a quota
/// wall: `Permanent`/`quota_exhausted` with `reset_at`, so the caller can
/// schedule instead of a task sleeping until tomorrow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWall {
    threshold: Duration,
}

impl QuotaWall {
    /// The default threshold: 60 seconds.
    pub const DEFAULT_THRESHOLD: Duration = Duration::from_secs(60);

    /// A wall at `threshold`.
    pub const fn new(threshold: Duration) -> Self {
        QuotaWall { threshold }
    }

    /// The threshold.
    pub const fn threshold(self) -> Duration {
        self.threshold
    }

    /// The failure for a rate limit with this hint: `rate_limited` with the
    /// hint when it is short enough to wait, else `quota_exhausted` with
    /// `reset_at = now + hint`.
    pub fn judge(self, hint: Option<Duration>, now: SystemTime) -> Failure {
        match hint {
            Some(after) if after > self.threshold => {
                let failure = Failure::new(Code::QuotaExhausted).with_retry_after(after);
                match now.checked_add(after) {
                    Some(at) => failure.with_reset_at(at),
                    None => failure,
                }
            }
            Some(after) => Failure::new(Code::RateLimited).with_retry_after(after),
            None => Failure::new(Code::RateLimited),
        }
    }
}

impl Default for QuotaWall {
    fn default() -> Self {
        QuotaWall::new(Self::DEFAULT_THRESHOLD)
    }
}

/// Whether `path` (no query, no trailing slash) names one stored
/// response, `…/responses/{id}`.
fn stored_response(path: &str) -> bool {
    path.rsplit_once('/')
        .is_some_and(|(parent, id)| parent.ends_with("/responses") && !id.is_empty())
}

/// Everything a classification needs besides the body.
#[derive(Debug, Clone, Copy)]
pub struct ErrorContext {
    /// The HTTP status, or `None` for an error inside a stream.
    pub status: Option<u16>,
    /// What the headers said about retrying.
    pub hint: RetryHint,
    /// The quota-wall threshold.
    pub quota_wall: QuotaWall,
    /// The wall clock, for `reset_at`.
    pub now: SystemTime,
}

impl ErrorContext {
    /// A context for an error inside a stream: no status, no header hint.
    pub fn in_stream(now: SystemTime) -> Self {
        ErrorContext {
            status: None,
            hint: RetryHint::default(),
            quota_wall: QuotaWall::default(),
            now,
        }
    }

    /// This context, judging a rate limit's hint against `quota_wall`.
    pub fn with_quota_wall(self, quota_wall: QuotaWall) -> Self {
        ErrorContext { quota_wall, ..self }
    }
}

/// Classifies an error body (possibly empty, truncated or not JSON at all)
/// in `provider`'s wire format.
pub fn classify_error(provider: Provider, body: &[u8], cx: ErrorContext) -> Failure {
    let parsed = match provider {
        Provider::OpenAi | Provider::OpenAiResponses => {
            let openai = openai::parse_error(body);
            // Gemini's OpenAI-compatible endpoint (`/v1beta/openai/…`)
            // answers errors in Gemini's own shape — an array at times, a
            // `status` where OpenAI has a `type` — with its per-day quota
            // and retry delay in `details`: read by Gemini's table.
            if openai.as_ref().is_none_or(|d| d.error_type.is_none())
                && let Some(google) = gemini::parse_error(body).filter(|d| d.error_type.is_some())
            {
                return judge(Provider::Gemini, google, &cx);
            }
            openai
        }
        Provider::Anthropic => {
            let anthropic = anthropic::parse_error(body);
            // Vertex AI answers its own errors on Claude's paths (a quota,
            // a cancelled call, the caller's region) in Google's shape, an
            // array at times, with RetryInfo and QuotaFailure in `details`:
            // read by Gemini's table, as on Gemini's paths.
            if anthropic.is_none()
                && let Some(google) = gemini::parse_error(body).filter(|d| d.error_type.is_some())
            {
                return judge(Provider::Gemini, google, &cx);
            }
            // A proxy in front of Anthropic's wire (LiteLLM's
            // `/v1/messages`) writes its own errors in OpenAI's shape,
            // mid-stream too, a `type` of `null` and the status it would
            // have answered as its `code`: read by OpenAI's table.
            if anthropic.is_none()
                && let Some(openai) = openai::parse_error(body)
            {
                return judge(Provider::OpenAi, openai, &cx);
            }
            anthropic
        }
        Provider::Gemini => {
            let google = gemini::parse_error(body);
            // The reverse of the above: a Gemini layer in front of an
            // OpenAI-shaped endpoint (Vertex AI's `endpoints/openapi/chat/
            // completions`, a proxy) gets OpenAI's errors, a string `code`
            // such as `context_length_exceeded` and a `type`: read by
            // OpenAI's table when Gemini's shape says nothing.
            if google.as_ref().is_none_or(|d| d.error_type.is_none())
                && let Some(openai) = openai::parse_error(body).filter(|d| d.error_type.is_some())
            {
                return judge(Provider::OpenAi, openai, &cx);
            }
            google
        }
        Provider::Http => None,
    };
    judge(provider, parsed.unwrap_or_default(), &cx)
}

/// Classifies an error the provider declared in fields of its own rather
/// than an error body, such as a failed Responses API response's `error`
/// object (`{code, message}`), read through `provider`'s
/// table as [`classify_error`] reads a body.
pub fn classify_declared(
    provider: Provider,
    error_type: Option<&str>,
    error_code: Option<&str>,
    message: Option<&str>,
    cx: ErrorContext,
) -> Failure {
    let declared = Declared {
        error_type: error_type.map(Cow::Borrowed),
        error_code: error_code.map(Cow::Borrowed),
        message: message.map(Cow::Borrowed),
        ..Declared::default()
    };
    judge(provider, declared, &cx)
}

/// Classifies an error Amazon Bedrock answered, told by its
/// `x-amzn-ErrorType` header ([`bedrock::ERROR_TYPE`], given as sent) and
/// its `{"message"}` body, whatever `provider`'s wire the model behind it
/// speaks: a layer for Anthropic's wire pointed at Claude on Bedrock gets
/// Bedrock's errors, not Anthropic's. An exception Bedrock's table does
/// not name is read as [`classify_error`] reads it; a plain HTTP service
/// ([`Provider::Http`]) keeps its status alone.
pub fn classify_bedrock_error(
    provider: Provider,
    error_type: &[u8],
    body: &[u8],
    cx: ErrorContext,
) -> Failure {
    let declared = bedrock::parse_error(error_type, body);
    match bedrock::error_rule(&declared) {
        Some(verdict) if provider != Provider::Http => {
            judge_by(|_, _| Some(verdict), declared, &cx)
        }
        _ => classify_error(provider, body, cx),
    }
}

/// The table's verdict on what the provider declared, as a failure.
fn judge(provider: Provider, declared: Declared<'_>, cx: &ErrorContext) -> Failure {
    let table = |status: Option<u16>, declared: &Declared<'_>| match provider {
        Provider::OpenAi | Provider::OpenAiResponses => openai::error_rule(status, declared),
        // A type Anthropic does not name is a proxy's, written in
        // OpenAI's words (`server_error`): OpenAI's table reads it.
        Provider::Anthropic => {
            anthropic::error_rule(declared).or_else(|| openai::error_rule(status, declared))
        }
        Provider::Gemini => gemini::error_rule(status, declared),
        Provider::Http => None,
    };
    judge_by(table, declared, cx)
}

/// `table`'s verdict on `declared` (for the status given, `None` in a
/// stream), as a failure.
fn judge_by(
    table: impl Fn(Option<u16>, &Declared<'_>) -> Option<Verdict>,
    declared: Declared<'_>,
    cx: &ErrorContext,
) -> Failure {
    let table = |status: Option<u16>| table(status, &declared);
    // Without a status of its own, an error the declared names do not
    // decide, but that echoes a status, is read as if it came with it: the
    // provider's table first (a 429 "Request too large … tokens per min"
    // is the request's size, not a rate), then the generic one.
    let echoed = || {
        cx.status
            .is_none()
            .then(|| declared.echoed_status())
            .flatten()
    };
    let verdict = table(cx.status)
        .or_else(|| echoed().and_then(|status| table(Some(status)).or(Some(status_rule(status)))))
        .or_else(|| cx.status.map(status_rule))
        .unwrap_or(Verdict::Fixed(Class::Permanent, Code::Unknown));

    let hint = cx.hint.after.or(declared.body_hint).or_else(|| {
        // The message's "try again in", then the reset of a spent limit
        // (sent with every answer, so read only for a rate limit's
        // verdict): a bare 429 whose window resets in minutes is a wall,
        // not a blip for the short ladder.
        if verdict != Verdict::RateLimit {
            return None;
        }
        let told = declared.message.as_deref().and_then(parse_text_hint);
        told.or(cx.hint.limit_reset)
    });
    let mut failure = conclude(verdict, hint, cx);
    if let Some(ty) = declared.error_type {
        failure = failure.with_provider_type(&*ty);
    }
    if let Some(code) = declared.error_code {
        failure = failure.with_provider_code(&*code);
    }
    if let Some(param) = declared.param {
        failure = failure.with_provider_param(&*param);
    }
    if let Some(message) = declared.message {
        // A wall that says when it lifts cools its route until then, not
        // for the default minute (then a call a minute until it lifts),
        // nor for a header's hint sent with it (a `retry-after: 30` on a
        // spend cap is the front door's, not the cap's): the hint is kept
        // as sent, and the cooldown is the later of the two.
        if failure.code() == Code::QuotaExhausted
            && failure.reset_at().is_none()
            && let Some(at) = parse_text_reset(&message).filter(|at| *at > cx.now)
        {
            failure = failure.with_reset_at(at);
        }
        failure = failure.with_message(&message);
    }
    with_daily_reset(failure, declared.resets_daily, cx.now)
}

/// What the `google.rpc` details of an error said about retrying, read
/// from Gemini's REST `details[]` or a gRPC `grpc-status-details-bin`
/// alike and judged here, once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusDetails {
    /// `RetryInfo.retry_delay`, as sent.
    pub retry_delay: Option<Duration>,
    /// A `QuotaFailure` violation or an `ErrorInfo`'s metadata says the
    /// quota does not come back within minutes: it names a per-day window
    /// ([`add_quota_id`](Self::add_quota_id)) or a limit of zero
    /// ([`add_quota_value`](Self::add_quota_value)).
    pub quota_gone: bool,
    /// A `QuotaFailure` violation or an `ErrorInfo`'s metadata names a
    /// per-day window: the quota comes back at the day's end
    /// ([`resets_daily`](Self::resets_daily)).
    pub per_day: bool,
    /// A limit of zero, in a `QuotaFailure` violation, an `ErrorInfo`'s
    /// metadata or the message: no day's end brings the quota back.
    pub limit_zero: bool,
}

impl StatusDetails {
    /// Notes the `quota_id` of a `QuotaFailure` violation (or the
    /// `quota_limit` of an `ErrorInfo`'s metadata): an id naming a per-day
    /// window (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`)
    /// makes the failure a per-day quota.
    pub fn add_quota_id(&mut self, quota_id: &str) {
        let per_day = contains_ci(quota_id, "perday");
        self.per_day |= per_day;
        self.quota_gone |= per_day;
    }

    /// Notes the `quota_value` of a `QuotaFailure` violation (or the
    /// `quota_limit_value` of an `ErrorInfo`'s metadata): a limit of zero
    /// (`"quotaValue":"0"`, the message's "limit: 0") is a model the
    /// key's tier does not include at all. Waiting for its window brings
    /// nothing back: a wall, not a rate limit.
    pub fn add_quota_value(&mut self, quota_value: &str) {
        let zero = quota_value.trim() == "0";
        self.limit_zero |= zero;
        self.quota_gone |= zero;
    }

    /// Notes an error's message: one that says the limit is zero
    /// ([`says_limit_zero`]) says what a zero `quotaValue` would, which
    /// proto3 leaves out of the details.
    fn add_message(&mut self, message: &str) {
        if says_limit_zero(message) {
            self.limit_zero = true;
            self.quota_gone = true;
        }
    }

    /// Whether the wall these details make lifts at the end of the day: a
    /// per-day quota, not a limit of zero. Gemini's per-day quotas reset
    /// at midnight Pacific time, read as UTC−8 (08:00 UTC): in daylight
    /// saving time at most an hour late, the safe side. The failure's
    /// `reset_at` says when, where nothing else named a reset.
    pub fn resets_daily(&self) -> bool {
        self.per_day && !self.limit_zero
    }

    /// The delay worth waiting. A per-day or zero quota's `RetryInfo`
    /// speaks of the per-minute window: waiting that long only meets the
    /// wall again, so it is no hint at all.
    pub fn hint(&self) -> Option<Duration> {
        self.retry_delay.filter(|_| !self.quota_gone)
    }
}

/// Whether a quota message says the limit is zero ("Quota exceeded for
/// metric: …_free_tier_requests, limit: 0, model: gemini-2.5-pro"): the
/// key's tier does not include the model. A proto3 zero is left out of the
/// `QuotaFailure` itself, so the message is where it shows.
pub(super) fn says_limit_zero(message: &str) -> bool {
    const LIMIT: &str = "limit: 0";
    message.match_indices(LIMIT).any(|(at, _)| {
        !message.as_bytes()[at + LIMIT.len()..]
            .first()
            .is_some_and(u8::is_ascii_digit)
    })
}

/// `RESOURCE_EXHAUSTED` (Gemini's status, gRPC code 8): a rate limit for
/// the quota wall to judge, unless the quota is per day or zero, a wall at
/// once.
fn resource_exhausted(quota_gone: bool) -> Verdict {
    if quota_gone {
        Verdict::Fixed(Class::Permanent, Code::QuotaExhausted)
    } else {
        Verdict::RateLimit
    }
}

/// The `grpc-message` of the CANCELLED a tonic server answers when its
/// own time bound fires (tonic's `TimeoutExpired`, as displayed).
const TONIC_TIMEOUT_EXPIRED: &str = "Timeout expired";

/// gRPC's UNKNOWN (2): what an unreadable `grpc-status` is read as, and
/// an OK whose `grpc-message` is not UTF-8 (as tonic reads them).
pub const GRPC_UNKNOWN: u32 = 2;

/// A `grpc-status` value as tonic reads it (`Code::from_bytes`): one
/// digit, or two from 10 to 16, nothing around them; anything else is
/// UNKNOWN (2). Read more loosely (` 0`, `00`, `+0` as OK), a call the
/// caller gets as an error would count as a success.
pub fn grpc_status_code(value: &[u8]) -> u32 {
    match value {
        [digit @ b'0'..=b'9'] => u32::from(digit - b'0'),
        [b'1', digit @ b'0'..=b'6'] => 10 + u32::from(digit - b'0'),
        _ => GRPC_UNKNOWN,
    }
}

/// The bytes a percent-encoded `grpc-message` stands for: malformed
/// escapes are kept as they are, never rejected (the caller decides what
/// bytes that are not UTF-8 mean: tonic reads an OK whose message is not
/// UTF-8 as UNKNOWN).
pub fn grpc_message_bytes(raw: &[u8]) -> Vec<u8> {
    fn hex(byte: Option<&u8>) -> Option<u8> {
        let digit = (*byte? as char).to_digit(16)?;
        u8::try_from(digit).ok()
    }
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match (raw[i], hex(raw.get(i + 1)), hex(raw.get(i + 2))) {
            (b'%', Some(high), Some(low)) => {
                out.push(high << 4 | low);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// Classifies a gRPC status code (from `grpc-status`).
pub fn classify_grpc(status: u32, message: Option<&str>, cx: ErrorContext) -> Failure {
    classify_grpc_details(status, message, StatusDetails::default(), cx)
}

/// Classifies a gRPC status code with what its `grpc-status-details-bin`
/// said: a per-day `QuotaFailure` makes `RESOURCE_EXHAUSTED` a quota wall,
/// as over REST; a `RetryInfo` delay is a hint where no header gave one,
/// and a rate limit's message ("Please retry in 38.962214405s.") where
/// neither did.
pub fn classify_grpc_details(
    status: u32,
    message: Option<&str>,
    details: StatusDetails,
    cx: ErrorContext,
) -> Failure {
    let mut details = details;
    if let Some(message) = message {
        details.add_message(message);
    }
    let past_limit = message.and_then(|m| size_limit(status, m, cx.status.is_some()));
    let verdict = match past_limit {
        // The same message meets the same limit: no retry.
        Some(code) => Verdict::Fixed(Class::Permanent, code),
        None => status_verdict(status, message, details.quota_gone),
    };
    // The server's pushback holds for every status, as `Retry-After` does
    // over HTTP: "Pushback: Retry in n ms — Retry policy: Retry in n ms"
    // (gRFC A6), so an hour of pushback on UNAVAILABLE stops the ladder.
    let hint = cx.hint.after.or(details.hint()).or_else(|| {
        // No `RetryInfo` (a status sent without details, or a proxy that
        // dropped them): a rate limit's message may still say its wait,
        // as Gemini's does, read as over REST.
        if verdict != Verdict::RateLimit {
            return None;
        }
        message.and_then(parse_text_hint)
    });
    let mut failure = conclude(verdict, hint, &cx).with_provider_code(status.to_string());
    failure = with_daily_reset(failure, details.resets_daily(), cx.now);
    if let Some(message) = message {
        failure = failure.with_message(message);
    }
    failure
}

/// A per-day quota's wall that names no reset of its own lifts at the next
/// midnight Pacific time ([`StatusDetails::resets_daily`]): its route
/// cools until then, not for the default minute (then one call a minute
/// meets the wall again, all day). A header's hint sent with it
/// (`Retry-After: 41`, `grpc-retry-pushback-ms`) speaks of the per-minute
/// window, as its `RetryInfo` would: it stays the failure's
/// `retry_after`, as sent, and never shortens the wall
/// ([`Failure::cooldown`] takes the later).
fn with_daily_reset(failure: Failure, resets_daily: bool, now: SystemTime) -> Failure {
    if resets_daily
        && failure.code() == Code::QuotaExhausted
        && failure.reset_at().is_none()
        && let Some(at) = crate::hint::next_pacific_midnight(now)
    {
        return failure.with_reset_at(at);
    }
    failure
}

/// The size limit a gRPC status's `message` says a message passed, as the
/// answer's code or the request's; `None` for any other status.
///
/// A sender's limit is met by what it sends, a receiver's by what it
/// received. A server speaking on the wire (`on_wire`: a status under an
/// HTTP status) could not send the answer, or could not take our request.
/// grpc-go and grpc-java (RESOURCE_EXHAUSTED) only speak as that server
/// here: seawall's client is tonic. tonic (OUT_OF_RANGE) may be our own,
/// a status with no HTTP status under it: its decoder met the answer, its
/// encoder our request.
fn size_limit(status: u32, message: &str, on_wire: bool) -> Option<Code> {
    let says = |words: &str| contains_ci(message, words);
    let answer = match status {
        // tonic: "Error, decoded message length too large: found X bytes,
        // the limit is: Y bytes", and "encoded" for its encoder.
        8 | 11 if says("decoded message length too large") => !on_wire,
        8 | 11 if says("encoded message length too large") => on_wire,
        // grpc-go's server: "grpc: trying to send message larger than max
        // (X vs. Y)", without "grpc: " from a stream (every call, since
        // grpc-go sends unary answers as streams); grpc-java's framer:
        // "message too large X > Y"; gRPC C-core's (C++, Python, Ruby)
        // and grpc-js's: "Sent message larger than max (X vs. Y)", which
        // C-core may lead with "SERVER: ".
        8 if says("trying to send message larger than max")
            || says("message too large")
            || says("sent message larger than max") =>
        {
            true
        }
        // grpc-go: "grpc: received message larger than max (X vs. Y)", and
        // its words for the same after decompression; C-core's and
        // grpc-js's "Received message larger than max (X vs. Y)";
        // grpc-java: "gRPC message exceeds maximum size Y: X".
        8 if says("larger than max") || says("exceeds maximum size") => false,
        _ => return None,
    };
    Some(if answer {
        Code::AnswerTooLarge
    } else {
        Code::RequestTooLarge
    })
}

/// Whether a NOT_FOUND's message is about a model or a deployment, what a
/// route serves, rather than an entity the call named.
fn names_a_model(message: &str) -> bool {
    contains_ci(message, "model") || contains_ci(message, "deployment")
}

/// The verdict of a gRPC status that says no size limit was passed.
fn status_verdict(status: u32, message: Option<&str>, quota_gone: bool) -> Verdict {
    match status {
        8 => resource_exhausted(quota_gone),
        14 => Verdict::Fixed(Class::Transient, Code::ProviderUnavailable),
        // ABORTED is a conflict (a sequencer check, a transaction lost):
        // gRPC's own guidance is to retry at a higher level, restarting
        // the read-modify-write, which only the caller can do. The same
        // call sent again meets the same conflict, and the route is well.
        10 => Verdict::Fixed(Class::Permanent, Code::BadRequest),
        4 => Verdict::Fixed(Class::Transient, Code::Timeout),
        // A tonic server's own time bound (`Server::timeout`, an expired
        // `grpc-timeout`) is sent as CANCELLED with these words (tonic's
        // `TimeoutExpired`): the server ran out of time, as
        // DEADLINE_EXCEEDED says. Read as a cancellation, a backend that
        // kept timing out was never retried nor counted by a breaker.
        1 if message == Some(TONIC_TIMEOUT_EXPIRED) => {
            Verdict::Fixed(Class::Transient, Code::Timeout)
        }
        1 => Verdict::Fixed(Class::Permanent, Code::Cancelled),
        3 | 9 | 11 => Verdict::Fixed(Class::Permanent, Code::BadRequest),
        // NOT_FOUND is the request's: "some requested entity was not
        // found" (gRPC's status codes), the one the call names (a
        // `GetX(id)` that missed), as ALREADY_EXISTS names one that is
        // there. Another route is sent the same call for nothing, or
        // answers from a replica that lags. `bad_request`, request scope;
        // the provider code keeps "5", and the tonic caller its
        // NOT_FOUND. Unless it names a model or a deployment: the route
        // lacks what every call to it asks for (Vertex AI's "Publisher
        // model ... was not found"), `not_found` as a REST 404 says it,
        // and another route may have it. UNIMPLEMENTED is the route's:
        // this server lacks the method.
        5 if message.is_some_and(names_a_model) => Verdict::Fixed(Class::Permanent, Code::NotFound),
        5 | 6 => Verdict::Fixed(Class::Permanent, Code::BadRequest),
        12 => Verdict::Fixed(Class::Permanent, Code::NotFound),
        // PERMISSION_DENIED is this call's authorization (this caller,
        // this resource), not the channel's credentials: the call is
        // refused as made, and nothing about the route follows from it.
        // Read as `auth`, it would cool the route (every method of every
        // generated client on it) for `AUTH_COOLDOWN`.
        7 => Verdict::Fixed(Class::Permanent, Code::BadRequest),
        16 => Verdict::Fixed(Class::Permanent, Code::Auth),
        // UNKNOWN, INTERNAL, DATA_LOSS and anything else: fail closed.
        _ => Verdict::Fixed(Class::Permanent, Code::Unknown),
    }
}

/// The failure a verdict comes to with `hint`: the quota wall judges a rate
/// limit, any other verdict carries the hint as `retry_after`; then
/// `x-should-retry` and the status.
fn conclude(verdict: Verdict, hint: Option<Duration>, cx: &ErrorContext) -> Failure {
    let failure = match verdict {
        Verdict::RateLimit => cx.quota_wall.judge(hint, cx.now),
        Verdict::Fixed(class, code) => {
            let failure = Failure::with_class(class, code);
            match hint {
                Some(after) => failure.with_retry_after(after),
                None => failure,
            }
        }
    };
    let failure = apply_should_retry(failure, cx.hint.should_retry);
    match cx.status {
        Some(status) => failure.with_status(status),
        None => failure,
    }
}

/// The generic HTTP table: 408/409/5xx transient, 429 a rate limit, other
/// 4xx permanent.
fn status_rule(status: u16) -> Verdict {
    use Class::*;
    match status {
        429 => Verdict::RateLimit,
        // Never followed: an API call that follows a redirect carries its
        // key to wherever the answer points.
        300..=399 => Verdict::Fixed(Permanent, Code::Redirected),
        529 => Verdict::Fixed(Transient, Code::Overloaded),
        408 | 409 | 425 | 500..=599 => Verdict::Fixed(Transient, Code::ProviderUnavailable),
        401 | 403 => Verdict::Fixed(Permanent, Code::Auth),
        402 => Verdict::Fixed(Permanent, Code::QuotaExhausted),
        404 => Verdict::Fixed(Permanent, Code::NotFound),
        413 => Verdict::Fixed(Permanent, Code::RequestTooLarge),
        400..=499 => Verdict::Fixed(Permanent, Code::BadRequest),
        _ => Verdict::Fixed(Permanent, Code::Unknown),
    }
}

/// `x-should-retry` is the provider's explicit word. `false` stops any
/// retry; `true` lifts only the permanent verdicts that mean "we do not
/// know" (`bad_request`, `unknown`), never a quota, a context length or a
/// policy failure.
fn apply_should_retry(failure: Failure, should_retry: Option<bool>) -> Failure {
    match should_retry {
        Some(false) if failure.class() == Class::Transient => {
            failure.with_action(crate::Action::Surface)
        }
        Some(true)
            if failure.class() == Class::Permanent
                && matches!(failure.code(), Code::BadRequest | Code::Unknown) =>
        {
            let mut lifted = Failure::with_class(Class::Transient, failure.code());
            if let Some(after) = failure.retry_after() {
                lifted = lifted.with_retry_after(after);
            }
            lifted
        }
        _ => failure,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// A rate limit: the quota wall decides between `rate_limited` and
    /// `quota_exhausted` once the hint is known.
    RateLimit,
    Fixed(Class, Code),
}

/// What a provider declared in its error body.
#[derive(Debug, Default)]
struct Declared<'a> {
    error_type: Option<Cow<'a, str>>,
    error_code: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    /// OpenAI's `param`: the request member the error is about.
    param: Option<Cow<'a, str>>,
    body_hint: Option<Duration>,
    /// A `QuotaFailure` or an `ErrorInfo`'s metadata said the quota does
    /// not come back within minutes ([`StatusDetails::quota_gone`]).
    quota_gone: bool,
    /// A per-day quota walled the request, not a zero one
    /// ([`StatusDetails::resets_daily`]).
    resets_daily: bool,
    /// Why the error came, in a word the provider's table reads: Gemini's
    /// `google.rpc.ErrorInfo.reason` (`API_KEY_INVALID`); for OpenAI's
    /// wire, OpenRouter's in-flight budget (its `metadata.limit_source`)
    /// and Groq's stop (`x_groq.error`), as `openai.rs` names them.
    reason: Option<Cow<'a, str>>,
    /// The provider's moderation flagged the request (OpenRouter's 403
    /// names what in the error's `metadata`): the request's content, not
    /// the key, is refused.
    flagged: bool,
}

impl Declared<'_> {
    /// The HTTP status an error without one echoes as its numeric `code`:
    /// an error inside a stream has no status of its own, and servers that
    /// speak OpenAI's wire put the status they would have answered there
    /// (vLLM: `{"error":{"type":"InternalServerError","code":500}}`,
    /// OpenRouter: `{"error":{"code":502,…}}`), as Gemini's body always
    /// does. Only a client or server error status counts.
    fn echoed_status(&self) -> Option<u16> {
        self.error_code
            .as_deref()
            .and_then(|code| code.parse::<u16>().ok())
            .filter(|status| (400..=599).contains(status))
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::Action;

    #[test]
    fn stored_generations_are_told_from_new_ones() {
        use http::Method;
        for (method, path, stored) in [
            (Method::GET, "/v1/responses/resp_1", true),
            (Method::GET, "/v1/responses/resp_1/", true),
            (Method::POST, "/v1/responses/resp_1/cancel", true),
            (Method::GET, "/v1/chat/completions/chatcmpl_1", true),
            (Method::POST, "/v1/responses", false),
            (Method::GET, "/v1/responses", false),
            (Method::POST, "/v1/responses/resp_1", false),
            (Method::GET, "/v1/responses/resp_1/input_items", false),
            (Method::POST, "/v1/chat/completions", false),
            (Method::GET, "/v1/chat/completions", false),
            (Method::POST, "/v1/responses/cancel", false),
        ] {
            assert_eq!(reads_stored(&method, path), stored, "{method} {path}");
        }
    }

    /// The context of an answer with `status`, no hint, the default quota
    /// wall, at a fixed instant.
    pub(super) fn cx(status: u16) -> ErrorContext {
        ErrorContext {
            status: Some(status),
            hint: RetryHint::default(),
            quota_wall: QuotaWall::default(),
            now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        }
    }

    #[test]
    fn quota_wall_turns_a_long_hint_permanent() {
        let now = SystemTime::UNIX_EPOCH;
        let wall = QuotaWall::default();
        let blip = wall.judge(Some(Duration::from_secs(2)), now);
        assert_eq!(
            (blip.class(), blip.code()),
            (Class::Transient, Code::RateLimited)
        );
        let wall_hit = wall.judge(Some(Duration::from_secs(48489)), now);
        assert_eq!(
            (wall_hit.class(), wall_hit.code()),
            (Class::Permanent, Code::QuotaExhausted)
        );
        assert_eq!(wall_hit.reset_at(), Some(now + Duration::from_secs(48489)));
        assert_eq!(wall_hit.action(), Action::Surface);
    }

    #[test]
    fn openai_in_stream_error_by_type() {
        let body = br#"{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}"#;
        let f = classify_error(
            Provider::OpenAi,
            body,
            ErrorContext::in_stream(SystemTime::now()),
        );
        assert_eq!(
            (f.code(), f.action()),
            (Code::ProviderUnavailable, Action::Retry)
        );
        assert_eq!(f.provider_type(), Some("server_error"));
    }

    /// OpenAI's `param` names the request member an error is about: kept
    /// for a client that reads it, from the error object or an error
    /// object itself (vLLM's); `null` or another value names nothing.
    #[test]
    fn openai_param_is_kept() {
        let param = |provider, body: &str| {
            classify_error(provider, body.as_bytes(), cx(400))
                .provider_param()
                .map(str::to_owned)
        };
        let too_long = r#"{"error":{"message":"This model's maximum context length is 8 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            param(Provider::OpenAi, too_long).as_deref(),
            Some("messages")
        );
        assert_eq!(
            param(Provider::OpenAiResponses, too_long).as_deref(),
            Some("messages")
        );
        let vllm = r#"{"object":"error","message":"bad","type":"BadRequestError","param":"max_tokens","code":400}"#;
        assert_eq!(param(Provider::OpenAi, vllm).as_deref(), Some("max_tokens"));
        for named_nothing in [
            r#"{"error":{"message":"x","type":"invalid_request_error","param":null,"code":null}}"#,
            r#"{"error":{"message":"x","type":"invalid_request_error","param":{"a":1}}}"#,
            r#"{"error":{"message":"x","type":"invalid_request_error"},"param":"elsewhere"}"#,
        ] {
            assert_eq!(
                param(Provider::OpenAi, named_nothing),
                None,
                "{named_nothing}"
            );
        }
    }

    #[test]
    fn anthropic_overloaded_in_stream() {
        let body =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let f = classify_error(
            Provider::Anthropic,
            body,
            ErrorContext::in_stream(SystemTime::now()),
        );
        assert_eq!((f.class(), f.code()), (Class::Transient, Code::Overloaded));
        assert_eq!(f.status(), None);
    }

    #[test]
    fn gemini_retry_info_and_per_day_quota() {
        let minute = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
        let f = classify_error(Provider::Gemini, minute, cx(429));
        assert_eq!(f.code(), Code::RateLimited);
        assert_eq!(f.retry_after(), Some(Duration::from_secs(26)));
        let day = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
        let f = classify_error(Provider::Gemini, day, cx(429));
        assert_eq!(
            (f.class(), f.code()),
            (Class::Permanent, Code::QuotaExhausted)
        );
        assert_eq!(
            f.retry_after(),
            None,
            "the per-minute hint is no hint for a daily wall"
        );
    }

    /// A limit of zero (the model is not in the key's tier): no window
    /// brings it back, so a wall, its per-minute `RetryInfo` no hint —
    /// whether `quotaValue` says so or, as proto3 leaves a zero out, only
    /// the message's "limit: 0".
    #[test]
    fn gemini_zero_quota_is_a_wall() {
        let valued = br#"{"error":{"code":429,"message":"You exceeded your current quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"0"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"28s"}]}}"#;
        let told = br#"{"error":{"code":429,"message":"You exceeded your current quota.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\nPlease retry in 28s.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"28s"}]}}"#;
        for body in [&valued[..], &told[..]] {
            let f = classify_error(Provider::Gemini, body, cx(429));
            assert_eq!(
                (f.class(), f.code(), f.retry_after()),
                (Class::Permanent, Code::QuotaExhausted, None)
            );
        }
        // A limit that is not zero stays a rate limit with its delay.
        let twenty = br#"{"error":{"code":429,"message":"* Quota exceeded for metric: x, limit: 20, model: m","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"20"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"28s"}]}}"#;
        let f = classify_error(Provider::Gemini, twenty, cx(429));
        assert_eq!(
            (f.code(), f.retry_after()),
            (Code::RateLimited, Some(Duration::from_secs(28)))
        );
    }

    /// Depleted prepay credits inside a stream: no status of its own, the
    /// error's `code` says 402, a wall as the HTTP answer is.
    #[test]
    fn gemini_depleted_credits_in_a_stream_are_a_wall() {
        let body = br#"{"error":{"code":402,"message":"Your prepayment credits are depleted.","status":"RESOURCE_EXHAUSTED"}}"#;
        let f = classify_error(
            Provider::Gemini,
            body,
            ErrorContext::in_stream(SystemTime::now()),
        );
        assert_eq!(
            (f.class(), f.code()),
            (Class::Permanent, Code::QuotaExhausted)
        );
    }

    /// ErrorInfo reasons that say the project cannot call the API at all.
    #[test]
    fn gemini_project_reasons() {
        let body = |status: &str, reason: &str| {
            format!(
                r#"{{"error":{{"code":403,"message":"m","status":"{status}","details":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"{reason}"}}]}}}}"#
            )
        };
        for (status, reason, code) in [
            ("PERMISSION_DENIED", "SERVICE_DISABLED", Code::Auth),
            ("PERMISSION_DENIED", "CONSUMER_SUSPENDED", Code::Auth),
            (
                "PERMISSION_DENIED",
                "BILLING_DISABLED",
                Code::QuotaExhausted,
            ),
        ] {
            let f = classify_error(Provider::Gemini, body(status, reason).as_bytes(), cx(403));
            assert_eq!(f.code(), code, "{reason}");
        }
    }

    /// A restricted key's refusal of one operation is the request's, not
    /// the key's; a key refused outright is `auth`.
    #[test]
    fn openai_missing_scopes_are_the_requests() {
        let scoped = br#"{"error":{"message":"You have insufficient permissions for this operation. Missing scopes: api.responses.write. Check that you have the correct role in your organization (Reader, Writer, Owner) and project (Member, Owner), and if you're using a restricted API key, that it has the necessary scopes.","type":"invalid_request_error","param":null,"code":null}}"#;
        let f = classify_error(Provider::OpenAi, scoped, cx(401));
        assert_eq!((f.class(), f.code()), (Class::Permanent, Code::BadRequest));
        let bad_key = br#"{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let f = classify_error(Provider::OpenAi, bad_key, cx(401));
        assert_eq!((f.class(), f.code()), (Class::Permanent, Code::Auth));
    }

    /// A Gemini layer in front of an OpenAI-shaped endpoint (Vertex AI's
    /// `endpoints/openapi`, a proxy) reads OpenAI's errors by OpenAI's
    /// table: the string `code` made Gemini's shape unreadable, and only
    /// the status decided (`bad_request` for a context overflow).
    #[test]
    fn a_gemini_layer_reads_openai_shaped_errors() {
        let body = br#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let f = classify_error(Provider::Gemini, body, cx(400));
        assert_eq!(f.code(), Code::ContextTooLong);
        // Gemini's own still reads as Gemini's, its numeric code echoed.
        let own = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#;
        let f = classify_error(
            Provider::Gemini,
            own,
            ErrorContext::in_stream(SystemTime::now()),
        );
        assert_eq!(f.code(), Code::RateLimited);
    }

    #[test]
    fn gemini_bad_key_is_auth_not_bad_request() {
        let body = br#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#;
        let f = classify_error(Provider::Gemini, body, cx(400));
        assert_eq!((f.class(), f.code()), (Class::Permanent, Code::Auth));
    }

    #[test]
    fn garbage_falls_back_to_status_then_unknown() {
        let f = classify_error(Provider::OpenAi, b"\xff\xfe<html>", cx(503));
        assert_eq!(f.code(), Code::ProviderUnavailable);
        let f = classify_error(
            Provider::Anthropic,
            b"",
            ErrorContext::in_stream(SystemTime::now()),
        );
        assert_eq!((f.class(), f.code()), (Class::Permanent, Code::Unknown));
    }

    #[test]
    fn should_retry_false_stops_a_transient() {
        let mut c = cx(503);
        c.hint.should_retry = Some(false);
        let f = classify_error(Provider::Http, b"", c);
        assert_eq!(
            (f.code(), f.action()),
            (Code::ProviderUnavailable, Action::Surface)
        );
        let mut c = cx(400);
        c.hint.should_retry = Some(true);
        let f = classify_error(Provider::Http, b"", c);
        assert_eq!((f.class(), f.action()), (Class::Transient, Action::Retry));
    }

    #[test]
    fn declared_strings_borrow_unless_escaped() {
        let body = br#"{"error":{"message":"plain","type":"a\"b","param":null,"code":"c"}}"#;
        let d = openai::parse_error(body).unwrap();
        assert!(matches!(d.message, Some(Cow::Borrowed("plain"))));
        assert!(matches!(d.error_code, Some(Cow::Borrowed("c"))));
        assert!(matches!(d.error_type, Some(Cow::Owned(ref t)) if t == "a\"b"));
        let body = br#"{"error":{"code":400,"message":"m","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#;
        let d = gemini::parse_error(body).unwrap();
        assert!(matches!(d.reason, Some(Cow::Borrowed("API_KEY_INVALID"))));
        assert!(matches!(
            d.error_type,
            Some(Cow::Borrowed("INVALID_ARGUMENT"))
        ));
    }

    #[test]
    fn grpc_table() {
        let c = cx(200);
        assert_eq!(classify_grpc(14, None, c).action(), Action::Retry);
        assert_eq!(classify_grpc(4, None, c).code(), Code::Timeout);
        assert_eq!(classify_grpc(3, None, c).class(), Class::Permanent);
        assert_eq!(classify_grpc(13, None, c).code(), Code::Unknown);
        let mut pushed = c;
        pushed.hint.after = Some(Duration::from_millis(300));
        let f = classify_grpc(8, Some("slow down"), pushed);
        assert_eq!(
            (f.code(), f.retry_after()),
            (Code::RateLimited, Some(Duration::from_millis(300)))
        );
    }

    /// ABORTED asks for a retry of the whole read-modify-write, which only
    /// the caller can restart: the same call again meets the same
    /// conflict, and it says nothing of the route's health.
    #[test]
    fn aborted_is_the_callers_to_restart() {
        let f = classify_grpc(10, Some("transaction aborted"), cx(200));
        assert_eq!(
            (f.class(), f.code(), f.action()),
            (Class::Permanent, Code::BadRequest, Action::Surface)
        );
        assert_eq!(f.provider_code(), Some("10"));
    }

    /// A tonic server's own time bound (`Server::timeout`, an expired
    /// `grpc-timeout`) answers CANCELLED with tonic's words for it: the
    /// server ran out of time, as DEADLINE_EXCEEDED says. Any other
    /// CANCELLED stays the cancellation it says it is.
    #[test]
    fn a_tonic_servers_timeout_is_a_timeout() {
        for status in [Some(200), None] {
            let c = ErrorContext { status, ..cx(200) };
            let f = classify_grpc(1, Some("Timeout expired"), c);
            assert_eq!((f.class(), f.code()), (Class::Transient, Code::Timeout));
            assert_eq!(f.provider_code(), Some("1"));
            assert_eq!(f.message(), Some("Timeout expired"));
        }
        for message in [
            None,
            Some("the caller went away"),
            Some("timeout expired soon"),
        ] {
            let f = classify_grpc(1, message, cx(200));
            assert_eq!(
                (f.class(), f.code()),
                (Class::Permanent, Code::Cancelled),
                "{message:?}"
            );
        }
    }

    #[test]
    fn genai_names_follow_the_wire_and_the_host() {
        for (provider, host, name) in [
            (Provider::OpenAi, "api.openai.com", Some("openai")),
            (Provider::OpenAiResponses, "api.openai.com", Some("openai")),
            (Provider::OpenAi, "127.0.0.1", Some("openai")),
            (
                Provider::OpenAi,
                "my.openai.azure.com",
                Some("azure.ai.openai"),
            ),
            (Provider::OpenAi, "notopenai.azure.com", Some("openai")),
            (
                Provider::OpenAi,
                "my.cognitiveservices.azure.com",
                Some("azure.ai.openai"),
            ),
            // A route named anything: no panic on a character boundary.
            (Provider::OpenAi, "маршрут-по-умолчанию", Some("openai")),
            (Provider::Gemini, "ä", Some("gcp.gen_ai")),
            (Provider::Anthropic, "api.anthropic.com", Some("anthropic")),
            (
                Provider::Anthropic,
                "us-east5-aiplatform.googleapis.com",
                Some("gcp.vertex_ai"),
            ),
            (
                Provider::Gemini,
                "generativelanguage.googleapis.com",
                Some("gcp.gemini"),
            ),
            // Gemini's OpenAI-compatible endpoint is still Gemini's.
            (
                Provider::OpenAi,
                "generativelanguage.googleapis.com",
                Some("gcp.gemini"),
            ),
            (
                Provider::Gemini,
                "aiplatform.googleapis.com",
                Some("gcp.vertex_ai"),
            ),
            (
                Provider::Gemini,
                "gemini-proxy.internal",
                Some("gcp.gen_ai"),
            ),
            (Provider::Http, "api.openai.com", None),
        ] {
            assert_eq!(provider.genai_name(host), name, "{provider:?} at {host}");
        }
    }

    /// `ErrorInfo.metadata` names the quota a 429 met
    /// (`RATE_LIMIT_EXCEEDED`, Google's `ErrorReason` reference): a limit
    /// of zero (`quota_limit_value: "0"`, a region or tier without the
    /// model) is a wall with no reset, a per-day `quota_limit` a wall that
    /// lifts at the day's end as a per-day `QuotaFailure` does, and a
    /// per-minute limit of 60 stays a rate limit.
    #[test]
    fn gemini_error_info_metadata_names_the_quota() {
        let body = |limit: &str, value: &str| {
            format!(
                r#"{{"error":{{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com' for consumer 'project_number:1'.","status":"RESOURCE_EXHAUSTED","details":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RATE_LIMIT_EXCEEDED","domain":"googleapis.com","metadata":{{"quota_unit":"1/min/{{project}}/{{region}}","quota_limit":"{limit}","quota_limit_value":{value},"quota_metric":"generativelanguage.googleapis.com/generate_content_requests"}}}}]}}}}"#
            )
        };
        let classify = |body: String| classify_error(Provider::Gemini, body.as_bytes(), cx(429));
        for zero in [r#""0""#, "0"] {
            let f = classify(body(
                "GenerateContentRequestsPerMinutePerProjectPerRegion",
                zero,
            ));
            assert_eq!(
                (f.class(), f.code(), f.reset_at()),
                (Class::Permanent, Code::QuotaExhausted, None),
                "{zero}"
            );
        }
        let per_day_failure = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]}]}}"#;
        let daily_reset = classify_error(Provider::Gemini, per_day_failure, cx(429)).reset_at();
        assert_eq!(
            daily_reset,
            Some(cx(429).now + Duration::from_secs(24 * 3600))
        );
        for day in [
            "GenerateRequestsPerDayPerProjectPerModel",
            "defaultPerDayPerProject",
        ] {
            let f = classify(body(day, r#""250""#));
            assert_eq!(
                (f.class(), f.code(), f.reset_at()),
                (Class::Permanent, Code::QuotaExhausted, daily_reset),
                "{day}"
            );
        }
        let f = classify(body(
            "GenerateContentRequestsPerMinutePerProjectPerRegion",
            r#""60""#,
        ));
        assert_eq!((f.class(), f.code()), (Class::Transient, Code::RateLimited));
        // Metadata of another shape says nothing, and costs the rest of
        // the error nothing: the key's reason is still read.
        for metadata in [r#""x""#, "[1]", "null", r#"{"quota_limit_value":{"a":0}}"#] {
            let odd = format!(
                r#"{{"error":{{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","metadata":{metadata}}}]}}}}"#
            );
            let f = classify_error(Provider::Gemini, odd.as_bytes(), cx(400));
            assert_eq!(f.code(), Code::Auth, "{metadata}");
        }
    }
}
