//! Retry hints, parsed in one place.
//!
//! Providers say when to come back in many ways: `Retry-After` as seconds or
//! as an HTTP date, `retry-after-ms` (Azure's front-ends:
//! `x-ms-retry-after-ms`), `x-should-retry`, gRPC's
//! `grpc-retry-pushback-ms`, Gemini's `google.rpc.RetryInfo.retryDelay` in
//! the error body, and, as a last resort, "try again in 1.574s", "retry
//! after 86400 seconds" (a unit spelled out) or Gemini's "retry in
//! 38.962214405s" in a message, or the reset of an OpenAI rate limit with
//! nothing left ([`parse_rate_limit_reset`]).
//! Every parser here returns `None` for anything malformed — negative,
//! garbage, a date in the past — and never panics, save gRPC's pushback,
//! where gRFC A6 gives malformed a meaning of its own (do not retry). A well-formed hint longer
//! than [`MAX_RETRY_HINT`] is clamped to it, however many digits it has (a
//! value too long for any integer type included): that is still far past
//! any quota wall, so the quota verdict is the same for every absurdly long
//! hint, and no arithmetic downstream can overflow.
//!
//! Values are trimmed of surrounding whitespace first; whitespace inside a
//! number, a sign and an exponent make it malformed. gRPC's pushback is a
//! whole number; the other forms take a fraction (`20.5`), `Retry-After`'s
//! too, which RFC 9110 does not allow but the SDKs read.

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
    /// The reset of a rate limit with nothing left (OpenAI's
    /// `x-ratelimit-*`, [`parse_rate_limit_reset`]): the wait of a rate
    /// limit that names no other, never a reason to wait of its own. Not
    /// read by [`from_headers`](Self::from_headers), which every gRPC
    /// answer's head and trailers pass through: the caller reads it for a
    /// 429 ([`for_status`](Self::for_status)).
    pub limit_reset: Option<Duration>,
}

impl RetryHint {
    /// The hint of an answer with `status`: [`from_headers`](Self::from_headers),
    /// and for a 429 the reset of its spent rate limit too.
    pub fn for_status(status: u16, headers: &HeaderMap, now: SystemTime) -> RetryHint {
        let mut hint = RetryHint::from_headers(headers, now);
        if status == 429 {
            hint.limit_reset = parse_rate_limit_reset(headers);
        }
        hint
    }

    /// Reads every header form but OpenAI's rate-limit counts
    /// ([`limit_reset`](Self::limit_reset)). Precedence for the delay, as
    /// azure-core reads the first three: `retry-after-ms` (the most
    /// precise), then Azure's `x-ms-retry-after-ms`, then `Retry-After`,
    /// then `grpc-retry-pushback-ms`. A negative or unparseable gRPC pushback
    /// means "do not retry". An HTTP-date `Retry-After` is read against
    /// the answer's own `Date` where it has one that parses, else against
    /// `now`.
    pub fn from_headers(headers: &HeaderMap, now: SystemTime) -> RetryHint {
        // An HTTP-date is a time on the server's clock, as its `Date` is:
        // the wait is the one less the other, however far off the local
        // clock is (30 s fast, a 20 s wait was read as none at all).
        let sent = headers
            .get(http::header::DATE)
            .and_then(|date| httpdate::parse_http_date(date.to_str().ok()?).ok())
            .unwrap_or(now);
        let millis = |name: &str| headers.get(name).and_then(parse_retry_after_ms);
        let mut hint = RetryHint {
            after: millis("retry-after-ms")
                .or_else(|| millis("x-ms-retry-after-ms"))
                .or_else(|| {
                    // Sent twice, the first line that parses.
                    headers
                        .get_all(http::header::RETRY_AFTER)
                        .iter()
                        .find_map(|v| parse_retry_after(v, sent))
                }),
            should_retry: headers.get("x-should-retry").and_then(parse_should_retry),
            limit_reset: None,
        };
        if let Some(pushback) = headers
            .get("grpc-retry-pushback-ms")
            .map(parse_grpc_pushback)
        {
            match pushback {
                Pushback::After(after) => hint.after = hint.after.or(Some(after)),
                Pushback::DoNotRetry => hint.should_retry = Some(false),
            }
        }
        hint
    }
}

