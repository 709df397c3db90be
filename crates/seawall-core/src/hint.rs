//! Retry hints, parsed in one place.
//!
//! Providers say when to come back in many ways: `Retry-After` as seconds or
//! as an HTTP date, `retry-after-ms`, `x-should-retry`, gRPC's
//! `grpc-retry-pushback-ms`, Gemini's `google.rpc.RetryInfo.retryDelay` in
//! the error body, and, as a last resort, "try again in 1.574s" in a message.
//! Every parser here returns `None` for anything absurd — negative, garbage,
//! overflowing, a date in the past — and never panics. A hint longer than
//! [`MAX_RETRY_HINT`] is clamped to it: that is still far past any quota
//! wall, so the quota verdict is unchanged, and no arithmetic downstream can
//! overflow.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};

/// The longest hint seawall reports: one week.
pub const MAX_RETRY_HINT: Duration = Duration::from_secs(7 * 24 * 3600);

/// What the response headers say about retrying.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryHint {
    /// How long to wait before trying again.
    pub after: Option<Duration>,
    /// An explicit provider override: `Some(false)` means do not retry,
    /// `Some(true)` means retrying is safe even for a status that looks
    /// permanent.
    pub should_retry: Option<bool>,
}

impl RetryHint {
    /// Reads every header form. Precedence for the delay: `retry-after-ms`
    /// (the most precise), then `Retry-After`, then `grpc-retry-pushback-ms`.
    /// A negative gRPC pushback means "do not retry".
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> RetryHint {
        let mut hint = RetryHint {
            after: headers
                .get("retry-after-ms")
                .and_then(parse_retry_after_ms)
                .or_else(|| {
                    headers
                        .get(http::header::RETRY_AFTER)
                        .and_then(|v| parse_retry_after(v, now))
                }),
            should_retry: headers.get("x-should-retry").and_then(parse_should_retry),
        };
        if let Some(pushback) = headers
            .get("grpc-retry-pushback-ms")
            .and_then(parse_grpc_pushback)
        {
            match pushback {
                Pushback::After(after) => hint.after = hint.after.or(Some(after)),
                Pushback::DoNotRetry => hint.should_retry = Some(false),
            }
        }
        hint
    }
}

/// `Retry-After`: delta-seconds (`120`) or an HTTP date. A date in the past
/// or garbage gives `None`.
pub fn parse_retry_after(value: &HeaderValue, now: SystemTime) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return parse_whole_seconds(text);
    }
    let at = httpdate::parse_http_date(text).ok()?;
    let delay = at.duration_since(now).ok()?;
    (!delay.is_zero()).then(|| delay.min(MAX_RETRY_HINT))
}

/// `retry-after-ms`: whole or fractional milliseconds (`1500`, `20.5`).
pub fn parse_retry_after_ms(value: &HeaderValue) -> Option<Duration> {
    let millis = parse_decimal(value.to_str().ok()?.trim())?;
    Some(secs_f64_capped(millis / 1000.0))
}

