//! A continuation answered in another wire format, said in the caller's:
//! its text as the caller's format's text deltas, its finish as the
//! caller's finish and end events.
//!
//! Only text crosses: a continuation that carries a tool call (or any
//! content but text), or finishes in a way the caller's format has no
//! word for, is not said at all — the body ends with the interruption.

use bytes::Bytes;
use seawall_core::provider::Provider;
use seawall_core::{FinishKind, Usage};
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::Scanner;
use serde_json::{Map, Value, json};

use crate::splice::{parse_event, serialize, split_events};

/// The finish `raw` (one event in `protocol`'s format) carries, if any.
pub(crate) fn finish_of(protocol: Provider, raw: &[u8]) -> Option<FinishKind> {
    let mut decoder = Decoder::new(protocol).within_answer();
    let mut kind = None;
    let _ = Scanner::default().feed(raw, |item| match decoder.decode(item) {
        Signal::Content {
            finish: Some(reason),
            ..
        }
        | Signal::Finish(reason) => kind = Some(reason.kind),
        _ => {}
    });
    kind
}

/// Whether a continuation answered in `answered` can be said to a caller
/// reading `caller`: text in any format the guard decodes, said as
/// OpenAI chat, Anthropic or Gemini events. The Responses API's events say
/// the answer whole at its end (items, the terminal response) and are not
/// made up from another format's.
pub(crate) fn can_translate(caller: Provider, answered: Provider) -> bool {
    matches!(
        caller,
        Provider::OpenAi | Provider::Anthropic | Provider::Gemini
    ) && answered != Provider::Http
}

/// Says text and a finish in the caller's wire format, in the shape of
/// the caller's own stream: OpenAI chunks and Gemini responses take the
/// original's id, creation time and model from its first event.
#[derive(Debug, Clone)]
pub(crate) struct Speaker {
    provider: Provider,
    envelope: Map<String, Value>,
    /// OpenAI: the request asked for the usage chunk.
    include_usage: bool,
}

