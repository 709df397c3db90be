//! Whether a stream that failed before content was billed: a 200 whose
//! first event is the provider's error refused the request before
//! generating, as a 4xx or 5xx head would have; an error after the
//! provider began (`message_start`, a role chunk, `response.created`)
//! stays billed.

mod common;

use common::*;
use std::time::Duration;

use seawall_core::{Attempt, AttemptSpans, Class, Code, RouteId, Usage};
use seawall_stream::StreamGuardLayer;
use seawall_test::trace::Recorder;
use tower::{Layer, ServiceExt};

const ANTHROPIC_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n";
const ANTHROPIC_OVERLOADED: &str = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
const ANTHROPIC_PING: &str = "event: ping\ndata: {\"type\":\"ping\"}\n\n";
const OPENAI_ERROR: &str = "data: {\"error\":{\"message\":\"The server is overloaded\",\"type\":\"server_error\",\"code\":503}}\n\n";
const VLLM_ERROR: &str = "data: {\"object\":\"error\",\"message\":\"engine is overloaded\",\"type\":\"ServiceUnavailableError\",\"code\":503}\n\n";
const RESPONSES_CREATED: &str = "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n";
const RESPONSES_ERROR: &str = "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error\",\"param\":null,\"sequence_number\":1}\n\n";

/// Each stream fails before content; `billed` is whether the provider
/// began generating before its error.
const CASES: &[(&str, &str, &[&str], bool)] = &[
    (
        "anthropic error first",
        MESSAGES,
        &[ANTHROPIC_OVERLOADED],
        false,
    ),
    // A ping is no sign of a generation.
    (
        "anthropic error after a ping",
        MESSAGES,
        &[ANTHROPIC_PING, ANTHROPIC_OVERLOADED],
        false,
    ),
    // Anthropic bills the input once the message started.
    (
        "anthropic error after message_start",
        MESSAGES,
        &[ANTHROPIC_START, ANTHROPIC_OVERLOADED],
        true,
    ),
    ("openai error first", CHAT, &[OPENAI_ERROR], false),
    ("vllm error object first", CHAT, &[VLLM_ERROR], false),
    // A chunk that carries nothing is no sign either.
    (
        "openai error after an empty chunk",
        CHAT,
        &[
            "data: {}\n\n",
            "data: {\"type\":\"ping\"}\n\n",
            OPENAI_ERROR,
        ],
        false,
    ),
    (
        "openai error after the role chunk",
        CHAT,
        &[OPENAI_ROLE, OPENAI_ERROR],
        true,
    ),
    (
        "responses error first",
        RESPONSES,
        &[RESPONSES_ERROR],
        false,
    ),
    (
        "responses error after response.created",
        RESPONSES,
        &[RESPONSES_CREATED, RESPONSES_ERROR],
        true,
    ),
];

/// A provider's error event before any sign of a generation fails the
/// attempt unbilled, whatever the HTTP 200 says; after one, billed. Read
/// as billed, one retry that succeeds lists two billed attempts where the
/// provider billed one.
#[tokio::test]
async fn an_error_before_the_generation_began_is_not_billed() {
    for &(name, path, events, billed) in CASES {
        let failure = failed(run(path, &events.concat()).await);
        assert_eq!(failure.status(), Some(200), "{name}");
        assert_eq!(failure.class(), Class::Transient, "{name}: {failure}");
        assert_eq!(failure.billed(), billed, "{name}: {failure}");
    }
}

/// A billed stream that broke before its first content event keeps what
/// it had counted as a part of its usage, never as the whole: Anthropic's
/// `message_start` bills the input (its cache reads with it) and a reset
/// before the first delta leaves the output unsaid; Gemini's thinking
/// chunks count as they go. Dropped, the receipt counted none of it.
#[tokio::test]
async fn a_billed_stream_cut_before_content_keeps_the_part_it_counted() {
    const ANTHROPIC_START_CACHED: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-x\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5000,\"cache_read_input_tokens\":20000,\"output_tokens\":1}}}\n\n";
    const GEMINI_THINKING: &str = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"**Weighing the clues**\",\"thought\":true}],\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"totalTokenCount\":222,\"thoughtsTokenCount\":210}}\n\n";
    let cases = [
        ("anthropic", MESSAGES, ANTHROPIC_START_CACHED, 25_000, 1),
        ("gemini", GEMINI, GEMINI_THINKING, 12, 210),
    ];
    for (name, path, opening, input, output) in cases {
        let body = scripted(vec![send(opening), Step::Reset]);
        let failure = failure_of(call(StreamGuardLayer::interactive(), path, body).await);
        assert_eq!(failure.code(), Code::Transport, "{name}: {failure}");
        assert!(failure.billed(), "{name}: {failure}");
        assert_eq!(failure.usage(), None, "{name}: no whole count");
        assert_eq!(
            failure.partial_usage(),
            Some(Usage::new(input, output)),
            "{name}"
        );
        let attempt = Attempt::failed(RouteId::new("a"), Duration::ZERO, &failure);
        assert_eq!(attempt.usage(), Some(Usage::new(input, output)), "{name}");
        assert!(!attempt.usage_is_whole(), "{name}");
    }
}

/// The guard's report of a billed stream that broke before content
/// counts the part it had reported, as the receipt does: the attempt's
/// span shows the input Anthropic billed at `message_start`.
#[tokio::test]
async fn the_attempt_span_of_a_billed_stream_cut_before_content_shows_its_part() {
    let recorder = Recorder::new();
    let _guard = recorder.install();
    // A span's name is part of its callsite: a literal each.
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                $name,
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
                error.type = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            )
        };
    }
    let mut body = Some(scripted(vec![send(ANTHROPIC_START), Step::Reset]));
    let provider = tower::service_fn(move |_req: http::Request<()>| {
        let body = body.take().expect("called once");
        async move { Ok::<_, std::convert::Infallible>(sse(body)) }
    });
    let mut request = common::request(MESSAGES);
    request
        .extensions_mut()
        .insert(AttemptSpans::new(span!("attempt"), span!("operation")));
    let result = StreamGuardLayer::interactive()
        .layer(provider)
        .oneshot(request)
        .await;
    assert_eq!(failure_of(result).code(), Code::Transport);
    let attempt = recorder.span("attempt").fields;
    assert_eq!(
        attempt.get("gen_ai.usage.input_tokens"),
        Some("10"),
        "{attempt:?}"
    );
    assert_eq!(attempt.get("error.type"), Some("transport"));
}