/// `Retry-After`: delta-seconds (`120`) or an HTTP date (IMF-fixdate, or
/// the RFC 850 and asctime forms RFC 9110 has a recipient read too), its
/// wait the time from `now` to it: `now` is when the answer was sent, its
/// `Date` where [`RetryHint::from_headers`] has one. A date that is `now`
/// waits nothing, as `0` does. Delta-seconds past [`MAX_RETRY_HINT`] are
/// clamped to it, however many digits.
/// Fractional seconds (`1.5`, `3600.0`), which RFC 9110 does not allow,
/// are read too, as the SDKs read them (openai-python: "allowing
/// nonstandard floats"; a server's `3600.0` is an hour's wait, a quota
/// wall, not a value to drop). A date in the past, a sign or an exponent
/// (`-5`, `1e3`) or garbage gives `None`. A list (`48489, 48489`, what a
/// proxy that folds two header lines writes) is read as its first element
/// that parses, an HTTP date's own comma kept.
pub fn parse_retry_after(value: &HeaderValue, now: SystemTime) -> Option<Duration> {
    let text = value.to_str().ok()?;
    parse_one_retry_after(text.trim(), now).or_else(|| parse_listed_retry_after(text, now))
}

/// The first element of a comma-separated `text` that is a `Retry-After`
/// of its own. An HTTP date has a comma after its weekday (`Sun, 06 Nov
/// 1994 08:49:37 GMT`), so an element is tried joined to the next too.
fn parse_listed_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    let mut ends = text
        .match_indices(',')
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()))
        .peekable();
    let mut start = 0;
    while let Some(end) = ends.next() {
        if end == text.len() && start == 0 {
            // No comma: no list, and the value was read whole.
            return None;
        }
        let alone = parse_one_retry_after(text[start..end].trim(), now);
        let joined = ends
            .peek()
            .and_then(|&next| parse_one_retry_after(text[start..next].trim(), now));
        if let Some(delay) = alone.or(joined) {
            return Some(delay);
        }
        start = end + 1;
    }
    None
}

/// One `Retry-After` value, trimmed.
fn parse_one_retry_after(text: &str, now: SystemTime) -> Option<Duration> {
    if text.bytes().all(|b| b.is_ascii_digit()) {
        return parse_whole_seconds(text);
    }
    if let Some(seconds) = parse_decimal(text) {
        return Some(secs_f64_capped(seconds));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    let delay = at.duration_since(now).ok()?;
    Some(delay.min(MAX_RETRY_HINT))
}

/// `retry-after-ms` (or Azure's `x-ms-retry-after-ms`): whole or
/// fractional milliseconds (`1500`, `20.5`), clamped to [`MAX_RETRY_HINT`]
/// however many digits. A sign, an exponent (`-1`, `1e9`) or garbage gives
/// `None`.
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

/// The wait OpenAI's rate-limit headers imply, for a rate limit nothing
/// else gave a wait for: the reset of a limit with nothing left
/// (`x-ratelimit-remaining-requests: 0` with `x-ratelimit-reset-requests`,
/// or the `-tokens` pair), the longer where both are spent. OpenAI
/// documents the reset as "the time until the rate limit (based on
/// requests) resets to its initial state" (`1s`, `6m0s`: Go durations),
/// and sends the headers with every answer, so they speak of a refusal
/// only where the answer was one: read them for a 429's verdict, never
/// for a success, and after `retry-after-ms`, `Retry-After`, gRPC's
/// pushback and the message's own "try again in", each of which names
/// the wait for this refusal. A limit with some left says nothing of
/// when to come back; a count or a reset malformed (Azure's `-1`, a bare
/// number) is no hint.
pub fn parse_rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    const LIMITS: [(&str, &str); 2] = [
        (
            "x-ratelimit-remaining-requests",
            "x-ratelimit-reset-requests",
        ),
        ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    ];
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    LIMITS
        .into_iter()
        .filter_map(|(remaining, reset)| {
            let spent = parse_digits(text(remaining)?)? == 0;
            spent.then(|| parse_go_duration(text(reset)?)).flatten()
        })
        .max()
}

/// The meaning of a `grpc-retry-pushback-ms` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushback {
    /// Try again after this long.
    After(Duration),
    /// A negative or unparseable value: the server asks not to retry at
    /// all.
    DoNotRetry,
}

/// `grpc-retry-pushback-ms`: a non-negative integer is the delay, clamped
/// to [`MAX_RETRY_HINT`] however many digits. Anything else — negative,
/// fractional, garbage — asks not to retry: "If the value for pushback is
/// negative or unparseble, then it will be seen as the server asking the
/// client not to retry at all" (gRFC A6). Unlike `Retry-After`, whose
/// garbage is no hint, so a server's stop is never read as leave to retry.
pub fn parse_grpc_pushback(value: &HeaderValue) -> Pushback {
    let millis = value
        .to_str()
        .ok()
        .and_then(|text| parse_digits(text.trim()));
    match millis {
        Some(millis) => Pushback::After(Duration::from_millis(millis).min(MAX_RETRY_HINT)),
        None => Pushback::DoNotRetry,
    }
}

