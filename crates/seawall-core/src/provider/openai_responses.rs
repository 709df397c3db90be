//! The OpenAI Responses API (`POST /v1/responses`): finish reasons, what
//! counts as content and where usage is. Its error bodies are OpenAI's
//! ([`super::openai`]'s table).
//!
//! The unary check reads `output[]` items and the stream decoder
//! (`seawall-stream`'s `protocol/openai_responses.rs`) reads typed events,
//! both through [`output_item`] and [`stream_event`].

use std::time::SystemTime;

use serde::Deserialize;
use serde::de::Deserializer;

use seawall_internal::json::fold_seq;

use super::answer::{AnswerCheck, Presence, finish_failure, unreadable, usage_of, verdict};
use super::{Declared, ErrorContext, Provider, QuotaWall, classify_declared, judge, openai};
use crate::usage::UsageFields;
use crate::{Code, Failure, FinishKind};
use seawall_internal::json::{Text, from_bytes};

/// What an output item is, by its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputItem {
    /// `message`: part of the answer by its content parts (text, or a
    /// refusal).
    Message,
    /// `reasoning`: the model working, not the answer; `mcp_list_tools`
    /// too (the tools an MCP server offers, listed before the model acts:
    /// no output of the model's), `additional_tools` (tool definitions)
    /// and `compaction` (the conversation compacted, "opaque and not
    /// intended to be human-interpretable", sent at the stream's start).
    Reasoning,
    /// Any other item — `function_call`, `custom_tool_call`,
    /// `web_search_call`, `image_generation_call`, and kinds added later:
    /// an act the caller carries out or a result it shows.
    Act,
}

/// What an output item of type `ty` is.
pub fn output_item(ty: &str) -> OutputItem {
    match ty {
        "message" => OutputItem::Message,
        "reasoning" | "mcp_list_tools" | "additional_tools" | "compaction" => OutputItem::Reasoning,
        _ => OutputItem::Act,
    }
}

/// Whether an output item of type `ty` is the model at work that may
/// show nothing but `keepalive` events while it lasts: `reasoning` (its
/// summary is off by default, so a long reasoning run sends its item's
/// start and then only keep-alives until the answer), `compaction` (the
/// conversation summarised, opaque), and a tool the provider runs
/// itself — `image_generation_call`, `code_interpreter_call`,
/// `web_search_call`, `file_search_call`, `mcp_call`, and the hosted
/// shell's `shell_call_output` (an item only a hosted run sends: the
/// caller of a local shell sends it as input) — from its item's start
/// (already content: the caller shows its result) to its end (an image
/// render takes minutes, a build as long as it takes). While such an
/// item is open, its keep-alives are the model working, not a stream
/// that merely stays open: cut at the first-content bound, it would be
/// asked again and reason (and be billed) as long again; cut at the idle
/// bound while a tool runs, the billed result is lost, and a call
/// delivered is not resumed.
///
/// Not a tool the caller runs, whose item ends the turn: `function_call`,
/// `custom_tool_call`, `local_shell_call`, `computer_call`,
/// `apply_patch_call` (the caller applies the patch), a `shell_call`
/// (its commands; hosted, they run after the item ends:
/// [`runs_at_the_provider`]), `mcp_approval_request` (the caller
/// approves). Nor `tool_search_call` (run by the server or by the
/// caller, as its `execution` says; a server's search is a lookup of
/// tool definitions, done in its output's start) or `program` (the
/// code of programmatic tool calling, whose tool calls are items of
/// their own).
pub fn works_unseen(ty: &str) -> bool {
    matches!(
        ty,
        "reasoning"
            | "compaction"
            | "image_generation_call"
            | "code_interpreter_call"
            | "web_search_call"
            | "file_search_call"
            | "mcp_call"
            | "shell_call_output"
    )
}

/// Whether an output item of type `ty`, once done, is a call the
/// provider runs before the next item starts: a `shell_call` whose
/// `environment` (its item's `environment.type`) is a container
/// (`container_reference`; `container_auto` as the tool names it), not
/// `local` nor absent (the caller runs those, and the turn ends with
/// the call). The hosted shell writes its commands in the call's item,
/// ends it, runs them, and only then starts the `shell_call_output`
/// item, already `completed` (as captured in vercel/ai's
/// `openai-shell-skills.1.chunks.txt`): a command that prints nothing
/// for longer than the idle bound sends only keep-alives meanwhile, and
/// cut there, the billed run is lost.
pub fn runs_at_the_provider(ty: &str, environment: Option<&str>) -> bool {
    ty == "shell_call" && environment.is_some_and(|env| env != "local")
}

