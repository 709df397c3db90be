//! What the loopback suites share.

use std::time::Duration;

use seawall_retry::{Backoff, Budget, RetryBudgetLayer, RetryPolicy};

/// The interactive ladder with millisecond backoff and no budget limit:
/// a continuation's retries take no test time.
pub(crate) fn quick_ladder() -> RetryBudgetLayer {
    RetryBudgetLayer::new(
        RetryPolicy::interactive()
            .backoff(Backoff::exponential(
                Duration::from_millis(1),
                Duration::from_millis(4),
            ))
            .min_attempt_time(Duration::from_millis(1)),
        Budget::unlimited(),
    )
}