/// A protobuf JSON duration, as in Gemini's `RetryInfo.retryDelay`: `"26s"`,
/// `"1.5s"`, `"0.200s"`; clamped to [`MAX_RETRY_HINT`] however many digits.
/// A sign (`"-3s"`) or a space before the unit gives `None`.
pub fn parse_proto_duration(text: &str) -> Option<Duration> {
    let seconds = text.trim().strip_suffix('s')?;
    Some(secs_f64_capped(parse_decimal(seconds)?))
}

/// The last resort: a hint in a message, as in OpenAI's "Please try again in
/// 1.574s." or "try again in 20ms" or "Please try again in 6m0s.", or
/// Groq's "Please try again in 6m 11.52s." (its parts spaced), or Azure
/// OpenAI's "Please retry after 86400 seconds." and its API gateway's "Try
/// again in 59 seconds." (the unit spelled out), or Gemini's "Please retry
/// in 38.962214405s." (its message says the wait its `RetryInfo` does,
/// and is all that is left of it where a proxy drops the details);
/// clamped to [`MAX_RETRY_HINT`] however many digits.
pub fn parse_text_hint(message: &str) -> Option<Duration> {
    const MARKERS: [&[u8]; 3] = [b"try again in ", b"retry after ", b"retry in "];
    let searched = crate::failure::excerpt(message, 4096).as_bytes();
    MARKERS.iter().find_map(|marker| {
        let start = crate::text::find_ci(searched, marker)? + marker.len();
        let rest = &message[start..];
        parse_go_duration(rest[..duration_len(rest)].trim_end_matches('.'))
            .or_else(|| parse_spelled_duration(rest))
    })
}

/// A number, one space and a unit spelled out, as Azure writes a wait:
/// "86400 seconds", "1 second", "500 milliseconds", "2 minutes", "1 hour".
fn parse_spelled_duration(text: &str) -> Option<Duration> {
    const UNITS: [(&str, f64); 8] = [
        ("milliseconds", 0.001),
        ("millisecond", 0.001),
        ("seconds", 1.0),
        ("second", 1.0),
        ("minutes", 60.0),
        ("minute", 60.0),
        ("hours", 3600.0),
        ("hour", 3600.0),
    ];
    let number_len = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let number = parse_decimal(&text[..number_len])?;
    let rest = text[number_len..].strip_prefix(' ')?;
    let word = &rest[..rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len())];
    let (_, scale) = UNITS
        .iter()
        .find(|(unit, _)| word.eq_ignore_ascii_case(unit))?;
    Some(secs_f64_capped(number * scale))
}

