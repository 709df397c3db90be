//! Whose limit a failure met: the model's on its route, or the route's
//! (its account, key or host) as a whole.
//!
//! A provider's limits are not all the account's. Google's quotas are per
//! project *per model* (`GenerateRequestsPerDayPerProjectPerModel`, a
//! `QuotaFailure` whose `quotaDimensions` name the model); OpenAI's rate
//! limits are per model too ("Rate limit reached for gpt-4o in
//! organization …"). One model's wall then says nothing of the route's
//! other models: cooling the whole route for it refuses, for hours, calls
//! whose quota is untouched. What stays the account's: OpenAI's
//! `insufficient_quota` (billing), Anthropic's spend cap, a 402, and
//! everything that is not a limit (rejected credentials, a transport
//! error, a 5xx).

use crate::{Code, Failure};

/// What a failure's cooldown ([`Failure::cooldown`]) holds back: see
/// [`Failure::cools`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cools {
    /// Every call to the route: the account's, key's or host's failure,
    /// or one whose evidence does not say it is the model's.
    Route,
    /// Only calls for the request's model on the route: a rate limit or a
    /// quota wall the provider keeps per model.
    Model,
}

impl Cools {
    /// The stable name: `route` or `model`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Cools::Route => "route",
            Cools::Model => "model",
        }
    }
}

impl Failure {
    /// Whose limit this failure met, read from its evidence: [`Cools::Model`]
    /// for a rate limit or a quota wall that the provider says is the
    /// model's, [`Cools::Route`] for anything else — and whenever the
    /// evidence does not say, as before (cooling too much refuses calls
    /// a fallback then serves; cooling too little sends every call of the
    /// walled model to meet the wall).
    ///
    /// The model's:
    /// - a `QuotaFailure` quota id naming a per-model quota
    ///   (`…PerModel…`, `…per_base_model…`) in a gRPC status's details or
    ///   in the message;
    /// - Gemini's message naming the model of the quota it exceeded
    ///   ("Quota exceeded for metric: …, limit: 50, model: gemini-2.5-pro");
    /// - OpenAI's rate limit naming its model ("Rate limit reached for
    ///   gpt-4o in organization …").
    ///
    /// Never the model's: a code other than `rate_limited` or
    /// `quota_exhausted`; OpenAI's `insufficient_quota` (billing, the
    /// account's whatever model it was asked for); a 402.
    ///
    /// Which model is the request's to say (its
    /// [`RequestFacts::model`](crate::RequestFacts::model)): the failure
    /// names the limit, not the name the caller will ask by.
    pub fn cools(&self) -> Cools {
        if !matches!(self.code(), Code::RateLimited | Code::QuotaExhausted)
            || self.status() == Some(402)
            || self.provider_code() == Some("insufficient_quota")
            || self.provider_type() == Some("insufficient_quota")
        {
            return Cools::Route;
        }
        let per_model_id = |text: &[u8]| {
            ["permodel", "per_model", "per_base_model"]
                .iter()
                .any(|id| contains_ci(text, id.as_bytes()))
        };
        if self.status_details().is_some_and(per_model_id) {
            return Cools::Model;
        }
        let Some(message) = self.message() else {
            return Cools::Route;
        };
        // OpenAI's rate limit stays the model's when its wait makes it a
        // quota wall (a reset an hour out).
        if per_model_id(message.as_bytes())
            || names_quota_model(message)
            || names_rate_limit_model(message)
        {
            return Cools::Model;
        }
        Cools::Route
    }
}

/// Gemini's "Quota exceeded for metric: …, limit: N, model: NAME": the
/// quota the message names is the model's.
fn names_quota_model(message: &str) -> bool {
    message
        .split("Quota exceeded for metric:")
        .skip(1)
        .any(|line| {
            line.split_once(", model: ")
                .is_some_and(|(_, model)| model.starts_with(|c: char| c.is_ascii_alphanumeric()))
        })
}

/// OpenAI's rate-limit message naming its model: "Rate limit reached for
/// MODEL in organization …" (one word: a model's name), and Groq's, which
/// writes "Rate limit reached for model `MODEL` in organization `org_…`".
fn names_rate_limit_model(message: &str) -> bool {
    message
        .split_once("Rate limit reached for ")
        .and_then(|(_, rest)| rest.split_once(" in organization"))
        .is_some_and(|(model, _)| {
            let model = model
                .strip_prefix("model `")
                .and_then(|quoted| quoted.strip_suffix('`'))
                .unwrap_or(model);
            !model.is_empty() && !model.contains(char::is_whitespace)
        })
}

/// Whether `haystack` holds `needle` (lowercase ASCII), ignoring ASCII case.
fn contains_ci(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(message: &str) -> Failure {
        Failure::new(Code::QuotaExhausted)
            .with_status(429)
            .with_message(message)
    }

    #[test]
    fn a_per_model_quota_is_the_models() {
        let gemini = wall(
            "You exceeded your current quota, please check your plan and billing details.\n\
             * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, \
             limit: 50, model: gemini-2.5-pro",
        );
        assert_eq!(gemini.cools(), Cools::Model);
        let grpc = Failure::new(Code::QuotaExhausted)
            .with_status_details(&b"\x0a\x2cGenerateRequestsPerDayPerProjectPerModel-FreeTier"[..]);
        assert_eq!(grpc.cools(), Cools::Model);
        let vertex = Failure::new(Code::RateLimited).with_message(
            "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model \
             with base model: gemini-2.5-flash.",
        );
        assert_eq!(vertex.cools(), Cools::Model);
        let openai = Failure::new(Code::RateLimited).with_message(
            "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500.",
        );
        assert_eq!(openai.cools(), Cools::Model);
        // Groq's words for its per-model daily tokens.
        let groq = Failure::new(Code::QuotaExhausted).with_message(
            "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` \
             service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 99000, \
             Requested 2000. Please try again in 1h34m.",
        );
        assert_eq!(groq.cools(), Cools::Model);
        let spaced = Failure::new(Code::RateLimited)
            .with_message("Rate limit reached for model `two words` in organization `org_01`");
        assert_eq!(spaced.cools(), Cools::Route);
        // The same limit, its long wait read as a wall.
        let long = Failure::new(Code::QuotaExhausted)
            .with_provider_code("rate_limit_exceeded")
            .with_message(
                "Rate limit reached for gpt-4o in organization org-x on tokens per day (TPD).",
            );
        assert_eq!(long.cools(), Cools::Model);
    }

    #[test]
    fn the_accounts_walls_and_the_unsaid_stay_the_routes() {
        let billing = Failure::new(Code::QuotaExhausted)
            .with_provider_code("insufficient_quota")
            .with_message("Rate limit reached for gpt-4o in organization org-x");
        assert_eq!(billing.cools(), Cools::Route);
        assert_eq!(
            wall("model: gemini-2.5-pro").with_status(402).cools(),
            Cools::Route
        );
        assert_eq!(
            wall("You exceeded your current quota, please check your plan").cools(),
            Cools::Route
        );
        assert_eq!(Failure::new(Code::RateLimited).cools(), Cools::Route);
        let auth = Failure::new(Code::Auth).with_message("PerModel");
        assert_eq!(auth.cools(), Cools::Route);
        let anthropic = Failure::new(Code::RateLimited).with_message(
            "This request would exceed your organization's rate limit of 50,000 input tokens per minute.",
        );
        assert_eq!(anthropic.cools(), Cools::Route);
    }
}
