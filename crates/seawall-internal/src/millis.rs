use std::time::Duration;

/// `duration` in whole milliseconds, `u64::MAX` when it does not fit (a
/// `Duration` holds up to 2^64 seconds): for log fields, journal rows and
/// millisecond clocks, where a wrapped or truncated count would lie.
///
/// ```
/// use seawall_internal::millis;
/// use std::time::Duration;
///
/// assert_eq!(millis(Duration::from_micros(2_999)), 2);
/// assert_eq!(millis(Duration::MAX), u64::MAX);
/// ```
#[inline]
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_instead_of_wrapping() {
        assert_eq!(millis(Duration::ZERO), 0);
        assert_eq!(millis(Duration::from_secs(1)), 1000);
        let last = Duration::from_millis(u64::MAX);
        assert_eq!(millis(last), u64::MAX);
        assert_eq!(millis(last + Duration::from_secs(1)), u64::MAX);
    }
}
