//! Reading a provider request: the method and route checks, the capped body,
//! and the few fields an answer depends on (model, stream, usage, and where a
//! resumed answer continues).

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use serde::Deserialize;

use super::{FAULT_HEADER, MAX_MODEL_LEN};
use crate::fault::FaultParseError;
use crate::wire::Provider;

/// What a request asked for, once its body is read.
pub(super) struct RequestShape {
    pub(super) model: String,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
    /// The answer continues after this many tokens: the conversation ends
    /// with an assistant (or model) turn whose text ends in `wK`, the way a
    /// client resumes an interrupted stream.
    pub(super) continues_after: u32,
    /// Gemini's JSON-array stream (`streamGenerateContent` without `alt=sse`).
    pub(super) json_array: bool,
}

/// What a Gemini path says that other providers put in the body: (model,
/// stream, JSON-array stream).
pub(super) type FromPath = Option<(String, bool, bool)>;

/// A refusal by the server itself, before any fault applies.
pub(super) struct Rejection {
    pub(super) status: u16,
    pub(super) code: &'static str,
    pub(super) message: String,
}

impl Rejection {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Rejection {
            status,
            code,
            message: message.into(),
        }
    }
}

impl From<FaultParseError> for Rejection {
    fn from(e: FaultParseError) -> Self {
        Rejection::new(400, e.code(), format!("{FAULT_HEADER}: {e}"))
    }
}

/// Why a request body was not read.
pub(super) enum Unread {
    /// Answer with this refusal.
    Rejected(Rejection),
    /// The client is gone or broke the framing: nobody to answer.
    ClientGone(String),
}

/// Checks the method and route, then reads the body up to `cap` bytes.
pub(super) async fn read_body(
    provider: Provider,
    req: Request<Incoming>,
    cap: usize,
) -> Result<(Bytes, FromPath), Unread> {
    let path = req.uri().path();
    if req.method() != Method::POST {
        return Err(Unread::Rejected(Rejection::new(
            405,
            "method_not_allowed",
            format!("seawall-chaos: {path} takes POST"),
        )));
    }
    let from_path = match provider {
        Provider::Gemini => {
            let query = req.uri().query().unwrap_or_default();
            Some(gemini_route(path, query).map_err(Unread::Rejected)?)
        }
        _ => None,
    };
    match read_capped(req, cap).await {
        Ok(body) => Ok((body, from_path)),
        Err(ReadError::TooLarge) => Err(Unread::Rejected(Rejection::new(
            413,
            "request_too_large",
            format!("seawall-chaos: request body exceeds {cap} bytes"),
        ))),
        Err(ReadError::Client(error)) => Err(Unread::ClientGone(error)),
    }
}

pub(super) enum ReadError {
    TooLarge,
    Client(String),
}

/// The body, refused without being buffered when it is over `cap`.
pub(super) async fn read_capped(req: Request<Incoming>, cap: usize) -> Result<Bytes, ReadError> {
    let declared = seawall_internal::headers::declared_length(req.headers());
    if declared.is_some_and(|len| len > cap as u64) {
        return Err(ReadError::TooLarge);
    }
    match Limited::new(req.into_body(), cap).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<LengthLimitError>() => Err(ReadError::TooLarge),
        Err(e) => Err(ReadError::Client(e.to_string())),
    }
}

/// `/v1beta/models/{model}:{action}` → (model, stream, JSON-array stream).
fn gemini_route(path: &str, query: &str) -> Result<(String, bool, bool), Rejection> {
    let rest = path.strip_prefix("/v1beta/models/").unwrap_or_default();
    let not_found = || {
        Rejection::new(
            404,
            "no_route",
            format!(
                "seawall-chaos: expected /v1beta/models/{{model}}:generateContent or :streamGenerateContent, got {path}"
            ),
        )
    };
    let (model, action) = rest.split_once(':').ok_or_else(not_found)?;
    if model.is_empty() {
        return Err(not_found());
    }
    // Refused before the body is read: nothing in it can make the path right.
    check_model_len(model)?;
    match action {
        "generateContent" => Ok((model.to_owned(), false, false)),
        // Without `alt=sse` Gemini streams one JSON array.
        "streamGenerateContent" => Ok((
            model.to_owned(),
            true,
            !query.split('&').any(|kv| kv == "alt=sse"),
        )),
        _ => Err(not_found()),
    }
}

