//! A continuation answered in another wire format, said in the caller's:
//! its text as the caller's format's text deltas, its finish as the
//! caller's finish and end events.
//!
//! Only text crosses: a continuation that carries a tool call (or any
//! content but text), or finishes in a way the caller's format has no
//! word for, is not said at all — the body ends with the interruption.
//! A Responses API caller is told the text as `response.output_text.delta`
//! events of the item it was reading, numbered on from its last event,
//! and the end as the events that say the text whole (`output_text.done`,
//! `content_part.done`, `output_item.done`) and the terminal response
//! (the one the stream was created with, its output the message item with
//! the caller's whole text).

use bytes::Bytes;
use seawall_core::provider::Provider;
use seawall_core::{FinishKind, Usage};
use serde_json::{Map, Value, json};

use crate::splice::{
    Fix, member, read_members, scalar, serialize, split_events, whole, with_event,
};

/// Whether a continuation answered in `answered` can be said to a caller
/// reading `caller`: text in any format the guard decodes, said in any
/// provider's ([`Continuation::readable_in`](crate::Continuation::readable_in)
/// asks this too).
pub(crate) fn can_translate(caller: Provider, answered: Provider) -> bool {
    speaks_text(caller) && speaks_text(answered)
}

/// Whether text is read from and said in `provider`'s wire format: any
/// provider's, not a plain event stream's.
fn speaks_text(provider: Provider) -> bool {
    provider != Provider::Http
}

/// What every event of an OpenAI chat or Gemini stream says of the answer
/// as a whole — OpenAI's id, creation time, model, fingerprint and tier,
/// Gemini's model version and response id — as the first event the
/// caller was shown said it. A continuation's events are said under it,
/// whether said anew from another format ([`Speaker`]) or spliced as the
/// caller's own format sent them ([`Fix`]): one answer, one id, whichever
/// route answered (openai-node's `ChatCompletionStream` takes the last
/// chunk's id for the answer's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Envelope {
    /// The members `provider`'s events say it in.
    keys: &'static [&'static str],
    /// Their values in the original's first event.
    members: Map<String, Value>,
}

impl Envelope {
    /// The envelope of a `provider` stream whose first frame with an
    /// event is `first`; empty for a format whose events carry none.
    pub(crate) fn of(provider: Provider, first: Option<&Bytes>) -> Self {
        let keys: &'static [&'static str] = match provider {
            Provider::OpenAi => &[
                "id",
                "object",
                "created",
                "model",
                "system_fingerprint",
                "service_tier",
            ],
            Provider::Gemini => &["modelVersion", "responseId"],
            _ => return Envelope::default(),
        };
        // The envelope's members alone are read into values: the first
        // event may be padded up to the guard's cap.
        let events = first.map(split_events).map(|(events, _)| events);
        // A blank member says no envelope: Azure's first event (its prompt
        // filter results, no choices) has an empty id, object and model
        // and a zero creation time, which no continuation may take.
        let members = events
            .into_iter()
            .flatten()
            .find_map(|event| {
                let mut members = with_event(&event, |_, data| read_members(data, keys, whole))?;
                members.retain(|_, value| !blank(value));
                (!members.is_empty()).then_some(members)
            })
            .unwrap_or_default();
        Envelope { keys, members }
    }

    /// Whether there is nothing for a continuation's events to take.
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members of `data` (an event's JSON) that say another envelope,
    /// with the original's values; `None` when none does. Only those
    /// members are read, each as a scalar: a member that holds a padded
    /// container is never built into a value.
    pub(crate) fn changes(&self, data: &[u8]) -> Option<Map<String, Value>> {
        let seen = read_members(data, self.keys, scalar)?;
        let changes: Map<String, Value> = self
            .members
            .iter()
            .filter(|(key, ours)| seen.get(key.as_str()).is_some_and(|theirs| theirs != *ours))
            .map(|(key, ours)| (key.clone(), ours.clone()))
            .collect();
        (!changes.is_empty()).then_some(changes)
    }
}

