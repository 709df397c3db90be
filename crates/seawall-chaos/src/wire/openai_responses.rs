//! OpenAI Responses API: `POST /v1/responses`.
//!
//! A stream is a list of typed events, each `event: <type>` plus a `data:`
//! object carrying the same `type` and a `sequence_number` counted from 0
//! over the whole stream. The numbers follow from the shape of the stream:
//! the preamble is `response.created` (0) and `response.in_progress` (1);
//! the first token opens the message item and its text part (2, 3) before
//! its delta (4); token deltas then count up by one. So the next number is a
//! function of the content tokens written so far ([`next_seq`]), and every
//! frame can be built from what the body already knows.

use serde_json::{Value, json};

use super::{Ctx, Finish, Sent, token_text};
use crate::fault::{StatusFault, StatusKind};

/// `created_at` of every response: fixed, so bodies are byte-for-byte reproducible.
const CREATED_AT: u64 = 1;

/// What the Responses API says when it refuses.
pub(super) const REFUSAL_TEXT: &str = "I can't help with that.";

/// Where a unary body is split around its answer text; never in a real body
/// (the model name is JSON-escaped, token words are ASCII letters and digits).
const CUT: &str = "\u{0}";

/// One event: `event: kind` and its data, `fields` being the JSON members
/// between `type` and `sequence_number`.
fn event(kind: &str, fields: &str, seq: u32) -> String {
    let sep = if fields.is_empty() { "" } else { "," };
    format!(
        "event: {kind}\ndata: {{\"type\":\"{kind}\"{sep}{fields},\"sequence_number\":{seq}}}\n\n"
    )
}

/// The sequence number of the first event after the preamble and `tokens` text deltas.
fn next_seq(tokens: u32) -> u32 {
    if tokens == 0 { 2 } else { 4 + tokens }
}

/// The id of the single message item: `msg_` plus the response id's tail.
fn item_id(ctx: &Ctx) -> String {
    format!("msg_{}", ctx.id.strip_prefix("resp_").unwrap_or(&ctx.id))
}

