//! What the decoders make of one event, through the public `Decoder`:
//! stable protocol names, events named `error`, data that cannot be read,
//! and a refusal's implied finish.

use seawall_core::FinishKind;
use seawall_stream::Provider;
use seawall_stream::protocol::{Decoder, Signal};
use seawall_stream::sse::{Event, Item};

const JSON_PROTOCOLS: [Provider; 4] = [
    Provider::OpenAi,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
];

const ALL: [Provider; 5] = [
    Provider::OpenAi,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
    Provider::Http,
];

/// A short, comparable description of a signal.
fn describe(signal: Signal<'_>) -> String {
    match signal {
        Signal::Content { text, finish, .. } => format!(
            "content {:?} {:?}",
            text.as_deref(),
            finish.map(|r| (r.kind, r.reason.into_owned()))
        ),
        Signal::Finish(reason) => format!("finish {:?} {}", reason.kind, reason.reason),
        Signal::Error(failure) => format!("error {}", failure.code()),
        Signal::Progress => "progress".into(),
        Signal::Thinking => "thinking".into(),
        Signal::KeepAlive => "keepalive".into(),
        Signal::Done => "done".into(),
        Signal::Other => "other".into(),
        Signal::Undecodable(why) => format!("undecodable: {why}"),
    }
}

/// An Anthropic event as the API sends it: named after its data's type.
fn anthropic(data: &str) -> Item<'_> {
    let ty = serde_json::from_str::<serde_json::Value>(data).unwrap()["type"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    event(ty.leak().as_bytes(), data.as_bytes())
}

fn event<'a>(name: &'a [u8], data: &'a [u8]) -> Item<'a> {
    Item::Event(Event {
        name,
        data,
        start: 0,
        end: data.len(),
    })
}

fn decode_one(protocol: Provider, name: &[u8], data: &[u8]) -> String {
    describe(Decoder::new(protocol).decode(event(name, data)))
}

#[test]
fn each_provider_has_its_path_and_a_decoder_of_its_own() {
    for provider in ALL {
        assert_eq!(provider.eof_finishes(), provider == Provider::Http);
        assert_eq!(Decoder::new(provider).provider(), provider);
    }
    let path = |path: &str| Provider::for_path(path).unwrap_or(Provider::Http);
    assert_eq!(path("/v1/chat/completions"), Provider::OpenAi);
    assert_eq!(path("/v1/completions"), Provider::OpenAi);
    assert_eq!(path("/v1/responses"), Provider::OpenAiResponses);
    // A stored response read again: what a resume of a background
    // response reads. Not its input items, nor its cancellation.
    assert_eq!(path("/v1/responses/resp_1"), Provider::OpenAiResponses);
    assert_eq!(path("/v1/responses/resp_1/input_items"), Provider::Http);
    assert_eq!(path("/v1/responses/resp_1/cancel"), Provider::Http);
    assert_eq!(path("/v1/messages"), Provider::Anthropic);
    assert_eq!(
        path("/v1beta/models/gemini-2.0-flash:streamGenerateContent"),
        Provider::Gemini
    );
    // Claude on Vertex AI speaks the Messages API; other publishers not.
    let vertex = "/v1/projects/p/locations/us-east5/publishers";
    for verb in ["streamRawPredict", "rawPredict"] {
        assert_eq!(
            path(&format!(
                "{vertex}/anthropic/models/claude-sonnet-4@20250514:{verb}"
            )),
            Provider::Anthropic
        );
        assert_eq!(
            path(&format!("{vertex}/mistralai/models/mistral-large:{verb}")),
            Provider::Http
        );
    }
    // Its token counting is no Messages answer.
    assert_eq!(
        path(&format!(
            "{vertex}/anthropic/models/count-tokens:rawPredict"
        )),
        Provider::Http
    );
    assert_eq!(path("/v1/other"), Provider::Http);
}

#[test]
fn a_comment_is_a_keep_alive_in_every_protocol() {
    for protocol in ALL {
        let signal = Decoder::new(protocol).decode(Item::Comment(b" ping"));
        assert_eq!(describe(signal), "keepalive", "{protocol}");
    }
}

