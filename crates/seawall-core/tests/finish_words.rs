//! Finish reasons as the servers that speak OpenAI's wire send them, and
//! as proxies pass other providers' reasons through: each word means what
//! its server documents, in any ASCII case.
//!
//! - Zhipu (docs.bigmodel.cn): "'sensitive' means the content was stopped
//!   by the safety review", "'network_error' means a model inference
//!   error".
//! - IBM watsonx chat (`TextChatResultChoice.FinishReason`): "time_limit -
//!   Time limit reached", "cancelled - Request canceled by the client".
//! - Gemini's and Anthropic's reasons (`MAX_TOKENS`, `SAFETY`,
//!   `PROHIBITED_CONTENT`, `max_tokens`, `refusal`,
//!   `model_context_window_exceeded`, …), read by their own wire's table;
//!   Bedrock Converse's `content_filtered` and `malformed_*`: passed
//!   through by proxies that translate those answers into this shape.
//! - A Bedrock guardrail that intervened (`guardrail_intervened`, or
//!   InvokeModel's `"amazon-bedrock-guardrailAction": "INTERVENED"`) may
//!   only have masked a detail: the answer is the model's, delivered.

use seawall_core::FinishKind;
use seawall_core::provider::{AnswerCheck, Provider, check_answer};

/// What a whole answer comes to: `answer <kind> <reason>` or
/// `fail <code> <provider code>`.
fn verdict(provider: Provider, body: &str) -> String {
    match check_answer(provider, body.as_bytes()) {
        AnswerCheck::Answer { finish, .. } => match finish {
            Some(finish) => format!("answer {} {}", finish.kind, finish.reason),
            None => "answer without finish".into(),
        },
        AnswerCheck::Fail(failure) => format!(
            "fail {} {}",
            failure.code().as_str(),
            failure.provider_code().unwrap_or("-")
        ),
        other => format!("{other:?}"),
    }
}

fn chat(content: &str, finish: &str) -> String {
    format!(
        r#"{{"id":"c","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":"{content}"}},"finish_reason":"{finish}"}}],"usage":{{"prompt_tokens":9,"completion_tokens":3}}}}"#
    )
}

/// The words of other servers, in the case each sends and in others.
const WORDS: &[(&str, FinishKind)] = &[
    ("sensitive", FinishKind::Filtered),
    ("network_error", FinishKind::Aborted),
    ("time_limit", FinishKind::Truncated),
    ("cancelled", FinishKind::Aborted),
    ("max_tokens", FinishKind::Truncated),
    ("MAX_TOKENS", FinishKind::Truncated),
    ("SAFETY", FinishKind::Filtered),
    ("RECITATION", FinishKind::Filtered),
    ("refusal", FinishKind::Refused),
    ("content_filtered", FinishKind::Filtered),
    ("malformed_tool_use", FinishKind::Malformed),
    ("guardrail_intervened", FinishKind::Other),
    ("PROHIBITED_CONTENT", FinishKind::Filtered),
    ("model_context_window_exceeded", FinishKind::Truncated),
    ("pause_turn", FinishKind::Truncated),
    ("MALFORMED_FUNCTION_CALL", FinishKind::Malformed),
    ("Length", FinishKind::Truncated),
    ("CONTENT_FILTER", FinishKind::Filtered),
    ("STOP", FinishKind::Complete),
];

#[test]
fn compatible_servers_finish_words_mean_what_their_servers_say() {
    for (word, kind) in WORDS {
        assert_eq!(FinishKind::openai(word), *kind, "{word}");
        assert_eq!(
            FinishKind::for_provider(Provider::Http, word),
            *kind,
            "{word}"
        );
    }
    // Every word another wire's table knows means here what it means
    // there, in any case: a proxy passes it through as it was.
    for word in [
        "STOP",
        "MAX_TOKENS",
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "MODEL_ARMOR",
        "MALFORMED_FUNCTION_CALL",
        "UNEXPECTED_TOOL_CALL",
        "TOO_MANY_TOOL_CALLS",
        "MISSING_THOUGHT_SIGNATURE",
    ] {
        let gemini = FinishKind::for_provider(Provider::Gemini, word);
        assert_eq!(FinishKind::openai(word), gemini, "{word}");
        assert_eq!(
            FinishKind::openai(&word.to_ascii_lowercase()),
            gemini,
            "{word}"
        );
    }
    for word in [
        "end_turn",
        "max_tokens",
        "refusal",
        "model_context_window_exceeded",
        "pause_turn",
    ] {
        let anthropic = FinishKind::for_provider(Provider::Anthropic, word);
        assert_eq!(FinishKind::openai(word), anthropic, "{word}");
        assert_eq!(
            FinishKind::openai(&word.to_ascii_uppercase()),
            anthropic,
            "{word}"
        );
    }
    // Gemini's catch-alls are what relays write for a reason they could
    // not map: unknown here, not an abort retried and billed again.
    for word in ["other", "Other", "OTHER", "finish_reason_unspecified"] {
        assert_eq!(FinishKind::openai(word), FinishKind::Other, "{word}");
    }
    // A word seawall does not know is still read as complete, and kept.
    assert_eq!(FinishKind::openai("eos_token_new"), FinishKind::Other);
    assert_eq!(
        verdict(Provider::OpenAi, &chat("Hello", "eos_token_new")),
        "answer other eos_token_new"
    );
}