/// An envelope member that says nothing: empty, zero or null.
fn blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Number(number) => number.as_u64() == Some(0),
        _ => false,
    }
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
    /// Responses API: where the text goes and the response it is in.
    responses: Option<Responses>,
}

/// The Responses API stream's place for the continued text.
#[derive(Debug, Clone)]
struct Responses {
    item_id: String,
    output_index: u64,
    content_index: u64,
    /// The next event's `sequence_number`.
    sequence: u64,
    /// The response as the stream's lifecycle event said it.
    response: Value,
}

impl Responses {
    fn event(&mut self, kind: &str, mut fields: Value) -> Bytes {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.sequence);
        self.sequence = self.sequence.saturating_add(1);
        serialize(kind.as_bytes(), &fields)
    }

    fn at(&self, mut fields: Value) -> Value {
        fields["item_id"] = json!(self.item_id);
        fields["output_index"] = json!(self.output_index);
        fields["content_index"] = json!(self.content_index);
        fields
    }
}

impl Speaker {
    /// The speaker of `provider`'s format; `first` is the first frame the
    /// caller was shown, `original` the request. A Responses API caller's
    /// needs the place `fix` learned and the response its `lifecycle`
    /// event named: `None` without them.
    pub(crate) fn new(
        provider: Provider,
        first: Option<&Bytes>,
        original: Option<&Value>,
        fix: Option<&Fix>,
        lifecycle: Option<&Bytes>,
    ) -> Option<Self> {
        if !speaks_text(provider) {
            return None;
        }
        let responses = match provider {
            Provider::OpenAiResponses => {
                let (item_id, output_index, content_index, sequence) = fix?.responses_place()?;
                let (events, _) = split_events(lifecycle?);
                // Only the response is read into a value, never the rest
                // of its event.
                let response = events.iter().find_map(|event| {
                    with_event(event, |_, data| whole(member(data, "response")?))
                })?;
                Some(Responses {
                    item_id,
                    output_index,
                    content_index,
                    sequence,
                    response,
                })
            }
            _ => None,
        };
        let mut envelope = Envelope::of(provider, first).members;
        if provider == Provider::OpenAi && !envelope.contains_key("object") {
            envelope.insert("object".into(), json!("chat.completion.chunk"));
        }
        let include_usage = original
            .and_then(|o| o.pointer("/stream_options/include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(Speaker {
            provider,
            envelope,
            include_usage,
            responses,
        })
    }

    fn with(&self, rest: Value) -> Value {
        let mut object = self.envelope.clone();
        if let Value::Object(rest) = rest {
            object.extend(rest);
        }
        Value::Object(object)
    }

