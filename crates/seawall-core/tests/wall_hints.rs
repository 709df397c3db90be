//! A header's hint never shortens a quota wall: a permanent wall cools its
//! route for the later of the hint and the reset it knows of (a named
//! date, midnight Pacific for a per-day quota, else the default quota
//! cooldown), and the hint is still reported as sent.

use std::time::{Duration, SystemTime};

use seawall_core::hint::RetryHint;
use seawall_core::provider::{
    ErrorContext, Provider, QuotaWall, StatusDetails, classify_error, classify_grpc_details,
};
use seawall_core::{Class, Code, Cooldown, DEFAULT_QUOTA_COOLDOWN, Failure};

/// 2025-08-24T01:46:40Z: 22 400 s before the next midnight Pacific
/// (08:00 UTC, read as UTC−8).
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_000_000)
}

const UNTIL_PACIFIC_MIDNIGHT: Duration = Duration::from_secs(22_400);

fn cx(status: Option<u16>, after: Option<Duration>) -> ErrorContext {
    ErrorContext {
        status,
        hint: RetryHint {
            after,
            ..RetryHint::default()
        },
        quota_wall: QuotaWall::default(),
        now: now(),
    }
}

fn cooldown(failure: &Failure) -> Option<Duration> {
    match failure.cooldown(now()) {
        Some(Cooldown::For(wait)) => Some(wait),
        _ => None,
    }
}

const GEMINI_PER_DAY: &[u8] = br#"{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"47s"}]}}"#;

/// Gemini's per-day 429 with `Retry-After: 41`: the route cools until
/// midnight Pacific, as without the header, not for 41 s.
#[test]
fn a_retry_after_on_a_per_day_gemini_wall_does_not_shorten_it() {
    let bare = classify_error(Provider::Gemini, GEMINI_PER_DAY, cx(Some(429), None));
    assert_eq!(cooldown(&bare), Some(UNTIL_PACIFIC_MIDNIGHT));
    let told = classify_error(
        Provider::Gemini,
        GEMINI_PER_DAY,
        cx(Some(429), Some(Duration::from_secs(41))),
    );
    assert_eq!(
        (told.class(), told.code()),
        (Class::Permanent, Code::QuotaExhausted)
    );
    assert_eq!(told.retry_after(), Some(Duration::from_secs(41)), "as sent");
    assert_eq!(told.reset_at(), bare.reset_at());
    assert_eq!(cooldown(&told), Some(UNTIL_PACIFIC_MIDNIGHT));
}

/// The same over gRPC, told by `grpc-retry-pushback-ms: 41000`.
#[test]
fn a_pushback_on_a_per_day_grpc_wall_does_not_shorten_it() {
    let mut per_day = StatusDetails::default();
    per_day.add_quota_id("GenerateRequestsPerDayPerProjectPerModel-FreeTier");
    let told = classify_grpc_details(
        8,
        Some("quota"),
        per_day,
        cx(Some(200), Some(Duration::from_millis(41_000))),
    );
    assert_eq!(told.code(), Code::QuotaExhausted);
    assert_eq!(told.retry_after(), Some(Duration::from_secs(41)));
    assert_eq!(cooldown(&told), Some(UNTIL_PACIFIC_MIDNIGHT));
}

/// Anthropic's spend cap names the day access comes back; a
/// `retry-after: 30` sent with it does not bring the route back in 30 s.
#[test]
fn a_retry_after_on_a_dated_spend_cap_does_not_shorten_it() {
    let spend_cap = br#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits. You will regain access on 2025-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
    // 2025-09-01T00:00:00Z.
    let reset = SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_684_800);
    let told = classify_error(
        Provider::Anthropic,
        spend_cap,
        cx(Some(429), Some(Duration::from_secs(30))),
    );
    assert_eq!(told.code(), Code::QuotaExhausted);
    assert_eq!(told.retry_after(), Some(Duration::from_secs(30)));
    assert_eq!(told.reset_at(), Some(reset));
    assert_eq!(cooldown(&told), reset.duration_since(now()).ok());
}

/// OpenAI's `insufficient_quota` names no reset: `retry-after-ms: 20`
/// leaves it the default quota cooldown, not 20 ms.
#[test]
fn a_short_hint_on_a_wall_without_a_reset_keeps_the_default() {
    let body = br#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let told = classify_error(
        Provider::OpenAi,
        body,
        cx(Some(429), Some(Duration::from_millis(20))),
    );
    assert_eq!(told.code(), Code::QuotaExhausted);
    assert_eq!(told.retry_after(), Some(Duration::from_millis(20)));
    assert_eq!(cooldown(&told), Some(DEFAULT_QUOTA_COOLDOWN));
}

/// A hint longer than what the wall knows of is the later, and wins; a
/// rate limit judged a wall by its hint cools for the hint, whatever the
/// threshold.
#[test]
fn a_longer_hint_still_holds() {
    let hour = Duration::from_secs(3600);
    let wall = Failure::new(Code::QuotaExhausted).with_retry_after(hour);
    assert_eq!(cooldown(&wall), Some(hour));
    let judged =
        QuotaWall::new(Duration::from_secs(10)).judge(Some(Duration::from_secs(20)), now());
    assert_eq!(judged.code(), Code::QuotaExhausted);
    assert_eq!(cooldown(&judged), Some(Duration::from_secs(20)));
}