/// What a stream event is, by its `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// `response.output_text.delta`: text of the answer.
    TextDelta,
    /// `response.refusal.delta`: the model declining; makes the answer a
    /// refusal.
    RefusalDelta,
    /// A tool call's arguments or input, or audio: content without text.
    ActDelta,
    /// `response.output_item.added` / `.done`: content when the item is an
    /// [`OutputItem::Act`].
    Item,
    /// `response.completed`: the finish.
    Completed,
    /// `response.incomplete`: cut, with its reason.
    Incomplete,
    /// `response.failed`: the provider's failure.
    Failed,
    /// `error`: the provider's failure.
    Error,
    /// `keepalive`: a keep-alive, but inside an open item that
    /// [`works_unseen`] (reasoning, compaction, a hosted tool running),
    /// after a call that [`runs_at_the_provider`], or while the response
    /// is queued, the model at work.
    KeepAlive,
    /// `response.reasoning_text.delta` / `.reasoning_summary_text.delta`:
    /// the model thinking before (or between) its answer's parts.
    ReasoningDelta,
    /// `response.compaction.compacting`: new summary content sampled for
    /// a compaction, the model at work before its answer.
    Compacting,
    /// Any other `response.*` event: lifecycle, part boundaries, tool
    /// progress.
    Lifecycle,
    /// Not an event of this API.
    Unknown,
}

/// What a stream event of type `ty` is.
pub fn stream_event(ty: &str) -> StreamEvent {
    match ty {
        "response.output_text.delta" => StreamEvent::TextDelta,
        "response.refusal.delta" => StreamEvent::RefusalDelta,
        "response.function_call_arguments.delta"
        | "response.custom_tool_call_input.delta"
        | "response.audio.delta" => StreamEvent::ActDelta,
        "response.output_item.added" | "response.output_item.done" => StreamEvent::Item,
        "response.completed" => StreamEvent::Completed,
        "response.incomplete" => StreamEvent::Incomplete,
        "response.failed" => StreamEvent::Failed,
        "error" => StreamEvent::Error,
        "keepalive" => StreamEvent::KeepAlive,
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            StreamEvent::ReasoningDelta
        }
        "response.compaction.compacting" => StreamEvent::Compacting,
        ty if ty.starts_with("response.") => StreamEvent::Lifecycle,
        _ => StreamEvent::Unknown,
    }
}

/// What the response's `status` (`completed`; `incomplete` without a
/// reason is a cut answer, `failed` and `cancelled` no whole one) or its
/// `incomplete_details.reason` (`max_output_tokens`, `content_filter`)
/// means.
pub fn finish_kind(reason: &str) -> FinishKind {
    match reason {
        "completed" => FinishKind::Complete,
        "max_output_tokens" | "incomplete" => FinishKind::Truncated,
        "failed" | "cancelled" => FinishKind::Aborted,
        "content_filter" => FinishKind::Filtered,
        "refusal" => FinishKind::Refused,
        _ => FinishKind::Other,
    }
}

/// What an `incomplete` response's reason means: a reason seawall does
/// not know is still a cut answer, never a complete one.
pub fn incomplete_kind(reason: &str) -> FinishKind {
    match finish_kind(reason) {
        FinishKind::Other | FinishKind::Complete => FinishKind::Truncated,
        kind => kind,
    }
}

/// A failure the Responses API declared in a failed response's `error`
/// (`{code, message}`, in `response.failed` or a `failed` answer), through
/// the OpenAI table. The `error` event has [`error_event`]. A failed
/// response that names no error at all (`"error": null`, which the API
/// allows) is the provider's own failure to generate, as a 500 is:
/// `provider_unavailable`, transient. A rate-limit hint in the message is
/// judged against `quota_wall`.
pub fn declared_failure(
    code: Option<&str>,
    message: Option<&str>,
    quota_wall: QuotaWall,
) -> Failure {
    if code.is_none() && message.is_none() {
        return Failure::new(Code::ProviderUnavailable)
            .with_message("the response failed and named no error");
    }
    classify_declared(
        Provider::OpenAiResponses,
        None,
        code,
        message,
        ErrorContext::in_stream(SystemTime::now()).with_quota_wall(quota_wall),
    )
}

