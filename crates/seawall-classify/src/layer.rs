use std::sync::Arc;
use std::time::Duration;

use seawall_core::Class;
use seawall_core::provider::{Provider, QuotaWall};
use tower_layer::Layer;

use crate::classifier::WithRules;
use crate::{Classify, ProviderClassifier};

/// Bounds and policies of a [`ClassifyLayer`], shared by its services.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub(crate) quota_wall: QuotaWall,
    pub(crate) max_error_body: usize,
    pub(crate) max_success_body: usize,
    pub(crate) max_answer_body: u64,
    pub(crate) unknown_errors: Class,
    pub(crate) deliver_policy: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            quota_wall: QuotaWall::default(),
            max_error_body: ClassifyLayer::DEFAULT_MAX_ERROR_BODY,
            max_success_body: ClassifyLayer::DEFAULT_MAX_SUCCESS_BODY,
            max_answer_body: ClassifyLayer::DEFAULT_MAX_ANSWER_BODY,
            unknown_errors: Class::Permanent,
            deliver_policy: false,
        }
    }
}

/// Turns responses and errors of the inner service into
/// [`Failure`](seawall_core::Failure)s. See the [crate docs](crate).
#[derive(Debug, Clone)]
pub struct ClassifyLayer<C = ProviderClassifier> {
    classifier: C,
    settings: Settings,
}

impl ClassifyLayer {
    /// How much of an error body is read by default: 64 KiB.
    pub const DEFAULT_MAX_ERROR_BODY: usize = 64 * 1024;
    /// How much of a 2xx unary JSON body is read to check it by default: 8 MiB.
    pub const DEFAULT_MAX_SUCCESS_BODY: usize = 8 * 1024 * 1024;
    /// The longest 2xx JSON answer handed on by default: 256 MiB.
    pub const DEFAULT_MAX_ANSWER_BODY: u64 = 256 * 1024 * 1024;

    /// OpenAI and OpenAI-compatible APIs.
    pub fn openai() -> Self {
        ClassifyLayer::new(ProviderClassifier::openai())
    }

    /// The OpenAI Responses API. An [`openai`](Self::openai) layer reads
    /// `…/responses` answers as this one does.
    pub fn openai_responses() -> Self {
        ClassifyLayer::new(ProviderClassifier::openai_responses())
    }

    /// Anthropic messages.
    pub fn anthropic() -> Self {
        ClassifyLayer::new(ProviderClassifier::anthropic())
    }

    /// Gemini.
    pub fn gemini() -> Self {
        ClassifyLayer::new(ProviderClassifier::gemini())
    }

    /// gRPC services: `grpc-status` in the headers (trailers-only) or in
    /// the trailers; a 2xx that is not gRPC (neither an `application/grpc`
    /// content type nor a `grpc-status`) is a `protocol_violation`. A
    /// gRPC-Web answer keeps its trailers in the body, for its own client
    /// layer to read: it is handed on unjudged (but for a `grpc-status` in
    /// its headers).
    pub fn grpc() -> Self {
        ClassifyLayer::new(ProviderClassifier::grpc())
    }

    /// Any HTTP service: 408/429/5xx transient, other 4xx permanent.
    pub fn http() -> Self {
        ClassifyLayer::new(ProviderClassifier::http())
    }

    /// The layer for `provider`'s wire format: [`openai`](Self::openai),
    /// [`openai_responses`](Self::openai_responses),
    /// [`anthropic`](Self::anthropic), [`gemini`](Self::gemini) or
    /// [`http`](Self::http). gRPC has no [`Provider`]: use [`grpc`](Self::grpc).
    pub fn for_provider(provider: Provider) -> Self {
        match provider {
            Provider::OpenAi => ClassifyLayer::openai(),
            Provider::OpenAiResponses => ClassifyLayer::openai_responses(),
            Provider::Anthropic => ClassifyLayer::anthropic(),
            Provider::Gemini => ClassifyLayer::gemini(),
            Provider::Http => ClassifyLayer::http(),
        }
    }
}

impl<C> ClassifyLayer<C> {
    /// A layer with a classifier of the user's own.
    pub fn new(classifier: C) -> Self {
        ClassifyLayer {
            classifier,
            settings: Settings::default(),
        }
    }

