//! What the ladder records through the `metrics` facade (feature
//! `metrics`; without it every function here is empty and inlined away).
//! Names: [`seawall_core::metric_names`]; an attempt and its tokens are
//! recorded as a fallback records them ([`seawall_core::record`]).

#[cfg(feature = "metrics")]
mod on {
    use std::time::Duration;

    use seawall_core::metric_names::{
        OPERATION_DURATION_SECONDS, RETRIES_TOTAL, RETRY_BUDGET_EXHAUSTED_TOTAL,
    };
    use seawall_core::{Code, RouteId};

    // What the fallback records too, recorded once in seawall-core.
    pub(crate) use seawall_core::record::{attempt, tokens};

    pub(crate) fn retry(route: &RouteId, code: Code) {
        metrics::counter!(RETRIES_TOTAL, "route" => route.to_shared(), "code" => code.as_str())
            .increment(1);
    }

    pub(crate) fn budget_exhausted() {
        metrics::counter!(RETRY_BUDGET_EXHAUSTED_TOTAL).increment(1);
    }

    /// How an operation ended, the duration histogram's `outcome`.
    #[derive(Clone, Copy)]
    pub(crate) enum Outcome {
        Success,
        Failure,
        /// Dropped by its caller before its outcome.
        Cancelled,
    }

    pub(crate) fn operation(elapsed: Duration, outcome: Outcome) {
        // Literal labels: a static key, no label vector built per call.
        let histogram = match outcome {
            Outcome::Success => {
                metrics::histogram!(OPERATION_DURATION_SECONDS, "outcome" => "success")
            }
            Outcome::Failure => {
                metrics::histogram!(OPERATION_DURATION_SECONDS, "outcome" => "failure")
            }
            Outcome::Cancelled => {
                metrics::histogram!(OPERATION_DURATION_SECONDS, "outcome" => "cancelled")
            }
        };
        histogram.record(elapsed.as_secs_f64());
    }
}

#[cfg(not(feature = "metrics"))]
mod on {
    use seawall_core::{Code, RouteId, Usage};

    // seawall-core's recording may be on for another crate's feature:
    // this crate records only with its own.
    #[inline(always)]
    pub(crate) fn attempt(_: &RouteId, _: Option<Code>) {}
    #[inline(always)]
    pub(crate) fn tokens(_: &RouteId, _: Usage) {}
    #[inline(always)]
    pub(crate) fn retry(_: &RouteId, _: Code) {}
    #[inline(always)]
    pub(crate) fn budget_exhausted() {}
}

pub(crate) use on::*;