impl Speaker {
    /// The speaker of `provider`'s format; `first` is the first frame the
    /// caller was shown, `original` the request.
    pub(crate) fn new(provider: Provider, first: Option<&Bytes>, original: Option<&Value>) -> Self {
        let keys: &[&str] = match provider {
            Provider::OpenAi => &[
                "id",
                "object",
                "created",
                "model",
                "system_fingerprint",
                "service_tier",
            ],
            Provider::Gemini => &["modelVersion", "responseId"],
            _ => &[],
        };
        let mut envelope = Map::new();
        let events = first.map(split_events).map(|(events, _)| events);
        if let Some(json) = events
            .into_iter()
            .flatten()
            .find_map(|event| parse_event(&event).map(|(_, json)| json))
        {
            for key in keys {
                if let Some(value) = json.get(*key) {
                    envelope.insert((*key).to_owned(), value.clone());
                }
            }
        }
        if provider == Provider::OpenAi && !envelope.contains_key("object") {
            envelope.insert("object".into(), json!("chat.completion.chunk"));
        }
        let include_usage = original
            .and_then(|o| o.pointer("/stream_options/include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Speaker {
            provider,
            envelope,
            include_usage,
        }
    }

    fn with(&self, rest: Value) -> Value {
        let mut object = self.envelope.clone();
        if let Value::Object(rest) = rest {
            object.extend(rest);
        }
        Value::Object(object)
    }

    /// One text delta; `index` is the Anthropic content block's.
    pub(crate) fn text(&self, text: &str, index: u64) -> Bytes {
        match self.provider {
            Provider::Anthropic => serialize(
                b"content_block_delta",
                &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": text}}),
            ),
            Provider::Gemini => gemini(&self.with(json!({"candidates": [{
                "content": {"parts": [{"text": text}], "role": "model"}, "index": 0}]}))),
            _ => serialize(
                b"",
                &self.with(json!({"choices": [{"index": 0,
                    "delta": {"content": text}, "logprobs": null, "finish_reason": null}]})),
            ),
        }
    }

    /// The events that end the answer with `kind` (after the text block is
    /// closed, Anthropic), the continuation's `usage` in them where the
    /// format says it there, and the caller's reason; `None` for a finish
    /// the caller's format has no word for (a malformed call, a rejection,
    /// an abort).
    pub(crate) fn finish(
        &self,
        kind: FinishKind,
        usage: Option<Usage>,
    ) -> Option<(Vec<Bytes>, &'static str)> {
        let (complete, truncated, filtered) = match self.provider {
            Provider::Anthropic => ("end_turn", "max_tokens", "refusal"),
            Provider::Gemini => ("STOP", "MAX_TOKENS", "SAFETY"),
            _ => ("stop", "length", "content_filter"),
        };
        let reason = match kind {
            FinishKind::Complete | FinishKind::Other => complete,
            FinishKind::Truncated => truncated,
            FinishKind::Refused | FinishKind::Filtered => filtered,
            FinishKind::Malformed | FinishKind::Rejected | FinishKind::Aborted => return None,
        };
        let (input, output) = usage.map_or((None, None), |u| {
            (Some(u.input_tokens), Some(u.output_tokens))
        });
        let events = match self.provider {
            Provider::Anthropic => vec![
                serialize(
                    b"message_delta",
                    &json!({"type": "message_delta",
                        "delta": {"stop_reason": reason, "stop_sequence": null},
                        "usage": {"output_tokens": output.unwrap_or(0)}}),
                ),
                serialize(b"message_stop", &json!({"type": "message_stop"})),
            ],
            Provider::Gemini => {
                let mut last = json!({"candidates": [{
                    "content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": reason, "index": 0}]});
                if let (Some(input), Some(output)) = (input, output) {
                    last["usageMetadata"] = json!({"promptTokenCount": input,
                        "candidatesTokenCount": output, "totalTokenCount": input + output});
                }
                vec![gemini(&self.with(last))]
            }
            _ => {
                let mut events = vec![serialize(
                    b"",
                    &self.with(json!({"choices": [{"index": 0, "delta": {},
                        "logprobs": null, "finish_reason": reason}]})),
                )];
                if let (true, Some(input), Some(output)) = (self.include_usage, input, output) {
                    events.push(serialize(
                        b"",
                        &self.with(json!({"choices": [], "usage": {"prompt_tokens": input,
                            "completion_tokens": output, "total_tokens": input + output}})),
                    ));
                }
                events.push(Bytes::from_static(b"data: [DONE]\n\n"));
                events
            }
        };
        Some((events, reason))
    }
}

/// A Gemini event, ended as Google ends them (CRLF).
fn gemini(json: &Value) -> Bytes {
    let mut bytes = b"data: ".to_vec();
    bytes.extend_from_slice(json.to_string().as_bytes());
    bytes.extend_from_slice(b"\r\n\r\n");
    Bytes::from(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splice::{Kind, classify};

    fn first(provider: Provider) -> Bytes {
        Bytes::from_static(match provider {
            Provider::OpenAi => b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            Provider::Gemini => b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"w1\"}],\"role\":\"model\"},\"index\":0}],\"modelVersion\":\"gemini-x\",\"responseId\":\"r1\"}\r\n\r\n",
            _ => b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n",
        })
    }

    /// What the speaker says reads, with the caller's own decoder, as the
    /// text and the finish it was given.
    #[test]
    fn text_and_finish_read_back_in_the_callers_format() {
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 3,
        };
        let original = json!({"stream_options": {"include_usage": true}});
        for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Gemini] {
            let speaker = Speaker::new(provider, Some(&first(provider)), Some(&original));
            let text = speaker.text(" w5", 2);
            assert_eq!(
                classify(provider, &text),
                Kind::Content {
                    text: Some(" w5".into()),
                    finish: false,
                    act: false
                },
                "{provider:?}"
            );
            if provider == Provider::Anthropic {
                assert!(std::str::from_utf8(&text).unwrap().contains("\"index\":2"));
            }
            let (events, _) = speaker.finish(FinishKind::Truncated, Some(usage)).unwrap();
            let finishes: Vec<_> = events
                .iter()
                .filter_map(|event| finish_of(provider, event))
                .collect();
            assert_eq!(finishes, [FinishKind::Truncated], "{provider:?}");
            assert!(
                events
                    .iter()
                    .all(|event| !matches!(classify(provider, event), Kind::Content { .. })),
                "{provider:?}"
            );
        }
        let speaker = Speaker::new(Provider::OpenAi, Some(&first(Provider::OpenAi)), None);
        let text = String::from_utf8(speaker.text("a", 0).to_vec()).unwrap();
        assert!(
            text.contains("\"id\":\"chatcmpl-1\"") && text.contains("\"model\":\"gpt-x\""),
            "{text}"
        );
        let (events, reason) = speaker.finish(FinishKind::Complete, Some(usage)).unwrap();
        assert_eq!(reason, "stop");
        // Not asked for: no usage chunk.
        assert_eq!(events.len(), 2);
        assert_eq!(speaker.finish(FinishKind::Aborted, None), None);
    }
}