/// With content, a filter, a refusal or an abort is no answer, a limit a
/// truncated one; without content, a filter is still a filter (not an
/// empty answer to ask again until it passes) and a limit still delivered
/// (sending it again ends the same way, billed twice).
#[test]
fn compatible_servers_finish_words_decide_the_unary_verdict() {
    for (word, kind) in WORDS {
        let full = verdict(Provider::OpenAi, &chat("Hello", word));
        let empty = verdict(Provider::OpenAi, &chat("", word));
        let (expected_full, expected_empty) = match kind {
            FinishKind::Complete => (
                format!("answer complete {word}"),
                format!("fail empty_response {word}"),
            ),
            FinishKind::Truncated => (
                format!("answer truncated {word}"),
                format!("answer truncated {word}"),
            ),
            FinishKind::Filtered => (
                format!("fail content_filtered {word}"),
                format!("fail content_filtered {word}"),
            ),
            FinishKind::Refused => (
                format!("fail refused {word}"),
                format!("fail refused {word}"),
            ),
            FinishKind::Aborted => (
                format!("fail provider_unavailable {word}"),
                format!("fail provider_unavailable {word}"),
            ),
            FinishKind::Malformed => (
                format!("fail bad_arguments {word}"),
                format!("fail bad_arguments {word}"),
            ),
            // A word no table knows: read as complete, reported as sent.
            FinishKind::Other => (
                format!("answer other {word}"),
                format!("fail empty_response {word}"),
            ),
            other => panic!("no case for {other}"),
        };
        assert_eq!(full, expected_full, "{word} with content");
        assert_eq!(empty, expected_empty, "{word} without content");
    }
}

/// `""` and `"null"` are no finish in a whole answer, as in a stream: an
/// answer without its finish was cut short, and one without content is
/// empty — never a complete answer under a reason nobody gave.
#[test]
fn an_empty_or_null_finish_reason_is_no_finish_in_a_whole_answer() {
    for reason in ["", "null"] {
        assert_eq!(
            verdict(Provider::OpenAi, &chat("Hello", reason)),
            "fail truncated -",
            "{reason:?}"
        );
        assert_eq!(
            verdict(Provider::OpenAi, &chat("", reason)),
            "fail empty_response -",
            "{reason:?}"
        );
        let gemini = format!(
            r#"{{"candidates":[{{"content":{{"parts":[{{"text":"Hi"}}],"role":"model"}},"finishReason":"{reason}","index":0}}]}}"#
        );
        assert_eq!(
            verdict(Provider::Gemini, &gemini),
            "fail truncated -",
            "{reason:?}"
        );
        let anthropic = format!(
            r#"{{"id":"msg_1","type":"message","role":"assistant","content":[{{"type":"text","text":"Hi"}}],"stop_reason":"{reason}","usage":{{"input_tokens":3,"output_tokens":1}}}}"#
        );
        assert_eq!(
            verdict(Provider::Anthropic, &anthropic),
            "fail truncated -",
            "{reason:?}"
        );
    }
}

/// A Bedrock guardrail that intervened may only have masked a detail
/// (PII anonymised: Bedrock says `INTERVENED` for a mask as for a block):
/// the answer is the model's, delivered as `NONE` or no member is.
#[test]
fn a_bedrock_guardrail_intervention_keeps_the_answer() {
    let body = |action: &str| {
        format!(
            r#"{{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude-sonnet-4","content":[{{"type":"text","text":"Write to {{EMAIL}} for the refund."}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":12,"output_tokens":9}}{action}}}"#
        )
    };
    for member in [
        "",
        r#","amazon-bedrock-guardrailAction":"NONE""#,
        r#","amazon-bedrock-guardrailAction":"INTERVENED""#,
    ] {
        assert_eq!(
            verdict(Provider::Anthropic, &body(member)),
            "answer complete end_turn",
            "{member}"
        );
    }
    assert_eq!(
        verdict(
            Provider::OpenAi,
            &chat("Write to {EMAIL}", "guardrail_intervened")
        ),
        "answer other guardrail_intervened"
    );
}