/// How long the duration `text` starts with is: a run of letters, digits
/// and dots, and each further run one space joins to it where that space
/// follows a unit and a number follows it ("6m 11.52s", never "1 m").
fn duration_len(text: &str) -> usize {
    let run_end = |from: usize| {
        text[from..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
            .map_or(text.len(), |len| from + len)
    };
    let mut end = run_end(0);
    // A spaced part joins only if it is a duration part of its own
    // ("6m 11.52s", a sentence's full stop aside), never a number the sentence goes on with ("20s 3
    // more requests" is still 20 s).
    while text[..end].ends_with(|c: char| c.is_ascii_alphabetic())
        && text[end..]
            .strip_prefix(' ')
            .is_some_and(|next| next.starts_with(|c: char| c.is_ascii_digit()))
        && parse_go_duration(text[end + 1..run_end(end + 1)].trim_end_matches('.')).is_some()
    {
        end = run_end(end + 1);
    }
    end
}

/// When a quota wall's message says access comes back, as Anthropic's
/// spend cap does: "You will regain access on 2026-09-01 at 00:00 UTC."
/// (a date, an optional `at HH:MM`, UTC). `None` for anything else: the
/// wall then cools its route for the default time.
pub fn parse_text_reset(message: &str) -> Option<SystemTime> {
    const MARKER: &[u8] = b"regain access on ";
    let searched = crate::failure::excerpt(message, 4096).as_bytes();
    let start = crate::text::find_ci(searched, MARKER)? + MARKER.len();
    let rest = message.get(start..)?;
    let number = |text: &str| -> Option<u32> {
        text.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| text.parse().ok())
            .flatten()
    };
    let (year, month, day) = (
        number(rest.get(0..4)?)?,
        number(rest.get(5..7)?)?,
        number(rest.get(8..10)?)?,
    );
    if rest.get(4..5)? != "-" || rest.get(7..8)? != "-" {
        return None;
    }
    let rest = &rest[10..];
    let (minutes, rest) = match rest.strip_prefix(" at ") {
        Some(time) if time.get(2..3)? == ":" => {
            let (hour, minute) = (number(time.get(0..2)?)?, number(time.get(3..5)?)?);
            if hour > 23 || minute > 59 {
                return None;
            }
            (hour * 60 + minute, &time[5..])
        }
        Some(_) => return None,
        None => (0, rest),
    };
    if !rest.trim_start().starts_with("UTC") {
        return None;
    }
    let days = days_since_epoch(year, month, day)?;
    let secs = days.checked_mul(86_400)? + u64::from(minutes) * 60;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// The next midnight Pacific time after `now`, when Gemini's per-day
/// quotas reset ("Requests per day (RPD) quotas reset at midnight Pacific
/// time", ai.google.dev/gemini-api/docs/rate-limits). With no time-zone
/// database here, Pacific time is taken as UTC−8 all year: midnight PST,
/// 08:00 UTC. In daylight saving time (PDT, UTC−7) the quota resets at
/// 07:00 UTC, so the time read is at most an hour late, the safe side: the
/// route stays cold a little longer, never called while the wall stands.
/// (A wall met between 07:00 and 08:00 UTC in summer, a day's quota spent
/// within the hour after its reset, is read as lifting at 08:00: one call
/// then meets it again, and cools the route to the next day.) `None` for a
/// `now` before 1970.
pub(crate) fn next_pacific_midnight(now: SystemTime) -> Option<SystemTime> {
    const DAY: u64 = 24 * 3600;
    const PST_OFFSET: u64 = 8 * 3600;
    let secs = now.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs();
    // The first 08:00 UTC strictly after `now`: a wall met at 08:00:00
    // waits for the next day's.
    let day = secs.checked_add(DAY - PST_OFFSET)? / DAY;
    let at = day.checked_mul(DAY)?.checked_add(PST_OFFSET)?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(at))
}

/// Days from 1970-01-01 to a proleptic Gregorian date on or after it
/// (Howard Hinnant's `days_from_civil`); `None` for a date that does not
/// exist.
fn days_since_epoch(year: u32, month: u32, day: u32) -> Option<u64> {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days_in_month = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => return None,
    };
    if !(1..=days_in_month).contains(&day) || year < 1970 {
        return None;
    }
    let (year, month) = (u64::from(year), u64::from(month));
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + u64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    (era * 146_097 + day_of_era).checked_sub(719_468)
}

/// A Go-style duration such as `1.574s`, `20ms`, `6m0s`, `1h2m`, its parts
/// perhaps spaced (`6m 11.52s`): one space after a unit, never between a
/// number and its unit.
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
            .find(|c: char| c.is_ascii_digit() || c == ' ')
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
        // The space between two parts; a trailing one leaves no part.
        if let Some(next) = rest.strip_prefix(' ') {
            rest = next;
            if rest.is_empty() {
                return None;
            }
        }
    }
    Some(secs_f64_capped(total))
}

fn parse_whole_seconds(text: &str) -> Option<Duration> {
    let seconds = parse_digits(text)?;
    Some(Duration::from_secs(seconds).min(MAX_RETRY_HINT))
}

/// A non-empty run of ASCII digits as a `u64`, saturating: a number too
/// long for it is `u64::MAX`, which every caller clamps to the cap, so an
/// absurdly long hint means the same as the longest one that fits.
fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    match text.parse::<u64>() {
        Ok(n) => Some(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Some(u64::MAX),
        Err(_) => None,
    }
}

