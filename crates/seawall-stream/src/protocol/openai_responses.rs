//! OpenAI Responses API stream events (`POST /v1/responses`, `stream: true`).
//!
//! Every event names its `type`; the stream ends with exactly one terminal
//! event — `response.completed`, `response.incomplete` or
//! `response.failed` — or an `error` event, and has no `[DONE]` (one sent
//! anyway proves nothing: [`Decoder`](super::Decoder)). Content is
//! text (`response.output_text.delta`), a refusal (`response.refusal.delta`,
//! which makes the whole answer a refusal) or a tool call's arguments
//! (`response.function_call_arguments.delta`); everything else is the
//! response's lifecycle and counts as progress, but the model at work
//! before its answer (reasoning text, a compaction's progress, a
//! response waiting `queued` in the provider's queue, and a `keepalive`
//! inside an open reasoning or compaction item, while a hosted tool runs
//! or while the response is queued: see [`keepalive`] and [`decode`]),
//! which is thinking. The terminal event's response says how it ended
//! (its `status` over the event's name: vLLM ends every stream with
//! `response.completed`), and, when no content
//! came before it, holds the answer itself (a proxy's stream made from a
//! unary answer). A live stream's `cancelled` is the engine's abort,
//! asked again before content; a stored response's (the unary check's)
//! is a cancelled background run.

use seawall_core::provider::openai_responses::{
    OutputItem, StreamEvent, answer_in_event, declared_failure, error_event, incomplete_kind,
    output_item, runs_at_the_provider, stream_event, works_unseen,
};
use seawall_core::usage::UsageFields;
use seawall_core::{FinishKind, Usage};

use super::wire::{Text, parse};
use super::{Reason, Signal};
use seawall_core::provider::QuotaWall;
use seawall_internal::json::MaybeText;

// Read member by member ([`later_wins!`](seawall_core::later_wins)): a
// member named twice is the later one, as the SDKs read it.
seawall_core::later_wins! {
    struct Event<'a> {
        ty: Text<'a> = "type" required,
        /// A string in every event seawall reads it from; an object in
        /// others (the shell output's `{stdout, stderr}`), which must not
        /// make the event unreadable.
        delta: Option<MaybeText<'a>> = "delta",
        response: Option<Response<'a>> = "response",
        /// `response.output_item.added`/`.done`'s item, for its type.
        item: Option<Item<'a>> = "item",
    }
}

seawall_core::later_wins! {
    struct Item<'a> {
        ty: Option<Text<'a>> = "type",
        /// A shell call's, where its commands run: a container, or
        /// `local` (the caller's).
        environment: Option<Environment<'a>> = "environment",
    }
}

seawall_core::later_wins! {
    struct Environment<'a> {
        ty: Option<Text<'a>> = "type",
    }
}

seawall_core::later_wins! {
    struct Response<'a> {
        /// How the response ended, which a terminal event's name need not
        /// say: vLLM ends every stream with `response.completed`, the
        /// status inside `incomplete` when the token limit cut the answer.
        status: Option<Text<'a>> = "status",
        usage: Option<UsageFields> = "usage",
        incomplete_details: Option<Incomplete<'a>> = "incomplete_details",
        error: Option<ResponseError<'a>> = "error",
    }
}

seawall_core::later_wins! {
    struct Incomplete<'a> {
        reason: Option<Text<'a>> = "reason",
    }
}

seawall_core::later_wins! {
    pub(super) struct ResponseError<'a> {
        code: Option<Text<'a>> = "code",
        message: Option<Text<'a>> = "message",
    }
}

