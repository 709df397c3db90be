//! The provider tables row by row, as a caller of `seawall-core` reads
//! them: the generic HTTP status table, the gRPC status table,
//! `x-should-retry`, Anthropic's error types and content blocks, what
//! counts as a present value, and what a unary answer reports.

use std::time::{Duration, SystemTime};

use seawall_core::hint::RetryHint;
use seawall_core::provider::anthropic::{Block, block, delta_adds_content};
use seawall_core::provider::{
    AnswerCheck, ErrorContext, Presence, Provider, QuotaWall, check_answer, classify_error,
    classify_grpc,
};
use seawall_core::{Action, Class, Code, Scope};

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32)
}

fn cx(status: Option<u16>, should_retry: Option<bool>) -> ErrorContext {
    ErrorContext {
        status,
        hint: RetryHint {
            after: None,
            should_retry,
            limit_reset: None,
        },
        quota_wall: QuotaWall::default(),
        now: now(),
    }
}

#[test]
fn the_http_status_table() {
    use Class::*;
    let rows = [
        (429, Transient, Code::RateLimited),
        (300, Permanent, Code::Redirected),
        (302, Permanent, Code::Redirected),
        (399, Permanent, Code::Redirected),
        (529, Transient, Code::Overloaded),
        (408, Transient, Code::ProviderUnavailable),
        (409, Transient, Code::ProviderUnavailable),
        (425, Transient, Code::ProviderUnavailable),
        (500, Transient, Code::ProviderUnavailable),
        (503, Transient, Code::ProviderUnavailable),
        (599, Transient, Code::ProviderUnavailable),
        (401, Permanent, Code::Auth),
        (403, Permanent, Code::Auth),
        (402, Permanent, Code::QuotaExhausted),
        (404, Permanent, Code::NotFound),
        (413, Permanent, Code::RequestTooLarge),
        (400, Permanent, Code::BadRequest),
        (422, Permanent, Code::BadRequest),
        (499, Permanent, Code::BadRequest),
        (200, Permanent, Code::Unknown),
        (600, Permanent, Code::Unknown),
    ];
    for (status, class, code) in rows {
        let failure = classify_error(Provider::Http, b"", cx(Some(status), None));
        assert_eq!((failure.class(), failure.code()), (class, code), "{status}");
        assert_eq!(failure.status(), Some(status));
    }
}

#[test]
fn the_grpc_status_table() {
    use Class::*;
    let rows = [
        (8, Transient, Code::RateLimited),
        (14, Transient, Code::ProviderUnavailable),
        // A conflict for the caller to restart at a higher level.
        (10, Permanent, Code::BadRequest),
        (4, Transient, Code::Timeout),
        (1, Permanent, Code::Cancelled),
        (3, Permanent, Code::BadRequest),
        (9, Permanent, Code::BadRequest),
        (11, Permanent, Code::BadRequest),
        (6, Permanent, Code::BadRequest),
        // The entity the call names is missing: the request's, wherever
        // it goes. The method is missing: the route's.
        (5, Permanent, Code::BadRequest),
        (12, Permanent, Code::NotFound),
        // The call's own authorization, not the channel's credentials.
        (7, Permanent, Code::BadRequest),
        (16, Permanent, Code::Auth),
        (2, Permanent, Code::Unknown),
        (13, Permanent, Code::Unknown),
        (15, Permanent, Code::Unknown),
        (99, Permanent, Code::Unknown),
    ];
    for (status, class, code) in rows {
        let failure = classify_grpc(status, Some("why"), cx(None, None));
        assert_eq!((failure.class(), failure.code()), (class, code), "{status}");
        assert_eq!(failure.provider_code(), Some(status.to_string().as_str()));
        assert_eq!(failure.message(), Some("why"));
    }
    // RESOURCE_EXHAUSTED for a message past a size limit: the same message
    // meets it again. The server's (or the request's, sent) and the one
    // tonic met decoding the answer.
    for (message, class, code) in [
        (
            "grpc: received message larger than max (8388708 vs. 4194304)",
            Permanent,
            Code::RequestTooLarge,
        ),
        (
            "gRPC message exceeds maximum size 4194304: 8388708",
            Permanent,
            Code::RequestTooLarge,
        ),
        (
            "Error, decoded message length too large: found 8388708 bytes, the limit is: 4194304 bytes",
            Permanent,
            Code::AnswerTooLarge,
        ),
        (
            "Quota exceeded for quota metric",
            Transient,
            Code::RateLimited,
        ),
    ] {
        let failure = classify_grpc(8, Some(message), cx(None, None));
        assert_eq!(
            (failure.class(), failure.code()),
            (class, code),
            "{message}"
        );
    }
    // The same words from a tonic server, on the wire: it could not read
    // our request.
    let failure = classify_grpc(
        8,
        Some(
            "Error, decoded message length too large: found 8388708 bytes, the limit is: 4194304 bytes",
        ),
        cx(Some(200), None),
    );
    assert_eq!(
        (failure.class(), failure.code()),
        (Permanent, Code::RequestTooLarge)
    );
}

/// gRPC's NOT_FOUND names an entity of the call's own (a `GetX(id)` that
/// missed): no other route is tried for it, and the server's code stays
/// the provider code. One naming a model or a deployment, UNIMPLEMENTED
/// (the server lacks the method) and an HTTP 404 (the deployment lacks
/// the model) are the route's.
#[test]
fn a_grpc_not_found_is_the_requests_unimplemented_the_routes() {
    let missing = classify_grpc(5, Some("order 42 not found"), cx(Some(200), None));
    assert_eq!(missing.scope(), Scope::Request);
    assert!(!missing.moves_route());
    assert_eq!(missing.action(), Action::Surface);
    assert_eq!(missing.provider_code(), Some("5"));
    assert_eq!(missing.message(), Some("order 42 not found"));
    // One that names a model or a deployment is what the route lacks.
    for message in [
        "Publisher model `projects/p/locations/us-central1/publishers/google/models/gemini-x` was not found or your project does not have access to it.",
        "The deployment gpt-x does not exist.",
    ] {
        let lacking = classify_grpc(5, Some(message), cx(Some(200), None));
        assert_eq!(lacking.code(), Code::NotFound, "{message}");
        assert!(lacking.moves_route(), "{message}");
    }
    let lacking = classify_grpc(12, None, cx(Some(200), None));
    assert_eq!(lacking.code(), Code::NotFound);
    assert!(lacking.moves_route());
    let no_model = classify_error(Provider::Http, b"", cx(Some(404), None));
    assert_eq!(no_model.code(), Code::NotFound);
    assert!(no_model.moves_route());
}

/// A message past a size limit, by whose limit it passed: what a server
/// could not send is the answer, what it could not take our request. The
/// words are the libraries' own: grpc-go's (rpc_util.go, stream.go) and
/// grpc-java's (RESOURCE_EXHAUSTED), tonic's codec's (OUT_OF_RANGE), whose
/// sides turn round when our own tonic says them (no HTTP status).
#[test]
fn grpc_size_limits_name_whose_message_passed_them() {
    let (request, answer) = (Code::RequestTooLarge, Code::AnswerTooLarge);
    let rows = [
        // grpc-go, receiving.
        (
            8,
            "grpc: received message larger than max (8388708 vs. 4194304)",
            request,
        ),
        (
            8,
            "grpc: received message larger than max length allowed on current machine (4294967296 vs. 2147483647)",
            request,
        ),
        (
            8,
            "grpc: received message after decompression larger than max 4194304",
            request,
        ),
        (
            8,
            "grpc: message after decompression larger than max (8388708 vs. 4194304)",
            request,
        ),
        // grpc-go, sending: a unary answer before its calls were streams,
        // and a stream's.
        (
            8,
            "grpc: trying to send message larger than max (8388708 vs. 4194304)",
            answer,
        ),
        (
            8,
            "trying to send message larger than max (8388708 vs. 4194304)",
            answer,
        ),
        // grpc-java, receiving and sending.
        (
            8,
            "gRPC message exceeds maximum size 4194304: 8388708",
            request,
        ),
        (8, "message too large 8388708 > 4194304", answer),
        // gRPC C-core (C++, Python) and grpc-js, receiving and sending;
        // C-core may say whose side first.
        (
            8,
            "Received message larger than max (8388708 vs. 4194304)",
            request,
        ),
        (
            8,
            "Sent message larger than max (8388708 vs. 4194304)",
            answer,
        ),
        (
            8,
            "SERVER: Sent message larger than max (8388708 vs. 4194304)",
            answer,
        ),
        // A tonic server, decoding our request and encoding its answer.
        (
            11,
            "Error, decoded message length too large: found 8388708 bytes, the limit is: 4194304 bytes",
            request,
        ),
        (
            11,
            "Error, encoded message length too large: found 8388708 bytes, the limit is: 4194304 bytes",
            answer,
        ),
    ];
    for (status, message, code) in rows {
        let failure = classify_grpc(status, Some(message), cx(Some(200), None));
        assert_eq!(
            (failure.class(), failure.code(), failure.action()),
            (Class::Permanent, code, Action::Surface),
            "{message}"
        );
        assert_eq!(failure.provider_code(), Some(status.to_string().as_str()));
    }
    // Our own tonic: its encoder met our request, its decoder the answer.
    for (message, code) in [
        (
            "Error, encoded message length too large: found 9 bytes, the limit is: 4 bytes",
            request,
        ),
        (
            "Error, decoded message length too large: found 9 bytes, the limit is: 4 bytes",
            answer,
        ),
    ] {
        let failure = classify_grpc(11, Some(message), cx(None, None));
        assert_eq!(failure.code(), code, "{message}");
    }
    // OUT_OF_RANGE without tonic's words is no size limit.
    let failure = classify_grpc(11, Some("offset larger than max"), cx(Some(200), None));
    assert_eq!(failure.code(), Code::BadRequest);
}

