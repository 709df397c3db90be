//! Anthropic messages events, read by the provider's own table
//! ([`seawall_core::provider::anthropic`]: the same block kinds the unary
//! check reads in `content[]`).

use seawall_core::provider::anthropic::{
    Block as BlockKind, block, delta_adds_content, finish_kind,
};
use seawall_core::usage::UsageFields;

use super::wire::{Text, declared_reason, parse};
use super::{Reason, Signal, in_stream_error};
use seawall_core::provider::{Provider, QuotaWall};

// Read member by member ([`later_wins!`](seawall_core::later_wins)): a
// member named twice is the later one, as the SDKs read it.
seawall_core::later_wins! {
    struct Event<'a> {
        /// The data's own type; the event's name where it has none.
        ty: Option<Text<'a>> = "type",
        delta: Option<Delta<'a>> = "delta",
        content_block: Option<Block<'a>> = "content_block",
        /// `message_start`'s message, for its usage.
        message: Option<StartMessage> = "message",
        /// `message_delta`'s cumulative usage.
        usage: Option<UsageFields> = "usage",
    }
}

seawall_core::later_wins! {
    struct StartMessage {
        usage: Option<UsageFields> = "usage",
    }
}

seawall_core::later_wins! {
    struct Delta<'a> {
        ty: Option<Text<'a>> = "type",
        text: Option<Text<'a>> = "text",
        /// A `thinking_delta`'s text.
        thinking: Option<Text<'a>> = "thinking",
        stop_reason: Option<Text<'a>> = "stop_reason",
    }
}

seawall_core::later_wins! {
    struct Block<'a> {
        ty: Option<Text<'a>> = "type",
        text: Option<Text<'a>> = "text",
    }
}

/// Whether this reader fails on `data` ([`Signal::Other`] for a reason
/// other than the event's type).
pub(super) fn unreadable(data: &[u8]) -> bool {
    parse::<Event<'_>>(data).is_none()
}

/// Anthropic reports the input and its cache in `message_start` and the
/// output so far in each `message_delta` (at times the input again,
/// without its cache): the counts are kept field by field, the later
/// report of each winning; the usage is their sum, read when asked
/// ([`UsageFields::usage`]).
fn merge_usage(report: Option<&UsageFields>, kept: &mut UsageFields) {
    if let Some(report) = report {
        kept.merge(report);
    }
}

/// The event names the SDK reads the data of: an event of any other name,
/// or of none, it passes over (anthropic-sdk-python's `Stream`), and so
/// does seawall — text in it is text no SDK user reads. A stream that
/// names none of its events (some compatible servers) is read by its
/// data's types instead, as clients that read it so do: every event of
/// it would be passed over, and the answer asked for again and again.
///
/// `message` is read too, by its data's `type` like every other: the SDK
/// reads it since 0.92.0, and a compatible server that names every event
/// `message` was otherwise judged empty (or cut) while the SDK showed its
/// answer. The SDK's other names (its managed agents' `agent.*`,
/// `session.*`, `span.*`, …) belong to other APIs' streams, not to a
/// message's.
const MESSAGE_EVENTS: [&[u8]; 7] = [
    b"message_start",
    b"message_delta",
    b"message_stop",
    b"content_block_start",
    b"content_block_delta",
    b"content_block_stop",
    b"message",
];

/// Whether an event named `name` is read, in a stream that `named` its
/// events so far.
pub(super) fn reads(name: &[u8], named: bool) -> bool {
    MESSAGE_EVENTS.contains(&name) || (name.is_empty() && !named)
}

/// A `ping`: a keep-alive, but while a block that works unseen is open
/// (`at_work`: see [`works_unseen`]), the model at work. Such a block
/// sends its start, then only pings while the model works: server-side
/// compaction until the whole summary arrives in one delta, thinking
/// with `display: "omitted"` (one empty `thinking_delta`) until its
/// signature, summarised thinking between its bursts, redacted thinking
/// (whole in its start) until its stop. That work can take longer
/// than the first-content bound, and cut there, the retry pays (and is
/// billed for) all of it again. Read as thinking, its pings keep that
/// bound off while they keep coming within the idle bound; a block that
/// falls silent is still cut, and `max_duration` still bounds the whole.
fn ping(at_work: bool) -> Signal<'static> {
    if at_work {
        Signal::Thinking
    } else {
        Signal::KeepAlive
    }
}

/// Whether a block of type `ty` is the model at work that may show
/// nothing but pings while it is open: a compaction, thinking (shown,
/// summarised or omitted) and redacted thinking. Not `fallback`, a
/// marker with nothing behind it.
fn works_unseen(ty: &str) -> bool {
    matches!(ty, "compaction" | "thinking" | "redacted_thinking")
}

/// Whether a block of type `ty` is a call of a tool the provider runs
/// (`server_tool_use`: web search, web fetch, code execution;
/// `mcp_tool_use`: the MCP connector's). Once its input is written, the
/// tool runs and the stream sends only pings until its result's block
/// starts: a page fetched or code run can take longer than the idle
/// bound, and cut there, the billed result is lost and a call delivered
/// is not resumed.
fn runs_at_the_provider(ty: &str) -> bool {
    matches!(ty, "server_tool_use" | "mcp_tool_use")
}