/// Well-formed JSON a protocol does not know is skipped; the same data in
/// an event named `error` is an error, whatever it looks like.
#[test]
fn unknown_json_is_skipped_unless_the_event_is_named_error() {
    for protocol in JSON_PROTOCOLS {
        // An object without the protocol's error member too: the decoders
        // read such an object as progress, the name says otherwise.
        assert!(
            decode_one(
                protocol,
                b"error",
                br#"{"message":"Internal error","code":500}"#
            )
            .starts_with("error "),
            "{protocol}"
        );
        for data in [&br#"[1, 2]"#[..], br#""text""#, b"42"] {
            assert_eq!(
                decode_one(protocol, b"", data),
                "other",
                "{protocol} {:?}",
                String::from_utf8_lossy(data)
            );
            assert_eq!(
                decode_one(protocol, b"message", data),
                "other",
                "{protocol}"
            );
            assert!(
                decode_one(protocol, b"error", data).starts_with("error "),
                "{protocol} {:?}",
                String::from_utf8_lossy(data)
            );
            // The name must be exactly `error`.
            assert_eq!(decode_one(protocol, b"errors", data), "other");
        }
    }
}

/// Data that is not UTF-8, or not JSON at all, may hold part of the
/// answer: it is never skipped as "other" (Anthropic's, in an event its
/// SDK reads: one it passes over holds nothing an SDK user reads).
#[test]
fn data_that_cannot_be_read_is_undecodable() {
    for protocol in JSON_PROTOCOLS {
        let name: &[u8] = match protocol {
            Provider::Anthropic => b"content_block_delta",
            _ => b"",
        };
        assert_eq!(
            decode_one(protocol, name, b"{\"text\":\"\xff\xfe\"}"),
            "undecodable: event data is not UTF-8",
            "{protocol}"
        );
        for data in [&b"{\"choices\":[{\"delta\":"[..], b"not json", b"{]"] {
            assert_eq!(
                decode_one(protocol, name, data),
                "undecodable: event data is not well-formed JSON",
                "{protocol} {:?}",
                String::from_utf8_lossy(data)
            );
        }
    }
}

/// Only OpenAI's chat stream ends with `[DONE]`; a server that adds one to
/// every stream ends another protocol's where its SDK stops: the Responses
/// API's reads with the chat reader and stops there, Google's raises on
/// it (no JSON). The stream ends before that event, whole only if it had
/// finished. Anthropic's SDK passes an unnamed event over: nothing.
#[test]
fn done_where_the_protocol_has_none_ends_where_its_sdk_stops() {
    for protocol in [Provider::OpenAiResponses, Provider::Gemini] {
        let mut decoder = Decoder::new(protocol);
        assert_eq!(describe(decoder.decode(event(b"", b"[DONE]"))), "other");
        assert!(decoder.ended() && decoder.ends_before(), "{protocol}");
    }
    let mut decoder = Decoder::new(Provider::Anthropic);
    assert_eq!(describe(decoder.decode(event(b"", b"[DONE]"))), "keepalive");
    assert!(!decoder.ended());
    for protocol in [Provider::OpenAi, Provider::Http] {
        let mut decoder = Decoder::new(protocol);
        assert_eq!(describe(decoder.decode(event(b"", b"[DONE]"))), "done");
        assert!(decoder.ended() && !decoder.ends_before(), "{protocol}");
    }
}

/// `data:` alone (a heartbeat) holds no part of an answer: in a JSON
/// protocol it proves nothing, unless the event is named `error`.
#[test]
fn an_event_without_data_is_a_keep_alive() {
    for protocol in JSON_PROTOCOLS {
        for data in [&b""[..], b" ", b"\n"] {
            assert_eq!(decode_one(protocol, b"", data), "keepalive", "{protocol}");
        }
        assert!(decode_one(protocol, b"error", b"").starts_with("error "));
    }
}

/// The generic protocol has no JSON to break: any non-empty data is
/// content, empty data is nothing.
#[test]
fn generic_data_is_content_and_empty_data_is_other() {
    let generic = Provider::Http;
    assert_eq!(decode_one(generic, b"", b""), "other");
    assert_eq!(
        decode_one(generic, b"", b"not json"),
        r#"content Some("not json") None"#
    );
    assert_eq!(decode_one(generic, b"", b"\xff"), "content None None");
    assert_eq!(decode_one(generic, b"", b"[DONE]"), "done");
}

