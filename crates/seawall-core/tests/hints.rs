//! Retry hints read where providers and the proxies before them write
//! them: a wait said only in the message, a per-day quota's reset, an
//! HTTP-date against the answer's own clock, Azure's header, and a
//! `Retry-After` folded or sent twice.

use std::time::{Duration, SystemTime};

use seawall_core::hint::{RetryHint, parse_text_hint};
use seawall_core::provider::{
    ErrorContext, Provider, QuotaWall, StatusDetails, classify_error, classify_grpc_details,
};
use seawall_core::{Class, Code};

/// 2025-08-24T01:46:40Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_000_000)
}

fn cx(status: Option<u16>) -> ErrorContext {
    ErrorContext {
        status,
        hint: RetryHint::default(),
        quota_wall: QuotaWall::default(),
        now: now(),
    }
}

/// Gemini's wait as its 429 writes it (`gemini/429_limit_zero.http`).
const GEMINI_DELAY: Duration = Duration::new(38, 962_214_405);

/// Gemini writes its wait as "Please retry in 38.962214405s.": read as
/// the other providers' "try again in"; words that are no wait are none.
#[test]
fn gemini_writes_its_wait_as_retry_in() {
    let fixture = include_str!("fixtures/real/gemini/429_limit_zero.http");
    let message = fixture
        .lines()
        .find(|line| line.contains("\"message\""))
        .expect("the fixture's message");
    assert_eq!(parse_text_hint(message), Some(GEMINI_DELAY));
    assert_eq!(
        parse_text_hint("Please retry in 38.962214405s."),
        Some(GEMINI_DELAY)
    );
    assert_eq!(
        parse_text_hint("Retry in 2 minutes."),
        Some(Duration::from_secs(120))
    );
    for nothing in [
        "Please retry in a moment.",
        "retry in 5 parsecs",
        "retry in",
        "retry in s",
    ] {
        assert_eq!(parse_text_hint(nothing), None, "{nothing}");
    }
}

/// A proxy that flattens Gemini's error into OpenAI's shape, or Gemini's
/// own shape without its `RetryInfo`, leaves the message the only place
/// the wait is said: read there, the 429 waits out Gemini's window
/// rather than spending short backoffs inside it.
#[test]
fn a_gemini_429_without_retry_info_keeps_its_wait() {
    let flattened = br#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 38.962214405s.","type":null,"param":null,"code":"429"}}"#;
    let bare = br#"{"error":{"code":429,"message":"You exceeded your current quota.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 38.962214405s.","status":"RESOURCE_EXHAUSTED"}}"#;
    for (provider, body) in [
        (Provider::OpenAi, &flattened[..]),
        (Provider::Gemini, &flattened[..]),
        (Provider::Gemini, &bare[..]),
        (Provider::OpenAi, &bare[..]),
    ] {
        let f = classify_error(provider, body, cx(Some(429)));
        assert_eq!(
            (f.class(), f.code(), f.retry_after()),
            (Class::Transient, Code::RateLimited, Some(GEMINI_DELAY)),
            "{provider}"
        );
    }
}

/// A gRPC RESOURCE_EXHAUSTED with `grpc-message` but no
/// `grpc-status-details-bin`: the message's wait is the hint. `RetryInfo`
/// still wins where it is sent, and a status that is no rate limit reads
/// no wait from its words.
#[test]
fn a_grpc_rate_limit_without_retry_info_reads_its_message() {
    let message = "Quota exceeded for quota metric 'Generate Content API requests per minute'. Please retry in 38.962214405s.";
    let f = classify_grpc_details(8, Some(message), StatusDetails::default(), cx(Some(200)));
    assert_eq!(
        (f.class(), f.code(), f.retry_after()),
        (Class::Transient, Code::RateLimited, Some(GEMINI_DELAY))
    );
    let told = StatusDetails {
        retry_delay: Some(Duration::from_secs(26)),
        ..StatusDetails::default()
    };
    let f = classify_grpc_details(8, Some(message), told, cx(Some(200)));
    assert_eq!(f.retry_after(), Some(Duration::from_secs(26)));
    let f = classify_grpc_details(14, Some(message), StatusDetails::default(), cx(Some(200)));
    assert_eq!(
        (f.code(), f.retry_after()),
        (Code::ProviderUnavailable, None)
    );
}

/// 08:00 UTC on the day `now()` falls on: midnight PST, 2025-08-24.
fn pst_midnight() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_022_400)
}

const PER_DAY: &[u8] = br#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}"#;