/// The server's pushback is the delay for every status, as `Retry-After`
/// is over HTTP (gRFC A6); an unparseable one asks not to retry at all.
#[test]
fn grpc_pushback_holds_for_every_status() {
    let pushed = |ms: &str| {
        let mut headers = http::HeaderMap::new();
        headers.insert("grpc-retry-pushback-ms", ms.parse().unwrap());
        ErrorContext {
            hint: RetryHint::from_headers(&headers, now()),
            ..cx(Some(200), None)
        }
    };
    // The retried statuses (ABORTED, permanent, is not retried at all).
    for status in [14, 4] {
        let failure = classify_grpc(status, None, pushed("5000"));
        assert_eq!(
            failure.retry_after(),
            Some(Duration::from_secs(5)),
            "{status}"
        );
        assert_eq!(failure.action(), Action::Retry, "{status}");
        let failure = classify_grpc(status, None, pushed("3600000"));
        assert_eq!(
            failure.retry_after(),
            Some(Duration::from_secs(3600)),
            "{status}"
        );
        for garbage in ["soon", "1.5", "-"] {
            let failure = classify_grpc(status, None, pushed(garbage));
            assert_eq!(failure.action(), Action::Surface, "{status} {garbage}");
        }
    }
}

/// A per-day `QuotaFailure` in a gRPC status's details makes
/// RESOURCE_EXHAUSTED the same wall as over REST, its per-minute
/// `RetryInfo` dropped; a per-minute one keeps its delay, and the pushback
/// header wins over `RetryInfo`.
#[test]
fn grpc_status_details_judge_like_rest() {
    use seawall_core::provider::{StatusDetails, classify_grpc_details};
    let mut per_day = StatusDetails {
        retry_delay: Some(Duration::from_secs(26)),
        ..StatusDetails::default()
    };
    per_day.add_quota_id("GenerateRequestsPerDayPerProjectPerModel-FreeTier");
    let failure = classify_grpc_details(8, Some("quota"), per_day, cx(Some(200), None));
    assert_eq!(
        (failure.class(), failure.code(), failure.retry_after()),
        (Class::Permanent, Code::QuotaExhausted, None)
    );
    let mut per_minute = StatusDetails {
        retry_delay: Some(Duration::from_secs(26)),
        ..StatusDetails::default()
    };
    per_minute.add_quota_id("GenerateRequestsPerMinutePerProjectPerModel-FreeTier");
    let failure = classify_grpc_details(8, None, per_minute, cx(Some(200), None));
    assert_eq!(
        (failure.code(), failure.retry_after()),
        (Code::RateLimited, Some(Duration::from_secs(26)))
    );
    // A zero limit, which proto3 leaves out of the details: the message
    // says it, and it is a wall.
    let failure = classify_grpc_details(
        8,
        Some(
            "Quota exceeded for metric: generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro",
        ),
        per_minute,
        cx(Some(200), None),
    );
    assert_eq!(
        (failure.code(), failure.retry_after()),
        (Code::QuotaExhausted, None)
    );
    let header = ErrorContext {
        hint: RetryHint {
            after: Some(Duration::from_secs(2)),
            should_retry: None,
            limit_reset: None,
        },
        ..cx(Some(200), None)
    };
    let failure = classify_grpc_details(8, None, per_minute, header);
    assert_eq!(failure.retry_after(), Some(Duration::from_secs(2)));
}

/// `x-should-retry: false` stops a transient failure's retries;
/// `true` lifts only the permanent verdicts that mean "we do not know".
#[test]
fn should_retry_overrides_only_where_it_may() {
    let failure = |status, should| classify_error(Provider::Http, b"", cx(Some(status), should));
    // false: a transient failure is surfaced; a permanent one is as it was.
    let stopped = failure(503, Some(false));
    assert_eq!(stopped.code(), Code::ProviderUnavailable);
    assert_eq!(stopped.action(), Action::Surface);
    assert_eq!(failure(503, None).action(), Action::Retry);
    assert_eq!(failure(404, Some(false)).action(), Action::Surface);
    assert_eq!(failure(404, Some(false)).class(), Class::Permanent);
    // true: bad_request and unknown become transient, keeping their code.
    for status in [400, 600] {
        let lifted = failure(status, Some(true));
        assert_eq!(lifted.class(), Class::Transient, "{status}");
        assert_eq!(lifted.code(), failure(status, None).code());
        assert_eq!(lifted.action(), Action::Retry);
    }
    // Never a quota, credentials or a missing resource.
    for status in [401, 402, 404, 413] {
        let kept = failure(status, Some(true));
        assert_eq!(kept.class(), Class::Permanent, "{status}");
        assert_eq!(kept.code(), failure(status, None).code());
    }
    // `false` never turns a policy failure into a plain one to surface.
    let body = br#"{"error":{"message":"m","type":"content_filter","code":null}}"#;
    let filtered = classify_error(Provider::OpenAi, body, cx(Some(400), Some(false)));
    assert_eq!(
        (filtered.class(), filtered.action()),
        (Class::Policy, Action::Escalate)
    );
    // A transient verdict is left as it is.
    let transient = failure(503, Some(true));
    assert_eq!(
        (transient.class(), transient.action()),
        (Class::Transient, Action::Retry)
    );
}

#[test]
fn anthropic_error_types() {
    use Class::*;
    let rows = [
        ("rate_limit_error", "", Transient, Code::RateLimited),
        ("overloaded_error", "", Transient, Code::Overloaded),
        ("api_error", "", Transient, Code::ProviderUnavailable),
        ("timeout_error", "", Transient, Code::Timeout),
        (
            "invalid_request_error",
            "prompt is too long: 210000 tokens",
            Permanent,
            Code::ContextTooLong,
        ),
        (
            "invalid_request_error",
            "Output blocked by content filtering policy",
            Policy,
            Code::ContentFiltered,
        ),
        (
            "invalid_request_error",
            "bad field",
            Permanent,
            Code::BadRequest,
        ),
        ("request_too_large", "", Permanent, Code::RequestTooLarge),
        ("billing_error", "", Permanent, Code::QuotaExhausted),
        ("authentication_error", "", Permanent, Code::Auth),
        ("permission_error", "", Permanent, Code::Auth),
        ("not_found_error", "", Permanent, Code::NotFound),
    ];
    for (ty, message, class, code) in rows {
        let body = format!(r#"{{"type":"error","error":{{"type":"{ty}","message":"{message}"}}}}"#);
        // Whatever the status says, the declared type decides.
        for status in [418, 503] {
            let failure =
                classify_error(Provider::Anthropic, body.as_bytes(), cx(Some(status), None));
            assert_eq!(
                (failure.class(), failure.code()),
                (class, code),
                "{ty} {status}"
            );
            assert_eq!(failure.provider_type(), Some(ty));
        }
    }
    // An unknown type: the status decides, or, inside a stream, unknown.
    let body = br#"{"type":"error","error":{"type":"new_error","message":"?"}}"#;
    let failure = classify_error(Provider::Anthropic, body, cx(Some(503), None));
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    let failure = classify_error(Provider::Anthropic, body, cx(None, None));
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Permanent, Code::Unknown)
    );
    // An unknown type that echoes a status, inside a stream: the status.
    let body =
        br#"{"type":"error","error":{"type":"proxy_error","message":"?","code":"","status":503}}"#;
    let failure = classify_error(Provider::Anthropic, body, cx(None, None));
    assert_eq!(
        failure.code(),
        Code::Unknown,
        "Anthropic's error has no code"
    );

    // A proxy's error in OpenAI's shape on an Anthropic stream (LiteLLM's
    // `/v1/messages`: `type` null, the status as `code`): read by OpenAI's
    // table and the status it echoes, not `unknown` and never retried.
    for (body, class, code) in [
        (
            r#"{"error":{"message":"litellm.RateLimitError: rate limited","type":null,"param":"None","code":"429"}}"#,
            Transient,
            Code::RateLimited,
        ),
        (
            r#"{"error":{"message":"upstream failed","type":null,"param":"None","code":"502"}}"#,
            Transient,
            Code::ProviderUnavailable,
        ),
        (
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
            Transient,
            Code::ProviderUnavailable,
        ),
    ] {
        let failure = classify_error(Provider::Anthropic, body.as_bytes(), cx(None, None));
        assert_eq!((failure.class(), failure.code()), (class, code), "{body}");
        assert!(failure.message().is_some(), "{body}");
    }
}

/// A wall whose message says when access comes back cools its route until
/// then (not for the default minute, then a call a minute for weeks); a
/// date already past, or none, leaves the default.
#[test]
fn a_walls_stated_reset_cools_its_route_until_then() {
    let spend_cap = r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
    // 2026-09-01T00:00:00Z, and a day before it.
    let reset = SystemTime::UNIX_EPOCH + Duration::from_secs(1_788_220_800);
    let day = Duration::from_secs(86_400);
    let at = |now| ErrorContext {
        now,
        ..cx(Some(429), None)
    };
    let failure = classify_error(Provider::Anthropic, spend_cap.as_bytes(), at(reset - day));
    assert_eq!(failure.reset_at(), Some(reset));
    assert_eq!(
        failure.cooldown(reset - day),
        Some(seawall_core::Cooldown::For(day))
    );
    let late = classify_error(Provider::Anthropic, spend_cap.as_bytes(), at(reset + day));
    assert_eq!(late.reset_at(), None);
    assert_eq!(late.code(), Code::QuotaExhausted);
}

/// The account, not the request, is walled off: the tier's monthly spend
/// cap (a 429 `rate_limit_error` with no `retry-after`, told apart by
/// `details.error_code`), a spend limit the organization set and an empty
/// credit balance (a 400 `invalid_request_error`). Not retried, and moved
/// to another route; a plain rate limit and a long prompt are as before.
#[test]
fn anthropic_account_walls_are_quota_exhausted() {
    let spend_cap = r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}"#;
    let coded = r#"{"type":"error","error":{"type":"rate_limit_error","message":"m","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
    let error = |ty: &str, message: &str| {
        format!(r#"{{"type":"error","error":{{"type":"{ty}","message":"{message}"}}}}"#)
    };
    let walls = [
        (429, spend_cap.to_owned()),
        // The code alone, or the words alone, are enough.
        (429, coded.to_owned()),
        (
            400,
            error(
                "invalid_request_error",
                "You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC.",
            ),
        ),
        (
            400,
            error(
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
            ),
        ),
        (
            400,
            error("invalid_request_error", "YOUR CREDIT BALANCE IS TOO LOW"),
        ),
    ];
    for (status, body) in &walls {
        for status in [Some(*status), None] {
            let failure = classify_error(Provider::Anthropic, body.as_bytes(), cx(status, None));
            assert_eq!(
                (failure.class(), failure.code(), failure.action()),
                (Class::Permanent, Code::QuotaExhausted, Action::Surface),
                "{status:?} {body}"
            );
            assert!(failure.moves_route(), "{body}");
        }
    }
    let failure = classify_error(
        Provider::Anthropic,
        spend_cap.as_bytes(),
        cx(Some(429), None),
    );
    assert_eq!(
        failure.provider_code(),
        Some("enforced_spend_limit_reached")
    );
    // Not every 429 is the cap, nor every 400 about money.
    let limited = error(
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute.",
    );
    let failure = classify_error(Provider::Anthropic, limited.as_bytes(), cx(Some(429), None));
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::RateLimited, Action::Retry)
    );
    let long = error(
        "invalid_request_error",
        "prompt is too long: 215344 tokens > 200000 maximum",
    );
    let failure = classify_error(Provider::Anthropic, long.as_bytes(), cx(Some(400), None));
    assert_eq!(failure.code(), Code::ContextTooLong);
    assert!(!failure.moves_route());
}