/// The request's shape: the body's fields, with the model and stream of a
/// Gemini path taking precedence.
pub(super) fn parse_request(
    provider: Provider,
    body: &[u8],
    from_path: FromPath,
) -> Result<RequestShape, Rejection> {
    let mut fields: RequestFields = serde_json::from_slice(body).map_err(|e| {
        Rejection::new(
            400,
            "invalid_json",
            format!("seawall-chaos: request body is not valid JSON: {e}"),
        )
    })?;
    let continues_after = continues_after(&fields.turns(provider));
    let include_usage =
        provider == Provider::OpenAi && fields.stream_options.is_some_and(|o| o.include_usage);
    let (model, stream, json_array) = match from_path {
        Some(from_path) => from_path,
        None => (
            fields.model.unwrap_or_else(|| "chaos-model".to_owned()),
            fields.stream,
            false,
        ),
    };
    check_model_len(&model)?;
    Ok(RequestShape {
        model,
        stream,
        include_usage,
        continues_after,
        json_array,
    })
}

/// A model name over [`MAX_MODEL_LEN`] is refused with a 400 rather than
/// cut: the journal row and every token frame repeat the model, so an
/// unbounded one would cost its size per row and per frame, and a cut one
/// would echo a model the client never asked for.
fn check_model_len(model: &str) -> Result<(), Rejection> {
    if model.len() <= MAX_MODEL_LEN {
        return Ok(());
    }
    Err(Rejection::new(
        400,
        "model_too_long",
        format!(
            "seawall-chaos: model name is {} bytes; at most {MAX_MODEL_LEN} are accepted",
            model.len()
        ),
    ))
}

#[derive(Deserialize)]
struct RequestFields {
    model: Option<String>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    /// OpenAI and Anthropic conversations.
    #[serde(default)]
    messages: Vec<Turn>,
    /// Gemini conversations.
    #[serde(default)]
    contents: Vec<Turn>,
    /// Responses API input: a string, or a list of items.
    #[serde(default)]
    input: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

impl RequestFields {
    /// The turns of the conversation, in `provider`'s field. Responses input
    /// items that are not turns (tool calls, ...) count as turns of no role.
    fn turns(&mut self, provider: Provider) -> Vec<Turn> {
        match provider {
            Provider::OpenAi | Provider::Anthropic => std::mem::take(&mut self.messages),
            Provider::Gemini => std::mem::take(&mut self.contents),
            Provider::OpenAiResponses => match self.input.take() {
                Some(serde_json::Value::Array(items)) => items
                    .into_iter()
                    .map(|item| serde_json::from_value(item).unwrap_or_default())
                    .collect(),
                _ => Vec::new(),
            },
        }
    }
}

/// One conversation turn, in any of the four shapes: only what continuation needs.
#[derive(Default, Deserialize)]
struct Turn {
    #[serde(default)]
    role: String,
    /// OpenAI / Anthropic / Responses: a string or a list of content blocks (parts).
    #[serde(default)]
    content: Option<serde_json::Value>,
    /// Gemini: a list of parts.
    #[serde(default)]
    parts: Option<serde_json::Value>,
}

impl Turn {
    /// The text of the turn: the string content, or the `text` of its blocks/parts.
    fn text(&self) -> String {
        let blocks = match (&self.content, &self.parts) {
            (Some(serde_json::Value::String(text)), _) => return text.clone(),
            (Some(list), _) | (None, Some(list)) => list,
            (None, None) => return String::new(),
        };
        blocks
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.get("text").and_then(serde_json::Value::as_str))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `K` when the last turn is the assistant's (`assistant` or Gemini's `model`)
/// and its text ends with the token `wK`.
fn continues_after(turns: &[Turn]) -> u32 {
    let Some(last) = turns.last() else { return 0 };
    if last.role != "assistant" && last.role != "model" {
        return 0;
    }
    last.text()
        .split_whitespace()
        .last()
        .and_then(|token| token.strip_prefix('w'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
