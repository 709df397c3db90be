//! What more than one layer records through the `metrics` facade (feature
//! `metrics`; without it every function here is empty and inlined away):
//! an upstream attempt and the tokens an answer reported. The ladder
//! records its own attempts; a fallback the attempts of a route without a
//! ladder of its own. Names: [`metric_names`](crate::metric_names).

use crate::{Code, RouteId, Usage};

/// One upstream attempt on `route`: its failure's code, or `None` when it
/// answered. The `outcome` label is `success`, `failure`, or `cancelled`
/// for an attempt in flight when its caller stopped waiting
/// ([`Code::Cancelled`]): a caller that stops waiting broke nothing, so an
/// alert on failures does not fire on a user's stop or a client gone.
#[inline]
pub fn attempt(route: &RouteId, code: Option<Code>) {
    #[cfg(feature = "metrics")]
    {
        let (code, outcome) = match code {
            Some(Code::Cancelled) => (Code::Cancelled.as_str(), "cancelled"),
            Some(code) => (code.as_str(), "failure"),
            None => ("ok", "success"),
        };
        metrics::counter!(crate::metric_names::ATTEMPTS_TOTAL, "route" => route.to_shared(), "code" => code, "outcome" => outcome)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (route, code);
}

/// The tokens a whole answer from `route` reported (a stream's are
/// recorded by the stream guard when it ends).
#[inline]
pub fn tokens(route: &RouteId, usage: Usage) {
    #[cfg(feature = "metrics")]
    {
        use crate::metric_names::TOKENS_TOTAL;
        metrics::counter!(TOKENS_TOTAL, "route" => route.to_shared(), "kind" => "input")
            .increment(usage.input_tokens);
        metrics::counter!(TOKENS_TOTAL, "route" => route.to_shared(), "kind" => "output")
            .increment(usage.output_tokens);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (route, usage);
}