#[test]
fn anthropic_blocks_and_deltas() {
    assert_eq!(block("text"), Block::Text);
    assert_eq!(block("thinking"), Block::Thinking);
    assert_eq!(block("redacted_thinking"), Block::Thinking);
    for ty in [
        "tool_use",
        "server_tool_use",
        "web_search_tool_result",
        "new",
    ] {
        assert_eq!(block(ty), Block::Answer, "{ty}");
    }
    assert!(delta_adds_content("text_delta"));
    assert!(delta_adds_content("input_json_delta"));
    for ty in ["thinking_delta", "signature_delta", "citations_delta", ""] {
        assert!(!delta_adds_content(ty), "{ty}");
    }
}

#[test]
fn presence_is_any_value_but_null_empty_and_empty_arrays() {
    let present = |json: &str| serde_json::from_str::<Presence>(json).unwrap().0;
    for json in [
        "true",
        "false",
        "0",
        "-1",
        "1.5",
        "18446744073709551615",
        r#""x""#,
        "{}",
        r#"{"a":null}"#,
        "[1]",
        r#"["", "x"]"#,
        "[[0]]",
    ] {
        assert!(present(json), "{json}");
    }
    for json in ["null", r#""""#, "[]", "[null]", r#"["", null, []]"#] {
        assert!(!present(json), "{json}");
    }
    // As an optional field: absent or null is nothing.
    #[derive(serde::Deserialize)]
    struct Field {
        #[serde(default)]
        value: Option<Presence>,
    }
    let field = |json: &str| serde_json::from_str::<Field>(json).unwrap().value;
    assert_eq!(field("{}"), None);
    assert_eq!(field(r#"{"value":null}"#), None);
    assert_eq!(field(r#"{"value":[0]}"#), Some(Presence(true)));
    // Not JSON at all is an error, with what was expected.
    let error = serde_json::from_str::<Presence>("").unwrap_err();
    assert!(error.is_eof());
}

fn answer(provider: Provider, body: &str) -> String {
    match check_answer(provider, body.as_bytes()) {
        AnswerCheck::Answer { finish, usage } => format!(
            "answer {:?} {:?}",
            finish.map(|f| (f.kind, f.reason.into_owned())),
            usage.map(|u| (u.input_tokens, u.output_tokens))
        ),
        AnswerCheck::Fail(failure) => {
            format!("fail {} {:?}", failure.code(), failure.provider_code())
        }
        AnswerCheck::Bare(failure) => format!("bare {}", failure.code()),
        AnswerCheck::OtherShape => "other shape".into(),
        AnswerCheck::Pending => "pending".into(),
        _ => "?".into(),
    }
}

/// Every provider names the finish of a whole answer: an answer with
/// text and no finish reason was cut short (Gemini: "if empty, the model
/// has not stopped generating tokens"; Anthropic: `stop_reason` "always
/// non-null" when not streamed), as a stream that ends without one. Cut
/// before anything was delivered, it is transient (a caller may ask
/// again), and the layers surface it rather than retry it (row 7 of
/// `Action::decide`: the cut answer was billed).
#[test]
fn an_answer_without_a_finish_reason_was_cut_short() {
    for (provider, body) in [
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Once upon"}]}}]}"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"message","content":[{"type":"text","text":"Once upon"}],"stop_reason":null}"#,
        ),
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Once upon"},"finish_reason":null}]}"#,
        ),
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Once upon"}}]}"#,
        ),
    ] {
        assert_eq!(answer(provider, body), "fail truncated None", "{body}");
    }
    let failure = match check_answer(
        Provider::Gemini,
        br#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}"#,
    ) {
        AnswerCheck::Fail(failure) => failure,
        _ => panic!("a failure"),
    };
    assert_eq!(failure.class(), Class::Transient);
    assert_eq!(failure.action(), seawall_core::Action::Surface);
}

/// A message's `content` as a list of parts (Mistral's reasoning models):
/// a text part with text is the answer, thinking parts alone are the model
/// at work and no answer, another part (an image) is content.
#[test]
fn content_parts_hold_the_answer_in_their_text_parts() {
    let body = |content: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":{content}}},"finish_reason":"stop"}}]}}"#
        )
    };
    let empty = r#"fail empty_response Some("stop")"#;
    let whole = r#"answer Some((Complete, "stop")) None"#;
    for (content, verdict) in [
        (
            r#"[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]}]"#,
            empty,
        ),
        (r#"[{"type":"text","text":""}]"#, empty),
        ("[]", empty),
        (
            r#"[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"Hi"}]"#,
            whole,
        ),
        (
            r#"[{"type":"image_url","image_url":{"url":"data:,"}}]"#,
            whole,
        ),
        (r#""Hi""#, whole),
        ("\"\"", empty),
    ] {
        assert_eq!(
            answer(Provider::OpenAi, &body(content)),
            verdict,
            "{content}"
        );
    }
}

/// A usage serde cannot read (a count out of any number's range, a count
/// named twice) never fails an answer the provider billed: the answer is
/// read without it, or with the later count.
#[test]
fn a_usage_it_cannot_read_never_fails_the_answer() {
    let openai = |usage: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"Hi"}},"finish_reason":"stop"}}],"usage":{usage}}}"#
        )
    };
    assert_eq!(
        answer(
            Provider::OpenAi,
            &openai(r#"{"prompt_tokens":9,"completion_tokens":1e400}"#)
        ),
        r#"answer Some((Complete, "stop")) None"#
    );
    assert_eq!(
        answer(
            Provider::OpenAi,
            &openai(&format!(r#"{{"prompt_tokens":{}}}"#, "9".repeat(400)))
        ),
        r#"answer Some((Complete, "stop")) None"#
    );
    assert_eq!(
        answer(
            Provider::OpenAi,
            &openai(r#"{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":3}"#)
        ),
        r#"answer Some((Complete, "stop")) Some((2, 3))"#
    );
    // No usage written as a list (some relays), or behind a byte order mark.
    assert_eq!(
        answer(Provider::OpenAi, &openai("[]")),
        r#"answer Some((Complete, "stop")) None"#
    );
    assert_eq!(
        answer(
            Provider::OpenAi,
            &format!("\u{feff}{}", openai(r#"{"prompt_tokens":1e400}"#))
        ),
        r#"answer Some((Complete, "stop")) None"#
    );
    let gemini = r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1e999}}"#;
    assert_eq!(
        answer(Provider::Gemini, gemini),
        r#"answer Some((Complete, "STOP")) None"#
    );
    // Broken elsewhere, it is still broken.
    let cut = r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1e400},"x":tru}"#;
    assert_eq!(
        answer(Provider::OpenAi, cut),
        "fail protocol_violation None"
    );
}

#[test]
fn an_anthropic_answer_reports_its_finish_and_usage() {
    let body = r#"{"type":"message","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":5}}"#;
    assert_eq!(
        answer(Provider::Anthropic, body),
        r#"answer Some((Complete, "end_turn")) Some((3, 5))"#
    );
    // A refusal is a refusal even with text, with the reason as its code.
    let refused =
        r#"{"type":"message","content":[{"type":"text","text":"No."}],"stop_reason":"refusal"}"#;
    assert_eq!(
        answer(Provider::Anthropic, refused),
        r#"fail refused Some("refusal")"#
    );
    // Only thinking, or an empty text block, is no answer.
    let empty = r#"{"type":"message","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":""}],"stop_reason":"end_turn"}"#;
    assert_eq!(
        answer(Provider::Anthropic, empty),
        r#"fail empty_response Some("end_turn")"#
    );
    // A tool call alone is an answer.
    let tool = r#"{"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":{}}],"stop_reason":"tool_use"}"#;
    assert_eq!(
        answer(Provider::Anthropic, tool),
        r#"answer Some((Complete, "tool_use")) None"#
    );
    // A paused server-tool turn is delivered, to be sent back to continue:
    // the message is whole, the task is not.
    let paused = r#"{"type":"message","content":[{"type":"text","text":"Let me search for that."},{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}],"stop_reason":"pause_turn","usage":{"input_tokens":10,"output_tokens":40}}"#;
    assert_eq!(
        answer(Provider::Anthropic, paused),
        r#"answer Some((Truncated, "pause_turn")) Some((10, 40))"#
    );
    assert!(!seawall_core::FinishKind::anthropic("pause_turn").completes_task());
    // A turn paused after compaction (the context-management beta) holds
    // the conversation's summary, not the answer.
    let compacted = r#"{"type":"message","content":[{"type":"compaction","content":"Summary of the conversation"}],"stop_reason":"compaction","usage":{"input_tokens":10,"output_tokens":40}}"#;
    assert_eq!(
        answer(Provider::Anthropic, compacted),
        r#"answer Some((Truncated, "compaction")) Some((10, 40))"#
    );
    // A turn that compacted first bills the compaction pass beside the
    // answer's, and only `usage.iterations` says so.
    let compacted_first = r#"{"type":"message","content":[{"type":"compaction","content":"Summary of the conversation"},{"type":"text","text":"Based on our conversation"}],"stop_reason":"end_turn","usage":{"input_tokens":23000,"output_tokens":1000,"iterations":[{"type":"compaction","input_tokens":180000,"output_tokens":3500},{"type":"message","input_tokens":23000,"output_tokens":1000}]}}"#;
    assert_eq!(
        answer(Provider::Anthropic, compacted_first),
        r#"answer Some((Complete, "end_turn")) Some((203000, 4500))"#
    );
    assert_eq!(
        answer(Provider::Anthropic, r#"{"type":"list","data":[]}"#),
        "other shape"
    );
    assert_eq!(
        answer(Provider::Anthropic, r#"{"type":"message","content":"#),
        "fail protocol_violation None"
    );
    assert_eq!(answer(Provider::Http, "{}"), "other shape");
}

/// Every choice counts for content; the first decides the finish unless
/// another was cut; the first policy failure wins.
#[test]
fn an_openai_answer_reads_every_choice() {
    let body = r#"{"choices":[{"message":{"content":""},"finish_reason":"stop"},{"message":{"content":"Hi"},"finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":4}}"#;
    assert_eq!(
        answer(Provider::OpenAi, body),
        r#"answer Some((Truncated, "length")) Some((2, 4))"#
    );
    let filtered = r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"stop"},{"message":{"content":""},"finish_reason":"content_filter"}]}"#;
    assert_eq!(
        answer(Provider::OpenAi, filtered),
        r#"fail content_filtered Some("content_filter")"#
    );
    // vLLM's engine abort, with the text it had: no answer, and transient.
    let aborted = r#"{"choices":[{"message":{"content":"Hi"},"finish_reason":"abort"}]}"#;
    assert_eq!(
        answer(Provider::OpenAi, aborted),
        r#"fail provider_unavailable Some("abort")"#
    );
    let tool_calls = r#"{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c"}]},"finish_reason":"tool_calls"}]}"#;
    assert!(answer(Provider::OpenAi, tool_calls).starts_with("answer"));
    let no_calls =
        r#"{"choices":[{"message":{"content":null,"tool_calls":[]},"finish_reason":"stop"}]}"#;
    assert_eq!(
        answer(Provider::OpenAi, no_calls),
        r#"fail empty_response Some("stop")"#
    );
}

