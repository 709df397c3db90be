//! The remaining time on the wire: `grpc-timeout` and a plain millisecond
//! header.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// How a deadline travels in request headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireTimeout {
    /// gRPC's `grpc-timeout`: at most 8 digits and a unit (`H`, `M`, `S`,
    /// `m`, `u`, `n`).
    Grpc,
    /// A header holding the remaining time in whole milliseconds, such as
    /// `x-request-timeout-ms`: written rounded up, and at least 1.
    Millis(HeaderName),
}

const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The most digits `grpc-timeout` allows.
const GRPC_MAX_DIGITS: usize = 8;

/// A millisecond header longer than this is garbage, not a deadline.
const MILLIS_MAX_DIGITS: usize = 19;

impl WireTimeout {
    /// `grpc-timeout`.
    pub fn grpc() -> Self {
        WireTimeout::Grpc
    }

    /// Whole milliseconds in the header `name`.
    pub fn millis(name: HeaderName) -> Self {
        WireTimeout::Millis(name)
    }

    /// Writes `remaining` into `headers`, replacing any value already there.
    pub fn write(&self, headers: &mut HeaderMap, remaining: Duration) {
        match self {
            WireTimeout::Grpc => {
                headers.insert(GRPC_TIMEOUT, format_grpc_timeout(remaining));
            }
            WireTimeout::Millis(name) => {
                headers.insert(name.clone(), HeaderValue::from(ceil_millis(remaining)));
            }
        }
    }

    /// Whether `headers` carry this header at all.
    pub fn is_in(&self, headers: &HeaderMap) -> bool {
        match self {
            WireTimeout::Grpc => headers.contains_key(GRPC_TIMEOUT),
            WireTimeout::Millis(name) => headers.contains_key(name),
        }
    }

    /// Reads the remaining time from `headers`. A missing, malformed or
    /// absurd value reads as `None`: the layer then keeps its own bound.
    pub fn read(&self, headers: &HeaderMap) -> Option<Duration> {
        match self {
            WireTimeout::Grpc => headers.get(GRPC_TIMEOUT).and_then(parse_grpc_timeout),
            WireTimeout::Millis(name) => {
                let text = headers.get(name)?.as_bytes();
                parse_digits(text, MILLIS_MAX_DIGITS).map(Duration::from_millis)
            }
        }
    }
}