/// A `keepalive`: a keep-alive, but while the model is at work out of
/// sight (`at_work`), the model at work: while an item that works unseen
/// is open (a `reasoning` or `compaction` item, or a hosted tool's call
/// or output, was added and is not done: [`works_unseen`]), after a
/// hosted shell call's item until the next item starts (its commands run
/// then: [`runs_at_the_provider`]), and while the response is `queued`
/// (see [`decode`]). With its summary off (the default), a long
/// reasoning run sends its item's start and then only keep-alives until
/// the answer, as a compaction may: cut at the first-content bound (or,
/// between the answer's parts, at the idle bound), the retry would
/// reason and be billed as long again. A hosted tool (an image render takes minutes)
/// sends its item's start, which is content, then only keep-alives until
/// its result: cut at the idle bound, the billed result is lost and the
/// call is not resumed. Read as thinking, they keep those bounds off
/// while they keep coming within the idle bound; an item that falls
/// silent is still cut, and `max_duration` still bounds the whole.
fn keepalive(at_work: bool) -> Signal<'static> {
    if at_work {
        Signal::Thinking
    } else {
        Signal::KeepAlive
    }
}

/// `content_seen`: a content event came before this one. `at_work`: the
/// model is at work out of sight (see [`keepalive`]): set at the
/// `response.output_item.added` of an item that works unseen, at the
/// `.done` of a call the provider runs, and by a response whose status
/// is `queued`; cleared at the next item's start or end, by a response
/// with any other status (`response.in_progress`: the run began), at the
/// terminal event and at an `error`.
///
/// A background response (`background: true`) may wait in the
/// provider's queue before it runs: `response.created` and
/// `response.queued` say `queued`, and `response.in_progress` comes
/// when it leaves the queue, which may be long after. The provider has
/// said where the response is, so the wait is the provider's work, not
/// a stalled stream: the queued status is read as the model at work
/// (thinking), and so are its keep-alives until `response.in_progress`
/// or the first item. The guard hands a background stream on at its
/// head, but its bounds still run: cut at the first-content bound
/// while still queued, it is an interruption for the caller while the
/// stored response stays queued, runs and is billed (a background run
/// is not cancelled by a closed stream), and the caller's retry queues
/// a second one. So that bound gives way while
/// keep-alives keep coming within the idle bound (and a held stream of
/// a queued response is handed on before the attempt's bound rather
/// than cut and asked again, as a thinking model's is). A queue that
/// falls silent is still cut (at the first-content bound, or past it at
/// the idle bound after its last keep-alive), and the attempt's
/// deadline and `max_duration` still bound the whole.
pub(super) fn decode<'a>(
    data: &'a [u8],
    refused: &mut bool,
    at_work: &mut bool,
    usage: &mut Option<Usage>,
    content_seen: bool,
    quota_wall: QuotaWall,
) -> Signal<'a> {
    let Some(event) = parse::<Event<'_>>(data) else {
        return Signal::Other;
    };
    // The terminal events carry the whole response, usage included.
    let reported = event
        .response
        .as_ref()
        .and_then(|r| r.usage.as_ref())
        .and_then(UsageFields::usage);
    if let Some(found) = reported {
        *usage = Some(found);
    }
    let mut kind = stream_event(&event.ty.0);
    match kind {
        // Items stream one after another (each one's `.done` before the
        // next one's `.added`): any item's start or end ends the work
        // before it; only the start of an item that works unseen, or the
        // end of a call the provider then runs, opens some.
        StreamEvent::Item => {
            let item = event.item.as_ref();
            let ty = item.and_then(|item| item.ty.as_ref());
            *at_work = match ty {
                Some(Text(ty)) if event.ty.0 == "response.output_item.added" => works_unseen(ty),
                Some(Text(ty)) => runs_at_the_provider(
                    ty,
                    item.and_then(|item| item.environment.as_ref())
                        .and_then(|env| env.ty.as_ref())
                        .map(|env| &*env.0),
                ),
                None => false,
            };
        }
        // The response's status in a lifecycle event (`response.created`,
        // `.queued`, `.in_progress`): queued is the provider's work (see
        // above), any other ends it.
        StreamEvent::Lifecycle => {
            if let Some(Text(status)) = event.response.as_ref().and_then(|r| r.status.as_ref()) {
                *at_work = status == "queued";
                if *at_work {
                    return Signal::Thinking;
                }
            }
        }
        StreamEvent::Completed
        | StreamEvent::Incomplete
        | StreamEvent::Failed
        | StreamEvent::Error => *at_work = false,
        _ => {}
    }
    // A terminal event's response says how it ended, as the unary check
    // reads the same response: `incomplete` is cut, `failed` failed; a
    // live stream's `cancelled` is an engine's abort (the unary check's is
    // a background run someone cancelled), whichever event carries it.
    if matches!(kind, StreamEvent::Completed | StreamEvent::Incomplete) {
        match event.response.as_ref().and_then(|r| r.status.as_ref()) {
            Some(Text(status)) if status == "incomplete" => kind = StreamEvent::Incomplete,
            Some(Text(status)) if status == "failed" => kind = StreamEvent::Failed,
            Some(Text(status)) if status == "cancelled" => {
                return Signal::Finish(Reason {
                    kind: FinishKind::Aborted,
                    reason: "cancelled".into(),
                });
            }
            _ => {}
        }
    }
    match kind {
        StreamEvent::TextDelta => match event.delta.and_then(|d| d.0).and_then(Text::non_empty) {
            Some(text) => Signal::Content {
                text: Some(text),
                finish: None,
                act: false,
            },
            None => Signal::Progress,
        },
        StreamEvent::RefusalDelta => {
            *refused |= event
                .delta
                .and_then(|d| d.0)
                .and_then(Text::non_empty)
                .is_some();
            Signal::Progress
        }
        StreamEvent::ActDelta => Signal::Content {
            text: None,
            finish: None,
            act: true,
        },
        // An item that is an act (a tool call, a server tool's result) is
        // content from the moment it is named; messages count by their
        // text deltas, reasoning not at all.
        StreamEvent::Item => match event.item.and_then(|item| item.ty) {
            Some(ty) if output_item(&ty.0) == OutputItem::Act => Signal::Content {
                text: None,
                finish: None,
                act: true,
            },
            _ => Signal::Progress,
        },
        StreamEvent::Completed => terminal(
            data,
            content_seen,
            Reason {
                kind: if *refused {
                    FinishKind::Refused
                } else {
                    FinishKind::Complete
                },
                reason: "completed".into(),
            },
        ),
        StreamEvent::Incomplete => {
            let reason = event
                .response
                .and_then(|r| r.incomplete_details)
                .and_then(|d| d.reason)
                .map_or_else(|| "incomplete".into(), |Text(reason)| reason);
            // A refusal cut short is still a refusal, as the unary check
            // reads the same response.
            let kind = if *refused {
                FinishKind::Refused
            } else {
                incomplete_kind(&reason)
            };
            terminal(data, content_seen, Reason { kind, reason })
        }
        StreamEvent::Failed => {
            let error = event.response.and_then(|r| r.error);
            let failure = declared_failure(
                error.as_ref().and_then(|e| e.code.as_ref()).map(|c| &*c.0),
                error
                    .as_ref()
                    .and_then(|e| e.message.as_ref())
                    .map(|m| &*m.0),
                quota_wall,
            );
            // The terminal event's usage is the whole count of what the
            // response used before it failed: billed.
            Signal::Error(Box::new(match reported {
                Some(found) => failure.with_usage(found),
                None => failure,
            }))
        }
        // Read again, by core's reader of OpenAI's error object: the event
        // comes flat or nested, and ends the stream, so once.
        StreamEvent::Error => Signal::Error(Box::new(error_event(data, quota_wall))),
        StreamEvent::KeepAlive => keepalive(*at_work),
        // New summary content sampled: the model at work.
        StreamEvent::Compacting => Signal::Thinking,
        StreamEvent::ReasoningDelta => {
            match event.delta.and_then(|d| d.0).and_then(Text::non_empty) {
                Some(_) => Signal::Thinking,
                None => Signal::Progress,
            }
        }
        // Lifecycle, part boundaries, reasoning, tool progress: the
        // response is moving, the caller has nothing new to show.
        StreamEvent::Lifecycle => Signal::Progress,
        StreamEvent::Unknown => Signal::Other,
    }
}

