//! What the ladder records through the `metrics` facade (feature
//! `metrics`; without it every function here is empty and inlined away).
//! Names: [`seawall_core::metric_names`].

#[cfg(feature = "metrics")]
mod on {
    use std::time::Duration;

    use seawall_core::metric_names::{
        ATTEMPTS_TOTAL, OPERATION_DURATION_SECONDS, RETRIES_TOTAL, RETRY_BUDGET_EXHAUSTED_TOTAL,
        TOKENS_TOTAL,
    };
    use seawall_core::{Code, RouteId, Usage};

    pub(crate) fn attempt(route: &RouteId, code: Option<Code>) {
        let (code, outcome) = match code {
            Some(code) => (code.as_str(), "failure"),
            None => ("ok", "success"),
        };
        metrics::counter!(ATTEMPTS_TOTAL, "route" => route.to_shared(), "code" => code, "outcome" => outcome)
            .increment(1);
    }

    pub(crate) fn retry(route: &RouteId, code: Code) {
        metrics::counter!(RETRIES_TOTAL, "route" => route.to_shared(), "code" => code.as_str())
            .increment(1);
    }

    pub(crate) fn budget_exhausted() {
        metrics::counter!(RETRY_BUDGET_EXHAUSTED_TOTAL).increment(1);
    }

    pub(crate) fn operation(elapsed: Duration, success: bool) {
        // Literal labels: a static key, no label vector built per call.
        let histogram = if success {
            metrics::histogram!(OPERATION_DURATION_SECONDS, "outcome" => "success")
        } else {
            metrics::histogram!(OPERATION_DURATION_SECONDS, "outcome" => "failure")
        };
        histogram.record(elapsed.as_secs_f64());
    }

    pub(crate) fn tokens(route: &RouteId, usage: Usage) {
        metrics::counter!(TOKENS_TOTAL, "route" => route.to_shared(), "kind" => "input")
            .increment(usage.input_tokens);
        metrics::counter!(TOKENS_TOTAL, "route" => route.to_shared(), "kind" => "output")
            .increment(usage.output_tokens);
    }
}

#[cfg(not(feature = "metrics"))]
mod on {
    use seawall_core::{Code, RouteId, Usage};

    #[inline(always)]
    pub(crate) fn attempt(_: &RouteId, _: Option<Code>) {}
    #[inline(always)]
    pub(crate) fn retry(_: &RouteId, _: Code) {}
    #[inline(always)]
    pub(crate) fn budget_exhausted() {}
    #[inline(always)]
    pub(crate) fn tokens(_: &RouteId, _: Usage) {}
}

pub(crate) use on::*;