#[test]
fn gemini_statuses() {
    use Class::*;
    let rows = [
        ("RESOURCE_EXHAUSTED", "", Transient, Code::RateLimited),
        ("UNAVAILABLE", "", Transient, Code::Overloaded),
        ("INTERNAL", "", Transient, Code::ProviderUnavailable),
        ("DEADLINE_EXCEEDED", "", Transient, Code::Timeout),
        (
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum",
            Permanent,
            Code::ContextTooLong,
        ),
        (
            "INVALID_ARGUMENT",
            "The input token count is fine",
            Permanent,
            Code::BadRequest,
        ),
        (
            "INVALID_ARGUMENT",
            "value exceeds range",
            Permanent,
            Code::BadRequest,
        ),
        // Billing or region: the project's wall, not the request's.
        (
            "FAILED_PRECONDITION",
            "Gemini API free tier is not available in your country. Please enable billing on your project",
            Permanent,
            Code::QuotaExhausted,
        ),
        (
            "FAILED_PRECONDITION",
            "User location is not supported for the API use.",
            Permanent,
            Code::QuotaExhausted,
        ),
        // Any other precondition is the request's: a file still processing.
        (
            "FAILED_PRECONDITION",
            "The File cxgja95z0ak1 is not in an ACTIVE state and usage is not allowed.",
            Permanent,
            Code::BadRequest,
        ),
        ("FAILED_PRECONDITION", "", Permanent, Code::BadRequest),
        ("OUT_OF_RANGE", "", Permanent, Code::BadRequest),
        ("PERMISSION_DENIED", "", Permanent, Code::Auth),
        (
            "PERMISSION_DENIED",
            "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
            Permanent,
            Code::Auth,
        ),
        // Vertex AI's denial of the route's own credential.
        (
            "PERMISSION_DENIED",
            "Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/p/locations/us-central1/publishers/google/models/gemini-pro' (or it may not exist).",
            Permanent,
            Code::Auth,
        ),
        // One resource the request names, not the key.
        (
            "PERMISSION_DENIED",
            "You do not have permission to access the File abc123 or it may not exist.",
            Permanent,
            Code::BadRequest,
        ),
        (
            "PERMISSION_DENIED",
            "CachedContent not found (or permission denied)",
            Permanent,
            Code::BadRequest,
        ),
        ("UNAUTHENTICATED", "", Permanent, Code::Auth),
        ("NOT_FOUND", "", Permanent, Code::NotFound),
        // The server lacks the operation: the route's, as gRPC's 12.
        (
            "UNIMPLEMENTED",
            "Operation is not implemented, or supported, or enabled.",
            Permanent,
            Code::NotFound,
        ),
        // What the route lacks: a tuned model's endpoint, a model.
        (
            "NOT_FOUND",
            "Endpoint `projects/575157790123/locations/us-central1/endpoints/7070905402157694976` not found.",
            Permanent,
            Code::NotFound,
        ),
        (
            "NOT_FOUND",
            "Publisher model `google/models/gemini-x` was not found or your project does not have access to it.",
            Permanent,
            Code::NotFound,
        ),
        // A cache the request names, gone (Vertex AI): the request's.
        (
            "NOT_FOUND",
            "Not found: cached content metadata for 7352260532100923392.",
            Permanent,
            Code::BadRequest,
        ),
        (
            "NOT_FOUND",
            "Cached content 123 is not found.",
            Permanent,
            Code::BadRequest,
        ),
        // The server cancelled it: an answer read was never our cancel.
        (
            "CANCELLED",
            "The operation was cancelled.",
            Transient,
            Code::ProviderUnavailable,
        ),
    ];
    for (status, message, class, code) in rows {
        let body =
            format!(r#"{{"error":{{"code":418,"message":"{message}","status":"{status}"}}}}"#);
        for http in [418, 503] {
            let failure = classify_error(Provider::Gemini, body.as_bytes(), cx(Some(http), None));
            assert_eq!(
                (failure.class(), failure.code()),
                (class, code),
                "{status} {message} {http}"
            );
        }
    }
    let body = br#"{"error":{"code":503,"message":"?","status":"NEW_STATUS"}}"#;
    let failure = classify_error(Provider::Gemini, body, cx(Some(503), None));
    assert_eq!(failure.code(), Code::ProviderUnavailable);
    // Inside a stream there is no status: the one the body echoes decides
    // (it used to be `unknown`), and with none, nothing is known.
    let failure = classify_error(Provider::Gemini, body, cx(None, None));
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Transient, Code::ProviderUnavailable)
    );
    let bare = br#"{"error":{"message":"?","status":"NEW_STATUS"}}"#;
    let failure = classify_error(Provider::Gemini, bare, cx(None, None));
    assert_eq!(
        (failure.class(), failure.code()),
        (Class::Permanent, Code::Unknown)
    );
}

/// Gemini's 501 UNIMPLEMENTED is the route's: not retried nor counted as
/// the route failing, another route tried. The same whether it is the
/// answer, inside a stream or a JSON-array element, and through the
/// OpenAI-compatible endpoint (the body met there,
/// google-gemini/deprecated-generative-ai-python#625).
#[test]
fn a_gemini_unimplemented_is_what_the_route_lacks() {
    let unimplemented = r#"{"error":{"code":501,"message":"Operation is not implemented, or supported, or enabled.","status":"UNIMPLEMENTED"}}"#;
    let array = format!("[{unimplemented}]");
    for (provider, body, status) in [
        (Provider::Gemini, unimplemented, Some(501)),
        (Provider::Gemini, unimplemented, None),
        (Provider::Gemini, &array[..], Some(501)),
        (Provider::Gemini, &array[..], None),
        (Provider::OpenAi, &array[..], Some(501)),
    ] {
        let failure = classify_error(provider, body.as_bytes(), cx(status, None));
        let what = format!("{provider:?} {status:?} {body}");
        assert_eq!(
            (failure.class(), failure.code(), failure.action()),
            (Class::Permanent, Code::NotFound, Action::Surface),
            "{what}"
        );
        assert_eq!(failure.scope(), Scope::Route, "{what}");
        assert!(failure.moves_route(), "{what}");
        assert_eq!(failure.provider_type(), Some("UNIMPLEMENTED"), "{what}");
    }
}

/// A Vertex AI cache the request names, gone after its TTL, is the
/// request's: another route has no such cache either. A tuned model's
/// endpoint not found stays what the route lacks.
#[test]
fn a_gone_vertex_cache_is_the_requests() {
    let cache = br#"{"error":{"code":404,"message":"Not found: cached content metadata for 7352260532100923392.","status":"NOT_FOUND"}}"#;
    for status in [Some(404), None] {
        let failure = classify_error(Provider::Gemini, cache, cx(status, None));
        assert_eq!(failure.code(), Code::BadRequest, "{status:?}");
        assert_eq!(failure.scope(), Scope::Request, "{status:?}");
        assert!(!failure.moves_route(), "{status:?}");
        assert_eq!(failure.provider_type(), Some("NOT_FOUND"), "{status:?}");
    }
    let endpoint = br#"{"error":{"code":404,"message":"Endpoint `projects/575157790123/locations/us-central1/endpoints/7070905402157694976` not found.","status":"NOT_FOUND"}}"#;
    let failure = classify_error(Provider::Gemini, endpoint, cx(Some(404), None));
    assert_eq!(failure.code(), Code::NotFound);
    assert!(failure.moves_route());
}

/// A 499 CANCELLED that seawall reads was cancelled by the server, not
/// by seawall's client (which would not be reading): transient, not a
/// fault of the request.
#[test]
fn a_gemini_cancelled_answer_is_the_servers() {
    let cancelled =
        br#"{"error":{"code":499,"message":"The operation was cancelled.","status":"CANCELLED"}}"#;
    for status in [Some(499), None] {
        let failure = classify_error(Provider::Gemini, cancelled, cx(status, None));
        assert_eq!(
            (failure.class(), failure.code(), failure.action()),
            (Class::Transient, Code::ProviderUnavailable, Action::Retry),
            "{status:?}"
        );
        assert_eq!(failure.scope(), Scope::Route, "{status:?}");
    }
}

