//! xAI's in-stream errors, named by their gRPC status, read through the
//! guard.

mod common;

use common::*;
use seawall_core::{Action, Class, Code};

/// xAI's in-stream error names its status in gRPC's words
/// (vercel/ai#10533): UNAVAILABLE before content is retried, as a
/// `grpc-status: 14` is; a status that is the request's stays permanent.
#[tokio::test]
async fn xai_in_stream_errors_are_read_by_their_grpc_status() {
    for (code, want) in [
        (
            "The service is currently unavailable",
            (Code::ProviderUnavailable, Class::Transient, Action::Retry),
        ),
        (
            "unavailable",
            (Code::ProviderUnavailable, Class::Transient, Action::Retry),
        ),
        (
            "deadline-exceeded",
            (Code::Timeout, Class::Transient, Action::Retry),
        ),
        (
            "RESOURCE_EXHAUSTED",
            (Code::RateLimited, Class::Transient, Action::Retry),
        ),
        (
            "invalid-argument",
            (Code::BadRequest, Class::Permanent, Action::Surface),
        ),
        (
            "Client specified an invalid argument",
            (Code::BadRequest, Class::Permanent, Action::Surface),
        ),
    ] {
        let stream = format!(
            "{OPENAI_ROLE}data: {{\"code\":\"{code}\",\"error\":\"Timed out waiting for first token\"}}\n\n{DONE}"
        );
        let failure = failed(run(CHAT, &stream).await);
        assert_eq!(
            (failure.code(), failure.class(), failure.action()),
            want,
            "{code}"
        );
        assert_eq!(failure.provider_code(), Some(code), "{code}");
        assert_eq!(
            failure.message(),
            Some("Timed out waiting for first token"),
            "{code}"
        );
    }
    // A word that only looks like one is no status.
    let stream =
        format!("{OPENAI_ROLE}data: {{\"code\":\"unavailable-ish\",\"error\":\"x\"}}\n\n{DONE}");
    let failure = failed(run(CHAT, &stream).await);
    assert_eq!(failure.code(), Code::Unknown);
}

/// A code that happens to be a gRPC name beside a declared type or
/// OpenAI's server-error text is read by those: a `server_error` coded
/// `internal` (as OpenAI-compatible proxies write it) is a passing failure,
/// retried, not an unknown one surfaced.
#[tokio::test]
async fn a_grpc_named_code_beside_a_type_is_read_by_the_type() {
    for body in [
        r#"{"error":{"message":"internal error occurred","type":"server_error","code":"internal"}}"#,
        r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":null,"code":"unknown"}}"#,
        r#"{"error":{"message":"Overloaded","type":"overloaded_error","code":"cancelled"}}"#,
    ] {
        let stream = format!("{OPENAI_ROLE}data: {body}\n\n{DONE}");
        let failure = failed(run(CHAT, &stream).await);
        assert_eq!(
            (failure.class(), failure.action()),
            (Class::Transient, Action::Retry),
            "{body}: {failure:?}"
        );
    }
}