    /// Puts `rules` in front of this layer's classifier: they answer first
    /// and fall through to it where they answer `None`.
    pub fn with_rules<R>(self, rules: R) -> ClassifyLayer<WithRules<R, C>> {
        ClassifyLayer {
            classifier: WithRules::new(rules, self.classifier),
            settings: self.settings,
        }
    }

    /// A rate-limit hint longer than `threshold` is a quota wall:
    /// `Permanent`/`quota_exhausted` with `reset_at`. Default 60 s.
    pub fn quota_wall(mut self, threshold: Duration) -> Self {
        self.settings.quota_wall = QuotaWall::new(threshold);
        self
    }

    /// The quota-wall threshold ([`quota_wall`](Self::quota_wall)).
    pub fn get_quota_wall(&self) -> Duration {
        self.settings.quota_wall.threshold()
    }

    /// A refusal or content filter the provider declared in a whole 2xx
    /// answer (OpenAI's `message.refusal` or `content_filter`, Anthropic's
    /// `stop_reason: "refusal"`, Gemini's `SAFETY`, a blocked prompt) is
    /// delivered as that answer, its [`Finish`](seawall_core::Finish)
    /// marked `Refused` or `Filtered`, instead of failing as `refused` or
    /// `content_filtered`. For a proxy whose clients read the provider's
    /// own refusal (the SDKs hand it to the application as an answer, not
    /// an error). An error the body declares instead of an answer stays a
    /// failure. Off by default; either way it is never retried. The
    /// built-in classifiers do it; one of your own reads
    /// [`SuccessContext::deliver_policy`](crate::SuccessContext).
    pub fn deliver_policy_outcomes(mut self, deliver: bool) -> Self {
        self.settings.deliver_policy = deliver;
        self
    }

    /// How many bytes of an error body are read to classify it; the rest is
    /// not polled and the body is dropped. Default 64 KiB.
    pub fn max_error_body(mut self, bytes: usize) -> Self {
        self.settings.max_error_body = bytes;
        self
    }

    /// How many bytes of a 2xx unary JSON body are read to check it. A
    /// longer body is handed on unchecked, what was read first and then the
    /// rest, with no finish in its extensions; it ends with an error if it
    /// ends before its JSON value closes (`truncated`). Default 8 MiB.
    pub fn max_success_body(mut self, bytes: usize) -> Self {
        self.settings.max_success_body = bytes;
        self
    }

    /// How long a 2xx JSON answer may grow before it ends with
    /// `answer_too_large` (permanent): checked before it is handed on when
    /// the bound is below the check cap
    /// ([`max_success_body`](Self::max_success_body), whose read stops at
    /// it), else as it is read past the cap. Its caller reads a whole
    /// answer into memory (an SDK parses it whole), and a small compressed
    /// body may decode to gigabytes: this is the bound on that. Default 256 MiB, room for the largest embeddings batches
    /// and images a provider returns as JSON.
    pub fn max_answer_body(mut self, bytes: u64) -> Self {
        self.settings.max_answer_body = bytes;
        self
    }

    /// The class of an error nobody recognises (code `unknown`). Default
    /// `Permanent`: fail closed.
    pub fn unknown_errors(mut self, class: Class) -> Self {
        self.settings.unknown_errors = class;
        self
    }

    /// The classifier.
    pub fn classifier(&self) -> &C {
        &self.classifier
    }
}

impl<S, C: Clone> Layer<S> for ClassifyLayer<C> {
    type Service = Classify<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Classify::new(inner, Arc::new(self.classifier.clone()), self.settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_provider_picks_the_provider_wire() {
        let cases = [
            (Provider::OpenAi, ProviderClassifier::openai()),
            (Provider::Anthropic, ProviderClassifier::anthropic()),
            (Provider::Gemini, ProviderClassifier::gemini()),
            (Provider::Http, ProviderClassifier::http()),
        ];
        for (provider, classifier) in cases {
            assert_eq!(
                ClassifyLayer::for_provider(provider).classifier(),
                &classifier
            );
        }
    }
}
