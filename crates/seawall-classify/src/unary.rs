//! Checks of 2xx unary JSON answers: 200-with-nothing-in-it, refusals and
//! filters, and the finish reason.
//!
//! The rules are each provider's own, in seawall-core
//! ([`seawall_core::provider::check_answer`]: one module per provider, the
//! same "what counts as content" table the stream guard asks). Here they
//! meet the request: a body that is not the provider's generation shape
//! (an embeddings or models response) is delivered unchecked, unless the
//! request called a generation endpoint; a body with no bytes (or only
//! blank lines) is `empty_response`; a body that opens a JSON object
//! and then breaks off or turns to garbage is `protocol_violation`
//! (transient): it is no answer, and nothing of it has reached the caller,
//! so it may be retried. A UTF-8 byte order mark before the JSON is read
//! past (RFC 8259 lets a parser ignore one; Python's HTTP clients do) and
//! the body is delivered as sent, mark included.

use seawall_core::provider::{AnswerCheck, Provider, check_answer};
use seawall_core::{Code, Failure};
use seawall_internal::json::without_bom;

use crate::classifier::Checked;

/// Checks a whole 2xx body in `provider`'s generation shape. `strict` (the
/// request called a generation endpoint, so the body must be an answer):
/// valid JSON of another shape is `protocol_violation` too, instead of
/// another endpoint's answer delivered unchecked. `background` (the body
/// asked for a background response, when known): a generation answered
/// with a response still `queued`/`in_progress` is a handle only where
/// the request asked for one; anywhere else it is no answer
/// (`empty_response`).
pub(crate) fn check(
    provider: Provider,
    body: &[u8],
    strict: bool,
    background: Option<bool>,
) -> Checked {
    if provider == Provider::Http {
        return Checked::Deliver(None);
    }
    let body = without_bom(body);
    // No bytes, or only blank lines: a 200 with nothing in it, as the
    // stream guard calls a stream that ends before any content. The JSON
    // parser would call it a syntax error (`protocol_violation`), and the
    // plainest empty answer would be counted as a garbled one.
    if body.iter().all(u8::is_ascii_whitespace) {
        return Checked::Fail(
            Failure::new(Code::EmptyResponse).with_message("the 2xx answer has no body"),
        );
    }
    match check_answer(provider, body) {
        AnswerCheck::Answer { finish, usage } => Checked::Answer { finish, usage },
        AnswerCheck::Fail(failure) => Checked::Fail(failure),
        AnswerCheck::Bare(failure) if strict => Checked::Fail(failure),
        AnswerCheck::Bare(_) => Checked::Deliver(None),
        AnswerCheck::OtherShape if strict => {
            Checked::Fail(Failure::new(Code::ProtocolViolation).with_message(&format!(
                "the 2xx answer of a generation endpoint is JSON but not a {} answer",
                provider.as_str()
            )))
        }
        AnswerCheck::Pending if strict && background == Some(false) => {
            Checked::Fail(Failure::new(Code::EmptyResponse).with_message(
                "the answer is a response still in progress, and the request did not ask for \
                 background mode",
            ))
        }
        AnswerCheck::OtherShape | AnswerCheck::Pending => Checked::Deliver(None),
        // A check added later that this layer does not know: deliver, as
        // an unknown shape would be.
        _ => Checked::Deliver(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seawall_core::{Class, Finish, FinishKind, Usage};

    // The checks as a body on an unknown path meets them: another shape is
    // delivered unchecked.
    fn check_openai(body: &[u8]) -> Checked {
        check(Provider::OpenAi, body, false, None)
    }
    fn check_anthropic(body: &[u8]) -> Checked {
        check(Provider::Anthropic, body, false, None)
    }
    fn check_gemini(body: &[u8]) -> Checked {
        check(Provider::Gemini, body, false, None)
    }
    fn check_responses(body: &[u8]) -> Checked {
        check(Provider::OpenAiResponses, body, true, None)
    }

    fn usage(checked: Checked) -> Option<Usage> {
        match checked.delivered() {
            Ok((_, usage)) => usage,
            Err(failure) => panic!("not delivered: {failure}"),
        }
    }

    #[test]
    fn answers_say_their_usage_in_each_providers_spelling() {
        let openai = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":21,"prompt_tokens_details":{"cached_tokens":0}}}"#;
        assert_eq!(usage(check_openai(openai)), Some(Usage::new(9, 12)));
        let anthropic = br#"{"type":"message","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":3}}"#;
        assert_eq!(usage(check_anthropic(anthropic)), Some(Usage::new(10, 3)));
        let gemini = br#"{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}"#;
        assert_eq!(usage(check_gemini(gemini)), Some(Usage::new(3, 2)));
        let responses = br#"{"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{"input_tokens":4,"output_tokens":1,"total_tokens":5}}"#;
        assert_eq!(usage(check_responses(responses)), Some(Usage::new(4, 1)));
        // Odd counts never cost the answer: both spellings, a string, a
        // negative number, no usage at all.
        let odd = br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"9","input_tokens":7,"completion_tokens":-1}}"#;
        assert_eq!(usage(check_openai(odd)), Some(Usage::new(7, 0)));
        let none = br#"{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}]}"#;
        assert_eq!(usage(check_openai(none)), None);
    }

    #[test]
    fn on_a_generation_endpoint_another_shape_is_no_answer() {
        for (provider, body) in [
            (Provider::OpenAi, &br#"{"object":"list","data":[]}"#[..]),
            (Provider::OpenAi, br#"{}"#),
            (Provider::Anthropic, br#"{"id":"x","type":"other"}"#),
            (Provider::Gemini, br#"{"foo":1}"#),
            (Provider::OpenAiResponses, br#"{"object":"list"}"#),
            (Provider::OpenAi, br#"{"choices":"nope"}"#),
        ] {
            assert_eq!(
                code(check(provider, body, true, None)),
                Some(Code::ProtocolViolation),
                "{provider:?} {}",
                String::from_utf8_lossy(body)
            );
            assert_eq!(
                code(check(provider, body, false, None)),
                None,
                "{provider:?}"
            );
        }
    }

    #[test]
    fn responses_answers() {
        let text = br#"{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"w1 w2","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":2,"total_tokens":5}}"#;
        let finish = delivered(check_responses(text)).unwrap();
        assert_eq!(
            (finish.kind, &*finish.reason),
            (FinishKind::Complete, "completed")
        );

        let call = br#"{"object":"response","status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}","call_id":"c"}]}"#;
        assert!(delivered(check_responses(call)).is_some());

        let cut = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"w1"}]}]}"#;
        let finish = delivered(check_responses(cut)).unwrap();
        assert_eq!(finish.kind, FinishKind::Truncated);

        let cut_empty = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning"}]}"#;
        assert_eq!(
            delivered(check_responses(cut_empty)).unwrap().kind,
            FinishKind::Truncated
        );

        let filtered = br#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}"#;
        assert_eq!(code(check_responses(filtered)), Some(Code::ContentFiltered));

        let empty = br#"{"object":"response","status":"completed","output":[]}"#;
        assert_eq!(code(check_responses(empty)), Some(Code::EmptyResponse));

        let only_reasoning = br#"{"object":"response","status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"hm"}]}]}"#;
        assert_eq!(
            code(check_responses(only_reasoning)),
            Some(Code::EmptyResponse)
        );

        let refusal = br#"{"object":"response","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}"#;
        let Checked::Fail(failure) = check_responses(refusal) else {
            panic!("a refusal is not delivered")
        };
        assert_eq!(
            (failure.code(), failure.class()),
            (Code::Refused, Class::Policy)
        );

        let failed = br#"{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#;
        let Checked::Fail(failure) = check_responses(failed) else {
            panic!("a failed response is not delivered")
        };
        assert_eq!(
            (failure.code(), failure.class()),
            (Code::ProviderUnavailable, Class::Transient)
        );
        let rate = br#"{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}"#;
        assert_eq!(code(check_responses(rate)), Some(Code::RateLimited));

        // Background mode: a handle to poll, not an answer.
        let queued = br#"{"id":"resp_1","object":"response","status":"queued","output":[]}"#;
        assert!(matches!(check_responses(queued), Checked::Deliver(None)));
        let in_background = check(Provider::OpenAiResponses, queued, true, Some(true));
        assert!(matches!(in_background, Checked::Deliver(None)));
        // A request that did not ask for background mode gets the answer
        // or nothing: a response still in progress is no answer.
        let running = br#"{"id":"resp_1","object":"response","status":"in_progress","output":[]}"#;
        for body in [&queued[..], &running[..]] {
            let plain = check(Provider::OpenAiResponses, body, true, Some(false));
            assert_eq!(code(plain), Some(Code::EmptyResponse));
        }

        let cut_json = br#"{"object":"response","status":"completed","output":[{"type":"mess"#;
        assert_eq!(
            code(check_responses(cut_json)),
            Some(Code::ProtocolViolation)
        );
    }

    fn code(checked: Checked) -> Option<Code> {
        match checked.delivered() {
            Err(failure) => Some(failure.code()),
            Ok(_) => None,
        }
    }

    fn delivered(checked: Checked) -> Option<Finish> {
        match checked.delivered() {
            Ok((finish, _)) => finish,
            Err(failure) => panic!("not delivered: {failure}"),
        }
    }

    #[test]
    fn openai_shapes() {
        let ok = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\"\n","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;
        let finish = delivered(check_openai(ok)).unwrap();
        assert_eq!(
            (finish.kind, &*finish.reason),
            (FinishKind::Complete, "stop")
        );

        let tools = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
        assert!(delivered(check_openai(tools)).is_some());

        let empty = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}"#;
        assert_eq!(code(check_openai(empty)), Some(Code::EmptyResponse));
        assert_eq!(
            code(check_openai(br#"{"choices":[]}"#)),
            Some(Code::EmptyResponse)
        );

        let truncated_empty = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":"length"}]}"#;
        let finish = delivered(check_openai(truncated_empty)).unwrap();
        assert_eq!(finish.kind, FinishKind::Truncated);

        let embeddings =
            br#"{"object":"list","data":[{"object":"embedding","embedding":[0.1],"index":0}]}"#;
        assert!(delivered(check_openai(embeddings)).is_none());
        // Only bodies that open a JSON object reach the check (the layer
        // delivers anything else unchecked); one that then breaks off is
        // not an answer, and nothing of it has reached the caller.
        for cut in [
            &b"{\"id\":\"c\",\"choices\":[{\"index\":0,"[..],
            b"{\"id\": nope}",
        ] {
            match check_openai(cut) {
                Checked::Fail(failure) => assert_eq!(failure.code(), Code::ProtocolViolation),
                _ => panic!("a cut body was delivered"),
            }
        }
    }

    #[test]
    fn gemini_parts() {
        let thought_only = br#"{"candidates":[{"content":{"parts":[{"text":"thinking...","thought":true}],"role":"model"},"finishReason":"STOP"}]}"#;
        assert_eq!(code(check_gemini(thought_only)), Some(Code::EmptyResponse));
        let call = br#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}],"role":"model"},"finishReason":"STOP"}]}"#;
        assert!(delivered(check_gemini(call)).is_some());
        let malformed = br#"{"candidates":[{"content":{"parts":[]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#;
        let Checked::Fail(failure) = check_gemini(malformed) else {
            panic!("malformed call delivered");
        };
        assert_eq!(
            (failure.class(), failure.code()),
            (Class::ModelFixable, Code::BadArguments)
        );
        assert!(delivered(check_gemini(br#"{"totalTokens":31}"#)).is_none());
    }

    #[test]
    fn anthropic_thinking_alone_is_empty() {
        let body = br#"{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"x"}],"stop_reason":"end_turn"}"#;
        assert_eq!(code(check_anthropic(body)), Some(Code::EmptyResponse));
        let count = br#"{"input_tokens":12}"#;
        assert!(delivered(check_anthropic(count)).is_none());
    }
}
