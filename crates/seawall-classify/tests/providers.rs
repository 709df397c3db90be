//! Every provider rule, through the layer, with the providers' documented
//! wire shapes as fixtures.

mod common;

use std::time::{Duration, SystemTime};

use common::{Expect, expect, found, response, through};
use seawall_classify::ClassifyLayer;
use seawall_core::{Action, Class, Code};

use Action::{Retry, Surface};
use Class::{Permanent, Transient};

const JSON: (&str, &str) = ("content-type", "application/json");

struct Case {
    name: &'static str,
    status: u16,
    headers: &'static [(&'static str, &'static str)],
    body: &'static str,
    expect: Expect,
}

async fn run(layer: ClassifyLayer, cases: &[Case]) {
    for case in cases {
        let mut headers = vec![JSON];
        headers.extend_from_slice(case.headers);
        let error = through(&layer, response(case.status, &headers, case.body))
            .await
            .map(|_| ())
            .expect_err(case.name);
        let failure = found(&error);
        case.expect.check(case.name, failure);
        assert_eq!(failure.status(), Some(case.status), "{}", case.name);
        assert_eq!(
            failure.evidence().bytes,
            case.body.len() as u64,
            "{}",
            case.name
        );
    }
}

const OPENAI_RPM: &str = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 1.574s. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
const OPENAI_SERVER: &str = r#"{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}"#;

#[tokio::test]
async fn openai() {
    let cases = [
        Case {
            name: "429 rate_limit_exceeded, header hint wins over text",
            status: 429,
            headers: &[("retry-after-ms", "1200")],
            body: OPENAI_RPM,
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_millis(1200)),
        },
        Case {
            name: "429 rate_limit_exceeded, Retry-After seconds",
            status: 429,
            headers: &[("retry-after", "3")],
            body: OPENAI_RPM,
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(3)),
        },
        Case {
            name: "429 rate_limit_exceeded, hint from the message text",
            status: 429,
            headers: &[],
            body: OPENAI_RPM,
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_millis(1574)),
        },
        Case {
            name: "429 insufficient_quota",
            status: 429,
            headers: &[],
            body: r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "429 billing_not_active",
            status: 429,
            headers: &[],
            body: r#"{"error":{"message":"Your account is not active, please check your billing details on our website.","type":"billing_not_active","param":null,"code":"billing_not_active"}}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "400 billing_hard_limit_reached",
            status: 400,
            headers: &[],
            body: r#"{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","param":null,"code":"billing_hard_limit_reached"}}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "429 request too large for the TPM limit",
            status: 429,
            headers: &[],
            body: r#"{"error":{"message":"Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 41234. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
            expect: expect(Permanent, Code::RequestTooLarge, Surface),
        },
        Case {
            name: "400 context_length_exceeded",
            status: 400,
            headers: &[],
            body: r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130017 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "400 other",
            status: 400,
            headers: &[],
            body: r#"{"error":{"message":"Invalid value for 'temperature': expected a number between 0 and 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#,
            expect: expect(Permanent, Code::BadRequest, Surface),
        },
        Case {
            name: "401 invalid_api_key",
            status: 401,
            headers: &[],
            body: r#"{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "403 unsupported region",
            status: 403,
            headers: &[],
            body: r#"{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}"#,
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "404 model_not_found",
            status: 404,
            headers: &[],
            body: r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
            expect: expect(Permanent, Code::NotFound, Surface),
        },
        Case {
            name: "408",
            status: 408,
            headers: &[],
            body: "",
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "409",
            status: 409,
            headers: &[],
            body: OPENAI_SERVER,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "500 server_error",
            status: 500,
            headers: &[],
            body: OPENAI_SERVER,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "502 html from a proxy",
            status: 502,
            headers: &[],
            body: "<html><body><h1>502 Bad Gateway</h1></body></html>",
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "503 with x-should-retry: false",
            status: 503,
            headers: &[("x-should-retry", "false")],
            body: OPENAI_SERVER,
            expect: expect(Transient, Code::ProviderUnavailable, Surface),
        },
    ];
    run(ClassifyLayer::openai(), &cases).await;
}