/// An event named `error` is an error in the generic protocol too, never
/// content, whatever its data: nothing is known of the service, so it
/// fails closed (`unknown`).
#[test]
fn a_generic_event_named_error_is_an_error() {
    let generic = Provider::Http;
    for data in [
        &br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#[..],
        b"boom",
        b"",
    ] {
        assert_eq!(decode_one(generic, b"error", data), "error unknown");
    }
    assert_eq!(
        decode_one(generic, b"message", b"hi"),
        r#"content Some("hi") None"#
    );
}

fn openai_refusal() -> &'static [u8] {
    br#"{"choices":[{"index":0,"delta":{"refusal":"I can't help with that"},"finish_reason":null}]}"#
}

/// A refusal streamed as `delta.refusal` is a refusal however the stream
/// ends: at `[DONE]` without a reason of its own, the done marker becomes
/// the refusal's finish.
#[test]
fn a_streamed_refusal_finishes_as_a_refusal_at_done() {
    let mut decoder = Decoder::new(Provider::OpenAi);
    assert_eq!(decoder.implied_finish(), None);
    decoder.decode(event(b"", openai_refusal()));
    let implied = decoder.implied_finish().expect("a refusal");
    assert_eq!(
        (implied.kind, &*implied.reason),
        (FinishKind::Refused, "refusal")
    );
    assert_eq!(
        describe(decoder.decode(event(b"", b"[DONE]"))),
        "finish Refused refusal"
    );
}

/// Once the stream sent its finish, `[DONE]` is only the end marker.
#[test]
fn done_after_a_finish_is_only_done() {
    let mut decoder = Decoder::new(Provider::OpenAi);
    decoder.decode(event(b"", openai_refusal()));
    let stop = br#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    assert!(describe(decoder.decode(event(b"", stop))).starts_with("finish Refused"));
    assert_eq!(describe(decoder.decode(event(b"", b"[DONE]"))), "done");

    // And without a refusal, `[DONE]` is done whether a finish came or not.
    let mut decoder = Decoder::new(Provider::OpenAi);
    assert_eq!(describe(decoder.decode(event(b"", b"[DONE]"))), "done");
}