/// `remaining` in whole milliseconds for the wire: rounded up, as
/// `grpc-timeout` is, and at least 1, since a receiver may read 0 as no
/// timeout at all (truncated, any time under a millisecond was 0).
fn ceil_millis(remaining: Duration) -> u64 {
    u64::try_from(remaining.as_nanos().div_ceil(1_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Formats a duration as a `grpc-timeout` value: the finest unit whose
/// value fits in 8 digits, rounded up (as gRPC's own implementations do), so
/// the value never claims less precision than the duration has. Durations
/// beyond `99999999H` are written as that maximum; no time left at all is
/// `1n`, the smallest value the header has (its value is a positive
/// integer: a strict server refuses `0n`).
pub fn format_grpc_timeout(timeout: Duration) -> HeaderValue {
    const UNITS: [(u128, u8); 6] = [
        (1, b'n'),
        (1_000, b'u'),
        (1_000_000, b'm'),
        (1_000_000_000, b'S'),
        (60_000_000_000, b'M'),
        (3_600_000_000_000, b'H'),
    ];
    let nanos = timeout.as_nanos().max(1);
    let (value, unit) = UNITS
        .iter()
        .map(|&(per_unit, unit)| (nanos.div_ceil(per_unit), unit))
        .find(|&(value, _)| value < 100_000_000)
        .unwrap_or((99_999_999, b'H'));
    // At most 8 digits and one ASCII letter: always a valid header value.
    let mut text = value.to_string();
    text.push(char::from(unit));
    HeaderValue::try_from(text).expect("digits and a unit letter are a valid header value")
}

/// Parses a `grpc-timeout` value. Anything but 1 to 8 ASCII digits followed
/// by one of `H M S m u n` is `None`.
pub fn parse_grpc_timeout(value: &HeaderValue) -> Option<Duration> {
    let (&unit, digits) = value.as_bytes().split_last()?;
    let amount = parse_digits(digits, GRPC_MAX_DIGITS)?;
    Some(match unit {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// 1 to `max_digits` ASCII digits as a number.
fn parse_digits(text: &[u8], max_digits: usize) -> Option<u64> {
    if text.is_empty() || text.len() > max_digits || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    text.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn grpc(text: &'static str) -> Option<Duration> {
        parse_grpc_timeout(&HeaderValue::from_static(text))
    }

    #[test]
    fn formats_in_the_finest_unit_that_fits() {
        let cases = [
            // No time left is still a positive value on the wire: the
            // spec's TimeoutValue is a positive integer.
            (Duration::ZERO, "1n"),
            (Duration::from_nanos(1), "1n"),
            (Duration::from_nanos(99_999_999), "99999999n"),
            (Duration::from_millis(100), "100000u"),
            (Duration::from_secs(5), "5000000u"),
            (Duration::from_secs(600), "600000m"),
            (Duration::from_secs(100_000), "100000S"),
            (Duration::from_secs(100_000_000), "1666667M"),
            (Duration::MAX, "99999999H"),
        ];
        for (duration, expected) in cases {
            assert_eq!(format_grpc_timeout(duration), expected, "{duration:?}");
        }
    }

    #[test]
    fn parses_every_unit_and_rejects_garbage() {
        assert_eq!(grpc("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(grpc("2M"), Some(Duration::from_secs(120)));
        assert_eq!(grpc("3S"), Some(Duration::from_secs(3)));
        assert_eq!(grpc("4m"), Some(Duration::from_millis(4)));
        assert_eq!(grpc("5u"), Some(Duration::from_micros(5)));
        assert_eq!(grpc("6n"), Some(Duration::from_nanos(6)));
        assert_eq!(
            grpc("99999999H"),
            Some(Duration::from_secs(99_999_999 * 3600))
        );
        for bad in [
            "",
            "S",
            "123456789S",
            "10",
            "10s",
            "-1S",
            "1.5S",
            " 1S",
            "1 S",
            "1SS",
        ] {
            assert_eq!(grpc(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn millisecond_header_round_trips_and_rejects_garbage() {
        let wire = WireTimeout::millis(HeaderName::from_static("x-request-timeout-ms"));
        let mut headers = HeaderMap::new();
        wire.write(&mut headers, Duration::from_millis(2500));
        assert_eq!(headers["x-request-timeout-ms"], "2500");
        assert_eq!(wire.read(&headers), Some(Duration::from_millis(2500)));
        // Rounded up, as `grpc-timeout` is, and never 0: a receiver may
        // read 0 as no timeout at all.
        for (remaining, written) in [
            (Duration::from_micros(300), "1"),
            (Duration::from_micros(2_500_900), "2501"),
            (Duration::ZERO, "1"),
            (Duration::MAX, "18446744073709551615"),
        ] {
            wire.write(&mut headers, remaining);
            assert_eq!(headers["x-request-timeout-ms"], written, "{remaining:?}");
        }
        for bad in ["", "-5", "1e3", "99999999999999999999", "12 "] {
            headers.insert("x-request-timeout-ms", HeaderValue::from_static(bad));
            assert_eq!(wire.read(&headers), None, "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn grpc_round_trip_never_shortens_and_stays_close(nanos in 0u64..u64::MAX) {
            let duration = Duration::from_nanos(nanos);
            let value = format_grpc_timeout(duration);
            prop_assert!(value.len() <= GRPC_MAX_DIGITS + 1);
            let parsed = parse_grpc_timeout(&value).unwrap();
            prop_assert!(parsed >= duration);
            // Rounded up by at most one unit, and a unit is at most 1e-7 of
            // the value (8 digits) except when the value itself is tiny.
            prop_assert!(parsed - duration <= duration / 1_000_000 + Duration::from_nanos(1));
        }

        #[test]
        fn grpc_parse_never_panics(text in "[0-9HMSmun]{0,12}") {
            if let Ok(value) = HeaderValue::from_str(&text) {
                let _ = parse_grpc_timeout(&value);
            }
        }
    }
}