/// One event, by its name as the SDK dispatches it (`ping` skipped,
/// `error` raised, the message events read, the rest passed over) and
/// its data's `type` (the name where the data has none, as the SDK fills
/// it in). `at_work` says a block that works unseen started and has
/// not stopped (see [`ping`]); `tool_running`, that a server tool's
/// block started and no block since ([`runs_at_the_provider`]): its
/// pings are the tool at work too, from its start to its result's.
pub(super) fn decode<'a>(
    name: &'a [u8],
    data: &'a [u8],
    named: &mut bool,
    at_work: &mut bool,
    tool_running: &mut bool,
    kept: &mut UsageFields,
    quota_wall: QuotaWall,
) -> Signal<'a> {
    match name {
        b"ping" => return ping(*at_work || *tool_running),
        b"error" => {
            (*at_work, *tool_running) = (false, false);
            return Signal::Error(Box::new(in_stream_error(
                Provider::Anthropic,
                data,
                quota_wall,
            )));
        }
        name if !reads(name, *named) => return Signal::Other,
        b"" => {}
        _ => *named = true,
    }
    let Some(event) = parse::<Event<'_>>(data) else {
        return Signal::Other;
    };
    merge_usage(event.message.as_ref().and_then(|m| m.usage.as_ref()), kept);
    merge_usage(event.usage.as_ref(), kept);
    let ty = match &event.ty {
        Some(ty) => &*ty.0,
        None => std::str::from_utf8(name).unwrap_or_default(),
    };
    match ty {
        "ping" => ping(*at_work || *tool_running),
        "message_start" => {
            (*at_work, *tool_running) = (false, false);
            Signal::Progress
        }
        // A server tool runs once its block stops: `tool_running` stays.
        "content_block_stop" => {
            *at_work = false;
            Signal::Progress
        }
        // A text block may start with text; a tool_use block's input
        // streams as `input_json_delta`, but its start already names the
        // act, and a server tool's result block arrives whole in its start.
        "content_block_start" => {
            let Some(started) = event.content_block else {
                return Signal::Other;
            };
            // Any other block ends the one at work, stopped or not, and
            // a tool's run: its result's block is the next.
            *at_work = started.ty.as_ref().is_some_and(|ty| works_unseen(&ty.0));
            *tool_running = started
                .ty
                .as_ref()
                .is_some_and(|ty| runs_at_the_provider(&ty.0));
            match started.ty.as_ref().map(|ty| block(&ty.0)) {
                Some(BlockKind::Text) | None => match started.text.and_then(Text::non_empty) {
                    Some(text) => Signal::Content {
                        text: Some(text),
                        finish: None,
                        act: false,
                    },
                    None => Signal::Progress,
                },
                Some(BlockKind::Thinking) => Signal::Progress,
                Some(BlockKind::Answer) => Signal::Content {
                    text: None,
                    finish: None,
                    act: true,
                },
            }
        }
        "content_block_delta" => {
            let Some(delta) = event.delta else {
                return Signal::Other;
            };
            match delta.ty.as_ref().map(|t| &*t.0) {
                Some(ty) if delta_adds_content(ty) => match delta.text.and_then(Text::non_empty) {
                    Some(text) => Signal::Content {
                        text: Some(text),
                        finish: None,
                        act: false,
                    },
                    // An empty text delta moves nothing; a tool's input is
                    // content without text.
                    None if ty == "text_delta" => Signal::Progress,
                    None => Signal::Content {
                        text: None,
                        finish: None,
                        act: true,
                    },
                },
                // The model thinking: the caller has nothing to show yet.
                Some("thinking_delta") if delta.thinking.and_then(Text::non_empty).is_some() => {
                    Signal::Thinking
                }
                // Signatures, citations, an empty thought: moving, no more.
                _ => Signal::Progress,
            }
        }
        "message_delta" => match declared_reason(event.delta.and_then(|d| d.stop_reason)) {
            Some(Text(reason)) => Signal::Finish(Reason {
                kind: finish_kind(&reason),
                reason,
            }),
            None => Signal::Progress,
        },
        "message_stop" => {
            (*at_work, *tool_running) = (false, false);
            Signal::Done
        }
        "error" => {
            (*at_work, *tool_running) = (false, false);
            Signal::Error(Box::new(in_stream_error(
                Provider::Anthropic,
                data,
                quota_wall,
            )))
        }
        _ => Signal::Other,
    }
}

#[cfg(test)]
mod tests {
    use seawall_core::FinishKind;

    use super::*;

    /// A stream whose every event is named `message` (a compatible
    /// server's): read by its data's types, as the SDK reads it since
    /// 0.92.0 — its text is content and its `stop_reason` a finish, not
    /// events passed over.
    #[test]
    fn events_named_message_are_read_by_their_data() {
        let (mut named, mut at_work, mut tool_running) = (false, false, false);
        let mut kept = UsageFields::default();
        let mut read = |data: &'static str| {
            decode(
                b"message",
                data.as_bytes(),
                &mut named,
                &mut at_work,
                &mut tool_running,
                &mut kept,
                QuotaWall::default(),
            )
            .into_owned()
        };
        assert!(matches!(
            read(r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":3}}}"#),
            Signal::Progress
        ));
        let Signal::Content { text, finish, .. } = read(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        ) else {
            panic!("the delta's text is content");
        };
        assert_eq!((text.as_deref(), finish), (Some("Hi"), None));
        let Signal::Finish(reason) = read(
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#,
        ) else {
            panic!("the stop reason is a finish");
        };
        assert_eq!(
            (reason.kind, &*reason.reason),
            (FinishKind::Complete, "end_turn")
        );
        assert!(matches!(read(r#"{"type":"message_stop"}"#), Signal::Done));
        // With no `type` of its own, the SDK fills in `message`: no event
        // of a message's stream.
        assert!(matches!(read(r#"{"text":"Hi"}"#), Signal::Other));
        // Named: an unnamed event after it is passed over, as before.
        assert!(named);
        assert_eq!(kept.usage().map(|u| u.input_tokens), Some(3));
    }
}