/// `x-should-retry`: `true` or `false`, nothing else.
pub fn parse_should_retry(value: &HeaderValue) -> Option<bool> {
    match value.to_str().ok()?.trim() {
        v if v.eq_ignore_ascii_case("true") => Some(true),
        v if v.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The meaning of a `grpc-retry-pushback-ms` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushback {
    /// Try again after this long.
    After(Duration),
    /// A negative value: the server asks not to retry at all.
    DoNotRetry,
}

/// `grpc-retry-pushback-ms`: an integer; negative means do not retry.
pub fn parse_grpc_pushback(value: &HeaderValue) -> Option<Pushback> {
    let text = value.to_str().ok()?.trim();
    if let Some(rest) = text.strip_prefix('-') {
        return (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
            .then_some(Pushback::DoNotRetry);
    }
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis: u64 = text.parse().ok()?;
    Some(Pushback::After(
        Duration::from_millis(millis).min(MAX_RETRY_HINT),
    ))
}

/// A protobuf JSON duration, as in Gemini's `RetryInfo.retryDelay`: `"26s"`,
/// `"1.5s"`, `"0.200s"`.
pub fn parse_proto_duration(text: &str) -> Option<Duration> {
    let seconds = text.trim().strip_suffix('s')?;
    Some(secs_f64_capped(parse_decimal(seconds)?))
}

/// The last resort: a hint in a message, as in OpenAI's "Please try again in
/// 1.574s." or "try again in 20ms" or "Please try again in 6m0s.".
pub fn parse_text_hint(message: &str) -> Option<Duration> {
    const MARKER: &[u8] = b"try again in ";
    let searched = crate::failure::excerpt(message, 4096).as_bytes();
    let start = crate::text::find_ci(searched, MARKER)? + MARKER.len();
    let rest = &message[start..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .unwrap_or(rest.len());
    parse_go_duration(rest[..end].trim_end_matches('.'))
}

/// A Go-style duration such as `1.574s`, `20ms`, `6m0s`, `1h2m`.
fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0_f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number = parse_decimal(&rest[..number_len])?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        let scale = if unit.eq_ignore_ascii_case("ms") {
            0.001
        } else if unit.eq_ignore_ascii_case("s") {
            1.0
        } else if unit.eq_ignore_ascii_case("m") {
            60.0
        } else if unit.eq_ignore_ascii_case("h") {
            3600.0
        } else {
            return None;
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some(secs_f64_capped(total))
}

fn parse_whole_seconds(text: &str) -> Option<Duration> {
    if text.is_empty() {
        return None;
    }
    // Digits only (checked by the caller); overflow of u64 is absurd → None.
    let seconds: u64 = text.parse().ok()?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_HINT))
}

/// A non-negative decimal number of plain digits and at most one dot.
fn parse_decimal(text: &str) -> Option<f64> {
    let well_formed = !text.is_empty()
        && text.len() <= 32
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1
        && text.bytes().any(|b| b.is_ascii_digit());
    if !well_formed {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    value.is_finite().then_some(value)
}

fn secs_f64_capped(seconds: f64) -> Duration {
    if seconds >= MAX_RETRY_HINT.as_secs_f64() {
        MAX_RETRY_HINT
    } else {
        Duration::from_secs_f64(seconds.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hv(s: &str) -> HeaderValue {
        HeaderValue::from_str(s).unwrap()
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 12:00:00 GMT").unwrap();
        assert_eq!(
            parse_retry_after(&hv("120"), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(&hv(" 0 "), now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after(&hv("Sun, 29 Nov 2026 12:00:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after(&hv("Sun, 29 Nov 2026 11:00:00 GMT"), now),
            None
        );
        assert_eq!(parse_retry_after(&hv("-5"), now), None);
        assert_eq!(parse_retry_after(&hv("soon"), now), None);
        assert_eq!(parse_retry_after(&hv("1.5"), now), None);
        assert_eq!(parse_retry_after(&hv("99999999999999999999999"), now), None);
        assert_eq!(
            parse_retry_after(&hv("48489"), now),
            Some(Duration::from_secs(48489))
        );
        assert_eq!(
            parse_retry_after(&hv("9999999999"), now),
            Some(MAX_RETRY_HINT)
        );
    }

    #[test]
    fn millisecond_and_override_headers() {
        assert_eq!(
            parse_retry_after_ms(&hv("1500")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after_ms(&hv("20.5")),
            Some(Duration::from_micros(20_500))
        );
        assert_eq!(parse_retry_after_ms(&hv("-1")), None);
        assert_eq!(parse_retry_after_ms(&hv("1e9")), None);
        assert_eq!(parse_retry_after_ms(&hv("NaN")), None);
        assert_eq!(parse_should_retry(&hv("false")), Some(false));
        assert_eq!(parse_should_retry(&hv("TRUE")), Some(true));
        assert_eq!(parse_should_retry(&hv("maybe")), None);
    }

    #[test]
    fn grpc_pushback() {
        assert_eq!(
            parse_grpc_pushback(&hv("250")),
            Some(Pushback::After(Duration::from_millis(250)))
        );
        assert_eq!(parse_grpc_pushback(&hv("-1")), Some(Pushback::DoNotRetry));
        assert_eq!(parse_grpc_pushback(&hv("-")), None);
        assert_eq!(parse_grpc_pushback(&hv("1x")), None);
    }

    #[test]
    fn header_precedence() {
        let now = SystemTime::now();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", hv("3"));
        headers.insert("retry-after-ms", hv("1200"));
        headers.insert("x-should-retry", hv("true"));
        let hint = RetryHint::from_headers(&headers, now);
        assert_eq!(hint.after, Some(Duration::from_millis(1200)));
        assert_eq!(hint.should_retry, Some(true));

        let mut grpc = HeaderMap::new();
        grpc.insert("grpc-retry-pushback-ms", hv("-1"));
        let hint = RetryHint::from_headers(&grpc, now);
        assert_eq!(
            hint,
            RetryHint {
                after: None,
                should_retry: Some(false)
            }
        );
    }

    #[test]
    fn proto_and_text_hints() {
        assert_eq!(parse_proto_duration("26s"), Some(Duration::from_secs(26)));
        assert_eq!(
            parse_proto_duration("0.200s"),
            Some(Duration::from_millis(200))
        );
        assert_eq!(parse_proto_duration("26"), None);
        assert_eq!(parse_proto_duration("-3s"), None);
        assert_eq!(
            parse_text_hint("Rate limit reached. Please try again in 1.574s. Visit ..."),
            Some(Duration::from_millis(1574))
        );
        assert_eq!(
            parse_text_hint("try again in 20ms"),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            parse_text_hint("Please try again in 6m0s."),
            Some(Duration::from_secs(360))
        );
        assert_eq!(parse_text_hint("please try again later"), None);
        assert_eq!(parse_text_hint("try again in 5 parsecs"), None);
    }

    proptest! {
        #[test]
        fn arbitrary_header_values_never_panic_nor_exceed_the_cap(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            secs in any::<u64>(),
        ) {
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(secs % (1 << 40));
            if let Ok(value) = HeaderValue::from_bytes(&bytes) {
                let mut headers = HeaderMap::new();
                for name in ["retry-after", "retry-after-ms", "x-should-retry", "grpc-retry-pushback-ms"] {
                    headers.insert(name, value.clone());
                }
                let hint = RetryHint::from_headers(&headers, now);
                prop_assert!(hint.after.is_none_or(|d| d <= MAX_RETRY_HINT));
            }
            let text = String::from_utf8_lossy(&bytes);
            prop_assert!(parse_proto_duration(&text).is_none_or(|d| d <= MAX_RETRY_HINT));
            prop_assert!(parse_text_hint(&text).is_none_or(|d| d <= MAX_RETRY_HINT));
        }

        #[test]
        fn any_number_of_seconds_is_capped(n in any::<u64>()) {
            let value = HeaderValue::from_str(&n.to_string()).unwrap();
            let got = parse_retry_after(&value, SystemTime::now()).unwrap();
            prop_assert_eq!(got, Duration::from_secs(n).min(MAX_RETRY_HINT));
        }
    }
}