#[test]
fn anthropic_events() {
    let mut decoder = Decoder::new(Provider::Anthropic);
    let mut next = |data: &str| describe(decoder.decode(anthropic(data)));
    assert_eq!(
        next(
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1}}}"#
        ),
        "progress"
    );
    assert_eq!(next(r#"{"type":"ping"}"#), "keepalive");
    assert_eq!(
        next(
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
        ),
        "progress"
    );
    assert_eq!(
        next(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}"#),
        "progress",
        "an empty text delta moves nothing"
    );
    assert_eq!(
        next(
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#
        ),
        r#"content Some("Hi") None"#
    );
    assert_eq!(
        next(
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#
        ),
        "content None None",
        "a tool's input is content without text"
    );
    assert_eq!(
        next(r#"{"type":"content_block_stop","index":0}"#),
        "progress"
    );
    assert_eq!(
        next(
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#
        ),
        "finish Complete end_turn"
    );
    assert_eq!(next(r#"{"type":"message_stop"}"#), "done");
    // Input from message_start, output from the last message_delta.
    let usage = decoder.usage().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (12, 7));
    let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert_eq!(
        describe(Decoder::new(Provider::Anthropic).decode(event(b"", error.as_bytes()))),
        "error overloaded"
    );
}

#[test]
fn openai_usage_is_read_from_the_final_chunk() {
    let mut decoder = Decoder::new(Provider::OpenAi);
    let chunk = br#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
    decoder.decode(event(b"", chunk));
    assert_eq!(decoder.usage(), None);
    let usage =
        br#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#;
    assert_eq!(describe(decoder.decode(event(b"", usage))), "progress");
    let usage = decoder.usage().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (5, 2));
}

/// A chunk that carries nothing is a keep-alive; one with the members of
/// an answer's chunk (its id or object, usage; Gemini's usage or prompt
/// feedback) is progress, and a blocked prompt stays a filter.
#[test]
fn a_chunk_that_carries_nothing_is_a_keep_alive() {
    for data in [
        "{}",
        r#"{"type":"ping"}"#,
        r#"{"choices":[]}"#,
        r#"{"choices":null,"usage":null}"#,
    ] {
        assert_eq!(
            decode_one(Provider::OpenAi, b"", data.as_bytes()),
            "keepalive",
            "{data}"
        );
    }
    let azure_first = r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}"#;
    for data in [
        azure_first,
        r#"{"id":"c","object":"chat.completion.chunk","choices":[]}"#,
        r#"{"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
    ] {
        assert_eq!(
            decode_one(Provider::OpenAi, b"", data.as_bytes()),
            "progress",
            "{data}"
        );
    }
    for data in [
        "{}",
        r#"{"candidates":[]}"#,
        r#"{"modelVersion":"gemini-x"}"#,
    ] {
        assert_eq!(
            decode_one(Provider::Gemini, b"", data.as_bytes()),
            "keepalive",
            "{data}"
        );
    }
    for data in [
        r#"{"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}"#,
        r#"{"promptFeedback":{"safetyRatings":[]}}"#,
    ] {
        assert_eq!(
            decode_one(Provider::Gemini, b"", data.as_bytes()),
            "progress",
            "{data}"
        );
    }
    assert_eq!(
        decode_one(
            Provider::Gemini,
            b"",
            br#"{"promptFeedback":{"blockReason":"SAFETY"}}"#
        ),
        "finish Filtered SAFETY"
    );
}

/// A finish reason that says nothing — the empty string SGLang and older
/// Ollama send on every chunk, KoboldCpp's `"null"` — is no finish: the
/// chunk's content is content and the stream goes on. Read as a finish,
/// the role chunk ended the answer (an empty answer, retried and billed
/// again) or the first text did (any later break called complete).
#[test]
fn an_empty_finish_reason_is_no_finish() {
    for reason in ["", "null"] {
        let chunk = |delta: &str, finish: &str| {
            format!(r#"{{"choices":[{{"index":0,"delta":{delta},"finish_reason":"{finish}"}}]}}"#)
        };
        let mut decoder = Decoder::new(Provider::OpenAi);
        let mut read = |data: String| describe(decoder.decode(event(b"", data.as_bytes())));
        assert_eq!(
            read(chunk(r#"{"role":"assistant","content":""}"#, reason)),
            "progress"
        );
        assert_eq!(
            read(chunk(r#"{"content":"Hello"}"#, reason)),
            r#"content Some("Hello") None"#
        );
        assert_eq!(
            read(chunk("{}", "stop")),
            "finish Complete stop",
            "{reason:?}"
        );
        let anthropic = format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}},"usage":{{"output_tokens":1}}}}"#
        );
        assert_eq!(
            decode_one(Provider::Anthropic, b"message_delta", anthropic.as_bytes()),
            "progress"
        );
        let gemini = format!(
            r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hi"}}],"role":"model"}},"finishReason":"{reason}"}}]}}"#
        );
        assert_eq!(
            decode_one(Provider::Gemini, b"", gemini.as_bytes()),
            r#"content Some("Hi") None"#
        );
    }
}

/// The OpenAI SDK stops at data that starts `[DONE]`, whatever follows
/// it; data with a blank before it is no marker (and no JSON). Anthropic's
/// passes an unnamed event over, whatever it holds.
#[test]
fn done_is_data_that_starts_with_it() {
    assert_eq!(decode_one(Provider::OpenAi, b"", b"[DONE] "), "done");
    assert_eq!(decode_one(Provider::OpenAi, b"", b"[DONE]x"), "done");
    assert!(decode_one(Provider::OpenAi, b"", b" [DONE]").starts_with("undecodable"));
    // A stream that named its events passes an unnamed one over.
    let named = |data: &[u8]| {
        let mut decoder = Decoder::new(Provider::Anthropic);
        decoder.decode(event(
            b"message_start",
            br#"{"type":"message_start","message":{"id":"m"}}"#,
        ));
        describe(decoder.decode(event(b"", data)))
    };
    assert_eq!(named(b" [DONE]"), "other");
    assert_eq!(named(b"{broken"), "other");
    assert!(
        decode_one(Provider::Anthropic, b"content_block_delta", b"{broken")
            .starts_with("undecodable")
    );
}

/// Mistral's reasoning models send a delta's `content` as a list of parts:
/// a thinking part is the model working, text parts are the answer. Read
/// as a string only, such a chunk was unreadable and skipped: the thinking
/// was no progress, an answer in text parts never seen.
#[test]
fn content_as_a_list_of_parts_is_read_by_its_parts() {
    let thinking = br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]},"finish_reason":null}]}"#;
    assert_eq!(decode_one(Provider::OpenAi, b"", thinking), "thinking");
    let text = br#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Hel"},{"type":"text","text":"lo"}]},"finish_reason":null}]}"#;
    assert_eq!(
        decode_one(Provider::OpenAi, b"", text),
        r#"content Some("Hello") None"#
    );
}