/// Gemini's OpenAI-compatible endpoint (`/v1beta/openai/chat/completions`,
/// classified as OpenAI) answers errors in Gemini's shape, an array at
/// times: its per-day wall, its retry delay and its key rejection read as
/// Gemini's table reads them, not as a bare status.
#[tokio::test]
async fn gemini_errors_through_the_openai_compatible_endpoint() {
    let per_day = format!("[{GEMINI_PER_DAY}]");
    let per_minute = format!("[{GEMINI_PER_MINUTE}]");
    let cases = [
        Case {
            name: "429 per-day wall, in an array",
            status: 429,
            headers: &[],
            body: per_day.leak(),
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "429 per minute, in an array: RetryInfo's delay",
            status: 429,
            headers: &[],
            body: per_minute.leak(),
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(26)),
        },
        Case {
            name: "429 per-day wall, an object",
            status: 429,
            headers: &[],
            body: GEMINI_PER_DAY,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
    ];
    run(ClassifyLayer::openai(), &cases).await;
}

#[tokio::test]
async fn openai_quota_wall_from_retry_after() {
    let before = SystemTime::now();
    let error = through(
        &ClassifyLayer::openai(),
        response(429, &[JSON, ("retry-after", "48489")], OPENAI_RPM),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    let failure = found(&error);
    expect(Permanent, Code::QuotaExhausted, Surface)
        .after(Duration::from_secs(48489))
        .check("Retry-After 48489", failure);
    let reset_at = failure.reset_at().expect("reset_at set");
    let hint = Duration::from_secs(48489);
    assert!(reset_at >= before + hint);
    assert!(reset_at <= SystemTime::now() + hint);

    // The wall is configurable: a one-day threshold keeps it a rate limit.
    let patient = ClassifyLayer::openai().quota_wall(Duration::from_secs(86_400));
    let error = through(
        &patient,
        response(429, &[JSON, ("retry-after", "48489")], OPENAI_RPM),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    expect(Transient, Code::RateLimited, Retry)
        .after(hint)
        .check("patient wall", found(&error));
}

fn anthropic_error(kind: &str, message: &str) -> &'static str {
    let body = format!(
        r#"{{"type":"error","error":{{"type":"{kind}","message":"{message}"}},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}}"#
    );
    Box::leak(body.into_boxed_str())
}

#[tokio::test]
async fn anthropic() {
    let cases = [
        Case {
            name: "400 invalid_request_error",
            status: 400,
            headers: &[],
            body: anthropic_error(
                "invalid_request_error",
                r#"messages: roles must alternate between \"user\" and \"assistant\""#,
            ),
            expect: expect(Permanent, Code::BadRequest, Surface),
        },
        Case {
            name: "400 prompt is too long",
            status: 400,
            headers: &[],
            body: anthropic_error(
                "invalid_request_error",
                "prompt is too long: 215344 tokens > 200000 maximum",
            ),
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "400 input length and max_tokens exceed context limit",
            status: 400,
            headers: &[],
            body: anthropic_error(
                "invalid_request_error",
                "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again",
            ),
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "401 authentication_error",
            status: 401,
            headers: &[],
            body: anthropic_error("authentication_error", "invalid x-api-key"),
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "402 billing_error",
            status: 402,
            headers: &[],
            body: anthropic_error(
                "billing_error",
                "Your credit balance is too low to access the Anthropic API.",
            ),
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "403 permission_error",
            status: 403,
            headers: &[],
            body: anthropic_error(
                "permission_error",
                "Your API key does not have permission to use the specified resource.",
            ),
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "404 not_found_error",
            status: 404,
            headers: &[],
            body: anthropic_error("not_found_error", "model: claude-9"),
            expect: expect(Permanent, Code::NotFound, Surface),
        },
        Case {
            name: "413 request_too_large",
            status: 413,
            headers: &[],
            body: anthropic_error(
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.",
            ),
            expect: expect(Permanent, Code::RequestTooLarge, Surface),
        },
        Case {
            name: "429 rate_limit_error with retry-after",
            status: 429,
            headers: &[("retry-after", "7")],
            body: anthropic_error(
                "rate_limit_error",
                "This request would exceed the rate limit for your organization of 50 requests per minute.",
            ),
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(7)),
        },
        Case {
            name: "429 rate_limit_error, the monthly spend cap (no retry-after)",
            status: 429,
            headers: &[],
            body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "400 invalid_request_error, a spend limit the organization set",
            status: 400,
            headers: &[],
            body: anthropic_error(
                "invalid_request_error",
                "You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC.",
            ),
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "400 invalid_request_error, no credit left",
            status: 400,
            headers: &[],
            body: anthropic_error(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "500 api_error",
            status: 500,
            headers: &[],
            body: anthropic_error("api_error", "Internal server error"),
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "504 timeout_error",
            status: 504,
            headers: &[],
            body: anthropic_error("timeout_error", "Request timed out"),
            expect: expect(Transient, Code::Timeout, Retry),
        },
        Case {
            name: "529 overloaded_error",
            status: 529,
            headers: &[],
            body: anthropic_error("overloaded_error", "Overloaded"),
            expect: expect(Transient, Code::Overloaded, Retry),
        },
    ];
    run(ClassifyLayer::anthropic(), &cases).await;
}

const GEMINI_PER_MINUTE: &str = r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.0-flash"},"quotaValue":"15"}]},{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
const GEMINI_PER_DAY: &str = r#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.0-flash"},"quotaValue":"200"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;

#[tokio::test]
async fn gemini() {
    let cases = [
        Case {
            name: "429 RESOURCE_EXHAUSTED per minute, RetryInfo hint",
            status: 429,
            headers: &[],
            body: GEMINI_PER_MINUTE,
            expect: expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(26)),
        },
        Case {
            name: "429 RESOURCE_EXHAUSTED per day",
            status: 429,
            headers: &[],
            body: GEMINI_PER_DAY,
            // RetryInfo's 26 s speaks of the per-minute window: no hint for a daily wall.
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "402 RESOURCE_EXHAUSTED, prepay credits depleted",
            status: 402,
            headers: &[],
            body: r#"{"error":{"code":402,"message":"Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing. Learn more at https://ai.google.dev/gemini-api/docs/billing#prepay.","status":"RESOURCE_EXHAUSTED"}}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "400 FAILED_PRECONDITION, billing or region",
            status: 400,
            headers: &[],
            body: r#"{"error":{"code":400,"message":"Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.","status":"FAILED_PRECONDITION"}}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "503 UNAVAILABLE",
            status: 503,
            headers: &[],
            body: r#"{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}"#,
            expect: expect(Transient, Code::Overloaded, Retry),
        },
        Case {
            name: "400 INVALID_ARGUMENT",
            status: 400,
            headers: &[],
            body: r#"{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified\n","status":"INVALID_ARGUMENT"}}"#,
            expect: expect(Permanent, Code::BadRequest, Surface),
        },
        Case {
            name: "400 INVALID_ARGUMENT, input token count exceeds",
            status: 400,
            headers: &[],
            body: r#"{"error":{"code":400,"message":"The input token count (1284921) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "400 INVALID_ARGUMENT, Vertex AI's input token count",
            status: 400,
            headers: &[],
            body: r#"{"error":{"code":400,"message":"The input token count is 1284921 but the model only supports up to 1048576","status":"INVALID_ARGUMENT"}}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "403 PERMISSION_DENIED",
            status: 403,
            headers: &[],
            body: r#"{"error":{"code":403,"message":"Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.","status":"PERMISSION_DENIED"}}"#,
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "404 NOT_FOUND",
            status: 404,
            headers: &[],
            body: r#"{"error":{"code":404,"message":"models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}"#,
            expect: expect(Permanent, Code::NotFound, Surface),
        },
        Case {
            name: "500 INTERNAL",
            status: 500,
            headers: &[],
            body: r#"{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}"#,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
    ];
    run(ClassifyLayer::gemini(), &cases).await;
}

#[tokio::test]
async fn grpc_trailers_only() {
    type Headers = &'static [(&'static str, &'static str)];
    let cases: &[(&str, Headers, Expect)] = &[
        (
            "UNAVAILABLE",
            &[("grpc-status", "14")],
            expect(Transient, Code::ProviderUnavailable, Retry),
        ),
        (
            "RESOURCE_EXHAUSTED with pushback",
            &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "300")],
            expect(Transient, Code::RateLimited, Retry).after(Duration::from_millis(300)),
        ),
        (
            "RESOURCE_EXHAUSTED, negative pushback: do not retry",
            &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "-1")],
            expect(Transient, Code::RateLimited, Surface),
        ),
        (
            "RESOURCE_EXHAUSTED past the quota wall",
            &[("grpc-status", "8"), ("grpc-retry-pushback-ms", "3600000")],
            expect(Permanent, Code::QuotaExhausted, Surface).after(Duration::from_secs(3600)),
        ),
        (
            "RESOURCE_EXHAUSTED for a message past the server's size limit",
            &[
                ("grpc-status", "8"),
                (
                    "grpc-message",
                    "grpc: received message larger than max (8388708 vs. 4194304)",
                ),
            ],
            expect(Permanent, Code::RequestTooLarge, Surface),
        ),
        (
            "UNAVAILABLE with pushback",
            &[("grpc-status", "14"), ("grpc-retry-pushback-ms", "5000")],
            expect(Transient, Code::ProviderUnavailable, Retry).after(Duration::from_secs(5)),
        ),
        (
            "UNAVAILABLE, unparseable pushback: do not retry",
            &[("grpc-status", "14"), ("grpc-retry-pushback-ms", "soon")],
            expect(Transient, Code::ProviderUnavailable, Surface),
        ),
        (
            "DEADLINE_EXCEEDED",
            &[("grpc-status", "4")],
            expect(Transient, Code::Timeout, Retry),
        ),
        (
            "INVALID_ARGUMENT",
            &[("grpc-status", "3")],
            expect(Permanent, Code::BadRequest, Surface),
        ),
        (
            "NOT_FOUND: the entity the call names, the request's",
            &[("grpc-status", "5")],
            expect(Permanent, Code::BadRequest, Surface),
        ),
        (
            "UNIMPLEMENTED: the method this server lacks, the route's",
            &[("grpc-status", "12")],
            expect(Permanent, Code::NotFound, Surface),
        ),
        (
            "PERMISSION_DENIED: this call's, not the route's",
            &[("grpc-status", "7")],
            expect(Permanent, Code::BadRequest, Surface),
        ),
        (
            "UNAUTHENTICATED",
            &[("grpc-status", "16")],
            expect(Permanent, Code::Auth, Surface),
        ),
        (
            "garbage status is UNKNOWN: fail closed",
            &[("grpc-status", "fourteen")],
            expect(Permanent, Code::Unknown, Surface),
        ),
        // Read as tonic reads them (`Code::from_bytes`): the caller gets
        // UNKNOWN, so no success is counted.
        (
            "a padded OK is UNKNOWN",
            &[("grpc-status", "00")],
            expect(Permanent, Code::Unknown, Surface),
        ),
        (
            "a signed OK is UNKNOWN",
            &[("grpc-status", "+0")],
            expect(Permanent, Code::Unknown, Surface),
        ),
        (
            "a status past 16 is UNKNOWN",
            &[("grpc-status", "17")],
            expect(Permanent, Code::Unknown, Surface),
        ),
        (
            "OK with a message that is not UTF-8 is UNKNOWN",
            &[("grpc-status", "0"), ("grpc-message", "%FF%FE")],
            expect(Permanent, Code::Unknown, Surface),
        ),
    ];
    let layer = ClassifyLayer::grpc();
    for (name, headers, want) in cases {
        let mut all = vec![("content-type", "application/grpc")];
        all.extend_from_slice(headers);
        let error = through(&layer, response(200, &all, ""))
            .await
            .map(|_| ())
            .expect_err(name);
        let failure = found(&error);
        want.check(name, failure);
        assert_eq!(failure.status(), Some(200), "{name}");
    }

    // grpc-message is percent-decoded.
    let error = through(
        &layer,
        response(
            200,
            &[
                ("grpc-status", "14"),
                ("grpc-message", "upstream%20connect%20error%3A%20reset"),
            ],
            "",
        ),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    assert_eq!(
        found(&error).message(),
        Some("upstream connect error: reset")
    );

    // OK and streams whose status comes in trailers are delivered untouched.
    for headers in [
        &[("grpc-status", "0")][..],
        &[("content-type", "application/grpc")][..],
    ] {
        let ok = through(&layer, response(200, headers, "\0\0\0\0\0")).await;
        assert!(ok.is_ok());
    }
    // A proxy in front answering 503 without grpc-status.
    let error = through(&layer, response(503, &[], "no healthy upstream"))
        .await
        .map(|_| ())
        .unwrap_err();
    expect(Transient, Code::ProviderUnavailable, Retry).check("proxy 503", found(&error));
}

