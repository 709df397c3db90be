//! Whether a stream that failed before content was billed: a 200 whose
//! first event is the provider's error refused the request before
//! generating, as a 4xx or 5xx head would have; an error after the
//! provider began (`message_start`, a role chunk, `response.created`)
//! stays billed.

mod common;

use common::*;
use seawall_core::Class;

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