/// The failure an `error` stream event declares. The API reference
/// documents the event flat, `{"type":"error","code","message","param"}`;
/// OpenAI's servers send the standard error object nested under `error`,
/// `{"type":"error","error":{"type","code","message","param"}}` (captured
/// by vercel/ai#20022, Effect-TS/effect#7262). Both are read by the one
/// reader of OpenAI's error object, so both meet the chat table's rules
/// (and its "try again in 6.57s" hint). The flat event's `type` is the
/// event's, not the error's.
pub fn error_event(data: &[u8], quota_wall: QuotaWall) -> Failure {
    let declared = openai::parse_error(data)
        .or_else(|| {
            let flat: openai::OpenAiError<'_> = from_bytes(data).ok()?;
            Some(Declared {
                error_type: None,
                ..flat.declared()
            })
        })
        .unwrap_or_default();
    judge(
        Provider::OpenAiResponses,
        declared,
        &ErrorContext::in_stream(SystemTime::now()).with_quota_wall(quota_wall),
    )
}

/// The `sequence_number` of the last event in `events` (raw stream bytes,
/// one event or many), `None` when none is there. The Responses API
/// numbers a stream's events from 0, one by one, so whoever adds an event
/// to a stream it relays (the gateway's final `error` event, the resume
/// layer's renumbered continuation) numbers it from here. A byte search,
/// not a parse: in JSON text a quote inside a string is escaped, so the
/// quoted key is found only as a key.
pub fn last_sequence_number(events: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"sequence_number\"";
    let at = memchr::memmem::rfind(events, KEY)?;
    let rest = events[at + KEY.len()..].trim_ascii_start();
    let rest = rest.strip_prefix(b":")?.trim_ascii_start();
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

// The unary answer:
// `{"object":"response","status","incomplete_details","error","output":[…],"usage"}`.

// Read member by member ([`later_wins!`](crate::later_wins)): a member
// named twice is the later one, as the SDKs read it.
crate::later_wins! {
    struct Answer<'a> {
        object: Option<Text<'a>> = "object",
        status: Option<Text<'a>> = "status",
        incomplete_details: Option<IncompleteDetails<'a>> = "incomplete_details",
        error: Option<ResponseError<'a>> = "error",
        output: Option<Output<'a>> = "output",
        usage: Option<UsageFields> = "usage",
    }
}

crate::later_wins! {
    struct IncompleteDetails<'a> {
        reason: Option<Text<'a>> = "reason",
    }
}

crate::later_wins! {
    struct ResponseError<'a> {
        code: Option<Text<'a>> = "code",
        message: Option<Text<'a>> = "message",
    }
}

/// What the output items add up to: whether any is part of an answer, and
/// the first refusal.
#[derive(Default)]
struct Output<'a> {
    has_content: bool,
    refusal: Option<Text<'a>>,
}

crate::later_wins! {
    struct Item<'a> {
        ty: Text<'a> = "type" required,
        content: Option<Parts<'a>> = "content",
    }
}

#[derive(Default)]
struct Parts<'a> {
    has_text: bool,
    refusal: Option<Text<'a>>,
}

crate::later_wins! {
    struct ContentPart<'a> {
        ty: Text<'a> = "type" required,
        text: Presence = "text",
        refusal: Option<Text<'a>> = "refusal",
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Parts<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(
            deserializer,
            Parts::default(),
            |acc: &mut Parts<'a>, part: ContentPart<'a>| match &*part.ty.0 {
                "refusal" => {
                    if acc.refusal.is_none() {
                        acc.refusal = part.refusal;
                    }
                }
                _ => acc.has_text |= part.text.0,
            },
        )
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Output<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(
            deserializer,
            Output::default(),
            |acc: &mut Output<'a>, item: Item<'a>| match output_item(&item.ty.0) {
                OutputItem::Message => {
                    let parts = item.content.unwrap_or_default();
                    acc.has_content |= parts.has_text;
                    if acc.refusal.is_none() {
                        acc.refusal = parts.refusal;
                    }
                }
                OutputItem::Reasoning => {}
                OutputItem::Act => acc.has_content = true,
            },
        )
    }
}