/// Walls of the project, not the request: depleted prepay credits (HTTP
/// 402 with RESOURCE_EXHAUSTED) and FAILED_PRECONDITION (billing or region)
/// are not retried and move to another route. A 429 RESOURCE_EXHAUSTED is
/// still a rate limit.
#[test]
fn gemini_billing_walls() {
    let prepay = br#"{"error":{"code":402,"message":"Your prepayment credits are depleted. Please go to AI Studio at https://ai.studio/projects to manage your project and billing. Learn more at https://ai.google.dev/gemini-api/docs/billing#prepay.","status":"RESOURCE_EXHAUSTED"}}"#;
    let region = br#"{"error":{"code":400,"message":"Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.","status":"FAILED_PRECONDITION"}}"#;
    for (status, body) in [(402, &prepay[..]), (400, &region[..])] {
        let failure = classify_error(Provider::Gemini, body, cx(Some(status), None));
        assert_eq!(
            (failure.class(), failure.code(), failure.action()),
            (Class::Permanent, Code::QuotaExhausted, Action::Surface),
            "{status}"
        );
        assert!(failure.moves_route(), "{status}");
    }
    let failure = classify_error(Provider::Gemini, prepay, cx(Some(429), None));
    assert_eq!(
        (failure.code(), failure.action()),
        (Code::RateLimited, Action::Retry)
    );
}

#[test]
fn gemini_part_fields() {
    use seawall_core::provider::gemini::{PartField, part_field};
    assert_eq!(part_field("text"), PartField::Text);
    assert_eq!(part_field("thought"), PartField::Thought);
    for name in ["thoughtSignature", "partMetadata", "videoMetadata"] {
        assert_eq!(part_field(name), PartField::Metadata, "{name}");
    }
    for name in ["functionCall", "inlineData", "executableCode", "newKind"] {
        assert_eq!(part_field(name), PartField::Answer, "{name}");
    }
}