/// A lone surrogate escape (`\ud83d` with no low half: what JavaScript
/// writes for a string cut inside an emoji) is valid JSON that serde
/// refuses. The event is still the text it carries, the lone half read as
/// the replacement character: never skipped with its text, in every
/// protocol.
#[test]
fn a_lone_surrogate_is_replaced_not_the_event_skipped() {
    let cases: [(Provider, &str); 4] = [
        (
            Provider::OpenAi,
            r#"{"id":"c","choices":[{"index":0,"delta":{"content":"LOST \ud83d"},"finish_reason":null}]}"#,
        ),
        (
            Provider::OpenAiResponses,
            r#"{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"LOST \ud83d","sequence_number":4}"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"LOST \ud83d"}}"#,
        ),
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"LOST \ud83d"}]},"index":0}]}"#,
        ),
    ];
    for (protocol, data) in cases {
        let name: &[u8] = match protocol {
            Provider::Anthropic => b"content_block_delta",
            _ => b"",
        };
        assert_eq!(
            decode_one(protocol, name, data.as_bytes()),
            r#"content Some("LOST �") None"#,
            "{protocol}"
        );
        // A low half alone, and a pair split by other text, alike.
        let low = data.replace(r"\ud83d", r"\ude00 and \ud83d x \ude00");
        assert_eq!(
            decode_one(protocol, name, low.as_bytes()),
            r#"content Some("LOST � and � x �") None"#,
            "{protocol}"
        );
    }
    // A whole pair is the character it spells.
    assert_eq!(
        decode_one(
            Provider::OpenAi,
            b"",
            br#"{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00"},"finish_reason":"stop"}]}"#
        ),
        r#"content Some("😀") Some((Complete, "stop"))"#
    );
}

/// An error inside a stream has no HTTP status; servers that speak
/// OpenAI's wire echo the one they mean as a numeric `code` (vLLM,
/// OpenRouter), and that status decides where no name does: a 500 or 502
/// is transient, a 429 a rate limit — never a permanent `unknown`.
#[test]
fn an_in_stream_error_echoing_a_status_is_judged_by_it() {
    let rows = [
        (
            r#"{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}"#,
            "error provider_unavailable",
        ),
        (
            r#"{"error":{"message":"Service Unavailable","type":"ServiceUnavailableError","code":503}}"#,
            "error provider_unavailable",
        ),
        (
            r#"{"error":{"code":502,"message":"Upstream error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
            "error provider_unavailable",
        ),
        (
            r#"{"error":{"code":429,"message":"Rate limit exceeded"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
            "error rate_limited",
        ),
        (
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"BadRequestError","code":400}}"#,
            "error context_too_long",
        ),
        (
            r#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#,
            "error bad_request",
        ),
        // Read as if it came with the status: the provider's table first.
        (
            r#"{"error":{"code":429,"message":"Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000."}}"#,
            "error request_too_large",
        ),
        (
            r#"{"error":{"type":"overloaded_error","code":503,"message":"busy"}}"#,
            "error overloaded",
        ),
        // A number that is no error status says nothing.
        (r#"{"error":{"message":"odd","code":7}}"#, "error unknown"),
    ];
    for (data, expected) in rows {
        assert_eq!(
            decode_one(Provider::OpenAi, b"", data.as_bytes()),
            expected,
            "{data}"
        );
    }
    // Gemini's body always echoes it; a status word of its own decides
    // first, a word seawall does not know defers to the number.
    assert_eq!(
        decode_one(
            Provider::Gemini,
            b"",
            br#"{"error":{"code":503,"message":"busy","status":"SOMETHING_NEW"}}"#
        ),
        "error provider_unavailable"
    );
}

