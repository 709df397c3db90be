//! Errors as the servers that speak OpenAI's wire send them, read by
//! OpenAI's table: each body is in the shape its server's source or
//! documentation shows, with the wording quoted there; the token counts
//! and ids in them are illustrative.
//!
//! - Groq: "If flex capacity is unavailable, requests will fail quickly
//!   with status `498` and error `capacity_exceeded`. Add jittered backoff
//!   and retries to smooth spikes." (console.groq.com/docs/flex-processing);
//!   its message here is illustrative, the documentation names only the
//!   status and the code.

use std::time::{Duration, SystemTime};

use seawall_core::hint::RetryHint;
use seawall_core::provider::{ErrorContext, Provider, QuotaWall, classify_error};
use seawall_core::{Action, Class, Code, Failure};

fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_756_000_000)
}

/// What OpenAI's table reads from `body`, answered with `status` (`None`:
/// an error inside a stream).
fn read(status: Option<u16>, body: &str) -> Failure {
    let cx = ErrorContext {
        status,
        hint: RetryHint::default(),
        quota_wall: QuotaWall::default(),
        now: now(),
    };
    classify_error(Provider::OpenAi, body.as_bytes(), cx)
}

fn verdict(f: &Failure) -> (Class, Code, Action) {
    (f.class(), f.code(), f.action())
}

/// Groq's flex tier at capacity is a blip to wait out, as an overloaded
/// server is: read by its status, or by its code where no status is seen.
#[test]
fn groq_flex_capacity_is_overloaded_and_retried() {
    let overloaded = (Class::Transient, Code::Overloaded, Action::Retry);
    let body = r#"{"error":{"message":"Flex tier capacity exceeded. This model is at capacity, please try again later.","code":"capacity_exceeded"}}"#;
    assert_eq!(verdict(&read(Some(498), body)), overloaded);
    // The status alone: a body a proxy replaced, or none at all.
    assert_eq!(verdict(&read(Some(498), "")), overloaded);
    assert_eq!(verdict(&read(Some(498), "<html>498</html>")), overloaded);
    // The code alone: inside a stream, and echoed as a status there.
    assert_eq!(verdict(&read(None, body)), overloaded);
    let echoed = r#"{"error":{"message":"capacity","type":null,"code":498}}"#;
    assert_eq!(verdict(&read(None, echoed)), overloaded);
    // The provider's words are kept.
    let f = read(Some(498), body);
    assert_eq!(f.provider_code(), Some("capacity_exceeded"));
    assert_eq!(f.status(), Some(498));
}