    /// One text delta; `index` is the Anthropic content block's.
    pub(crate) fn text(&mut self, text: &str, index: u64) -> Bytes {
        if let Some(responses) = &mut self.responses {
            let fields = responses.at(json!({"delta": text, "logprobs": []}));
            return responses.event("response.output_text.delta", fields);
        }
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

    /// Whether the end events ([`finish`](Self::finish)) say the caller's
    /// whole text (the Responses API's), which must then be kept whole.
    pub(crate) fn says_whole_text(&self) -> bool {
        self.responses.is_some()
    }

    /// The events that end the answer with `kind` (after the text block is
    /// closed, Anthropic), the continuation's `usage` in them where the
    /// format says it there, and the caller's reason; `None` for a finish
    /// the caller's format has no word for (a malformed call, a rejection,
    /// an abort). `whole` is the text the caller holds, which the
    /// Responses API's closing events say again.
    pub(crate) fn finish(
        &mut self,
        kind: FinishKind,
        usage: Option<Usage>,
        whole: &str,
    ) -> Option<(Vec<Bytes>, &'static str)> {
        if let Some(responses) = &mut self.responses {
            return responses_finish(responses, kind, usage, whole);
        }
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
        let events = match self.provider {
            Provider::Anthropic => vec![
                serialize(
                    b"message_delta",
                    &json!({"type": "message_delta",
                        "delta": {"stop_reason": reason, "stop_sequence": null},
                        "usage": {"output_tokens": usage.map_or(0, |u| u.output_tokens)}}),
                ),
                serialize(b"message_stop", &json!({"type": "message_stop"})),
            ],
            Provider::Gemini => {
                let mut last = json!({"candidates": [{
                    "content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": reason, "index": 0}]});
                if let Some(usage) = usage {
                    last["usageMetadata"] = json!({"promptTokenCount": usage.input_tokens,
                        "candidatesTokenCount": usage.output_tokens,
                        "totalTokenCount": total(usage)});
                }
                vec![gemini(&self.with(last))]
            }
            _ => {
                let mut events = vec![serialize(
                    b"",
                    &self.with(json!({"choices": [{"index": 0, "delta": {},
                        "logprobs": null, "finish_reason": reason}]})),
                )];
                if let (true, Some(usage)) = (self.include_usage, usage) {
                    events.push(serialize(
                        b"",
                        &self.with(json!({"choices": [], "usage": {
                            "prompt_tokens": usage.input_tokens,
                            "completion_tokens": usage.output_tokens,
                            "total_tokens": total(usage)}})),
                    ));
                }
                events.push(Bytes::from_static(b"data: [DONE]\n\n"));
                events
            }
        };
        Some((events, reason))
    }
}

/// The Responses API's closing events: the text part and the message item
/// said whole, then the terminal response (`completed`, or `incomplete`
/// for a cut or a filter; a refusal is a content part of its own, not
/// made up from another format's finish).
fn responses_finish(
    responses: &mut Responses,
    kind: FinishKind,
    usage: Option<Usage>,
    whole: &str,
) -> Option<(Vec<Bytes>, &'static str)> {
    let (status, terminal, reason, details) = match kind {
        FinishKind::Complete | FinishKind::Other => {
            ("completed", "response.completed", "completed", Value::Null)
        }
        FinishKind::Truncated => (
            "incomplete",
            "response.incomplete",
            "max_output_tokens",
            json!({"reason": "max_output_tokens"}),
        ),
        FinishKind::Filtered => (
            "incomplete",
            "response.incomplete",
            "content_filter",
            json!({"reason": "content_filter"}),
        ),
        _ => return None,
    };
    let part = json!({"type": "output_text", "text": whole, "annotations": []});
    let item = json!({"id": responses.item_id, "type": "message", "status": status,
        "role": "assistant", "content": [part]});
    let mut events = Vec::with_capacity(4);
    let fields = responses.at(json!({"text": whole, "logprobs": []}));
    events.push(responses.event("response.output_text.done", fields));
    let fields = responses.at(json!({"part": part}));
    events.push(responses.event("response.content_part.done", fields));
    let fields = json!({"output_index": responses.output_index, "item": item});
    events.push(responses.event("response.output_item.done", fields));
    let mut response = responses.response.clone();
    if let Some(object) = response.as_object_mut() {
        object.insert("status".into(), json!(status));
        object.insert("incomplete_details".into(), details);
        object.insert("output".into(), json!([item]));
        if let Some(usage) = usage {
            object.insert("usage".into(), responses_usage(usage));
        }
    }
    events.push(responses.event(terminal, json!({"response": response})));
    Some((events, reason))
}

/// The Responses API's usage object for `usage`, with the two detail
/// objects OpenAI always sends: typed readers require them (async-openai's
/// `ResponseUsage` fails the caller's stream at its very end without).
/// Another format's cached and reasoning counts are not carried over:
/// they are said as 0.
fn responses_usage(usage: Usage) -> Value {
    json!({"input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": total(usage)})
}

/// The total a format's usage says beside its two counts: the server's
/// counts summed, never past the largest (a hostile count must not
/// overflow).
fn total(usage: Usage) -> u64 {
    usage.input_tokens.saturating_add(usage.output_tokens)
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
    use crate::splice::{Kind, classify, classify_with, parse_event};
    use seawall_stream::protocol::Decoder;

    /// The finish `raw` (one event in `protocol`'s format) carries, if any.
    fn finish_of(protocol: Provider, raw: &[u8]) -> Option<FinishKind> {
        classify_with(&mut Decoder::new(protocol).within_answer(), raw).1
    }

    fn first(provider: Provider) -> Bytes {
        Bytes::from_static(match provider {
            Provider::OpenAi => b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            Provider::Gemini => b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"w1\"}],\"role\":\"model\"},\"index\":0}],\"modelVersion\":\"gemini-x\",\"responseId\":\"r1\"}\r\n\r\n",
            Provider::OpenAiResponses => b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-x\",\"output\":[],\"usage\":null},\"sequence_number\":0}\n\n",
            _ => b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\"}}\n\n",
        })
    }

    /// What a Responses API caller last saw: a delta of item `msg_1`.
    fn responses_fix() -> Fix {
        let mut fix = Fix::default();
        fix.learn(
            Provider::OpenAiResponses,
            &Bytes::from_static(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" w4\",\"sequence_number\":7}\n\n"),
        );
        fix
    }

    /// Every format a continuation's text is said in.
    const SPOKEN: [Provider; 4] = [
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Gemini,
        Provider::OpenAiResponses,
    ];

    /// A speaker for a `provider` caller whose request asked for usage,
    /// its envelope learned from that format's first event.
    fn speaker_asked_for_usage(provider: Provider) -> Speaker {
        let original = json!({"stream_options": {"include_usage": true}});
        let first = first(provider);
        Speaker::new(
            provider,
            Some(&first),
            Some(&original),
            Some(&responses_fix()),
            Some(&first),
        )
        .unwrap()
    }

    /// What the speaker says reads, with the caller's own decoder, as the
    /// text and the finish it was given.
    #[test]
    fn text_and_finish_read_back_in_the_callers_format() {
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 3,
        };
        for provider in SPOKEN {
            let mut speaker = speaker_asked_for_usage(provider);
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
            let (events, _) = speaker
                .finish(FinishKind::Truncated, Some(usage), "w1 w2 w3 w4 w5")
                .unwrap();
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
        let mut speaker = Speaker::new(
            Provider::OpenAi,
            Some(&first(Provider::OpenAi)),
            None,
            None,
            None,
        )
        .unwrap();
        let text = String::from_utf8(speaker.text("a", 0).to_vec()).unwrap();
        assert!(
            text.contains("\"id\":\"chatcmpl-1\"") && text.contains("\"model\":\"gpt-x\""),
            "{text}"
        );
        let (events, reason) = speaker
            .finish(FinishKind::Complete, Some(usage), "a")
            .unwrap();
        assert_eq!(reason, "stop");
        // Not asked for: no usage chunk.
        assert_eq!(events.len(), 2);
        assert_eq!(speaker.finish(FinishKind::Aborted, None, "a"), None);
    }

    /// A server's usage as large as a count can be: the total says the
    /// largest, never an overflow.
    #[test]
    fn a_hostile_usage_saturates_its_total() {
        let usage = Usage {
            input_tokens: u64::MAX,
            output_tokens: 7,
        };
        for provider in SPOKEN {
            let mut speaker = speaker_asked_for_usage(provider);
            let (events, _) = speaker
                .finish(FinishKind::Complete, Some(usage), "w1")
                .unwrap();
            let said: String = events
                .iter()
                .map(|event| String::from_utf8_lossy(event).into_owned())
                .collect();
            if provider != Provider::Anthropic {
                assert!(said.contains(&u64::MAX.to_string()), "{provider:?}: {said}");
            }
        }
    }

    /// Every event said to a Responses API caller, for each finish it can
    /// be told, reads as async-openai's typed stream event: the terminal
    /// response's usage with both its detail objects.
    #[test]
    fn every_responses_event_reads_as_async_openais() {
        use async_openai::types::responses::ResponseStreamEvent;

        let lifecycle = Bytes::from_static(b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1,\"status\":\"in_progress\",\"error\":null,\"incomplete_details\":null,\"model\":\"gpt-x\",\"output\":[],\"usage\":null},\"sequence_number\":0}\n\n");
        let usage = Usage {
            input_tokens: 5,
            output_tokens: 3,
        };
        for kind in [
            FinishKind::Complete,
            FinishKind::Truncated,
            FinishKind::Filtered,
        ] {
            for usage in [Some(usage), None] {
                let fix = responses_fix();
                let mut speaker = Speaker::new(
                    Provider::OpenAiResponses,
                    None,
                    None,
                    Some(&fix),
                    Some(&lifecycle),
                )
                .unwrap();
                let mut events = vec![speaker.text(" w5", 0)];
                events.extend(speaker.finish(kind, usage, "w1 w5").unwrap().0);
                let mut read = Vec::new();
                for event in &events {
                    let (_, data) = parse_event(event).unwrap();
                    let typed = serde_json::from_value::<ResponseStreamEvent>(data);
                    read.push(typed.unwrap_or_else(|e| panic!("{kind:?} {usage:?}: {e}")));
                }
                let (ResponseStreamEvent::ResponseCompleted(
                    async_openai::types::responses::ResponseCompletedEvent { response, .. },
                )
                | ResponseStreamEvent::ResponseIncomplete(
                    async_openai::types::responses::ResponseIncompleteEvent { response, .. },
                )) = read.last().unwrap()
                else {
                    panic!("{kind:?}: {read:?}");
                };
                assert_eq!(
                    response
                        .usage
                        .as_ref()
                        .map(|u| (u.input_tokens, u.output_tokens)),
                    usage.map(|_| (5, 3)),
                    "{kind:?}"
                );
            }
        }
    }

    /// A Responses API caller reads the text on its item, numbered on from
    /// its last event, and a terminal response with the whole text under
    /// the response's id.
    #[test]
    fn a_responses_caller_reads_one_numbered_item() {
        let first = first(Provider::OpenAiResponses);
        let fix = responses_fix();
        let mut speaker = Speaker::new(
            Provider::OpenAiResponses,
            None,
            None,
            Some(&fix),
            Some(&first),
        )
        .unwrap();
        let mut events = vec![speaker.text(" w5", 0)];
        let (end, reason) = speaker
            .finish(FinishKind::Complete, None, "w1 w2 w3 w4 w5")
            .unwrap();
        assert_eq!(reason, "completed");
        events.extend(end);
        let parsed: Vec<Value> = events
            .iter()
            .map(|event| parse_event(event).unwrap().1)
            .collect();
        let numbers: Vec<_> = parsed
            .iter()
            .map(|e| e["sequence_number"].clone())
            .collect();
        assert_eq!(numbers, [8, 9, 10, 11, 12].map(|n| json!(n)));
        assert_eq!(parsed[0]["item_id"], "msg_1");
        let terminal = &parsed[4];
        assert_eq!(terminal["type"], "response.completed");
        assert_eq!(terminal["response"]["id"], "resp_1");
        assert_eq!(terminal["response"]["status"], "completed");
        assert_eq!(
            terminal["response"]["output"][0]["content"][0]["text"],
            "w1 w2 w3 w4 w5"
        );
        // Without the place it was reading, nothing is said.
        assert!(Speaker::new(Provider::OpenAiResponses, None, None, None, Some(&first)).is_none());
    }
}