/// Events are read as the SDK dispatches them: by their name. Once the
/// stream named one, an event with no name (or a name the SDK does not
/// read) is passed over, its text no SDK user ever reads; one whose data
/// has no `type` takes its name's, as the SDK fills it in. A stream that
/// names none is read by its data's types.
#[test]
fn anthropic_events_are_read_by_their_name() {
    let delta =
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
    let start = r#"{"type":"message_start","message":{"id":"m"}}"#;
    let mut decoder = Decoder::new(Provider::Anthropic);
    assert_eq!(
        describe(decoder.decode(event(b"", delta.as_bytes()))),
        r#"content Some("Hi") None"#,
        "no event named yet: read by its type"
    );
    assert_eq!(
        describe(decoder.decode(event(b"message_start", start.as_bytes()))),
        "progress"
    );
    assert_eq!(
        describe(decoder.decode(event(b"", delta.as_bytes()))),
        "other"
    );
    assert_eq!(
        describe(decoder.decode(event(b"completion", delta.as_bytes()))),
        "other"
    );
    let untyped = r#"{"index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
    assert_eq!(
        decode_one(
            Provider::Anthropic,
            b"content_block_delta",
            untyped.as_bytes()
        ),
        r#"content Some("Hi") None"#
    );
    let stop = r#"{"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#;
    assert_eq!(
        decode_one(Provider::Anthropic, b"message_delta", stop.as_bytes()),
        "finish Complete end_turn"
    );
    assert_eq!(decode_one(Provider::Anthropic, b"ping", b"{}"), "keepalive");
    assert!(decode_one(Provider::Anthropic, b"error", b"").starts_with("error"));
}

/// Every billed token counts: Anthropic's cache writes and reads beside
/// `input_tokens`, from `message_start` to the last `message_delta`.
#[test]
fn anthropic_cache_tokens_are_input() {
    let mut decoder = Decoder::new(Provider::Anthropic);
    decoder.decode(anthropic(
        r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":1,"cache_creation_input_tokens":2000,"cache_read_input_tokens":5000}}}"#,
    ));
    decoder.decode(anthropic(
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
    ));
    let usage = decoder.usage().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (7003, 9));
    // A later report of the input without its cache (as some compatible
    // servers send in `message_delta`) keeps the cache counts.
    decoder.decode(anthropic(
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":3,"output_tokens":50}}"#,
    ));
    let usage = decoder.usage().expect("usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (7003, 50));
    // The cache read alone, later, replaces only the cache read.
    decoder.decode(anthropic(
        r#"{"type":"message_delta","delta":{},"usage":{"cache_read_input_tokens":6000}}"#,
    ));
    assert_eq!(decoder.usage().expect("usage").input_tokens, 8003);
}