#[tokio::test]
async fn generic_http() {
    let layer = ClassifyLayer::http();
    let table = [
        (408, expect(Transient, Code::ProviderUnavailable, Retry)),
        (429, expect(Transient, Code::RateLimited, Retry)),
        (500, expect(Transient, Code::ProviderUnavailable, Retry)),
        (503, expect(Transient, Code::ProviderUnavailable, Retry)),
        (400, expect(Permanent, Code::BadRequest, Surface)),
        (401, expect(Permanent, Code::Auth, Surface)),
        (404, expect(Permanent, Code::NotFound, Surface)),
        (422, expect(Permanent, Code::BadRequest, Surface)),
    ];
    for (status, want) in table {
        // A provider-looking body means nothing to the generic table.
        let error = through(&layer, response(status, &[JSON], OPENAI_RPM))
            .await
            .map(|_| ())
            .unwrap_err();
        want.check(&status.to_string(), found(&error));
    }
    // 2xx JSON is not read by the generic classifier.
    let ok = through(&layer, response(200, &[JSON], r#"{"choices":[]}"#)).await;
    assert!(ok.is_ok());
}

/// `response`, answered to a `POST` of a JSON body to `path` on Vertex AI.
async fn answered_at<C>(
    layer: &ClassifyLayer<C>,
    path: &str,
    response: http::Response<common::Chunks>,
) -> tower::BoxError
where
    C: seawall_classify::Classifier + Clone,
{
    use tower::{Layer, ServiceExt};
    let mut response = Some(response);
    let inner = tower::service_fn(move |_: http::Request<()>| {
        let response = response.take().expect("one call");
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let request = http::Request::post(format!(
        "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/{path}"
    ))
    .header("content-type", "application/json")
    .body(())
    .unwrap();
    layer
        .layer(inner)
        .oneshot(request)
        .await
        .map(|_| ())
        .expect_err("an error answer")
}

/// One Vertex AI client reaches Gemini and Claude on one host. An error's
/// body is in the wire its path names, whatever the layer's: Claude's
/// "prompt is too long" under a Gemini layer is `context_too_long` (read
/// in Gemini's and OpenAI's shapes it was a `bad_request`), and Gemini's
/// per-day quota under an Anthropic layer is the quota wall it is (read
/// in OpenAI's shape it was a retried rate limit).
#[tokio::test]
async fn an_error_body_is_read_in_the_wire_its_path_names() {
    let claude = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let error = answered_at(
        &ClassifyLayer::gemini(),
        "publishers/anthropic/models/claude-x:rawPredict",
        response(400, &[JSON], claude),
    )
    .await;
    assert_eq!(found(&error).code(), Code::ContextTooLong, "{error}");

    let gemini = r#"{"error":{"code":429,"message":"Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 50","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-x"},"quotaValue":"50"}]}]}}"#;
    let error = answered_at(
        &ClassifyLayer::anthropic(),
        "publishers/google/models/gemini-x:generateContent",
        response(429, &[JSON], gemini),
    )
    .await;
    assert_eq!(found(&error).code(), Code::QuotaExhausted, "{error}");
}

/// Vertex AI answers its own errors on Claude's paths in Google's shape
/// (an array at times), not Anthropic's: read by Gemini's table, as on
/// Gemini's paths. Read in OpenAI's shape only the status decided: a 499
/// CANCELLED blamed the request, a region wall was a `bad_request`, a
/// per-day quota a retried rate limit and RetryInfo's delay was lost.
#[tokio::test]
async fn vertex_errors_on_claude_paths_read_by_geminis_table() {
    let google = |code: u16, status: &str, message: &str| {
        format!(r#"{{"error":{{"code":{code},"message":"{message}","status":"{status}"}}}}"#)
    };
    let cases = [
        (
            "499 CANCELLED, in an array",
            499,
            format!(
                "[{}]",
                google(499, "CANCELLED", "The operation was cancelled.")
            ),
            expect(Transient, Code::ProviderUnavailable, Retry),
        ),
        (
            "400 FAILED_PRECONDITION, the caller's region",
            400,
            google(
                400,
                "FAILED_PRECONDITION",
                "User location is not supported for the API use.",
            ),
            expect(Permanent, Code::QuotaExhausted, Surface),
        ),
        (
            "429 per minute: RetryInfo's delay",
            429,
            format!("[{GEMINI_PER_MINUTE}]"),
            expect(Transient, Code::RateLimited, Retry).after(Duration::from_secs(26)),
        ),
        (
            "429 per-day quota",
            429,
            GEMINI_PER_DAY.to_owned(),
            expect(Permanent, Code::QuotaExhausted, Surface),
        ),
    ];
    for (name, status, body, want) in cases {
        for layer in [ClassifyLayer::anthropic(), ClassifyLayer::gemini()] {
            let error = answered_at(
                &layer,
                "publishers/anthropic/models/claude-x:streamRawPredict",
                response(status, &[JSON], &body),
            )
            .await;
            want.check(name, found(&error));
        }
    }
    // Vertex AI's own quota message, kept as sent.
    let quota = format!(
        "[{}]",
        google(
            429,
            "RESOURCE_EXHAUSTED",
            "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude-x. Please submit a quota increase request.",
        )
    );
    let error = answered_at(
        &ClassifyLayer::anthropic(),
        "publishers/anthropic/models/claude-x:rawPredict",
        response(429, &[JSON], &quota),
    )
    .await;
    let failure = found(&error);
    expect(Transient, Code::RateLimited, Retry).check("Vertex AI quota", failure);
    assert!(
        failure
            .message()
            .is_some_and(|m| m.contains("online_prediction_requests_per_base_model")),
        "{failure}"
    );
}

/// Amazon Bedrock's runtime says what went wrong in `x-amzn-ErrorType`
/// and a `{"message"}` body, whatever model answers behind it: read
/// under any provider's layer (a user points an Anthropic layer at
/// Claude on Bedrock). By the status alone, a daily token quota was a
/// retried rate limit, a prompt too long a `bad_request`, a model's
/// timeout a `provider_unavailable`.
#[tokio::test]
async fn bedrock_errors_by_their_declared_type() {
    const TYPE: &str = "x-amzn-ErrorType";
    let cases = [
        Case {
            name: "429 ThrottlingException, tokens per day",
            status: 429,
            headers: &[(
                TYPE,
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            )],
            body: r#"{"message":"Too many tokens per day, please wait before trying again."}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "429 ThrottlingException, requests",
            status: 429,
            headers: &[(
                TYPE,
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            )],
            body: r#"{"message":"Too many requests, please wait before trying again."}"#,
            expect: expect(Transient, Code::RateLimited, Retry),
        },
        Case {
            name: "400 ValidationException, prompt is too long",
            status: 400,
            headers: &[(TYPE, "ValidationException")],
            body: r#"{"message":"prompt is too long: 210000 tokens > 200000 maximum"}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "400 ValidationException, input is too long",
            status: 400,
            headers: &[(
                TYPE,
                "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            )],
            body: r#"{"message":"Input is too long for requested model."}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        },
        Case {
            name: "400 ValidationException, anything else",
            status: 400,
            headers: &[(TYPE, "ValidationException")],
            body: r#"{"message":"Malformed input request: #: required key [messages] not found, please reformat your input and try again."}"#,
            expect: expect(Permanent, Code::BadRequest, Surface),
        },
        Case {
            name: "400 ServiceQuotaExceededException",
            status: 400,
            headers: &[(TYPE, "ServiceQuotaExceededException")],
            body: r#"{"message":"Your request exceeds the service quota for your account."}"#,
            expect: expect(Permanent, Code::QuotaExhausted, Surface),
        },
        Case {
            name: "424 ModelErrorException",
            status: 424,
            headers: &[(TYPE, "ModelErrorException")],
            body: r#"{"message":"The request failed due to an error while processing the model.","originalStatusCode":500}"#,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "408 ModelTimeoutException",
            status: 408,
            headers: &[(TYPE, "ModelTimeoutException")],
            body: r#"{"message":"Model has timed out in processing the request. Try your request again."}"#,
            expect: expect(Transient, Code::Timeout, Retry),
        },
        Case {
            name: "429 ModelNotReadyException",
            status: 429,
            headers: &[(TYPE, "ModelNotReadyException")],
            body: r#"{"message":"Model is not ready for inference. Wait and try your request again."}"#,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "503 ServiceUnavailableException",
            status: 503,
            headers: &[(TYPE, "ServiceUnavailableException")],
            body: r#"{"message":"Bedrock is unable to process your request."}"#,
            expect: expect(Transient, Code::ProviderUnavailable, Retry),
        },
        Case {
            name: "403 AccessDeniedException",
            status: 403,
            headers: &[(TYPE, "AccessDeniedException")],
            body: r#"{"message":"You don't have access to the model with the specified model ID."}"#,
            expect: expect(Permanent, Code::Auth, Surface),
        },
        Case {
            name: "404 ResourceNotFoundException",
            status: 404,
            headers: &[(TYPE, "ResourceNotFoundException")],
            body: r#"{"message":"Could not resolve the foundation model from the provided model identifier."}"#,
            expect: expect(Permanent, Code::NotFound, Surface),
        },
    ];
    for layer in [
        ClassifyLayer::anthropic(),
        ClassifyLayer::openai(),
        ClassifyLayer::gemini(),
    ] {
        run(layer, &cases).await;
    }

    // The type and the message are kept as other readers keep theirs.
    let error = through(
        &ClassifyLayer::anthropic(),
        response(
            429,
            &[
                JSON,
                (
                    TYPE,
                    "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
                ),
            ],
            r#"{"message":"Too many tokens per day, please wait before trying again."}"#,
        ),
    )
    .await
    .map(|_| ())
    .unwrap_err();
    let failure = found(&error);
    assert_eq!(failure.provider_type(), Some("ThrottlingException"));
    assert_eq!(
        failure.message(),
        Some("Too many tokens per day, please wait before trying again.")
    );

    // AWS names every bad request `ValidationException`: a body in the
    // layer's own shape behind AWS says what it is.
    run(
        ClassifyLayer::openai(),
        &[Case {
            name: "400 ValidationException, an OpenAI-shaped context error",
            status: 400,
            headers: &[(TYPE, "ValidationException")],
            body: r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            expect: expect(Permanent, Code::ContextTooLong, Surface),
        }],
    )
    .await;
}

/// A stored Responses object read back or cancelled is the object as it
/// is: its `failed` or `cancelled` status is data recorded earlier, not
/// this call's failure. A new response's same status is a failure.
#[tokio::test]
async fn a_stored_response_read_back_is_delivered_as_it_is() {
    use tower::{Layer, ServiceExt};
    let cancelled = r#"{"id":"resp_1","object":"response","status":"cancelled","output":[]}"#;
    let failed = r#"{"id":"resp_1","object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"x"},"output":[]}"#;
    let call = |method: http::Method, path: &'static str, body: &'static str| async move {
        let inner = tower::service_fn(move |_: http::Request<()>| async move {
            Ok::<_, std::convert::Infallible>(response(200, &[JSON], body))
        });
        let request = http::Request::builder()
            .method(method)
            .uri(format!("https://api.openai.com{path}"))
            .body(())
            .unwrap();
        ClassifyLayer::openai_responses()
            .layer(inner)
            .oneshot(request)
            .await
            .map(|response| response.status())
    };
    for (method, path, body) in [
        (http::Method::POST, "/v1/responses/resp_1/cancel", cancelled),
        (http::Method::GET, "/v1/responses/resp_1", failed),
        (http::Method::GET, "/v1/responses/resp_1", cancelled),
    ] {
        let answer = call(method.clone(), path, body).await;
        assert_eq!(
            answer.map_err(|error| error.to_string()),
            Ok(http::StatusCode::OK),
            "{method} {path}"
        );
    }
    // Asked for anew, the same status is the generation's failure.
    let error = call(http::Method::POST, "/v1/responses", failed)
        .await
        .unwrap_err();
    assert_eq!(found(&error).code(), Code::RateLimited);
}