#[test]
fn a_gemini_answer_counts_parts_that_are_not_thoughts() {
    let gemini = |body: &str| answer(Provider::Gemini, body);
    let text = r#"{"candidates":[{"content":{"parts":[{"text":"Hi","thoughtSignature":"x"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3}}"#;
    assert_eq!(
        gemini(text),
        r#"answer Some((Complete, "STOP")) Some((2, 3))"#
    );
    // A thought is the model working; `thought: false` is an answer.
    let thought = r#"{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}]},"finishReason":"STOP"}]}"#;
    assert_eq!(gemini(thought), r#"fail empty_response Some("STOP")"#);
    let not_thought = r#"{"candidates":[{"content":{"parts":[{"thought":false,"text":"Hi"}]},"finishReason":"STOP"}]}"#;
    assert!(
        gemini(not_thought).starts_with("answer"),
        "{}",
        gemini(not_thought)
    );
    // A function call is an answer; empty text or only metadata is not.
    let call = r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP"}]}"#;
    assert!(gemini(call).starts_with("answer"));
    let nothing = r#"{"candidates":[{"content":{"parts":[{"text":""},{"videoMetadata":{"fps":1}}]},"finishReason":"STOP"}]}"#;
    assert_eq!(gemini(nothing), r#"fail empty_response Some("STOP")"#);
    let no_content = r#"{"candidates":[{"finishReason":"STOP"}]}"#;
    assert_eq!(gemini(no_content), r#"fail empty_response Some("STOP")"#);
    // Later parts and candidates count; the first candidate's finish is the finish.
    let later = r#"{"candidates":[{"content":{"parts":[{"text":""},{"text":"Hi"}]},"finishReason":"MAX_TOKENS"},{"finishReason":"STOP"}]}"#;
    assert_eq!(
        gemini(later),
        r#"answer Some((Truncated, "MAX_TOKENS")) None"#
    );
    // A safety stop is a filter even with text; a blocked prompt too.
    let safety =
        r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"SAFETY"}]}"#;
    assert_eq!(gemini(safety), r#"fail content_filtered Some("SAFETY")"#);
    let blocked = r#"{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}"#;
    assert_eq!(
        gemini(blocked),
        r#"fail content_filtered Some("PROHIBITED_CONTENT")"#
    );
    // Any one of candidates, feedback or usage makes it Gemini's shape;
    // usage alone is an empty answer only where an answer must be.
    let usage_only = r#"{"usageMetadata":{"promptTokenCount":2}}"#;
    assert_eq!(gemini(usage_only), "bare empty_response");
    assert_eq!(gemini(r#"{"candidates":[]}"#), "fail empty_response None");
    assert_eq!(gemini(r#"{"embedding":{"values":[0.5]}}"#), "other shape");
}

#[test]
fn responses_events_and_output_items() {
    use seawall_core::provider::openai_responses::{
        OutputItem, StreamEvent, output_item, stream_event,
    };
    assert_eq!(output_item("message"), OutputItem::Message);
    assert_eq!(output_item("reasoning"), OutputItem::Reasoning);
    // An MCP server's tool list comes before the model acts: no answer.
    assert_eq!(output_item("mcp_list_tools"), OutputItem::Reasoning);
    for ty in ["function_call", "web_search_call", "new_item"] {
        assert_eq!(output_item(ty), OutputItem::Act, "{ty}");
    }
    let rows = [
        ("response.output_text.delta", StreamEvent::TextDelta),
        ("response.refusal.delta", StreamEvent::RefusalDelta),
        (
            "response.function_call_arguments.delta",
            StreamEvent::ActDelta,
        ),
        (
            "response.custom_tool_call_input.delta",
            StreamEvent::ActDelta,
        ),
        ("response.audio.delta", StreamEvent::ActDelta),
        ("response.output_item.added", StreamEvent::Item),
        ("response.output_item.done", StreamEvent::Item),
        ("response.completed", StreamEvent::Completed),
        ("response.incomplete", StreamEvent::Incomplete),
        ("response.failed", StreamEvent::Failed),
        ("error", StreamEvent::Error),
        ("keepalive", StreamEvent::KeepAlive),
        ("response.created", StreamEvent::Lifecycle),
        (
            "response.reasoning_summary_text.delta",
            StreamEvent::ReasoningDelta,
        ),
        ("response.reasoning_text.delta", StreamEvent::ReasoningDelta),
        (
            "response.reasoning_summary_part.added",
            StreamEvent::Lifecycle,
        ),
        ("something.else", StreamEvent::Unknown),
        ("", StreamEvent::Unknown),
    ];
    for (ty, event) in rows {
        assert_eq!(stream_event(ty), event, "{ty}");
    }
}

/// OpenAI errors inside a stream: no status, the declared type (or, for
/// the Responses API, the code alone) decides.
#[test]
fn openai_in_stream_error_types() {
    use Class::*;
    let rows = [
        ("server_error", "", Transient, Code::ProviderUnavailable),
        ("internal_error", "", Transient, Code::ProviderUnavailable),
        ("api_error", "", Transient, Code::ProviderUnavailable),
        ("overloaded_error", "", Transient, Code::Overloaded),
        ("overloaded", "", Transient, Code::Overloaded),
        ("rate_limit_exceeded", "", Transient, Code::RateLimited),
        ("rate_limit_error", "", Transient, Code::RateLimited),
        ("requests", "", Transient, Code::RateLimited),
        ("tokens", "", Transient, Code::RateLimited),
        ("timeout", "", Transient, Code::Timeout),
        ("timeout_error", "", Transient, Code::Timeout),
        ("invalid_request_error", "", Permanent, Code::BadRequest),
        (
            "mystery",
            "rate_limit_exceeded",
            Transient,
            Code::RateLimited,
        ),
        ("mystery", "other", Permanent, Code::Unknown),
        ("", "server_error", Transient, Code::ProviderUnavailable),
        ("insufficient_quota", "", Permanent, Code::QuotaExhausted),
        ("", "insufficient_quota", Permanent, Code::QuotaExhausted),
        (
            "",
            "context_length_exceeded",
            Permanent,
            Code::ContextTooLong,
        ),
        ("content_filter", "", Policy, Code::ContentFiltered),
        (
            "",
            "content_policy_violation",
            Policy,
            Code::ContentFiltered,
        ),
        // The code is the more precise of the two.
        (
            "tokens",
            "rate_limit_exceeded",
            Transient,
            Code::RateLimited,
        ),
        (
            "invalid_request_error",
            "image_file_not_found",
            Permanent,
            Code::NotFound,
        ),
        (
            "service_unavailable_error",
            "",
            Transient,
            Code::ProviderUnavailable,
        ),
    ];
    for (ty, code, class, expected) in rows {
        let body = format!(r#"{{"error":{{"message":"m","type":"{ty}","code":"{code}"}}}}"#);
        let failure = classify_error(Provider::OpenAi, body.as_bytes(), cx(None, None));
        assert_eq!(
            (failure.class(), failure.code()),
            (class, expected),
            "{ty:?} {code:?}"
        );
    }
}

/// What servers that speak OpenAI's wire write in their error bodies, in
/// a stream (no status) and as an answer's body (with one): each read by
/// what it declares, its message kept.
#[test]
fn openai_compatible_error_shapes() {
    use Class::*;
    let rows: [(&str, Option<u16>, Class, Code, &str); 16] = [
        // A member named twice is read twice, not an error that leaves
        // the body unread.
        (
            r#"{"error":{"code":403,"message":"flagged twice","metadata":{"reasons":[],"reasons":["violence"]}}}"#,
            Some(403),
            Policy,
            Code::ContentFiltered,
            "flagged twice",
        ),
        // OpenRouter's moderation: a 403 that is the request's content,
        // not the key (it would close the route until a reset by hand).
        (
            r#"{"error":{"code":403,"message":"openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for \"harassment\".","metadata":{"reasons":["harassment"],"flagged_input":"...","provider_name":"OpenAI","model_slug":"openai/gpt-4o"}}}"#,
            Some(403),
            Policy,
            Code::ContentFiltered,
            "requires moderation",
        ),
        (
            r#"{"error":{"code":403,"message":"flagged","metadata":{"reasons":["violence"],"flagged_input":"..."}},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#,
            None,
            Policy,
            Code::ContentFiltered,
            "flagged",
        ),
        // A 403 without a moderation flag is still the key's.
        (
            r#"{"error":{"code":403,"message":"Key disabled","metadata":{}}}"#,
            Some(403),
            Permanent,
            Code::Auth,
            "Key disabled",
        ),
        // Groq: the model wrote a call the server could not parse.
        (
            r#"{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=f>{}"}}"#,
            Some(400),
            ModelFixable,
            Code::BadArguments,
            "Failed to call a function",
        ),
        (
            r#"{"error":{"message":"Failed to call a function.","type":"invalid_request_error","code":"tool_use_failed"}}"#,
            None,
            ModelFixable,
            Code::BadArguments,
            "Failed to call a function",
        ),
        // text-generation-inference: the error a plain message, its kind
        // beside it, in a stream and as a body.
        (
            r#"{"error":"Model is overloaded","error_type":"overloaded"}"#,
            None,
            Transient,
            Code::Overloaded,
            "Model is overloaded",
        ),
        (
            r#"{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}"#,
            None,
            Transient,
            Code::ProviderUnavailable,
            "Request failed during generation",
        ),
        (
            r#"{"error":"Request failed during generation: Server error: CUDA out of memory","error_type":"generation"}"#,
            Some(424),
            Transient,
            Code::ProviderUnavailable,
            "Request failed during generation",
        ),
        (
            r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096","error_type":"validation"}"#,
            None,
            Permanent,
            Code::BadRequest,
            "Input validation error",
        ),
        (
            r#"{"error":"Input validation error: `temperature` must be strictly positive","error_type":"validation"}"#,
            Some(422),
            Permanent,
            Code::BadRequest,
            "Input validation error",
        ),
        // vLLM's and FastChat's error object, as the body itself.
        (
            r#"{"object":"error","message":"The model `m` does not exist.","type":"NotFoundError","param":null,"code":404}"#,
            None,
            Permanent,
            Code::NotFound,
            "does not exist",
        ),
        (
            r#"{"object":"error","message":"engine dead","type":"InternalServerError","param":null,"code":500}"#,
            None,
            Transient,
            Code::ProviderUnavailable,
            "engine dead",
        ),
        // Members of another shape than expected beside the error leave
        // it readable.
        (
            r#"{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded","metadata":"opaque"}}"#,
            None,
            Transient,
            Code::RateLimited,
            "slow down",
        ),
        (
            r#"{"error":{"message":"slow down","type":429,"code":"rate_limit_exceeded"}}"#,
            None,
            Transient,
            Code::RateLimited,
            "slow down",
        ),
        (
            r#"{"error":{"message":"The server had an error","type":"server_error","code":{"id":7}},"message":{"x":1},"type":[1],"code":{"id":7}}"#,
            None,
            Transient,
            Code::ProviderUnavailable,
            "The server had an error",
        ),
    ];
    for (body, status, class, code, message) in rows {
        let failure = classify_error(Provider::OpenAi, body.as_bytes(), cx(status, None));
        assert_eq!((failure.class(), failure.code()), (class, code), "{body}");
        assert!(
            failure.message().is_some_and(|m| m.contains(message)),
            "{body}: {:?}",
            failure.message()
        );
    }
}

/// The Responses API's `ResponseError.code` enum, every value, as a
/// failed response declares it (no status, no type): none falls to
/// `unknown`.
#[test]
fn responses_error_codes() {
    use Class::*;
    let rows = [
        ("server_error", Transient, Code::ProviderUnavailable),
        ("rate_limit_exceeded", Transient, Code::RateLimited),
        // A prompt that failed validation, unless its message says it
        // was flagged (below): OpenRouter's Responses API names every
        // failed validation so.
        ("invalid_prompt", Permanent, Code::BadRequest),
        ("bio_policy", Policy, Code::ContentFiltered),
        ("cyber_policy", Policy, Code::ContentFiltered),
        ("vector_store_timeout", Transient, Code::Timeout),
        ("invalid_image", Permanent, Code::BadRequest),
        ("invalid_image_format", Permanent, Code::BadRequest),
        ("invalid_base64_image", Permanent, Code::BadRequest),
        ("invalid_image_url", Permanent, Code::BadRequest),
        ("image_too_large", Permanent, Code::RequestTooLarge),
        ("image_too_small", Permanent, Code::BadRequest),
        ("image_parse_error", Permanent, Code::BadRequest),
        ("data_residency_mismatch", Permanent, Code::BadRequest),
        (
            "image_content_policy_violation",
            Policy,
            Code::ContentFiltered,
        ),
        ("invalid_image_mode", Permanent, Code::BadRequest),
        ("image_file_too_large", Permanent, Code::RequestTooLarge),
        ("unsupported_image_media_type", Permanent, Code::BadRequest),
        ("empty_image_file", Permanent, Code::BadRequest),
        ("failed_to_download_image", Permanent, Code::BadRequest),
        ("image_file_not_found", Permanent, Code::NotFound),
    ];
    for (code, class, expected) in rows {
        let body = format!(
            r#"{{"object":"response","status":"failed","error":{{"code":"{code}","message":"m"}},"output":[]}}"#
        );
        let AnswerCheck::Fail(failure) = check_answer(Provider::OpenAiResponses, body.as_bytes())
        else {
            panic!("{code}: not a failure");
        };
        assert_eq!(
            (failure.class(), failure.code()),
            (class, expected),
            "{code}"
        );
        assert_eq!(failure.provider_code(), Some(code));
    }
    // A failed response that names no error (the API allows `null`): the
    // provider's own failure to generate, as a 500, retried.
    for error in ["null", "{}"] {
        let body =
            format!(r#"{{"object":"response","status":"failed","error":{error},"output":[]}}"#);
        let AnswerCheck::Fail(failure) = check_answer(Provider::OpenAiResponses, body.as_bytes())
        else {
            panic!("{error}: not a failure");
        };
        assert_eq!(
            (failure.class(), failure.code()),
            (Transient, Code::ProviderUnavailable),
            "{error}"
        );
    }
    // A policy code is a policy outcome with a status too (the chat API
    // answers a flagged prompt with a 400 `invalid_prompt`).
    let flagged = br#"{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}"#;
    let failure = classify_error(Provider::OpenAi, flagged, cx(Some(400), None));
    assert_eq!(failure.code(), Code::ContentFiltered);
    // The same code for a prompt that only failed validation (OpenRouter's
    // Responses API), with a status and without one.
    let invalid = br#"{"error":{"code":"invalid_prompt","message":"Invalid request: input must not be empty"},"metadata":null}"#;
    for status in [Some(400), None] {
        let failure = classify_error(Provider::OpenAi, invalid, cx(status, None));
        assert_eq!(
            (failure.class(), failure.code()),
            (Class::Permanent, Code::BadRequest),
            "{status:?}"
        );
    }
    let failed = br#"{"object":"response","status":"failed","error":{"code":"invalid_prompt","message":"Invalid prompt: we've limited access to this content for safety reasons."},"output":[]}"#;
    let AnswerCheck::Fail(failure) = check_answer(Provider::OpenAiResponses, failed) else {
        panic!("not a failure");
    };
    assert_eq!(failure.code(), Code::ContentFiltered);
}

#[test]
fn openai_error_messages_decide_only_where_they_can() {
    let failure = |status, message: &str| {
        let body = format!(r#"{{"error":{{"message":"{message}","type":"x","code":null}}}}"#);
        classify_error(Provider::OpenAi, body.as_bytes(), cx(status, None)).code()
    };
    let context = "This model's maximum context length is 8192 tokens";
    assert_eq!(failure(Some(400), context), Code::ContextTooLong);
    assert_eq!(failure(None, context), Code::ContextTooLong);
    assert_eq!(failure(Some(500), context), Code::ProviderUnavailable);
    let large = "Request too large for gpt-4o on tokens per min (TPM): Limit 30000";
    assert_eq!(failure(Some(429), large), Code::RequestTooLarge);
    assert_eq!(failure(Some(429), "Request too large"), Code::RateLimited);
    assert_eq!(failure(Some(429), "tokens per min"), Code::RateLimited);
    assert_eq!(failure(Some(400), "bad"), Code::BadRequest);
    assert_eq!(failure(Some(503), "bad"), Code::ProviderUnavailable);
    // OpenAI's server-error text, declared with neither type nor code
    // (the Responses `error` event allows `"code": null`): the server's
    // fault, as the `server_error` that carries it elsewhere says.
    let nothing_declared = |message: &str| {
        let body = format!(r#"{{"error":{{"message":"{message}","type":null,"code":null}}}}"#);
        classify_error(Provider::OpenAi, body.as_bytes(), cx(None, None)).code()
    };
    for server in [
        "The server had an error while processing your request. Sorry about that!",
        "An error occurred while processing your request. You can retry your request.",
    ] {
        assert_eq!(
            nothing_declared(server),
            Code::ProviderUnavailable,
            "{server}"
        );
        assert_eq!(failure(Some(400), server), Code::BadRequest, "{server}");
    }
    assert_eq!(nothing_declared("bad"), Code::Unknown);
}

/// A Gemini error keeps its status, numeric code and message; a per-day
/// quota is a wall whose per-minute `RetryInfo` is no hint; a bad key is
/// `auth` whatever the status says.
#[test]
fn gemini_error_details() {
    let body = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
    let limited = classify_error(Provider::Gemini, body, cx(Some(429), None));
    assert_eq!(limited.code(), Code::RateLimited);
    assert_eq!(limited.retry_after(), Some(Duration::from_secs(26)));
    assert_eq!(limited.provider_type(), Some("RESOURCE_EXHAUSTED"));
    assert_eq!(limited.provider_code(), Some("429"));
    assert_eq!(limited.message(), Some("Quota exceeded"));
    let per_day = br#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}"#;
    let wall = classify_error(Provider::Gemini, per_day, cx(Some(429), None));
    assert_eq!(
        (wall.code(), wall.retry_after()),
        (Code::QuotaExhausted, None)
    );
    let bad_key = br#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#;
    assert_eq!(
        classify_error(Provider::Gemini, bad_key, cx(Some(400), None)).code(),
        Code::Auth
    );
}

/// Every documented Gemini `finishReason` means what Google says it
/// means: policy blocks (text or image) are filtered, limits and misses
/// truncate, the model's bad output is malformed, a request missing its
/// thought signatures is rejected, `OTHER` ("unknown reason") stops the
/// generation as an abort does; only reasons added later are unknown.
#[test]
fn gemini_finish_reasons() {
    use seawall_core::FinishKind::*;
    use seawall_core::provider::gemini::finish_kind;
    let rows = [
        ("STOP", Complete),
        ("MAX_TOKENS", Truncated),
        ("TOO_MANY_TOOL_CALLS", Truncated),
        ("NO_IMAGE", Truncated),
        ("IMAGE_OTHER", Truncated),
        ("SAFETY", Filtered),
        ("RECITATION", Filtered),
        ("LANGUAGE", Filtered),
        ("BLOCKLIST", Filtered),
        ("PROHIBITED_CONTENT", Filtered),
        ("SPII", Filtered),
        ("IMAGE_SAFETY", Filtered),
        ("IMAGE_PROHIBITED_CONTENT", Filtered),
        ("IMAGE_RECITATION", Filtered),
        ("MODEL_ARMOR", Filtered),
        ("MALFORMED_FUNCTION_CALL", Malformed),
        ("UNEXPECTED_TOOL_CALL", Malformed),
        ("MALFORMED_RESPONSE", Malformed),
        ("MISSING_THOUGHT_SIGNATURE", Rejected),
        ("OTHER", Aborted),
        ("FINISH_REASON_UNSPECIFIED", Aborted),
        ("SOMETHING_NEW", Other),
    ];
    for (reason, kind) in rows {
        assert_eq!(finish_kind(reason), kind, "{reason}");
    }

    // What a unary answer with each comes to, without parts and with text.
    let gemini = |reason: &str, parts: &str| {
        let body = format!(
            r#"{{"candidates":[{{"content":{{"role":"model"{parts}}},"finishReason":"{reason}","index":0}}],"usageMetadata":{{"promptTokenCount":12,"totalTokenCount":12}}}}"#
        );
        answer(Provider::Gemini, &body)
    };
    let text = r#","parts":[{"text":"Here is your image:"}]"#;
    for reason in ["IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"] {
        let blocked = format!(r#"fail content_filtered Some("{reason}")"#);
        assert_eq!(gemini(reason, ""), blocked, "never retried as empty");
        assert_eq!(gemini(reason, text), blocked, "never a success");
    }
    for reason in ["NO_IMAGE", "IMAGE_OTHER", "TOO_MANY_TOOL_CALLS"] {
        let marked = format!(r#"answer Some((Truncated, "{reason}")) Some((12, 0))"#);
        assert_eq!(gemini(reason, ""), marked, "delivered, not retried");
        assert_eq!(gemini(reason, text), marked, "delivered, not complete");
    }
    assert_eq!(
        gemini("MISSING_THOUGHT_SIGNATURE", ""),
        r#"fail bad_request Some("MISSING_THOUGHT_SIGNATURE")"#
    );
    assert_eq!(
        gemini("MALFORMED_RESPONSE", ""),
        r#"fail bad_arguments Some("MALFORMED_RESPONSE")"#
    );
}

#[test]
fn responses_finish_reasons() {
    use seawall_core::FinishKind;
    use seawall_core::provider::openai_responses::finish_kind;
    let rows = [
        ("completed", FinishKind::Complete),
        ("max_output_tokens", FinishKind::Truncated),
        ("content_filter", FinishKind::Filtered),
        ("refusal", FinishKind::Refused),
        // The statuses that are no whole answer, passed as the status is.
        ("incomplete", FinishKind::Truncated),
        ("failed", FinishKind::Aborted),
        ("cancelled", FinishKind::Aborted),
        ("something_new", FinishKind::Other),
    ];
    for (reason, kind) in rows {
        assert_eq!(finish_kind(reason), kind, "{reason}");
        assert_eq!(FinishKind::openai_responses(reason), kind, "{reason}");
        assert_eq!(
            FinishKind::for_provider(Provider::OpenAiResponses, reason),
            kind
        );
        // A status every Responses answer carries costs no allocation.
        if reason != "something_new" {
            let finish = seawall_core::Finish::new(kind, reason);
            assert!(
                matches!(finish.reason, std::borrow::Cow::Borrowed(_)),
                "{reason}"
            );
        }
    }
}

#[test]
fn a_responses_answer_by_status_and_output() {
    let responses = |body: &str| answer(Provider::OpenAiResponses, body);
    let message = |parts: &str| {
        format!(
            r#"{{"object":"response","status":"completed","output":[{{"type":"reasoning","summary":[]}},{{"type":"message","content":{parts}}}],"usage":{{"input_tokens":4,"output_tokens":6}}}}"#
        )
    };
    assert_eq!(
        responses(&message(r#"[{"type":"output_text","text":"Hi"}]"#)),
        r#"answer Some((Complete, "completed")) Some((4, 6))"#
    );
    // Text in a later part counts; an empty one does not.
    assert_eq!(
        responses(&message(
            r#"[{"type":"output_text","text":""},{"type":"output_text","text":"Hi"}]"#
        )),
        r#"answer Some((Complete, "completed")) Some((4, 6))"#
    );
    assert_eq!(
        responses(&message(r#"[{"type":"output_text","text":""}]"#)),
        r#"fail empty_response Some("completed")"#
    );
    // A refusal part is a refusal, even beside text.
    assert_eq!(
        responses(&message(
            r#"[{"type":"output_text","text":"Hi"},{"type":"refusal","refusal":"No."}]"#
        )),
        "fail refused None"
    );
    // A tool call is content; reasoning alone is not.
    let call = r#"{"object":"response","status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}"}]}"#;
    assert!(responses(call).starts_with("answer"), "{}", responses(call));
    let thinking = r#"{"object":"response","status":"completed","output":[{"type":"reasoning","summary":[]}]}"#;
    assert_eq!(
        responses(thinking),
        r#"fail empty_response Some("completed")"#
    );
    // Incomplete: cut at the limit is delivered, a filter is a failure.
    let cut = r#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#;
    assert_eq!(
        responses(cut),
        r#"answer Some((Truncated, "max_output_tokens")) None"#
    );
    let filtered = r#"{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}]}"#;
    assert_eq!(
        responses(filtered),
        r#"fail content_filtered Some("content_filter")"#
    );
    let failed = r#"{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"}}"#;
    assert_eq!(
        responses(failed),
        r#"fail provider_unavailable Some("server_error")"#
    );
    let queued = r#"{"object":"response","status":"queued","output":[]}"#;
    assert_eq!(responses(queued), "pending");
    // Cancelled is terminal: nothing to poll for.
    let cancelled = r#"{"object":"response","status":"cancelled","background":true,"error":null,"output":[],"usage":null}"#;
    assert_eq!(responses(cancelled), r#"fail cancelled Some("cancelled")"#);
    assert_eq!(
        responses(r#"{"object":"list","status":"completed"}"#),
        "other shape"
    );
    assert_eq!(responses(r#"{"object":"response"}"#), "other shape");
}

#[test]
fn an_openai_refusal_or_filter_decides_the_answer() {
    let refusal =
        r#"{"choices":[{"message":{"content":null,"refusal":"I can't."},"finish_reason":"stop"}]}"#;
    assert_eq!(answer(Provider::OpenAi, refusal), "fail refused None");
    let empty_refusal =
        r#"{"choices":[{"message":{"content":"Hi","refusal":""},"finish_reason":"stop"}]}"#;
    assert!(answer(Provider::OpenAi, empty_refusal).starts_with("answer"));
    let audio =
        r#"{"choices":[{"message":{"content":null,"audio":{"id":"a"}},"finish_reason":"stop"}]}"#;
    assert!(answer(Provider::OpenAi, audio).starts_with("answer"));
}

/// One choice's (or candidate's) `stop` does not hide another's cut: an
/// answer with several is whole only when each is, as in a stream.
#[test]
fn a_cut_choice_is_not_hidden_behind_a_whole_one() {
    let openai = |first: &str, second: &str| {
        answer(
            Provider::OpenAi,
            &format!(
                r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"A"}},"finish_reason":"{first}"}},{{"index":1,"message":{{"role":"assistant","content":"B"}},"finish_reason":"{second}"}}],"usage":{{"prompt_tokens":2,"completion_tokens":4}}}}"#
            ),
        )
    };
    assert_eq!(
        openai("stop", "length"),
        r#"answer Some((Truncated, "length")) Some((2, 4))"#
    );
    assert_eq!(
        openai("length", "stop"),
        r#"answer Some((Truncated, "length")) Some((2, 4))"#
    );
    assert_eq!(
        openai("stop", "stop"),
        r#"answer Some((Complete, "stop")) Some((2, 4))"#
    );
    // A choice the provider aborted fails the answer whatever the others.
    assert!(openai("stop", "abort").starts_with("fail provider_unavailable"));
    let gemini = answer(
        Provider::Gemini,
        r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"A"}]},"finishReason":"STOP","index":0},{"content":{"role":"model","parts":[{"text":"B"}]},"finishReason":"MAX_TOKENS","index":1}]}"#,
    );
    assert_eq!(gemini, r#"answer Some((Truncated, "MAX_TOKENS")) None"#);
    // A candidate (or choice) without its finish was cut, as one answer
    // without it is: not hidden by another's stop.
    let gemini = answer(
        Provider::Gemini,
        r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"A"}]},"finishReason":"STOP"},{"content":{"role":"model","parts":[{"text":"B"}]},"index":1}]}"#,
    );
    assert!(gemini.starts_with("fail truncated"), "{gemini}");
    let openai = answer(
        Provider::OpenAi,
        r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"B"},"finish_reason":null}]}"#,
    );
    assert!(openai.starts_with("fail truncated"), "{openai}");
    // Nor by another's cut, before or after it.
    let choice = |index: u32, finish: &str| {
        format!(
            r#"{{"index":{index},"message":{{"role":"assistant","content":"A"}},"finish_reason":{finish}}}"#
        )
    };
    for finishes in [
        ["\"length\"", "null", "\"stop\""],
        ["\"stop\"", "null", "\"length\""],
        ["null", "\"length\"", "\"stop\""],
    ] {
        let choices: Vec<_> = (0..).zip(finishes).map(|(i, f)| choice(i, f)).collect();
        let body = format!(r#"{{"choices":[{}]}}"#, choices.join(","));
        let read = answer(Provider::OpenAi, &body);
        assert!(read.starts_with("fail truncated"), "{finishes:?}: {read}");
    }
}