/// The terminal event's signal: its finish, and, when no content came
/// before it, the answer its response holds ([`answer_in_event`]): some
/// servers send the whole answer there alone (a proxy's stream made from
/// a unary answer). Read as empty, it was asked again and billed again.
/// A refusal there is the finish's, as a refusal delta's would be.
fn terminal<'a>(data: &[u8], content_seen: bool, finish: Reason<'a>) -> Signal<'a> {
    if content_seen {
        return Signal::Finish(finish);
    }
    match answer_in_event(data) {
        Some(answer) if answer.refused => Signal::Finish(Reason {
            kind: FinishKind::Refused,
            reason: finish.reason,
        }),
        Some(answer) if !answer.text.is_empty() || answer.act => Signal::Content {
            text: (!answer.text.is_empty()).then(|| answer.text.into()),
            finish: Some(finish),
            act: answer.act,
        },
        _ => Signal::Finish(finish),
    }
}

#[cfg(test)]
mod tests {
    use seawall_core::{Class, Code};

    use super::*;

    /// What one event means, read as the stream carries it: through the
    /// [`Decoder`](super::super::Decoder), with the `event:` name the API
    /// sends beside each event (its `type`). An `error` event reaches the
    /// decoder by that name, not through `decode`.
    fn decode_one(data: &str) -> String {
        let name = serde_json::from_str::<serde_json::Value>(data)
            .ok()
            .and_then(|event| event["type"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut decoder =
            super::super::Decoder::new(seawall_core::provider::Provider::OpenAiResponses);
        let item = crate::sse::Item::Event(crate::sse::Event {
            name: name.as_bytes(),
            data: data.as_bytes(),
            start: 0,
            end: data.len(),
        });
        match decoder.decode(item) {
            Signal::Content { text, finish, .. } => format!("content {text:?} {finish:?}"),
            Signal::Finish(reason) => format!("finish {:?} {}", reason.kind, reason.reason),
            Signal::Error(failure) => format!("error {} {}", failure.code(), failure.class()),
            Signal::Progress => "progress".into(),
            Signal::Thinking => "thinking".into(),
            Signal::KeepAlive => "keepalive".into(),
            Signal::Done => "done".into(),
            Signal::Other => "other".into(),
            Signal::Undecodable(why) => format!("undecodable {why}"),
        }
    }

    #[test]
    fn events_mean_what_the_api_says() {
        let cases = [
            (
                r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Hi","sequence_number":4}"#,
                r#"content Some("Hi") None"#,
            ),
            (
                r#"{"type":"response.output_text.delta","delta":"","sequence_number":4}"#,
                "progress",
            ),
            (
                r#"{"type":"response.function_call_arguments.delta","delta":"{\"a\"","sequence_number":5}"#,
                "content None None",
            ),
            (
                r#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]},"sequence_number":0}"#,
                "progress",
            ),
            // A delta that is an object (the hosted shell's output): an
            // event like any other, the response moving (it was
            // unreadable, no sign of life for the idle bound).
            (
                r#"{"type":"response.shell_call_output_content.delta","command_index":0,"delta":{"stdout":"building\n"},"item_id":"sh_1","output_index":1,"sequence_number":40}"#,
                "progress",
            ),
            // Items that are no output of the model's: a compaction (opaque,
            // sent first) and tool definitions.
            (
                r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"cmp_1","type":"compaction","encrypted_content":"gAAA"}}"#,
                "progress",
            ),
            (
                r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"at_1","type":"additional_tools","tools":[]}}"#,
                "progress",
            ),
            (
                r#"{"type":"response.completed","response":{"status":"completed","incomplete_details":null,"error":null},"sequence_number":9}"#,
                "finish Complete completed",
            ),
            (
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}},"sequence_number":9}"#,
                "finish Truncated max_output_tokens",
            ),
            (
                r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}},"sequence_number":9}"#,
                "finish Filtered content_filter",
            ),
            (
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}},"sequence_number":9}"#,
                "error provider_unavailable transient",
            ),
            (
                r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":3}"#,
                "error rate_limited transient",
            ),
            (
                r#"{"type":"error","code":"context_length_exceeded","message":"too long","sequence_number":3}"#,
                "error context_too_long permanent",
            ),
            // As OpenAI's servers send it: the error object nested under
            // `error` (vercel/ai#20022, Effect-TS/effect#7262).
            (
                r#"{"type":"error","error":{"type":"tokens","code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 6.57s.","param":null},"sequence_number":2}"#,
                "error rate_limited transient",
            ),
            (
                r#"{"type":"error","error":{"type":"server_error","code":"server_error","message":"An error occurred while processing your request.","param":null},"sequence_number":2}"#,
                "error provider_unavailable transient",
            ),
            (
                r#"{"type":"error","error":{"type":"service_unavailable_error","code":null,"message":"The service is temporarily unavailable.","param":null},"sequence_number":2}"#,
                "error provider_unavailable transient",
            ),
            (
                r#"{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"too long","param":"input"},"sequence_number":2}"#,
                "error context_too_long permanent",
            ),
            // The documented event with `"code": null`: nothing declared,
            // OpenAI's server-error text read as a chat error's would be.
            (
                r#"{"type":"error","code":null,"message":"The server had an error while processing your request.","param":null,"sequence_number":3}"#,
                "error provider_unavailable transient",
            ),
            (
                r#"{"type":"error","code":null,"message":"Something odd.","param":null,"sequence_number":3}"#,
                "error unknown permanent",
            ),
            (
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"vector_store_timeout","message":"m"}},"sequence_number":9}"#,
                "error timeout transient",
            ),
            (
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"image_content_policy_violation","message":"m"}},"sequence_number":9}"#,
                "error content_filtered policy",
            ),
            (r#"{"type":"something.else"}"#, "other"),
            // vLLM ends every stream with `response.completed`: its
            // response's status says how it ended.
            (
                r#"{"type":"response.completed","sequence_number":42,"response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}}"#,
                "finish Truncated max_output_tokens",
            ),
            (
                r#"{"type":"response.completed","response":{"status":"incomplete","incomplete_details":null}}"#,
                "finish Truncated incomplete",
            ),
            (
                r#"{"type":"response.completed","response":{"status":"cancelled","output":[]}}"#,
                "finish Aborted cancelled",
            ),
            (
                r#"{"type":"response.completed","response":{"status":"failed","error":{"code":"server_error","message":"engine dead"}}}"#,
                "error provider_unavailable transient",
            ),
            (
                r#"{"type":"response.completed","response":{"output":[]}}"#,
                "finish Complete completed",
            ),
        ];
        for (data, expected) in cases {
            assert_eq!(decode_one(data), expected, "{data}");
        }
    }

    /// A `keepalive` is the model at work while a reasoning or compaction
    /// item is open, from its start to its end (or the next item's start,
    /// the terminal event, an `error`), and a keep-alive anywhere else; a
    /// compaction's progress is the model at work.
    #[test]
    fn a_keepalive_inside_reasoning_or_compaction_is_the_model_at_work() {
        let mut decoder =
            super::super::Decoder::new(seawall_core::provider::Provider::OpenAiResponses);
        let mut decode = |name: &str, data: &str| {
            let item = crate::sse::Item::Event(crate::sse::Event {
                name: name.as_bytes(),
                data: data.as_bytes(),
                start: 0,
                end: data.len(),
            });
            match decoder.decode(item) {
                Signal::Thinking => "thinking",
                Signal::KeepAlive => "keepalive",
                Signal::Progress => "progress",
                Signal::Content { .. } => "content",
                Signal::Finish(_) => "finish",
                Signal::Error(_) => "error",
                _ => "other",
            }
        };
        let keepalive = r#"{"type":"keepalive","sequence_number":9}"#;
        let added = |ty: &str| {
            format!(
                r#"{{"type":"response.output_item.added","output_index":0,"item":{{"id":"i","type":"{ty}"}}}}"#
            )
        };
        let done = |ty: &str| {
            format!(
                r#"{{"type":"response.output_item.done","output_index":0,"item":{{"id":"i","type":"{ty}"}}}}"#
            )
        };
        let item = "response.output_item.added";
        let item_done = "response.output_item.done";
        let compacting = r#"{"type":"response.compaction.compacting","sequence_number":3,"output_index":0,"item_id":"cmp_1"}"#;
        let steps: Vec<(&str, String, &str)> = vec![
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("reasoning"), "progress"),
            ("keepalive", keepalive.into(), "thinking"),
            // Unnamed, as a compatible server may send it: read by type.
            ("", keepalive.into(), "thinking"),
            (item_done, done("reasoning"), "progress"),
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("compaction"), "progress"),
            (
                "response.compaction.compacting",
                compacting.into(),
                "thinking",
            ),
            ("keepalive", keepalive.into(), "thinking"),
            // The next item's start ends it, done or not.
            (item, added("message"), "progress"),
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("mcp_list_tools"), "progress"),
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("reasoning"), "progress"),
            (item, added("function_call"), "content"),
            ("keepalive", keepalive.into(), "keepalive"),
            // Outside any item, a compaction's progress is still work.
            (
                "response.compaction.compacting",
                compacting.into(),
                "thinking",
            ),
            (item, added("reasoning"), "progress"),
            (
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed"}}"#.into(),
                "finish",
            ),
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("reasoning"), "progress"),
            (
                "error",
                r#"{"type":"error","code":"server_error","message":"boom"}"#.into(),
                "error",
            ),
            ("keepalive", keepalive.into(), "keepalive"),
            (item, added("reasoning"), "progress"),
            (
                "",
                r#"{"type":"error","code":"server_error","message":"boom"}"#.into(),
                "error",
            ),
            ("keepalive", keepalive.into(), "keepalive"),
        ];
        for (at, (name, data, expected)) in steps.iter().enumerate() {
            assert_eq!(decode(name, data), *expected, "step {at}: {data}");
        }
    }

    /// A hosted tool's item is content from its start, and while it runs
    /// (until its `.done`) its keep-alives are the tool at work: an image
    /// render, code run or search sends nothing else for minutes. A tool
    /// the caller runs (a function call, a shell or computer action) is
    /// not running at the provider: its keep-alives stay keep-alives.
    #[test]
    fn a_keepalive_while_a_hosted_tool_runs_is_the_model_at_work() {
        let keepalive = r#"{"type":"keepalive","sequence_number":9}"#;
        let item = |event: &str, ty: &str| {
            format!(
                r#"{{"type":"response.output_item.{event}","output_index":0,"item":{{"id":"i","type":"{ty}"}}}}"#
            )
        };
        for (ty, hosted) in [
            ("image_generation_call", true),
            ("code_interpreter_call", true),
            ("web_search_call", true),
            ("file_search_call", true),
            ("mcp_call", true),
            // The hosted shell's output: only a hosted run sends it.
            ("shell_call_output", true),
            ("function_call", false),
            ("local_shell_call", false),
            // A shell call without a container is the caller's to run.
            ("shell_call", false),
            ("apply_patch_call", false),
            ("computer_call", false),
        ] {
            let running = if hosted { "thinking" } else { "keepalive" };
            let progress =
                format!(r#"{{"type":"response.{ty}.in_progress","output_index":0,"item_id":"i"}}"#);
            let steps = [
                (item("added", ty), "content"),
                (keepalive.into(), running),
                (progress, "progress"),
                (keepalive.into(), running),
                (item("done", ty), "content"),
                (keepalive.into(), "keepalive"),
            ];
            let mut decoder =
                super::super::Decoder::new(seawall_core::provider::Provider::OpenAiResponses);
            for (at, (data, expected)) in steps.iter().enumerate() {
                let signal = decoder.decode(crate::sse::Item::Event(crate::sse::Event {
                    name: b"",
                    data: data.as_bytes(),
                    start: 0,
                    end: data.len(),
                }));
                let got = match signal {
                    Signal::Thinking => "thinking",
                    Signal::KeepAlive => "keepalive",
                    Signal::Progress => "progress",
                    Signal::Content { .. } => "content",
                    _ => "other",
                };
                assert_eq!(got, *expected, "{ty} step {at}: {data}");
            }
        }
    }

    /// What each event of `steps` decodes to, in one stream, as the
    /// stream names it (`event:` beside its `type`).
    fn decode_all(steps: &[(&str, &str)]) -> Vec<&'static str> {
        let mut decoder =
            super::super::Decoder::new(seawall_core::provider::Provider::OpenAiResponses);
        steps
            .iter()
            .map(|(name, data)| {
                let signal = decoder.decode(crate::sse::Item::Event(crate::sse::Event {
                    name: name.as_bytes(),
                    data: data.as_bytes(),
                    start: 0,
                    end: data.len(),
                }));
                match signal {
                    Signal::Thinking => "thinking",
                    Signal::KeepAlive => "keepalive",
                    Signal::Progress => "progress",
                    Signal::Content { .. } => "content",
                    Signal::Finish(_) => "finish",
                    _ => "other",
                }
            })
            .collect()
    }

    /// A hosted shell writes its commands in the call's item, ends it,
    /// runs them, and only then starts the output item (already
    /// `completed`, as captured): from the call's end to the next
    /// item's start, keep-alives are the command running. A call
    /// without a container (local, or named by no environment) ends
    /// the turn: its keep-alives stay keep-alives.
    #[test]
    fn a_keepalive_while_a_hosted_shell_command_runs_is_the_model_at_work() {
        let keepalive = r#"{"type":"keepalive","sequence_number":9}"#;
        let call = |event: &str, environment: &str| {
            format!(
                r#"{{"type":"response.output_item.{event}","output_index":0,"item":{{"id":"sh_1","type":"shell_call","status":"completed","action":{{"commands":["make"]}},"call_id":"c"{environment}}}}}"#
            )
        };
        let output = |event: &str| {
            format!(
                r#"{{"type":"response.output_item.{event}","output_index":1,"item":{{"id":"sho_1","type":"shell_call_output","status":"completed","call_id":"c","output":[]}}}}"#
            )
        };
        let command = r#"{"type":"response.shell_call_command.delta","command_index":0,"delta":"make","output_index":0}"#;
        let message = r#"{"type":"response.output_item.added","output_index":2,"item":{"id":"m","type":"message","content":[]}}"#;
        let hosted = r#","environment":{"type":"container_reference","container_id":"cntr_1"}"#;
        for (environment, running) in [
            (hosted, "thinking"),
            (r#","environment":{"type":"local"}"#, "keepalive"),
            (r#","environment":null"#, "keepalive"),
            ("", "keepalive"),
        ] {
            let (added, done) = (call("added", environment), call("done", environment));
            let (out_added, out_done) = (output("added"), output("done"));
            let steps = [
                ("response.output_item.added", added.as_str()),
                ("keepalive", keepalive),
                ("response.shell_call_command.delta", command),
                ("response.output_item.done", done.as_str()),
                ("keepalive", keepalive),
                ("keepalive", keepalive),
                ("response.output_item.added", out_added.as_str()),
                ("keepalive", keepalive),
                ("response.output_item.done", out_done.as_str()),
                ("keepalive", keepalive),
                ("response.output_item.added", message),
                ("keepalive", keepalive),
            ];
            assert_eq!(
                decode_all(&steps),
                [
                    "content",
                    "keepalive",
                    "progress",
                    "content",
                    running,
                    running,
                    "content",
                    "thinking",
                    "content",
                    "keepalive",
                    "progress",
                    "keepalive",
                ],
                "{environment}"
            );
        }
    }

    /// A background response waiting in the provider's queue: its
    /// `queued` status (in `response.created` and `response.queued`) and
    /// the keep-alives while it lasts are the model at work, until
    /// `response.in_progress` or an item; a response that is not queued
    /// is progress and its keep-alives are keep-alives.
    #[test]
    fn a_queued_response_is_the_model_at_work() {
        let keepalive = r#"{"type":"keepalive","sequence_number":9}"#;
        let lifecycle = |ty: &str, status: &str| {
            format!(
                r#"{{"type":"response.{ty}","sequence_number":0,"response":{{"id":"resp_1","object":"response","status":"{status}","background":true,"output":[]}}}}"#
            )
        };
        let created = lifecycle("created", "queued");
        let queued = lifecycle("queued", "queued");
        let running = lifecycle("in_progress", "in_progress");
        let plain = lifecycle("created", "in_progress");
        let message = r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","content":[]}}"#;
        assert_eq!(
            decode_all(&[
                ("response.created", &created),
                ("keepalive", keepalive),
                ("response.queued", &queued),
                ("keepalive", keepalive),
                ("response.in_progress", &running),
                ("keepalive", keepalive),
            ]),
            [
                "thinking",
                "thinking",
                "thinking",
                "thinking",
                "progress",
                "keepalive"
            ]
        );
        // An item's start ends the wait too (a server that sends no
        // `response.in_progress`).
        assert_eq!(
            decode_all(&[
                ("response.queued", &queued),
                ("response.output_item.added", message),
                ("keepalive", keepalive),
            ]),
            ["thinking", "progress", "keepalive"]
        );
        assert_eq!(
            decode_all(&[
                ("response.created", &plain),
                ("keepalive", keepalive),
                ("response.in_progress", &running),
                ("keepalive", keepalive),
            ]),
            ["progress", "keepalive", "progress", "keepalive"]
        );
    }

    /// The nested rate limit keeps its hint, as a chat error body's does.
    #[test]
    fn a_nested_error_event_keeps_its_hint() {
        let data = br#"{"type":"error","error":{"type":"tokens","code":"rate_limit_exceeded","message":"Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 6.57s.","param":null},"sequence_number":2}"#;
        let Signal::Error(failure) = decode(
            data,
            &mut false,
            &mut false,
            &mut None,
            false,
            QuotaWall::default(),
        ) else {
            panic!("not an error");
        };
        assert_eq!(
            failure.retry_after(),
            Some(std::time::Duration::from_millis(6570))
        );
        assert_eq!(failure.provider_code(), Some("rate_limit_exceeded"));
    }

    #[test]
    fn a_refusal_makes_the_completion_a_refusal() {
        let mut refused = false;
        let delta = br#"{"type":"response.refusal.delta","delta":"I can't","sequence_number":5}"#;
        assert!(matches!(
            decode(
                delta,
                &mut refused,
                &mut false,
                &mut None,
                false,
                QuotaWall::default()
            ),
            Signal::Progress
        ));
        assert!(refused);
        let done = br#"{"type":"response.completed","response":{"status":"completed"}}"#;
        match decode(
            done,
            &mut refused,
            &mut false,
            &mut None,
            false,
            QuotaWall::default(),
        ) {
            Signal::Finish(reason) => assert_eq!(reason.kind, FinishKind::Refused),
            _ => panic!("not a finish"),
        }
        let failure = FinishKind::Refused.failure().unwrap();
        assert_eq!(
            (failure.code(), failure.class()),
            (Code::Refused, Class::Policy)
        );
        // Cut at the token limit, a refusal is still one (as the unary
        // check reads the same response).
        let incomplete = br#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
        match decode(
            incomplete,
            &mut refused,
            &mut false,
            &mut None,
            false,
            QuotaWall::default(),
        ) {
            Signal::Finish(reason) => {
                assert_eq!(reason.kind, FinishKind::Refused);
                assert_eq!(reason.reason, "max_output_tokens");
            }
            _ => panic!("not a finish"),
        }
        let mut plain = false;
        match decode(
            incomplete,
            &mut plain,
            &mut false,
            &mut None,
            false,
            QuotaWall::default(),
        ) {
            Signal::Finish(reason) => assert_eq!(reason.kind, FinishKind::Truncated),
            _ => panic!("not a finish"),
        }
    }
}