/// Gemini's per-day quota resets "at midnight Pacific time": read as
/// UTC−8, the next 08:00 UTC after the wall is met, the very second after
/// one included; a wall met after 08:00 waits for the next day's.
#[test]
fn a_per_day_wall_lifts_at_the_next_midnight_pacific() {
    let day = Duration::from_secs(86_400);
    for (at, reset) in [
        (now(), pst_midnight()),
        (pst_midnight() - Duration::from_secs(1), pst_midnight()),
        (pst_midnight(), pst_midnight() + day),
        (
            pst_midnight() + Duration::from_millis(500),
            pst_midnight() + day,
        ),
        (
            pst_midnight() + day - Duration::from_secs(1),
            pst_midnight() + day,
        ),
    ] {
        let f = classify_error(
            Provider::Gemini,
            PER_DAY,
            ErrorContext {
                now: at,
                ..cx(Some(429))
            },
        );
        assert_eq!(
            (f.class(), f.code(), f.retry_after(), f.reset_at()),
            (Class::Permanent, Code::QuotaExhausted, None, Some(reset)),
            "{at:?}"
        );
    }
}

/// The same over gRPC: a per-day `QuotaFailure` in the status details.
/// A per-minute quota names no reset, nor a limit of zero, which no day's
/// end lifts; a header's wait, where sent, is kept beside the reset.
#[test]
fn a_grpc_per_day_wall_lifts_at_midnight_pacific() {
    let mut per_day = StatusDetails::default();
    per_day.add_quota_id("GenerateRequestsPerDayPerProjectPerModel-FreeTier");
    let f = classify_grpc_details(8, Some("quota"), per_day, cx(Some(200)));
    assert_eq!(
        (f.code(), f.retry_after(), f.reset_at()),
        (Code::QuotaExhausted, None, Some(pst_midnight()))
    );
    let mut zero = per_day;
    zero.add_quota_value("0");
    let f = classify_grpc_details(8, Some("quota"), zero, cx(Some(200)));
    assert_eq!((f.code(), f.reset_at()), (Code::QuotaExhausted, None));
    let told_zero = classify_grpc_details(
        8,
        Some("Quota exceeded for metric: x, limit: 0, model: m"),
        per_day,
        cx(Some(200)),
    );
    assert_eq!(
        (told_zero.code(), told_zero.reset_at()),
        (Code::QuotaExhausted, None)
    );
    let mut per_minute = StatusDetails::default();
    per_minute.add_quota_id("GenerateRequestsPerMinutePerProjectPerModel-FreeTier");
    let f = classify_grpc_details(8, None, per_minute, cx(Some(200)));
    assert_eq!((f.code(), f.reset_at()), (Code::RateLimited, None));
    let pushed = ErrorContext {
        hint: RetryHint {
            after: Some(Duration::from_secs(3600)),
            ..RetryHint::default()
        },
        ..cx(Some(200))
    };
    // The pushback is kept as sent, and the day's reset with it: the
    // later of the two cools the route.
    let f = classify_grpc_details(8, None, per_day, pushed);
    assert_eq!(
        (f.code(), f.retry_after(), f.reset_at()),
        (
            Code::QuotaExhausted,
            Some(Duration::from_secs(3600)),
            Some(pst_midnight())
        )
    );
}

fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    for (name, value) in pairs {
        headers.append(
            http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(value).unwrap(),
        );
    }
    headers
}

fn at(date: &str) -> SystemTime {
    httpdate::parse_http_date(date).unwrap()
}

/// An HTTP-date `Retry-After` is a time on the server's clock: read
/// against the answer's own `Date`, a client clock 30 s fast still waits
/// the 20 s asked (it read no hint at all). Without a `Date`, or with one
/// that does not parse, the local clock as before.
#[test]
fn an_http_date_is_read_against_the_answers_date() {
    let fast = at("Sun, 29 Nov 2026 12:00:30 GMT");
    let sent = headers(&[
        ("date", "Sun, 29 Nov 2026 12:00:00 GMT"),
        ("retry-after", "Sun, 29 Nov 2026 12:00:20 GMT"),
    ]);
    assert_eq!(
        RetryHint::from_headers(&sent, fast).after,
        Some(Duration::from_secs(20))
    );
    // The other two forms RFC 9110 has a recipient read, in both headers.
    let old_forms = headers(&[
        ("date", "Sunday, 29-Nov-26 12:00:00 GMT"),
        ("retry-after", "Sun Nov 29 12:00:20 2026"),
    ]);
    assert_eq!(
        RetryHint::from_headers(&old_forms, fast).after,
        Some(Duration::from_secs(20))
    );
    // A date before the answer's is no wait to honour, as before.
    let past = headers(&[
        ("date", "Sun, 29 Nov 2026 12:00:00 GMT"),
        ("retry-after", "Sun, 29 Nov 2026 11:59:00 GMT"),
    ]);
    assert_eq!(RetryHint::from_headers(&past, fast).after, None);
    // No `Date`, or one that is no date: the local clock decides.
    let slow = at("Sun, 29 Nov 2026 12:00:05 GMT");
    for pairs in [
        &[("retry-after", "Sun, 29 Nov 2026 12:00:20 GMT")][..],
        &[
            ("date", "yesterday"),
            ("retry-after", "Sun, 29 Nov 2026 12:00:20 GMT"),
        ],
    ] {
        assert_eq!(
            RetryHint::from_headers(&headers(pairs), slow).after,
            Some(Duration::from_secs(15)),
            "{pairs:?}"
        );
        assert_eq!(RetryHint::from_headers(&headers(pairs), fast).after, None);
    }
    // Seconds are seconds, whatever the `Date`.
    let seconds = headers(&[
        ("date", "Sun, 29 Nov 2026 12:00:00 GMT"),
        ("retry-after", "7"),
    ]);
    assert_eq!(
        RetryHint::from_headers(&seconds, fast).after,
        Some(Duration::from_secs(7))
    );
}

