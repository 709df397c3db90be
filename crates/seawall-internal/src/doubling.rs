//! Capped exponential growth: the retry ladder's backoff ceiling and the
//! breaker's break both double from a base up to a cap.

use std::time::Duration;

/// `min(cap, base × 2^n)`, exact and without overflow for every input: a
/// product beyond `cap` (or beyond what a [`Duration`] holds) is `cap`, and
/// a zero `base` stays zero however large `n` is.
///
/// ```
/// use seawall_internal::capped_doubling;
/// use std::time::Duration;
///
/// let ms = Duration::from_millis;
/// let ceilings: Vec<_> = (0..6).map(|n| capped_doubling(ms(250), ms(4000), n)).collect();
/// assert_eq!(ceilings, [ms(250), ms(500), ms(1000), ms(2000), ms(4000), ms(4000)]);
/// assert_eq!(capped_doubling(ms(250), ms(4000), u32::MAX), ms(4000));
/// ```
pub fn capped_doubling(base: Duration, cap: Duration, n: u32) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    let base = base.as_nanos();
    if base == 0 {
        return Duration::ZERO;
    }
    // A `Duration` is under 2^95 ns, so the product is exact in a u128
    // whenever it fits; when it does not, it is past any cap.
    let doubled = 1u128
        .checked_shl(n)
        .and_then(|factor| base.checked_mul(factor));
    match doubled {
        // Below `cap`, so its seconds fit in a u64.
        Some(nanos) if nanos < cap.as_nanos() => Duration::new(
            (nanos / NANOS_PER_SEC) as u64,
            (nanos % NANOS_PER_SEC) as u32,
        ),
        _ => cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn doubles_then_caps() {
        let grown: Vec<_> = (0..8)
            .map(|n| capped_doubling(5 * MS, 300 * MS, n))
            .collect();
        assert_eq!(grown, [5, 10, 20, 40, 80, 160, 300, 300].map(|ms| ms * MS));
        assert_eq!(capped_doubling(5 * MS, 5 * MS, 0), 5 * MS);
        // A base above the cap is cut to the cap at once.
        assert_eq!(capped_doubling(10 * MS, 5 * MS, 0), 5 * MS);
    }

    #[test]
    fn absurd_inputs_neither_overflow_nor_panic() {
        for n in [31, 32, 33, 64, 94, 95, 127, 128, 1000, u32::MAX] {
            assert_eq!(capped_doubling(250 * MS, 8000 * MS, n), 8000 * MS, "{n}");
            assert_eq!(
                capped_doubling(Duration::MAX, Duration::MAX, n),
                Duration::MAX
            );
            assert_eq!(
                capped_doubling(Duration::ZERO, Duration::MAX, n),
                Duration::ZERO
            );
            assert_eq!(
                capped_doubling(Duration::MAX, Duration::ZERO, n),
                Duration::ZERO
            );
        }
        // Past 2^31 the product is still exact while it is under the cap.
        let tiny = Duration::from_nanos(1);
        let hour = Duration::from_secs(3600);
        assert_eq!(
            capped_doubling(tiny, hour, 40),
            Duration::from_nanos(1 << 40)
        );
        assert_eq!(capped_doubling(tiny, Duration::MAX, 93).as_nanos(), 1 << 93);
        assert_eq!(capped_doubling(tiny, Duration::MAX, 94), Duration::MAX);
    }

    proptest! {
        /// Where `Duration`'s own `u32` multiplication reaches, the result
        /// is that product capped.
        #[test]
        fn agrees_with_checked_multiplication(
            base_ns: u64,
            cap_ns: u64,
            secs in 0u64..1 << 40,
            n in 0u32..32,
        ) {
            let base = Duration::from_nanos(base_ns);
            let cap = Duration::new(secs, 0) + Duration::from_nanos(cap_ns);
            let expected = base.checked_mul(1 << n).map_or(cap, |d| d.min(cap));
            prop_assert_eq!(capped_doubling(base, cap, n), expected);
        }
    }
}