/// What a terminal stream event's response holds of an answer
/// ([`answer_in_event`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventAnswer {
    /// Its messages' `output_text`, in order.
    pub text: String,
    /// An act is in it (a tool call, a server tool's result).
    pub act: bool,
    /// A message part is a refusal.
    pub refused: bool,
}

crate::later_wins! {
    /// A terminal event's `{"response":{"output":[…]}}`, read for the
    /// answer itself: the text, where the unary check asks only whether
    /// there is one. `null` stands for nothing wherever it is.
    struct TerminalEvent {
        response: Option<TerminalResponse> = "response",
    }
}

crate::later_wins! {
    struct TerminalResponse {
        output: TerminalOutput = "output",
    }
}

/// The output items, folded one at a time into the answer (an event may
/// hold a million of them).
#[derive(Default)]
struct TerminalOutput(EventAnswer);

impl<'de> Deserialize<'de> for TerminalOutput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(
            deserializer,
            TerminalOutput::default(),
            |TerminalOutput(answer): &mut TerminalOutput, item: TerminalItem<'de>| {
                // An item without a type is nothing known: no text, no act.
                let Some(Text(ty)) = &item.ty else { return };
                match output_item(ty) {
                    OutputItem::Message => {
                        answer.text.push_str(&item.content.text);
                        answer.refused |= item.content.refused;
                    }
                    OutputItem::Reasoning => {}
                    OutputItem::Act => answer.act = true,
                }
            },
        )
    }
}

crate::later_wins! {
    struct TerminalItem<'a> {
        ty: Option<Text<'a>> = "type",
        // Read whatever the item is: its `type` may come after it.
        content: TerminalParts = "content",
    }
}

/// A message's parts, folded: the text of every part that is no refusal
/// joined, and whether one is a refusal.
#[derive(Default)]
struct TerminalParts {
    text: String,
    refused: bool,
}

impl<'de> Deserialize<'de> for TerminalParts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        fold_seq(
            deserializer,
            TerminalParts::default(),
            |parts: &mut TerminalParts, part: TerminalPart<'de>| match part
                .ty
                .as_ref()
                .map(|t| &*t.0)
            {
                Some("refusal") => parts.refused = true,
                // Any other part's text is the answer's, as the unary
                // check reads the same response (`output_text`; a
                // compatible server's `text`).
                _ => {
                    if let Some(Text(text)) = part.text {
                        parts.text.push_str(&text);
                    }
                }
            },
        )
    }
}

crate::later_wins! {
    struct TerminalPart<'a> {
        ty: Option<Text<'a>> = "type",
        text: Option<Text<'a>> = "text",
    }
}

/// What the response in a terminal stream event (`response.completed`,
/// `response.incomplete`) holds of an answer: some servers send the whole
/// answer there alone, no delta before it (a proxy's stream made from a
/// unary answer), and the SDK's final response holds it. `None` when the
/// event cannot be read.
pub fn answer_in_event(data: &[u8]) -> Option<EventAnswer> {
    let event: TerminalEvent = from_bytes(data).ok()?;
    Some(event.response.map(|r| r.output.0).unwrap_or_default())
}

