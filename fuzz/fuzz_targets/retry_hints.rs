//! The retry-hint parsers of `seawall_core::hint` on arbitrary bytes: no
//! panic, no hint past `MAX_RETRY_HINT`, and `RetryHint::from_headers`
//! agrees with the single-header parsers and its documented precedence.
//!
//! Input: five bytes of clock (seconds since the epoch), then the values
//! of `retry-after`, `retry-after-ms`, `x-should-retry` and
//! `grpc-retry-pushback-ms`, separated by `\n` (never valid inside a
//! header value). The whole input, as text, also goes to
//! `parse_text_hint` and `parse_proto_duration`.
#![no_main]

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use seawall_core::hint::{
    MAX_RETRY_HINT, Pushback, RetryHint, parse_grpc_pushback, parse_proto_duration,
    parse_retry_after, parse_retry_after_ms, parse_should_retry, parse_text_hint, parse_text_reset,
};

const NAMES: [&str; 4] = [
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "grpc-retry-pushback-ms",
];

fn capped(hint: Option<Duration>) -> bool {
    hint.is_none_or(|d| d <= MAX_RETRY_HINT)
}

fuzz_target!(|data: &[u8]| {
    let (clock, rest) = data.split_at(data.len().min(5));
    let secs = clock.iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);

    let mut headers = HeaderMap::new();
    let mut values: [Option<HeaderValue>; 4] = Default::default();
    for ((name, slot), part) in NAMES
        .iter()
        .zip(&mut values)
        .zip(rest.split(|&b| b == b'\n'))
    {
        if let Ok(value) = HeaderValue::from_bytes(part) {
            headers.insert(*name, value.clone());
            *slot = Some(value);
        }
    }
    let [after, after_ms, should, pushback] = &values;

    let after = after.as_ref().and_then(|v| parse_retry_after(v, now));
    let after_ms = after_ms.as_ref().and_then(parse_retry_after_ms);
    let should = should.as_ref().and_then(parse_should_retry);
    // Present: a delay, or (anything that is not one) do not retry.
    let pushback = pushback.as_ref().map(parse_grpc_pushback);
    assert!(capped(after) && capped(after_ms));
    if let Some(Pushback::After(d)) = pushback {
        assert!(d <= MAX_RETRY_HINT);
    }

    let hint = RetryHint::from_headers(&headers, now);
    assert!(capped(hint.after));
    let pushed = match pushback {
        Some(Pushback::After(d)) => Some(d),
        _ => None,
    };
    assert_eq!(hint.after, after_ms.or(after).or(pushed));
    let refused = matches!(pushback, Some(Pushback::DoNotRetry));
    assert_eq!(
        hint.should_retry,
        if refused { Some(false) } else { should }
    );

    let text = String::from_utf8_lossy(data);
    assert!(capped(parse_text_hint(&text)));
    assert!(capped(parse_proto_duration(&text)));
    let _ = parse_text_reset(&text);
    if let Ok(text) = std::str::from_utf8(rest) {
        assert!(capped(parse_text_hint(text)));
        assert!(capped(parse_proto_duration(text)));
        let _ = parse_text_reset(text);
    }
});