fn text_part(text: &str) -> String {
    format!(r#"{{"type":"output_text","text":"{text}","annotations":[]}}"#)
}

fn refusal_part(refusal: &str) -> String {
    format!(r#"{{"type":"refusal","refusal":"{refusal}"}}"#)
}

fn message_item(ctx: &Ctx, status: &str, content: &str) -> String {
    format!(
        r#"{{"type":"message","id":"{}","status":"{status}","role":"assistant","content":[{content}]}}"#,
        item_id(ctx)
    )
}

/// `(status, incomplete_details)` of a response that ended with `finish`.
fn status(finish: Finish) -> (&'static str, &'static str) {
    match finish {
        Finish::Stop | Finish::Refusal => ("completed", "null"),
        Finish::Length => ("incomplete", r#"{"reason":"max_output_tokens"}"#),
    }
}

/// The usage object as OpenAI sends it, the two detail objects included:
/// clients that read the answer into typed structs (async-openai's
/// `ResponseUsage`) require them.
fn usage(ctx: &Ctx, tokens: u32) -> String {
    format!(
        r#"{{"input_tokens":{},"input_tokens_details":{{"cached_tokens":0}},"output_tokens":{tokens},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
        ctx.prompt_tokens,
        u64::from(ctx.prompt_tokens) + u64::from(tokens)
    )
}

/// The response object: `output` is the list's inside, `usage` absent while in progress.
fn response(
    ctx: &Ctx,
    status: &str,
    incomplete_details: &str,
    output: &str,
    usage: Option<String>,
) -> String {
    format!(
        r#"{{"id":"{}","object":"response","created_at":{CREATED_AT},"status":"{status}","error":null,"incomplete_details":{incomplete_details},"model":{},"output":[{output}],"usage":{}}}"#,
        ctx.id,
        ctx.model_json,
        usage.as_deref().unwrap_or("null")
    )
}

fn lifecycle(ctx: &Ctx, kind: &str, seq: u32) -> String {
    let response = response(ctx, "in_progress", "null", "", None);
    event(kind, &format!(r#""response":{response}"#), seq)
}

/// `response.created`: what `frame_then_eof` sends.
pub(super) fn created(ctx: &Ctx) -> String {
    lifecycle(ctx, "response.created", 0)
}

/// `response.created` and `response.in_progress`.
pub(super) fn preamble(ctx: &Ctx) -> String {
    created(ctx) + &lifecycle(ctx, "response.in_progress", 1)
}

fn item_added(ctx: &Ctx, seq: u32) -> String {
    let item = message_item(ctx, "in_progress", "");
    event(
        "response.output_item.added",
        &format!(r#""output_index":0,"item":{item}"#),
        seq,
    )
}

/// `response.content_part.added` / `.done` of part `index`.
fn part_event(ctx: &Ctx, kind: &str, index: usize, part: &str, seq: u32) -> String {
    event(
        kind,
        &format!(
            r#""item_id":"{}","output_index":0,"content_index":{index},"part":{part}"#,
            item_id(ctx)
        ),
        seq,
    )
}

/// An event about part `index` with one more member, `field` (`delta`, `text`, `refusal`).
fn part_text_event(
    ctx: &Ctx,
    kind: &str,
    index: usize,
    field: &str,
    value: &str,
    seq: u32,
) -> String {
    event(
        kind,
        &format!(
            r#""item_id":"{}","output_index":0,"content_index":{index},"{field}":"{value}""#,
            item_id(ctx)
        ),
        seq,
    )
}

/// Token `i`, after `sent` earlier tokens of this stream; the first one opens
/// the message item and its text part.
pub(super) fn token_events(ctx: &Ctx, i: u32, sent: u32) -> String {
    let mut out = String::new();
    if sent == 0 {
        out += &item_added(ctx, 2);
        out += &part_event(ctx, "response.content_part.added", 0, &text_part(""), 3);
    }
    out += &part_text_event(
        ctx,
        "response.output_text.delta",
        0,
        "delta",
        &token_text(i),
        4 + sent,
    );
    out
}

/// Everything after the last delta: the text part and the message item
/// closed (a refusal part in between for `Refusal`), then the one terminal
/// event carrying the whole response.
pub(super) fn finish_events(ctx: &Ctx, finish: Finish, sent: Sent) -> String {
    let mut seq = next_seq(sent.count);
    let mut next = || {
        seq += 1;
        seq - 1
    };
    let mut out = String::new();
    let mut parts = Vec::new();
    if sent.count > 0 {
        let (events, part) = close_text(ctx, sent, &mut next);
        out += &events;
        parts.push(part);
    }
    if finish == Finish::Refusal {
        if parts.is_empty() {
            out += &item_added(ctx, next());
        }
        let index = parts.len();
        let added = refusal_part("");
        out += &part_event(ctx, "response.content_part.added", index, &added, next());
        for (kind, field) in [
            ("response.refusal.delta", "delta"),
            ("response.refusal.done", "refusal"),
        ] {
            out += &part_text_event(ctx, kind, index, field, REFUSAL_TEXT, next());
        }
        let part = refusal_part(REFUSAL_TEXT);
        out += &part_event(ctx, "response.content_part.done", index, &part, next());
        parts.push(part);
    }
    let (status, incomplete_details) = status(finish);
    let output = if parts.is_empty() {
        String::new()
    } else {
        let item = message_item(ctx, status, &parts.join(","));
        out += &event(
            "response.output_item.done",
            &format!(r#""output_index":0,"item":{item}"#),
            next(),
        );
        item
    };
    let terminal = match finish {
        Finish::Length => "response.incomplete",
        Finish::Stop | Finish::Refusal => "response.completed",
    };
    let response = response(
        ctx,
        status,
        incomplete_details,
        &output,
        Some(usage(ctx, sent.count)),
    );
    out += &event(terminal, &format!(r#""response":{response}"#), next());
    out
}

/// `response.output_text.done` and `response.content_part.done` of the
/// text part holding the `sent` run, numbered by `next`; and that part, done.
fn close_text(ctx: &Ctx, sent: Sent, mut next: impl FnMut() -> u32) -> (String, String) {
    let text = sent.text();
    let mut out = part_text_event(ctx, "response.output_text.done", 0, "text", &text, next());
    let part = text_part(&text);
    out += &part_event(ctx, "response.content_part.done", 0, &part, next());
    (out, part)
}

/// The in-stream error after `tokens` text deltas.
pub(super) fn stream_error(tokens: u32) -> String {
    event(
        "error",
        r#""code":"server_error","message":"The server had an error while processing your request.","param":null"#,
        next_seq(tokens),
    )
}

/// A function call opens and its arguments start streaming, after the
/// `sent` run of text deltas. As the API streams it, and as the SDKs'
/// accumulators (openai-python's `ResponseStreamState`) require, every event
/// about an output item follows that item's `response.output_item.added`
/// at the same `output_index`: the message item, when this stream opened
/// one, is closed first (text done, part done, item done); the call is then
/// added after it (index 1), or first (index 0) when no text was sent
/// (`tokens=0`, or a resumed continuation that sent nothing before the
/// call); then its first arguments delta. All numbered on from the deltas.
pub(super) fn tool_call_events(ctx: &Ctx, sent: Sent) -> String {
    let mut seq = next_seq(sent.count);
    let mut next = || {
        seq += 1;
        seq - 1
    };
    let mut out = String::new();
    let mut output_index = 0;
    if sent.count > 0 {
        let (events, part) = close_text(ctx, sent, &mut next);
        out += &events;
        let item = message_item(ctx, "completed", &part);
        out += &event(
            "response.output_item.done",
            &format!(r#""output_index":0,"item":{item}"#),
            next(),
        );
        output_index = 1;
    }
    let tail = ctx.id.strip_prefix("resp_").unwrap_or(&ctx.id);
    let item_id = format!("fc_{tail}");
    out += &event(
        "response.output_item.added",
        &format!(
            r#""output_index":{output_index},"item":{{"type":"function_call","id":"{item_id}","call_id":"call_chaos","name":"lookup","arguments":"","status":"in_progress"}}"#
        ),
        next(),
    );
    out += &event(
        "response.function_call_arguments.delta",
        &format!(r#""item_id":"{item_id}","output_index":{output_index},"delta":"{{\"q\":""#),
        next(),
    );
    out
}

/// The unary response split around its text. Without tokens there is no
/// text part: the split falls at the start of `output`, which then holds
/// nothing (`empty`) or a message with only the refusal.
pub(super) fn unary_parts(ctx: &Ctx, finish: Finish, tokens: u32) -> (String, String) {
    let (status, incomplete_details) = status(finish);
    let refusal = (finish == Finish::Refusal).then(|| refusal_part(REFUSAL_TEXT));
    let output = if tokens > 0 {
        let content: Vec<String> = std::iter::once(text_part(CUT)).chain(refusal).collect();
        message_item(ctx, status, &content.join(","))
    } else {
        let item = refusal
            .map(|part| message_item(ctx, status, &part))
            .unwrap_or_default();
        format!("{CUT}{item}")
    };
    let body = response(
        ctx,
        status,
        incomplete_details,
        &output,
        Some(usage(ctx, tokens)),
    );
    let (prefix, suffix) = body.split_once(CUT).unwrap_or((&body, ""));
    (prefix.to_owned(), suffix.to_owned())
}

/// Chat completions' error bodies, with the request field named `input`.
pub(super) fn error_body(model: &str, fault: &StatusFault) -> Value {
    let (message, code) = match fault.kind {
        Some(StatusKind::ContextLength) => (
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            Some("context_length_exceeded"),
        ),
        Some(StatusKind::BadArgs) => (
            "Invalid type for 'input': expected one of a string or array of input items, but got an object instead.",
            Some("invalid_type"),
        ),
        _ => return super::openai::error_body(model, fault),
    };
    json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": code}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Provider;

    fn ctx() -> Ctx {
        Ctx::new(Provider::OpenAiResponses, "gpt-x", 7, false, 40)
    }

    fn sequence_numbers(stream: &str) -> Vec<u64> {
        stream
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str::<Value>(d).unwrap()["sequence_number"].clone())
            .map(|n| n.as_u64().unwrap())
            .collect()
    }

    #[test]
    fn a_stream_numbers_its_events_from_zero_without_gaps() {
        let ctx = ctx();
        for finish in [Finish::Stop, Finish::Length, Finish::Refusal] {
            for count in [0, 1, 3] {
                let mut stream = preamble(&ctx);
                for i in 1..=count {
                    stream += &token_events(&ctx, i, i - 1);
                }
                stream += &finish_events(&ctx, finish, Sent { count, last: count });
                let seqs = sequence_numbers(&stream);
                assert!(seqs.iter().copied().eq(0..seqs.len() as u64), "{stream}");
            }
        }
        let mut cut = preamble(&ctx) + &token_events(&ctx, 1, 0);
        cut += &stream_error(1);
        let seqs = sequence_numbers(&cut);
        assert!(seqs.iter().copied().eq(0..seqs.len() as u64), "{cut}");
        // A tool call cut after 0 or 2 tokens numbers on from the deltas.
        for count in [0, 2] {
            let mut cut = preamble(&ctx);
            for i in 1..=count {
                cut += &token_events(&ctx, i, i - 1);
            }
            cut += &tool_call_events(&ctx, Sent { count, last: count });
            let seqs = sequence_numbers(&cut);
            assert!(seqs.iter().copied().eq(0..seqs.len() as u64), "{cut}");
        }
    }

    #[test]
    fn unary_parts_make_valid_json_around_any_text() {
        let ctx = ctx();
        for finish in [Finish::Stop, Finish::Length, Finish::Refusal] {
            for tokens in [0, 2] {
                let (prefix, suffix) = unary_parts(&ctx, finish, tokens);
                let body = format!("{prefix}{}{suffix}", crate::wire::answer_text(tokens));
                let v: Value = serde_json::from_str(&body).expect(&body);
                assert_eq!(v["object"], "response");
                assert!(!prefix.contains(CUT) && !suffix.contains(CUT));
            }
        }
    }
}