/// A lone surrogate escape is valid JSON serde refuses: the answer is the
/// answer, its half character replaced — not broken JSON to ask for (and
/// pay for) again.
#[test]
fn a_lone_surrogate_does_not_break_an_answer() {
    let rows = [
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"cut \ud83d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            r#"answer Some((Complete, "stop")) Some((1, 2))"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"message","content":[{"type":"text","text":"cut \ude00"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}"#,
            r#"answer Some((Complete, "end_turn")) Some((1, 2))"#,
        ),
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"cut \ud83d"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}"#,
            r#"answer Some((Complete, "STOP")) Some((1, 2))"#,
        ),
    ];
    for (provider, body, expected) in rows {
        assert_eq!(answer(provider, body), expected, "{provider}");
    }
    // Broken JSON is still broken with one in it.
    assert!(
        answer(
            Provider::OpenAi,
            r#"{"choices":[{"message":{"content":"\ud83d"#
        )
        .starts_with("fail protocol_violation"),
    );
}

/// The usage a whole answer reports, read alone (for a delivered refusal):
/// in every provider's spelling, and from a body that has both.
#[test]
fn an_answers_usage_is_read_alone() {
    use seawall_core::Usage;
    use seawall_core::provider::answer_usage;
    let rows: [(&str, Option<Usage>); 5] = [
        (
            r#"{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":1}}"#,
            Some(Usage::new(16, 1)),
        ),
        (
            r#"{"type":"message","usage":{"input_tokens":22,"output_tokens":1,"cache_read_input_tokens":100}}"#,
            Some(Usage::new(122, 1)),
        ),
        (
            r#"{"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":0}}"#,
            Some(Usage::new(8, 0)),
        ),
        (
            r#"{"usage":{"prompt_tokens":3,"completion_tokens":1},"usageMetadata":{"promptTokenCount":9}}"#,
            Some(Usage::new(3, 1)),
        ),
        (r#"{"usage":"none"}"#, None),
    ];
    for (body, usage) in rows {
        assert_eq!(answer_usage(body.as_bytes()), usage, "{body}");
    }
}

/// A 2xx answer that fails the check keeps the usage it reported: the
/// provider bills a refused, filtered, empty or failed answer as any other
/// (a reasoning model's whole budget spent thinking), and the receipt's
/// attempt says what it cost.
#[test]
fn a_failed_answer_keeps_its_usage() {
    use seawall_core::Usage;
    use seawall_core::provider::{AnswerCheck, Provider, check_answer};
    let rows = [
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":4096,"completion_tokens_details":{"reasoning_tokens":4096}}}"#,
            Code::EmptyResponse,
            Usage::new(1200, 4096),
        ),
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"parts":[{"text":"hmm","thought":true}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"thoughtsTokenCount":1500,"totalTokenCount":1520}}"#,
            Code::EmptyResponse,
            Usage::new(20, 1500),
        ),
        (
            Provider::Anthropic,
            r#"{"type":"message","content":[],"stop_reason":"refusal","usage":{"input_tokens":22,"output_tokens":1}}"#,
            Code::Refused,
            Usage::new(22, 1),
        ),
        (
            Provider::OpenAiResponses,
            r#"{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},"output":[],"usage":{"input_tokens":900,"output_tokens":310}}"#,
            Code::ProviderUnavailable,
            Usage::new(900, 310),
        ),
    ];
    for (provider, body, code, usage) in rows {
        let AnswerCheck::Fail(failure) = check_answer(provider, body.as_bytes()) else {
            panic!("{provider:?}: not a failure: {body}");
        };
        assert_eq!(failure.code(), code, "{body}");
        assert_eq!(failure.usage(), Some(usage), "{body}");
    }
}