/// An error body in another wire's shape, unnamed (an OpenAI-shaped
/// `{"error":…}` in an Anthropic, Responses or Gemini stream, as proxies
/// write one) is an error, classified by the provider's table — never an
/// event skipped and handed on, its words and all, as part of the answer.
#[test]
fn an_error_body_of_another_shape_is_an_error() {
    let data = br#"{"error":{"message":"boom","type":"server_error","code":null}}"#;
    for protocol in JSON_PROTOCOLS {
        assert!(
            decode_one(protocol, b"", data).starts_with("error "),
            "{protocol}: {}",
            decode_one(protocol, b"", data)
        );
    }
    // A null error member declares nothing.
    assert_eq!(
        decode_one(Provider::Anthropic, b"", br#"{"error":null,"x":1}"#),
        "other"
    );
}

/// Decodes `events` in order with one decoder.
fn decode_all(protocol: Provider, events: &[(&[u8], &str)]) -> Vec<String> {
    let mut decoder = Decoder::new(protocol);
    events
        .iter()
        .map(|(name, data)| describe(decoder.decode(event(name, data.as_bytes()))))
        .collect()
}

/// A chunk that names one of its members twice is read with the later
/// value, as the SDKs read it (Python's `json`, `JSON.parse`): skipped as
/// "other", its text and finish never reached the record, and a stream
/// whose only content it was ended at `[DONE]` as an empty answer.
#[test]
fn a_chunk_naming_a_member_twice_is_read_with_the_later_value() {
    let mut wrong = Vec::new();
    let mut check = |protocol: Provider, read: Vec<String>, expected: &[&'static str]| {
        if read != expected {
            wrong.push((protocol, read, expected.to_vec()));
        }
    };
    // OpenAI: the finish twice, then the delta twice.
    check(
        Provider::OpenAi,
        decode_all(
            Provider::OpenAi,
            &[
                (
                    b"",
                    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":"stop","finish_reason":null}]}"#,
                ),
                (
                    b"",
                    r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"},"delta":{"content":"lo"},"finish_reason":null,"finish_reason":"stop"}]}"#,
                ),
                (b"", "[DONE]"),
            ],
        ),
        &[
            r#"content Some("Hel") None"#,
            r#"content Some("lo") Some((Complete, "stop"))"#,
            "done",
        ],
    );
    // A member twice inside the delta, and the choices twice.
    check(
        Provider::OpenAi,
        decode_all(
            Provider::OpenAi,
            &[
                (
                    b"",
                    r#"{"choices":[{"delta":{"content":"a","content":"Hi"}}]}"#,
                ),
                (
                    b"",
                    r#"{"choices":[],"choices":[{"delta":{"tool_calls":[{"index":0}],"tool_calls":[]},"finish_reason":"stop"}]}"#,
                ),
                (b"", "[DONE]"),
            ],
        ),
        &[
            r#"content Some("Hi") None"#,
            r#"finish Complete stop"#,
            "done",
        ],
    );
    // Gemini: the finish twice, the content twice.
    check(
        Provider::Gemini,
        decode_all(
            Provider::Gemini,
            &[(
                b"",
                r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":null,"finishReason":"STOP","index":0}]}"#,
            )],
        ),
        &[r#"content Some("Hi") Some((Complete, "STOP"))"#],
    );
    // Anthropic: the delta twice; the stop reason twice.
    check(
        Provider::Anthropic,
        decode_all(
            Provider::Anthropic,
            &[
                (
                    b"content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"delta":{"type":"text_delta","text":"Hi"}}"#,
                ),
                (
                    b"message_delta",
                    r#"{"type":"message_delta","delta":{"stop_reason":null,"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
                ),
            ],
        ),
        &[r#"content Some("Hi") None"#, "finish Complete end_turn"],
    );
    // The Responses API: the delta twice.
    check(
        Provider::OpenAiResponses,
        decode_all(
            Provider::OpenAiResponses,
            &[(
                b"response.output_text.delta",
                r#"{"type":"response.output_text.delta","delta":"x","delta":"Hi","item_id":"m","output_index":0,"content_index":0}"#,
            )],
        ),
        &[r#"content Some("Hi") None"#],
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Well-formed JSON a chunk's reading still fails (a member of another
/// type) is never skipped as "other" when it carries choices: part of the
/// answer may be in it.
#[test]
fn a_chunk_its_reading_fails_is_undecodable_not_skipped() {
    for (protocol, data) in [
        (
            Provider::OpenAi,
            r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":1}]}"#,
        ),
        (Provider::OpenAi, r#"{"choices":[{"delta":{"content":7}}]}"#),
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":1}]}"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
        ),
    ] {
        assert!(
            decode_one(protocol, b"", data.as_bytes()).starts_with("undecodable: "),
            "{protocol}: {data}: {}",
            decode_one(protocol, b"", data.as_bytes())
        );
    }
}