/// A date that is now is a wait of zero, as `0` is: both say "now".
#[test]
fn a_date_that_is_now_waits_as_zero_does() {
    let now = at("Sun, 29 Nov 2026 12:00:00 GMT");
    let same = headers(&[("retry-after", "Sun, 29 Nov 2026 12:00:00 GMT")]);
    let zero = headers(&[("retry-after", "0")]);
    assert_eq!(
        RetryHint::from_headers(&same, now).after,
        Some(Duration::ZERO)
    );
    assert_eq!(
        RetryHint::from_headers(&same, now).after,
        RetryHint::from_headers(&zero, now).after
    );
}

/// Azure's front-ends send their wait as `x-ms-retry-after-ms`, read as
/// azure-core reads it: after `retry-after-ms`, before `Retry-After`.
#[test]
fn azures_millisecond_header_is_a_wait() {
    let now = now();
    let hint = |pairs: &[(&str, &str)]| RetryHint::from_headers(&headers(pairs), now).after;
    assert_eq!(
        hint(&[("x-ms-retry-after-ms", "26000")]),
        Some(Duration::from_secs(26))
    );
    assert_eq!(
        hint(&[("x-ms-retry-after-ms", "1500"), ("retry-after", "3")]),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        hint(&[("retry-after-ms", "200"), ("x-ms-retry-after-ms", "1500")]),
        Some(Duration::from_millis(200))
    );
    // Malformed, it is no hint, and the next header speaks.
    assert_eq!(
        hint(&[("x-ms-retry-after-ms", "soon"), ("retry-after", "3")]),
        Some(Duration::from_secs(3))
    );
    // A 429 with only Azure's header is a rate limit with its wait.
    let f = classify_error(
        Provider::OpenAi,
        br#"{"error":{"code":"429","message":"Rate limit is exceeded."}}"#,
        ErrorContext {
            hint: RetryHint::for_status(429, &headers(&[("x-ms-retry-after-ms", "26000")]), now),
            ..cx(Some(429))
        },
    );
    assert_eq!(
        (f.code(), f.retry_after()),
        (Code::RateLimited, Some(Duration::from_secs(26)))
    );
}

/// A proxy that folds two `Retry-After` lines into one (`48489, 48489`),
/// or passes both on, still says a wait: the first value that parses.
/// Read as no hint, a quota wall of half a day was retried as a blip.
#[test]
fn a_folded_or_repeated_retry_after_is_read() {
    let now = at("Sun, 29 Nov 2026 12:00:00 GMT");
    let wall = Some(Duration::from_secs(48489));
    let hint = |pairs: &[(&str, &str)]| RetryHint::from_headers(&headers(pairs), now).after;
    assert_eq!(hint(&[("retry-after", "48489, 48489")]), wall);
    assert_eq!(hint(&[("retry-after", "48489,48489")]), wall);
    assert_eq!(
        hint(&[("retry-after", "48489"), ("retry-after", "48489")]),
        wall
    );
    // The first that parses: garbage before it, in a list or a line.
    assert_eq!(hint(&[("retry-after", "soon, 48489")]), wall);
    assert_eq!(
        hint(&[("retry-after", "soon"), ("retry-after", "48489")]),
        wall
    );
    assert_eq!(
        hint(&[("retry-after", "120, 48489")]),
        Some(Duration::from_secs(120))
    );
    // An HTTP-date's own comma is no separator.
    assert_eq!(
        hint(&[(
            "retry-after",
            "Sun, 29 Nov 2026 12:00:30 GMT, Sun, 29 Nov 2026 12:00:30 GMT"
        )]),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        hint(&[("retry-after", "soon, Sun, 29 Nov 2026 12:00:30 GMT")]),
        Some(Duration::from_secs(30))
    );
    // Nothing that parses is no hint, as before.
    assert_eq!(hint(&[("retry-after", "soon, later")]), None);
    assert_eq!(hint(&[("retry-after", ", ,")]), None);
    // Through the classification: the wall it is.
    let f = classify_error(
        Provider::OpenAi,
        br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#,
        ErrorContext {
            hint: RetryHint::for_status(429, &headers(&[("retry-after", "48489, 48489")]), now),
            now,
            ..cx(Some(429))
        },
    );
    assert_eq!(
        (f.class(), f.code(), f.retry_after()),
        (Class::Permanent, Code::QuotaExhausted, wall)
    );
}
