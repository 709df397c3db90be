//! Reading a hostile body costs about what the body weighs: an error, an
//! answer or a terminal event made of a million empty objects is read one
//! element at a time, not copied into values first (serde's untagged enums
//! and `serde_json::Value` made some 300 MiB of an 8 MiB event).

use std::alloc::System;
use std::time::SystemTime;

use seawall_core::provider::openai_responses::answer_in_event;
use seawall_core::provider::{AnswerCheck, ErrorContext, Provider, check_answer, classify_error};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The bytes `read` allocates in all (more than it holds at any time):
/// what reading costs.
fn allocated_by<T>(read: impl FnOnce() -> T) -> (T, usize) {
    let region = Region::new(GLOBAL);
    let out = read();
    let stats = region.change();
    let grown = usize::try_from(stats.bytes_reallocated).unwrap_or(0);
    (out, stats.bytes_allocated + grown)
}

/// `{"…":[{},{},…]…}`: `count` empty objects between `open` and `close`.
fn million(open: &str, close: &str) -> Vec<u8> {
    const COUNT: usize = 1 << 20;
    let mut body = Vec::with_capacity(open.len() + COUNT * 3 + close.len());
    body.extend_from_slice(open.as_bytes());
    for i in 0..COUNT {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(b"{}");
    }
    body.extend_from_slice(close.as_bytes());
    body
}

// One test: the counts are the process's, and tests run in parallel.
#[test]
fn hostile_bodies_are_read_in_about_their_own_size() {
    let now = SystemTime::now();
    let errors = [
        // Gemini's details, reachable from every provider's error table.
        (
            Provider::Gemini,
            million(
                r#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","details":["#,
                "]}}",
            ),
        ),
        // A QuotaFailure's violations.
        (
            Provider::Gemini,
            million(
                r#"{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":["#,
                "]}]}}",
            ),
        ),
        // OpenAI's moderation metadata.
        (
            Provider::OpenAi,
            million(
                r#"{"error":{"type":"invalid_request_error","code":"content_filter","message":"flagged","metadata":["#,
                "]}}",
            ),
        ),
    ];
    for (provider, body) in &errors {
        let (failure, allocated) =
            allocated_by(|| classify_error(*provider, body, ErrorContext::in_stream(now)));
        assert!(
            allocated < body.len(),
            "{provider:?}: {allocated} bytes allocated to read {} ({failure:?})",
            body.len()
        );
    }
    // A unary answer whose content is a million parts.
    let answer = million(
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":["#,
        r#"]},"finish_reason":"stop"}]}"#,
    );
    let (check, allocated) = allocated_by(|| check_answer(Provider::OpenAi, &answer));
    assert!(
        matches!(check, AnswerCheck::Answer { .. }),
        "parts that are something are an answer: {check:?}"
    );
    assert!(
        allocated < answer.len(),
        "{allocated} bytes allocated to read {}",
        answer.len()
    );
    // A terminal event with a million output items.
    let event = million(
        r#"{"type":"response.completed","response":{"status":"completed","output":["#,
        "]}}",
    );
    let (read, allocated) = allocated_by(|| answer_in_event(&event));
    assert!(read.is_some(), "the event reads");
    assert!(
        allocated < event.len(),
        "{allocated} bytes allocated to read {}",
        event.len()
    );
}