/// Checks a Responses API answer: `completed` with output, `incomplete`
/// with its reason (cut at the token limit: delivered and marked;
/// filtered: a policy failure), `failed` with the provider's error,
/// `cancelled` as `cancelled` (terminal: nothing will come), a refusal
/// part. A response still `queued`/`in_progress` (background mode)
/// is a handle, not an answer: [`AnswerCheck::Pending`].
pub(super) fn check_answer(body: &[u8]) -> AnswerCheck {
    let answer = match from_bytes::<Answer<'_>>(body) {
        Ok(answer) => answer,
        Err(error) => return unreadable(error),
    };
    if answer.object.as_ref().is_some_and(|o| o.0 != "response") {
        return AnswerCheck::OtherShape;
    }
    let Some(status) = answer.status else {
        return AnswerCheck::OtherShape;
    };
    let output = answer.output.unwrap_or_default();
    match &*status.0 {
        "failed" => {
            let error = answer.error;
            let failure = declared_failure(
                error.as_ref().and_then(|e| e.code.as_ref()).map(|c| &*c.0),
                error
                    .as_ref()
                    .and_then(|e| e.message.as_ref())
                    .map(|m| &*m.0),
                // The unary check has no classifier's settings: a
                // failed answer's hint meets the default wall.
                QuotaWall::default(),
            );
            // What the response used before it failed is billed.
            AnswerCheck::Fail(match usage_of(answer.usage) {
                Some(usage) => failure.with_usage(usage),
                None => failure,
            })
        }
        "completed" | "incomplete" => {
            let (kind, reason) = match &*status.0 {
                "completed" => (FinishKind::Complete, status),
                _ => {
                    let reason = answer
                        .incomplete_details
                        .and_then(|d| d.reason)
                        .unwrap_or(Text("incomplete".into()));
                    (incomplete_kind(&reason.0), reason)
                }
            };
            let policy = match &output.refusal {
                Some(refusal) => Some(Failure::new(Code::Refused).with_message(&refusal.0)),
                None => finish_failure(kind, &reason.0),
            };
            verdict(
                policy,
                output.has_content,
                Some((kind, reason)),
                usage_of(answer.usage),
            )
        }
        // Terminal: a background response someone cancelled (`POST
        // /v1/responses/{id}/cancel`) will never answer, so it is no handle
        // to poll. The Response object's `status` is one of `completed`,
        // `failed`, `in_progress`, `cancelled`, `queued`, `incomplete`;
        // no stream event says it (`response.cancelled` is a webhook).
        "cancelled" => AnswerCheck::Fail(
            Failure::new(Code::Cancelled)
                .with_provider_code("cancelled")
                .with_message("the response was cancelled"),
        ),
        _ => AnswerCheck::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::{
        StreamEvent, last_sequence_number, runs_at_the_provider, stream_event, works_unseen,
    };

    /// A compaction's progress is its own event, the model at work; the
    /// items whose keep-alives are the model at work are reasoning,
    /// compaction and the tools the provider runs.
    #[test]
    fn compacting_and_the_items_that_work_unseen() {
        assert_eq!(
            stream_event("response.compaction.compacting"),
            StreamEvent::Compacting
        );
        assert_eq!(stream_event("keepalive"), StreamEvent::KeepAlive);
        for (ty, unseen) in [
            ("reasoning", true),
            ("compaction", true),
            ("image_generation_call", true),
            ("code_interpreter_call", true),
            ("web_search_call", true),
            ("file_search_call", true),
            ("mcp_call", true),
            ("shell_call_output", true),
            ("message", false),
            ("local_shell_call", false),
            ("shell_call", false),
            ("apply_patch_call", false),
            ("apply_patch_call_output", false),
            ("tool_search_call", false),
            ("tool_search_output", false),
            ("program", false),
            ("mcp_approval_request", false),
            ("computer_call", false),
            ("custom_tool_call", false),
            ("mcp_list_tools", false),
            ("additional_tools", false),
            ("function_call", false),
            ("", false),
        ] {
            assert_eq!(works_unseen(ty), unseen, "{ty}");
        }
    }

    /// A shell call runs at the provider after its item ends when its
    /// environment is a container; a local one (named, or not named at
    /// all as before hosted shells) is the caller's to run.
    #[test]
    fn a_hosted_shell_call_runs_at_the_provider() {
        for (ty, environment, runs) in [
            ("shell_call", Some("container_reference"), true),
            ("shell_call", Some("container_auto"), true),
            ("shell_call", Some("local"), false),
            ("shell_call", None, false),
            ("local_shell_call", Some("container_reference"), false),
            ("function_call", None, false),
            ("shell_call_output", Some("container_reference"), false),
        ] {
            assert_eq!(
                runs_at_the_provider(ty, environment),
                runs,
                "{ty} {environment:?}"
            );
        }
    }

    #[test]
    fn the_last_sequence_number_is_read_as_a_key() {
        let events = b"event: a\ndata: {\"sequence_number\":3}\n\nevent: b\ndata: {\"type\":\"b\",\"sequence_number\" : 41}\n\n";
        assert_eq!(last_sequence_number(events), Some(41));
        assert_eq!(last_sequence_number(b"data: {}\n\n"), None);
        assert_eq!(last_sequence_number(b"\"sequence_number\":x"), None);
        // Inside a string the quotes are escaped: not the key.
        let quoted = br#"{"sequence_number":2,"delta":"\"sequence_number\":9"}"#;
        assert_eq!(last_sequence_number(quoted), Some(2));
    }
}