/// A non-negative decimal number of plain digits and at most one dot, of
/// any length: one too large for an `f64` is infinite, which
/// [`secs_f64_capped`] clamps to the cap like any other huge value.
fn parse_decimal(text: &str) -> Option<f64> {
    let well_formed = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1
        && text.bytes().any(|b| b.is_ascii_digit());
    if !well_formed {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

/// Non-negative seconds (infinity included) as a duration, at most the cap.
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

    #[test]
    fn a_walls_message_may_say_when_access_comes_back() {
        let at = |secs| Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        let anthropic = "You have reached your API usage limits: your organization has crossed \
                         its monthly API usage threshold. You will regain access on 2026-09-01 \
                         at 00:00 UTC.";
        // 2026-09-01T00:00:00Z.
        assert_eq!(parse_text_reset(anthropic), at(1_788_220_800));
        assert_eq!(
            parse_text_reset("regain access on 2028-02-29 at 13:05 UTC"),
            at(1_835_442_300)
        );
        assert_eq!(
            parse_text_reset("Regain access on 1970-01-02 UTC"),
            at(86_400)
        );
        for other in [
            "regain access on 2026-02-29 at 00:00 UTC",
            "regain access on 2026-13-01 at 00:00 UTC",
            "regain access on 2026-09-01 at 24:00 UTC",
            "regain access on 2026-09-01 at 00:00 PST",
            "regain access on 2026-9-1 at 00:00 UTC",
            "regain access on 1969-12-31 at 00:00 UTC",
            "regain access soon",
            "try again in 20ms",
        ] {
            assert_eq!(parse_text_reset(other), None, "{other}");
        }
    }
    /// Midnight PST is 08:00 UTC: the next one strictly after now.
    #[test]
    fn the_next_midnight_pacific_is_the_next_8_utc() {
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        // 1970-01-01T08:00:00Z is 28 800 s; a day is 86 400 s.
        for (now, next) in [
            (0, 28_800),
            (28_799, 28_800),
            (28_800, 115_200),
            (28_801, 115_200),
            (115_199, 115_200),
        ] {
            assert_eq!(next_pacific_midnight(at(now)), Some(at(next)), "{now}");
        }
        assert_eq!(
            next_pacific_midnight(at(28_799) + Duration::from_millis(999)),
            Some(at(28_800))
        );
        let before_1970 = SystemTime::UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(next_pacific_midnight(before_1970), None);
    }

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
        // A date that is now says "now", as `0` does.
        assert_eq!(
            parse_retry_after(&hv("Sun, 29 Nov 2026 12:00:00 GMT"), now),
            Some(Duration::ZERO)
        );
        // RFC 850's and asctime's forms.
        assert_eq!(
            parse_retry_after(&hv("Sunday, 29-Nov-26 12:00:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after(&hv("Sun Nov 29 12:00:30 2026"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_retry_after(&hv("-5"), now), None);
        assert_eq!(parse_retry_after(&hv("soon"), now), None);
        assert_eq!(
            parse_retry_after(&hv("1.5"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(&hv("3600.0"), now),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            parse_retry_after(&hv("99999999999999999999999"), now),
            Some(MAX_RETRY_HINT)
        );
        assert_eq!(
            parse_retry_after(&hv("48489"), now),
            Some(Duration::from_secs(48489))
        );
        assert_eq!(
            parse_retry_after(&hv("9999999999"), now),
            Some(MAX_RETRY_HINT)
        );
    }

    /// A well-formed value too long for any integer type means what the
    /// longest one that parses means: the cap, a quota wall. Before, it was
    /// no hint at all, retried as a plain rate limit.
    #[test]
    fn absurdly_long_values_are_clamped_like_long_ones() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
        let long = "9".repeat(200);
        let past_u64 = "18446744073709551616"; // u64::MAX + 1
        for digits in [past_u64, "99999999999999999999999", long.as_str()] {
            assert_eq!(
                parse_retry_after(&hv(digits), now),
                Some(MAX_RETRY_HINT),
                "{digits}"
            );
            assert_eq!(
                parse_retry_after_ms(&hv(digits)),
                Some(MAX_RETRY_HINT),
                "{digits}"
            );
            assert_eq!(
                parse_grpc_pushback(&hv(digits)),
                Pushback::After(MAX_RETRY_HINT)
            );
            assert_eq!(
                parse_proto_duration(&format!("{digits}s")),
                Some(MAX_RETRY_HINT)
            );
            assert_eq!(
                parse_text_hint(&format!("Please try again in {digits}ms.")),
                Some(MAX_RETRY_HINT)
            );
            assert_eq!(
                parse_grpc_pushback(&hv(&format!("-{digits}"))),
                Pushback::DoNotRetry
            );
            assert_eq!(parse_retry_after(&hv(&format!("-{digits}")), now), None);
        }
        // Past f64's range too (1.8e308): still the cap, never "no hint".
        let beyond_f64 = "9".repeat(400);
        assert_eq!(parse_retry_after_ms(&hv(&beyond_f64)), Some(MAX_RETRY_HINT));
        assert_eq!(
            parse_retry_after_ms(&hv(&format!("{beyond_f64}.5"))),
            Some(MAX_RETRY_HINT)
        );
        assert_eq!(
            parse_proto_duration(&format!("{beyond_f64}s")),
            Some(MAX_RETRY_HINT)
        );
        // Leading zeros are not magnitude.
        let padded = format!("{}120", "0".repeat(60));
        assert_eq!(
            parse_retry_after(&hv(&padded), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after_ms(&hv(&padded)),
            Some(Duration::from_millis(120))
        );
        // The same verdict through the headers as the longest value that fits.
        let hint_of = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(http::header::RETRY_AFTER, hv(value));
            RetryHint::from_headers(&headers, now)
        };
        assert_eq!(hint_of(&long), hint_of(&u64::MAX.to_string()));
        assert_eq!(hint_of(&long).after, Some(MAX_RETRY_HINT));
    }

    /// Signs, fractions, exponents and inner whitespace are malformed where
    /// the docs say so; surrounding whitespace is trimmed.
    #[test]
    fn signs_fractions_and_whitespace_behave_as_documented() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
        for bad in ["-5", "+5", "1.5", "1e3", "1 2", "", "   ", "0x10", "5s"] {
            // A fraction is read as the SDKs read it.
            let expected = (bad == "1.5").then_some(Duration::from_millis(1500));
            assert_eq!(parse_retry_after(&hv(bad), now), expected, "{bad:?}");
            // A malformed pushback is no hint either: it refuses a retry.
            assert_eq!(
                parse_grpc_pushback(&hv(bad)),
                Pushback::DoNotRetry,
                "{bad:?}"
            );
        }
        for bad in [
            "-1", "+1", "1e3", "1 2", "", ".", "1.2.3", "-0.5", "inf", "NaN",
        ] {
            assert_eq!(parse_retry_after_ms(&hv(bad)), None, "{bad:?}");
            assert_eq!(parse_proto_duration(&format!("{bad}s")), None, "{bad:?}");
        }
        assert_eq!(parse_proto_duration("26 s"), None);
        assert_eq!(
            parse_retry_after(&hv(" \t120 "), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after_ms(&hv(" 20.5\t")),
            Some(Duration::from_micros(20_500))
        );
        assert_eq!(
            parse_retry_after_ms(&hv(".5")),
            Some(Duration::from_micros(500))
        );
        assert_eq!(
            parse_grpc_pushback(&hv(" 250 ")),
            Pushback::After(Duration::from_millis(250))
        );
        assert_eq!(parse_grpc_pushback(&hv(" -1 ")), Pushback::DoNotRetry);
        assert_eq!(
            parse_proto_duration(" 1.5s "),
            Some(Duration::from_millis(1500))
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
            Pushback::After(Duration::from_millis(250))
        );
        assert_eq!(parse_grpc_pushback(&hv("-1")), Pushback::DoNotRetry);
        // Unparseable is a refusal too (gRFC A6), unlike `Retry-After`.
        for bad in ["-", "1x", "soon", "1.5", ""] {
            assert_eq!(
                parse_grpc_pushback(&hv(bad)),
                Pushback::DoNotRetry,
                "{bad:?}"
            );
        }
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
                should_retry: Some(false),
                limit_reset: None,
            }
        );
        // Garbage pushback refuses a retry (gRFC A6); garbage `Retry-After`
        // is only no hint.
        let mut garbage = HeaderMap::new();
        garbage.insert("grpc-retry-pushback-ms", hv("soon"));
        let hint = RetryHint::from_headers(&garbage, now);
        assert_eq!(hint.should_retry, Some(false));
        let mut garbage = HeaderMap::new();
        garbage.insert("retry-after", hv("soon"));
        assert_eq!(RetryHint::from_headers(&garbage, now), RetryHint::default());
    }

    /// A spent limit's reset is the wait; the longer of two spent ones; a
    /// limit with some left, or a value malformed, says nothing.
    #[test]
    fn a_spent_limits_reset_is_the_wait() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(
                    http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    hv(value),
                );
            }
            parse_rate_limit_reset(&headers)
        };
        let spent_requests = [
            ("x-ratelimit-limit-requests", "60"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "6m0s"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "149984"),
            ("x-ratelimit-reset-tokens", "12ms"),
        ];
        assert_eq!(headers(&spent_requests), Some(Duration::from_secs(360)));
        let spent_tokens = [
            ("x-ratelimit-remaining-requests", "59"),
            ("x-ratelimit-reset-requests", "6m0s"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "7.66s"),
        ];
        assert_eq!(headers(&spent_tokens), Some(Duration::from_millis(7660)));
        let both_spent = [
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "2m59.56s"),
            ("x-ratelimit-remaining-tokens", " 0 "),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ];
        assert_eq!(headers(&both_spent), Some(Duration::from_secs(360)));
        for nothing in [
            &[
                ("x-ratelimit-remaining-requests", "5"),
                ("x-ratelimit-reset-requests", "6m0s"),
            ][..],
            // Azure's "no limit" values, a reset without its unit, a
            // reset without a count, a count without a reset.
            &[
                ("x-ratelimit-remaining-tokens", "-1"),
                ("x-ratelimit-reset-tokens", "0"),
            ],
            &[
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-reset-tokens", "60"),
            ],
            &[("x-ratelimit-reset-requests", "6m0s")],
            &[("x-ratelimit-remaining-requests", "0")],
            &[],
        ] {
            assert_eq!(headers(nothing), None, "{nothing:?}");
        }
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
        assert_eq!(
            parse_text_hint("Please retry in 38.962214405s."),
            Some(Duration::new(38, 962_214_405))
        );
        assert_eq!(parse_text_hint("Please retry in a moment."), None);
    }

    /// Azure OpenAI spells its wait out, and after "retry after": a quota
    /// wall of a day read as no hint was retried as a blip, its route
    /// never cooled, when a proxy dropped the `Retry-After` header.
    #[test]
    fn text_hints_may_spell_their_unit() {
        let azure = "Requests to the ChatCompletions_Create Operation under Azure OpenAI                      API version 2024-02-01 have exceeded token rate limit of your current                      OpenAI S0 pricing tier. Please retry after 86400 seconds. Please go                      here: https://aka.ms/oai/quotaincrease if you would like to further                      increase the default rate limit.";
        assert_eq!(parse_text_hint(azure), Some(Duration::from_secs(86400)));
        assert_eq!(
            parse_text_hint("Rate limit is exceeded. Try again in 59 seconds."),
            Some(Duration::from_secs(59))
        );
        assert_eq!(
            parse_text_hint("retry after 1 second"),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            parse_text_hint("Please retry after 500 milliseconds."),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_text_hint("try again in 2 Minutes"),
            Some(Duration::from_secs(120))
        );
        // Words that are no unit, or no number at all: no hint.
        assert_eq!(parse_text_hint("please retry after a short wait"), None);
        assert_eq!(parse_text_hint("retry after 5 parsecs"), None);
        assert_eq!(parse_text_hint("retry after 5secondsish"), None);
        assert_eq!(parse_text_hint("retry after 3 secondary attempts"), None);
    }

    /// Groq writes a wait of minutes with a space between its parts
    /// ("Please try again in 6m 11.52s."): the whole wait, not its first
    /// part, which for "1m 5.5s" stayed under the quota wall. A space
    /// joins only whole parts, each a number and its unit.
    #[test]
    fn text_hints_may_space_their_parts() {
        let groq = "Rate limit reached for model `openai/gpt-oss-20b` in organization \
                    org_01 service tier `on_demand` on tokens per day (TPD): Limit 200000, \
                    Used 199336, Requested 1524. Please try again in 6m 11.52s. Need more \
                    tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing";
        assert_eq!(
            parse_text_hint(groq),
            Some(Duration::from_secs_f64(6.0 * 60.0 + 11.52))
        );
        assert_eq!(
            parse_text_hint("try again in 1m 5.5s."),
            Some(Duration::from_millis(65_500))
        );
        assert_eq!(
            parse_text_hint("try again in 1h 2m 3s"),
            Some(Duration::from_secs(3723))
        );
        // A number apart from its unit is no part: no hint, as before.
        assert_eq!(parse_text_hint("try again in 1 m"), None);
        assert_eq!(parse_text_hint("try again in 1 m 5s"), None);
        // Words after the wait are not read into it.
        assert_eq!(
            parse_text_hint("try again in 20s and then 5s"),
            Some(Duration::from_secs(20))
        );
        // Nor a number the sentence goes on with.
        assert_eq!(
            parse_text_hint("try again in 20s 3 more requests are queued"),
            Some(Duration::from_secs(20))
        );
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
                // A spent limit whose reset is anything.
                let mut spent = HeaderMap::new();
                for (remaining, reset) in [
                    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
                    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
                ] {
                    spent.insert(remaining, HeaderValue::from_static("0"));
                    spent.insert(reset, value.clone());
                }
                prop_assert!(parse_rate_limit_reset(&spent).is_none_or(|d| d <= MAX_RETRY_HINT));
            }
            let text = String::from_utf8_lossy(&bytes);
            prop_assert!(parse_proto_duration(&text).is_none_or(|d| d <= MAX_RETRY_HINT));
            prop_assert!(parse_text_hint(&text).is_none_or(|d| d <= MAX_RETRY_HINT));
        }

        /// Any run of digits is a hint, at most the cap, and exactly the
        /// number it spells up to the cap; leading zeros change nothing.
        #[test]
        fn any_run_of_digits_is_a_capped_hint(digits in "[0-9]{1,200}") {
            let value = hv(&digits);
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
            let significant = digits.trim_start_matches('0');
            let cap = MAX_RETRY_HINT.as_secs();
            // The cap has 6 digits: longer is past it, shorter fits a u64.
            let spelled = (significant.len() <= 7)
                .then(|| significant.parse::<u64>().unwrap_or(0))
                .filter(|&n| n < cap);
            prop_assert_eq!(
                parse_retry_after(&value, now),
                Some(spelled.map_or(MAX_RETRY_HINT, Duration::from_secs))
            );
            let after = parse_retry_after_ms(&value);
            prop_assert!(after.is_some_and(|d| d <= MAX_RETRY_HINT));
            let pushback = parse_grpc_pushback(&value);
            prop_assert!(matches!(pushback, Pushback::After(d) if d <= MAX_RETRY_HINT));
            let (proto, text) = (format!("{digits}s"), format!("try again in {digits}s."));
            let proto = parse_proto_duration(&proto);
            prop_assert!(proto.is_some_and(|d| d <= MAX_RETRY_HINT));
            prop_assert_eq!(parse_text_hint(&text), proto);
        }

        /// A larger number never gives a shorter hint, in any form.
        #[test]
        fn longer_numbers_never_give_shorter_hints(
            a in "[0-9]{1,200}",
            b in "[0-9]{1,200}",
            fraction in proptest::option::of("[0-9]{1,12}"),
        ) {
            let magnitude = |s: &str| {
                let s = s.trim_start_matches('0');
                (s.len(), s.to_owned())
            };
            let (small, large) = if magnitude(&a) <= magnitude(&b) { (a, b) } else { (b, a) };
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
            prop_assert!(parse_retry_after(&hv(&small), now) <= parse_retry_after(&hv(&large), now));
            let pushback = |s: &str| match parse_grpc_pushback(&hv(s)) {
                Pushback::After(d) => Some(d),
                _ => None,
            };
            prop_assert!(pushback(&small) <= pushback(&large));
            // A fraction on the smaller number cannot lift it past the
            // larger, unless the two are equal.
            let small = match &fraction {
                Some(f) if magnitude(&small) < magnitude(&large) => format!("{small}.{f}"),
                _ => small,
            };
            let ms = (parse_retry_after_ms(&hv(&small)), parse_retry_after_ms(&hv(&large)));
            prop_assert!(ms.0 <= ms.1);
            let (small_s, large_s) = (format!("{small}s"), format!("{large}s"));
            let proto = (parse_proto_duration(&small_s), parse_proto_duration(&large_s));
            prop_assert!(proto.0 <= proto.1);
            let (small_t, large_t) = (format!("try again in {small}ms"), format!("try again in {large}ms"));
            let text = (parse_text_hint(&small_t), parse_text_hint(&large_t));
            prop_assert!(text.0 <= text.1);
        }

        /// Digits with anything but a digit (or, where fractions are
        /// allowed, one dot) inside are no hint, however long.
        #[test]
        fn digits_with_garbage_inside_are_no_hint(
            head in "[0-9]{1,100}",
            junk in "[-+eEx,_ :/]",
            tail in "[0-9]{1,100}",
        ) {
            let text = format!("{head}{junk}{tail}");
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1 << 32);
            // A comma separates a list's elements (a proxy's folding):
            // `Retry-After` is then its first.
            let listed = if junk == "," { parse_retry_after(&hv(&head), now) } else { None };
            prop_assert_eq!(parse_retry_after(&hv(&text), now), listed);
            prop_assert_eq!(parse_retry_after_ms(&hv(&text)), None);
            prop_assert_eq!(parse_grpc_pushback(&hv(&text)), Pushback::DoNotRetry);
            let proto = format!("{text}s");
            prop_assert_eq!(parse_proto_duration(&proto), None);
        }

        #[test]
        fn any_number_of_seconds_is_capped(n in any::<u64>()) {
            let value = HeaderValue::from_str(&n.to_string()).unwrap();
            let got = parse_retry_after(&value, SystemTime::now()).unwrap();
            prop_assert_eq!(got, Duration::from_secs(n).min(MAX_RETRY_HINT));
        }
    }
}