/// A content part that names a member twice is read, not refused: the
/// answer it belongs to is delivered (refused, it was `protocol_violation`,
/// a billed answer asked for again).
#[test]
fn a_part_naming_a_member_twice_is_read() {
    use seawall_core::provider::{AnswerCheck, Provider, check_answer};
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":[{"type":"text","text":"a","text":"b"}]},"finish_reason":"stop"}]}"#;
    assert!(
        matches!(
            check_answer(Provider::OpenAi, body.as_bytes()),
            AnswerCheck::Answer { .. }
        ),
        "{:?}",
        check_answer(Provider::OpenAi, body.as_bytes())
    );
}

/// A bare 429 (no `Retry-After`, no "try again in") whose spent limit
/// resets in six minutes is a quota wall by OpenAI's `x-ratelimit-*`
/// headers; a limit with some left says nothing; the message's own wait
/// comes first.
#[test]
fn a_spent_limits_reset_is_the_wait_of_a_bare_429() {
    let read = |body: &[u8], remaining: &'static str| {
        let mut headers = http::HeaderMap::new();
        headers.insert("x-ratelimit-remaining-requests", remaining.parse().unwrap());
        headers.insert("x-ratelimit-reset-requests", "6m0s".parse().unwrap());
        let cx = ErrorContext {
            status: Some(429),
            hint: RetryHint::for_status(429, &headers, now()),
            ..cx(Some(429), None)
        };
        classify_error(Provider::OpenAi, body, cx)
    };
    let bare = br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let spent = read(bare, "0");
    assert_eq!(
        (spent.class(), spent.code(), spent.reset_at()),
        (
            Class::Permanent,
            Code::QuotaExhausted,
            Some(now() + Duration::from_secs(360))
        )
    );
    let left = read(bare, "5");
    assert_eq!((left.code(), left.retry_after()), (Code::RateLimited, None));
    let told = br#"{"error":{"message":"Rate limit reached. Please try again in 2s.","type":"requests","code":"rate_limit_exceeded"}}"#;
    let told = read(told, "0");
    assert_eq!(
        (told.code(), told.retry_after()),
        (Code::RateLimited, Some(Duration::from_secs(2)))
    );
    // A 503 (no rate limit) with the same headers waits for nothing.
    let mut headers = http::HeaderMap::new();
    headers.insert("x-ratelimit-remaining-requests", "0".parse().unwrap());
    headers.insert("x-ratelimit-reset-requests", "6m0s".parse().unwrap());
    let unavailable = classify_error(
        Provider::OpenAi,
        br#"{"error":{"message":"busy","type":"server_error"}}"#,
        ErrorContext {
            status: Some(503),
            // Even a reset carried to the judgement waits for nothing.
            hint: RetryHint {
                limit_reset: Some(Duration::from_secs(360)),
                ..RetryHint::for_status(503, &headers, now())
            },
            ..cx(Some(503), None)
        },
    );
    assert_eq!(
        (unavailable.code(), unavailable.retry_after()),
        (Code::ProviderUnavailable, None)
    );
}

/// Azure OpenAI's 429 spells its wait out ("Please retry after 86400
/// seconds."): with the `Retry-After` header lost on the way (a proxy),
/// the message alone makes it the quota wall it is, not a blip to retry.
#[test]
fn azures_spelled_out_wait_is_a_quota_wall() {
    let body = br#"{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 86400 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}"#;
    let failure = classify_error(Provider::OpenAi, body, cx(Some(429), None));
    assert_eq!(
        (failure.class(), failure.code(), failure.retry_after()),
        (
            Class::Permanent,
            Code::QuotaExhausted,
            Some(Duration::from_secs(86400))
        )
    );
    let short =
        br#"{"error":{"code":"429","message":"Rate limit is exceeded. Try again in 2 seconds."}}"#;
    let failure = classify_error(Provider::OpenAi, short, cx(Some(429), None));
    assert_eq!(
        (failure.code(), failure.retry_after()),
        (Code::RateLimited, Some(Duration::from_secs(2)))
    );
}

/// An answer that names one of its members twice is read with the later
/// value, as Python's `json`, JavaScript's `JSON.parse` and
/// `serde_json::Value` read it, so as the providers' SDKs read it: read as
/// another shape, it was `protocol_violation`, a billed answer asked for
/// again.
#[test]
fn an_answer_naming_a_member_twice_is_read_with_the_later_value() {
    let rows = [
        // OpenAI chat: the finish, the message, the choices, the usage.
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":null,"finish_reason":"stop"}]}"#,
            r#"answer Some((Complete, "stop")) None"#,
        ),
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"content":""},"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}"#,
            r#"answer Some((Complete, "stop")) None"#,
        ),
        (
            Provider::OpenAi,
            r#"{"choices":[],"choices":[{"index":0,"message":{"content":"Hi"},"finish_reason":"length"}],"usage":null,"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            r#"answer Some((Truncated, "length")) Some((3, 4))"#,
        ),
        // The later value wins the other way too: the earlier text is
        // not the answer's.
        (
            Provider::OpenAi,
            r#"{"choices":[{"index":0,"message":{"content":"Hi"},"message":{"content":""},"finish_reason":"stop"}]}"#,
            r#"fail empty_response Some("stop")"#,
        ),
        // Gemini: the finish, the candidates.
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":null,"finishReason":"STOP","index":0}]}"#,
            r#"answer Some((Complete, "STOP")) None"#,
        ),
        (
            Provider::Gemini,
            r#"{"candidates":[{"content":{"parts":[]},"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1},"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":6}}"#,
            r#"answer Some((Complete, "STOP")) Some((5, 6))"#,
        ),
        // Anthropic: the stop reason, the content.
        (
            Provider::Anthropic,
            r#"{"type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"stop_reason":null,"stop_reason":"end_turn"}"#,
            r#"answer Some((Complete, "end_turn")) None"#,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"message","content":[],"content":[{"type":"text","type":"text","text":"Hi"}],"stop_reason":"end_turn"}"#,
            r#"answer Some((Complete, "end_turn")) None"#,
        ),
        // The Responses API: the status, the output.
        (
            Provider::OpenAiResponses,
            r#"{"object":"response","status":"in_progress","status":"completed","output":[],"output":[{"type":"message","content":[{"type":"output_text","text":"Hi"}]}]}"#,
            r#"answer Some((Complete, "completed")) None"#,
        ),
    ];
    let wrong: Vec<_> = rows
        .iter()
        .map(|(provider, body, expected)| (provider, body, answer(*provider, body), expected))
        .filter(|(_, _, read, expected)| read != *expected)
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}
