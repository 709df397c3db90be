//! Errors of servers that speak OpenAI's wire but are not OpenAI, through
//! the classify layer: what each server says, read as it means it.

mod common;

use std::time::Duration;

use common::{Expect, expect, found, response, through};
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, Code};

use Action::{Retry, Surface};
use Class::{Permanent, Transient};

const JSON: (&str, &str) = ("content-type", "application/json");

/// The failure `body` answered with `status` and `headers` comes to.
async fn check(name: &str, status: u16, headers: &[(&str, &str)], body: &str, want: Expect) {
    let mut all = vec![JSON];
    all.extend_from_slice(headers);
    let error = through(&ClassifyLayer::openai(), response(status, &all, body))
        .await
        .map(|_| ())
        .expect_err(name);
    let failure = found(&error);
    want.check(name, failure);
    assert_eq!(failure.status(), Some(status), "{name}");
}

/// OpenRouter's 402 when the requests running or just settled fill the
/// in-flight spending budget ("Limits", the in-flight spending budget).
const IN_FLIGHT: &str = r#"{"error":{"code":402,"message":"This request would exceed your available credits given your current in-flight requests. Retry after in-flight requests settle, or add credits.","metadata":{"reason":"in_flight_budget_exhausted","limit_source":"openrouter_in_flight_budget","remedy_hint":"Retry after your in-flight requests settle (see the Retry-After header). Adding credits at https://openrouter.ai/settings/credits raises your in-flight budget, up to a capped ceiling."}}}"#;

/// OpenRouter's in-flight budget is a wait the quota wall judges by its
/// `Retry-After`: a short one retried after it, a long one a wall; any
/// other 402 (the balance, a request too costly for the whole budget)
/// stays a wall.
#[tokio::test]
async fn openrouter_in_flight_budget_is_a_wait() {
    check(
        "402 in-flight budget, Retry-After: 2",
        402,
        &[("retry-after", "2")],
        IN_FLIGHT,
        expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(2)),
    )
    .await;
    check(
        "402 in-flight budget, Retry-After: 3600",
        402,
        &[("retry-after", "3600")],
        IN_FLIGHT,
        expect(Permanent, Code::QuotaExhausted, Surface).after(Duration::from_secs(3600)),
    )
    .await;
    let too_costly = r#"{"error":{"code":402,"message":"This request requires more credits, or fewer max_tokens.","metadata":{"reason":"weight_exceeds_budget","limit_source":"openrouter_credits"}}}"#;
    check(
        "402 weight_exceeds_budget",
        402,
        &[],
        too_costly,
        expect(Permanent, Code::QuotaExhausted, Surface),
    )
    .await;
    let plain = r#"{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits"}}"#;
    check(
        "402 without a limit source",
        402,
        &[],
        plain,
        expect(Permanent, Code::QuotaExhausted, Surface),
    )
    .await;
    // The limit source is the budget's only where it says so.
    let elsewhere = IN_FLIGHT.replace("openrouter_in_flight_budget", "openrouter_key_limit");
    check(
        "402 key limit",
        402,
        &[],
        &elsewhere,
        expect(Permanent, Code::QuotaExhausted, Surface),
    )
    .await;
}

/// xAI's and Cerebras's words for a prompt past the context window read
/// as OpenAI's do: `context_too_long`, which a fallback for that code
/// acts on, not `bad_request`.
#[tokio::test]
async fn compatible_servers_context_overflow_wordings() {
    let xai = r#"{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 140000 tokens."}"#;
    let cerebras = r#"{"error":{"message":"Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000","type":"invalid_request_error","param":"messages","code":null}}"#;
    for (name, body) in [("xAI", xai), ("Cerebras", cerebras)] {
        check(
            name,
            400,
            &[],
            body,
            expect(Permanent, Code::ContextTooLong, Surface),
        )
        .await;
    }
    // A 400 that names no overflow is still the request's.
    let invalid = r#"{"code":"Client specified an invalid argument","error":"temperature must be at most 2"}"#;
    check(
        "xAI invalid argument",
        400,
        &[],
        invalid,
        expect(Permanent, Code::BadRequest, Surface),
    )
    .await;
}
